#include "bench/alloc_modes.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/stats.hpp"
#include "core/cuda_check.hpp"
#include "core/mix_memory.hpp"
#include "core/nvml.hpp"
#include "core/timing.hpp"

namespace gpumem {
namespace {

using Clock = std::chrono::steady_clock;

double micros_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}


void report(const ProgressFn& progress, const char* phase, std::uint64_t done, std::uint64_t total) {
    if (progress) progress(phase, done, total);
}

// Managed memory asked for must leave at least this much of free memory.
constexpr std::uint64_t kManagedHeadroom = 64ULL << 20;

// Latencies of a run that may be long (churn --duration): a uniform
// reservoir of at most kMaxSamples values, and the exact maximum.
class LatencySamples {
public:
    static constexpr std::size_t kMaxSamples = 1u << 20;
    void add(double v) {
        ++count_;
        max_ = std::max(max_, v);
        if (values_.size() < kMaxSamples) {
            values_.push_back(v);
        } else {
            const std::uint64_t j = rng_() % count_;
            if (j < kMaxSamples) values_[j] = v;
        }
    }
    Summary summary() const {
        Summary s = summarize(values_);
        if (count_) s.max = max_;
        s.count = count_;
        return s;
    }

private:
    std::vector<double> values_;
    std::uint64_t count_ = 0;
    double max_ = 0;
    std::mt19937_64 rng_{12345};
};

}  // namespace

// ---------------------------------------------------------------------------
// Shared by fill and hold

std::vector<DeviceAllocation> allocate_chunks(DeviceId device, std::uint64_t total, std::uint64_t chunk, const StopToken& stop,
                                              const ProgressFn& progress) {
    const std::vector<std::uint64_t> plan = plan_chunks(total, chunk);
    std::vector<DeviceAllocation> pieces;
    pieces.reserve(plan.size());
    std::uint64_t done = 0;
    for (std::uint64_t bytes : plan) {
        stop.throw_if_stopped();
        try {
            pieces.emplace_back(device, static_cast<std::size_t>(bytes));
        } catch (const OutOfMemoryError& e) {
            const std::uint64_t count = pieces.size();
            pieces.clear();  // everything is freed before the error is reported
            std::string free_text;
            try {
                free_text = "; " + format_bytes(device_memory_info(device).free) + " free now";
            } catch (const Error&) {
            }
            throw PartialAllocationError("device " + to_string(device) + ": cudaMalloc of " + format_bytes(bytes) +
                                             " failed after " + format_bytes(done) + " of the " + format_bytes(total) +
                                             " asked for were allocated (" + std::to_string(count) + " pieces of up to " +
                                             format_bytes(chunk) + "); all of it was freed" + free_text,
                                         device, total, done, count);
        }
        done += bytes;
        report(progress, "allocating", done, total);
    }
    return pieces;
}

// ---------------------------------------------------------------------------
// latency

void check_managed_fits(DeviceId device, std::uint64_t bytes) {
    const DeviceMemoryInfo info = device_memory_info(device);
    if (bytes + kManagedHeadroom > info.free)
        throw OutOfMemoryError("refusing to ask for " + format_bytes(bytes) + " of managed memory on device " +
                                   to_string(device) + ": only " + format_bytes(info.free) +
                                   " is free (oversubscribed managed memory can hang the GPU)",
                               bytes);
}

namespace {

// Spins a one-thread kernel on its own stream for kSyncProbeKernelMs and
// tells whether `op` returned before the kernel ended.
class SyncProber {
public:
    explicit SyncProber(DeviceId device) : stream_(device), flags_(device, 64) {
        GPUMEM_CUDA_CALL(cudaMemsetAsync(flags_.data(), 0, 64, stream_.get()));
        stream_.synchronize();
    }

