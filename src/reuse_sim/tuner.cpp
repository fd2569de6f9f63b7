#include "reuse_sim/tuner.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/errors.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"

namespace gpumem::reuse_sim {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

std::string_view trimmed(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// --------------------------------------------------------------- the knobs

// PyTorch refuses max_split_size_mb:N below kLargeBuffer (20 MiB), and reads
// N with std::stoi (an int).
void parse_max_split_size(std::string_view value, TorchOptions& o) {
    if (value == "none") {
        o.max_split_size = TorchOptions::kNoLimit;
        return;
    }
    std::uint64_t mib = 0;
    try {
        mib = parse_unsigned(value, 2147483647);
    } catch (const UsageError&) {
        throw UsageError("max_split_size '" + std::string(value) + "': expected MiB (a whole number from 20 to 2147483647) or none");
    }
    if (mib < 20) throw UsageError("max_split_size '" + std::string(value) + "': PyTorch requires at least 20 (MiB)");
    o.max_split_size = mib * kMiB;
}

void parse_roundup(std::string_view value, TorchOptions& o) {
    if (value == "none") {
        o.roundup_power2_divisions.fill(0);
        return;
    }
    try {
        o.roundup_power2_divisions = parse_roundup_power2_divisions(value);
    } catch (const UsageError& e) {
        // Its message names the flag (--roundup-power2-divisions 'X': why): keep the why.
        const std::string what = e.what();
        const std::size_t why = what.find("': ");
        throw UsageError("roundup_power2_divisions '" + std::string(value) + "': " + (why == std::string::npos ? what : what.substr(why + 3)));
    }
}

void parse_expandable(std::string_view value, TorchOptions& o) {
    if (value == "true" || value == "True") o.expandable_segments = true;
    else if (value == "false" || value == "False") o.expandable_segments = false;
    else throw UsageError("expandable_segments '" + std::string(value) + "': expected true or false");
}

// 0 is off (PyTorch's default); PyTorch itself takes 0 < T < 1 only.
void parse_gc_threshold(std::string_view value, TorchOptions& o) {
    double t = 0;
    try {
        t = parse_real(value);
    } catch (const UsageError&) {
        throw UsageError("garbage_collection_threshold '" + std::string(value) + "': expected a number, 0 (off) or above 0 and below 1");
    }
    if (t < 0.0 || t >= 1.0)
        throw UsageError("garbage_collection_threshold '" + std::string(value) + "': must be 0 (off) or above 0 and below 1");
    o.garbage_collection_threshold = t;
}

std::string max_split_size_conf(const TorchOptions& o) {
    return o.max_split_size == TorchOptions::kNoLimit ? std::string() : std::to_string(o.max_split_size / kMiB);
}
std::string roundup_conf(const TorchOptions& o) { return format_roundup_power2_divisions(o.roundup_power2_divisions); }
std::string expandable_conf(const TorchOptions& o) { return o.expandable_segments ? "True" : ""; }
// The shortest text that reads back as the same double ("0.6", "1e-09"):
// PyTorch reads it with std::stod.
std::string gc_conf(const TorchOptions& o) {
    const double t = o.garbage_collection_threshold;
    if (t <= 0.0) return "";
    char text[32];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, t);
        if (std::strtod(text, nullptr) == t) break;
    }
    return text;
}

