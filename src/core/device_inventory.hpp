// The GPUs of this machine as `gpumem info` reports them: NVML for the
// figures (no CUDA context), CUDA's numbering derived from NVML plus
// CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER, and the CUDA runtime only where
// that numbering cannot be decided, or when NVML is missing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/device_spec.hpp"
#include "core/nvml.hpp"

namespace gpumem {

struct DeviceReport {
    DeviceIdentity id;  // cuda_index and nvml_index
    // CUDA's index with CUDA_VISIBLE_DEVICES unset: the value to put in it.
    // Not a DeviceId: this process numbers its devices after the variable.
    // Empty when unknown (NVML unavailable).
    std::optional<unsigned> base_index;
    NvmlMemory memory;
    std::optional<NvmlBar1> bar1;
    std::optional<std::pair<int, int>> compute_capability;
    std::optional<NvmlPcieLink> pcie;
    std::optional<double> peak_memory_bandwidth;  // bytes/s
    std::vector<NvmlProcess> processes;
    std::optional<NvmlHealth> health;  // when asked for (SnapshotFields::health) and NVML answers
};

struct InventorySnapshot {
    std::string source;  // "nvml" or "cuda-runtime"
    std::string driver_version;
    int cuda_driver_version = 0;
    std::vector<DeviceReport> devices;
};

// NVML figures for a device found through the CUDA runtime, matched by PCI
// address. Empty when NVML is unavailable: callers treat these as extras.
struct NvmlDeviceFigures {
    std::optional<double> peak_memory_bandwidth;  // bytes/s
    std::optional<NvmlPcieLink> pcie;
    std::vector<int> cpu_affinity;
    std::string name;
};
NvmlDeviceFigures nvml_figures_for(const PciAddress& pci);

// Which figures a snapshot reads besides identity and memory, which it
// always reads. Each NVML query costs time, and a one-liner asking for
// `used` should pay for nothing else: every figure is off until asked for.
struct SnapshotFields {
    bool versions = false;  // driver and CUDA driver versions
    bool bar1 = false;
    bool compute_capability = false;
    bool pcie = false;
    bool peak_bandwidth = false;
    bool processes = false;
    bool health = false;  // ECC, remapped rows, retired pages, memory clock, clock event reasons
};

class DeviceInventory {
public:
    // Loads NVML, or falls back to the CUDA runtime with a warning. Throws
    // NoDeviceError naming what is missing when neither works.
    static DeviceInventory open();

    DeviceInventory(DeviceInventory&&) noexcept;
    DeviceInventory& operator=(DeviceInventory&&) noexcept;
    ~DeviceInventory();

    // Visible devices in CUDA order (NVML's devices mapped through
    // CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER).
    const std::vector<DeviceIdentity>& visible() const noexcept { return visible_; }
    // Positions in visible() that a -d SPEC names, in the order given; the
    // one place `gpumem info` resolves -d. UsageError for devices that do not
    // exist, NoDeviceError when none is visible (see resolve_device_spec).
    std::vector<std::size_t> resolve(const DeviceSpec& spec) const { return resolve_device_spec(spec, visible_); }
    const std::string& source() const noexcept { return source_; }
    // NVML devices that answered NVML_ERROR_GPU_IS_LOST (fallen off the bus),
    // left out of visible(): one line each.
    const std::vector<std::string>& lost() const noexcept { return lost_; }
    // Fresh figures for the given positions in visible().
    InventorySnapshot snapshot(const std::vector<std::size_t>& positions, const SnapshotFields& fields) const;
    // NVML, when it was loaded (for PCIe and bandwidth figures).
    const Nvml* nvml() const noexcept { return nvml_.get(); }
    // The process exits after this inventory: skip nvmlShutdown (see Nvml).
    void skip_nvml_shutdown() noexcept {
        if (nvml_) nvml_->skip_shutdown();
    }

private:
    DeviceInventory() = default;
    std::unique_ptr<Nvml> nvml_;
    std::string source_;
    std::vector<std::string> lost_;
    std::vector<DeviceIdentity> visible_;  // cuda_index = position; nvml_index when known
    std::vector<std::optional<unsigned>> base_index_;  // parallel to visible_
};

}  // namespace gpumem
