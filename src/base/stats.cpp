#include "base/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpumem {

double percentile_sorted(const std::vector<double>& sorted, double p) noexcept {
    if (sorted.empty()) return 0;
    if (sorted.size() == 1) return sorted.front();
    const double clamped = std::min(100.0, std::max(0.0, p));
    const double rank = clamped / 100.0 * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(rank));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double frac = rank - static_cast<double>(lo);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::vector<double> values) {
    Summary s;
    s.count = values.size();
    if (values.empty()) return s;
    std::sort(values.begin(), values.end());
    s.min = values.front();
    s.max = values.back();
    s.median = percentile_sorted(values, 50);
    s.p90 = percentile_sorted(values, 90);
    s.p99 = percentile_sorted(values, 99);
    s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    if (values.size() > 1) {
        double sq = 0;
        for (double v : values) sq += (v - s.mean) * (v - s.mean);
        s.stdev = std::sqrt(sq / static_cast<double>(values.size() - 1));
    }
    s.cv = s.mean != 0 ? s.stdev / s.mean : 0;
    return s;
}

}  // namespace gpumem