constexpr Named<KnobSpec> kKnobRows[] = {
    {"max_split_size",
     {Knob::max_split_size, "max_split_size_mb", "none,128,512", false, parse_max_split_size,
      [](const TorchOptions& f, TorchOptions& t) { t.max_split_size = f.max_split_size; },
      [](const TorchOptions& a, const TorchOptions& b) { return a.max_split_size == b.max_split_size; }, max_split_size_conf},
     "MiB (at least 20), or none: blocks this large are never split, and are freed first under a cap"},
    {"roundup_power2_divisions",
     {Knob::roundup_power2_divisions, "roundup_power2_divisions", "none,4,[256:1,512:2,1024:4,>:4]", false, parse_roundup,
      [](const TorchOptions& f, TorchOptions& t) { t.roundup_power2_divisions = f.roundup_power2_divisions; },
      [](const TorchOptions& a, const TorchOptions& b) { return a.roundup_power2_divisions == b.roundup_power2_divisions; },
      roundup_conf},
     "N, [MIB:N,...,>:N] or none: sizes rounded up to power-of-two divisions"},
    {"expandable_segments",
     {Knob::expandable_segments, "expandable_segments", "false,true", false, parse_expandable,
      [](const TorchOptions& f, TorchOptions& t) { t.expandable_segments = f.expandable_segments; },
      [](const TorchOptions& a, const TorchOptions& b) { return a.expandable_segments == b.expandable_segments; }, expandable_conf},
     "true or false: segments that grow by mapping pages instead of new cudaMalloc segments"},
    {"garbage_collection_threshold",
     {Knob::garbage_collection_threshold, "garbage_collection_threshold", "0,0.8", true, parse_gc_threshold,
      [](const TorchOptions& f, TorchOptions& t) { t.garbage_collection_threshold = f.garbage_collection_threshold; },
      [](const TorchOptions& a, const TorchOptions& b) { return a.garbage_collection_threshold == b.garbage_collection_threshold; },
      gc_conf},
     "0 (off), or above 0 and below 1: the share of the cap above which cached blocks are freed; needs a cap"},
};

// A list of values: split at commas, except inside a [...] list (the
// roundup_power2_divisions list form).
std::vector<std::string_view> split_values(std::string_view text) {
    std::vector<std::string_view> values;
    std::size_t start = 0, depth = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        if (i < text.size() && text[i] == '[') ++depth;
        if (i < text.size() && text[i] == ']' && depth > 0) --depth;
        if (i == text.size() || (text[i] == ',' && depth == 0)) {
            values.push_back(trimmed(text.substr(start, i - start)));
            start = i + 1;
        }
    }
    return values;
}

SweepAxis axis_of(const Named<KnobSpec>& knob, std::string_view list, std::string_view option_text) {
    SweepAxis axis;
    axis.knob = &knob;
    for (std::string_view value : split_values(list)) {
        if (value.empty()) throw UsageError("'" + std::string(option_text) + "': empty value");
        TorchOptions o;
        knob.value.parse(value, o);
        for (const TorchOptions& seen : axis.values)
            if (knob.value.same(seen, o))
                throw UsageError("'" + std::string(option_text) + "': " + std::string(knob.name) + " value '" +
                                 std::string(value) + "' given twice");
        axis.values.push_back(o);
    }
    return axis;
}

}  // namespace

const NameTable<KnobSpec> kKnobs{"knob", kKnobRows, "knobs"};

// By gpumem's name or by PyTorch's key, as pasted from PYTORCH_CUDA_ALLOC_CONF
// (max_split_size_mb: both read MiB).
const Named<KnobSpec>* find_knob(std::string_view name) {
    if (const Named<KnobSpec>* knob = kKnobs.find(name)) return knob;
    for (const Named<KnobSpec>& knob : kKnobs)
        if (knob.value.conf_key == name) return &knob;
    return nullptr;
}

void apply_alloc_conf(std::string_view conf, TorchOptions& options) {
    // parseArgs: these three return to their defaults at every call;
    // expandable_segments and max_non_split_rounding keep their value.
    options.max_split_size = TorchOptions::kNoLimit;
    options.roundup_power2_divisions.fill(0);
    options.garbage_collection_threshold = 0.0;
    for (const std::string_view item : split_values(conf)) {
        const std::size_t colon = item.find(':');
        if (item.empty() || colon == std::string_view::npos) continue;
        const std::string_view key = trimmed(item.substr(0, colon)), value = trimmed(item.substr(colon + 1));
        if (key == "max_non_split_rounding_mb") {
            std::uint64_t mib = 0;
            try {
                mib = parse_unsigned(value, 2147483647);
            } catch (const UsageError&) {
                throw UsageError("max_non_split_rounding_mb '" + std::string(value) + "': expected MiB");
            }
            options.max_non_split_rounding = mib * kMiB;
            continue;
        }
        // Keys the model has no use for (pinned memory's, release_lock_on_cudamalloc...) change nothing it replays.
        for (const Named<KnobSpec>& knob : kKnobs)
            if (knob.value.conf_key == key) knob.value.parse(value, options);
    }
}

