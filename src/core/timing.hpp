// Timing shared by memset, copy and alloc-test. Device work is timed with
// CUDA events around `iterations` operations queued behind a spin kernel that
// holds the stream, so that launch overhead is not timed (nvbandwidth's
// method); after `warmup` untimed operations; repeated for `samples`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "core/cuda_raii.hpp"

namespace gpumem {

struct TimingPlan {
    int warmup = 2;      // untimed operations before the first sample
    int iterations = 8;  // operations per sample
    int samples = 5;     // timed samples
};

// Most operations queued behind one spin kernel. A stream's launch queue has
// about a thousand slots; the host blocks when it is full, and then the spin
// kernel would wait for a host that waits for it.
inline constexpr int kMaxQueuedOperations = 512;

// Holds a stream until released. The flag lives in mapped pinned memory the
// kernel polls.
class StreamBlocker {
public:
    explicit StreamBlocker(DeviceId device);
    ~StreamBlocker() noexcept;  // releases a still-blocked stream
    StreamBlocker(const StreamBlocker&) = delete;
    StreamBlocker& operator=(const StreamBlocker&) = delete;

    void block(cudaStream_t stream);
    void release() noexcept;
    // Whether the last block ended by timeout rather than release (then the
    // measurement may include launch overhead).
    bool timed_out() const noexcept;

private:
    HostAllocation flag_;  // two ints: [0] release flag, [1] timed-out flag
};

// Seconds per operation for each sample. `op` enqueues one operation on the
// stream it is given. Checks for Ctrl-C between samples.
std::vector<double> time_on_stream(DeviceId device, cudaStream_t stream, const TimingPlan& plan,
                                   const std::function<void(cudaStream_t)>& op);

// Seconds per operation for each sample, host clock (synchronous work such
// as pageable copies and host memsets). `op` must return only once done.
std::vector<double> time_on_host(const TimingPlan& plan, const std::function<void()>& op);

// Monotonic host clock in seconds.
double host_seconds() noexcept;

}  // namespace gpumem
