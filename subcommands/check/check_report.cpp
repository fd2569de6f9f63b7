// gpumem check's report: a row per (device, check) with its verdict, value,
// threshold and reason; a row per device with the worst verdict and counts;
// the run's level, strictness, verdict and time; and the same as Prometheus
// metrics.
#include "check/check_report.hpp"

#include <algorithm>
#include <cmath>

#include "base/text.hpp"

namespace gpumem::cli {
namespace {

// One check of one device.
struct CheckLine {
    const CheckDeviceResult* device;
    const CheckOutcome* check;
};

Cell index_cell(const DeviceIdentity& d) { return std::int64_t{d.cuda_index.value().ordinal()}; }

std::vector<std::string_view> verdict_names() { return kVerdicts.name_list(); }
std::vector<std::string_view> comparison_names() { return {">=", "<=", "=="}; }
std::vector<std::string_view> remediation_names() { return kRemediations.name_list(); }

const CheckKind& kind_of(const CheckLine& l) { return *l.check->kind; }

constexpr Column<CheckLine> kCheckColumns[] = {
    {{"index", "gpu", FieldKind::integer}, [](const CheckLine& l) -> Cell { return index_cell(l.device->device); }},
    {{"uuid", "", FieldKind::text}, [](const CheckLine& l) -> Cell { return l.device->device.uuid; }, Shown::machine_only},
    {{"name", "", FieldKind::text}, [](const CheckLine& l) -> Cell { return l.device->device.name; }, Shown::machine_only},
    {{"check", "check", FieldKind::text}, [](const CheckLine& l) -> Cell { return l.check->id; }},
    {{"verdict", "verdict", FieldKind::text}, [](const CheckLine& l) -> Cell { return std::string(verdict_name(l.check->verdict)); },
     Shown::always, false, nullptr, verdict_names},
    {{"value", "", FieldKind::real}, [](const CheckLine& l) -> Cell { return optional_cell(l.check->value); }, Shown::machine_only},
    {{"shown_value", "value", FieldKind::text},
     [](const CheckLine& l) -> Cell { return l.check->value ? Cell(format_check_value(kind_of(l), *l.check->value)) : Cell(); },
     Shown::table_only},
    {{"unit", "", FieldKind::text}, [](const CheckLine& l) -> Cell { return std::string(kind_of(l).unit); }, Shown::machine_only},
    {{"threshold", "", FieldKind::real}, [](const CheckLine& l) -> Cell { return optional_cell(l.check->threshold); },
     Shown::machine_only},
    {{"shown_threshold", "threshold", FieldKind::text},
     [](const CheckLine& l) -> Cell {
         if (!l.check->threshold) return Cell();
         return std::string(comparison_symbol(kind_of(l).comparison)) + " " + format_check_value(kind_of(l), *l.check->threshold);
     },
     Shown::table_only},
    {{"comparison", "", FieldKind::text},
     [](const CheckLine& l) -> Cell { return std::string(comparison_symbol(kind_of(l).comparison)); }, Shown::machine_only, false,
     nullptr, comparison_names},
    {{"seconds", "s", FieldKind::real, 3}, [](const CheckLine& l) -> Cell { return l.check->seconds; }},
    {{"remediation", "remedy", FieldKind::text},
     [](const CheckLine& l) -> Cell { return std::string(remediation_name(l.check->remediation)); }, Shown::always, false, nullptr,
     remediation_names},
    {{"reason", "reason", FieldKind::text, 2, ' '}, [](const CheckLine& l) -> Cell { return l.check->reason; }},
};

// One device: its checks counted, and the time they took.
struct DeviceLine {
    const CheckDeviceResult* device;
    VerdictCounts counts;
    double seconds = 0;
};

DeviceLine device_line(const CheckDeviceResult& d) {
    DeviceLine line{&d, count_verdicts(d.checks), 0};
    for (const CheckOutcome& c : d.checks) line.seconds += c.seconds;
    return line;
}

constexpr Column<DeviceLine> kDeviceColumns[] = {
    {{"index", "gpu", FieldKind::integer}, [](const DeviceLine& l) -> Cell { return index_cell(l.device->device); }},
    {{"uuid", "uuid", FieldKind::text}, [](const DeviceLine& l) -> Cell { return l.device->device.uuid; }},
    {{"name", "name", FieldKind::text}, [](const DeviceLine& l) -> Cell { return l.device->device.name; }},
    {{"pci_bus_id", "", FieldKind::text}, [](const DeviceLine& l) -> Cell { return l.device->device.pci.to_string(); },
     Shown::machine_only},
    {{"verdict", "verdict", FieldKind::text}, [](const DeviceLine& l) -> Cell { return std::string(verdict_name(l.counts.worst)); },
     Shown::always, false, nullptr, verdict_names},
    {{"passed", "pass", FieldKind::integer}, [](const DeviceLine& l) -> Cell { return l.counts.passed; }},
    {{"warned", "warn", FieldKind::integer}, [](const DeviceLine& l) -> Cell { return l.counts.warned; }},
    {{"failed", "fail", FieldKind::integer}, [](const DeviceLine& l) -> Cell { return l.counts.failed; }},
    {{"na", "n/a", FieldKind::integer}, [](const DeviceLine& l) -> Cell { return l.counts.na; }},
    {{"unknown", "unknown", FieldKind::integer}, [](const DeviceLine& l) -> Cell { return l.counts.unknown; }},
    {{"remediation", "remedy", FieldKind::text},
     [](const DeviceLine& l) -> Cell { return std::string(remediation_name(l.counts.remediation)); }, Shown::always, false, nullptr,
     remediation_names},
    {{"seconds", "s", FieldKind::real, 2}, [](const DeviceLine& l) -> Cell { return l.seconds; }},
};

struct CheckDocument {
    const CheckRequest& request;
    const CheckResults& results;
};

// The run's verdict: its devices' worst. A run that judged no device (no
// driver, no GPU, stopped before the first) is unknown, not n/a: a fleet
// tool must not read "not applicable" as nothing to worry about.
Verdict run_verdict(const CheckResults& r) {
    if (r.devices.empty()) return Verdict::unknown;
    Verdict worst = Verdict::na;
    for (const CheckDeviceResult& d : r.devices) worst = worse(worst, count_verdicts(d.checks).worst);
    return worst;
}

constexpr Column<CheckDocument> kDocumentColumns[] = {
    {{"level", "", FieldKind::text},
     [](const CheckDocument& d) -> Cell { return std::string(kCheckLevels.name_of(d.request.settings.level)); }, Shown::always, false,
     nullptr, [] { return kCheckLevels.name_list(); }},
    {{"strict", "", FieldKind::boolean}, [](const CheckDocument& d) -> Cell { return d.request.settings.strict; }},
    {{"verdict", "", FieldKind::text}, [](const CheckDocument& d) -> Cell { return std::string(verdict_name(run_verdict(d.results))); },
     Shown::always, false, nullptr, verdict_names},
    {{"seconds", "", FieldKind::real}, [](const CheckDocument& d) -> Cell { return d.results.seconds; }},
};

// ---------------------------------------------------------------------------
// Prometheus

// A value in the base unit Prometheus names expect, and that unit.
std::pair<double, std::string> base_unit(const CheckKind& kind, double value) {
    if (kind.unit == "GB/s") return {value * 1e9, "bytes_per_second"};
    if (kind.unit == "MHz") return {value * 1e6, "hertz"};
    if (kind.unit == "s") return {value, "seconds"};
    return {value, std::string(kind.unit)};
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// An enum as Prometheus states it: one sample per name of `table`, labelled
// `label`="name", 1 on `current` and 0 on the others.
template <typename T>
void add_state_samples(MetricFamily& family, const Labels& labels, const char* label, const NameTable<T>& table, T current) {
    for (const Named<T>& row : table) {
        Labels with = labels;
        with.emplace_back(label, std::string(row.name));
        family.samples.push_back({with, row.value == current ? 1.0 : 0.0});
    }
}

std::vector<MetricFamily> check_metrics(const std::vector<CheckLine>& lines) {
    MetricFamily pass{"gpumem_check_pass", "1 when the check passed, 0 when it warned or failed (no sample when n/a).", MetricType::gauge, {}};
    MetricFamily verdict{"gpumem_check_verdict", "The check's verdict: 1 on the current one of pass, warn, fail, n/a and unknown.",
                         MetricType::gauge, {}};
    MetricFamily value{"gpumem_check_value", "The value the check measured, in the base unit of its unit label.", MetricType::gauge, {}};
    MetricFamily threshold{"gpumem_check_threshold", "The threshold the value was judged against, in the unit of its unit label.",
                           MetricType::gauge, {}};
    MetricFamily seconds{"gpumem_check_duration_seconds", "How long the check took.", MetricType::gauge, {}};
    MetricFamily remediation{"gpumem_check_remediation",
                             "What a warned or failed check asks for: 1 on the current one of none, drain, reset-gpu, reboot "
                             "and service.",
                             MetricType::gauge, {}};
    for (const CheckLine& l : lines) {
        const DeviceIdentity& d = l.device->device;
        const CheckOutcome& c = *l.check;
        const Labels labels{{"gpu", std::to_string(d.cuda_index.value().ordinal())}, {"uuid", d.uuid}, {"name", d.name}, {"check", c.id}};
        if (c.verdict != Verdict::na) pass.samples.push_back({labels, c.verdict == Verdict::pass ? 1.0 : 0.0});
        add_state_samples(remediation, labels, "remediation", kRemediations, c.remediation);
        add_state_samples(verdict, labels, "verdict", kVerdicts, c.verdict);
        auto unit_labels = [&](double figure) {
            const auto [scaled, unit] = base_unit(*c.kind, figure);
            Labels with = labels;
            with.emplace_back("unit", unit);
            return MetricSample{with, scaled};
        };
        if (c.value) value.samples.push_back(unit_labels(*c.value));
        if (c.threshold) threshold.samples.push_back(unit_labels(*c.threshold));
        seconds.samples.push_back({labels, c.seconds});
    }
    return {pass, verdict, value, threshold, seconds, remediation};
}

// Each device's worst verdict and remediation: what an alert or a drain
// rule reads without walking every check.
std::vector<MetricFamily> device_metrics(const std::vector<CheckDeviceResult>& devices) {
    MetricFamily verdict{"gpumem_check_device_verdict", "The device's worst verdict: 1 on the current one of pass, warn, fail, n/a and unknown.",
                         MetricType::gauge, {}};
    MetricFamily remediation{"gpumem_check_device_remediation",
                             "The worst remediation the device's checks ask for: 1 on the current one of none, drain, reset-gpu, "
                             "reboot and service.",
                             MetricType::gauge, {}};
    for (const CheckDeviceResult& d : devices) {
        const VerdictCounts counts = count_verdicts(d.checks);
        const Labels labels{{"gpu", std::to_string(d.device.cuda_index.value().ordinal())}, {"uuid", d.device.uuid}, {"name", d.device.name}};
        add_state_samples(verdict, labels, "verdict", kVerdicts, counts.worst);
        add_state_samples(remediation, labels, "remediation", kRemediations, counts.remediation);
    }
    return {verdict, remediation};
}

// ---------------------------------------------------------------------------
// Nagios

// A figure as performance data writes it: whole for bytes, counts, lanes
// and MHz, else at most three decimals.
std::string perf_number(const CheckKind& kind, double v) {
    const bool whole = kind.unit == "bytes" || kind.unit == "count" || kind.unit == "bool" || kind.unit == "lanes" || kind.unit == "MHz";
    return whole ? format_decimal(std::round(v), 0) : format_decimal(v, 3);
}

// A performance datum's range (Nagios plugin guidelines): "T:" alerts below
// T, "T" outside 0..T, "T:T" anything but T.
std::string nagios_range(const CheckKind& kind, double threshold) {
    std::string t = perf_number(kind, threshold);
    switch (kind.comparison) {
        case Comparison::at_least: return t + ":";
        case Comparison::at_most: return t;
        case Comparison::equal: return t + ":" + t;
    }
    return t;
}

// 'gpu0 copy.h2d'=55.3;;47.3:;0; in the check's unit (bytes as B, seconds
// as s, other units in the label since Nagios knows no GB/s).
std::string perf_datum(const DeviceIdentity& d, const CheckOutcome& c) {
    const CheckKind& kind = *c.kind;
    std::string label = "gpu" + std::to_string(d.cuda_index.value().ordinal()) + " " + c.id;
    std::string uom;
    if (kind.unit == "bytes") uom = "B";
    else if (kind.unit == "s") uom = "s";
    else if (kind.unit != "count" && kind.unit != "bool") label += " " + std::string(kind.unit);
    const std::string value = perf_number(kind, *c.value);
    std::string warn, crit;
    if (c.threshold) (kind.beyond == Verdict::warn ? warn : crit) = nagios_range(kind, *c.threshold);
    return "'" + label + "'=" + value + uom + ";" + warn + ";" + crit + ";0;";
}

Report::PluginOutput check_nagios(const CheckRequest& q, const CheckResults& results) {
    std::size_t checks = 0;
    std::vector<std::string> worst_lines, perf;
    Verdict worst = Verdict::na;
    for (const CheckDeviceResult& d : results.devices) worst = worse(worst, count_verdicts(d.checks).worst);
    for (const CheckDeviceResult& d : results.devices)
        for (const CheckOutcome& c : d.checks) {
            ++checks;
            if (c.value) perf.push_back(perf_datum(d.device, c));
            if (c.verdict == worst && (worst == Verdict::fail || worst == Verdict::warn || worst == Verdict::unknown)) {
                std::string line = "GPU " + to_string(d.device.cuda_index.value()) + " " + c.id + ": " + c.reason;
                if (c.remediation != Remediation::none) line += " [" + std::string(remediation_name(c.remediation)) + "]";
                worst_lines.push_back(line);
            }
        }
    int status = 0;
    std::string word = "OK";
    if (worst == Verdict::fail) status = 2, word = "CRITICAL";
    else if (worst == Verdict::unknown) status = 3, word = "UNKNOWN";
    else if (worst == Verdict::warn) status = 1, word = "WARNING";
    std::string summary;
    if (worst_lines.empty()) {
        summary = std::to_string(checks) + " checks on " + std::to_string(results.devices.size()) + " GPU(s): none warned or failed";
    } else {
        summary = std::to_string(worst_lines.size()) + " " + std::string(verdict_name(worst)) + ": ";
        std::vector<std::string> shown(worst_lines.begin(), worst_lines.begin() + std::min<std::size_t>(3, worst_lines.size()));
        if (worst_lines.size() > shown.size()) shown.emplace_back("...");
        summary += join(shown, "; ");
    }
    summary += " (level " + std::string(kCheckLevels.name_of(q.settings.level)) + (q.settings.strict ? ", --strict" : "") + ", " +
               format_decimal(results.seconds, 2) + " s)";
    // The status line holds no '|' but the one before the performance data.
    for (char& ch : summary)
        if (ch == '|') ch = '/';
    std::string text = "GPUMEM " + word + " - " + one_line(summary);
    if (!perf.empty()) text += " | " + join(perf, " ");
    return {status, text};
}

// ---------------------------------------------------------------------------
// node-problem-detector

// NPD's custom plugin contract: exit 0 OK, 1 NonOK (the node condition
// becomes true), anything else unknown; stdout is the condition's message,
// cut at max_output_length bytes (80 by default). A warning needs no
// action on the node, so it is OK, as a pass is.
int npd_status(Verdict worst) noexcept {
    if (worst == Verdict::fail) return 1;
    if (worst == Verdict::unknown) return 2;
    return 0;
}

// The line, most useful first since NPD cuts its end: the verdict, the
// worst check (of the worst verdict, the one with the worst remediation)
// and its GPU, how many checks and GPUs share that verdict when several do,
// the remediation, then the check's reason.
//   FAIL fill.verify on GPU 1: service; 2 > 0 (default); first bad word at 0x...
//   FAIL copy.h2d on GPU 3 [4 checks on 2 of 8 GPUs]: drain; 31.2 GB/s < 47.3 GB/s...
//   PASS 25 checks on 1 GPU (level quick, 0.42 s)
Report::PluginOutput check_npd(const CheckRequest& q, const CheckResults& results) {
    const Verdict worst = run_verdict(results);
    const std::string level = std::string(kCheckLevels.name_of(q.settings.level)) + (q.settings.strict ? ", --strict" : "");
    const std::size_t gpus = results.devices.size();
    auto gpus_text = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); };
    if (worst != Verdict::fail && worst != Verdict::warn && worst != Verdict::unknown) {
        std::size_t checks = 0;
        for (const CheckDeviceResult& d : results.devices) checks += d.checks.size();
        return {0, npd_line("PASS " + std::to_string(checks) + " checks on " + gpus_text(gpus) + " (level " + level + ", " +
                            format_decimal(results.seconds, 2) + " s)")};
    }
    const CheckDeviceResult* shown_device = nullptr;
    const CheckOutcome* shown = nullptr;
    std::size_t checks = 0, devices = 0;
    for (const CheckDeviceResult& d : results.devices) {
        bool here = false;
        for (const CheckOutcome& c : d.checks) {
            if (c.verdict != worst) continue;
            ++checks;
            here = true;
            // The first of the worst remediation: a later check replaces it only when strictly worse.
            if (shown == nullptr || worse_remediation(shown->remediation, c.remediation) != shown->remediation) {
                shown = &c;
                shown_device = &d;
            }
        }
        devices += here;
    }
    const std::string word = worst == Verdict::fail ? "FAIL" : worst == Verdict::warn ? "WARN" : "UNKNOWN";
    // No device judged (no driver, a run stopped before the first): unknown, with nothing to name.
    if (shown == nullptr) return {npd_status(worst), npd_line(word + " no GPU was checked (level " + level + ")")};
    std::string line = word + " " + shown->id + " on GPU " + to_string(shown_device->device.cuda_index.value());
    if (devices > 1) line += " [" + std::to_string(checks) + " checks on " + std::to_string(devices) + " of " + gpus_text(gpus) + "]";
    else if (checks > 1) line += " [" + std::to_string(checks) + " checks]";
    line += ": ";
    if (shown->remediation != Remediation::none) line += std::string(remediation_name(shown->remediation)) + "; ";
    line += shown->reason;
    return {npd_status(worst), npd_line(line)};
}

std::string device_name(const DeviceIdentity& d) { return "GPU " + to_string(d.cuda_index.value()) + " (" + d.uuid + ")"; }

}  // namespace

