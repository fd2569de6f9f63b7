#include "bench/copy_bench.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/log.hpp"

#include "base/cpu_affinity.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_raii.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "core/kernels.hpp"
#include "base/sizes.hpp"

namespace gpumem {
namespace {

// The random pattern depends only on (seed, word index); the address pattern
// would differ between source and destination.
constexpr Pattern kPattern = Pattern::random;
// Most copies per sample when timed with the host clock: no stream queue
// bounds them, but a sample of tiny pageable copies should not run long.
constexpr int kMaxHostTimedIterations = 4096;
// Left free on the device for the context's own allocations and rounding.
constexpr std::uint64_t kDeviceMemoryMargin = 64ULL << 20;
constexpr std::uint64_t kNoIndex = std::numeric_limits<std::uint64_t>::max();

// ---- Host-side pattern work, spread over the CPUs this thread may use ----

// Calls fn(begin, end) over [0, count) in contiguous chunks, on several
// threads when each gets at least `min_chunk`. Threads inherit the caller's
// CPU affinity, so they run next to the GPU.
template <typename Fn>
void parallel_chunks(std::uint64_t count, std::uint64_t min_chunk, Fn&& fn) {
    const std::uint64_t by_size = std::max<std::uint64_t>(1, count / std::max<std::uint64_t>(1, min_chunk));
    const auto threads = static_cast<unsigned>(std::min<std::uint64_t>({by_size, allowed_cpu_count(), 32}));
    if (threads <= 1) {
        fn(std::uint64_t{0}, count);
        return;
    }
    const std::uint64_t chunk = (count + threads - 1) / threads;
    std::exception_ptr failure;
    std::mutex failure_mutex;
    std::vector<std::thread> pool;
    auto run = [&](std::uint64_t begin, std::uint64_t end) {
        try {
            fn(begin, end);
        } catch (...) {
            std::lock_guard<std::mutex> lock(failure_mutex);
            if (!failure) failure = std::current_exception();
        }
    };
    try {
        for (unsigned t = 1; t < threads; ++t) {
            const std::uint64_t begin = t * chunk;
            if (begin >= count) break;
            pool.emplace_back(run, begin, std::min(count, begin + chunk));
        }
    } catch (...) {
        for (auto& th : pool) th.join();
        throw;
    }
    run(0, std::min(count, chunk));
    for (auto& th : pool) th.join();
    if (failure) std::rethrow_exception(failure);
}

constexpr std::uint64_t kMinChunkBytes = 16ULL << 20;

// CPU stores to write-combined memory wait in per-core buffers until a
// serialising instruction; a full fence drains them before a DMA reads.
void flush_write_combining() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_sfence();
#endif
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::uint64_t expected_word(std::uint64_t seed, std::uint64_t index) { return pattern_word(kPattern, seed, index, 0); }

// Writes the pattern into whole words covering [data, data + bytes): the
// buffer holds copy_buffer_bytes(bytes), so a partial last word is defined.
void fill_host_pattern(void* data, std::uint64_t bytes, std::uint64_t seed) {
    auto* words = static_cast<std::uint64_t*>(data);
    parallel_chunks((bytes + 7) / 8, kMinChunkBytes / 8, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t i = begin; i < end; ++i) words[i] = expected_word(seed, i);
        flush_write_combining();
    });
}

void zero_host(void* data, std::uint64_t bytes) {
    auto* p = static_cast<unsigned char*>(data);
    parallel_chunks(bytes, kMinChunkBytes, [&](std::uint64_t begin, std::uint64_t end) {
        std::memset(p + begin, 0, end - begin);
        flush_write_combining();
    });
}

// Offset of the first of `n` bytes that differ from the expected word's bytes
// (memory order, whatever the byte order), or n when they all match.
unsigned first_differing_byte(const unsigned char* actual, std::uint64_t expected, unsigned n) {
    unsigned char want[8];
    std::memcpy(want, &expected, sizeof want);
    for (unsigned k = 0; k < n; ++k)
        if (actual[k] != want[k]) return k;
    return n;
}

