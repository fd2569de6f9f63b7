// gpumem info's checked request, its results, and the pure parts that do
// not need a device: choosing devices for --pick, and the report of one
// sample (or of a pick). info.cpp checks and runs; the CPU tests call these
// with synthetic snapshots.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/device_id.hpp"
#include "base/device_spec.hpp"
#include "base/sizes.hpp"
#include "core/device_inventory.hpp"
#include "info/info_fields.hpp"
#include "cli/output.hpp"

namespace gpumem::cli {

struct InfoRequest {
    DeviceSpec devices;           // -d, default all
    InfoFieldList fields;         // the devices table's columns, in order
    SnapshotFields snapshot;      // the NVML queries each sample makes
    bool processes = false;       // --processes
    std::optional<std::uint64_t> pick;   // --pick N
    std::optional<SizeSpec> min_free;    // --min-free, with --pick
    std::optional<double> loop_seconds;  // --loop
    std::optional<std::uint64_t> count;  // --count, with --loop
};

// One device --pick chose.
struct PickedDevice {
    DeviceId index;
    std::string visible_devices_id;  // what CUDA_VISIBLE_DEVICES takes
    std::uint64_t free = 0;
};

struct InfoResults {
    std::optional<InventorySnapshot> snapshot;        // a sample (not with --pick)
    std::optional<double> timestamp;                  // --loop: seconds since the epoch of the sample
    std::optional<std::vector<PickedDevice>> picked;  // --pick, most free first
};

// Up to `n` devices of `snapshot` with at least `min_free` free, most free
// first (ties keep the order selected).
std::vector<PickedDevice> pick_devices(const InventorySnapshot& snapshot, const std::optional<SizeSpec>& min_free, std::size_t n);
// "0,2": the picked ids for CUDA_VISIBLE_DEVICES.
std::string pick_line(const std::vector<PickedDevice>& picked);

Report info_report(const InfoRequest& request, const InfoResults& results, const OutputOptions& output);

}  // namespace gpumem::cli
