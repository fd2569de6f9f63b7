// Pinning the calling thread to the CPUs next to a GPU (NVML's CPU affinity),
// so host buffers are touched from, and first-touch pages land on, the NUMA
// node the GPU's PCIe root hangs off. Linux only; no CUDA.
#pragma once

#include <sched.h>

#include <string>
#include <vector>

namespace gpumem {

// Restores the thread's previous CPU set when it goes out of scope.
class ScopedCpuAffinity {
public:
    ScopedCpuAffinity() = default;
    // Pins to `cpus` (CPU numbers); does nothing when `cpus` is empty or the
    // kernel refuses (for example when a cgroup excludes them): see pinned().
    explicit ScopedCpuAffinity(const std::vector<int>& cpus);
    ~ScopedCpuAffinity() noexcept;
    ScopedCpuAffinity(const ScopedCpuAffinity&) = delete;
    ScopedCpuAffinity& operator=(const ScopedCpuAffinity&) = delete;

    bool pinned() const noexcept { return pinned_; }

private:
    cpu_set_t previous_{};
    bool pinned_ = false;
};

// Number of CPUs the calling thread may run on (at least 1).
unsigned allowed_cpu_count() noexcept;

// `0-31,64-95` for {0..31, 64..95}; sorted, duplicates dropped.
std::string format_cpu_list(std::vector<int> cpus);

}  // namespace gpumem
