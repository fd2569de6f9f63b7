// `gpumem --list [NAME]`: every table of names gpumem accepts, printed from
// the table itself (through the output layer, so --json and --format value
// work), for people, scripts and the shell completions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/name_table.hpp"
#include "cli/output.hpp"

namespace gpumem::cli {

struct ListEntry {
    std::string_view name;     // what --list takes: "directions"
    std::string_view used_by;  // where the names go: "copy DIRECTION"
    NameListView (*view)();
};

// The registry, one row per table of names.
const std::vector<ListEntry>& name_lists();

// The names of one list (`name`), or the lists themselves (empty `name`).
// An unknown list is a UsageError. `format` decides the columns of a list
// with machine-only ones (xids).
Report list_report(std::string_view name, Format format = Format::json);

}  // namespace gpumem::cli
