// `gpumem --list [NAME]`: every table of names gpumem accepts, printed from
// the table itself (through the output layer, so --json and --format value
// work), for people, scripts and the shell completions.
#pragma once

#include <cstddef>
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
    // A list with columns of its own (checks, xids): its whole table, for
    // `--list NAME` in `format`; null: the view's name and description.
    Table (*table)(Format format) = nullptr;
};

// The lists a command hands in (CommandDefinition::lists): a constexpr
// array of its rows, or none.
class ListRows {
public:
    constexpr ListRows() noexcept = default;
    template <std::size_t N>
    constexpr ListRows(const ListEntry (&rows)[N]) noexcept : rows_(rows), size_(N) {}
    constexpr const ListEntry* begin() const noexcept { return rows_; }
    constexpr const ListEntry* end() const noexcept { return rows_ + size_; }

private:
    const ListEntry* rows_ = nullptr;
    std::size_t size_ = 0;
};

// The registry, one row per table of names: the global options' lists, then
// each command's own (CommandDefinition::lists) in the command table's order.
// This layer knows no command's tables: each command hands its lists in.
const std::vector<ListEntry>& name_lists();

// The names of one list (`name`), or the lists themselves (empty `name`).
// An unknown list is a UsageError. `format` decides the columns of a list
// with machine-only ones (xids).
Report list_report(std::string_view name, Format format = Format::json);

}  // namespace gpumem::cli
