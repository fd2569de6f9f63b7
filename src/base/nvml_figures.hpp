// What NVML says about a GPU, as plain figures: memory, PCIe, processes,
// health, NVLink, and the clock event reasons classified. No NVML here (core/
// nvml reads them): gpumem check's judges (base/check_table.hpp) are pure
// functions of these figures, tested on the CPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/device_spec.hpp"

namespace gpumem {

struct NvmlMemory {
    std::uint64_t total = 0, reserved = 0, used = 0, free = 0;
    bool has_reserved = false;  // memory info v2 answered; `used` excludes driver-reserved memory
};

struct NvmlBar1 {
    std::uint64_t total = 0, used = 0, free = 0;
};

struct NvmlPcieLink {
    unsigned current_generation = 0, current_width = 0, max_generation = 0, max_width = 0;
};

struct NvmlProcess {
    unsigned pid = 0;
    std::string name;
    std::optional<std::uint64_t> used_memory;  // absent when NVML cannot tell (e.g. other containers)
};

// Memory health as NVML reports it. Each figure is empty when the GPU or the
// driver does not support it (NVML_ERROR_NOT_SUPPORTED and the like): such a
// figure is "n/a", never a failure. Remapped rows exist on Ampere and newer,
// retired pages on older GPUs.
struct NvmlHealth {
    std::optional<bool> ecc_enabled;  // ECC mode now
    std::optional<bool> ecc_pending;  // ECC mode after the next reboot
    // nvmlDeviceGetTotalEccErrors: volatile since the driver loaded, aggregate over the GPU's life.
    std::optional<std::uint64_t> ecc_corrected_volatile, ecc_uncorrected_volatile;
    std::optional<std::uint64_t> ecc_corrected_aggregate, ecc_uncorrected_aggregate;
    std::optional<unsigned> remapped_rows_correctable, remapped_rows_uncorrectable;
    std::optional<bool> remapped_rows_pending;  // a remap waits for a GPU reset
    std::optional<bool> remapped_rows_failure;  // a remap failed: the GPU needs service
    std::optional<unsigned> retired_pages_sbe, retired_pages_dbe;
    std::optional<bool> retired_pages_pending;
    std::optional<unsigned> memory_clock_mhz, memory_clock_max_mhz;
    // nvmlClocksEventReason* bits active now (0: the clocks are not held back).
    std::optional<std::uint64_t> clock_event_reasons;
    // The driver's own verdict: NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
    // (nvmlDeviceGpuRecoveryAction_t: 0 none, 1 GPU reset, 2 node reboot, 3
    // drain P2P, 4 drain and reset), empty where the driver does not report
    // the field; and the first query that answered NVML_ERROR_RESET_REQUIRED.
    std::optional<unsigned> recovery_action;
    std::string reset_required_by;
    // The NVML calls that failed for a reason other than "not supported"
    // (no permission, GPU lost, an unknown error), by function name
    // ("nvmlDeviceGetRemappedRows") to NVML's message: their figures stay
    // empty, and their checks are unknown rather than n/a.
    std::vector<std::pair<std::string, std::string>> errors;
    // The message of `function`'s failure, or null when it did not fail.
    const std::string* error_of(std::string_view function) const noexcept;
};

// The name under which a failed read of the recovery action is noted in
// NvmlHealth::errors.
inline constexpr std::string_view kRecoveryActionQuery = "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)";

// A GPU's registration with the NVSwitch fabric (nvmlDeviceGetGpuFabricInfoV):
// nvmlGpuFabricState_t (0 not supported, 1 not started, 2 in progress, 3
// completed) and, once completed, its status (an nvmlReturn_t, 0 success).
struct NvmlFabric {
    unsigned state = 0;
    int status = 0;
    std::string status_text;  // nvmlErrorString(status)
};

// NVLink as NVML reports it (nvmlDeviceGetFieldValues, nvmlDeviceGetNvLinkState...).
struct NvmlNvLink {
    bool supported = false;    // false: NVML reports no NVLink link on this GPU (PCIe only)
    std::string error;         // an NVML call failed: what the check cannot know
    unsigned link_count = 0;   // the links the GPU has (NVML_FI_DEV_NVLINK_LINK_COUNT)
    std::vector<bool> active;  // per link
    // Per link: the device at its other end, and whether that is an NVSwitch.
    std::vector<std::optional<PciAddress>> remote;
    std::vector<bool> remote_is_switch;
    std::optional<unsigned> version;       // nvmlNvlinkVersion_t of the first active link (6: NVLink 4.0)
    std::optional<double> link_speed_mbps;  // NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: one link, one direction
    // Totals over every link since the driver loaded; empty when not reported.
    std::optional<std::uint64_t> replay_errors, recovery_errors, crc_flit_errors, crc_data_errors;
    // The NVSwitch fabric: empty where the driver has no fabric call or the
    // GPU is on none (NVML_ERROR_NOT_SUPPORTED); fabric_error when the call failed.
    std::optional<NvmlFabric> fabric;
    std::string fabric_error;
    unsigned active_count() const noexcept {
        unsigned n = 0;
        for (bool a : active) n += a ? 1 : 0;
        return n;
    }
};

// Names of the clock event (throttle) reason bits, as nvidia-smi prints them
// under "Clocks Event Reasons"; unknown bits as hex.
std::vector<std::string> clock_event_reason_names(std::uint64_t reasons);
// What a clock event reason says about the GPU. normal: idle, application
// or display clocks, sync boost, the software power cap (the GPU running at
// its configured power limit is operation, not a fault). warning: software
// thermal slowdown (hot, within its limits; worth a look). fault: hardware
// slowdown, hardware thermal slowdown, hardware power brake (the board or
// the node forces the clocks down). A bit NVML adds later: a warning that
// names it.
enum class ClockReasonClass { normal, warning, fault };
ClockReasonClass clock_reason_class(std::uint64_t bit) noexcept;
// The active reasons of one class (a mask of `reasons`).
std::uint64_t clock_event_reasons_of(std::uint64_t reasons, ClockReasonClass which) noexcept;
// Reasons that hold the clocks back for something other than normal
// operation: the warning and fault reasons.
std::uint64_t clock_event_reasons_bad(std::uint64_t reasons) noexcept;

// An nvmlNvlinkVersion_t as NVLink's own version: 6 is "4.0".
std::string nvlink_version_name(unsigned version);

// "pid 12 python (1 GiB)"; at most three processes, then "... (N in all)".
std::string process_text(const NvmlProcess& process);
std::string processes_text(const std::vector<NvmlProcess>& processes);

}  // namespace gpumem
