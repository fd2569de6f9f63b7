// The report of `gpumem copy`, built from measured results alone so that its
// shape (table, JSON, CSV, chart, notes) is tested without a GPU.
#pragma once

#include <string>
#include <vector>

#include "chart.hpp"
#include "base/copy_plan.hpp"
#include "output.hpp"

namespace gpumem::cli {

struct CopyReportStyle {
    Format format = Format::table;
    Unit unit = Unit::automatic;
    bool chart = true;  // bar chart of bandwidth by size, for sweeps in table format
    ChartStyle chart_style;
};

Report build_copy_report(const std::vector<CopyResult>& results, const CopyReportStyle& style);

// One line naming a result: "device 0 h2d (pinned, ce) 64 MiB".
std::string describe_copy(const CopyResult& result);

// Measured results whose median bandwidth is below `gbps` (1e9 bytes/s).
std::vector<const CopyResult*> copies_below(const std::vector<CopyResult>& results, double gbps);
// Verified results whose destination did not match the source.
std::vector<const CopyResult*> failed_verifications(const std::vector<CopyResult>& results);

}  // namespace gpumem::cli
