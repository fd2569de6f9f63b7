// Reuse strategies: each is written once against Upstream, so the same code
// runs on the simulated device and, with --execute, on the real one.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/memory_policy.hpp"
#include "base/name_table.hpp"
#include "reuse_sim/upstream.hpp"

namespace gpumem::reuse_sim {

// One allocation request as strategies see it. Handles are small integers the
// replay assigns to live allocations (reused after their free), so strategies
// keep per-allocation state in vectors instead of hash maps.
struct Request {
    std::uint32_t handle = 0;
    std::uint64_t size = 0;
    std::uint32_t stream = 0;        // dense stream index (0 is the default stream)
    std::uint64_t stream_value = 0;  // the stream as the trace names it (PyTorch orders by it)
    std::uint64_t slot = 0;          // requester key: tag index, or (1<<63 | id) without a tag
    bool recorded_oom = false;       // the recorded allocator refused it (a trace's oom event)
    std::uint32_t pool = 0;          // Event::pool: a private pool (CUDA graph capture, MemPool), 0: the default pools
    bool capturing = false;          // Event::capturing: a capture or use_mem_pool context was under way
};

// PyTorch's CUDACachingAllocator settings (PYTORCH_CUDA_ALLOC_CONF).
struct TorchOptions {
    static constexpr std::uint64_t kNoLimit = ~0ULL;
    std::uint64_t max_split_size = kNoLimit;               // max_split_size_mb
    std::uint64_t max_non_split_rounding = 20ULL << 20;    // max_non_split_rounding_mb (kLargeBuffer)
    std::array<std::uint64_t, 16> roundup_power2_divisions{};  // per power-of-two interval from 1 MiB; 0: off
    // garbage_collection_threshold: with a memory fraction (--capacity),
    // free old cached blocks while reserved > threshold x capacity; 0: off.
    double garbage_collection_threshold = 0.0;
    bool expandable_segments = false;  // grow one segment per stream and pool by mapping pages
};
// "4" (every interval) or PyTorch's list form "[256:1,512:2,>:8]" (MiB
// interval starts). Throws UsageError as PyTorch would refuse.
std::array<std::uint64_t, 16> parse_roundup_power2_divisions(std::string_view text);

// How the torch-caching lanes of one replay read a snapshot's ambiguous
// releases (TorchCaching::is_own_release). Whether the program called
// empty_cache is a fact of the recording, not of a lane's settings: the lane
// that replays the recorded settings under the recorded capacity decides each
// one, in trace order, and lanes with other settings (the tuner's) follow it
// instead of judging by their own state.
struct ReleaseReadings {
    std::vector<bool> own;  // per ambiguous release: PyTorch's own (true) or the program's
};

struct StrategyOptions {
    GrowthPolicy growth = GrowthPolicy::exact();  // grow-only: MixMemory's rule (a row of kGrowthRules)
    bool zero_fill = false;
    std::uint32_t ring_buffers = 4;
    std::uint64_t ring_size = 0;  // 0: the largest request (largest_request)
    std::uint64_t pool_initial = 0;
    std::uint64_t pool_maximum = kUnlimited;
    std::vector<std::uint64_t> bins = {256ULL << 10, 512ULL << 10, 1ULL << 20, 2ULL << 20, 4ULL << 20};
    std::uint64_t bin_blocks = 128;  // RMM fixed_size_memory_resource default_blocks_to_preallocate
    TorchOptions torch;
    std::shared_ptr<ReleaseReadings> release_readings;  // null: each torch-caching lane reads for itself
    bool decides_release_readings = false;              // this lane writes them (the others read)
    std::uint64_t release_threshold = 0;
    // The input's largest request, found by a first pass over it when a
    // strategy needs it (StrategySpec::needs_largest_request).
    std::optional<std::uint64_t> largest_request;