// Folds the partial last word (bytes % 8 bytes at `tail`) into `v`.
void check_tail(CopyVerification& v, const unsigned char* tail, std::uint64_t bytes, std::uint64_t seed) {
    const auto rest = static_cast<unsigned>(bytes % 8);
    if (rest == 0) return;
    const std::uint64_t index = bytes / 8;
    const unsigned k = first_differing_byte(tail, expected_word(seed, index), rest);
    if (k == rest) return;
    ++v.mismatched_words;
    if (!v.first_bad_offset) v.first_bad_offset = index * 8 + k;
}

CopyVerification verify_host(const void* data, std::uint64_t bytes, std::uint64_t seed) {
    const auto* words = static_cast<const std::uint64_t*>(data);
    std::mutex merge;
    std::uint64_t mismatches = 0, first = kNoIndex;
    parallel_chunks(bytes / 8, kMinChunkBytes / 8, [&](std::uint64_t begin, std::uint64_t end) {
        std::uint64_t local = 0, local_first = kNoIndex;
        for (std::uint64_t i = begin; i < end; ++i)
            if (words[i] != expected_word(seed, i)) {
                if (local_first == kNoIndex) local_first = i;
                ++local;
            }
        if (local == 0) return;
        std::lock_guard<std::mutex> lock(merge);
        mismatches += local;
        first = std::min(first, local_first);
    });
    CopyVerification v;
    v.checked = true;
    v.mismatched_words = mismatches;
    if (mismatches) {
        const auto* bad = reinterpret_cast<const unsigned char*>(words + first);
        v.first_bad_offset = first * 8 + first_differing_byte(bad, expected_word(seed, first), 8);
    }
    check_tail(v, static_cast<const unsigned char*>(data) + bytes / 8 * 8, bytes, seed);
    return v;
}

void read_device_bytes(void* host, const void* device_ptr, std::size_t n, cudaStream_t stream) {
    GPUMEM_CUDA_CALL(cudaMemcpyAsync(host, device_ptr, n, cudaMemcpyDeviceToHost, stream));
    GPUMEM_CUDA_CALL(cudaStreamSynchronize(stream));
}

// Checks [data, data + bytes) in device memory of `device` with a kernel.
CopyVerification verify_device(DeviceId device, const void* data, std::uint64_t bytes, std::uint64_t seed) {
    AutoDevice guard(device);
    CudaStream stream(device);
    DeviceAllocation result_buffer(device, sizeof(VerifyResult));
    auto* result = static_cast<VerifyResult*>(result_buffer.data());
    reset_verify_result(result, stream.get());
    launch_verify_pattern(data, bytes / 8, kPattern, seed, result, stream.get());
    VerifyResult counted{};
    read_device_bytes(&counted, result, sizeof counted, stream.get());
    CopyVerification v;
    v.checked = true;
    v.mismatched_words = counted.mismatches;
    const auto* base = static_cast<const unsigned char*>(data);
    if (counted.mismatches) {
        unsigned char word[8];
        read_device_bytes(word, base + counted.first_bad_index * 8, 8, stream.get());
        v.first_bad_offset = counted.first_bad_index * 8 + first_differing_byte(word, expected_word(seed, counted.first_bad_index), 8);
    }
    if (bytes % 8) {
        unsigned char tail[8] = {};
        read_device_bytes(tail, base + bytes / 8 * 8, bytes % 8, stream.get());
        check_tail(v, tail, bytes, seed);
    }
    return v;
}

void fill_device_pattern(DeviceId device, void* data, std::uint64_t bytes, std::uint64_t seed) {
    AutoDevice guard(device);
    CudaStream stream(device);
    launch_fill_pattern(data, (bytes + 7) / 8, kPattern, seed, stream.get());
    stream.synchronize();
}

