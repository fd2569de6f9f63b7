// The first half of `gpumem check`: reading each device's figures without a
// CUDA context, and judging them with the judges their rows of kChecks hold
// (base/check_table.hpp); NVLink's rate and p2p's reference.
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

// The row of quick-level check `id`, whose judge it holds; null for any other.
const Named<CheckKind>* judged_row(std::string_view id) noexcept {
    for (const Named<CheckKind>& row : kCheckRows)
        if (row.value.judge != nullptr && row.name == id) return &row;
    return nullptr;
}

// One check: the figures its judge needs, or why it cannot be judged.
CheckOutcome judge_one(const CheckKind& kind, const std::string& id, const CheckReadings& r) {
    const CheckDeviceFigures& f = r.device;
    if (kind.reading == CheckReading::health && !f.health)
        return unknown_check(id, f.why_no_nvml.empty() ? "NVML gave no health figures" : f.why_no_nvml);
    if (kind.reading == CheckReading::nvlink && !f.nvlink) {
        if (!f.why_no_nvlink.empty()) return unknown_check(id, f.why_no_nvlink);
        return not_applicable(id, f.why_no_nvml.empty() ? "NVML gave no NVLink figures" : f.why_no_nvml);
    }
    return kind.judge(id, r);
}

// The checks of one kind of reading, for one device with no node and no log.
std::vector<CheckOutcome> judge_reading(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides, CheckReading reading) {
    const CheckNodeFigures node;
    const XidReading xid;
    const CheckReadings r{figures, node, xid, overrides};
    std::vector<CheckOutcome> out;
    // With the node's, judge_readings gives one outcome per judged row, in the table's order.
    const std::vector<CheckOutcome> all = judge_readings(r, true);
    std::size_t next = 0;
    for (const Named<CheckKind>& row : kCheckRows) {
        if (row.value.judge == nullptr) continue;
        if (row.value.reading == reading) out.push_back(all[next]);
        ++next;
    }
    return out;
}

}  // namespace

bool has_judge(std::string_view id) noexcept { return judged_row(id) != nullptr; }

std::vector<CheckOutcome> judge_readings(const CheckReadings& r, bool with_node) {
    std::vector<CheckOutcome> out;
    std::vector<std::size_t> from_health;
    for (const Named<CheckKind>& row : kCheckRows) {
        const CheckKind& kind = row.value;
        if (kind.judge == nullptr || (kind.reading == CheckReading::node && !with_node)) continue;
        out.push_back(judge_one(kind, std::string(row.name), r));
        if (kind.reading == CheckReading::health && r.device.health) from_health.push_back(out.size() - 1);
        if (kind.reading == CheckReading::kernel_log)
            out.back().seconds = r.xid.seconds / static_cast<double>(std::max<std::size_t>(1, r.xid.checked.size()));
    }
    // The reading of the figures is shared; each check gets its part.
    for (std::size_t i : from_health) out[i].seconds = r.device.seconds / static_cast<double>(from_health.size());
    return out;
}

CheckOutcome judge_check(std::string_view id, const CheckDeviceFigures& figures, const ThresholdOverrides& overrides) {
    const Named<CheckKind>* row = judged_row(id);
    if (row == nullptr) throw std::logic_error("no judge for check " + std::string(id));
    const CheckNodeFigures node;
    const XidReading xid;
    return judge_one(row->value, std::string(id), CheckReadings{figures, node, xid, overrides});
}

std::vector<CheckOutcome> nvml_checks(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides) {
    return judge_reading(figures, overrides, CheckReading::health);
}

std::vector<CheckOutcome> nvlink_checks(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides) {
    return judge_reading(figures, overrides, CheckReading::nvlink);
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
