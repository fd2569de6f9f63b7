// --lock-timeout and the wait for the per-GPU lock (core/device_lock), shared
// by check and the measuring commands (memset, copy, the timed alloc-test
// modes; not alloc-test hold, which stands in for another process).
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
    double timeout_;
    std::unique_ptr<Progress> progress_;
};

// The measuring commands' lock: every device of `devices`, or an error
// (exit 1) naming the holder after `timeout` seconds.
void lock_for_measuring(const std::vector<DeviceIdentity>& devices, double timeout, const Session& session);

}  // namespace gpumem::cli