    // Returns (synchronized?, microseconds the operation took).
    std::pair<std::optional<bool>, double> probe(const std::function<void()>& op) {
        auto* flag = static_cast<int*>(flags_.data());
        const auto timeout_ns = static_cast<std::uint64_t>(kSyncProbeKernelMs * 1e6);
        launch_spin(flag, flag + 1, timeout_ns, stream_.get());
        const auto t0 = Clock::now();
        op();
        const auto t1 = Clock::now();
        const cudaError_t status = cudaStreamQuery(stream_.get());
        cudaGetLastError();  // a "not ready" answer must not linger as the thread's last error
        const double us = micros_between(t0, t1);
        std::optional<bool> synced;
        if (status == cudaErrorNotReady) {
            synced = false;  // returned while the kernel was still running
        } else if (status == cudaSuccess) {
            // The kernel cannot end sooner than kSyncProbeKernelMs after its
            // launch, so the operation waited for it, unless it is that slow
            // by itself.
            if (us >= 0.5 * kSyncProbeKernelMs * 1000.0) synced = true;
        } else {
            throw_cuda_error(status, "cudaStreamQuery");
        }
        stream_.synchronize();
        return {synced, us};
    }

private:
    CudaStream stream_;
    DeviceAllocation flags_;  // [0] release flag (stays 0), [1] timed-out flag
};

SyncProbe probe_synchronization(AllocApi api, DeviceId device, const AllocResources& resources) {
    SyncProbe result;
    result.api = api;
    if (api == AllocApi::managed) check_managed_fits(device, kSyncProbeBytes);
    SyncProber prober(device);
    ApiAllocation allocation;
    auto [alloc_synced, alloc_us] = prober.probe(
        [&] { allocation = ApiAllocation(api, device, kSyncProbeBytes, resources.stream(), resources.pool()); });
    auto [free_synced, free_us] = prober.probe([&] { allocation.reset(); });
    result.alloc_syncs = alloc_synced;
    result.alloc_us = alloc_us;
    result.free_syncs = free_synced;
    result.free_us = free_us;
    return result;
}

}  // namespace

LatencyResult run_latency(DeviceId device, const LatencyOptions& options, const StopToken& stop, const ProgressFn& progress) {
    ensure_context(device);
    LatencyResult result(device);
    AllocResources resources(device, options.apis);
    const std::uint64_t total_steps = options.apis.size() * options.sizes.size() *
                                      static_cast<std::uint64_t>(options.iterations + options.warmup);
    std::uint64_t step = 0;
    for (AllocApi api : options.apis) {
        for (std::uint64_t size : options.sizes) {
            if (api == AllocApi::managed) check_managed_fits(device, size);
            LatencyRow row;
            row.api = api;
            row.size = size;
            row.allocated = alloc_api_rounded_size(api, device, size);
            for (int i = 0; i < options.warmup; ++i) {
                stop.throw_if_stopped();
                ApiAllocation warm(api, device, size, resources.stream(), resources.pool());
                warm.reset();
                report(progress, "latency", ++step, total_steps);
            }
            std::vector<double> alloc_us, free_us;
            alloc_us.reserve(options.iterations);
            free_us.reserve(options.iterations);
            for (int i = 0; i < options.iterations; ++i) {
                stop.throw_if_stopped();
                const auto t0 = Clock::now();
                ApiAllocation allocation(api, device, size, resources.stream(), resources.pool());
                const auto t1 = Clock::now();
                allocation.reset();
                const auto t2 = Clock::now();
                alloc_us.push_back(micros_between(t0, t1));
                free_us.push_back(micros_between(t1, t2));
                report(progress, "latency", ++step, total_steps);
            }
            row.alloc_us = summarize(std::move(alloc_us));
            row.free_us = summarize(std::move(free_us));
            result.rows.push_back(row);
        }
        if (options.probe_sync) {
            stop.throw_if_stopped();
            result.sync.push_back(probe_synchronization(api, device, resources));
        }
    }
    resources.synchronize();
    return result;
}

// ---------------------------------------------------------------------------
// Cost table

std::string cost_table_api_name(AllocApi api) {
    switch (api) {
        case AllocApi::async: return "async_grow";
        case AllocApi::async_pool: return "async";
        default: return alloc_api_name(api);
    }
}

