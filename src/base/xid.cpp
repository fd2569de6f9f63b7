#include "base/xid.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>

#include "base/errors.hpp"
#include "base/quantities.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"

namespace gpumem {

std::string_view xid_severity_name(XidSeverity severity) noexcept {
    switch (severity) {
        case XidSeverity::info: return "info";
        case XidSeverity::warn: return "warn";
        case XidSeverity::critical: return "critical";
    }
    return "?";
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int days_in_month(int year, int month) {
    constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : kDays[month - 1];
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim_spaces(std::string_view s) {
    while (!s.empty() && (is_space(s.front()) || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (is_space(s.back()) || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
    return s;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool contains_nocase(std::string_view text, std::string_view word) {
    if (word.size() > text.size()) return false;
    for (std::size_t i = 0; i + word.size() <= text.size(); ++i) {
        bool same = true;
        for (std::size_t j = 0; j < word.size() && same; ++j)
            same = std::tolower(static_cast<unsigned char>(text[i + j])) == std::tolower(static_cast<unsigned char>(word[j]));
        if (same) return true;
    }
    return false;
}

// A run of digits at the start of `s` as a number (at most `max_digits`).
std::optional<std::uint64_t> leading_number(std::string_view& s, std::size_t max_digits) {
    std::size_t n = 0;
    std::uint64_t v = 0;
    while (n < s.size() && is_digit(s[n])) {
        if (n == max_digits) return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(s[n] - '0');
        ++n;
    }
    if (n == 0) return std::nullopt;
    s.remove_prefix(n);
    return v;
}

// "YYYY-MM-DDTHH:MM[:SS[.frac|,frac]][Z|+HH:MM|+HHMM]" at the start of `s`
// (a space may stand for the T): seconds since 1970, the text it took, and
// whether it named a zone. Local time without one.
struct IsoTime {
    std::int64_t epoch = 0;
    std::size_t length = 0;
};
std::optional<IsoTime> parse_iso_time(std::string_view s, bool require_zone) {
    std::string_view p = s;
    auto field = [&](std::size_t digits, char after) -> std::optional<int> {
        if (p.size() < digits) return std::nullopt;
        int v = 0;
        for (std::size_t i = 0; i < digits; ++i) {
            if (!is_digit(p[i])) return std::nullopt;
            v = v * 10 + (p[i] - '0');
        }
        p.remove_prefix(digits);
        if (after != 0) {
            if (p.empty() || (p.front() != after && !(after == 'T' && p.front() == ' '))) return std::nullopt;
            p.remove_prefix(1);
        }
        return v;
    };
    const auto year = field(4, '-');
    const auto month = year ? field(2, '-') : std::nullopt;
    const auto day = month ? field(2, 'T') : std::nullopt;
    const auto hour = day ? field(2, ':') : std::nullopt;
    const auto minute = hour ? field(2, 0) : std::nullopt;
    if (!minute) return std::nullopt;
    int second = 0;
    if (!p.empty() && p.front() == ':') {
        p.remove_prefix(1);
        const auto s2 = field(2, 0);
        if (!s2) return std::nullopt;
        second = *s2;
        if (!p.empty() && (p.front() == '.' || p.front() == ',')) {
            p.remove_prefix(1);
            if (p.empty() || !is_digit(p.front())) return std::nullopt;
            while (!p.empty() && is_digit(p.front())) p.remove_prefix(1);
        }
    }
    // A day its month has (2026-02-30 is no date; timegm would read it as
    // March 2nd), a leap second at most.
    if (*month < 1 || *month > 12 || *day < 1 || *day > days_in_month(*year, *month) || *hour > 23 || *minute > 59 || second > 60)
        return std::nullopt;
    std::tm tm{};
    tm.tm_year = *year - 1900;
    tm.tm_mon = *month - 1;
    tm.tm_mday = *day;
    tm.tm_hour = *hour;
    tm.tm_min = *minute;
    tm.tm_sec = second;
    std::optional<int> offset;  // seconds east of UTC
    if (!p.empty() && (p.front() == 'Z' || p.front() == 'z')) {
        p.remove_prefix(1);
        offset = 0;
    } else if (!p.empty() && (p.front() == '+' || p.front() == '-')) {
        const int sign = p.front() == '+' ? 1 : -1;
        p.remove_prefix(1);
        const auto oh = field(2, 0);
        if (!oh) return std::nullopt;
        if (!p.empty() && p.front() == ':') p.remove_prefix(1);
        const auto om = field(2, 0);
        if (!om || *oh > 23 || *om > 59) return std::nullopt;
        offset = sign * (*oh * 3600 + *om * 60);
    }
    if (require_zone && !offset) return std::nullopt;
    IsoTime t;
    if (offset) {
        t.epoch = static_cast<std::int64_t>(timegm(&tm)) - *offset;
    } else {
        tm.tm_isdst = -1;
        t.epoch = static_cast<std::int64_t>(std::mktime(&tm));
    }
    t.length = s.size() - p.size();
    return t;
}

constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// The time a line's prefix (what comes before "NVRM:") gives, into `e`.
// /dev/kmsg: "6,1234,5678901,-;"; klogctl: "<4>"; dmesg: "[ 1234.567890]";
// dmesg -T: "[Wed Nov 25 05:00:00 2026]"; journalctl -o short-iso and
// dmesg --time-format iso: "2026-11-25T05:00:00+0000"; syslog and
// journalctl: "Nov 25 05:00:00 host kernel: [ 12.3]".
void read_prefix_time(std::string_view prefix, XidEvent& e) {
    std::string_view p = prefix;
    // /dev/kmsg: prio,seq,usec,flags;
    if (const std::size_t semi = p.find(';'); semi != std::string_view::npos && !p.empty() && is_digit(p.front())) {
        std::string_view f = p.substr(0, semi);
        std::string_view q = f;
        const auto prio = leading_number(q, 10);
        if (prio && !q.empty() && q.front() == ',') {
            q.remove_prefix(1);
            const auto seq = leading_number(q, 20);
            if (seq && !q.empty() && q.front() == ',') {
                q.remove_prefix(1);
                if (const auto usec = leading_number(q, 20)) {
                    e.uptime = static_cast<double>(*usec) / 1e6;
                    e.time_text = format_decimal(*e.uptime, 3) + " s after boot";
                    return;
                }
            }
        }
    }
    if (starts_with(p, "<")) {  // klogctl's <prio>
        const std::size_t close = p.find('>');
        if (close < 5) p.remove_prefix(close + 1);  // npos is never < 5
    }
    if (const auto iso = parse_iso_time(p, true)) {
        e.epoch = iso->epoch;
        e.time_text = std::string(p.substr(0, iso->length));
        p.remove_prefix(iso->length);
    } else if (p.size() >= 15) {
        for (std::string_view m : kMonths)
            if (starts_with(p, m) && p[3] == ' ') {
                e.time_text = std::string(p.substr(0, 15));  // "Nov 25 05:00:00"
                break;
            }
    }
    // "[ 1234.567890]" anywhere in the prefix: time since boot. "[Wed Nov 25 ...]": as text.
    for (std::size_t open = p.find('['); open != std::string_view::npos; open = p.find('[', open + 1)) {
        const std::size_t close = p.find(']', open);
        if (close == std::string_view::npos) break;
        const std::string_view inside = trim_spaces(p.substr(open + 1, close - open - 1));
        std::string_view q = inside;
        const auto whole = leading_number(q, 12);
        if (whole && !q.empty() && q.front() == '.') {
            q.remove_prefix(1);
            std::string_view frac = q;
            const std::size_t digits = frac.size();
            if (leading_number(q, 9) && q.empty()) {
                e.uptime = static_cast<double>(*whole) + std::stod("0." + std::string(frac.substr(0, digits)));
                if (e.time_text.empty()) e.time_text = format_decimal(*e.uptime, 3) + " s after boot";
                return;
            }
        } else if (e.time_text.empty() && inside.size() >= 20 && inside.size() <= 30) {
            e.time_text = std::string(inside);  // dmesg -T
        }
    }
}

// Xid 154's recovery action: "... changed from 0x0 (None) to 0x1 (GPU Reset Required)".
std::optional<Remediation> recovery_action_of(std::string_view detail) {
    std::size_t to = std::string_view::npos;
    for (std::size_t at = detail.find(" to "); at != std::string_view::npos; at = detail.find(" to ", at + 1)) to = at;
    std::string_view action = to == std::string_view::npos ? detail : detail.substr(to + 4);
    if (contains_nocase(action, "reboot")) return Remediation::reboot;
    if (contains_nocase(action, "reset")) return Remediation::reset_gpu;  // "GPU Reset Required", "Drain and Reset"
    if (contains_nocase(action, "drain")) return Remediation::drain;      // "Drain P2P"
    if (contains_nocase(action, "none")) return Remediation::none;
    return std::nullopt;
}

std::string cut(std::string_view s, std::size_t n) {
    std::string out(s.substr(0, n));
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    if (s.size() > n) out += "...";
    return out;
}

}  // namespace

bool same_pci_device(const PciAddress& a, const PciAddress& b) noexcept {
    return a.domain == b.domain && a.bus == b.bus && a.device == b.device;
}

KernelLine parse_kernel_log_line(std::string_view line) {
    KernelLine out;
    constexpr std::string_view kMarker = "NVRM: Xid";
    const std::size_t at = line.find(kMarker);
    if (at == std::string_view::npos) {
        // Another driver, another NVRM message, or an Xid line mangled past recognition.
        const std::size_t nvrm = line.find("NVRM");
        if (nvrm != std::string_view::npos && line.find("Xid", nvrm) != std::string_view::npos) out.kind = KernelLineKind::not_understood;
        return out;
    }
    out.kind = KernelLineKind::not_understood;
    XidEvent& e = out.event;
    read_prefix_time(line.substr(0, at), e);
    std::string_view p = line.substr(at + kMarker.size());
    while (!p.empty() && is_space(p.front())) p.remove_prefix(1);
    // "(PCI:0000:18:00)" (the device), then ": CODE, text".
    if (p.empty() || p.front() != '(') return out;
    const std::size_t close = p.find(')');
    if (close == std::string_view::npos) return out;
    std::string_view device = trim_spaces(p.substr(1, close - 1));
    e.device_text = cut(device, 40);
    std::string_view id = device.substr(0, device.find(' '));  // "PCI:0000:18:00" before any further words
    if (starts_with(id, "PCI:") || starts_with(id, "pci:")) id.remove_prefix(4);
    std::string pci_text(id);
    if (pci_text.find('.') == std::string::npos) pci_text += ".0";
    e.pci = parse_pci_address(pci_text);
    p.remove_prefix(close + 1);
    if (p.empty() || p.front() != ':') return out;
    p.remove_prefix(1);
    while (!p.empty() && is_space(p.front())) p.remove_prefix(1);
    const auto code = leading_number(p, 5);
    if (!code || *code > 65535) return out;
    if (!p.empty() && p.front() != ',' && !is_space(p.front()) && p.front() != '\r') return out;
    e.code = static_cast<unsigned>(*code);
    if (!p.empty() && p.front() == ',') p.remove_prefix(1);
    e.detail = cut(trim_spaces(p), 160);
    if (e.code == 154) e.recovery_action = recovery_action_of(p);
    if (!e.pci) return out;  // an Xid whose device gpumem cannot read
    out.kind = KernelLineKind::xid;
    return out;
}

void XidScanner::add_line(std::string_view line) {
    ++scan_.lines;
    KernelLine l = parse_kernel_log_line(line);
    if (l.kind == KernelLineKind::other) {
        // Still a clock: the latest time of the log, for --xid-since durations.
        if (line.find('[') != std::string_view::npos || (!line.empty() && is_digit(line.front()))) {
            XidEvent t;
            read_prefix_time(line.substr(0, 64), t);
            if (t.uptime) scan_.last_uptime = std::max(scan_.last_uptime.value_or(0), *t.uptime);
            if (t.epoch) scan_.last_epoch = std::max<std::int64_t>(scan_.last_epoch.value_or(0), *t.epoch);
        }
        return;
    }
    if (l.kind == KernelLineKind::not_understood) {
        ++scan_.not_understood;
        if (scan_.not_understood_samples.size() < 3) scan_.not_understood_samples.push_back(cut(trim_spaces(line), 100));
        return;
    }
    if (l.event.uptime) scan_.last_uptime = std::max(scan_.last_uptime.value_or(0), *l.event.uptime);
    if (l.event.epoch) scan_.last_epoch = std::max<std::int64_t>(scan_.last_epoch.value_or(0), *l.event.epoch);
    if (scan_.events.size() >= kMaxXidEvents) {
        ++scan_.events_dropped;
        return;
    }
    scan_.events.push_back(std::move(l.event));
}

XidScan scan_kernel_log_text(std::string_view text, const std::string& source) {
    XidScanner scanner(source);
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        scanner.add_line(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return scanner.finish();
}

XidSince parse_xid_since(std::string_view text) {
    const std::string shown(text);
    XidSince since;
    since.text = shown;
    const std::string_view s = trim_spaces(text);
    if (s == "boot") return since;
    const std::string expected = "expected 'boot', a duration (30m, 6h, 2d, 1h30m) or a time (2026-11-25T05:00:00, Z or +01:00 for a zone)";
    if (s.empty() || !(is_digit(s.front()) || s.front() == '.')) throw UsageError("--xid-since '" + shown + "': " + expected);
    // A time begins with its year: 2026-...
    const bool dated = s.size() > 4 && std::all_of(s.begin(), s.begin() + 4, is_digit) && s[4] == '-';
    if (!dated) {
        // A duration, in the grammar of every duration option.
        try {
            since.seconds = parse_duration(s, 1.0);
        } catch (const UsageError& e) {
            throw UsageError("--xid-since '" + shown + "': " + e.what() + "; " + expected);
        }
        since.kind = XidSince::Kind::duration;
        return since;
    }
    const auto iso = parse_iso_time(s, false);
    if (!iso || iso->length != s.size())
        throw UsageError("--xid-since '" + shown + "': not a time: expected YYYY-MM-DDTHH:MM[:SS], a day its month has, hours 00-23, "
                         "minutes 00-59, then Z or +01:00 for a zone or nothing for local time");
    since.kind = XidSince::Kind::time;
    since.epoch = iso->epoch;
    return since;
}

XidWindow xid_window(const XidScan& scan, const XidSince& since, const std::optional<XidClock>& clock) {
    XidWindow w;
    if (since.kind == XidSince::Kind::boot) {
        w.events = scan.events;
        w.description = clock ? "since boot" : "in the whole log";
        return w;
    }
    // The cut-off on each of the two clocks a line may carry.
    std::optional<double> min_uptime;
    std::optional<std::int64_t> min_epoch;
    if (since.kind == XidSince::Kind::duration) {
        w.description = "in the last " + since.text;
        if (clock) {
            min_uptime = clock->uptime - since.seconds;
            min_epoch = clock->epoch - static_cast<std::int64_t>(since.seconds);
        } else {
            w.description += " of the log";
            if (scan.last_uptime) min_uptime = *scan.last_uptime - since.seconds;
            if (scan.last_epoch) min_epoch = *scan.last_epoch - static_cast<std::int64_t>(since.seconds);
        }
    } else {
        w.description = "since " + since.text;
        min_epoch = since.epoch;
        if (clock) min_uptime = clock->uptime - static_cast<double>(clock->epoch - since.epoch);
    }
    for (const XidEvent& e : scan.events) {
        bool keep = true;
        if (e.epoch && min_epoch) {
            keep = *e.epoch >= *min_epoch;
        } else if (e.uptime && min_uptime) {
            keep = *e.uptime >= *min_uptime;
        } else {
            ++w.not_comparable;
        }
        if (keep) {
            w.events.push_back(e);
        } else {
            ++w.before;
        }
    }
    return w;
}

XidSeverity xid_event_severity(const XidEvent& e) noexcept {
    if (e.code == 154) {
        if (!e.recovery_action) return XidSeverity::warn;
        switch (*e.recovery_action) {
            case Remediation::none: return XidSeverity::info;  // the action was cleared
            case Remediation::drain: return XidSeverity::warn;
            default: return XidSeverity::critical;
        }
    }
    const XidCode* c = xid_code(e.code);
    return c ? xid_judgement(*c).severity : XidSeverity::warn;
}

Remediation xid_event_remediation(const XidEvent& e) noexcept {
    if (e.code == 154) return e.recovery_action.value_or(Remediation::drain);
    const XidCode* c = xid_code(e.code);
    return c ? xid_judgement(*c).remediation : Remediation::drain;
}

Verdict xid_severity_verdict(XidSeverity s) noexcept {
    switch (s) {
        case XidSeverity::info: return Verdict::pass;
        case XidSeverity::warn: return Verdict::warn;
        case XidSeverity::critical: return Verdict::fail;
    }
    return Verdict::warn;
}

namespace {

std::string meaning_of(const XidEvent& e) {
    if (e.code == 154) {
        std::string action = e.detail;
        if (const std::size_t to = action.rfind(" to "); to != std::string::npos) action = action.substr(to + 4);
        return "GPU recovery action changed to " + action + (e.recovery_action ? "" : " (an action gpumem does not know)");
    }
    const XidCode* c = xid_code(e.code);
    if (!c) return "Xid " + std::to_string(e.code) + " is not in gpumem's catalog";
    // The catalog describes its unused codes as "Unused": the mnemonic says more.
    if (c->description == "Unused") return std::string(c->mnemonic) + ", a code the catalog marks unused";
    return std::string(c->description);
}

}  // namespace

std::string describe_xid_event(const XidEvent& e) {
    std::string s = "Xid " + std::to_string(e.code);
    if (!e.time_text.empty()) s += " at " + e.time_text;
    s += " (" + meaning_of(e);
    const Remediation r = xid_event_remediation(e);
    if (xid_event_severity(e) != XidSeverity::info && r != Remediation::none) s += "; " + std::string(remediation_words(r));
    return s + ")";
}

std::string_view remediation_words(Remediation r) noexcept {
    switch (r) {
        case Remediation::none: return "no action";
        case Remediation::drain: return "drain the node";
        case Remediation::reset_gpu: return "reset the GPU";
        case Remediation::reboot: return "reboot the node";
        case Remediation::service: return "send for service";
    }
    return "";
}

}  // namespace gpumem