void zero_device(DeviceId device, void* data, std::uint64_t bytes) {
    AutoDevice guard(device);
    CudaStream stream(device);
    GPUMEM_CUDA_CALL(cudaMemsetAsync(data, 0, bytes, stream.get()));
    stream.synchronize();
}

// The address a copy kernel on `device` uses for page-locked host memory
// (with unified addressing normally the host address itself). Memory the
// device has not mapped is an error here rather than a fault in the kernel.
void* device_view_of_host(void* host, DeviceId device, HostMemoryKind kind) {
    AutoDevice guard(device);
    void* p = nullptr;
    const cudaError_t status = cudaHostGetDevicePointer(&p, host, 0);
    if (status == cudaSuccess && p != nullptr) return p;
    cudaGetLastError();
    throw Error(std::string("--engine sm: ") + host_memory_kind_name(kind) + " host memory is not mapped for device " +
                to_string(device) + " (cudaHostGetDevicePointer: " + cudaGetErrorName(status) + ")");
}

// Enables peer access both ways for its lifetime (what this scope enabled,
// it disables again), so a later run without peer access measures the staged path.
class PeerAccessScope {
public:
    PeerAccessScope(DeviceId device, DeviceId peer) : device_(device), peer_(peer) {
        forward_ = enable(device, peer);
        try {
            backward_ = enable(peer, device);
        } catch (...) {
            if (forward_) disable(device, peer);
            throw;
        }
    }
    ~PeerAccessScope() noexcept {
        if (backward_) disable(peer_, device_);
        if (forward_) disable(device_, peer_);
    }
    PeerAccessScope(const PeerAccessScope&) = delete;
    PeerAccessScope& operator=(const PeerAccessScope&) = delete;

private:
    static bool enable(DeviceId from, DeviceId to) {
        AutoDevice guard(from);
        const cudaError_t status = cudaDeviceEnablePeerAccess(to.ordinal(), 0);
        if (status == cudaErrorPeerAccessAlreadyEnabled) {
            cudaGetLastError();
            return false;
        }
        GPUMEM_CUDA_TRY(status, "cudaDeviceEnablePeerAccess");
        return true;
    }
    static void disable(DeviceId from, DeviceId to) noexcept {
        try {
            AutoDevice guard(from);
            if (cudaDeviceDisablePeerAccess(to.ordinal()) != cudaSuccess) {
                cudaGetLastError();
                log::warn("cudaDeviceDisablePeerAccess({} -> {}) failed", from.ordinal(), to.ordinal());
            }
        } catch (...) {
        }
    }
    DeviceId device_, peer_;
    bool forward_ = false, backward_ = false;
};

// The device whose context owns a buffer (host memory: the plan's device).
DeviceId buffer_owner(const CopyPlan& plan, BufferKind where) { return where == BufferKind::peer ? plan.peer.value() : plan.device; }

// What a row of the plan says before it is measured. Peer rows name their
// source as the device and their destination as the peer.
CopyResult plan_row(const CopyPlan& plan, std::string_view flow, DeviceId source, DeviceId destination, std::uint64_t bytes) {
    CopyResult r;
    r.flow = std::string(flow);
    r.direction = plan.direction;
    r.device = plan.device;
    if (plan.direction.uses_peer()) {
        r.device = source;
        r.peer = destination;
        r.peer_access = plan.peer_access;
    }
    if (plan.direction.uses_host_memory()) r.host_kind = plan.host_kind;
    r.engine = plan.engine;
    r.bytes = bytes;
    return r;
}

// The buffers of a plan, each sized for its largest copy and reused by every
// size of a sweep: host buffers of the plan's kind, device buffers on the
// plan's device or its peer.
class CopyBuffers {
public:
    CopyBuffers(const CopyPlan& plan, std::uint64_t capacity) : plan_(plan), capacity_(capacity) {}