Report check_report(const CheckRequest& q, const CheckResults& results, const OutputOptions& output) {
    Report r;
    r.command = "check";
    std::vector<CheckLine> lines;
    std::vector<DeviceLine> devices;
    for (const CheckDeviceResult& d : results.devices) {
        devices.push_back(device_line(d));
        for (const CheckOutcome& c : d.checks) lines.push_back({&d, &c});
    }
    r.tables.push_back(make_table("checks", Columns<CheckLine>(kCheckColumns), lines, output.format));
    // A narrow terminal keeps the verdict, the figures and why (--wide and --json the rest).
    r.tables.back().drop_order = {"seconds", "remediation", "shown_threshold"};
    r.tables.push_back(make_table("devices", Columns<DeviceLine>(kDeviceColumns), devices, output.format));
    const CheckDocument document{q, results};
    r.fields = make_record(Columns<CheckDocument>(kDocumentColumns), document);
    r.text_after.push_back("verdict: " + std::string(verdict_name(run_verdict(results))) + " (level " +
                           std::string(kCheckLevels.name_of(q.settings.level)) + (q.settings.strict ? ", --strict" : "") + ", " +
                           format_decimal(results.seconds, 2) + " s)");
    if (output.format == Format::prometheus) {
        r.metrics = check_metrics(lines);
        for (MetricFamily& f : device_metrics(results.devices)) r.metrics.push_back(std::move(f));
    }
    if (output.format == Format::nagios) r.plugin = check_nagios(q, results);
    if (output.format == Format::npd) r.plugin = check_npd(q, results);
    return r;
}

