// The rows of gpumem check's table (kChecks), each a check in one place:
// its id, unit, comparison, level, severity, threshold rule, remediation,
// source and description; for a quick-level check its judge, a pure
// function of the figures read before any device work (CheckReadings,
// base/check_readings.hpp), defined above the rows; for a standard or long
// one its device step (DeviceStep, base/check_plan.hpp: which of src/bench's
// steps measures it, and with what setting), which src/bench runs with CUDA
// and judges against the row, knowing no check by its id. static_asserts
// below hold every row to exactly one of a judge, a step, or the pair
// runner (p2p). Only the files that run or test the rows include this
// header; everything else reads kChecks (base/check_plan.hpp).
#pragma once

#include <algorithm>
#include <bitset>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check_plan.hpp"
#include "base/check_readings.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"

namespace gpumem {
namespace check_table_detail {

using C = Comparison;
using L = CheckLevel;
using R = ThresholdRule;
using V = Verdict;
using X = Remediation;
using RD = CheckReading;
using S = DeviceStep;
using CR = const CheckReadings&;
using Id = const std::string&;

// ---------------------------------------------------------------------------
// The judges of the quick-level checks, each named in its row below.

// Whether a check's source names NVML function `function` as a whole word
// (nvmlDeviceGetRetiredPages is not nvmlDeviceGetRetiredPagesPendingStatus).
inline bool names_function(std::string_view source, std::string_view function) {
    for (std::size_t at = source.find(function); at != std::string_view::npos; at = source.find(function, at + 1)) {
        const std::size_t end = at + function.size();
        if (end == source.size() || !std::isalnum(static_cast<unsigned char>(source[end]))) return true;
    }
    return false;
}


inline std::optional<Threshold> threshold(const CheckReadings& r, const std::string& id, const std::optional<Reference>& reference) {
    return threshold_for(id, check_row(id).value, r.thresholds, reference);
}

inline const NvmlHealth& health(const CheckReadings& r) { return *r.device.health; }

// A figure NVML did not give: unknown when the call behind it failed
// (no permission, GPU lost...), n/a when the GPU does not support it.
inline CheckOutcome absent(const CheckReadings& r, const std::string& id, const char* unsupported) {
    for (const auto& [function, message] : health(r).errors)
        if (names_function(check_row(id).value.source, function)) {
            std::string why = function;
            why += " failed: ";
            why += message;
            return unknown_check(id, why);
        }
    return not_applicable(id, unsupported);
}

// A count or yes/no figure against its threshold; n/a when not reported.
template <typename T>
inline CheckOutcome figure(const CheckReadings& r, const std::string& id, const std::optional<T>& value, const char* unsupported) {
    if (!value) return absent(r, id, unsupported);
    return judged(id, static_cast<double>(*value), threshold(r, id, std::nullopt));
}

inline CheckOutcome ecc_mode(const std::string& id, const CheckReadings& r) {
    const NvmlHealth& h = health(r);
    if (!h.ecc_enabled) return absent(r, id, "not supported by this GPU (no ECC)");
    const bool on = *h.ecc_enabled, later = h.ecc_pending.value_or(on);
    std::string note = on ? "ECC on" : "ECC off";
    if (later != on) note += later ? "; on after the next reboot" : "; off after the next reboot";
    CheckOutcome o = judged(id, on ? 1.0 : 0.0, threshold(r, id, std::nullopt), note);
    if (on && !later) o.verdict = Verdict::warn;
    return o;
}

inline CheckOutcome pcie_link(const std::string& id, const CheckReadings& r) {
    const CheckDeviceFigures& f = r.device;
    if (!f.pcie || f.pcie->current_width == 0) {
        // A call that failed (no permission, GPU lost) leaves the link
        // unknown; only a GPU that does not report it is n/a.
        for (const char* function : {"nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetCurrPcieLinkWidth"})
            if (const std::string* message = health(r).error_of(function)) return unknown_check(id, std::string(function) + " failed: " + *message);
        return not_applicable(id, "not reported by this GPU");
    }
    const NvmlPcieLink& l = *f.pcie;
    const Reference max{static_cast<double>(l.max_width), "the link's maximum"};
    // An idle link lowers its generation to save power: the generation
    // is shown; copy.h2d and copy.d2h judge the rate under load.
    const std::string note = "Gen" + std::to_string(l.current_generation) + " now, Gen" + std::to_string(l.max_generation) +
                             " at most (an idle link lowers its generation; copy.h2d and copy.d2h judge the rate)";
    return judged(id, static_cast<double>(l.current_width), threshold(r, id, max), note);
}

inline CheckOutcome memory_clock(const std::string& id, const CheckReadings& r) {
    const NvmlHealth& h = health(r);
    if (!h.memory_clock_mhz || !h.memory_clock_max_mhz) return absent(r, id, "not reported by this GPU");
    const std::uint64_t bad = h.clock_event_reasons ? clock_event_reasons_bad(*h.clock_event_reasons) : 0;
    const Reference max{static_cast<double>(*h.memory_clock_max_mhz), "the maximum memory clock"};
    std::string note;
    if (bad) note = "held back by " + join(clock_event_reason_names(bad));
    CheckOutcome o = judged(id, static_cast<double>(*h.memory_clock_mhz), threshold(r, id, max), note);
    // A clock below its maximum under normal reasons only (idle, a power
    // cap, application clocks) is operation, not a fault.
    if (o.verdict == Verdict::warn && !bad && !find_override(r.thresholds, id)) {
        o.verdict = Verdict::pass;
        o.remediation = Remediation::none;
        o.reason += "; only normal clock event reasons (idle, power cap, set clocks) hold it";
    }
    return o;
}

// Every reason NVML reports, classified (ClockReasonClass): a fault
// fails, a warning reason (SW thermal slowdown, a bit this build does
// not know) warns, normal operation passes. The value is the number of
// fault reasons, judged against the threshold (0).
inline CheckOutcome clock_reasons(const std::string& id, const CheckReadings& r) {
    const NvmlHealth& h = health(r);
    if (!h.clock_event_reasons) return absent(r, id, "not reported by this GPU");
    const std::uint64_t reasons = *h.clock_event_reasons;
    const std::uint64_t faults = clock_event_reasons_of(reasons, ClockReasonClass::fault);
    const std::uint64_t warnings = clock_event_reasons_of(reasons, ClockReasonClass::warning);
    const std::uint64_t normal = clock_event_reasons_of(reasons, ClockReasonClass::normal);
    std::vector<std::string> parts;
    if (faults) parts.push_back("fault: " + join(clock_event_reason_names(faults)));
    if (warnings) parts.push_back("warning: " + join(clock_event_reason_names(warnings)));
    if (normal) parts.push_back("normal: " + join(clock_event_reason_names(normal)));
    const std::string note = "active: " + (parts.empty() ? std::string("none") : join(parts, "; "));
    CheckOutcome o = judged(id, static_cast<double>(std::bitset<64>(faults).count()), threshold(r, id, std::nullopt), note);
    if (o.verdict == Verdict::pass && warnings) {
        o.verdict = Verdict::warn;
        o.remediation = Remediation::none;  // hot but within limits: look at the cooling, no need to drain
    }
    return o;
}

inline CheckOutcome processes(const std::string& id, const CheckReadings& r) {
    const CheckDeviceFigures& f = r.device;
    if (!f.processes_known) return unknown_check(id, "NVML could not list the processes: " + f.processes_error);
    const std::string note = f.others.empty() ? "" : processes_text(f.others) + ": results may be disturbed";
    return judged(id, static_cast<double>(f.others.size()), threshold(r, id, std::nullopt), note);
}

// Memory in use beyond the driver's reserve, as NVML saw it before
// gpumem's own context, with the processes that hold it.
inline CheckOutcome memory_in_use(const std::string& id, const CheckReadings& r) {
    const CheckDeviceFigures& f = r.device;
    if (!f.memory) return unknown_check(id, "NVML could not read the memory: " + f.memory_error);
    const NvmlMemory& m = *f.memory;
    std::string note = m.has_reserved ? format_bytes(m.reserved) + " reserved by the driver, not counted"
                                      : "NVML's memory info v2 is unavailable: the figure includes the driver's reserve";
    if (!f.processes_known)
        note += "; the processes are not known (" + f.processes_error + ")";
    else if (!f.others.empty())
        note += "; held by " + processes_text(f.others);
    else if (m.used > 0)
        note += "; held by none visible (a leak, or a process of another container)";
    return judged(id, static_cast<double>(m.used), threshold(r, id, total_reference(m.total)), note);
}

// What the driver's recovery action (nvmlDeviceGpuRecoveryAction_t) asks for.
struct RecoveryAction {
    unsigned value;
    const char* name;
    Remediation remediation;
    const char* what;  // the driver's remediation in words
};
inline constexpr RecoveryAction kRecoveryActions[] = {
    {0, "none", Remediation::none, "no action"},
    {1, "GPU reset", Remediation::reset_gpu, "reset the GPU"},
    {2, "node reboot", Remediation::reboot, "reboot the node"},
    {3, "drain P2P", Remediation::drain, "stop peer-to-peer traffic on the GPU, then read the action again"},
    {4, "drain and reset", Remediation::reset_gpu, "the GPU runs at reduced capacity: drain its work, then reset it"},
};

// The driver's own verdict: any action but none fails with the driver's
// remediation, as does NVML's "GPU requires reset" from any query.
inline CheckOutcome recovery_action(const std::string& id, const CheckReadings& r) {
    const NvmlHealth& h = health(r);
    if (!h.reset_required_by.empty()) {
        CheckOutcome o = failed_check(id, h.reset_required_by + " answered NVML_ERROR_RESET_REQUIRED: the GPU requires a reset");
        o.remediation = Remediation::reset_gpu;
        return o;
    }
    if (!h.recovery_action) {
        if (const std::string* message = h.error_of(kRecoveryActionQuery))
            return unknown_check(id, std::string(kRecoveryActionQuery) + " failed: " + *message);
        return not_applicable(id, "not reported by this driver (no NVML_FI_DEV_GET_GPU_RECOVERY_ACTION field)");
    }
    const unsigned value = *h.recovery_action;
    const auto* known = std::find_if(std::begin(kRecoveryActions), std::end(kRecoveryActions),
                                     [value](const RecoveryAction& a) { return a.value == value; });
    const bool listed = known != std::end(kRecoveryActions);
    const std::string note = listed ? "the driver's recovery action: " + std::string(known->name) + " (" + known->what + ")"
                                    : "recovery action " + std::to_string(value) + " is newer than this build: drain, and see the driver's documentation";
    CheckOutcome o = judged(id, value, threshold(r, id, std::nullopt), note);
    if (o.verdict == Verdict::fail) o.remediation = listed ? known->remediation : Remediation::drain;
    return o;
}


// Why the links of a device that has NVLink figures cannot be judged.
inline std::optional<CheckOutcome> links_unknown(const std::string& id, const NvmlNvLink& l) {
    if (!l.error.empty()) return unknown_check(id, l.error);
    if (!l.supported) return not_applicable(id, "no NVLink: NVML reports no NVLink link on this GPU (PCIe only)");
    return std::nullopt;
}

inline CheckOutcome nvlink_links(const std::string& id, const CheckReadings& r) {
    const NvmlNvLink& l = *r.device.nvlink;
    if (auto why = links_unknown(id, l)) return std::move(*why);
    const unsigned active = l.active_count();
    std::vector<std::string> down;
    for (std::size_t i = 0; i < l.active.size(); ++i)
        if (!l.active[i]) down.push_back(std::to_string(i));
    // No link up at all: a PCIe card with no NVLink bridge fitted, not a
    // fault; a machine that must have them says so with a threshold.
    if (active == 0 && find_override(r.thresholds, id) == nullptr)
        return not_applicable(id, "none of the GPU's " + std::to_string(l.link_count) +
                                      " NVLink links is active (no bridge or switch connected); --threshold nvlink.links=N requires N");
    std::string note = std::to_string(active) + " of " + std::to_string(l.link_count) + " active";
    if (l.version) note += ", NVLink " + nvlink_version_name(*l.version);
    if (!down.empty()) note += "; down: link " + join(down, ", ");
    CheckOutcome o = judged(id, active, threshold(r, id, Reference{static_cast<double>(l.link_count), "the GPU's links"}), note);
    if (o.verdict == Verdict::fail) o.remediation = Remediation::reset_gpu;
    return o;
}

// An NVLink error counter over every link; a warning asks for its row's remediation.
inline CheckOutcome nvlink_counter(const std::string& id, const CheckReadings& r, std::optional<std::uint64_t> value) {
    if (auto why = links_unknown(id, *r.device.nvlink)) return std::move(*why);
    if (!value) return not_applicable(id, "not reported by this GPU's NVML");
    CheckOutcome o = judged(id, static_cast<double>(*value), threshold(r, id, std::nullopt), "over every link since the driver loaded");
    if (o.verdict == Verdict::warn || o.verdict == Verdict::fail) o.remediation = check_row(id).value.remediation;
    return o;
}

// The NVSwitch fabric: the fabric manager registers each GPU; peer traffic
// through the switches needs it completed with success.
inline CheckOutcome nvlink_fabric(const std::string& id, const CheckReadings& r) {
    const NvmlNvLink& l = *r.device.nvlink;
    if (!l.fabric_error.empty()) return unknown_check(id, l.fabric_error);
    if (!l.fabric || l.fabric->state == 0)
        return not_applicable(id, l.supported ? "no NVSwitch fabric: the GPU reports none (its links do not go through NVSwitches, or the "
                                                "driver has no fabric calls)"
                                              : "no NVSwitch fabric: NVML reports no NVLink link on this GPU (PCIe only)");
    const NvmlFabric& f = *l.fabric;
    constexpr const char* kRestart =
        "restart the fabric manager (systemctl restart nvidia-fabricmanager); if the registration does not complete, send for service";
    switch (f.state) {
        case 1: return judged(id, 0.0, threshold(r, id, std::nullopt), std::string("registration not started: ") + kRestart);
        case 2: return unknown_check(id, "registration in progress: the fabric manager is still registering the GPU; check again shortly");
        case 3:
            if (f.status == 0) return judged(id, 1.0, threshold(r, id, std::nullopt), "registration completed with success");
            return judged(id, 0.0, threshold(r, id, std::nullopt),
                          "registration completed with status " + std::to_string(f.status) + " (" + f.status_text + "): " + kRestart);
        default: return unknown_check(id, "fabric state " + std::to_string(f.state) + " is one this build does not know");
    }
}

inline std::optional<std::uint64_t> crc_errors(const NvmlNvLink& l) {
    if (!l.crc_flit_errors && !l.crc_data_errors) return std::nullopt;
    return l.crc_flit_errors.value_or(0) + l.crc_data_errors.value_or(0);
}


// A count or yes/no figure of NVML's health, against its threshold: the
// judge of most nvml.* rows.
template <auto member, const char* unsupported>
inline CheckOutcome health_figure(Id id, CR r) {
    return figure(r, id, health(r).*member, unsupported);
}
inline constexpr char kNoRemap[] = "not supported by this GPU (remapped rows exist on Ampere and newer)";
inline constexpr char kNoRetire[] = "not supported by this GPU (pages are retired before Ampere; newer GPUs remap rows)";
inline constexpr char kNoEcc[] = "not supported by this GPU (no ECC, or ECC off)";

inline CheckOutcome node_gpus(Id, CR r) { return node_gpus_check(r.node, r.thresholds); }
inline CheckOutcome xid_events(Id, CR r) { return xid_check(r.xid.scan, r.xid.window, r.device.device.pci, r.xid.checked); }
inline CheckOutcome nvlink_replays(Id id, CR r) { return nvlink_counter(id, r, r.device.nvlink->replay_errors); }
inline CheckOutcome nvlink_recoveries(Id id, CR r) { return nvlink_counter(id, r, r.device.nvlink->recovery_errors); }
inline CheckOutcome nvlink_crc(Id id, CR r) { return nvlink_counter(id, r, crc_errors(*r.device.nvlink)); }

// ---------------------------------------------------------------------------
// The rows
// The default fractions: each passes a healthy H100 and H200 with room to
// spare (bench/results: memset 95% of peak, a d2d copy 87% of half the peak,
// pinned h2d and d2h 88% of a Gen5 x16 link's rate on an H200). Host copies
// are judged by their best sample at 60%: on the lent H100 machines the
// median of a run swung between 42% and 87% of the link's rate from one
// run to the next (other tenants on the host's memory and links), while a
// link one generation or half its width down cannot pass 50% at all.
inline constexpr Named<CheckKind> kCheckRows[] = {
    {"nvml.ecc.mode", {"bool", C::equal, L::quick, V::warn, 0, R::unsettable, 1, "1: ECC on, and on after the next reboot", false, X::reset_gpu, "NVML nvmlDeviceGetEccMode", RD::health, ecc_mode},
     "ECC mode (1 on, 0 off); warns when off or when a change waits for a reboot"},
    {"nvml.ecc.uncorrected.volatile", {"count", C::at_most, L::quick, V::fail, 0, R::fixed, 0, "0", false, X::reset_gpu, "NVML nvmlDeviceGetTotalEccErrors (volatile)", RD::health, health_figure<&NvmlHealth::ecc_uncorrected_volatile, kNoEcc>},
     "uncorrected ECC errors since the driver loaded: any fails"},
    {"nvml.ecc.uncorrected.aggregate", {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::none, "NVML nvmlDeviceGetTotalEccErrors (aggregate)", RD::health, health_figure<&NvmlHealth::ecc_uncorrected_aggregate, kNoEcc>},
     "uncorrected ECC errors over the GPU's life: any warns"},
    {"nvml.ecc.corrected.volatile", {"count", C::at_most, L::quick, V::warn, 0, R::none, 0, "reported only, no default threshold", false, X::none, "NVML nvmlDeviceGetTotalEccErrors (volatile)", RD::health, health_figure<&NvmlHealth::ecc_corrected_volatile, kNoEcc>},
     "corrected ECC errors since the driver loaded; warns above a --threshold"},
    {"nvml.ecc.corrected.aggregate", {"count", C::at_most, L::quick, V::warn, 0, R::none, 0, "reported only, no default threshold", false, X::none, "NVML nvmlDeviceGetTotalEccErrors (aggregate)", RD::health, health_figure<&NvmlHealth::ecc_corrected_aggregate, kNoEcc>},
     "corrected ECC errors over the GPU's life; warns above a --threshold"},
    {"nvml.remapped_rows.correctable", {"count", C::at_most, L::quick, V::warn, 0, R::none, 0, "reported only, no default threshold", false, X::none, "NVML nvmlDeviceGetRemappedRows", RD::health, health_figure<&NvmlHealth::remapped_rows_correctable, kNoRemap>},
     "rows remapped for correctable errors (Ampere and newer); warns above a --threshold"},
    {"nvml.remapped_rows.uncorrectable", {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::none, "NVML nvmlDeviceGetRemappedRows", RD::health, health_figure<&NvmlHealth::remapped_rows_uncorrectable, kNoRemap>},
     "rows remapped for uncorrectable errors (Ampere and newer): any warns"},
    {"nvml.remapped_rows.pending", {"bool", C::at_most, L::quick, V::fail, 0, R::unsettable, 0, "0: no remap waits", false, X::reset_gpu, "NVML nvmlDeviceGetRemappedRows", RD::health, health_figure<&NvmlHealth::remapped_rows_pending, kNoRemap>},
     "a row remap waits for a GPU reset: fails"},
    {"nvml.remapped_rows.failure", {"bool", C::at_most, L::quick, V::fail, 0, R::unsettable, 0, "0: no remap failed", false, X::service, "NVML nvmlDeviceGetRemappedRows", RD::health, health_figure<&NvmlHealth::remapped_rows_failure, kNoRemap>},
     "a row remap failed, the GPU needs service: fails"},
    {"nvml.retired_pages.sbe", {"count", C::at_most, L::quick, V::warn, 0, R::none, 0, "reported only, no default threshold", false, X::none, "NVML nvmlDeviceGetRetiredPages", RD::health, health_figure<&NvmlHealth::retired_pages_sbe, kNoRetire>},
     "pages retired for single-bit errors (before Ampere); warns above a --threshold"},
    {"nvml.retired_pages.dbe", {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::none, "NVML nvmlDeviceGetRetiredPages", RD::health, health_figure<&NvmlHealth::retired_pages_dbe, kNoRetire>},
     "pages retired for double-bit errors (before Ampere): any warns"},
    {"nvml.retired_pages.pending", {"bool", C::at_most, L::quick, V::fail, 0, R::unsettable, 0, "0: no retirement waits", false, X::reboot, "NVML nvmlDeviceGetRetiredPagesPendingStatus", RD::health, health_figure<&NvmlHealth::retired_pages_pending, kNoRetire>},
     "a page retirement waits for a reboot: fails"},
    {"nvml.pcie.link", {"lanes", C::at_least, L::quick, V::warn, 0, R::maximum, 0, "the link's maximum width", false, X::drain, "NVML nvmlDeviceGetCurrPcieLinkWidth, nvmlDeviceGetMaxPcieLinkWidth", RD::health, pcie_link},
     "PCIe link width against its maximum (warns); the generation is shown, and judged by copy.h2d/d2h under load"},
    {"nvml.memory_clock",
     {"MHz", C::at_least, L::quick, V::warn, 0, R::maximum, 0, "the maximum memory clock, while a fault or limit holds it back", false, X::drain, "NVML nvmlDeviceGetClockInfo, nvmlDeviceGetMaxClockInfo (memory)", RD::health, memory_clock},
     "memory clock against its maximum: warns when below it with a clock event reason that means a fault or a limit"},
    {"nvml.clock_event_reasons",
     {"count", C::at_most, L::quick, V::fail, 0, R::fixed, 0, "0 fault reasons (SW thermal slowdown warns)", false, X::drain,
      "NVML nvmlDeviceGetCurrentClocksEventReasons", RD::health, clock_reasons},
     "clock event reasons, each classified: HW slowdown, HW thermal slowdown and HW power brake fail; SW thermal slowdown "
     "and reasons this build does not know warn; idle, application and display clocks, SW power cap and sync boost pass"},
    {"nvml.processes", {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::none, "NVML nvmlDeviceGetComputeRunningProcesses", RD::health, processes},
     "other processes holding memory on the GPU: warns, as they may disturb the results"},
    {"nvml.memory.in_use",
     {"bytes", C::at_most, L::quick, V::fail, 0, R::total_fraction, 0.01, "1% of the total memory", false, X::drain,
      "NVML nvmlDeviceGetMemoryInfo_v2 (used, beyond the driver's reserve), nvmlDeviceGetComputeRunningProcesses", RD::health, memory_in_use},
     "memory in use beyond the driver's own reserve, read before gpumem's context, with the processes that hold it or "
     "none visible (a leak, or another container's process): fails above the threshold"},
    {"nvml.recovery_action",
     {"count", C::equal, L::quick, V::fail, 0, R::unsettable, 0, "0: none (the driver asks for no action)", false, X::reset_gpu,
      "NVML field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION; NVML_ERROR_RESET_REQUIRED from any query", RD::health, recovery_action},
     "the driver's own recovery action for the GPU (0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset), or "
     "NVML's \"GPU requires reset\": anything but none fails with the driver's remediation"},
    {"node.gpus",
     {"count", C::at_least, L::quick, V::fail, 0, R::none, 0, "--expect-gpus N (none by default); a GPU NVML reports lost fails", false,
      X::reboot, "NVML nvmlDeviceGetCount and device handles (NVML_ERROR_GPU_IS_LOST), CUDA_VISIBLE_DEVICES", RD::node, node_gpus},
     "GPUs visible on the node against --expect-gpus, and GPUs NVML reports lost (fallen off the bus): the node's, on its "
     "first GPU's row"},
    {"xid.events",
     {"count", C::at_most, L::quick, V::fail, 0, R::unsettable, 0,
      "by NVIDIA's Xid catalog: a critical code fails, others warn, unknown codes warn", false, X::drain,
      "kernel log: /dev/kmsg (klogctl where missing) or --kernel-log FILE; NVIDIA's Xid catalog (gpumem --list xids)", RD::kernel_log, xid_events},
     "Xid events of the GPU in the kernel log (live, or --kernel-log FILE) since boot or --xid-since: the worst event decides "
     "the verdict and the remediation"},
    {"nvlink.links",
     {"count", C::at_least, L::quick, V::fail, 0, R::maximum, 0, "every NVLink link the GPU has, active", false, X::reset_gpu,
      "NVML nvmlDeviceGetNvLinkState, field NVML_FI_DEV_NVLINK_LINK_COUNT", RD::nvlink, nvlink_links},
     "active NVLink links against the links the GPU has (n/a on a PCIe-only GPU, or when no link is up at all)"},
    {"nvlink.replay_errors",
     {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 100, "100 (warns)", false, X::none,
      "NVML field NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", RD::nvlink, nvlink_replays},
     "NVLink replays (a packet sent again) over every link since the driver loaded"},
    {"nvlink.recovery_errors",
     {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::reset_gpu,
      "NVML field NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", RD::nvlink, nvlink_recoveries},
     "NVLink recoveries (a link retrained) over every link since the driver loaded"},
    {"nvlink.crc_errors",
     {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 100, "100 (warns)", false, X::service,
      "NVML fields NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL + _CRC_DATA_ERROR_COUNT_TOTAL", RD::nvlink, nvlink_crc},
     "NVLink CRC errors (flit and data) over every link since the driver loaded"},
    {"nvlink.fabric",
     {"bool", C::equal, L::quick, V::fail, 0, R::unsettable, 1, "1: the GPU's NVSwitch fabric registration completed with success",
      false, X::drain, "NVML nvmlDeviceGetGpuFabricInfoV (nvmlDeviceGetGpuFabricInfo where missing)", RD::nvlink, nvlink_fabric},
     "the GPU's registration with the NVSwitch fabric (HGX): completed with success passes; in progress is unknown; not "
     "started or a failed status fails (restart the fabric manager; if it does not complete, service); n/a without NVSwitch"},
    // The device work, in the order it runs. Bandwidth first: right after a
    // memtest over 90% of free memory was freed, pinned h2d copies ran at
    // half their rate for a while (26-29 GB/s against 55 on an H200 and an
    // H100, every time; d2h was unaffected), so the copies are measured
    // before the large allocations.
    {"cuda.context", {"s", C::at_most, L::standard, V::warn, 0, R::fixed, 10, "10 s (warns)", false, X::reset_gpu, "CUDA runtime (cudaSetDevice, cudaFree(0))", RD::device_work, nullptr, S::context},
     "creating a CUDA context: fails when it cannot be created, warns when slow"},
    {"memset.bandwidth",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::peak_fraction, 0.8, "80% of NVML's peak memory bandwidth", false, X::drain, "cuMemsetD32", RD::device_work, nullptr, S::memset},
     "cuMemsetD32 bandwidth, median of samples"},
    {"copy.d2d",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::copy_fraction, 0.65,
      "65% of half NVML's peak memory bandwidth (a copy reads and writes each byte)", false, X::drain, "cudaMemcpyAsync, device to device",
      RD::device_work, nullptr, S::copy, "d2d"},
     "device to device copy bandwidth (bytes counted once), median of samples"},
    {"copy.h2d",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::pcie_fraction, 0.6,
      "60% of the PCIe link's rate (maximum generation x width)", false, X::drain, "cudaMemcpyAsync from pinned host memory",
      RD::device_work, nullptr, S::copy, "h2d"},
     "pinned host to device copy bandwidth, best of samples"},
    {"copy.d2h",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::pcie_fraction, 0.6,
      "60% of the PCIe link's rate (maximum generation x width)", false, X::drain, "cudaMemcpyAsync to pinned host memory",
      RD::device_work, nullptr, S::copy, "d2h"},
     "device to pinned host copy bandwidth, best of samples"},
    {"alloc.max", {"bytes", C::at_least, L::standard, V::fail, 0, R::free_fraction, 0.9, "90% of the free memory", false, X::drain, "cudaMalloc", RD::device_work, nullptr,
      S::largest_alloc},
     "the largest single cudaMalloc against the free memory"},
    {"fill.verify", {"count", C::at_most, L::standard, V::fail, 0, R::fixed, 0, "0 bad words", false, X::service, "gpumem's fill and verify kernels", RD::device_work,
      nullptr, S::fill},
     "patterns written over the free memory and read back: any bad word fails, with its address"},
    {"memtest", {"count", C::at_most, L::deep, V::fail, 0, R::fixed, 0, "0 bad words", false, X::service, "gpumem's memtest kernels", RD::device_work, nullptr,
      S::memtest},
     "the memtest86 set DCGM's memtest runs (walking bit, own address, moving inversions, 8-bit and random words, block "
     "moves, modulo-20) over 90% of the free memory: any bad word fails, with its address"},
    {"p2p.A-B",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::pcie_fraction, 0.5,
      "50% of what connects the pair: its NVLink links (version x links, direct or through NVSwitch) where NVML reports them, "
      "else the slower PCIe link's rate", true, X::drain,
      "cudaMemcpyPeerAsync, both ways at once; NVML NVLink state, version and remote device for the reference"},
     "peer copy bandwidth from device A to B with peer access, both ways at once (n/a without peer access)"},
};