    // ring's buffer size: ring_size, else the largest request (0 while unknown).
    std::uint64_t ring_buffer_size() const noexcept {
        if (ring_size != 0) return ring_size;
        return largest_request ? std::max<std::uint64_t>(*largest_request, 1) : 0;
    }
};

// Grows `v` so that index `i` exists.
template <typename T>
inline T& at_grow(std::vector<T>& v, std::size_t i) {
    if (i >= v.size()) v.resize(i < 64 ? 64 : i * 2);
    return v[i];
}

// What a strategy's public calls counted (Strategy::counters()).
struct StrategyCounters {
    std::uint64_t requests = 0;  // allocate calls
    std::uint64_t refusals = 0;  // of which refused (out of memory)
    std::uint64_t hits = 0;      // of which served without taking memory from the device or driver
    std::uint64_t frees = 0;     // deallocate and deallocate_granted_oom calls
    std::uint64_t retries = 0;   // requests retried after giving cached memory back (PyTorch's num_alloc_retries)
    std::uint64_t held = 0;      // requests granted and not yet freed
};

// The calls the replay makes are public and not virtual, as Upstream's are
// (RMM's device_memory_resource pattern): each counts and checks the rules
// every strategy keeps, around a private virtual do_* that only serves:
//  - a handle is allocated only while the strategy does not hold it;
//  - only a held handle is freed, once (a refused request is never freed);
//  - release_all comes after every handle was freed, and gives every
//    cudaMalloc'd byte and mapped page back.
// A broken rule is a bug in a strategy (or the replay): std::logic_error.
// So a new strategy writes its policy only, and cannot count differently.
class Strategy {
public:
    explicit Strategy(Upstream& upstream) : upstream_(upstream) {}
    virtual ~Strategy() = default;
    Strategy(const Strategy&) = delete;
    Strategy& operator=(const Strategy&) = delete;

    // Serves a request; false when it cannot (out of memory after whatever
    // retries the strategy makes).
    bool allocate(const Request& request) {
        if (holds(request.handle)) fail_held(request.handle);
        const UpstreamCounters& c = upstream_.counters();
        const std::uint64_t taken_before = c.device_allocs + c.pool_grows;
        const bool granted = do_allocate(request);
        ++counters_.requests;
        if (!granted) {
            ++counters_.refusals;
            return false;
        }
        if (c.device_allocs + c.pool_grows == taken_before) ++counters_.hits;
        at_grow(held_, request.handle) = 1;
        ++counters_.held;
        return true;
    }
    void deallocate(std::uint32_t handle) {
        release_handle(handle);
        do_deallocate(handle);
    }
    // Frees a request whose memory came back later than the program freed it
    // (Event::deferred): the handle is free now, its memory when the
    // strategy's model says (torch-caching: at the next request, or in the
    // release that request makes before its retry).
    void deallocate_deferred(std::uint32_t handle) {
        release_handle(handle);
        do_deallocate_deferred(handle);
    }
    // Frees a request the recording refused and this strategy granted, right
    // before the program's next request: the end of the failed step's
    // unwinding, which came before whatever waits for that request (an
    // empty_cache torch-caching has not yet read as the program's or its own).
    void deallocate_granted_oom(std::uint32_t handle) {
        release_handle(handle);
        do_deallocate_granted_oom(handle);
    }
    // Returns every cached byte upstream (after all handles were freed).
    void release_all();

    // Whether `handle` was granted and not yet freed.
    bool holds(std::uint32_t handle) const noexcept { return handle < held_.size() && held_[handle] != 0; }
    const StrategyCounters& counters() const noexcept { return counters_; }
    std::uint64_t retries() const noexcept { return counters_.retries; }

