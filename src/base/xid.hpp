// Xid events: what the NVIDIA driver writes to the kernel log when a GPU
// meets an error ("NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen
// off the bus."). The parser of kernel log lines in the forms operators save
// them (dmesg, dmesg -T, /dev/kmsg records, journalctl -k, syslog), the
// catalog of codes with a severity and a remediation each, and the
// --xid-since window. Pure: no I/O, no CUDA, no NVML; core/kernel_log reads
// the live log (/dev/kmsg) or a saved one, and bench/check_health judges
// xid.events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check_plan.hpp"
#include "base/device_spec.hpp"

namespace gpumem {

// How bad an Xid is: info passes (reported), warn warns, critical fails.
enum class XidSeverity { info, warn, critical };
std::string_view xid_severity_name(XidSeverity severity) noexcept;

// The "Immediate Action" of NVIDIA's Xid catalog (Ampere and newer), and
// `none` for the codes whose cell the catalog leaves empty.
enum class XidAction {
    restart_app, ignore, reset_gpu, restart_bm, restart_vm, contact_support, check_mechanicals, update_swfw, check_uvm,
    workflow_xid_45, workflow_xid_48, workflow_nvlink_err, workflow_nvlink5_err, xid_154, none,
};
// What gpumem makes of an Xid: its severity and the remediation a warn or
// fail asks for.
struct XidJudgement {
    XidSeverity severity = XidSeverity::warn;
    Remediation remediation = Remediation::none;
};
// The one rule (kXidActions in xid_catalog.cpp): RESTART_APP and IGNORE are
// no fault of the node (info); RESET_GPU fails with reset-gpu; RESTART_BM
// and RESTART_VM fail with reboot; CONTACT_SUPPORT and CHECK_MECHANICALS
// fail with service; each WORKFLOW_ as its workflow says; an action that
// asks a person to look (UPDATE_SWFW, CHECK_UVM, none) warns with drain.
struct XidActionRow {
    XidAction action;
    std::string_view name;   // "RESTART_APP", as the catalog writes it ("" for none)
    XidJudgement judgement;
    std::string_view why;    // what the action or its workflow asks, in words
};
const std::vector<XidActionRow>& xid_actions();
const XidActionRow& xid_action_row(XidAction action) noexcept;

// A row of the Xid catalog (kXidCatalog in xid_catalog.cpp): the catalog's
// facts, and where gpumem departs from its action's rule, the judgement it
// gives instead and why.
struct XidCode {
    constexpr XidCode() noexcept = default;
    // A row that follows the rule, or (with `why`) departs from it.
    constexpr XidCode(unsigned c, std::string_view m, std::string_view d, XidAction a, XidJudgement dep = {}, std::string_view why = {}) noexcept
        : code(c), mnemonic(m), description(d), action(a), departure(dep), why_departs(why) {}
    unsigned code = 0;
    std::string_view mnemonic;     // ROBUST_CHANNEL_GPU_ECC_DBE
    std::string_view description;  // the catalog's ("Double Bit ECC Error")
    XidAction action = XidAction::none;
    XidJudgement departure{};      // used only when `why_departs` is set
    std::string_view why_departs;
};
// The row's judgement: its departure, else its action's rule.
XidJudgement xid_judgement(const XidCode& row) noexcept;
// Every code the catalog knows, in increasing order.
const std::vector<XidCode>& xid_catalog();
// The row of `code`; nullptr for a code the catalog does not know (which
// warns with drain, naming the code).
const XidCode* xid_code(unsigned code) noexcept;

// One Xid line of the kernel log.
struct XidEvent {
    std::optional<PciAddress> pci;  // the device the driver names (function 0)
    std::string device_text;        // as written: "PCI:0000:18:00"
    unsigned code = 0;
    std::string detail;             // the text after the code, cut to 160 characters
    std::optional<double> uptime;   // seconds since boot (dmesg's [  12.3], /dev/kmsg's microseconds)
    std::optional<std::int64_t> epoch;  // seconds since 1970 (ISO 8601 timestamps: journalctl -o short-iso, dmesg --time-format iso)
    std::string time_text;          // the time as the line gives it, for reasons; empty when none
    // Xid 154: the recovery action the driver asks for, from its text
    // ("GPU Reset Required", "Node Reboot Required", "Drain P2P", "Drain and
    // Reset", "None"); empty when the text names none gpumem knows.
    std::optional<Remediation> recovery_action;
};

// What one line of a kernel log is.
enum class KernelLineKind {
    other,           // not an Xid line (another driver, another NVRM message)
    xid,             // an Xid event, in `event`
    not_understood,  // mentions an NVRM Xid but is cut short or in a form gpumem does not know
};
struct KernelLine {
    KernelLineKind kind = KernelLineKind::other;
    XidEvent event;
};
// One line of a kernel log in any of the forms above (without its newline).
KernelLine parse_kernel_log_line(std::string_view line);

// The Xid events of a whole log, with what could not be read counted.
struct XidScan {
    std::string source;  // "/dev/kmsg", "klogctl" or the file's path
    std::vector<XidEvent> events;
    std::uint64_t lines = 0;
    std::uint64_t not_understood = 0;
    std::vector<std::string> not_understood_samples;  // the first few, cut short
    std::uint64_t events_dropped = 0;  // beyond kMaxXidEvents: counted, not kept
    std::optional<double> last_uptime;       // the latest time in the log of each kind
    std::optional<std::int64_t> last_epoch;
    // Set when the log could not be read (not permitted): the check is unknown.
    std::string why_unreadable;
};
inline constexpr std::size_t kMaxXidEvents = 100000;

// Feeds lines one at a time (the file and /dev/kmsg readers use it).
class XidScanner {
public:
    explicit XidScanner(std::string source) { scan_.source = std::move(source); }
    void add_line(std::string_view line);
    XidScan finish() { return std::move(scan_); }

private:
    XidScan scan_;
};
// Every line of `text`.
XidScan scan_kernel_log_text(std::string_view text, const std::string& source);

// --xid-since: "boot" (everything in the log), a duration (30m, 6h, 2d), or
// a time (2026-11-25T05:00:00, with Z or +01:00 for a zone; local time
// without one).
struct XidSince {
    enum class Kind { boot, duration, time };
    Kind kind = Kind::boot;
    double seconds = 0;      // Kind::duration
    std::int64_t epoch = 0;  // Kind::time
    std::string text = "boot";
};
XidSince parse_xid_since(std::string_view text);

// The clock of the running machine, to place /dev/kmsg's times since boot
// (core/kernel_log reads it).
struct XidClock {
    double uptime = 0;       // seconds since boot now
    std::int64_t epoch = 0;  // seconds since 1970 now
};

// The events of `scan` within `since`. A live log (`clock` given) places each
// event by its time since boot. A saved log has no "now": a duration counts
// back from the latest time in the file (of the same kind), and a time is
// compared with ISO timestamps only; events whose time cannot be compared
// are kept and counted in `not_comparable`.
struct XidWindow {
    std::vector<XidEvent> events;
    std::uint64_t before = 0;          // events left out, older than the window
    std::uint64_t not_comparable = 0;  // kept: no time to compare
    std::string description;           // "since boot", "in the last 1h", "since 2026-11-25T05:00:00"
};
XidWindow xid_window(const XidScan& scan, const XidSince& since, const std::optional<XidClock>& clock);

// A remediation in words, for reasons: "reset the GPU".
std::string_view remediation_words(Remediation remediation) noexcept;

// The severity and remediation of one event (Xid 154 by its recovery action).
XidSeverity xid_event_severity(const XidEvent& event) noexcept;
Remediation xid_event_remediation(const XidEvent& event) noexcept;

// The verdict of an event of this severity: info passes, warn warns,
// critical fails.
Verdict xid_severity_verdict(XidSeverity severity) noexcept;
// One event for a reason: "Xid 79 at 12.3 s after boot (GPU has fallen off
// the bus; reboot the node)".
std::string describe_xid_event(const XidEvent& event);

// Whether an Xid's device is the GPU at `gpu` (domain, bus and device; the
// driver leaves out the function).
bool same_pci_device(const PciAddress& a, const PciAddress& b) noexcept;

}  // namespace gpumem