SweepAxis parse_sweep(std::string_view text) {
    const std::size_t equals = text.find('=');
    if (equals == std::string_view::npos)
        throw UsageError("'" + std::string(text) + "': expected KNOB=V1,V2,... (knobs: " + kKnobs.names(", ") + ")");
    const std::string_view name = trimmed(text.substr(0, equals)), list = trimmed(text.substr(equals + 1));
    const Named<KnobSpec>* knob = find_knob(name);
    if (!knob) throw UsageError("'" + std::string(text) + "': " + kKnobs.unknown_message(name));
    if (list.empty()) throw UsageError("'" + std::string(text) + "': empty list of values");
    return axis_of(*knob, list, text);
}

std::vector<SweepAxis> grid_axes(const std::vector<std::string>& sweeps, bool tune, bool capped) {
    std::vector<SweepAxis> axes;
    for (const std::string& text : sweeps) {
        SweepAxis axis;
        try {
            axis = parse_sweep(text);
        } catch (const UsageError& e) {
            throw UsageError(std::string("--sweep: ") + e.what());
        }
        for (const SweepAxis& a : axes)
            if (a.knob == axis.knob) throw UsageError("--sweep: " + std::string(axis.knob->name) + " swept twice (give all its values in one --sweep)");
        if (axis.knob->value.needs_cap && !capped)
            throw UsageError("--sweep " + std::string(axis.knob->name) +
                             " acts only under a memory cap: give --capacity or --memory-fraction");
        axes.push_back(std::move(axis));
    }
    // tune: the knobs not swept on their default values, in the table's order.
    std::vector<SweepAxis> ordered;
    for (const Named<KnobSpec>& knob : kKnobs) {
        const auto swept = std::find_if(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.knob == &knob; });
        if (swept != axes.end()) ordered.push_back(std::move(*swept));
        else if (tune && (capped || !knob.value.needs_cap)) ordered.push_back(axis_of(knob, knob.value.defaults, knob.value.defaults));
    }
    if (grid_size(ordered) > kMaxGridPoints)
        throw UsageError("the grid has " + std::to_string(grid_size(ordered)) + " points, more than " + std::to_string(kMaxGridPoints) +
                         ": sweep fewer values");
    return ordered;
}

std::uint64_t grid_size(const std::vector<SweepAxis>& axes) noexcept {
    std::uint64_t n = 1;
    for (const SweepAxis& a : axes) n = a.values.empty() || n > (~0ULL) / a.values.size() ? ~0ULL : n * a.values.size();
    return n;
}

bool same_setting(const TorchOptions& a, const TorchOptions& b) noexcept {
    for (const Named<KnobSpec>& knob : kKnobs)
        if (!knob.value.same(a, b)) return false;
    return a.max_non_split_rounding == b.max_non_split_rounding;
}

std::vector<GridPoint> grid_points(const TorchOptions& baseline, const std::vector<SweepAxis>& axes) {
    std::vector<GridPoint> points;
    std::vector<std::size_t> index(axes.size(), 0);
    for (std::uint64_t n = grid_size(axes); n > 0; --n) {
        GridPoint p{baseline, false};
        for (std::size_t a = 0; a < axes.size(); ++a) axes[a].knob->value.copy(axes[a].values[index[a]], p.options);
        p.recorded = same_setting(p.options, baseline);
        points.push_back(p);
        // The next combination: the last axis varies fastest.
        for (std::size_t a = axes.size(); a-- > 0;) {
            if (++index[a] < axes[a].values.size()) break;
            index[a] = 0;
        }
    }
    if (std::none_of(points.begin(), points.end(), [](const GridPoint& p) { return p.recorded; }))
        points.insert(points.begin(), GridPoint{baseline, true});
    return points;
}

