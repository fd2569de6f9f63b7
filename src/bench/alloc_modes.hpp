// The logic of `gpumem alloc-test`: allocation latency, the largest and the
// total obtainable allocation, filling memory with verified patterns,
// allocation churn, and holding memory. No CLI and no printing: each mode
// returns plain results that the CLI renders. Work on several devices runs
// on one thread per device (run_on_devices).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bench/alloc_apis.hpp"
#include "base/alloc_plan.hpp"
#include "reuse_sim/cost_table.hpp"
#include "core/cuda_raii.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "core/kernels.hpp"
#include "base/memory_policy.hpp"
#include "base/sizes.hpp"
#include "base/stats.hpp"

namespace gpumem {

// ---------------------------------------------------------------------------
// Running on several devices

// Thrown on device threads that stop because another device failed; never
// reaches the user.
class StoppedBySiblingError : public Error {
public:
    StoppedBySiblingError() : Error("stopped because another device failed") {}
};

// Ctrl-C / SIGTERM, or a failure on another device thread.
class StopToken {
public:
    void stop_all() noexcept { stopped_.store(true, std::memory_order_relaxed); }
    bool stop_requested() const noexcept { return stopped_.load(std::memory_order_relaxed) || interrupt_requested(); }
    void throw_if_stopped() const {
        throw_if_interrupted();
        if (stopped_.load(std::memory_order_relaxed)) throw StoppedBySiblingError();
    }

private:
    std::atomic<bool> stopped_{false};
};

// Runs fn(device, stop) for each device, concurrently on one thread per
// device when there are several. A failure on one device stops the others;
// after all have joined, the first real error in device order is rethrown
// (the others' owners have freed their memory by then).
template <typename Fn>
auto run_on_devices(const std::vector<DeviceId>& devices, Fn fn)
    -> std::vector<decltype(fn(std::declval<DeviceId>(), std::declval<const StopToken&>()))> {
    using Result = decltype(fn(std::declval<DeviceId>(), std::declval<const StopToken&>()));
    StopToken stop;
    std::vector<std::optional<Result>> results(devices.size());
    std::vector<std::exception_ptr> errors(devices.size());
    auto work = [&](std::size_t i) {
        try {
            results[i].emplace(fn(devices[i], stop));
        } catch (...) {
            errors[i] = std::current_exception();
            stop.stop_all();
        }
    };
    if (devices.size() == 1) {
        work(0);
    } else {
        std::vector<std::thread> threads;
        threads.reserve(devices.size());
        for (std::size_t i = 0; i < devices.size(); ++i) threads.emplace_back(work, i);
        for (std::thread& t : threads) t.join();
    }
    std::exception_ptr first;
    for (const std::exception_ptr& e : errors) {
        if (!e) continue;
        if (!first) first = e;
        try {
            std::rethrow_exception(e);
        } catch (const StoppedBySiblingError&) {
            continue;
        } catch (...) {
            first = e;
            break;
        }
    }
    if (first) std::rethrow_exception(first);
    std::vector<Result> out;
    out.reserve(results.size());
    for (auto& r : results) out.push_back(std::move(*r));
    return out;
}

// What every mode's result starts with: the device it measured. DeviceId has
// no default, so a result cannot be made without naming its device.
struct OnDevice {
    explicit OnDevice(DeviceId on) : device(on) {}
    DeviceId device;
};

// Progress of long work: phase label, done, total.
using ProgressFn = std::function<void(const char* phase, std::uint64_t done, std::uint64_t total)>;

// An allocation that was the point of the run failed part way; everything
// allocated so far has been freed when this reaches the caller.
class PartialAllocationError : public OutOfMemoryError {
public:
    PartialAllocationError(const std::string& message, DeviceId device, std::uint64_t requested, std::uint64_t allocated,
                           std::uint64_t pieces)
        : OutOfMemoryError(message, requested), device_(device), allocated_(allocated), pieces_(pieces) {}
    DeviceId device() const noexcept { return device_; }
    std::uint64_t allocated_bytes() const noexcept { return allocated_; }
    std::uint64_t pieces() const noexcept { return pieces_; }

private:
    DeviceId device_;
    std::uint64_t allocated_, pieces_;
};

// cudaMalloc `total` bytes on `device` in pieces of `chunk`. Throws
// PartialAllocationError (exit 5) naming how far it got when a piece fails.
std::vector<DeviceAllocation> allocate_chunks(DeviceId device, std::uint64_t total, std::uint64_t chunk, const StopToken& stop,
                                              const ProgressFn& progress = {});

// ---------------------------------------------------------------------------
// latency

struct LatencyOptions {
    std::vector<AllocApi> apis{AllocApi::device};
    std::vector<std::uint64_t> sizes;
    int iterations = 50;
    int warmup = 3;
    bool probe_sync = true;
};

struct LatencyRow {
    AllocApi api = AllocApi::device;
    std::uint64_t size = 0;
    std::uint64_t allocated = 0;  // what the API really took (VMM rounds up)
    Summary alloc_us, free_us;    // host clock, microseconds, one value per iteration
};

// Whether an allocation or a free returned only after a kernel running on
// another stream had finished, i.e. synchronized the device. nullopt: the
// probe could not tell (the operation itself outlasted the kernel).
struct SyncProbe {
    AllocApi api = AllocApi::device;
    std::optional<bool> alloc_syncs, free_syncs;
    double alloc_us = 0, free_us = 0;
};

struct LatencyResult : OnDevice {
    using OnDevice::OnDevice;
    std::vector<LatencyRow> rows;
    std::vector<SyncProbe> sync;  // one per API when probe_sync
};

// How long the kernel of the synchronization probe runs.
inline constexpr double kSyncProbeKernelMs = 50.0;
// Size of the probe allocation (one VMM granule, one large page).
inline constexpr std::uint64_t kSyncProbeBytes = 2ULL << 20;

LatencyResult run_latency(DeviceId device, const LatencyOptions& options, const StopToken& stop,
                          const ProgressFn& progress = {});

// Refuses (OutOfMemoryError, exit 5) to ask for managed memory beyond what
// the device has free: oversubscribed managed memory can hang the GPU.
void check_managed_fits(DeviceId device, std::uint64_t bytes);

// ---------------------------------------------------------------------------
// Cost table for reuse-sim (`--save-costs`)

// The cost table is reuse-sim's (src/reuse_sim/cost_table.hpp); alloc-test
// fills it from latency medians.
//
// reuse-sim's name for what an API measures: device and host as they are;
// async (the pool grows at each allocation and returns the memory at each
// synchronize) is reuse-sim's "async_grow"; async-pool (served by the pool)
// is its "async"; the others keep alloc-test's names (reuse-sim ignores them).
std::string cost_table_api_name(AllocApi api);
// Points ascend by bytes; a size measured twice keeps its first measurement.
reuse_sim::CostTable cost_table_from_latency(const LatencyResult& result, const std::string& device_name,
                                             const std::string& source = "gpumem alloc-test latency");

// ---------------------------------------------------------------------------
// max

struct MaxOptions {
    std::uint64_t granularity = 2ULL << 20;
    std::uint64_t chunk = 1ULL << 30;
};

struct MaxResult : OnDevice {
    using OnDevice::OnDevice;
    std::uint64_t total = 0, free_before = 0, free_after = 0;
    std::uint64_t largest_single = 0;
    int probes = 0;
    ChunkedObtain chunks;
};

MaxResult run_max(DeviceId device, const MaxOptions& options, const StopToken& stop, const ProgressFn& progress = {});

// ---------------------------------------------------------------------------
// fill

struct FillOptions {
    SizeSpec total;
    std::uint64_t chunk = 1ULL << 30;
    bool verify = false;
    std::vector<Pattern> patterns;
    int passes = 1;
    std::uint64_t seed = 1;
    std::optional<std::uint64_t> corrupt_word;  // test hook: flip this word after writing, before verifying
};

struct FillMismatch {
    Pattern pattern = Pattern::zeros;
    int pass = 0;
    std::size_t chunk = 0;
    std::uint64_t chunk_base = 0, offset = 0;  // address = chunk_base + offset
    std::uint64_t expected = 0, actual = 0;
    std::uint64_t words_in_chunk = 0;  // mismatching words in this chunk
};

struct FillResult : OnDevice {
    using OnDevice::OnDevice;
    std::uint64_t free_before = 0, requested = 0, allocated = 0;
    std::size_t chunks = 0;
    double alloc_seconds = 0;
    double write_seconds = 0, read_seconds = 0;  // CUDA events around the pattern kernels
    std::uint64_t bytes_written = 0, bytes_read = 0;
    std::uint64_t mismatched_words = 0;
    std::vector<FillMismatch> mismatches;  // the first mismatch of each failing chunk, at most kMaxReportedMismatches
};
inline constexpr std::size_t kMaxReportedMismatches = 16;

FillResult run_fill(DeviceId device, const FillOptions& options, const StopToken& stop, const ProgressFn& progress = {});

// ---------------------------------------------------------------------------
// churn

struct ChurnOptions {
    enum class Via { direct, mixmemory };
    Via via = Via::direct;
    AllocApi api = AllocApi::device;
    std::vector<std::uint64_t> sizes;
    std::uint64_t ops = 0;        // 0: no limit (duration_s must be set)
    double duration_s = 0;        // 0: no limit
    std::uint64_t seed = 1;
    SizeSpec max_live;            // cap on live bytes (percent of free)
    std::size_t slots = 4;        // mixmemory
    GrowthPolicy growth;          // mixmemory
};

// The routes of --via: direct, mixmemory.
extern const NameTable<ChurnOptions::Via> kChurnVias;

struct ChurnResult : OnDevice {
    using OnDevice::OnDevice;
    std::uint64_t ops = 0, allocations = 0, frees = 0, reuses = 0, failures = 0;
    Summary alloc_us, free_us;  // mixmemory: alloc_us is every request (reuse or growth)
    std::uint64_t peak_live = 0;        // own accounting: live bytes, or the sum of MixMemory capacities
    std::uint64_t peak_used = 0;        // cudaMemGetInfo: growth of used memory over the start
    std::uint64_t bytes_allocated = 0;  // cumulative
    std::uint64_t max_live = 0;
    double seconds = 0;
};

ChurnResult run_churn(DeviceId device, const ChurnOptions& options, const StopToken& stop, const ProgressFn& progress = {});

// ---------------------------------------------------------------------------
// hold

struct HeldMemory : OnDevice {
    using OnDevice::OnDevice;
    std::uint64_t free_before = 0, requested = 0, bytes = 0;
    double alloc_seconds = 0;
    std::vector<DeviceAllocation> pieces;
};

HeldMemory allocate_held(DeviceId device, const SizeSpec& total, std::uint64_t chunk, const StopToken& stop,
                         const ProgressFn& progress = {});

}  // namespace gpumem
