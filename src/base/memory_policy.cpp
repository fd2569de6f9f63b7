#include "base/memory_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "base/sizes.hpp"

namespace gpumem {

namespace {
constexpr std::uint64_t kMaxBytes = 1ULL << 62;
}

std::uint64_t GrowthPolicy::capacity_for(std::uint64_t requested, std::uint64_t current) const {
    if (requested > kMaxBytes) throw UsageError("requested size " + std::to_string(requested) + " bytes is too large");
    switch (kind) {
        case Kind::exact: return requested;
        case Kind::granularity: {
            const std::uint64_t rounded = (requested + granularity - 1) / granularity * granularity;
            if (rounded < requested) throw UsageError("size overflow while rounding");
            return rounded;
        }
        case Kind::geometric: {
            const long double grown = static_cast<long double>(current) * factor;
            if (grown > static_cast<long double>(kMaxBytes)) return requested;
            return std::max(requested, static_cast<std::uint64_t>(std::ceil(grown)));
        }
    }
    return requested;
}

std::string GrowthPolicy::name() const {
    switch (kind) {
        case Kind::exact: return "exact";
        case Kind::granularity: return format_bytes(granularity);
        case Kind::geometric: return "x" + format_decimal(factor, 3);
    }
    return "?";
}

constexpr Named<GrowthPolicy> kGrowthRuleRows[] = {
    {"exact", GrowthPolicy::exact(), "allocate exactly the request"},
    {"512B", GrowthPolicy::round_to(512), "round the request up to a multiple of 512 bytes"},
    {"2MiB", GrowthPolicy::round_to(2ULL << 20), "round the request up to a multiple of 2 MiB (a large page)"},
    {"x1.5", GrowthPolicy::geometric(1.5), "grow to 1.5 times the current capacity, or to the request if larger"},
    {"x2", GrowthPolicy::geometric(2.0), "double the current capacity, or grow to the request if larger"},
};
constexpr NameTable<GrowthPolicy> kGrowthRules{"growth rule", kGrowthRuleRows};

GrowthPolicy parse_growth_policy(std::string_view text) {
    if (const Named<GrowthPolicy>* rule = kGrowthRules.find(text)) return rule->value;
    // Beyond the named rules: xFACTOR, or a granularity written as a size.
    // Anything else gets the table's message.
    if (!text.empty() && (text[0] == 'x' || text[0] == 'X')) {
        const std::string f(text.substr(1));
        char* end = nullptr;
        const double factor = std::strtod(f.c_str(), &end);
        if (f.empty() || end == nullptr || *end != '\0') return kGrowthRules.parse(text);
        return GrowthPolicy::geometric(factor);
    }
    try {
        return GrowthPolicy::round_to(parse_size(text));
    } catch (const UsageError&) {
        return kGrowthRules.parse(text);
    }
}

std::uint64_t checked_array_bytes(std::uint64_t count, std::uint64_t element_size) {
    if (element_size != 0 && count > kMaxBytes / element_size)
        throw UsageError(std::to_string(count) + " elements of " + std::to_string(element_size) + " bytes overflow");
    return count * element_size;
}

constexpr Named<HostMemoryKind> kHostMemoryKindRows[] = {
    {"pinned", HostMemoryKind::pinned, "page-locked memory from cudaHostAlloc, as cudaMallocHost gives"},
    {"pageable", HostMemoryKind::pageable, "ordinary pages (mmap); the driver stages copies through its own buffers"},
    {"pageable-huge", HostMemoryKind::pageable_huge, "huge pages (MAP_HUGETLB) if any are free, else transparent huge pages"},
    {"huge-only", HostMemoryKind::huge_only, "huge pages (MAP_HUGETLB) or fail"},
    {"write-combined", HostMemoryKind::write_combined, "page-locked and write-combined (cudaHostAllocWriteCombined)"},
    {"mapped", HostMemoryKind::mapped, "page-locked and mapped for the device (cudaHostAllocMapped)"},
    {"registered", HostMemoryKind::registered, "ordinary pages pinned with cudaHostRegister"},
};
constexpr NameTable<HostMemoryKind> kHostMemoryKinds{"host memory kind", kHostMemoryKindRows, "host-memory"};

HostMemoryKind parse_host_memory_kind(std::string_view text) { return kHostMemoryKinds.parse(text); }

// The rows' names are string literals, so data() is a C string.
const char* host_memory_kind_name(HostMemoryKind kind) noexcept { return kHostMemoryKinds.name_of(kind).data(); }

bool host_memory_is_pinned(HostMemoryKind kind) noexcept {
    return kind == HostMemoryKind::pinned || kind == HostMemoryKind::write_combined || kind == HostMemoryKind::mapped ||
           kind == HostMemoryKind::registered;
}

std::string host_memory_kind_names() { return kHostMemoryKinds.names(", "); }

}  // namespace gpumem
