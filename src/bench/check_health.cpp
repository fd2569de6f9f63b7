// The first half of `gpumem check`: reading each device's figures without a
// CUDA context, and the judges (pure) of every check that needs no device
// work: one function per check, each bound to its row of kChecks in kJudges.
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <cctype>
#include <chrono>
#include <iterator>
#include <stdexcept>

#include "base/check_table.hpp"
#include "base/errors.hpp"
#include "base/sizes.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "bench/check_contention.hpp"
#include "bench/check_engine.hpp"
#include "core/device_inventory.hpp"

namespace gpumem {
namespace {


// Whether a check's source names NVML function `function` as a whole word
// (nvmlDeviceGetRetiredPages is not nvmlDeviceGetRetiredPagesPendingStatus).
bool names_function(std::string_view source, std::string_view function) {
    for (std::size_t at = source.find(function); at != std::string_view::npos; at = source.find(function, at + 1)) {
        const std::size_t end = at + function.size();
        if (end == source.size() || !std::isalnum(static_cast<unsigned char>(source[end]))) return true;
    }
    return false;
}

}  // namespace

std::vector<CheckDeviceFigures> read_check_figures(const DeviceSpec& spec, CheckNodeFigures* node) {
    DeviceInventory inventory = DeviceInventory::open();
    inventory.skip_nvml_shutdown();  // the process ends soon after; see Nvml::skip_shutdown
    if (node) {
        node->visible = inventory.visible().size();
        node->lost = inventory.lost();
        node->nvml = inventory.source() == "nvml";
    }
    const std::vector<std::size_t> positions = inventory.resolve(spec);
    std::vector<CheckDeviceFigures> all;
    const Nvml* nvml = inventory.source() == "nvml" ? inventory.nvml() : nullptr;
    SnapshotFields fields;
    fields.pcie = fields.peak_bandwidth = fields.health = true;
    for (std::size_t pos : positions) {
        throw_if_interrupted();
        const auto start = std::chrono::steady_clock::now();
        CheckDeviceFigures f;
        f.device = inventory.visible().at(pos);
        if (nvml == nullptr) {
            // The CUDA runtime's fallback would create a context: none of it.
            f.why_no_nvml = "NVML unavailable, the check could not run";
            all.push_back(std::move(f));
            continue;
        }
        const DeviceReport report = std::move(inventory.snapshot({pos}, fields).devices.at(0));
        f.health = report.health;
        f.pcie = report.pcie;
        f.peak_bps = report.peak_memory_bandwidth;
        const unsigned index = f.device.nvml_index.value();
        try {
            f.others = others_of(nvml->compute_processes(index));
            for (const NvmlProcess& p : f.others) f.other_processes.push_back(process_text(p));
            f.processes_known = true;
        } catch (const Error& e) {  // unknown: some drivers and containers refuse the list
            f.processes_error = one_line(e.what());
        }
        try {
            f.memory = nvml->memory(index);
        } catch (const Error& e) {
            f.memory_error = one_line(e.what());
        }
        try {
            f.nvlink = nvml->nvlink(index);
        } catch (const GpuLostError& e) {  // fell off the bus since the inventory
            f.why_no_nvlink = e.what();
            if (node) node->lost.emplace_back(e.what());
        }
        f.cpu_affinity = nvml->cpu_affinity(index);
        f.seconds = seconds_since(start);
        all.push_back(std::move(f));
    }
    return all;
}

namespace {

std::optional<Threshold> threshold(const CheckReadings& r, const std::string& id, const std::optional<Reference>& reference) {
    return threshold_for(id, check_row(id).value, r.thresholds, reference);
}

const NvmlHealth& health(const CheckReadings& r) { return *r.device.health; }

// A figure NVML did not give: unknown when the call behind it failed
// (no permission, GPU lost...), n/a when the GPU does not support it.
CheckOutcome absent(const CheckReadings& r, const std::string& id, const char* unsupported) {
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
CheckOutcome figure(const CheckReadings& r, const std::string& id, const std::optional<T>& value, const char* unsupported) {
    if (!value) return absent(r, id, unsupported);
    return judged(id, static_cast<double>(*value), threshold(r, id, std::nullopt));
}

CheckOutcome ecc_mode(const std::string& id, const CheckReadings& r) {
    const NvmlHealth& h = health(r);
    if (!h.ecc_enabled) return absent(r, id, "not supported by this GPU (no ECC)");
    const bool on = *h.ecc_enabled, later = h.ecc_pending.value_or(on);
    std::string note = on ? "ECC on" : "ECC off";
    if (later != on) note += later ? "; on after the next reboot" : "; off after the next reboot";
    CheckOutcome o = judged(id, on ? 1.0 : 0.0, threshold(r, id, std::nullopt), note);
    if (on && !later) o.verdict = Verdict::warn;
    return o;
}

CheckOutcome pcie_link(const std::string& id, const CheckReadings& r) {
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

CheckOutcome memory_clock(const std::string& id, const CheckReadings& r) {
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
CheckOutcome clock_reasons(const std::string& id, const CheckReadings& r) {
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

CheckOutcome processes(const std::string& id, const CheckReadings& r) {
    const CheckDeviceFigures& f = r.device;
    if (!f.processes_known) return unknown_check(id, "NVML could not list the processes: " + f.processes_error);
    const std::string note = f.others.empty() ? "" : processes_text(f.others) + ": results may be disturbed";
    return judged(id, static_cast<double>(f.others.size()), threshold(r, id, std::nullopt), note);
}

// Memory in use beyond the driver's reserve, as NVML saw it before
// gpumem's own context, with the processes that hold it.
CheckOutcome memory_in_use(const std::string& id, const CheckReadings& r) {
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
constexpr RecoveryAction kRecoveryActions[] = {
    {0, "none", Remediation::none, "no action"},
    {1, "GPU reset", Remediation::reset_gpu, "reset the GPU"},
    {2, "node reboot", Remediation::reboot, "reboot the node"},
    {3, "drain P2P", Remediation::drain, "stop peer-to-peer traffic on the GPU, then read the action again"},
    {4, "drain and reset", Remediation::reset_gpu, "the GPU runs at reduced capacity: drain its work, then reset it"},
};

// The driver's own verdict: any action but none fails with the driver's
// remediation, as does NVML's "GPU requires reset" from any query.
CheckOutcome recovery_action(const std::string& id, const CheckReadings& r) {
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

std::string nvlink_version_name(unsigned version) {
    static const char* const names[] = {"?", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0"};
    return version < 8 ? names[version] : std::to_string(version);
}

// Why the links of a device that has NVLink figures cannot be judged.
std::optional<CheckOutcome> links_unknown(const std::string& id, const NvmlNvLink& l) {
    if (!l.error.empty()) return unknown_check(id, l.error);
    if (!l.supported) return not_applicable(id, "no NVLink: NVML reports no NVLink link on this GPU (PCIe only)");
    return std::nullopt;
}

CheckOutcome nvlink_links(const std::string& id, const CheckReadings& r) {
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
CheckOutcome nvlink_counter(const std::string& id, const CheckReadings& r, std::optional<std::uint64_t> value) {
    if (auto why = links_unknown(id, *r.device.nvlink)) return std::move(*why);
    if (!value) return not_applicable(id, "not reported by this GPU's NVML");
    CheckOutcome o = judged(id, static_cast<double>(*value), threshold(r, id, std::nullopt), "over every link since the driver loaded");
    if (o.verdict == Verdict::warn || o.verdict == Verdict::fail) o.remediation = check_row(id).value.remediation;
    return o;
}

// The NVSwitch fabric: the fabric manager registers each GPU; peer traffic
// through the switches needs it completed with success.
CheckOutcome nvlink_fabric(const std::string& id, const CheckReadings& r) {
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

std::optional<std::uint64_t> crc_errors(const NvmlNvLink& l) {
    if (!l.crc_flit_errors && !l.crc_data_errors) return std::nullopt;
    return l.crc_flit_errors.value_or(0) + l.crc_data_errors.value_or(0);
}

// What a judge reads: when it cannot judge, and whose reading time it shares.
enum class Reading {
    health,      // the device's NVML health figures: unknown without them; shares their reading time
    nvlink,      // the device's NVLink figures: n/a without NVML, unknown for a GPU lost meanwhile
    node,        // the node's GPUs: judged once, on the run's first GPU
    kernel_log,  // the kernel log's Xid events: shares the log's reading time
};

using Judge = CheckOutcome (*)(const std::string& id, const CheckReadings& readings);

// A check of kChecks judged from what was read before any device work: its
// row, bound at compile time (check_definition), and its judge.
struct JudgeRow {
    const Named<CheckKind>* row;
    Reading reading;
    Judge judge;
};

constexpr const Named<CheckKind>* row(std::string_view id) { return check_definition(id); }

constexpr const char* kNoRemap = "not supported by this GPU (remapped rows exist on Ampere and newer)";
constexpr const char* kNoRetire = "not supported by this GPU (pages are retired before Ampere; newer GPUs remap rows)";
constexpr const char* kNoEcc = "not supported by this GPU (no ECC, or ECC off)";

using RD = Reading;
using CR = const CheckReadings&;
using Id = const std::string&;

// Each quick-level check of kChecks and its judge, in kChecks' order (the
// run's); the static_assert below holds every quick row to one judge.
constexpr JudgeRow kJudges[] = {
    {row("nvml.ecc.mode"), RD::health, ecc_mode},
    {row("nvml.ecc.uncorrected.volatile"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).ecc_uncorrected_volatile, kNoEcc); }},
    {row("nvml.ecc.uncorrected.aggregate"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).ecc_uncorrected_aggregate, kNoEcc); }},
    {row("nvml.ecc.corrected.volatile"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).ecc_corrected_volatile, kNoEcc); }},
    {row("nvml.ecc.corrected.aggregate"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).ecc_corrected_aggregate, kNoEcc); }},
    {row("nvml.remapped_rows.correctable"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).remapped_rows_correctable, kNoRemap); }},
    {row("nvml.remapped_rows.uncorrectable"), RD::health,
     [](Id id, CR r) { return figure(r, id, health(r).remapped_rows_uncorrectable, kNoRemap); }},
    {row("nvml.remapped_rows.pending"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).remapped_rows_pending, kNoRemap); }},
    {row("nvml.remapped_rows.failure"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).remapped_rows_failure, kNoRemap); }},
    {row("nvml.retired_pages.sbe"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).retired_pages_sbe, kNoRetire); }},
    {row("nvml.retired_pages.dbe"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).retired_pages_dbe, kNoRetire); }},
    {row("nvml.retired_pages.pending"), RD::health, [](Id id, CR r) { return figure(r, id, health(r).retired_pages_pending, kNoRetire); }},
    {row("nvml.pcie.link"), RD::health, pcie_link},
    {row("nvml.memory_clock"), RD::health, memory_clock},
    {row("nvml.clock_event_reasons"), RD::health, clock_reasons},
    {row("nvml.processes"), RD::health, processes},
    {row("nvml.memory.in_use"), RD::health, memory_in_use},
    {row("nvml.recovery_action"), RD::health, recovery_action},
    {row("node.gpus"), RD::node, [](Id, CR r) { return node_gpus_check(r.node, r.thresholds); }},
    {row("xid.events"), RD::kernel_log, [](Id, CR r) { return xid_check(r.xid.scan, r.xid.window, r.device.device.pci, r.xid.checked); }},
    {row("nvlink.links"), RD::nvlink, nvlink_links},
    {row("nvlink.replay_errors"), RD::nvlink, [](Id id, CR r) { return nvlink_counter(id, r, r.device.nvlink->replay_errors); }},
    {row("nvlink.recovery_errors"), RD::nvlink, [](Id id, CR r) { return nvlink_counter(id, r, r.device.nvlink->recovery_errors); }},
    {row("nvlink.crc_errors"), RD::nvlink, [](Id id, CR r) { return nvlink_counter(id, r, crc_errors(*r.device.nvlink)); }},
    {row("nvlink.fabric"), RD::nvlink, nvlink_fabric},
};