reuse_sim::CostTable cost_table_from_latency(const LatencyResult& result, const std::string& device_name,
                                             const std::string& source) {
    reuse_sim::CostTable table;
    table.device = device_name;
    table.source = source;
    for (const LatencyRow& row : result.rows) {
        auto& operations = table.apis[cost_table_api_name(row.api)];
        operations["alloc"].points.push_back({row.size, row.alloc_us.median});
        operations["free"].points.push_back({row.size, row.free_us.median});
    }
    for (auto& [api, operations] : table.apis)
        for (auto& [operation, curve] : operations) {
            auto& points = curve.points;
            std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
            points.erase(std::unique(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.bytes == b.bytes; }),
                         points.end());
        }
    return table;
}

// ---------------------------------------------------------------------------
// max

MaxResult run_max(DeviceId device, const MaxOptions& options, const StopToken& stop, const ProgressFn& progress) {
    ensure_context(device);
    MaxResult result(device);
    const DeviceMemoryInfo before = device_memory_info(device);
    result.total = before.total;
    result.free_before = before.free;

    // No single allocation exceeds the device's total memory, so the search
    // is bounded by it. Each probe frees at once.
    const std::uint64_t granules = before.total / options.granularity;  // whole granules: integer division intended
    const int expected_probes = static_cast<int>(std::ceil(std::log2(static_cast<double>(granules + 2))));
    int probed = 0;
    result.largest_single = largest_succeeding(
        before.total, options.granularity,
        [&](std::uint64_t bytes) {
            stop.throw_if_stopped();
            report(progress, "searching", static_cast<std::uint64_t>(++probed), static_cast<std::uint64_t>(expected_probes));
            try {
                DeviceAllocation probe(device, static_cast<std::size_t>(bytes));
                return true;
            } catch (const OutOfMemoryError&) {
                return false;
            }
        },
        &result.probes);

    std::vector<DeviceAllocation> pieces;
    pieces.reserve(static_cast<std::size_t>(before.total / options.chunk + 64));
    std::uint64_t held = 0;
    result.chunks = obtain_in_chunks(
        options.chunk, options.granularity,
        [&](std::uint64_t bytes) {
            try {
                pieces.emplace_back(device, static_cast<std::size_t>(bytes));
                held += bytes;
                return true;
            } catch (const OutOfMemoryError&) {
                return false;
            }
        },
        [&] {
            stop.throw_if_stopped();
            report(progress, "allocating", held, before.free);
        });
    pieces.clear();
    result.free_after = device_memory_info(device).free;
    return result;
}

// ---------------------------------------------------------------------------
// fill

namespace {

std::uint64_t read_word(const void* address, cudaStream_t stream) {
    std::uint64_t v = 0;
    GPUMEM_CUDA_CALL(cudaMemcpyAsync(&v, address, sizeof v, cudaMemcpyDeviceToHost, stream));
    GPUMEM_CUDA_CALL(cudaStreamSynchronize(stream));
    return v;
}

// The test hook: inverts one 64-bit word (global index over all pieces).
void corrupt_word(const std::vector<DeviceAllocation>& pieces, std::uint64_t index, cudaStream_t stream) {
    std::uint64_t words = 0;
    for (const DeviceAllocation& p : pieces) words += p.size() / 8;
    if (words == 0) return;
    index %= words;
    for (const DeviceAllocation& p : pieces) {
        const std::uint64_t n = p.size() / 8;
        if (index < n) {
            auto* address = static_cast<std::uint64_t*>(p.data()) + index;
            const std::uint64_t flipped = ~read_word(address, stream);
            GPUMEM_CUDA_CALL(cudaMemcpyAsync(address, &flipped, sizeof flipped, cudaMemcpyHostToDevice, stream));
            GPUMEM_CUDA_CALL(cudaStreamSynchronize(stream));
            return;
        }
        index -= n;
    }
}

// The bad words one pattern's verification found, chunk by chunk: every one
// counted, the first kMaxReportedMismatches described.
void add_mismatches(FillResult& result, const std::vector<DeviceAllocation>& pieces, const std::vector<VerifyResult>& found,
                    Pattern pattern, std::uint64_t seed, int pass, cudaStream_t stream) {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        const VerifyResult& r = found[i];
        if (r.mismatches == 0) continue;
        result.mismatched_words += r.mismatches;
        if (result.mismatches.size() >= kMaxReportedMismatches) continue;
        FillMismatch m;
        m.pattern = pattern;
        m.pass = pass + 1;
        m.chunk = i;
        m.chunk_base = reinterpret_cast<std::uint64_t>(pieces[i].data());
        m.offset = r.first_bad_index * 8;
        m.expected = pattern_word(pattern, seed, r.first_bad_index, m.chunk_base + m.offset);
        m.actual = read_word(static_cast<const char*>(pieces[i].data()) + m.offset, stream);
        m.words_in_chunk = r.mismatches;
        result.mismatches.push_back(m);
    }
}

}  // namespace