    void* allocate(BufferKind where) {
        if (where == BufferKind::host) {
            hosts_.emplace_back(plan_.host_kind, capacity_, plan_.device);
            return hosts_.back().data();
        }
        devices_.emplace_back(buffer_owner(plan_, where), capacity_);
        return devices_.back().data();
    }
    // pageable-huge and huge-only: whether every host buffer got huge pages.
    std::optional<bool> huge_pages() const {
        const bool huge_kind = plan_.host_kind == HostMemoryKind::pageable_huge || plan_.host_kind == HostMemoryKind::huge_only;
        if (!huge_kind || hosts_.empty()) return std::nullopt;
        return std::all_of(hosts_.begin(), hosts_.end(), [](const HostAllocation& h) { return h.huge_pages(); });
    }

private:
    const CopyPlan& plan_;
    std::uint64_t capacity_;
    std::vector<HostAllocation> hosts_;
    std::vector<DeviceAllocation> devices_;
};

// One stream of copies, a lane of the direction (copy_lanes): bidirectional
// directions have two, run at the same time.
struct Lane {
    std::string_view flow;
    void* src = nullptr;
    void* dst = nullptr;
    void* src_view = nullptr;  // what a copy kernel addresses
    void* dst_view = nullptr;
    bool src_on_host = false, dst_on_host = false;
    DeviceId src_device{0}, dst_device{0};  // owners of the buffers
    // Where its stream lives and its kernels run: the device owning its
    // source, so p2p-bidir's reverse copy runs on the peer, as nvbandwidth's.
    DeviceId stream_device{0};
    bool on_peer = false;  // stream_device is the peer, not the plan's device
    cudaMemcpyKind kind = cudaMemcpyDefault;
    int sm_count = 0;
    CudaStream stream;
};

cudaMemcpyKind memcpy_kind(bool src_on_host, bool dst_on_host) {
    if (src_on_host) return dst_on_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice;
    return dst_on_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
}

int sm_count_of(DeviceId device) {
    int count = 0;
    GPUMEM_CUDA_CALL(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device.ordinal()));
    return count;
}

// Runs fn with the lane's device current. Only a lane on the peer switches
// (a kernel launches on the current device only), so one-device plans queue
// their copies exactly as they always did.
template <typename Fn>
void on_lane_device(const Lane& lane, Fn&& fn) {
    if (!lane.on_peer) {
        fn();
        return;
    }
    AutoDevice guard(lane.stream_device);
    fn();
}

void enqueue_copy(const Lane& lane, std::uint64_t bytes, CopyEngine engine, cudaStream_t stream) {
    if (engine == CopyEngine::sm) {
        launch_sm_copy(lane.dst_view, lane.src_view, bytes, lane.sm_count, stream);
    } else if (lane.src_device != lane.dst_device) {
        GPUMEM_CUDA_TRY(cudaMemcpyPeerAsync(lane.dst, lane.dst_device.ordinal(), lane.src, lane.src_device.ordinal(), bytes, stream),
                        "cudaMemcpyPeerAsync");
    } else {
        GPUMEM_CUDA_TRY(cudaMemcpyAsync(lane.dst, lane.src, bytes, lane.kind, stream), "cudaMemcpyAsync");
    }
}