// Whether kJudges has, in kChecks' order, one judge for every row of
// kChecks that runs at quick level and nothing else: the checks that need
// no device work are exactly the quick ones (a quick check makes no CUDA
// context), and the device steps (check_engine.cpp) take the others.
constexpr bool judges_every_quick_row() {
    std::size_t next = 0;
    for (const Named<CheckKind>& r : kCheckRows) {
        if (r.value.level != CheckLevel::quick) continue;
        if (next == std::size(kJudges) || kJudges[next].row != &r || kJudges[next].judge == nullptr) return false;
        ++next;
    }
    return next == std::size(kJudges);
}
static_assert(judges_every_quick_row(),
              "kJudges must list one judge for each quick-level row of kCheckRows (base/check_table.hpp), in the table's order");

// The judge of check `id`, for judge_check and has_judge (the tests' way
// in); the run itself goes through kJudges.
const JudgeRow* judge_row(std::string_view id) noexcept {
    for (const JudgeRow& j : kJudges)
        if (j.row->name == id) return &j;
    return nullptr;
}

// One check: the figures its judge needs, or why it cannot be judged.
CheckOutcome judge_one(const JudgeRow& j, const std::string& id, const CheckReadings& r) {
    const CheckDeviceFigures& f = r.device;
    if (j.reading == Reading::health && !f.health)
        return unknown_check(id, f.why_no_nvml.empty() ? "NVML gave no health figures" : f.why_no_nvml);
    if (j.reading == Reading::nvlink && !f.nvlink) {
        if (!f.why_no_nvlink.empty()) return unknown_check(id, f.why_no_nvlink);
        return not_applicable(id, f.why_no_nvml.empty() ? "NVML gave no NVLink figures" : f.why_no_nvml);
    }
    return j.judge(id, r);
}