FillResult run_fill(DeviceId device, const FillOptions& options, const StopToken& stop, const ProgressFn& progress) {
    ensure_context(device);
    FillResult result(device);
    result.free_before = device_memory_info(device).free;
    result.requested = resolve_total(options.total, result.free_before);
    CudaStream stream(device);

    const auto t0 = Clock::now();
    std::vector<DeviceAllocation> pieces = allocate_chunks(device, result.requested, options.chunk, stop, progress);
    result.alloc_seconds = seconds_since(t0);
    result.chunks = pieces.size();
    std::uint64_t words = 0;
    for (const DeviceAllocation& p : pieces) {
        result.allocated += p.size();
        words += p.size() / 8;
    }
    if (options.patterns.empty() || pieces.empty()) return result;

    DeviceAllocation verify_results(device, pieces.size() * sizeof(VerifyResult));
    auto* results_device = static_cast<VerifyResult*>(verify_results.data());
    std::vector<VerifyResult> results_host(pieces.size());
    CudaEvent write_start(device), write_end(device), read_start(device), read_end(device);
    // Each phase's kernels are queued behind a spin kernel and run back to
    // back once released (nvbandwidth's method), so that the rate is the
    // GPU's: a launch that waits on the host (another thread of the process
    // pinning host memory for its copies) no longer counts as fill time. On 4
    // H200s checked at once, one GPU's fill read 2525 to 3986 GB/s that way
    // against 4440 alone. A queue too long for the stream is timed unheld.
    StreamBlocker hold(device);
    const bool held = pieces.size() + 2 <= static_cast<std::size_t>(kMaxQueuedOperations);
    const std::uint64_t steps = static_cast<std::uint64_t>(options.passes) * options.patterns.size();
    std::uint64_t step = 0;
    bool corrupted = false;

    for (int pass = 0; pass < options.passes; ++pass) {
        for (Pattern pattern : options.patterns) {
            stop.throw_if_stopped();
            // A different seed per pass, so walking and random differ between passes.
            const std::uint64_t seed = options.seed + static_cast<std::uint64_t>(pass);
            if (held) hold.block(stream.get());
            write_start.record(stream.get());
            for (const DeviceAllocation& p : pieces) launch_fill_pattern(p.data(), p.size() / 8, pattern, seed, stream.get());
            write_end.record(stream.get());
            hold.release();
            if (options.corrupt_word && !corrupted) {
                corrupt_word(pieces, *options.corrupt_word, stream.get());
                corrupted = true;
            }
            if (options.verify) {
                for (std::size_t i = 0; i < pieces.size(); ++i) reset_verify_result(results_device + i, stream.get());
                if (held) hold.block(stream.get());
                read_start.record(stream.get());
                for (std::size_t i = 0; i < pieces.size(); ++i)
                    launch_verify_pattern(pieces[i].data(), pieces[i].size() / 8, pattern, seed, results_device + i,
                                          stream.get());
                read_end.record(stream.get());
                hold.release();  // before the copy to pageable memory, which waits for the stream
                GPUMEM_CUDA_CALL(cudaMemcpyAsync(results_host.data(), results_device, pieces.size() * sizeof(VerifyResult),
                                                 cudaMemcpyDeviceToHost, stream.get()));
            }
            stream.synchronize();
            result.write_seconds += write_end.elapsed_ms_since(write_start) / 1000.0;
            result.bytes_written += words * 8;
            if (options.verify) {
                result.read_seconds += read_end.elapsed_ms_since(read_start) / 1000.0;
                result.bytes_read += words * 8;
                add_mismatches(result, pieces, results_host, pattern, seed, pass, stream.get());
            }
            report(progress, options.verify ? "writing and verifying" : "writing", ++step, steps);
        }
    }
    return result;
}