// The lanes of the plan's direction over freshly allocated buffers, ready to
// copy: kernel views of host memory for the SM engine, pageable pages touched.
std::vector<Lane> build_lanes(const CopyPlan& plan, CopyBuffers& buffers, std::uint64_t capacity) {
    std::vector<Lane> lanes;
    for (const CopyLaneSpec& spec : copy_lanes(plan.direction)) {
        Lane lane;
        lane.flow = spec.flow;
        lane.src = buffers.allocate(spec.source);
        lane.dst = buffers.allocate(spec.destination);
        lane.src_on_host = spec.source == BufferKind::host;
        lane.dst_on_host = spec.destination == BufferKind::host;
        lane.src_device = buffer_owner(plan, spec.source);
        lane.dst_device = buffer_owner(plan, spec.destination);
        lane.on_peer = spec.source == BufferKind::peer;
        lane.stream_device = lane.src_device;
        lane.kind = memcpy_kind(lane.src_on_host, lane.dst_on_host);
        lane.sm_count = sm_count_of(lane.stream_device);
        lane.stream = CudaStream(lane.stream_device);
        const bool kernel = plan.engine == CopyEngine::sm;
        lane.src_view = kernel && lane.src_on_host ? device_view_of_host(lane.src, lane.stream_device, plan.host_kind) : lane.src;
        lane.dst_view = kernel && lane.dst_on_host ? device_view_of_host(lane.dst, lane.stream_device, plan.host_kind) : lane.dst;
        // Touch pageable pages now: an untouched source reads the shared zero
        // page, and an untouched destination faults during the samples.
        if (!host_memory_is_pinned(plan.host_kind)) {
            if (lane.src_on_host) zero_host(lane.src, capacity);
            if (lane.dst_on_host) zero_host(lane.dst, capacity);
        }
        lanes.push_back(std::move(lane));
    }
    return lanes;
}

// Untimed copies (all lanes at once) before the samples. Returns the
// shortest host-measured time of one round, used to size the samples.
double warm_up(std::vector<Lane>& lanes, std::uint64_t bytes, CopyEngine engine, int rounds) {
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < rounds; ++i) {
        const double t0 = host_seconds();
        for (Lane& l : lanes) on_lane_device(l, [&] { enqueue_copy(l, bytes, engine, l.stream.get()); });
        for (Lane& l : lanes) l.stream.synchronize();
        best = std::min(best, host_seconds() - t0);
        throw_if_interrupted();
    }
    return best;
}

// Several lanes held by one spin kernel: the other streams wait on an event
// recorded behind it (across devices for p2p-bidir), so every lane starts the
// moment it is released, and each lane's time comes from its own events, on
// its own device.
std::vector<std::vector<double>> time_lanes_with_events(std::vector<Lane>& lanes, std::uint64_t bytes, CopyEngine engine,
                                                        int iterations, int samples) {
    const DeviceId device = lanes[0].stream_device;
    StreamBlocker blocker(device);
    CudaEvent gate(device, false);
    std::vector<CudaEvent> starts, stops;
    for (const Lane& lane : lanes) {
        starts.emplace_back(lane.stream_device);
        stops.emplace_back(lane.stream_device);
    }
    std::vector<std::vector<double>> seconds(lanes.size());
    for (int s = 0; s < samples; ++s) {
        blocker.block(lanes[0].stream.get());
        gate.record(lanes[0].stream.get());
        for (std::size_t l = 1; l < lanes.size(); ++l)
            GPUMEM_CUDA_CALL(cudaStreamWaitEvent(lanes[l].stream.get(), gate.get(), 0));
        for (std::size_t l = 0; l < lanes.size(); ++l) on_lane_device(lanes[l], [&] { starts[l].record(lanes[l].stream.get()); });
        for (std::size_t l = 0; l < lanes.size(); ++l)
            on_lane_device(lanes[l], [&] {
                for (int i = 0; i < iterations; ++i) enqueue_copy(lanes[l], bytes, engine, lanes[l].stream.get());
            });
        for (std::size_t l = 0; l < lanes.size(); ++l) on_lane_device(lanes[l], [&] { stops[l].record(lanes[l].stream.get()); });
        blocker.release();
        for (Lane& l : lanes) l.stream.synchronize();
        if (blocker.timed_out()) log::warn("the streams were released by timeout; this sample may include launch overhead");
        for (std::size_t l = 0; l < lanes.size(); ++l)
            seconds[l].push_back(stops[l].elapsed_ms_since(starts[l]) / 1000.0 / iterations);
        throw_if_interrupted();
    }
    return seconds;
}

