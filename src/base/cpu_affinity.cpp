#include "base/cpu_affinity.hpp"

#include <algorithm>
#include <thread>

namespace gpumem {

ScopedCpuAffinity::ScopedCpuAffinity(const std::vector<int>& cpus) {
    if (cpus.empty()) return;
    if (sched_getaffinity(0, sizeof previous_, &previous_) != 0) return;
    cpu_set_t wanted;
    CPU_ZERO(&wanted);
    for (int cpu : cpus)
        if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &wanted);
    // Only CPUs this process may use anyway (containers restrict the set).
    CPU_AND(&wanted, &wanted, &previous_);
    if (CPU_COUNT(&wanted) == 0) return;
    pinned_ = sched_setaffinity(0, sizeof wanted, &wanted) == 0;
}

ScopedCpuAffinity::~ScopedCpuAffinity() noexcept {
    if (pinned_) sched_setaffinity(0, sizeof previous_, &previous_);
}

unsigned allowed_cpu_count() noexcept {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return static_cast<unsigned>(n);
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

std::string format_cpu_list(std::vector<int> cpus) {
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    std::string out;
    for (std::size_t i = 0; i < cpus.size();) {
        std::size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(cpus[i]);
        if (j > i) out += '-' + std::to_string(cpus[j]);
        i = j + 1;
    }
    return out;
}

}  // namespace gpumem