DocumentSchema check_schema() {
    return {"check",
            {{"checks", Columns<CheckLine>(kCheckColumns).schema()}, {"devices", Columns<DeviceLine>(kDeviceColumns).schema()}},
            Columns<CheckDocument>(kDocumentColumns).schema()};
}

std::vector<std::string> check_failure_lines(const CheckResults& results) {
    std::vector<std::string> lines;
    for (const CheckDeviceResult& d : results.devices)
        for (const CheckOutcome& c : d.checks)
            if (c.verdict == Verdict::fail) lines.push_back(device_name(d.device) + ": " + c.id + ": " + c.reason);
    return lines;
}

std::string check_failure_summary(const CheckResults& results) {
    std::size_t failed = 0, checks = 0, devices = 0;
    std::vector<std::string> named;
    for (const CheckDeviceResult& d : results.devices) {
        std::size_t here = 0;
        for (const CheckOutcome& c : d.checks) {
            ++checks;
            if (c.verdict != Verdict::fail) continue;
            ++here;
            if (named.size() < 3) named.push_back(c.id + " on GPU " + to_string(d.device.cuda_index.value()));
        }
        failed += here;
        devices += here > 0;
    }
    if (failed == 0) return "";
    if (failed > named.size()) named.push_back("...");
    return std::to_string(failed) + " of " + std::to_string(checks) + " checks failed on " + std::to_string(devices) + " of " +
           std::to_string(results.devices.size()) + " GPU(s): " + join(named);
}