// Written so that PyTorch's parser (and parse_roundup_power2_divisions)
// reads it back whichever way '>' treats the entry before it: the first
// entry covers every interval up to its own, then one entry per interval
// up to and including the first of the tail, whose value '>' repeats.
std::string format_roundup_power2_divisions(const std::array<std::uint64_t, 16>& d) {
    const std::size_t n = d.size();
    if (std::all_of(d.begin(), d.end(), [](std::uint64_t v) { return v == 0; })) return "";
    if (std::all_of(d.begin(), d.end(), [&](std::uint64_t v) { return v == d[0]; })) return std::to_string(d[0]);
    std::size_t head = 0;  // the last interval of the leading run
    while (head + 1 < n && d[head + 1] == d[0]) ++head;
    std::size_t tail = n - 1;  // the first interval of the trailing run
    while (tail > 0 && d[tail - 1] == d[n - 1]) --tail;
    std::vector<std::string> entries;
    for (std::size_t i = head; i <= std::max(head, tail); ++i) entries.push_back(std::to_string(1ULL << i) + ":" + std::to_string(d[i]));
    entries.push_back(">:" + std::to_string(d[n - 1]));
    return "[" + join(entries, ",") + "]";
}

std::string alloc_conf(const TorchOptions& options) {
    std::vector<std::string> items;
    for (const Named<KnobSpec>& knob : kKnobs) {
        const std::string value = knob.value.conf_value(options);
        if (!value.empty()) items.push_back(std::string(knob.value.conf_key) + ":" + value);
        // PyTorch's other size setting, not a knob: kept as the input ran with it.
        if (knob.value.knob == Knob::max_split_size && options.max_non_split_rounding != (20ULL << 20))
            items.push_back("max_non_split_rounding_mb:" + std::to_string(options.max_non_split_rounding / kMiB));
    }
    return join(items, ",");
}

bool ranks_before(const TuneOutcome& a, const TuneOutcome& b) noexcept {
    if ((a.ooms == 0) != (b.ooms == 0)) return a.ooms == 0;
    // Under a cap every failing setting peaks near the cap: the count tells them apart.
    if (a.ooms != b.ooms) return a.ooms < b.ooms;
    if (a.peak_reserved != b.peak_reserved) return a.peak_reserved < b.peak_reserved;
    if (a.retries != b.retries) return a.retries < b.retries;
    return a.modelled_us < b.modelled_us;
}

void rank_rows(std::vector<TuneRow>& rows) {
    // Among equals the recorded setting first: nothing to change for nothing gained.
    std::stable_sort(rows.begin(), rows.end(), [](const TuneRow& a, const TuneRow& b) {
        if (ranks_before(a.outcome, b.outcome)) return true;
        return !ranks_before(b.outcome, a.outcome) && a.point.recorded && !b.point.recorded;
    });
}

std::vector<std::uint64_t> capacity_probes(std::uint64_t low, std::uint64_t high, std::size_t count) {
    std::vector<std::uint64_t> probes;
    if (high <= low || count == 0) return probes;
    const std::uint64_t span = high - low;
    for (std::size_t k = 1; k <= count; ++k) {
        const double share = static_cast<double>(k) / static_cast<double>(count);
        std::uint64_t c = low + static_cast<std::uint64_t>(std::ceil(static_cast<double>(span) * share));
        c = k == count ? high : std::min(high, (c + kMiB - 1) / kMiB * kMiB);
        if (c > low && (probes.empty() || c > probes.back())) probes.push_back(c);
    }
    return probes;
}

