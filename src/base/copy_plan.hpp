// What `gpumem copy` measures and what a measurement gives back: directions,
// engines, how each copy is timed, results and the arithmetic around them.
// Pure logic, no CUDA: tested on the CPU. The engine is in copy_bench.hpp.
//
// A copy is (source buffer, destination buffer, engine), as in nvbandwidth:
// a direction is one row of kCopyDirections saying where its two buffers
// live and whether the reverse copy runs at the same time. Everything that
// differs between directions (which buffers to allocate, how much memory,
// how to time, what a reader must be told) is read from the row, so a new
// direction is a new row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/device_id.hpp"
#include "base/memory_policy.hpp"
#include "base/name_table.hpp"
#include "base/stats.hpp"

namespace gpumem {

// Where one end of a copy lives.
enum class BufferKind {
    host,    // host memory of --host-memory's kind
    device,  // memory of the device the copy runs on
    peer,    // memory of another device (the peer)
};

// One copy direction: a row of kCopyDirections.
struct CopyDirection {
    BufferKind source = BufferKind::host;
    BufferKind destination = BufferKind::device;
    // Destination to source at the same time, on a second stream (of the
    // device that owns the reverse copy's source).
    bool bidirectional = false;
    std::string_view forward_flow;  // the `direction` of its result rows: "h2d", "bidir-h2d"
    std::string_view reverse_flow;  // bidirectional: the reverse copy's rows ("bidir-d2h")
    std::string_view note;          // what a reader of its numbers must know; empty if nothing

    constexpr bool uses_host_memory() const noexcept { return source == BufferKind::host || destination == BufferKind::host; }
    constexpr bool uses_peer() const noexcept { return source == BufferKind::peer || destination == BufferKind::peer; }
    constexpr int copies() const noexcept { return bidirectional ? 2 : 1; }
    friend constexpr bool operator==(const CopyDirection& a, const CopyDirection& b) noexcept {
        return a.source == b.source && a.destination == b.destination && a.bidirectional == b.bidirectional &&
               a.forward_flow == b.forward_flow;
    }
    friend constexpr bool operator!=(const CopyDirection& a, const CopyDirection& b) noexcept { return !(a == b); }
};

// Every direction `gpumem copy` takes (gpumem --list directions).
extern const NameTable<CopyDirection> kCopyDirections;
std::string copy_direction_name(const CopyDirection& direction);
// Every `direction` a result row can have (the lanes' flows), for the schema.
std::vector<std::string_view> copy_flow_names();

// One stream of copies of a direction: the forward copy, and for a
// bidirectional direction the reverse one (its ends swapped).
struct CopyLaneSpec {
    BufferKind source, destination;
    std::string_view flow;
};
std::vector<CopyLaneSpec> copy_lanes(const CopyDirection& direction);

// Who moves the bytes: a copy engine (cudaMemcpyAsync) or the SMs (a copy kernel).
enum class CopyEngine { ce, sm };
extern const NameTable<CopyEngine> kCopyEngines;
std::string copy_engine_name(CopyEngine engine);

// How a copy is timed. Events bracket copies queued behind a spin kernel;
// the host clock brackets copies the driver performs synchronously (pageable
// memory is staged through the driver's own pinned buffers, host to host is a
// CPU copy, a peer copy without peer access is staged through the host),
// where a stream held by a spin kernel would stall the host.
enum class CopyTiming { events, host_clock };
extern const NameTable<CopyTiming> kCopyTimings;
std::string copy_timing_name(CopyTiming timing);
CopyTiming copy_timing_for(const CopyDirection& direction, HostMemoryKind host_kind, CopyEngine engine,
                           bool peer_access) noexcept;

// Combinations that cannot work, as usage errors: the SM engine needs host
// memory the device can address (a page-locked kind).
void validate_copy_combination(const CopyDirection& direction, HostMemoryKind host_kind, CopyEngine engine);

// The (device, peer) pairs a peer direction measures: each device with each
// peer other than itself, in order. A bidirectional direction measures both
// ways in one run, so a pair whose reverse is already listed is left out:
// every ordered pair is still measured, once.
std::vector<std::pair<DeviceId, DeviceId>> peer_pairs(const std::vector<DeviceId>& devices, const std::vector<DeviceId>& peers,
                                                      bool bidirectional);

// Copies per sample so that a sample lasts about `sample_seconds`, given the
// time of one copy; at least 1, at most `max_iterations`.
int iterations_for_budget(double op_seconds, double sample_seconds, int max_iterations) noexcept;

// Buffers are allocated in whole 8-byte words (the test pattern's unit), so
// a copy of any size can be filled and checked.
std::uint64_t copy_buffer_bytes(std::uint64_t bytes) noexcept;

// Memory a copy of `bytes` needs: on its device, on the peer, on the host.
struct CopyMemoryNeeds {
    std::uint64_t device = 0, peer = 0, host = 0;
    std::uint64_t& at(BufferKind where) noexcept;
};
CopyMemoryNeeds copy_memory_needs(const CopyDirection& direction, HostMemoryKind host_kind, std::uint64_t bytes,
                                  bool verify);

struct CopyVerification {
    bool checked = false;
    std::uint64_t mismatched_words = 0;             // 8-byte words; a bad partial last word counts as one
    std::optional<std::uint64_t> first_bad_offset;  // byte offset in the destination
    bool ok() const noexcept { return checked && mismatched_words == 0; }
};

// One row of results: one lane of one copy size.
struct CopyResult {
    std::string flow;  // the lane's name: h2d, d2h, d2d, h2h, p2p, bidir-h2d, bidir-d2h, p2p-bidir
    CopyDirection direction;
    DeviceId device{0};                        // peer directions: the source device
    std::optional<DeviceId> peer;              // peer directions: the destination device
    std::optional<bool> peer_access;           // peer directions: whether peer access was enabled
    std::optional<HostMemoryKind> host_kind;   // directions that use host memory
    std::optional<bool> host_huge_pages;       // pageable-huge / huge-only: whether huge pages were used
    CopyEngine engine = CopyEngine::ce;
    CopyTiming timing = CopyTiming::events;
    std::uint64_t bytes = 0;
    int iterations = 0;           // copies per sample
    int warmup = 0;               // untimed copies before the samples
    std::vector<double> seconds;  // seconds per copy, one per sample; empty when not measured
    std::string skipped;          // why it was not measured (then `seconds` is empty)
    CopyVerification verification;

    bool measured() const noexcept { return !seconds.empty(); }
};

// Bandwidth of each sample is bytes / seconds per copy.
struct CopyFigures {
    Summary seconds;
    double median_bps = 0, min_bps = 0, max_bps = 0;
    double cv = 0;  // of the per-sample bandwidths
};
CopyFigures copy_figures(const CopyResult& result);

}  // namespace gpumem
