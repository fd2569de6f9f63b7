// The NVML half of `gpumem check`: reading each device's figures without a
// CUDA context, and judging them (nvml_checks, pure).
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <cctype>
#include <chrono>

#include "base/errors.hpp"
#include "base/sizes.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "bench/check_contention.hpp"
#include "bench/check_engine.hpp"
#include "base/xid.hpp"
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

// The NVML checks of one device, in kChecks order.
class HealthJudge {
public:
    HealthJudge(const CheckDeviceFigures& f, const ThresholdOverrides& overrides) : f_(f), overrides_(overrides) {}

    // A count or yes/no figure against its threshold; n/a when not reported.
    template <typename T>
    void figure(const char* id, const std::optional<T>& value, const char* unsupported) {
        if (!value) {
            absent(id, unsupported);
            return;
        }
        out.push_back(judged(id, static_cast<double>(*value), threshold(id, std::nullopt)));
    }

    // A figure NVML did not give: unknown when the call behind it failed
    // (no permission, GPU lost...), n/a when the GPU does not support it.
    void absent(const char* id, const char* unsupported) {
        for (const auto& [function, message] : f_.health->errors)
            if (names_function(check_row(id).value.source, function)) {
                std::string why = function;
                why += " failed: ";
                why += message;
                out.push_back(unknown_check(id, why));
                return;
            }
        out.push_back(not_applicable(id, unsupported));
    }

    void ecc_mode() {
        const NvmlHealth& h = *f_.health;
        if (!h.ecc_enabled) {
            absent("nvml.ecc.mode", "not supported by this GPU (no ECC)");
            return;
        }
        const bool on = *h.ecc_enabled, later = h.ecc_pending.value_or(on);
        std::string note = on ? "ECC on" : "ECC off";
        if (later != on) note += later ? "; on after the next reboot" : "; off after the next reboot";
        CheckOutcome o = judged("nvml.ecc.mode", on ? 1.0 : 0.0, threshold("nvml.ecc.mode", std::nullopt), note);
        if (on && !later) o.verdict = Verdict::warn;
        out.push_back(std::move(o));
    }

    void pcie_link() {
        const char* id = "nvml.pcie.link";
        if (!f_.pcie || f_.pcie->current_width == 0) {
            // A call that failed (no permission, GPU lost) leaves the link
            // unknown; only a GPU that does not report it is n/a.
            for (const char* function : {"nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetCurrPcieLinkWidth"})
                if (const std::string* message = f_.health->error_of(function)) {
                    out.push_back(unknown_check(id, std::string(function) + " failed: " + *message));
                    return;
                }
            out.push_back(not_applicable(id, "not reported by this GPU"));
            return;
        }
        const NvmlPcieLink& l = *f_.pcie;
        const Reference max{static_cast<double>(l.max_width), "the link's maximum"};
        // An idle link lowers its generation to save power: the generation
        // is shown; copy.h2d and copy.d2h judge the rate under load.
        const std::string note = "Gen" + std::to_string(l.current_generation) + " now, Gen" + std::to_string(l.max_generation) +
                                 " at most (an idle link lowers its generation; copy.h2d and copy.d2h judge the rate)";
        out.push_back(judged(id, static_cast<double>(l.current_width), threshold(id, max), note));
    }

    void memory_clock() {
        const char* id = "nvml.memory_clock";
        const NvmlHealth& h = *f_.health;
        if (!h.memory_clock_mhz || !h.memory_clock_max_mhz) {
            absent(id, "not reported by this GPU");
            return;
        }
        const std::uint64_t bad = h.clock_event_reasons ? clock_event_reasons_bad(*h.clock_event_reasons) : 0;
        const Reference max{static_cast<double>(*h.memory_clock_max_mhz), "the maximum memory clock"};
        std::string note;
        if (bad) note = "held back by " + join(clock_event_reason_names(bad));
        CheckOutcome o = judged(id, static_cast<double>(*h.memory_clock_mhz), threshold(id, max), note);
        // A clock below its maximum under normal reasons only (idle, a power
        // cap, application clocks) is operation, not a fault.
        if (o.verdict == Verdict::warn && !bad && !find_override(overrides_, id)) {
            o.verdict = Verdict::pass;
            o.remediation = Remediation::none;
            o.reason += "; only normal clock event reasons (idle, power cap, set clocks) hold it";
        }
        out.push_back(std::move(o));
    }

