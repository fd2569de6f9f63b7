#include "core/timing.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "core/log.hpp"

#include "core/cuda_check.hpp"
#include "base/interrupt.hpp"
#include "core/kernels.hpp"

namespace gpumem {
namespace {

// Long enough for any queue of operations to be enqueued; short enough that a
// stuck host does not hold the GPU for long.
constexpr std::uint64_t kSpinTimeoutNs = 10ULL * 1000 * 1000 * 1000;

volatile int* flag_word(const HostAllocation& a, int i) { return static_cast<volatile int*>(a.data()) + i; }

}  // namespace

double host_seconds() noexcept {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

StreamBlocker::StreamBlocker(DeviceId device) : flag_(HostMemoryKind::mapped, 64, device) {
    *flag_word(flag_, 0) = 1;
    *flag_word(flag_, 1) = 0;
}

StreamBlocker::~StreamBlocker() noexcept { release(); }

void StreamBlocker::block(cudaStream_t stream) {
    *flag_word(flag_, 0) = 0;
    *flag_word(flag_, 1) = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    auto* device_flags = static_cast<int*>(flag_.device_pointer());
    launch_spin(device_flags, device_flags + 1, kSpinTimeoutNs, stream);
}

void StreamBlocker::release() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (flag_) *flag_word(flag_, 0) = 1;
}

bool StreamBlocker::timed_out() const noexcept { return *flag_word(flag_, 1) != 0; }

std::vector<double> time_on_stream(DeviceId device, cudaStream_t stream, const TimingPlan& plan,
                                   const std::function<void(cudaStream_t)>& op) {
    AutoDevice guard(device);
    const int iterations = std::max(1, std::min(plan.iterations, kMaxQueuedOperations));
    for (int i = 0; i < plan.warmup; ++i) op(stream);
    GPUMEM_CUDA_CALL(cudaStreamSynchronize(stream));
    throw_if_interrupted();

    StreamBlocker blocker(device);
    CudaEvent start(device), stop(device);
    std::vector<double> per_op_seconds;
    for (int s = 0; s < plan.samples; ++s) {
        blocker.block(stream);
        start.record(stream);
        for (int i = 0; i < iterations; ++i) op(stream);
        stop.record(stream);
        blocker.release();
        GPUMEM_CUDA_CALL(cudaStreamSynchronize(stream));
        if (blocker.timed_out()) log::warn("the stream was released by timeout; this sample may include launch overhead");
        per_op_seconds.push_back(stop.elapsed_ms_since(start) / 1000.0 / iterations);
        throw_if_interrupted();
    }
    return per_op_seconds;
}

std::vector<double> time_on_host(const TimingPlan& plan, const std::function<void()>& op) {
    const int iterations = std::max(1, plan.iterations);
    for (int i = 0; i < plan.warmup; ++i) op();
    throw_if_interrupted();
    std::vector<double> per_op_seconds;
    for (int s = 0; s < plan.samples; ++s) {
        const double t0 = host_seconds();
        for (int i = 0; i < iterations; ++i) op();
        per_op_seconds.push_back((host_seconds() - t0) / iterations);
        throw_if_interrupted();
    }
    return per_op_seconds;
}

}  // namespace gpumem