// Several host-timed lanes at once: the driver stages these copies on the
// calling thread, so each lane gets its own thread, started together.
std::vector<std::vector<double>> time_lanes_on_threads(std::vector<Lane>& lanes, std::uint64_t bytes, CopyEngine engine,
                                                       int iterations, int samples) {
    std::vector<std::vector<double>> seconds(lanes.size());
    for (int s = 0; s < samples; ++s) {
        std::atomic<bool> go{false};
        std::vector<double> elapsed(lanes.size(), 0.0);
        std::exception_ptr failure;
        std::mutex failure_mutex;
        auto batch = [&](std::size_t l) {
            try {
                // A new thread starts on device 0; set, never restore (a restore
                // to device 0 would create a context there).
                GPUMEM_CUDA_CALL(cudaSetDevice(lanes[l].stream_device.ordinal()));
                while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
                const double t0 = host_seconds();
                for (int i = 0; i < iterations; ++i) enqueue_copy(lanes[l], bytes, engine, lanes[l].stream.get());
                lanes[l].stream.synchronize();
                elapsed[l] = host_seconds() - t0;
            } catch (...) {
                std::lock_guard<std::mutex> lock(failure_mutex);
                if (!failure) failure = std::current_exception();
            }
        };
        std::vector<std::thread> helpers;
        try {
            for (std::size_t l = 1; l < lanes.size(); ++l) helpers.emplace_back(batch, l);
        } catch (...) {
            go.store(true, std::memory_order_release);
            for (auto& t : helpers) t.join();
            throw;
        }
        go.store(true, std::memory_order_release);
        batch(0);
        for (auto& t : helpers) t.join();
        if (failure) std::rethrow_exception(failure);
        for (std::size_t l = 0; l < lanes.size(); ++l) seconds[l].push_back(elapsed[l] / iterations);
        throw_if_interrupted();
    }
    return seconds;
}

// Seconds per copy of each sample, for each lane, by the plan's timing.
std::vector<std::vector<double>> time_lanes(std::vector<Lane>& lanes, CopyTiming timing, std::uint64_t bytes,
                                            CopyEngine engine, int iterations, int samples) {
    if (timing == CopyTiming::events && lanes.size() == 1) {
        const Lane& lane = lanes[0];
        return {time_on_stream(lane.stream_device, lane.stream.get(), TimingPlan{0, iterations, samples},
                               [&](cudaStream_t s) { enqueue_copy(lane, bytes, engine, s); })};
    }
    if (timing == CopyTiming::events) return time_lanes_with_events(lanes, bytes, engine, iterations, samples);
    if (lanes.size() > 1) return time_lanes_on_threads(lanes, bytes, engine, iterations, samples);
    Lane& lane = lanes[0];
    // One host-timed operation is a batch of copies and one stream sync.
    std::vector<double> batches = time_on_host(TimingPlan{0, 1, samples}, [&] {
        for (int i = 0; i < iterations; ++i) enqueue_copy(lane, bytes, engine, lane.stream.get());
        lane.stream.synchronize();
    });
    for (double& b : batches) b /= iterations;
    return {std::move(batches)};
}

// --verify: the source holds the pattern; the destination starts zeroed, so
// a copy that never happened cannot pass.
void prepare_verification(std::vector<Lane>& lanes, std::uint64_t bytes, std::uint64_t seed) {
    for (Lane& lane : lanes) {
        if (lane.src_on_host)
            fill_host_pattern(lane.src, bytes, seed);
        else
            fill_device_pattern(lane.src_device, lane.src, bytes, seed);
        if (lane.dst_on_host)
            zero_host(lane.dst, bytes);
        else
            zero_device(lane.dst_device, lane.dst, bytes);
    }
}

