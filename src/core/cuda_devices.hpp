// Device enumeration through the CUDA runtime (static cudart). Enumeration
// initialises the driver (cuInit, ~180 ms) but creates no context.
#pragma once

#include <string>
#include <vector>

#include "base/device_spec.hpp"

namespace gpumem {

// Whether libcuda.so.1 (the driver's user-space library) can be loaded.
bool driver_library_present() noexcept;

// Devices CUDA sees in this environment, in CUDA order (cuda_index set).
// Throws NoDeviceError when there is no driver or no device.
std::vector<DeviceIdentity> cuda_visible_devices();

// The devices a -d SPEC names among cuda_visible_devices(), in the order
// given: UsageError for a device that does not exist, NoDeviceError without
// a driver or device.
std::vector<DeviceIdentity> select_cuda_devices(const DeviceSpec& spec);

// Like cuda_visible_devices(), but ignoring CUDA_VISIBLE_DEVICES: CUDA's base
// order. Must run before any other CUDA call in the process.
std::vector<DeviceIdentity> cuda_base_order_devices();

// CUDA runtime version gpumem was built with, e.g. "13.0".
std::string cuda_runtime_version_string();
// Driver's CUDA version via the runtime, or 0 without a driver.
int cuda_driver_version_via_runtime() noexcept;
std::string format_cuda_version(int version);  // 13000 -> "13.0"

}  // namespace gpumem
