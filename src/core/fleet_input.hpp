// gpumem report's inputs: reading files, folders, globs and stdin (gzip or
// not) on worker threads into the fleet. The pure parts, documents and the
// merge, are base/fleet.hpp's; this is the I/O around them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/fleet.hpp"

namespace gpumem::fleet {

// Reads every input: FILE, DIR (its *.json and *.jsonl files, and their
// .gz), a glob(3) PATTERN gpumem expands itself, or "-" (stdin; also when
// `inputs` is empty). Each holds one or more JSON documents (pretty-printed,
// or JSON Lines), gzip-compressed or not. UsageError "FILE:LINE: reason" for
// any bad input, the first in input order: no report is made from part of
// the fleet. Documents are parsed on `threads` threads (0: one per CPU this
// process may run on) and merged in input order as they are read.
Fleet read_fleet(const std::vector<std::string>& inputs, int max_schema_version, const ReportOptions& options,
                 unsigned threads = 0);

// The documents of one source's bytes (a file's or a test's), named `name`.
std::vector<Document> read_text(std::string_view name, std::string_view text, int max_schema_version);

}  // namespace gpumem::fleet
