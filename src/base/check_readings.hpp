// What gpumem check reads before any device work, as plain figures: each
// device's NVML figures, the node's GPUs, the kernel log's Xid events; and
// the judges of node.gpus and xid.events over them. The judges of every
// quick-level check are pure functions of these (base/check_table.hpp, each
// in its check's row); src/bench reads the figures (read_check_figures).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/check_plan.hpp"
#include "base/device_spec.hpp"
#include "base/nvml_figures.hpp"
#include "base/xid.hpp"

namespace gpumem {

// What NVML said about one device before any work: the figures its NVML
// checks judge and its default thresholds derive from.
struct CheckDeviceFigures {
    DeviceIdentity device;            // cuda_index set
    std::string why_no_nvml;          // empty when NVML answered
    std::optional<NvmlHealth> health;
    std::optional<NvmlPcieLink> pcie;
    std::optional<double> peak_bps;   // NVML's peak memory bandwidth
    // Other processes holding memory on the device ("pid 12 python (1 GiB)");
    // empty with processes_known false when NVML could not list them
    // (processes_error then says why).
    std::vector<std::string> other_processes;
    std::vector<NvmlProcess> others;  // the same, as NVML gave them
    bool processes_known = false;
    // NVLink (nvlink.* and p2p's reference); empty when NVML is missing.
    std::optional<NvmlNvLink> nvlink;
    std::string why_no_nvlink;        // why nvlink is empty (the GPU was lost meanwhile)
    std::string processes_error;
    // Memory as NVML saw it before gpumem made a context on the device (at
    // standard level the figures are read before any context); empty with
    // memory_error set when NVML could not tell.
    std::optional<NvmlMemory> memory;
    std::string memory_error;
    std::vector<int> cpu_affinity;    // CPUs next to the GPU
    double seconds = 0;               // reading all of this
    // Set when another process held the GPU's lock past --lock-timeout: the
    // device work is unknown, for this reason (check_contention.hpp).
    std::string why_unlocked;
    // How long the lock was waited for and who held it, for cuda.context's
    // reason; empty when it was free.
    std::string lock_note;
};

// What the node has, for node.gpus: every GPU visible here (whatever -d
// selects), and the GPUs NVML reports lost.
struct CheckNodeFigures {
    std::size_t visible = 0;
    std::vector<std::string> lost;
    bool nvml = false;  // whether NVML answered (without it, lost GPUs cannot be seen)
};

// The Xid events of the kernel log, read once for every GPU's xid.events.
struct XidReading {
    XidScan scan;
    XidWindow window;
    std::vector<PciAddress> checked;  // every GPU of the run
    double seconds = 0;               // reading and scanning the log
};

// What a check judged before any device work sees: its device's NVML
// figures, the node's, the kernel log's Xid events, the thresholds.
struct CheckReadings {
    const CheckDeviceFigures& device;
    const CheckNodeFigures& node;
    const XidReading& xid;
    const ThresholdOverrides& thresholds;
};

// Pure: node.gpus: the visible GPUs against --expect-gpus (node.gpus's
// threshold); any lost GPU fails, with a reboot.
CheckOutcome node_gpus_check(const CheckNodeFigures& node, const ThresholdOverrides& overrides);
// Pure: the xid.events check of the GPU at `gpu`: the count of its events,
// the worst's verdict and remediation, and each event (worst first) with its
// code, time and meaning in the reason. Events of devices that are none of
// `checked` are named in the reason, not counted; so are the lines not
// understood.
CheckOutcome xid_check(const XidScan& scan, const XidWindow& window, const PciAddress& gpu, const std::vector<PciAddress>& checked);
}  // namespace gpumem