// The checks of one kind of reading, for one device with no node and no log.
std::vector<CheckOutcome> judge_reading(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides, Reading reading) {
    const CheckNodeFigures node;
    const XidReading xid;
    const CheckReadings r{figures, node, xid, overrides};
    std::vector<CheckOutcome> out;
    // With the node's, judge_readings gives one outcome per row of kJudges, in its order.
    const std::vector<CheckOutcome> all = judge_readings(r, true);
    for (std::size_t i = 0; i < all.size(); ++i)
        if (kJudges[i].reading == reading) out.push_back(all[i]);
    return out;
}

}  // namespace

bool has_judge(std::string_view id) noexcept { return judge_row(id) != nullptr; }

std::vector<CheckOutcome> judge_readings(const CheckReadings& r, bool with_node) {
    std::vector<CheckOutcome> out;
    std::vector<std::size_t> from_health;
    for (const JudgeRow& j : kJudges) {
        if (j.reading == Reading::node && !with_node) continue;
        out.push_back(judge_one(j, std::string(j.row->name), r));
        if (j.reading == Reading::health && r.device.health) from_health.push_back(out.size() - 1);
        if (j.reading == Reading::kernel_log) out.back().seconds = r.xid.seconds / static_cast<double>(std::max<std::size_t>(1, r.xid.checked.size()));
    }
    // The reading of the figures is shared; each check gets its part.
    for (std::size_t i : from_health) out[i].seconds = r.device.seconds / static_cast<double>(from_health.size());
    return out;
}

