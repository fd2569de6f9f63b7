// Summary statistics of repeated measurements. Pure logic.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace gpumem {

// Host wall time since `start`, in seconds (steady clock).
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Summary {
    std::size_t count = 0;
    double median = 0, mean = 0, min = 0, max = 0;
    double stdev = 0;  // sample standard deviation (n-1)
    double cv = 0;     // stdev / mean; 0 when mean is 0
    double p90 = 0, p99 = 0;
};

// Percentile `p` in [0, 100] of sorted values, linear interpolation between
// closest ranks (numpy's default). Empty input gives 0.
double percentile_sorted(const std::vector<double>& sorted, double p) noexcept;

Summary summarize(std::vector<double> values);

}  // namespace gpumem