// Each check with the levels that run it and its default threshold: what
// --list checks prints.
NameListView check_list() {
    static const std::vector<std::string> texts = [] {
        std::vector<std::string> t;
        for (const Named<CheckKind>& row : kChecks) {
            const CheckKind& k = row.value;
            std::string rule(k.unit);
            rule += k.rule == ThresholdRule::none ? std::string(": ") : " " + std::string(comparison_symbol(k.comparison)) + " ";
            t.push_back(std::string(row.help) + " [" + std::string(levels_text(k.level)) + "; " + rule + std::string(k.threshold) +
                        "; remediation " + std::string(remediation_name(k.remediation)) + "; source: " + std::string(k.source) + "]");
        }
        return t;
    }();
    NameListView view{kChecks.what(), {}};
    std::size_t i = 0;
    for (const Named<CheckKind>& row : kChecks) view.rows.emplace_back(row.name, texts[i++]);
    return view;
}

Table check_list_table() {
    Table table;
    table.key = "names";
    // name and description first, as every list has them (completions read those two).
    // Six columns of prose and NVML function names cannot share 100 columns:
    // on a terminal each check is a block of its own.
    table.as_records = true;
    table.fields = {{"name", "name", FieldKind::text},
                    {"description", "description", FieldKind::text, 2, ' '},
                    {"levels", "levels", FieldKind::text, 2, ' '},
                    {"threshold", "default threshold", FieldKind::text, 2, ' '},
                    {"remediation", "remediation", FieldKind::text},
                    {"source", "source", FieldKind::text, 2, ' '}};
    for (const Named<CheckKind>& row : kChecks) {
        const CheckKind& k = row.value;
        std::string rule(k.unit);
        rule += k.rule == ThresholdRule::none ? std::string(": ") : " " + std::string(comparison_symbol(k.comparison)) + " ";
        table.add_row({std::string(row.name), std::string(row.help), std::string(levels_text(k.level)), rule + std::string(k.threshold),
                       std::string(remediation_name(k.remediation)), std::string(k.source)});
    }
    return table;
}