// ---------------------------------------------------------------------------
// churn

constexpr Named<ChurnOptions::Via> kChurnViaRows[] = {
    {"direct", ChurnOptions::Via::direct, "the --api's own allocate and free calls"},
    {"mixmemory", ChurnOptions::Via::mixmemory, "MixMemory slots growing by --growth (device memory)"},
};
constexpr NameTable<ChurnOptions::Via> kChurnVias{"churn route", kChurnViaRows};

namespace {

// What both churn loops share: when to stop, progress, the latency samples
// and the peak of used memory. Only the calls between two Clock::now() are
// timed; none of this runs inside them.
class ChurnLoop {
public:
    ChurnLoop(DeviceId device, const ChurnOptions& options, const ProgressFn& progress, ChurnResult& result)
        : options_(options), progress_(progress), result_(result) {
        const DeviceMemoryInfo start_info = device_memory_info(device);
        used_at_start_ = start_info.total - start_info.free;
        result.max_live = options.max_live.resolve(start_info.free);
        if (options.api == AllocApi::managed) {
            const std::uint64_t largest = *std::max_element(options.sizes.begin(), options.sizes.end());
            check_managed_fits(device, result.max_live + largest);
        }
    }

    // The clock of --duration and of `seconds` starts here, once the stream
    // and the pool exist.
    void start() {
        start_ = Clock::now();
        deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.duration_s));
        progress_total_ = options_.ops ? options_.ops : static_cast<std::uint64_t>(std::max(1.0, options_.duration_s * 1000.0));
    }

    bool keep_going() const {
        if (options_.ops && result_.ops >= options_.ops) return false;
        if (options_.duration_s > 0 && Clock::now() >= deadline_) return false;
        return true;
    }
    // One operation done.
    void tick() {
        ++result_.ops;
        if (progress_ && (result_.ops & 63) == 0)
            progress_("churn", options_.ops ? result_.ops : static_cast<std::uint64_t>(seconds_since(start_) * 1000.0),
                      progress_total_);
    }
    // Growth of cudaMemGetInfo's used memory over the start.
    void sample_used() {
        std::size_t free = 0, total = 0;
        GPUMEM_CUDA_CALL(cudaMemGetInfo(&free, &total));
        const std::uint64_t used = total - free;
        if (used > used_at_start_) result_.peak_used = std::max<std::uint64_t>(result_.peak_used, used - used_at_start_);
    }
    void finish() {
        result_.alloc_us = alloc_us.summary();
        result_.free_us = free_us.summary();
        result_.seconds = seconds_since(start_);
    }

    LatencySamples alloc_us, free_us;

private:
    const ChurnOptions& options_;
    const ProgressFn& progress_;
    ChurnResult& result_;
    std::uint64_t used_at_start_ = 0;
    Clock::time_point start_, deadline_;
    std::uint64_t progress_total_ = 0;
};

// --via direct: allocate or free a random live allocation, half the time each.
void churn_direct(DeviceId device, const ChurnOptions& options, const AllocResources& resources, ChurnPlanner& planner,
                  const StopToken& stop, ChurnLoop& loop, ChurnResult& result) {
    std::vector<ApiAllocation> live;
    std::uint64_t live_bytes = 0;
    while (loop.keep_going()) {
        stop.throw_if_stopped();
        const ChurnPlanner::Step step = planner.next_direct(live.size(), live_bytes);
        if (step.allocate) {
            try {
                const auto t0 = Clock::now();
                ApiAllocation allocation(options.api, device, static_cast<std::size_t>(step.size), resources.stream(),
                                         resources.pool());
                const auto t1 = Clock::now();
                loop.alloc_us.add(micros_between(t0, t1));
                live_bytes += allocation.size();
                result.bytes_allocated += allocation.size();
                live.push_back(std::move(allocation));
                ++result.allocations;
                result.peak_live = std::max(result.peak_live, live_bytes);
                loop.sample_used();
            } catch (const OutOfMemoryError&) {
                ++result.failures;
            }
        } else {
            ApiAllocation& victim = live[step.victim];
            const std::uint64_t bytes = victim.size();
            const auto t0 = Clock::now();
            victim.reset();
            const auto t1 = Clock::now();
            loop.free_us.add(micros_between(t0, t1));
            live_bytes -= bytes;
            std::swap(victim, live.back());
            live.pop_back();
            ++result.frees;
        }
        loop.tick();
    }
    live.clear();
}