// Every quick-level row holds its judge, and no other row has one: a check
// that needs no device work is exactly a quick one (it makes no CUDA context).
constexpr bool quick_rows_judged() {
    for (const Named<CheckKind>& row : kCheckRows)
        if ((row.value.level == L::quick) != (row.value.judge != nullptr) ||
            (row.value.judge != nullptr) == (row.value.reading == RD::device_work))
            return false;
    return true;
}
static_assert(quick_rows_judged(), "each quick-level row of kCheckRows needs its judge and what it reads; no other row has one");

// Every standard or long row that runs on one GPU names its device step, a
// copy its direction, and no other row has a step: the run walks the rows,
// and src/bench runs each step by its kind (bench/check_engine.cpp).
constexpr bool device_rows_stepped() {
    for (const Named<CheckKind>& row : kCheckRows) {
        const bool device = row.value.level != L::quick && !row.value.per_pair;
        if (device != (row.value.step != S::none) || (row.value.step == S::copy) == row.value.step_setting.empty()) return false;
        if (row.value.per_pair && row.value.level == L::quick) return false;
    }
    return true;
}
static_assert(device_rows_stepped(), "each standard or long row of kCheckRows that is not per pair needs its device step (a copy its direction); no other row has one");

}  // namespace check_table_detail

// Every check, in the order they run and are reported; kChecks is this table.
using check_table_detail::kCheckRows;

}  // namespace gpumem
