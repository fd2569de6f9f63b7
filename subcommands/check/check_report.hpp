// gpumem check's checked request, its results, and the pure parts: the
// report (table, JSON, CSV, Prometheus metrics) and the failure lines.
// check.cpp checks and runs; the CPU tests call these with synthetic results.
#pragma once

#include <string>
#include <vector>

#include "base/check_plan.hpp"
#include "base/device_spec.hpp"
#include "base/xid.hpp"
#include "bench/check_engine.hpp"
#include "cli/output.hpp"

namespace gpumem::cli {

// The request and results are the engine's (bench/check_engine.hpp).
Report check_report(const CheckRequest& q, const CheckResults& results, const OutputOptions& output);
DocumentSchema check_schema();
// One line per failed check, as stderr shows them before the summary:
// "GPU 0 (GPU-...): copy.h2d: 31.2 GB/s < 47.3 GB/s (...)".
std::vector<std::string> check_failure_lines(const CheckResults& results);
// The summary error of a run with failed checks; empty when none failed.
std::string check_failure_summary(const CheckResults& results);

NameListView check_list();
// gpumem --list checks: a row per check with its levels, default
// threshold, remediation, source of truth and description.
Table check_list_table();
NameListView check_level_list();
NameListView xid_list();
// --list xids: the list's two columns, and in JSON and CSV each fact of the
// row (code, mnemonic, immediate action, verdict, remediation, rule, departure).
Table xid_list_table(Format format);

}  // namespace gpumem::cli
