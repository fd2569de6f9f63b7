// node.gpus and xid.events judged from what check read before any device
// work: the node's GPUs and the kernel log's Xid events.
#include "base/check_readings.hpp"

#include <algorithm>

#include "base/text.hpp"

namespace gpumem {

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

}  // namespace gpumem
