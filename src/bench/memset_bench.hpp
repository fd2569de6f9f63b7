// Device and host memset with timing and verification: the engine behind
// `gpumem memset`.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/memory_policy.hpp"
#include "base/stats.hpp"
#include "core/timing.hpp"

namespace gpumem {

struct MemsetPlan {
    DeviceId device{0};
    std::uint64_t size = 0;    // bytes of the buffer
    std::uint64_t offset = 0;  // first byte set; [offset, size) is set
    int width = 1;             // bytes per word: 1, 2 or 4 (cuMemsetD8/D16/D32)
    std::uint32_t value = 0;   // word value, fits `width`
    bool host_target = false;
    HostMemoryKind host_kind = HostMemoryKind::pinned;
    TimingPlan timing;
    bool verify = false;
    // Test hook: flip one byte of the set region (offset relative to it)
    // after timing and before verification, to prove verification works.
    std::optional<std::uint64_t> corrupt_offset;
};

struct MemsetResult {
    std::uint64_t bytes_set = 0;
    std::vector<double> sample_seconds;  // seconds per memset, one per sample
    Summary seconds;
    bool verified = false;
    std::uint64_t mismatches = 0;
    std::optional<std::uint64_t> first_bad_offset;  // bytes from the start of the buffer
    bool host_huge_pages = false;
};

// Checks the plan's arithmetic (alignment, bounds, value range); throws
// UsageError. Pure: no CUDA.
void validate_memset_plan(const MemsetPlan& plan);

// Allocates, times, verifies, frees. Throws OutOfMemoryError when the buffer
// cannot be allocated; a failed verification is reported in the result (the
// caller decides the exit status) .
MemsetResult run_memset(const MemsetPlan& plan);

}  // namespace gpumem
