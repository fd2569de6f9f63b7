// NVML, loaded at run time with dlopen so that gpumem starts on machines with
// no driver and never links libnvidia-ml. NVML answers memory questions
// without creating a CUDA context: no GPU memory is taken and gpumem does not
// appear in any process list.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "base/device_spec.hpp"
#include "base/errors.hpp"

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

// NVML_ERROR_GPU_IS_LOST: the GPU has fallen off the bus (Xid 79).
class GpuLostError : public Error {
public:
    using Error::Error;
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

class Nvml {
public:
    // Loads libnvidia-ml.so.1 and initialises it; nullptr with `why_not` set if
    // either fails.
    static std::unique_ptr<Nvml> open(std::string& why_not);
    // Starts open() on a background thread so that NVML's start-up overlaps
    // the caller's own; the next open() in the process takes its result.
    static void start_opening();
    ~Nvml();
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    std::string driver_version() const;
    int cuda_driver_version() const;  // e.g. 13000; 0 if unknown
    unsigned device_count() const;

    // NVML index of the device at `pci`, attaching only that device (each
    // attach costs ~6.6 ms on an H200; a scan by index attaches them all).
    std::optional<unsigned> index_of(const PciAddress& pci) const;

    // Identity of NVML device `index` (nvml_index set; cuda_index left empty).
    DeviceIdentity identity(unsigned index) const;
    NvmlMemory memory(unsigned index) const;
    std::optional<NvmlBar1> bar1(unsigned index) const;
    std::optional<std::pair<int, int>> compute_capability(unsigned index) const;
    // Empty when NVML does not report the link; a call that failed for
    // another reason than "not supported" is also noted in `failures`
    // (NvmlHealth::errors' form: function, message) when given, so that a
    // check can say unknown rather than n/a.
    std::optional<NvmlPcieLink> pcie_link(unsigned index, NvmlHealth* failures = nullptr) const;
    // Peak memory bandwidth in bytes/s from the maximum memory clock and the bus
    // width (double data rate), as NVIDIA computes its datasheet figure.
    std::optional<double> peak_memory_bandwidth(unsigned index) const;
    std::vector<NvmlProcess> compute_processes(unsigned index) const;
    // Every health figure of device `index`; unsupported ones stay empty.
    NvmlHealth health(unsigned index) const;
    // The GPU's NVLink links, their state and error counters.
    NvmlNvLink nvlink(unsigned index) const;
    // CPUs close to the GPU, as a list of CPU numbers; empty if unknown.
    std::vector<int> cpu_affinity(unsigned index) const;

    // Leave NVML initialised when this object goes: for a process about to
    // exit, whose NVML resources the driver releases with the process anyway.
    // nvmlShutdown took 2.1-2.6 ms on an H200 (bench/nvml_probe), a tenth of
    // a `gpumem info` one-liner.
    void skip_shutdown() noexcept { skip_shutdown_ = true; }

    struct Api;

private:
    Nvml() = default;
    static std::unique_ptr<Nvml> open_now(std::string& why_not);
    void* library_ = nullptr;
    std::unique_ptr<Api> api_;
    bool skip_shutdown_ = false;
};

}  // namespace gpumem