namespace {

// "with max_split_size_mb:128", or "with PyTorch's defaults".
std::string with_setting(const TorchOptions& o) {
    const std::string conf = alloc_conf(o);
    return "with " + (conf.empty() ? std::string("PyTorch's defaults") : conf);
}

std::string at_event(const TuneOutcome& o) {
    return o.first_oom_event ? "at event " + group_digits(*o.first_oom_event) : std::string("somewhere");
}

std::string search_clause(const CapacitySearch& search, const std::function<std::string(std::uint64_t)>& bytes) {
    if (search.smallest)
        return "; the smallest capacity the best setting fits in is about " + bytes(*search.smallest) + " (to within " + bytes(search.resolution) + ", " +
               std::to_string(search.replays) + " more replays)";
    if (!search.not_searched.empty()) return "; the smallest capacity the best setting fits in was not searched: " + search.not_searched;
    return "";
}

// What a setting that serves recorded OOMs leaves open: the program caught
// each, and what it did then (recover) is all the recording holds.
std::string granted_clause(const TuneOutcome& best, std::uint64_t recorded_ooms) {
    if (best.granted_ooms == 0 || recorded_ooms == 0) return "";
    const std::uint64_t g = best.granted_ooms;
    const std::string which = g == recorded_ooms ? (g == 1 ? std::string("the request") : "all " + group_digits(g) + " requests")
                                                 : group_digits(g) + " of the " + group_digits(recorded_ooms) + " requests";
    return "; the best setting grants " + which +
           " that ran out of memory as recorded, after which the program may ask for memory the recording never saw "
           "(it recovered instead): rerun it to confirm";
}

}  // namespace

std::string tune_answer(const std::vector<TuneRow>& rows, std::uint64_t capacity, const CapacitySearch& search,
                        const std::function<std::string(std::uint64_t)>& bytes, std::string_view baseline_name,
                        std::uint64_t recorded_ooms) {
    if (rows.empty()) return "";
    const TuneOutcome& best = rows.front().outcome;
    const auto recorded_row = std::find_if(rows.begin(), rows.end(), [](const TuneRow& r) { return r.point.recorded; });
    const TuneOutcome& recorded = recorded_row == rows.end() ? best : recorded_row->outcome;
    const bool best_is_recorded = rows.front().point.recorded || !ranks_before(best, recorded);
    const std::string baseline(baseline_name), best_with = with_setting(rows.front().point.options);
    std::string s;
    if (capacity == kUnlimited) {
        s = "without a memory cap (--capacity, --memory-fraction) nothing runs out of memory; " +
            (best_is_recorded ? baseline + " the peak reserved, " + bytes(recorded.peak_reserved) + ", is the lowest of the grid"
                              : best_with + " the peak reserved is " + bytes(best.peak_reserved) + ", " + baseline + " " +
                                    bytes(recorded.peak_reserved));
    } else if (best.ooms == 0 && recorded.ooms == 0) {
        s = baseline + " this trace fits in " + bytes(capacity) + " (peak " + bytes(recorded.peak_reserved) + ")" +
            (best_is_recorded ? ", and no other setting that fits has a lower peak"
                              : "; " + best_with + " the peak is " + bytes(best.peak_reserved));
    } else if (best.ooms == 0) {
        s = best_with + " this trace fits in " + bytes(capacity) + " (peak " + bytes(best.peak_reserved) + "); " + baseline +
            " it fails " + at_event(recorded);
    } else {
        s = "no setting of the grid fits this trace in " + bytes(capacity) + ": " +
            (best_is_recorded ? baseline + " it fails " + at_event(recorded) + " (" + std::to_string(recorded.ooms) +
                                    " OOMs), and no setting does better"
                              : "the best, " + best_with.substr(5) + ", fails " + at_event(best) + " (" + std::to_string(best.ooms) +
                                    " OOMs), " + baseline + " " + at_event(recorded) + " (" + std::to_string(recorded.ooms) + " OOMs)");
    }
    s += granted_clause(best, recorded_ooms) + search_clause(search, bytes) + ".";
    s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return s;
}

std::string group_digits(std::uint64_t value) {
    std::string digits = std::to_string(value), grouped;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
        grouped += digits[i];
    }
    return grouped;
}

}  // namespace gpumem::reuse_sim
