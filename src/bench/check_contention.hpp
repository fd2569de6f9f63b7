// gpumem check beside other processes (issue 26 §4): a healthy GPU must not
// fail because another process holds its memory or shares its engines.
// - The per-GPU lock (core/device_lock) before any device work: two gpumem
//   processes never measure one GPU at once; a lock not obtained within
//   --lock-timeout makes the device work unknown, naming the holder.
// - An allocation that fails while NVML shows another process holding
//   memory is unknown, naming the holder and what was free; on a GPU whose
//   memory is free it still fails.
// - A rate measured while NVML shows another compute process is unknown,
//   naming it, unless --judge-shared.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/check_plan.hpp"
#include "base/check_readings.hpp"
#include "base/device_spec.hpp"
#include "core/device_lock.hpp"
#include "core/nvml.hpp"

namespace gpumem {

// The processes that are not this one.
std::vector<NvmlProcess> others_of(const std::vector<NvmlProcess>& processes);

// What NVML shows on a device now.
struct DeviceContention {
    bool known = false;               // NVML listed the processes
    std::vector<NvmlProcess> others;  // compute processes other than this one
    std::optional<NvmlMemory> memory;
    std::string where = "the GPU";  // where the others run, as reasons name it ("GPU 1" for a p2p pair's peer)
};
// Live, through NVML (no CUDA call); `known` false when NVML cannot tell.
DeviceContention read_contention(const DeviceIdentity& device);

// Pure: a device step's outcome reviewed against what NVML showed right
// after it. A failed allocation beside another process's memory, or a rate
// (GB/s) beside another compute process (unless `judge_shared`), becomes
// unknown with the measured value kept and the holder named.
CheckOutcome review_contention(CheckOutcome outcome, bool allocation_failed, const DeviceContention& contention, bool judge_shared);

// Takes the lock of every device of `figures` (check's standard and long
// levels) through `lock`, the command's locker: a device whose lock was not
// obtained gets `why_unlocked`. When the wait was not instant, the NVML figures are
// read again (`read_again`, the engine's reading): the ones read before
// described the GPU while the other process worked on it.
using FiguresReader = std::function<std::vector<CheckDeviceFigures>()>;
void lock_check_devices(std::vector<CheckDeviceFigures>& figures, const DeviceLocker& lock, const FiguresReader& read_again);

}  // namespace gpumem