// The test hook: flips one destination byte.
void plant_corruption(const Lane& lane, std::uint64_t at) {
    if (lane.dst_on_host) {
        static_cast<volatile unsigned char*>(lane.dst)[at] ^= 0xFF;
        flush_write_combining();
        return;
    }
    AutoDevice on_dst(lane.dst_device);
    CudaStream stream(lane.dst_device);
    unsigned char b = 0;
    read_device_bytes(&b, static_cast<unsigned char*>(lane.dst) + at, 1, stream.get());
    b ^= 0xFF;
    GPUMEM_CUDA_CALL(cudaMemcpyAsync(static_cast<unsigned char*>(lane.dst) + at, &b, 1, cudaMemcpyHostToDevice, stream.get()));
    stream.synchronize();
}

CopyVerification verify_lane(const CopyPlan& plan, const Lane& lane, std::uint64_t bytes, std::uint64_t seed) {
    if (plan.corrupt_offset && *plan.corrupt_offset < bytes) plant_corruption(lane, *plan.corrupt_offset);
    if (!lane.dst_on_host) return verify_device(lane.dst_device, lane.dst, bytes, seed);
    if (plan.host_kind != HostMemoryKind::write_combined) return verify_host(lane.dst, bytes, seed);
    // The CPU reads write-combined memory uncached; check a device copy instead.
    DeviceAllocation scratch(plan.device, copy_buffer_bytes(bytes));
    GPUMEM_CUDA_CALL(cudaMemcpyAsync(scratch.data(), lane.dst, bytes, cudaMemcpyHostToDevice, lane.stream.get()));
    lane.stream.synchronize();
    return verify_device(plan.device, scratch.data(), bytes, seed);
}

// What every row of one size shares.
struct SizeRun {
    std::uint64_t bytes = 0;
    int iterations = 0, warmup = 0;
    CopyTiming timing = CopyTiming::events;
    std::optional<bool> huge_pages;
};

CopyResult lane_result(const CopyPlan& plan, const Lane& lane, const SizeRun& run, std::vector<double> seconds) {
    CopyResult r = plan_row(plan, lane.flow, lane.src_device, lane.dst_device, run.bytes);
    r.host_huge_pages = run.huge_pages;
    r.timing = run.timing;
    r.iterations = run.iterations;
    r.warmup = run.warmup;
    r.seconds = std::move(seconds);
    return r;
}

void validate_copy_plan(const CopyPlan& plan) {
    if (plan.sizes.empty()) throw UsageError("no copy size given");
    if (std::find(plan.sizes.begin(), plan.sizes.end(), 0u) != plan.sizes.end()) throw UsageError("copy sizes must be above zero");
    validate_copy_combination(plan.direction, plan.host_kind, plan.engine);
    const bool peers = plan.direction.uses_peer();
    if (peers && (!plan.peer || *plan.peer == plan.device))
        throw UsageError("a peer copy needs a peer device other than the device itself");
    if (peers && plan.engine == CopyEngine::sm && !plan.peer_access)
        throw UsageError("--engine sm copies to a peer only with peer access");
    if (plan.timing.samples < 1 || plan.timing.warmup < 0 || (!plan.auto_iterations && plan.timing.iterations < 1))
        throw UsageError("samples and iterations must be at least 1");
}

std::optional<std::uint64_t> available_host_memory() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::uint64_t value = 0;
    std::string unit;
    while (meminfo >> key >> value) {
        std::getline(meminfo, unit);
        if (key == "MemAvailable:") return value * 1024;
    }
    return std::nullopt;
}

}  // namespace

bool peer_access_possible(DeviceId device, DeviceId peer) {
    int can = 0;
    GPUMEM_CUDA_CALL(cudaDeviceCanAccessPeer(&can, device.ordinal(), peer.ordinal()));
    return can != 0;
}