    // Events of the workload, passed on as they come (no rules to keep):
    // A device synchronization point of the workload.
    virtual void synchronize_point() {}
    // The program asked the allocator to give its cached memory back
    // (torch.cuda.empty_cache()). Strategies without a cache, or whose
    // model cannot give part of it back (RMM's pool), do nothing.
    virtual void empty_cache() {}
    // The trace ended: settle what waited for the next event (torch-caching
    // reads an empty_cache in the light of the request after it).
    virtual void end_of_trace() {}
    // What the recorded allocator did just before the next request: a
    // cudaMalloc of `size` bytes at `address` (a PyTorch snapshot's
    // segment_alloc). torch-caching orders its cached blocks by address as
    // PyTorch does, so it takes the device's addresses where it can.
    virtual void recorded_segment(std::uint64_t address, std::uint64_t size) {
        (void)address;
        (void)size;
    }
    // Likewise: pages mapped into an expandable segment (segment_map).
    virtual void recorded_mapping(std::uint64_t size) { (void)size; }
    // The program changed PyTorch's allocator settings (Event settings):
    // `conf` in PYTORCH_ALLOC_CONF's syntax. Only torch-caching has them.
    virtual void settings_changed(std::string_view conf) { (void)conf; }
    // The program gave the private pool `pool` up (Event pool_release);
    // `emptied`: its cache was emptied at once.
    virtual void pool_released(std::uint32_t pool, bool emptied) {
        (void)pool;
        (void)emptied;
    }
    // Strategy-specific figures for the JSON report (PyTorch's own stats...).
    virtual std::vector<std::pair<std::string, std::uint64_t>> details() const { return {}; }

protected:
    // A request retried after the strategy gave cached memory back.
    void count_retry() noexcept { ++counters_.retries; }

    Upstream& upstream_;

private:
    // The policy alone; the public calls above count and check.
    virtual bool do_allocate(const Request& request) = 0;
    virtual void do_deallocate(std::uint32_t handle) = 0;
    virtual void do_deallocate_granted_oom(std::uint32_t handle) { do_deallocate(handle); }
    virtual void do_deallocate_deferred(std::uint32_t handle) { do_deallocate(handle); }
    virtual void do_release_all() = 0;

    void release_handle(std::uint32_t handle) {
        if (!holds(handle)) fail_not_held(handle);
        held_[handle] = 0;
        --counters_.held;
        ++counters_.frees;
    }
    // Out of line: the checks above stay a compare and a branch.
    [[noreturn]] static void fail_held(std::uint32_t handle);
    [[noreturn]] static void fail_not_held(std::uint32_t handle);

    std::vector<std::uint8_t> held_;  // by handle: 1 while granted and not freed
    StrategyCounters counters_;
};

// A strategy: a row of kStrategies. Adding one is adding its row (name, one
// line of help, constructor, the options that tune it), its class and its
// documentation; parsing, --help, --list strategies, the warnings about
// options for strategies not selected and the JSON schema read the table.
struct StrategySpec {
    std::unique_ptr<Strategy> (*make)(Upstream& upstream, const StrategyOptions& options);
    // The reuse-sim options that tune it, as written on the command line,
    // separated by spaces: "--growth --zero-fill".
    std::string_view options;
    // Whether, with these options, it needs StrategyOptions::largest_request
    // (a first pass over the input); null: never.
    bool (*needs_largest_request)(const StrategyOptions& options) = nullptr;

    friend bool operator==(const StrategySpec& a, const StrategySpec& b) noexcept { return a.make == b.make; }
    friend bool operator!=(const StrategySpec& a, const StrategySpec& b) noexcept { return !(a == b); }
};

// Every strategy reuse-sim compares, in the order of its table and report.
extern const NameTable<StrategySpec> kStrategies;

// Whether `option` ("--growth") is one of the strategy's options.
bool uses_option(const StrategySpec& strategy, std::string_view option) noexcept;
// The names of the strategies that `option` tunes: "pool, binning".
std::string strategies_using(std::string_view option);

std::unique_ptr<Strategy> make_strategy(const StrategySpec& strategy, const StrategyOptions& options, Upstream& upstream);

}  // namespace gpumem::reuse_sim
