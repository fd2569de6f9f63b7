// Synthetic `gpumem info` samples for the CPU suites (test_info.cpp and
// test_info_prometheus.cpp): devices as NVML reports them, with every
// optional figure or none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "core/device_inventory.hpp"
#include "info/info_fields.hpp"
#include "info/info_report.hpp"

namespace info_samples {

using namespace gpumem;
using namespace gpumem::cli;

constexpr std::uint64_t GiB = 1ULL << 30;

inline DeviceReport device(int cuda, unsigned nvml, std::uint64_t free, bool v2 = true) {
    DeviceReport d;
    d.id.cuda_index = DeviceId(cuda);
    d.id.nvml_index = nvml;
    d.id.uuid = "GPU-0000000" + std::to_string(nvml) + "-aaaa-bbbb-cccc-dddddddddddd";
    d.id.pci = PciAddress{0, 0x18 + nvml, 0, 0};
    d.id.name = "NVIDIA H200";
    d.base_index = nvml;
    d.memory.total = 140 * GiB;
    d.memory.free = free;
    d.memory.has_reserved = v2;
    d.memory.reserved = v2 ? GiB / 2 : 0;
    d.memory.used = d.memory.total - free - d.memory.reserved;
    return d;
}

// Every health figure an H100 gives, with some errors and one clock event reason.
inline NvmlHealth full_health() {
    NvmlHealth h;
    h.ecc_enabled = true;
    h.ecc_pending = true;
    h.ecc_corrected_volatile = 3;
    h.ecc_uncorrected_volatile = 0;
    h.ecc_corrected_aggregate = 12;
    h.ecc_uncorrected_aggregate = 1;
    h.remapped_rows_correctable = 2;
    h.remapped_rows_uncorrectable = 1;
    h.remapped_rows_pending = false;
    h.remapped_rows_failure = false;
    h.retired_pages_sbe = 0;
    h.retired_pages_dbe = 0;
    h.retired_pages_pending = false;
    h.memory_clock_mhz = 2619;
    h.memory_clock_max_mhz = 2619;
    h.clock_event_reasons = 0x4;  // sw_power_cap
    return h;
}

// Two devices from NVML, every optional figure read for the first only.
inline InventorySnapshot snapshot(bool v2 = true) {
    InventorySnapshot s;
    s.source = "nvml";
    s.driver_version = "580.159.04";
    s.cuda_driver_version = 13000;
    s.devices.push_back(device(0, 1, 100 * GiB, v2));
    s.devices.push_back(device(1, 0, 120 * GiB, v2));
    DeviceReport& d = s.devices[0];
    d.bar1 = NvmlBar1{256ULL << 20, 2ULL << 20, 254ULL << 20};
    d.compute_capability = std::make_pair(9, 0);
    d.pcie = NvmlPcieLink{5, 16, 5, 16};
    d.peak_memory_bandwidth = 4.8e12;
    d.processes.push_back({4242, "python3", 10 * GiB});
    d.processes.push_back({4343, "other-container", std::nullopt});
    d.health = full_health();
    return s;
}

inline InfoRequest request(const InfoFieldList& fields, bool processes = false) {
    InfoRequest q;
    q.fields = fields;
    q.processes = processes;
    return q;
}

}  // namespace info_samples
