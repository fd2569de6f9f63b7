#include "base/check_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/quantities.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"

namespace gpumem {

constexpr Named<CheckLevel> kCheckLevelRows[] = {
    {"quick", CheckLevel::quick, "NVML health only: no CUDA context, under a second"},
    {"standard", CheckLevel::standard,
     "NVML health, then a context, the largest allocation, fill and verify of half the free memory, memset, copy and p2p "
     "bandwidth: seconds per node"},
    {"long", CheckLevel::deep, "as standard, and the memtest86 set over 90% of the free memory"},
};
const NameTable<CheckLevel> kCheckLevels{"check level", kCheckLevelRows};

constexpr Named<Verdict> kVerdictRows[] = {
    {"pass", Verdict::pass, "the value meets its threshold"},
    {"warn", Verdict::warn, "worth a look; a failure under --strict"},
    {"fail", Verdict::fail, "the check failed: gpumem exits 7"},
    {"n/a", Verdict::na, "not supported by the GPU or driver, or not possible here (no peer access): never a failure"},
    {"unknown", Verdict::unknown,
     "the check could not run (an NVML call failed or was refused, a file could not be read, no CUDA context): worse than "
     "warn, a failure under --strict"},
};
const NameTable<Verdict> kVerdicts{"verdict", kVerdictRows};

constexpr Named<Remediation> kRemediationRows[] = {
    {"none", Remediation::none, "nothing to do: the check passed, or its warning needs no action"},
    {"drain", Remediation::drain, "drain the node: no new jobs until someone looks (a slow link, memory held, a throttled clock)"},
    {"reset-gpu", Remediation::reset_gpu,
     "reset the GPU (nvidia-smi -r, or a reboot where it cannot be reset): clears volatile errors and applies a pending remap"},
    {"reboot", Remediation::reboot, "reboot the node: a pending page retirement, a state a GPU reset does not clear"},
    {"service", Remediation::service, "send the GPU or node for service (RMA): a remap failed, memory returns bad words"},
};
const NameTable<Remediation> kRemediations{"remediation", kRemediationRows};

namespace {

constexpr std::string_view kP2pPrefix = "p2p.";
constexpr unsigned kMostGpus = 4096;

std::string percent_text(double fraction) { return format_decimal(fraction * 100, 1) + "%"; }

}  // namespace

std::string_view verdict_name(Verdict verdict) noexcept { return kVerdicts.name_of(verdict); }

namespace {
int severity(Verdict v) noexcept {
    switch (v) {
        case Verdict::na: return 0;
        case Verdict::pass: return 1;
        case Verdict::warn: return 2;
        case Verdict::unknown: return 3;
        case Verdict::fail: return 4;
    }
    return 0;
}
}  // namespace

Verdict worse(Verdict a, Verdict b) noexcept { return severity(a) >= severity(b) ? a : b; }

std::string_view remediation_name(Remediation remediation) noexcept { return kRemediations.name_of(remediation); }

Remediation worse_remediation(Remediation a, Remediation b) noexcept { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

Verdict worst_of(const std::vector<Verdict>& verdicts) noexcept {
    Verdict worst = Verdict::na;
    for (Verdict v : verdicts) worst = worse(worst, v);
    return worst;
}

std::string_view comparison_symbol(Comparison comparison, bool holds) noexcept {
    switch (comparison) {
        case Comparison::at_least: return holds ? ">=" : "<";
        case Comparison::at_most: return holds ? "<=" : ">";
        case Comparison::equal: return holds ? "==" : "!=";
    }
    return "?";
}

const Named<CheckKind>& check_row(std::string_view id) {
    if (id.substr(0, kP2pPrefix.size()) == kP2pPrefix) {
        const std::string_view pair = id.substr(kP2pPrefix.size());
        const std::size_t dash = pair.find('-');
        auto index = [&](std::string_view digits) {
            if (digits.empty() || digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
                throw UsageError("check '" + std::string(id) + "': a p2p check is p2p.A-B with A and B CUDA device indices");
            return std::stoi(std::string(digits));
        };
        if (dash == std::string_view::npos) index("");
        if (index(pair.substr(0, dash)) == index(pair.substr(dash + 1)))
            throw UsageError("check '" + std::string(id) + "': a p2p check joins two different devices");
        for (const Named<CheckKind>& row : kChecks)
            if (row.value.per_pair) return row;
    }
    return kChecks.row(id);
}

const Named<CheckKind>* find_check_row(std::string_view id) noexcept {
    if (id.substr(0, kP2pPrefix.size()) == kP2pPrefix) {
        const std::string_view pair = id.substr(kP2pPrefix.size());
        const std::size_t dash = pair.find('-');
        auto index_text = [](std::string_view digits) {
            return !digits.empty() && digits.size() <= 4 &&
                   std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
        };
        if (dash == std::string_view::npos || !index_text(pair.substr(0, dash)) || !index_text(pair.substr(dash + 1)))
            return nullptr;
        // "p2p.1-01" is the same device twice.
        auto number = [](std::string_view digits) {
            int n = 0;
            for (char c : digits) n = n * 10 + (c - '0');
            return n;
        };
        if (number(pair.substr(0, dash)) == number(pair.substr(dash + 1))) return nullptr;
        for (const Named<CheckKind>& row : kChecks)
            if (row.value.per_pair) return &row;
        return nullptr;
    }
    return kChecks.find(id);
}

std::string p2p_check_id(int source, int destination) {
    return std::string(kP2pPrefix) + std::to_string(source) + "-" + std::to_string(destination);
}

bool runs_at(const CheckKind& kind, CheckLevel level) noexcept { return static_cast<int>(level) >= static_cast<int>(kind.level); }

std::string_view levels_text(CheckLevel lowest) noexcept {
    switch (lowest) {
        case CheckLevel::quick: return "every level";
        case CheckLevel::standard: return "standard and long";
        case CheckLevel::deep: return "long";
    }
    return "";
}

void require_runs_at(const std::string& id, CheckLevel level) {
    const CheckKind& kind = check_row(id == "p2p" ? p2p_check_id(0, 1) : id).value;
    if (runs_at(kind, level)) return;
    throw UsageError("--threshold " + id + ": " + id + " does not run at --level " + std::string(kCheckLevels.name_of(level)) +
                     " (it runs at " + std::string(levels_text(kind.level)) + ")");
}

// ---------------------------------------------------------------------------
// Thresholds given by the user

namespace {

// The most a threshold of each unit can sensibly be; beyond it the value is
// a typing error.
double unit_ceiling(std::string_view unit) {
    if (unit == "GB/s") return 1e6;  // 1 PB/s
    if (unit == "bytes") return static_cast<double>(kLargestBufferBytes);
    if (unit == "MHz") return 1e6;
    if (unit == "s") return 86400;
    if (unit == "lanes") return 64;
    return 9007199254740992.0;  // counts: 2^53, exact in a double
}

// `text` without the unit `suffix` (any case) at its end, if it has it.
std::string_view without_suffix(std::string_view text, std::string_view suffix) {
    if (text.size() < suffix.size()) return text;
    const std::string_view tail = text.substr(text.size() - suffix.size());
    for (std::size_t i = 0; i < suffix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(tail[i])) != std::tolower(static_cast<unsigned char>(suffix[i]))) return text;
    return text.substr(0, text.size() - suffix.size());
}

// What --threshold accepts for a check of this unit, for error messages.
std::string_view unit_examples(std::string_view unit) {
    if (unit == "GB/s") return "45, 45GB/s or 45000MB/s";
    if (unit == "bytes") return "120GiB or 128849018880";
    if (unit == "s") return "10, 10s or 500ms";
    if (unit == "lanes") return "16 or x16";
    if (unit == "MHz") return "1500 or 1500MHz";
    if (unit == "bool") return "0 or 1";
    return "0 or 3";
}

double number_in_unit(std::string_view unit, std::string_view text) {
    if (unit == "bytes") return static_cast<double>(parse_size(text, true));
    if (unit == "GB/s") {
        const std::string_view rate = without_suffix(text, "/s");
        if (rate.size() != text.size()) return static_cast<double>(parse_size(rate, true)) / 1e9;
        return parse_real(text);  // a bare number is in GB/s
    }
    // A time in seconds is a TIME, as every duration option takes it (0 too).
    if (unit == "s") return parse_duration(text, 1.0, true);
    if (unit == "lanes") {
        if (!text.empty() && (text[0] == 'x' || text[0] == 'X')) text.remove_prefix(1);
        text = without_suffix(text, "lanes");
    } else if (unit != "count") {
        text = without_suffix(text, unit);
    }
    // A count is an N of VALUES: decimal or 0x hexadecimal (--expect-gpus 0x8).
    const std::string_view digits = trim(text);
    if ((unit == "count" || unit == "lanes") && digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
        return static_cast<double>(parse_unsigned(digits, std::uint64_t{1} << 53));
    const double v = parse_real(text);
    if ((unit == "count" || unit == "lanes") && v != std::floor(v)) throw UsageError("'" + std::string(text) + "' is not a whole number");
    return v;
}

}  // namespace

double parse_threshold_value(const Named<CheckKind>& row, std::string_view text) {
    const CheckKind& kind = row.value;
    const std::string what = "threshold of " + std::string(row.name);
    if (kind.rule == ThresholdRule::unsettable)
        throw UsageError(std::string(row.name) + " takes no threshold (" + std::string(row.help) + ")");
    double v = 0;
    try {
        v = number_in_unit(kind.unit, text);
    } catch (const UsageError& e) {
        // One message whatever the parser said: what was wrong and what is
        // right; a size's fraction of a byte is said as the size rule says it.
        if (!text.empty() && text[0] == '-') throw UsageError(what + " '" + std::string(text) + "' is negative");
        if (std::string_view(e.what()).find("a fraction of a byte") != std::string_view::npos)
            throw UsageError(what + ": " + e.what());
        throw UsageError(what + ": '" + std::string(text) + "' is not a value in " + std::string(kind.unit) +
                         " (such as " + std::string(unit_examples(kind.unit)) + ")");
    }
    if (v < 0) throw UsageError(what + " '" + std::string(text) + "' is negative");
    if (row.name == kExpectedGpusCheck && (v < 1 || v > kMostGpus))
        throw UsageError(what + " '" + std::string(text) + "': a node has at least 1 GPU (and at most " + std::to_string(kMostGpus) + ")");
    if (v > unit_ceiling(kind.unit))
        throw UsageError(what + " '" + std::string(text) + "' is beyond any GPU (at most " +
                         format_check_value(kind, unit_ceiling(kind.unit)) + ")");
    return v;
}

double parse_expect_gpus(std::string_view text) {
    try {
        return parse_threshold_value(check_row(kExpectedGpusCheck), text);
    } catch (const UsageError&) {
        throw UsageError("--expect-gpus '" + std::string(text) + "': expected a whole number of GPUs, at least 1 (and at most " +
                         std::to_string(kMostGpus) + ")");
    }
}

std::pair<std::string, double> parse_threshold_option(std::string_view text) {
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
        throw UsageError("--threshold '" + std::string(text) + "': expected ID=VALUE, such as copy.h2d=45GB/s");
    const std::string id(text.substr(0, eq));
    const Named<CheckKind>& row = id == "p2p" ? check_row(p2p_check_id(0, 1)) : check_row(id);
    return {id, parse_threshold_value(row, text.substr(eq + 1))};
}

ThresholdOverrides parse_threshold_file_text(const std::string& text, const std::string& name) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(name + ": not JSON: " + one_line(e.what()));
    }
    if (!doc.is_object()) throw UsageError(name + ": expected a JSON object of check ids to thresholds, such as {\"copy.h2d\": \"45GB/s\"}");
    ThresholdOverrides overrides;
    for (const auto& [key, value] : doc.items()) {
        // "expect-gpus", as the option is named, is node.gpus's threshold.
        const std::string id = key == "expect-gpus" ? std::string(kExpectedGpusCheck) : key;
        try {
            if (overrides.count(id) != 0) throw UsageError(id + " given twice (expect-gpus is node.gpus)");
            // A key is a check id or expect-gpus: a typo of either is offered the nearest.
            if (id != "p2p" && id.rfind(kP2pPrefix, 0) != 0 && kChecks.find(id) == nullptr) {
                std::vector<std::string_view> keys = kChecks.name_list();
                keys.emplace_back("expect-gpus");
                throw UsageError("unknown check '" + id + "' (expected a check id of gpumem --list checks, p2p, or expect-gpus)" +
                                 did_you_mean(id, keys));
            }
            const Named<CheckKind>& row = id == "p2p" ? check_row(p2p_check_id(0, 1)) : check_row(id);
            double v = 0;
            if (value.is_string()) {
                v = parse_threshold_value(row, value.get<std::string>());
            } else if (value.is_number()) {
                const nlohmann::json as_text = value;
                v = parse_threshold_value(row, as_text.dump());
            } else {
                throw UsageError("the threshold of " + id + " must be a number or a string with a unit");
            }
            overrides[id] = ThresholdOverride{v, name};
        } catch (const UsageError& e) {
            throw UsageError(name + ": " + e.what());
        }
    }
    return overrides;
}

ThresholdOverrides merge_threshold_options(const std::vector<std::string>& options, ThresholdOverrides overrides) {
    std::vector<std::string> seen;
    for (const std::string& option : options) {
        auto [id, value] = parse_threshold_option(option);
        if (std::find(seen.begin(), seen.end(), id) != seen.end()) throw UsageError("--threshold " + id + " given twice");
        seen.push_back(id);
        overrides[id] = ThresholdOverride{value, "--threshold"};
    }
    return overrides;
}

const ThresholdOverride* find_override(const ThresholdOverrides& overrides, const std::string& id) {
    if (auto it = overrides.find(id); it != overrides.end()) return &it->second;
    if (id.substr(0, kP2pPrefix.size()) == kP2pPrefix)
        if (auto it = overrides.find("p2p"); it != overrides.end()) return &it->second;
    return nullptr;
}

// ---------------------------------------------------------------------------
// Default thresholds

std::optional<double> pcie_rate_bps(unsigned generation, unsigned width) noexcept {
    // GT/s per lane and the share of bits that carry data (8b/10b, 128b/130b, FLIT).
    double gts = 0, encoding = 0;
    switch (generation) {
        case 1: gts = 2.5, encoding = 0.8; break;
        case 2: gts = 5, encoding = 0.8; break;
        case 3: gts = 8, encoding = 128.0 / 130; break;
        case 4: gts = 16, encoding = 128.0 / 130; break;
        case 5: gts = 32, encoding = 128.0 / 130; break;
        case 6: gts = 64, encoding = 242.0 / 256; break;
        default: return std::nullopt;
    }
    if (width == 0) return std::nullopt;
    return gts * 1e9 * encoding * width / 8;
}

std::optional<Reference> pcie_reference(std::optional<unsigned> max_generation, std::optional<unsigned> max_width) {
    if (!max_generation || !max_width) return std::nullopt;
    const std::optional<double> bps = pcie_rate_bps(*max_generation, *max_width);
    if (!bps) return std::nullopt;
    const double gbps = *bps / 1e9;
    return Reference{gbps, "PCIe Gen" + std::to_string(*max_generation) + " x" + std::to_string(*max_width) + "'s " +
                               format_decimal(gbps, 1) + " GB/s"};
}

std::optional<Reference> peak_reference(std::optional<double> peak_bps, ThresholdRule rule) {
    if (!peak_bps || !(*peak_bps > 0)) return std::nullopt;
    const double gbps = *peak_bps / 1e9;
    if (rule == ThresholdRule::copy_fraction)
        return Reference{gbps / 2, format_decimal(gbps / 2, 1) + " GB/s, half NVML's peak memory bandwidth of " +
                                       format_decimal(gbps, 1) + " GB/s"};
    return Reference{gbps, "NVML's peak memory bandwidth of " + format_decimal(gbps, 1) + " GB/s"};
}

std::optional<Reference> free_reference(std::optional<std::uint64_t> free_bytes) {
    if (!free_bytes) return std::nullopt;
    return Reference{static_cast<double>(*free_bytes), "the " + format_bytes(*free_bytes) + " free"};
}

std::optional<Reference> total_reference(std::optional<std::uint64_t> total_bytes) {
    if (!total_bytes || *total_bytes == 0) return std::nullopt;
    return Reference{static_cast<double>(*total_bytes), "the " + format_bytes(*total_bytes) + " total"};
}

std::optional<Threshold> threshold_for(const std::string& id, const CheckKind& kind, const ThresholdOverrides& overrides,
                                       const std::optional<Reference>& reference) {
    if (const ThresholdOverride* o = find_override(overrides, id)) return Threshold{o->value, "set by " + o->source};
    switch (kind.rule) {
        case ThresholdRule::none: return std::nullopt;
        case ThresholdRule::fixed: return Threshold{kind.amount, "default"};
        case ThresholdRule::unsettable: return Threshold{kind.amount, ""};
        case ThresholdRule::maximum:
            if (!reference) return std::nullopt;
            return Threshold{reference->value, reference->name};
        case ThresholdRule::peak_fraction:
        case ThresholdRule::copy_fraction:
        case ThresholdRule::pcie_fraction:
        case ThresholdRule::free_fraction:
        case ThresholdRule::total_fraction:
            if (!reference) return std::nullopt;
            return Threshold{kind.amount * reference->value, percent_text(kind.amount) + " of " + reference->name};
    }
    return std::nullopt;
}

// ---------------------------------------------------------------------------
// Verdicts

Verdict judge_value(const CheckKind& kind, double value, double threshold) noexcept {
    switch (kind.comparison) {
        case Comparison::at_least:
            if (value < threshold) return kind.beyond;
            if (kind.warn_margin > 0 && value < threshold * (1 + kind.warn_margin)) return Verdict::warn;
            return Verdict::pass;
        case Comparison::at_most:
            if (value > threshold) return kind.beyond;
            if (kind.warn_margin > 0 && value > threshold * (1 - kind.warn_margin)) return Verdict::warn;
            return Verdict::pass;
        case Comparison::equal: return value == threshold ? Verdict::pass : kind.beyond;
    }
    return Verdict::na;
}

std::string format_check_value(const CheckKind& kind, double value) {
    const std::string_view unit = kind.unit;
    if (unit == "GB/s") return format_decimal(value, 1) + " GB/s";
    if (unit == "bytes") return format_bytes(static_cast<std::uint64_t>(value));
    if (unit == "s") return format_decimal(value, 3) + " s";
    if (unit == "MHz") return format_decimal(value, 0) + " MHz";
    if (unit == "lanes") return "x" + format_decimal(value, 0);
    return format_decimal(value, 0);  // count, bool
}

namespace {

std::string with_note(const std::string& reason, const std::string& note) { return note.empty() ? reason : reason + "; " + note; }

}  // namespace

CheckOutcome judged(const std::string& id, std::optional<double> value, const std::optional<Threshold>& threshold,
                    const std::string& note) {
    CheckOutcome out;
    out.id = id;
    out.kind = &check_row(id).value;
    const CheckKind& kind = *out.kind;
    out.value = value;
    if (!value) {
        out.reason = with_note("not reported", note);
        return out;
    }
    const std::string shown = format_check_value(kind, *value);
    if (!threshold) {
        out.verdict = Verdict::pass;
        out.reason = with_note(shown + "; no threshold set", note);
        return out;
    }
    out.threshold = threshold->value;
    out.verdict = judge_value(kind, *value, threshold->value);
    out.remediation = remediation_for(kind, out.verdict);
    const double t = threshold->value;
    const bool beyond = kind.comparison == Comparison::at_least ? *value < t
                        : kind.comparison == Comparison::at_most ? *value > t
                                                                 : *value != t;
    std::string reason = shown + " " + std::string(comparison_symbol(kind.comparison, !beyond)) +
                         " " + format_check_value(kind, threshold->value);
    if (!beyond && out.verdict == Verdict::warn) reason += ", within " + percent_text(kind.warn_margin) + " of it";
    if (!threshold->basis.empty()) reason += " (" + threshold->basis + ")";
    out.reason = with_note(reason, note);
    return out;
}

CheckOutcome not_applicable(const std::string& id, const std::string& why) {
    CheckOutcome out;
    out.id = id;
    out.kind = &check_row(id).value;
    out.verdict = Verdict::na;
    out.reason = why;
    return out;
}

CheckOutcome unknown_check(const std::string& id, const std::string& why) {
    CheckOutcome out = not_applicable(id, one_line(why));
    out.verdict = Verdict::unknown;
    return out;
}

// The work itself failed (no context, a CUDA error, out of memory): a
// failure whatever the row's verdict beyond its threshold, since the GPU
// could not do what the next job will ask of it.
CheckOutcome failed_check(const std::string& id, const std::string& why) {
    CheckOutcome out = not_applicable(id, one_line(why));
    out.verdict = Verdict::fail;
    out.remediation = remediation_for(*out.kind, out.verdict);
    return out;
}

// A warning asks for the row's remediation only where crossing the
// threshold is itself a warning (a narrow link, a clock held back). A warning
// of a row that fails beyond its threshold is the margin band, a GPU near the
// edge that still did the work: exit 0, and nothing for a drain list to act on.
Remediation remediation_for(const CheckKind& kind, Verdict verdict) noexcept {
    if (verdict == Verdict::fail) return kind.remediation;
    if (verdict == Verdict::warn && kind.beyond == Verdict::warn) return kind.remediation;
    return Remediation::none;
}

void apply_strict(CheckOutcome& outcome, bool strict) {
    if (!strict) return;
    // A failure asks for at least what its row's failure asks for, and a
    // check that could not run for a drain: the node was not verified.
    if (outcome.verdict == Verdict::warn) {
        outcome.verdict = Verdict::fail;
        outcome.reason += " (a warning: a failure under --strict)";
        if (outcome.kind != nullptr) outcome.remediation = worse_remediation(outcome.remediation, outcome.kind->remediation);
    } else if (outcome.verdict == Verdict::unknown) {
        outcome.verdict = Verdict::fail;
        outcome.reason += " (could not run: a failure under --strict)";
        outcome.remediation = worse_remediation(outcome.remediation, Remediation::drain);
    }
}

VerdictCounts count_verdicts(const std::vector<CheckOutcome>& checks) {
    VerdictCounts counts;
    for (const CheckOutcome& c : checks) {
        const Verdict v = c.verdict;
        counts.worst = worse(counts.worst, v);
        switch (v) {
            case Verdict::pass: ++counts.passed; break;
            case Verdict::warn: ++counts.warned; break;
            case Verdict::fail: ++counts.failed; break;
            case Verdict::na: ++counts.na; break;
            case Verdict::unknown: ++counts.unknown; break;
        }
        counts.remediation = worse_remediation(counts.remediation, c.remediation);
    }
    return counts;
}

RetestedRate retest_rate(const std::function<RateAttempt()>& measure, const std::function<bool(double)>& passes,
                         const std::vector<std::chrono::milliseconds>& pauses,
                         const std::function<void(std::chrono::milliseconds)>& wait) {
    RetestedRate out;
    for (std::size_t pause = 0;; ++pause) {
        const RateAttempt attempt = measure();
        ++out.attempts;
        if (out.attempts == 1) out.first_best_bps = attempt.best_bps;
        if (out.attempts == 1 || attempt.best_bps > out.best.best_bps) {
            out.best = attempt;
            out.best_attempt = out.attempts;
        }
        if (passes(out.best.best_bps) || pause >= pauses.size()) return out;
        wait(pauses[pause]);
    }
}

std::string retest_note(const RetestedRate& rate, const std::vector<std::chrono::milliseconds>& pauses) {
    if (rate.attempts <= 1) return "";
    std::vector<std::string> seconds;
    seconds.reserve(pauses.size());
    for (const std::chrono::milliseconds& p : pauses) seconds.push_back(format_decimal(static_cast<double>(p.count()) / 1000.0, 2));
    std::string list;
    for (std::size_t i = 0; i < seconds.size(); ++i)
        list += (i == 0 ? "" : i + 1 == seconds.size() ? " and " : ", ") + seconds[i];
    return "; attempt " + std::to_string(rate.best_attempt) + " of " + std::to_string(rate.attempts) + " (the first gave " +
           format_decimal(rate.first_best_bps / 1e9, 1) + " GB/s; a rate that does not pass is measured again after " + list + " s)";
}

}  // namespace gpumem