CheckOutcome judge_check(std::string_view id, const CheckDeviceFigures& figures, const ThresholdOverrides& overrides) {
    const JudgeRow* j = judge_row(id);
    if (j == nullptr) throw std::logic_error("no judge for check " + std::string(id));
    const CheckNodeFigures node;
    const XidReading xid;
    return judge_one(*j, std::string(id), CheckReadings{figures, node, xid, overrides});
}

std::vector<CheckOutcome> nvml_checks(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides) {
    return judge_reading(figures, overrides, Reading::health);
}

std::vector<CheckOutcome> nvlink_checks(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides) {
    return judge_reading(figures, overrides, Reading::nvlink);
}

// ---------------------------------------------------------------------------
// NVLink's rate, the node's GPUs, the kernel log, p2p's reference

std::optional<double> nvlink_link_gbps(unsigned version) noexcept {
    // Per link and direction: NVLink 1.0 20 GB/s (P100: 4 links, 80 GB/s);
    // 2.0 to 4.0 25 GB/s (V100 6, A100 12, H100 18 links: 450 GB/s); 5.0
    // 50 GB/s (B200: 18 links, 900 GB/s). NVIDIA's datasheets give twice
    // these, both directions together.
    if (version == 1) return 20.0;
    if (version >= 2 && version <= 6) return 25.0;
    if (version == 7) return 50.0;
    return std::nullopt;
}

