// Copy bandwidth measurement: the engine behind `gpumem copy`. Copies are
// timed as nvbandwidth does (events around copies queued behind a spin
// kernel, after warm-up), except where the driver performs them synchronously
// (pageable host memory, host to host, peer copies without peer access): those
// are timed with the host clock around the same loop. No printing here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/copy_plan.hpp"
#include "base/memory_policy.hpp"
#include "core/timing.hpp"

namespace gpumem {

// The default seed of the verification pattern.
inline constexpr std::uint64_t kCopyPatternSeed = 0x636f70792d676d75ULL;

struct CopyPlan {
    CopyDirection direction;  // a row of kCopyDirections
    DeviceId device{0};
    std::optional<DeviceId> peer;  // peer directions: the other device
    bool peer_access = true;       // peer directions: enable peer access (both ways) for the run, disable it after
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

// Rows for a plan that cannot run (a row per size and lane, as measured rows
// would be), saying why, so the report shows the gap.
std::vector<CopyResult> unmeasured_results(const CopyPlan& plan, const std::string& why);

// Allocates, times every size in turn, verifies when asked, frees. Gives
// `on_result` one result per size and lane (bidirectional directions: the
// forward copy, then the reverse one) as soon as it is measured, so that a
// failure later on leaves the earlier results with the caller. Verification
// failures are reported in the results; the caller decides the exit status.
// Polls for Ctrl-C.
void run_copy_plan(const CopyPlan& plan, const std::function<void(CopyResult)>& on_result);

}  // namespace gpumem
