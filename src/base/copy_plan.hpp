// What `gpumem copy` measures and what a measurement gives back: directions,
// engines, how each copy is timed, results and the arithmetic around them.
// Pure logic, no CUDA: tested on the CPU. The engine is in copy_bench.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/device_id.hpp"
#include "base/memory_policy.hpp"
#include "base/stats.hpp"

namespace gpumem {

enum class CopyDirection {
    h2d,    // host to device
    d2h,    // device to host
    d2d,    // within one device
    h2h,    // host to host, through CUDA
    bidir,  // h2d and d2h at the same time, on two streams
    p2p,    // device to a peer device
};

CopyDirection parse_copy_direction(std::string_view text);  // throws UsageError
const char* copy_direction_name(CopyDirection direction) noexcept;
// All direction names, comma-separated, for help texts and messages.
const char* copy_direction_names() noexcept;
// Whether the direction copies from or to host memory (so --host-memory applies).
bool copy_uses_host_memory(CopyDirection direction) noexcept;

// Who moves the bytes: a copy engine (cudaMemcpyAsync) or the SMs (a copy kernel).
enum class CopyEngine { ce, sm };
CopyEngine parse_copy_engine(std::string_view text);  // throws UsageError
const char* copy_engine_name(CopyEngine engine) noexcept;

// How a copy is timed. Events bracket copies queued behind a spin kernel;
// the host clock brackets copies the driver performs synchronously (pageable
// memory is staged through the driver's own pinned buffers, host to host is a
// CPU copy), where a stream held by a spin kernel would stall the host.
enum class CopyTiming { events, host_clock };
const char* copy_timing_name(CopyTiming timing) noexcept;
CopyTiming copy_timing_for(CopyDirection direction, HostMemoryKind host_kind, CopyEngine engine, bool peer_access) noexcept;

// Combinations that cannot work, as usage errors: the SM engine needs host
// memory the device can address (a page-locked kind).
void validate_copy_combination(CopyDirection direction, HostMemoryKind host_kind, CopyEngine engine);

// Copies per sample so that a sample lasts about `sample_seconds`, given the
// time of one copy; at least 1, at most `max_iterations`.
int iterations_for_budget(double op_seconds, double sample_seconds, int max_iterations) noexcept;

// Buffers are allocated in whole 8-byte words (the test pattern's unit), so
// a copy of any size can be filled and checked.
std::uint64_t copy_buffer_bytes(std::uint64_t bytes) noexcept;

// Memory a copy of `bytes` needs: on its device, on the peer (p2p), on the host.
struct CopyMemoryNeeds {
    std::uint64_t device = 0, peer = 0, host = 0;
};
CopyMemoryNeeds copy_memory_needs(CopyDirection direction, HostMemoryKind host_kind, std::uint64_t bytes, bool verify) noexcept;

struct CopyVerification {
    bool checked = false;
    std::uint64_t mismatched_words = 0;             // 8-byte words; a bad partial last word counts as one
    std::optional<std::uint64_t> first_bad_offset;  // byte offset in the destination
    bool ok() const noexcept { return checked && mismatched_words == 0; }
};

// One row of results: one direction of one copy size.
struct CopyResult {
    std::string flow;  // h2d, d2h, d2d, h2h, p2p, bidir-h2d or bidir-d2h
    CopyDirection direction = CopyDirection::h2d;
    DeviceId device{0};
    std::optional<DeviceId> peer;                  // p2p: the destination device
    std::optional<bool> peer_access;               // p2p: whether peer access was enabled
    std::optional<HostMemoryKind> host_kind;       // directions that use host memory
    std::optional<bool> host_huge_pages;           // pageable-huge / huge-only: whether huge pages were used
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