CheckOutcome node_gpus_check(const CheckNodeFigures& node, const ThresholdOverrides& overrides) {
    const char* id = "node.gpus";
    const std::optional<Threshold> t = threshold_for(id, check_row(id).value, overrides, std::nullopt);
    std::string note;
    if (!node.lost.empty()) note = std::to_string(node.lost.size()) + " lost: " + join(node.lost, "; ");
    if (!t) note += std::string(note.empty() ? "" : "; ") + "no --expect-gpus";
    if (!node.nvml) note += std::string(note.empty() ? "" : "; ") + "without NVML, a lost GPU cannot be seen";
    CheckOutcome o = judged(id, static_cast<double>(node.visible), t, note);
    if (!node.lost.empty()) {
        o.verdict = Verdict::fail;
        o.remediation = Remediation::reboot;  // Xid 79's: a GPU off the bus comes back with the node
    } else if (o.verdict == Verdict::fail) {
        o.remediation = Remediation::reboot;  // a GPU the driver did not bring up
    }
    o.reason = "GPUs visible on the node: " + o.reason;
    return o;
}

CheckOutcome xid_check(const XidScan& scan, const XidWindow& window, const PciAddress& gpu, const std::vector<PciAddress>& checked) {
    constexpr const char* kId = "xid.events";
    if (!scan.why_unreadable.empty()) return unknown_check(kId, scan.why_unreadable);
    std::vector<const XidEvent*> mine;
    std::vector<std::string> others;  // devices no checked GPU is
    std::uint64_t other_count = 0;
    for (const XidEvent& e : window.events) {
        if (same_pci_device(*e.pci, gpu)) {
            mine.push_back(&e);
            continue;
        }
        const bool checked_elsewhere = std::any_of(checked.begin(), checked.end(), [&](const PciAddress& p) { return same_pci_device(*e.pci, p); });
        if (checked_elsewhere) continue;
        ++other_count;
        const std::string name = e.device_text + " Xid " + std::to_string(e.code);
        if (others.size() < 3 && std::find(others.begin(), others.end(), name) == others.end()) others.push_back(name);
    }
    // Worst first: by severity, then by remediation; the log's order among equals.
    std::stable_sort(mine.begin(), mine.end(), [](const XidEvent* a, const XidEvent* b) {
        const auto sa = xid_event_severity(*a), sb = xid_event_severity(*b);
        if (sa != sb) return sa > sb;
        return xid_event_remediation(*a) > xid_event_remediation(*b);
    });
    CheckOutcome out;
    out.id = kId;
    out.kind = &check_row(kId).value;
    out.value = static_cast<double>(mine.size());
    std::string reason;
    if (mine.empty()) {
        out.verdict = Verdict::pass;
        reason = "no Xid events " + window.description;
    } else {
        const XidEvent& worst = *mine.front();
        out.verdict = xid_severity_verdict(xid_event_severity(worst));
        if (out.verdict != Verdict::pass) out.remediation = xid_event_remediation(worst);
        reason = std::to_string(mine.size()) + " Xid event" + (mine.size() == 1 ? "" : "s") + " " + window.description + ", worst first: ";
        std::vector<std::string> shown;
        for (std::size_t i = 0; i < mine.size() && i < 4; ++i) shown.push_back(describe_xid_event(*mine[i]));
        if (mine.size() > shown.size()) shown.push_back("and " + std::to_string(mine.size() - shown.size()) + " more");
        reason += join(shown, "; ");
    }
    reason += " (" + std::to_string(scan.lines) + " lines of " + scan.source;
    if (window.before > 0) reason += "; " + std::to_string(window.before) + " older events left out";
    if (window.not_comparable > 0) reason += "; " + std::to_string(window.not_comparable) + " events with no time to compare, counted";
    reason += ")";
    if (other_count > 0)
        reason += "; " + std::to_string(other_count) + " Xid event" + (other_count == 1 ? "" : "s") + " of devices not checked here (" + join(others) +
                  (other_count > others.size() ? ", ..." : "") + ")";
    if (scan.not_understood > 0)
        reason += "; " + std::to_string(scan.not_understood) + " Xid line" + (scan.not_understood == 1 ? "" : "s") + " not understood (first: '" +
                  scan.not_understood_samples.front() + "')";
    if (scan.events_dropped > 0) reason += "; " + std::to_string(scan.events_dropped) + " events beyond the first " + std::to_string(kMaxXidEvents) + " not read";
    out.reason = one_line(reason);
    return out;
}