    // Every reason NVML reports, classified (ClockReasonClass): a fault
    // fails, a warning reason (SW thermal slowdown, a bit this build does
    // not know) warns, normal operation passes. The value is the number of
    // fault reasons, judged against the threshold (0).
    void clock_reasons() {
        const char* id = "nvml.clock_event_reasons";
        const NvmlHealth& h = *f_.health;
        if (!h.clock_event_reasons) {
            absent(id, "not reported by this GPU");
            return;
        }
        const std::uint64_t reasons = *h.clock_event_reasons;
        const std::uint64_t faults = clock_event_reasons_of(reasons, ClockReasonClass::fault);
        const std::uint64_t warnings = clock_event_reasons_of(reasons, ClockReasonClass::warning);
        const std::uint64_t normal = clock_event_reasons_of(reasons, ClockReasonClass::normal);
        std::vector<std::string> parts;
        if (faults) parts.push_back("fault: " + join(clock_event_reason_names(faults)));
        if (warnings) parts.push_back("warning: " + join(clock_event_reason_names(warnings)));
        if (normal) parts.push_back("normal: " + join(clock_event_reason_names(normal)));
        const std::string note = "active: " + (parts.empty() ? std::string("none") : join(parts, "; "));
        CheckOutcome o = judged(id, static_cast<double>(std::bitset<64>(faults).count()), threshold(id, std::nullopt), note);
        if (o.verdict == Verdict::pass && warnings) {
            o.verdict = Verdict::warn;
            o.remediation = Remediation::none;  // hot but within limits: look at the cooling, no need to drain
        }
        out.push_back(std::move(o));
    }

    void processes() {
        const char* id = "nvml.processes";
        if (!f_.processes_known) {
            out.push_back(unknown_check(id, "NVML could not list the processes: " + f_.processes_error));
            return;
        }
        const std::string note = f_.others.empty() ? "" : processes_text(f_.others) + ": results may be disturbed";
        out.push_back(judged(id, static_cast<double>(f_.others.size()), threshold(id, std::nullopt), note));
    }

    // Memory in use beyond the driver's reserve, as NVML saw it before
    // gpumem's own context, with the processes that hold it.
    void memory_in_use() {
        const char* id = "nvml.memory.in_use";
        if (!f_.memory) {
            out.push_back(unknown_check(id, "NVML could not read the memory: " + f_.memory_error));
            return;
        }
        const NvmlMemory& m = *f_.memory;
        std::string note = m.has_reserved ? format_bytes(m.reserved) + " reserved by the driver, not counted"
                                          : "NVML's memory info v2 is unavailable: the figure includes the driver's reserve";
        if (!f_.processes_known)
            note += "; the processes are not known (" + f_.processes_error + ")";
        else if (!f_.others.empty())
            note += "; held by " + processes_text(f_.others);
        else if (m.used > 0)
            note += "; held by none visible (a leak, or a process of another container)";
        out.push_back(judged(id, static_cast<double>(m.used), threshold(id, total_reference(m.total)), note));
    }

    std::vector<CheckOutcome> out;

private:
    std::optional<Threshold> threshold(const std::string& id, const std::optional<Reference>& reference) const {
        return threshold_for(id, check_row(id).value, overrides_, reference);
    }
    const CheckDeviceFigures& f_;
    const ThresholdOverrides& overrides_;
};

constexpr const char* kNoRemap = "not supported by this GPU (remapped rows exist on Ampere and newer)";
constexpr const char* kNoRetire = "not supported by this GPU (pages are retired before Ampere; newer GPUs remap rows)";
constexpr const char* kNoEcc = "not supported by this GPU (no ECC, or ECC off)";

}  // namespace

std::vector<CheckOutcome> nvml_checks(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides) {
    if (!figures.health) {
        std::vector<CheckOutcome> out;
        const std::string why = figures.why_no_nvml.empty() ? "NVML gave no health figures" : figures.why_no_nvml;
        for (const Named<CheckKind>& row : kChecks)
            if (std::string_view(row.name).substr(0, 5) == "nvml.") out.push_back(unknown_check(std::string(row.name), why));
        return out;
    }
    const NvmlHealth& h = *figures.health;
    HealthJudge j(figures, overrides);
    j.ecc_mode();
    j.figure("nvml.ecc.uncorrected.volatile", h.ecc_uncorrected_volatile, kNoEcc);
    j.figure("nvml.ecc.uncorrected.aggregate", h.ecc_uncorrected_aggregate, kNoEcc);
    j.figure("nvml.ecc.corrected.volatile", h.ecc_corrected_volatile, kNoEcc);
    j.figure("nvml.ecc.corrected.aggregate", h.ecc_corrected_aggregate, kNoEcc);
    j.figure("nvml.remapped_rows.correctable", h.remapped_rows_correctable, kNoRemap);
    j.figure("nvml.remapped_rows.uncorrectable", h.remapped_rows_uncorrectable, kNoRemap);
    j.figure("nvml.remapped_rows.pending", h.remapped_rows_pending, kNoRemap);
    j.figure("nvml.remapped_rows.failure", h.remapped_rows_failure, kNoRemap);
    j.figure("nvml.retired_pages.sbe", h.retired_pages_sbe, kNoRetire);
    j.figure("nvml.retired_pages.dbe", h.retired_pages_dbe, kNoRetire);
    j.figure("nvml.retired_pages.pending", h.retired_pages_pending, kNoRetire);
    j.pcie_link();
    j.memory_clock();
    j.clock_reasons();
    j.processes();
    j.memory_in_use();
    // The reading of the figures is shared; each check gets its part.
    for (CheckOutcome& o : j.out) o.seconds = figures.seconds / static_cast<double>(j.out.size());
    return std::move(j.out);
}

