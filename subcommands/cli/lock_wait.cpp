#include "cli/lock_wait.hpp"

#include <memory>

#include "cli/options.hpp"
#include "cli/progress.hpp"

namespace gpumem::cli {

CLI::Option* add_lock_timeout_option(CLI::App& app, double& seconds) {
    // A duration as every other (5s, 2m, 0: no wait), at most a day.
    return add_value_option(app, "--lock-timeout", seconds,
                            "How long to wait for another gpumem measuring the same GPU (a per-GPU lock, default 60s); then its "
                            "work is unknown (check) or an error (exit 1)",
                            ValueKind::seconds, 0, 86400);
}

LockWaitProgress::LockWaitProgress(const Session& session, double timeout) : enabled_(session.progress()), columns_(session.output().screen.stderr_columns), timeout_(timeout) {}

LockWaitFn LockWaitProgress::callback() {
    return [this](double waited, const std::string& holder) {
        if (!enabled_) return;
        // Tenths of a second: the line counts up to the timeout.
        if (!progress_) progress_ = std::make_unique<Progress>(true, "waiting for the GPU lock", static_cast<std::uint64_t>(timeout_ * 10) + 1, columns_);
        progress_->update(static_cast<std::uint64_t>(waited * 10), "held by " + holder);
    };
}

GpuLocker::GpuLocker(const Session& session, double timeout) : timeout_(timeout), progress_(session, timeout) {}

std::vector<DeviceLockResult> GpuLocker::lock(const std::vector<DeviceIdentity>& devices) {
    return lock_devices(devices, timeout_, progress_.callback());
}

DeviceLocker GpuLocker::locker() {
    return [this](const std::vector<DeviceIdentity>& devices) { return lock(devices); };
}

void lock_for_measuring(const std::vector<DeviceIdentity>& devices, double timeout, const Session& session) {
    GpuLocker gpus(session, timeout);
    const std::vector<DeviceLockResult> locks = gpus.lock(devices);
    for (std::size_t i = 0; i < devices.size(); ++i)
        if (!locks[i].acquired) throw Error(lock_refusal(devices[i], locks[i]));
}

}  // namespace gpumem::cli