std::optional<Reference> p2p_reference(const CheckDeviceFigures& a, const CheckDeviceFigures& b) {
    if (a.nvlink && b.nvlink && a.nvlink->supported && b.nvlink->supported) {
        const NvmlNvLink& la = *a.nvlink;
        const NvmlNvLink& lb = *b.nvlink;
        auto links_to = [](const NvmlNvLink& l, const PciAddress& peer) {
            unsigned direct = 0, to_switch = 0;
            for (std::size_t i = 0; i < l.active.size(); ++i) {
                if (!l.active[i]) continue;
                if (i < l.remote_is_switch.size() && l.remote_is_switch[i]) ++to_switch;
                else if (i < l.remote.size() && l.remote[i] && same_pci_device(*l.remote[i], peer)) ++direct;
            }
            return std::make_pair(direct, to_switch);
        };
        const auto [ab, a_switch] = links_to(la, b.device.pci);
        const auto [ba, b_switch] = links_to(lb, a.device.pci);
        unsigned links = std::min(ab, ba);
        std::string how = "direct";
        if (links == 0 && a_switch > 0 && b_switch > 0) {
            links = std::min(a_switch, b_switch);
            how = "through NVSwitch";
        }
        const std::optional<unsigned> version = la.version && lb.version ? std::optional<unsigned>(std::min(*la.version, *lb.version)) : std::nullopt;
        const std::optional<double> per_link = version ? nvlink_link_gbps(*version) : std::nullopt;
        if (links > 0 && per_link) {
            const double gbps = *per_link * links;
            return Reference{gbps, "NVLink " + nvlink_version_name(*version) + " x" + std::to_string(links) + " (" + how + ")'s " +
                                       format_decimal(gbps, 1) + " GB/s"};
        }
    }
    std::optional<Reference> slower = a.pcie ? pcie_reference(a.pcie->max_generation, a.pcie->max_width) : std::nullopt;
    const std::optional<Reference> other = b.pcie ? pcie_reference(b.pcie->max_generation, b.pcie->max_width) : std::nullopt;
    if (!slower || (other && other->value < slower->value)) slower = other;
    return slower;
}

}  // namespace gpumem
