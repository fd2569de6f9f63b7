#include "base/copy_plan.hpp"

#include <algorithm>
#include <cmath>

#include "base/errors.hpp"

namespace gpumem {

CopyDirection parse_copy_direction(std::string_view text) {
    if (text == "h2d") return CopyDirection::h2d;
    if (text == "d2h") return CopyDirection::d2h;
    if (text == "d2d") return CopyDirection::d2d;
    if (text == "h2h") return CopyDirection::h2h;
    if (text == "bidir") return CopyDirection::bidir;
    if (text == "p2p") return CopyDirection::p2p;
    throw UsageError("unknown copy direction '" + std::string(text) + "' (expected " + copy_direction_names() + ")");
}

const char* copy_direction_name(CopyDirection direction) noexcept {
    switch (direction) {
        case CopyDirection::h2d: return "h2d";
        case CopyDirection::d2h: return "d2h";
        case CopyDirection::d2d: return "d2d";
        case CopyDirection::h2h: return "h2h";
        case CopyDirection::bidir: return "bidir";
        case CopyDirection::p2p: return "p2p";
    }
    return "?";
}

const char* copy_direction_names() noexcept { return "h2d, d2h, d2d, h2h, bidir or p2p"; }

bool copy_uses_host_memory(CopyDirection direction) noexcept {
    return direction == CopyDirection::h2d || direction == CopyDirection::d2h || direction == CopyDirection::h2h ||
           direction == CopyDirection::bidir;
}

CopyEngine parse_copy_engine(std::string_view text) {
    if (text == "ce") return CopyEngine::ce;
    if (text == "sm") return CopyEngine::sm;
    throw UsageError("unknown copy engine '" + std::string(text) + "' (expected ce or sm)");
}

const char* copy_engine_name(CopyEngine engine) noexcept { return engine == CopyEngine::sm ? "sm" : "ce"; }

const char* copy_timing_name(CopyTiming timing) noexcept { return timing == CopyTiming::events ? "events" : "host-clock"; }

CopyTiming copy_timing_for(CopyDirection direction, HostMemoryKind host_kind, CopyEngine engine, bool peer_access) noexcept {
    // A copy kernel is ordinary stream work whatever it reads or writes.
    if (engine == CopyEngine::sm) return CopyTiming::events;
    switch (direction) {
        case CopyDirection::d2d: return CopyTiming::events;
        // Without peer access the driver stages the copy through host memory.
        case CopyDirection::p2p: return peer_access ? CopyTiming::events : CopyTiming::host_clock;
        case CopyDirection::h2h: return CopyTiming::host_clock;
        default: return host_memory_is_pinned(host_kind) ? CopyTiming::events : CopyTiming::host_clock;
    }
}

void validate_copy_combination(CopyDirection direction, HostMemoryKind host_kind, CopyEngine engine) {
    if (engine == CopyEngine::sm && copy_uses_host_memory(direction) && !host_memory_is_pinned(host_kind))
        throw UsageError(std::string("--engine sm cannot reach ") + host_memory_kind_name(host_kind) +
                         " host memory: a copy kernel needs page-locked memory (pinned, write-combined, mapped or registered)");
}

int iterations_for_budget(double op_seconds, double sample_seconds, int max_iterations) noexcept {
    const int cap = std::max(1, max_iterations);
    if (!(op_seconds > 0) || !std::isfinite(op_seconds)) return cap;
    const double n = std::round(sample_seconds / op_seconds);
    if (!(n >= 1)) return 1;
    return n >= cap ? cap : static_cast<int>(n);
}

std::uint64_t copy_buffer_bytes(std::uint64_t bytes) noexcept { return (bytes + 7) / 8 * 8; }

CopyMemoryNeeds copy_memory_needs(CopyDirection direction, HostMemoryKind host_kind, std::uint64_t bytes, bool verify) noexcept {
    const std::uint64_t b = copy_buffer_bytes(bytes);
    CopyMemoryNeeds needs;
    bool host_destination = false;
    switch (direction) {
        case CopyDirection::h2d: needs.device = b; needs.host = b; break;
        case CopyDirection::d2h: needs.device = b; needs.host = b; host_destination = true; break;
        case CopyDirection::bidir: needs.device = 2 * b; needs.host = 2 * b; host_destination = true; break;
        case CopyDirection::d2d: needs.device = 2 * b; break;
        case CopyDirection::h2h: needs.host = 2 * b; host_destination = true; break;
        case CopyDirection::p2p: needs.device = b; needs.peer = b; break;
    }
    // The CPU reads write-combined memory uncached (tens of MB/s), so such a
    // destination is copied back to the device and checked there.
    if (verify && host_destination && host_kind == HostMemoryKind::write_combined) needs.device += b;
    return needs;
}

CopyFigures copy_figures(const CopyResult& result) {
    CopyFigures f;
    if (result.seconds.empty()) return f;
    f.seconds = summarize(result.seconds);
    std::vector<double> rates;
    rates.reserve(result.seconds.size());
    for (double s : result.seconds) rates.push_back(s > 0 ? static_cast<double>(result.bytes) / s : 0.0);
    const Summary r = summarize(rates);
    f.median_bps = r.median;
    f.min_bps = r.min;
    f.max_bps = r.max;
    f.cv = r.cv;
    return f;
}

}  // namespace gpumem
