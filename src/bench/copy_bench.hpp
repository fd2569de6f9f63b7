// Copy bandwidth measurement: the engine behind `gpumem copy`. Copies are
// timed as nvbandwidth does (events around copies queued behind a spin
// kernel, after warm-up), except where the driver performs them synchronously
// (pageable host memory, host to host, peer copies without peer access): those
// are timed with the host clock around the same loop. No printing here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "base/copy_plan.hpp"
#include "base/memory_policy.hpp"
#include "core/timing.hpp"

namespace gpumem {

// The default seed of the verification pattern.
inline constexpr std::uint64_t kCopyPatternSeed = 0x636f70792d676d75ULL;

struct CopyPlan {
    CopyDirection direction = CopyDirection::h2d;
    DeviceId device{0};
    std::optional<DeviceId> peer;  // p2p: destination device
    bool peer_access = true;       // p2p: enable peer access (both ways) for the run, disable it after
    HostMemoryKind host_kind = HostMemoryKind::pinned;
    CopyEngine engine = CopyEngine::ce;
    std::vector<std::uint64_t> sizes;  // bytes; buffers are sized for the largest and reused
    TimingPlan timing;                 // warmup and samples; iterations only when !auto_iterations
    bool auto_iterations = true;       // copies per sample chosen to fill sample_seconds
    double sample_seconds = 0.02;
    bool verify = false;  // fill the source with a pattern and check every destination byte
    // Test hook: flip the destination byte at this offset after timing and
    // before verification, to prove verification catches it.
    std::optional<std::uint64_t> corrupt_offset;
    std::uint64_t seed = kCopyPatternSeed;
};

// Whether `device` can map `peer`'s memory (cudaDeviceCanAccessPeer).
bool peer_access_possible(DeviceId device, DeviceId peer);

// Throws OutOfMemoryError (exit 5) when the plan's largest size does not fit
// in free device memory (cudaMemGetInfo, on the device and the peer) or in
// available host memory (/proc/meminfo), before anything is allocated.
void check_copy_fits(const CopyPlan& plan);

// Allocates, times every size in turn, verifies when asked, frees. Returns
// one result per size, two for bidir (h2d then d2h), in order; `on_result`
// sees each as soon as it is measured. Verification failures are reported in
// the results; the caller decides the exit status. Polls for Ctrl-C.
std::vector<CopyResult> run_copy_plan(const CopyPlan& plan,
                                      const std::function<void(const CopyResult&)>& on_result = {});

}  // namespace gpumem