void check_copy_fits(const CopyPlan& plan) {
    if (plan.sizes.empty()) return;
    const std::uint64_t largest = *std::max_element(plan.sizes.begin(), plan.sizes.end());
    const CopyMemoryNeeds needs = copy_memory_needs(plan.direction, plan.host_kind, largest, plan.verify);
    const std::string what = "copy " + copy_direction_name(plan.direction) + " of " + format_bytes(largest);
    auto check_device = [&](DeviceId device, std::uint64_t need) {
        if (need == 0) return;
        AutoDevice guard(device);
        std::size_t free_bytes = 0, total_bytes = 0;
        GPUMEM_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
        if (need + kDeviceMemoryMargin > free_bytes)
            throw OutOfMemoryError(what + " needs " + format_bytes(need) + " of memory on device " + to_string(device) +
                                       ", but only " + format_bytes(free_bytes) + " is free",
                                   need);
    };
    check_device(plan.device, needs.device);
    if (plan.direction.uses_peer()) check_device(plan.peer.value(), needs.peer);
    if (needs.host) {
        const auto available = available_host_memory();
        if (available && needs.host > *available)
            throw OutOfMemoryError(what + " needs " + format_bytes(needs.host) + " of host memory, but only " +
                                       format_bytes(*available) + " is available",
                                   needs.host);
    }
}

std::vector<CopyResult> unmeasured_results(const CopyPlan& plan, const std::string& why) {
    std::vector<CopyResult> rows;
    for (std::uint64_t bytes : plan.sizes)
        for (const CopyLaneSpec& lane : copy_lanes(plan.direction)) {
            rows.push_back(plan_row(plan, lane.flow, buffer_owner(plan, lane.source), buffer_owner(plan, lane.destination), bytes));
            rows.back().skipped = why;
        }
    return rows;
}

void run_copy_plan(const CopyPlan& plan, const std::function<void(CopyResult)>& on_result) {
    validate_copy_plan(plan);
    const std::uint64_t capacity = copy_buffer_bytes(*std::max_element(plan.sizes.begin(), plan.sizes.end()));
    AutoDevice guard(plan.device);
    std::optional<PeerAccessScope> peer_scope;
    if (plan.direction.uses_peer() && plan.peer_access) peer_scope.emplace(plan.device, *plan.peer);
    CopyBuffers buffers(plan, capacity);
    std::vector<Lane> lanes = build_lanes(plan, buffers, capacity);

    SizeRun run;
    run.timing = copy_timing_for(plan.direction, plan.host_kind, plan.engine, plan.peer_access);
    run.huge_pages = buffers.huge_pages();
    const int lane_count = static_cast<int>(lanes.size());
    const int max_iterations =
        run.timing == CopyTiming::events ? std::max(1, kMaxQueuedOperations / lane_count) : kMaxHostTimedIterations;
    // Sizing the samples needs at least one timed round.
    run.warmup = plan.auto_iterations ? std::max(1, plan.timing.warmup) : plan.timing.warmup;

    for (const std::uint64_t bytes : plan.sizes) {
        throw_if_interrupted();
        run.bytes = bytes;
        const std::uint64_t seed = plan.seed ^ (bytes * 0x9E3779B97F4A7C15ULL);
        if (plan.verify) prepare_verification(lanes, bytes, seed);
        const double round_seconds = warm_up(lanes, bytes, plan.engine, run.warmup);
        run.iterations = plan.auto_iterations ? iterations_for_budget(round_seconds, plan.sample_seconds, max_iterations)
                                              : std::min(plan.timing.iterations, max_iterations);
        if (!plan.auto_iterations && plan.timing.iterations > max_iterations)
            log::warn("{} copies per sample is more than can be queued at once; using {}", plan.timing.iterations, max_iterations);
        std::vector<std::vector<double>> seconds =
            time_lanes(lanes, run.timing, bytes, plan.engine, run.iterations, plan.timing.samples);
        for (std::size_t l = 0; l < lanes.size(); ++l) {
            CopyResult r = lane_result(plan, lanes[l], run, std::move(seconds[l]));
            if (plan.verify) r.verification = verify_lane(plan, lanes[l], bytes, seed);
            on_result(std::move(r));
        }
    }
}

}  // namespace gpumem
