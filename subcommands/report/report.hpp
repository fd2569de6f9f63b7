// gpumem report: the command's request and results, shared by report.cpp
// (options, check, execute) and report_tables.cpp (its tables and schema).
#pragma once

#include <string>
#include <vector>

#include "base/fleet.hpp"
#include "cli/output.hpp"

namespace gpumem::cli {

struct ReportRequest {
    std::vector<std::string> inputs;  // FILE, PATTERN or -; none: stdin
    fleet::ReportOptions options;
    bool drain_list = false;  // --drain-list: only the nodes to drain
};

struct ReportResults {
    fleet::Fleet fleet;
    fleet::ReportOptions options;
    bool merged = false;  // every input was read: the tables are whole
};

Report fleet_report(const ReportRequest& request, const ReportResults& results, const OutputOptions& output);
DocumentSchema report_schema();
// --drain-list in table and value formats: "host\treason\n" per node to drain.
std::string drain_list_text(const fleet::Fleet& fleet);
// One line for stderr: what failed, counted.
std::string fleet_failure_summary(const fleet::Fleet& fleet);

}  // namespace gpumem::cli