// --via mixmemory: every step asks a random slot for a random size.
void churn_mixmemory(DeviceId device, const ChurnOptions& options, const AllocResources& resources, ChurnPlanner& planner,
                     const StopToken& stop, ChurnLoop& loop, ChurnResult& result) {
    std::vector<MixMemory> slots;
    slots.reserve(options.slots);
    for (std::size_t i = 0; i < options.slots; ++i) {
        MixMemoryOptions mo;
        mo.device = device;
        mo.growth = options.growth;
        mo.stream = resources.stream();
        slots.emplace_back(mo);
    }
    std::uint64_t allocations_seen = 0;
    while (loop.keep_going()) {
        stop.throw_if_stopped();
        const ChurnPlanner::Step step = planner.next_slot_request();
        try {
            const auto t0 = Clock::now();
            slots[step.slot].device(static_cast<std::size_t>(step.size));
            const auto t1 = Clock::now();
            loop.alloc_us.add(micros_between(t0, t1));
        } catch (const OutOfMemoryError&) {
            ++result.failures;
        }
        std::uint64_t capacity = 0, allocations = 0;
        for (const MixMemory& m : slots) {
            capacity += m.device_capacity();
            allocations += m.counters().device_allocations;
        }
        result.peak_live = std::max(result.peak_live, capacity);
        if (allocations != allocations_seen) {
            allocations_seen = allocations;
            loop.sample_used();
        }
        loop.tick();
    }
    for (const MixMemory& m : slots) {
        const MixMemoryCounters& c = m.counters();
        result.allocations += c.device_allocations;
        result.frees += c.device_frees;
        result.reuses += c.device_reuses;
        result.bytes_allocated += c.device_bytes_allocated;
    }
    // MixMemory counts a free when a growth replaces a buffer; the buffers
    // still held are released here, as the process would at its end.
    for (MixMemory& m : slots)
        if (m.device_capacity() > 0) {
            m.release_device();
            ++result.frees;
        }
    slots.clear();
}

}  // namespace

ChurnResult run_churn(DeviceId device, const ChurnOptions& options, const StopToken& stop, const ProgressFn& progress) {
    ensure_context(device);
    ChurnResult result(device);
    ChurnLoop loop(device, options, progress, result);
    AllocResources resources(device, {options.api});
    ChurnPlanner planner(options.seed, options.sizes, result.max_live, options.slots);
    loop.start();
    if (options.via == ChurnOptions::Via::direct) {
        churn_direct(device, options, resources, planner, stop, loop, result);
    } else {
        churn_mixmemory(device, options, resources, planner, stop, loop, result);
    }
    resources.synchronize();
    loop.finish();
    return result;
}

// ---------------------------------------------------------------------------
// hold

HeldMemory allocate_held(DeviceId device, const SizeSpec& total, std::uint64_t chunk, const StopToken& stop,
                         const ProgressFn& progress) {
    ensure_context(device);
    HeldMemory held(device);
    held.free_before = device_memory_info(device).free;
    held.requested = resolve_total(total, held.free_before);
    const auto t0 = Clock::now();
    held.pieces = allocate_chunks(device, held.requested, chunk, stop, progress);
    held.alloc_seconds = seconds_since(t0);
    for (const DeviceAllocation& p : held.pieces) held.bytes += p.size();
    return held;
}

}  // namespace gpumem
