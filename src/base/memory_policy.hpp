// Pure policy logic of the memory core: growth policies and host memory
// kinds. No CUDA here, so it is tested on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/errors.hpp"
#include "base/name_table.hpp"

namespace gpumem {

// How a buffer's capacity grows when a request exceeds it.
struct GrowthPolicy {
    enum class Kind { exact, granularity, geometric };
    Kind kind = Kind::exact;
    std::uint64_t granularity = 1;  // Kind::granularity: capacity is a multiple of this
    double factor = 1.0;            // Kind::geometric: at least current * factor

    static constexpr GrowthPolicy exact() { return {}; }
    static constexpr GrowthPolicy round_to(std::uint64_t granularity) {
        if (granularity == 0) throw UsageError("growth granularity must be greater than zero");
        return {Kind::granularity, granularity, 1.0};
    }
    static constexpr GrowthPolicy geometric(double factor) {
        if (!(factor > 1.0) || factor > 16.0) throw UsageError("growth factor must be above 1 and at most 16");
        return {Kind::geometric, 1, factor};
    }

    // Capacity to allocate for `requested` bytes when `current` is too small.
    // Never less than `requested`; throws UsageError on overflow.
    std::uint64_t capacity_for(std::uint64_t requested, std::uint64_t current) const;
    std::string name() const;

    // Policies that grow alike: only the field of their kind counts.
    friend constexpr bool operator==(const GrowthPolicy& a, const GrowthPolicy& b) noexcept {
        if (a.kind != b.kind) return false;
        if (a.kind == Kind::granularity) return a.granularity == b.granularity;
        if (a.kind == Kind::geometric) return a.factor == b.factor;
        return true;
    }
    friend constexpr bool operator!=(const GrowthPolicy& a, const GrowthPolicy& b) noexcept { return !(a == b); }
};

// The growth rules offered by name: exact, 512B, 2MiB, x1.5, x2.
extern const NameTable<GrowthPolicy> kGrowthRules;

// A rule of kGrowthRules, or beyond them any granularity (`64KiB`) or factor
// (`x1.25`). Throws UsageError.
GrowthPolicy parse_growth_policy(std::string_view text);

// count * size, or UsageError when it overflows (typed buffer requests).
std::uint64_t checked_array_bytes(std::uint64_t count, std::uint64_t element_size);

// Host memory kinds. The huge-page ones follow AscendCL's policies: huge first
// (fall back to normal pages), huge only (fail without huge pages).
enum class HostMemoryKind {
    pinned,          // cudaMallocHost
    pageable,        // malloc-like, normal pages (AscendCL "normal only")
    pageable_huge,   // MAP_HUGETLB, else transparent huge pages (AscendCL "huge first")
    huge_only,       // MAP_HUGETLB or fail (AscendCL "huge only")
    write_combined,  // cudaHostAlloc(cudaHostAllocWriteCombined)
    mapped,          // cudaHostAlloc(cudaHostAllocMapped): device can address it
    registered,      // pageable memory pinned with cudaHostRegister
};

extern const NameTable<HostMemoryKind> kHostMemoryKinds;

HostMemoryKind parse_host_memory_kind(std::string_view text);  // throws UsageError
const char* host_memory_kind_name(HostMemoryKind kind) noexcept;
// Pinned kinds are page-locked: the copy engines can DMA them directly.
bool host_memory_is_pinned(HostMemoryKind kind) noexcept;
// All kind names, comma-separated, for help texts.
std::string host_memory_kind_names();

}  // namespace gpumem
