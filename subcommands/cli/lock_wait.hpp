// --lock-timeout and the wait for the per-GPU lock (core/device_lock): the one
// place every command takes it, check and the measuring commands (memset,
// copy, the timed alloc-test modes; not alloc-test hold, which stands in for
// another process) alike, through GpuLocker.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "core/device_lock.hpp"

namespace gpumem::cli {

// --lock-timeout SECONDS (default 60): how long to wait for another gpumem
// process measuring the same GPU.
CLI::Option* add_lock_timeout_option(CLI::App& app, double& seconds);

// Draws "waiting for the GPU lock: pid 123: gpumem check" on a terminal
// while `wait` runs (lock_device's on_wait), erased when done.
class LockWaitProgress {
public:
    LockWaitProgress(const Session& session, double timeout);
    LockWaitFn callback();

private:
    bool enabled_;
    std::size_t columns_;  // stderr's width
    double timeout_;
    std::unique_ptr<Progress> progress_;
};

// How every command takes the per-GPU locks: lock_devices waiting up to
// --lock-timeout's `timeout` seconds, with the waiting line on a terminal.
// check hands it to its engine as the run's DeviceLocker (the engine decides
// when: after NVML's figures, before the device work); the measuring
// commands call lock_for_measuring.
class GpuLocker {
public:
    GpuLocker(const Session& session, double timeout);
    GpuLocker(const GpuLocker&) = delete;  // locker() holds this one's address
    GpuLocker& operator=(const GpuLocker&) = delete;
    std::vector<DeviceLockResult> lock(const std::vector<DeviceIdentity>& devices);
    // lock() as a DeviceLocker; this GpuLocker must outlive it.
    DeviceLocker locker();

private:
    double timeout_;
    LockWaitProgress progress_;
};

// The measuring commands' lock: every device of `devices` through a
// GpuLocker, or an error (exit 1) naming the holder after `timeout` seconds.
void lock_for_measuring(const std::vector<DeviceIdentity>& devices, double timeout, const Session& session);

}  // namespace gpumem::cli
