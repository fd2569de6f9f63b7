// The per-GPU lock between gpumem processes: two processes measuring one GPU
// at once judge each other's traffic as the GPU's (issue 26: two checks at
// once failed a healthy GPU). An flock(2) on a file named after the GPU's
// UUID (or PCI id: never the CUDA index, which CUDA_VISIBLE_DEVICES
// renumbers), so the kernel drops it when its holder dies, however it dies.
// The holder writes its pid and command into the file for the waiters'
// messages. Once taken, a lock is held until the process ends: the next
// holder then finds the GPU without this process's context.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/device_spec.hpp"

namespace gpumem {

// The default of --lock-timeout, seconds.
inline constexpr double kDefaultLockTimeout = 60;

// The directory of the lock files: $GPUMEM_LOCK_DIR when set (tests and
// sites with their own place), else /run/gpumem when it exists (the
// package's tmpfiles.d makes it at boot), else /run/lock/gpumem where
// /run/lock is sticky and writable by all, else
// /tmp/gpumem, the last two made sticky and writable by all. It depends on
// nothing per user, so every user's gpumem and root's meet in one directory.
std::string device_lock_directory();

// The lock file of a GPU: by its UUID, else its PCI address.
std::string device_lock_path(const DeviceIdentity& device);

struct DeviceLockResult {
    bool acquired = false;
    double waited = 0;   // seconds spent waiting; 0 when the lock was free at the first try
    std::string holder;  // who held it, when it was waited for or not obtained ("pid 123: gpumem check -d 0")
    std::string path;    // the lock file
};

// Called about ten times a second while waiting: seconds waited, the holder.
using LockWaitFn = std::function<void(double waited, const std::string& holder)>;

// Takes the lock of `device` for the rest of the process, waiting up to
// `timeout` seconds (0: one try). A lock this process holds already is
// granted at once. Ctrl-C while waiting throws InterruptedError. A lock
// file that cannot be opened at all (no writable directory) is granted
// with `holder` saying why: a lock is a courtesy between gpumem
// processes, and its absence must not stop a check.
DeviceLockResult lock_device(const DeviceIdentity& device, double timeout, const LockWaitFn& on_wait);

// The lock of every device in `devices`, in the order of their lock files
// (two processes locking the same GPUs never wait on each other in a circle),
// each waited for up to what is left of `timeout`. Results in `devices`' order.
std::vector<DeviceLockResult> lock_devices(const std::vector<DeviceIdentity>& devices, double timeout, const LockWaitFn& on_wait);

// How a command takes the locks of the GPUs it is about to measure: each
// device's result, in `devices`' order. Every command's comes from the same
// place, cli/lock_wait's GpuLocker (lock_devices with --lock-timeout, and
// the waiting line on a terminal); what a lock not obtained means is the
// caller's (an error for memset, copy and alloc-test; unknown device work
// for check).
using DeviceLocker = std::function<std::vector<DeviceLockResult>(const std::vector<DeviceIdentity>& devices)>;

// The pid a holder text names ("pid 123: gpumem check" -> 123); 0 when none.
unsigned holder_pid(const std::string& holder) noexcept;

// The message of a lock not obtained: "GPU-... is locked by pid 123: gpumem
// check -d 0 (waited 60 s, --lock-timeout)".
std::string lock_refusal(const DeviceIdentity& device, const DeviceLockResult& result);

}  // namespace gpumem
