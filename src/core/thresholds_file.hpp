// check's thresholds as the user gives them: a --thresholds file read from
// disk (the I/O base/check_plan leaves out), under the --threshold options.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/check_plan.hpp"

namespace gpumem {

// The --threshold options in order (a check named twice is an error), over
// those of `file` (--thresholds), whose errors read "FILE: reason". A FIFO
// or a device is refused before it is opened, so that a wrong path cannot
// block the run waiting for a writer.
ThresholdOverrides parse_threshold_overrides(const std::vector<std::string>& options, const std::optional<std::string>& file);

}  // namespace gpumem