NameListView check_level_list() { return view_of(kCheckLevels); }

// The Xid catalog xid.events judges by: each code's verdict and remediation,
// the catalog's immediate action, its description and mnemonic, and why
// gpumem departs from the action's rule where it does.
namespace {

struct XidListRow {
    const XidCode* row;
    std::string name;  // the code as --list shows it
    std::string text;  // the one line a person reads (the list's description)
};

std::string xid_text(const XidCode& c) {
    const XidJudgement j = xid_judgement(c);
    const std::string_view action = xid_action_row(c.action).name;
    std::string text = c.action == XidAction::xid_154 ? std::string("by the recovery action its line names")
                                                      : std::string(xid_severity_name(j.severity)) +
                                                            (j.severity == XidSeverity::info ? "" : ", " + std::string(remediation_words(j.remediation)));
    text += " [" + (action.empty() ? std::string("no action in the catalog") : std::string(action)) + "]: " + std::string(c.description) + " (" +
            std::string(c.mnemonic) + ")";
    if (!c.why_departs.empty()) text += "; gpumem departs: " + std::string(c.why_departs);
    return text;
}

const std::vector<XidListRow>& xid_list_rows() {
    static const std::vector<XidListRow> rows = [] {
        std::vector<XidListRow> r;
        r.reserve(xid_catalog().size());
        for (const XidCode& c : xid_catalog()) r.push_back({&c, std::to_string(c.code), xid_text(c)});
        return r;
    }();
    return rows;
}

// Xid 154's verdict is the recovery action its line names: no one value.
bool judged_by_line(const XidCode& c) { return c.action == XidAction::xid_154; }
Cell text_or_null(std::string_view text) { return text.empty() ? Cell() : Cell(std::string(text)); }

// The text table keeps a person's two columns; JSON and CSV also carry each
// fact on its own, for a fleet's tools that map Xids themselves.
constexpr Column<XidListRow> kXidListColumns[] = {
    {{"name", "name", FieldKind::text}, [](const XidListRow& x) -> Cell { return x.name; }},
    {{"description", "description", FieldKind::text, 2, ' '}, [](const XidListRow& x) -> Cell { return x.text; }},
    {{"code", "", FieldKind::integer}, [](const XidListRow& x) -> Cell { return std::uint64_t{x.row->code}; }, Shown::machine_only},
    {{"mnemonic", "", FieldKind::text}, [](const XidListRow& x) { return text_or_null(x.row->mnemonic); }, Shown::machine_only},
    {{"catalog_description", "", FieldKind::text}, [](const XidListRow& x) { return text_or_null(x.row->description); }, Shown::machine_only},
    {{"immediate_action", "", FieldKind::text},
     [](const XidListRow& x) { return text_or_null(xid_action_row(x.row->action).name); }, Shown::machine_only},
    {{"verdict", "", FieldKind::text},
     [](const XidListRow& x) -> Cell {
         return judged_by_line(*x.row) ? Cell() : Cell(std::string(verdict_name(xid_severity_verdict(xid_judgement(*x.row).severity))));
     },
     Shown::machine_only},
    {{"remediation", "", FieldKind::text},
     [](const XidListRow& x) -> Cell {
         return judged_by_line(*x.row) ? Cell() : Cell(std::string(remediation_name(xid_judgement(*x.row).remediation)));
     },
     Shown::machine_only},
    {{"rule", "", FieldKind::text}, [](const XidListRow& x) { return text_or_null(xid_action_row(x.row->action).why); }, Shown::machine_only},
    {{"departs", "", FieldKind::text}, [](const XidListRow& x) { return text_or_null(x.row->why_departs); }, Shown::machine_only},
};

}  // namespace

NameListView xid_list() {
    NameListView view{"Xid code", {}};
    for (const XidListRow& x : xid_list_rows()) view.rows.emplace_back(x.name, x.text);
    return view;
}

Table xid_list_table(Format format) { return make_table("names", Columns<XidListRow>(kXidListColumns), xid_list_rows(), format); }

}  // namespace gpumem::cli