// ---------------------------------------------------------------------------
// NVLink, the node's GPUs, p2p's reference

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

namespace {

std::string nvlink_version_name(unsigned version) {
    static const char* const names[] = {"?", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0"};
    return version < 8 ? names[version] : std::to_string(version);
}

}  // namespace

std::vector<CheckOutcome> nvlink_checks(const CheckDeviceFigures& f, const ThresholdOverrides& overrides) {
    const char* const ids[] = {"nvlink.links", "nvlink.replay_errors", "nvlink.recovery_errors", "nvlink.crc_errors"};
    std::vector<CheckOutcome> out;
    auto all = [&](auto make, const std::string& why) {
        for (const char* id : ids) out.push_back(make(id, why));
        return out;
    };
    if (!f.nvlink) {
        if (!f.why_no_nvlink.empty()) return all(unknown_check, f.why_no_nvlink);
        return all(not_applicable, f.why_no_nvml.empty() ? "NVML gave no NVLink figures" : f.why_no_nvml);
    }
    const NvmlNvLink& l = *f.nvlink;
    if (!l.error.empty()) return all(unknown_check, l.error);
    if (!l.supported) return all(not_applicable, "no NVLink: NVML reports no NVLink link on this GPU (PCIe only)");
    auto threshold = [&](const std::string& id, const std::optional<Reference>& reference) {
        return threshold_for(id, check_row(id).value, overrides, reference);
    };
    const unsigned active = l.active_count();
    std::vector<std::string> down;
    for (std::size_t i = 0; i < l.active.size(); ++i)
        if (!l.active[i]) down.push_back(std::to_string(i));
    const bool required = find_override(overrides, "nvlink.links") != nullptr;
    if (active == 0 && !required) {
        // No link up at all: a PCIe card with no NVLink bridge fitted, not a
        // fault; a machine that must have them says so with a threshold.
        out.push_back(not_applicable("nvlink.links", "none of the GPU's " + std::to_string(l.link_count) +
                                                         " NVLink links is active (no bridge or switch connected); "
                                                         "--threshold nvlink.links=N requires N"));
    } else {
        std::string note = std::to_string(active) + " of " + std::to_string(l.link_count) + " active";
        if (l.version) note += ", NVLink " + nvlink_version_name(*l.version);
        if (!down.empty()) note += "; down: link " + join(down, ", ");
        CheckOutcome o = judged("nvlink.links", active, threshold("nvlink.links", Reference{static_cast<double>(l.link_count), "the GPU's links"}),
                                note);
        if (o.verdict == Verdict::fail) o.remediation = Remediation::reset_gpu;
        out.push_back(std::move(o));
    }
    auto counter = [&](const char* id, std::optional<std::uint64_t> value, Remediation remediation) {
        if (!value) {
            out.push_back(not_applicable(id, "not reported by this GPU's NVML"));
            return;
        }
        CheckOutcome o = judged(id, static_cast<double>(*value), threshold(id, std::nullopt), "over every link since the driver loaded");
        if (o.verdict == Verdict::warn || o.verdict == Verdict::fail) o.remediation = remediation;
        out.push_back(std::move(o));
    };
    counter("nvlink.replay_errors", l.replay_errors, Remediation::none);
    counter("nvlink.recovery_errors", l.recovery_errors, Remediation::reset_gpu);
    std::optional<std::uint64_t> crc;
    if (l.crc_flit_errors || l.crc_data_errors) crc = l.crc_flit_errors.value_or(0) + l.crc_data_errors.value_or(0);
    counter("nvlink.crc_errors", crc, Remediation::service);
    return out;
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
