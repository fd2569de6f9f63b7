#include "base/copy_plan.hpp"

#include <algorithm>
#include <cmath>

#include "base/errors.hpp"

namespace gpumem {
namespace {

using B = BufferKind;

constexpr Named<CopyDirection> kDirectionRows[] = {
    {"h2d", {B::host, B::device, false, "h2d", "", ""}, "host to device"},
    {"d2h", {B::device, B::host, false, "d2h", "", ""}, "device to host"},
    {"d2d",
     {B::device, B::device, false, "d2d", "",
      "d2d counts each byte once: the copy reads and writes it, so device memory moves twice as many bytes"},
     "within one device; each byte counted once"},
    {"h2h", {B::host, B::host, false, "h2h", "", ""}, "host to host through CUDA, both buffers of --host-memory's kind"},
    {"bidir",
     {B::host, B::device, true, "bidir-h2d", "bidir-d2h",
      "bidir: h2d and d2h run at the same time on two streams; each row is one direction's own rate"},
     "h2d and d2h at the same time, on two streams; a row for each"},
    {"p2p", {B::device, B::peer, false, "p2p", "", ""},
     "device to the --peer device(s), with peer access off and on; -d all: every ordered pair, and a matrix"},
    {"p2p-bidir",
     {B::device, B::peer, true, "p2p-bidir", "p2p-bidir",
      "p2p-bidir: the two devices copy to each other at the same time, each on its own stream; each row is one "
      "direction's own rate"},
     "both ways between two devices at the same time, each on its own stream; a row for each"},
};

constexpr Named<CopyEngine> kEngineRows[] = {
    {"ce", CopyEngine::ce, "a copy engine (cudaMemcpyAsync)"},
    {"sm", CopyEngine::sm, "a copy kernel on the SMs; needs page-locked host memory, and peer access for peers"},
};

constexpr Named<CopyTiming> kTimingRows[] = {
    {"events", CopyTiming::events, "CUDA events around copies queued behind a spin kernel"},
    {"host-clock", CopyTiming::host_clock, "the host clock around copies the driver performs synchronously"},
};

}  // namespace

const NameTable<CopyDirection> kCopyDirections{"copy direction", kDirectionRows};
const NameTable<CopyEngine> kCopyEngines{"copy engine", kEngineRows};
const NameTable<CopyTiming> kCopyTimings{"copy timing", kTimingRows};

std::string copy_direction_name(const CopyDirection& direction) { return std::string(kCopyDirections.name_of(direction)); }
std::string copy_engine_name(CopyEngine engine) { return std::string(kCopyEngines.name_of(engine)); }
std::string copy_timing_name(CopyTiming timing) { return std::string(kCopyTimings.name_of(timing)); }

std::vector<std::string_view> copy_flow_names() {
    std::vector<std::string_view> names;
    for (const Named<CopyDirection>& row : kCopyDirections)
        for (const CopyLaneSpec& lane : copy_lanes(row.value))
            if (std::find(names.begin(), names.end(), lane.flow) == names.end()) names.push_back(lane.flow);
    return names;
}

std::vector<CopyLaneSpec> copy_lanes(const CopyDirection& d) {
    std::vector<CopyLaneSpec> lanes = {{d.source, d.destination, d.forward_flow}};
    if (d.bidirectional) lanes.push_back({d.destination, d.source, d.reverse_flow});
    return lanes;
}

CopyTiming copy_timing_for(const CopyDirection& d, HostMemoryKind host_kind, CopyEngine engine, bool peer_access) noexcept {
    // A copy kernel is ordinary stream work whatever it reads or writes.
    if (engine == CopyEngine::sm) return CopyTiming::events;
    if (d.source == BufferKind::host && d.destination == BufferKind::host) return CopyTiming::host_clock;
    if (d.uses_host_memory()) return host_memory_is_pinned(host_kind) ? CopyTiming::events : CopyTiming::host_clock;
    // Without peer access the driver stages the copy through host memory.
    if (d.uses_peer()) return peer_access ? CopyTiming::events : CopyTiming::host_clock;
    return CopyTiming::events;
}

void validate_copy_combination(const CopyDirection& d, HostMemoryKind host_kind, CopyEngine engine) {
    if (engine == CopyEngine::sm && d.uses_host_memory() && !host_memory_is_pinned(host_kind))
        throw UsageError(std::string("--engine sm cannot reach ") + host_memory_kind_name(host_kind) +
                         " host memory: a copy kernel needs page-locked memory (pinned, write-combined, mapped or registered)");
}

std::vector<std::pair<DeviceId, DeviceId>> peer_pairs(const std::vector<DeviceId>& devices, const std::vector<DeviceId>& peers,
                                                      bool bidirectional) {
    std::vector<std::pair<DeviceId, DeviceId>> pairs;
    for (DeviceId d : devices)
        for (DeviceId p : peers) {
            if (p == d) continue;
            const bool listed = std::find(pairs.begin(), pairs.end(), std::make_pair(d, p)) != pairs.end();
            const bool reverse_listed =
                bidirectional && std::find(pairs.begin(), pairs.end(), std::make_pair(p, d)) != pairs.end();
            if (!listed && !reverse_listed) pairs.emplace_back(d, p);
        }
    return pairs;
}

int iterations_for_budget(double op_seconds, double sample_seconds, int max_iterations) noexcept {
    const int cap = std::max(1, max_iterations);
    if (!(op_seconds > 0) || !std::isfinite(op_seconds)) return cap;
    const double n = std::round(sample_seconds / op_seconds);
    if (!(n >= 1)) return 1;
    return n >= cap ? cap : static_cast<int>(n);
}

std::uint64_t copy_buffer_bytes(std::uint64_t bytes) noexcept { return (bytes + 7) / 8 * 8; }

std::uint64_t& CopyMemoryNeeds::at(BufferKind where) noexcept {
    return where == BufferKind::host ? host : where == BufferKind::device ? device : peer;
}

CopyMemoryNeeds copy_memory_needs(const CopyDirection& direction, HostMemoryKind host_kind, std::uint64_t bytes,
                                  bool verify) {
    const std::uint64_t b = copy_buffer_bytes(bytes);
    CopyMemoryNeeds needs;
    for (const CopyLaneSpec& lane : copy_lanes(direction)) {
        needs.at(lane.source) += b;
        needs.at(lane.destination) += b;
        // The CPU reads write-combined memory uncached (tens of MB/s), so such a
        // destination is copied back to the device and checked there.
        if (verify && lane.destination == BufferKind::host && host_kind == HostMemoryKind::write_combined) needs.device += b;
    }
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
