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

GrowthPolicy GrowthPolicy::round_to(std::uint64_t granularity) {
    if (granularity == 0) throw UsageError("growth granularity must be greater than zero");
    GrowthPolicy p;
    p.kind = Kind::granularity;
    p.granularity = granularity;
    return p;
}

GrowthPolicy GrowthPolicy::geometric(double factor) {
    if (!(factor > 1.0) || factor > 16.0) throw UsageError("growth factor must be above 1 and at most 16");
    GrowthPolicy p;
    p.kind = Kind::geometric;
    p.factor = factor;
    return p;
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

GrowthPolicy parse_growth_policy(std::string_view text) {
    if (text == "exact") return GrowthPolicy::exact();
    if (!text.empty() && (text[0] == 'x' || text[0] == 'X')) {
        const std::string f(text.substr(1));
        char* end = nullptr;
        const double factor = std::strtod(f.c_str(), &end);
        if (f.empty() || end == nullptr || *end != '\0')
            throw UsageError("invalid growth policy '" + std::string(text) + "' (expected exact, a granularity like 2MiB, or a factor like x1.5)");
        return GrowthPolicy::geometric(factor);
    }
    try {
        return GrowthPolicy::round_to(parse_size(text));
    } catch (const UsageError&) {
        throw UsageError("invalid growth policy '" + std::string(text) + "' (expected exact, a granularity like 2MiB, or a factor like x1.5)");
    }
}

std::uint64_t checked_array_bytes(std::uint64_t count, std::uint64_t element_size) {
    if (element_size != 0 && count > kMaxBytes / element_size)
        throw UsageError(std::to_string(count) + " elements of " + std::to_string(element_size) + " bytes overflow");
    return count * element_size;
}

HostMemoryKind parse_host_memory_kind(std::string_view text) {
    static const struct { const char* name; HostMemoryKind kind; } table[] = {
        {"pinned", HostMemoryKind::pinned},
        {"pageable", HostMemoryKind::pageable},
        {"pageable-huge", HostMemoryKind::pageable_huge},
        {"huge-only", HostMemoryKind::huge_only},
        {"write-combined", HostMemoryKind::write_combined},
        {"mapped", HostMemoryKind::mapped},
        {"registered", HostMemoryKind::registered},
    };
    for (const auto& e : table)
        if (text == e.name) return e.kind;
    throw UsageError("unknown host memory kind '" + std::string(text) + "' (expected " + host_memory_kind_names() + ")");
}

const char* host_memory_kind_name(HostMemoryKind kind) noexcept {
    switch (kind) {
        case HostMemoryKind::pinned: return "pinned";
        case HostMemoryKind::pageable: return "pageable";
        case HostMemoryKind::pageable_huge: return "pageable-huge";
        case HostMemoryKind::huge_only: return "huge-only";
        case HostMemoryKind::write_combined: return "write-combined";
        case HostMemoryKind::mapped: return "mapped";
        case HostMemoryKind::registered: return "registered";
    }
    return "?";
}

bool host_memory_is_pinned(HostMemoryKind kind) noexcept {
    return kind == HostMemoryKind::pinned || kind == HostMemoryKind::write_combined || kind == HostMemoryKind::mapped ||
           kind == HostMemoryKind::registered;
}

const char* host_memory_kind_names() noexcept {
    return "pinned, pageable, pageable-huge, huge-only, write-combined, mapped, registered";
}

}  // namespace gpumem
