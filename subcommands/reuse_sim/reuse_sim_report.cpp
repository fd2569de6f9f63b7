// The report of gpumem reuse-sim, from its request and results alone: the
// strategies table (best values marked in table mode), the document's
// fields, the chart of reserved bytes, and the schema of all of it from the
// same column tables.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/memory_policy.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "cli/width.hpp"
#include "base/text.hpp"
#include "cli/chart.hpp"
#include "cli/commands.hpp"
#include "reuse_sim/reuse_sim.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

std::vector<std::string_view> strategy_names() { return rs::kStrategies.name_list(); }
std::vector<std::string_view> input_kinds() { return {"workload", "trace"}; }
std::vector<std::string_view> input_formats() {
    std::vector<std::string_view> names = {"generated"};
    for (const Named<rs::TraceFormat>& row : rs::kTraceFormats)
        if (row.value != rs::TraceFormat::automatic) names.push_back(row.name);
    return names;
}

// A key that outlives every report: a strategy's own figures are named by
// the data (bin_262144_chunks), and records hold their keys as views.
std::string_view interned(const std::string& key) {
    static std::mutex mutex;
    static std::set<std::string> keys;
    const std::lock_guard<std::mutex> lock(mutex);
    return *keys.insert(key).first;
}

Cell u64(std::uint64_t v) { return v; }
Cell ms(double us) { return us / 1000.0; }

// ------------------------------------------------------------ strategies

// A row of the strategies table: a simulated lane and, with --execute, its
// measured time once its real replay is done.
struct StrategyRow {
    const rs::LaneResult* lane;
    std::optional<double> measured_ms;
};

constexpr Column<StrategyRow> kStrategyColumns[] = {
    {{"strategy", "strategy", FieldKind::text}, [](const StrategyRow& r) -> Cell { return r.lane->strategy; }, Shown::always, false,
     nullptr, strategy_names},
    {{"requests", "requests", FieldKind::integer}, [](const StrategyRow& r) { return u64(r.lane->requests); }},
    {{"upstream_allocs", "allocs", FieldKind::integer}, [](const StrategyRow& r) { return u64(r.lane->upstream_allocs); }},
    {{"upstream_frees", "frees", FieldKind::integer}, [](const StrategyRow& r) { return u64(r.lane->upstream_frees); }},
    {{"hit_rate", "hit rate", FieldKind::percent, 1}, [](const StrategyRow& r) -> Cell { return r.lane->hit_rate * 100.0; }},
    {{"peak_reserved", "peak reserved", FieldKind::bytes}, [](const StrategyRow& r) { return u64(r.lane->peak_reserved); }},
    {{"peak_live", "peak live", FieldKind::bytes}, [](const StrategyRow& r) { return u64(r.lane->peak_live); }},
    {{"slack_at_peak", "slack at peak", FieldKind::bytes}, [](const StrategyRow& r) { return u64(r.lane->slack_at_peak); }},
    {{"fragmentation", "frag", FieldKind::percent, 1}, [](const StrategyRow& r) -> Cell { return r.lane->fragmentation * 100.0; }},
    {{"implicit_syncs", "syncs", FieldKind::integer}, [](const StrategyRow& r) { return u64(r.lane->implicit_syncs); }},
    {{"ooms", "OOMs", FieldKind::integer}, [](const StrategyRow& r) { return u64(r.lane->ooms); }},
    {{"retries", "retries", FieldKind::integer}, [](const StrategyRow& r) { return u64(r.lane->retries); }},
    {{"modelled_ms", "model ms", FieldKind::real, 2}, [](const StrategyRow& r) { return ms(r.lane->modelled_us); }},
    // With --execute only (the table leaves it out otherwise; so not required).
    {{"measured_ms", "GPU ms", FieldKind::real, 2}, [](const StrategyRow& r) { return optional_cell(r.measured_ms); }, Shown::always,
     true},
};

std::vector<StrategyRow> strategy_rows(const ReuseSimResults& r) {
    std::vector<StrategyRow> rows;
    for (std::size_t i = 0; i < r.lanes.size(); ++i) {
        StrategyRow row{&r.lanes[i], std::nullopt};
        if (r.execute && i < r.execute->runs.size()) row.measured_ms = r.execute->runs[i].measured.measured_us / 1000.0;
        rows.push_back(row);
    }
    return rows;
}

// Whether a row may be marked best in a column: a strategy that ran out of
// memory never is, and slack and fragmentation compare only the strategies
// that reused memory (served some request from memory they already held):
// naive's are trivially 0.
bool may_be_best(const rs::LaneResult& lane, std::string_view column) {
    if (lane.ooms != 0) return false;
    if (column == "slack_at_peak" || column == "fragmentation") return lane.hits != 0;
    return true;
}

// Table mode: the best value of each compared column, among the rows that
// may be best in it, gets a '*' (others a space, to keep the digits
// aligned). Columns where all rows agree are left alone.
void mark_best(Table& t, const std::vector<StrategyRow>& rows, Unit unit) {
    if (t.rows.size() < 2) return;
    const std::vector<std::pair<std::string, bool>> compared = {
        {"upstream_allocs", false}, {"upstream_frees", false}, {"hit_rate", true}, {"peak_reserved", false},
        {"slack_at_peak", false},   {"fragmentation", false},  {"implicit_syncs", false}, {"ooms", false},
        {"retries", false},         {"modelled_ms", false},    {"measured_ms", false},
    };
    for (std::size_t col = 0; col < t.fields.size(); ++col) {
        const auto it = std::find_if(compared.begin(), compared.end(), [&](const auto& c) { return c.first == t.fields[col].key; });
        if (it == compared.end()) continue;
        const bool higher_is_better = it->second;
        double best = std::nan(""), first = std::nan("");
        bool all_equal = true;
        for (std::size_t i = 0; i < t.rows.size(); ++i) {
            const double v = cell_number(t.rows[i][col]);
            if (std::isnan(v)) continue;
            if (std::isnan(first)) first = v;
            if (v != first) all_equal = false;
            if (!may_be_best(*rows[i].lane, t.fields[col].key)) continue;
            if (std::isnan(best) || (higher_is_better ? v > best : v < best)) best = v;
        }
        if (std::isnan(best) || all_equal) continue;
        for (std::size_t i = 0; i < t.rows.size(); ++i) {
            const double v = cell_number(t.rows[i][col]);
            if (std::isnan(v)) continue;
            const bool star = v == best && may_be_best(*rows[i].lane, t.fields[col].key);
            t.rows[i][col] = cell_text(t.rows[i][col], t.fields[col], unit) + (star ? "*" : " ");
        }
    }
}

// ------------------------------------------------------ nested records

struct Compared {
    std::uint64_t simulated, real;
};
constexpr Column<Compared> kComparedColumns[] = {
    {{"simulated", "", FieldKind::integer}, [](const Compared& c) { return u64(c.simulated); }},
    {{"real", "", FieldKind::integer}, [](const Compared& c) { return u64(c.real); }},
};
constexpr auto compared_schema = nested_schema<kComparedColumns>;
Cell compared_cell(std::uint64_t simulated, std::uint64_t real) {
    return record_cell(make_record(Columns<Compared>(kComparedColumns), Compared{simulated, real}));
}

// execute.runs[].calls: an object per API call of kApiCalls.
Cell calls_cell(const ExecuteRun& run) {
    Record calls;
    for (const ApiCall& call : kApiCalls)
        calls.add(Field{call.name, "", FieldKind::record}, compared_cell(run.simulated.counters.*call.count, run.measured.counters.*call.count));
    return record_cell(std::move(calls));
}
const FieldSchemaSet& calls_schema() {
    static const FieldSchemaSet set = [] {
        FieldSchemaSet s;
        for (const ApiCall& call : kApiCalls) s.fields.push_back({Field{call.name, "", FieldKind::record}, false, compared_schema});
        return s;
    }();
    return set;
}

constexpr Column<ExecuteRun> kRunColumns[] = {
    {{"strategy", "", FieldKind::text}, [](const ExecuteRun& r) -> Cell { return r.simulated.strategy; }, Shown::always, false,
     nullptr, strategy_names},
    {{"calls", "", FieldKind::record}, calls_cell, Shown::always, false, calls_schema},
    {{"ooms", "", FieldKind::record}, [](const ExecuteRun& r) { return compared_cell(r.simulated.ooms, r.measured.ooms); },
     Shown::always, false, compared_schema},
    {{"peak_reserved_bytes", "", FieldKind::record},
     [](const ExecuteRun& r) { return compared_cell(r.simulated.peak_reserved, r.measured.peak_reserved); }, Shown::always, false,
     compared_schema},
    {{"pool_grows", "", FieldKind::record},
     [](const ExecuteRun& r) { return compared_cell(r.simulated.counters.pool_grows, r.measured.counters.pool_grows); },
     Shown::always, false, compared_schema},
    {{"measured_ms", "", FieldKind::real}, [](const ExecuteRun& r) { return ms(r.measured.measured_us); }},
    {{"modelled_ms", "", FieldKind::real}, [](const ExecuteRun& r) { return ms(r.simulated.modelled_us); }},
    {{"wall_seconds", "", FieldKind::real}, [](const ExecuteRun& r) -> Cell { return r.wall_seconds; }},
    {{"counts_agree", "", FieldKind::boolean}, [](const ExecuteRun& r) -> Cell { return r.counts_agree; }},
};
constexpr auto run_schema = nested_schema<kRunColumns>;

constexpr Column<ExecuteResults> kExecuteColumns[] = {
    {{"device", "", FieldKind::integer}, [](const ExecuteResults& x) -> Cell { return std::int64_t{x.device.ordinal()}; }},
    {{"device_name", "", FieldKind::text}, [](const ExecuteResults& x) -> Cell { return x.device_name; }},
    {{"free_bytes_before", "", FieldKind::bytes}, [](const ExecuteResults& x) { return u64(x.free_bytes_before); }},
    {{"free_bytes_after", "", FieldKind::bytes}, [](const ExecuteResults& x) { return optional_cell(x.free_bytes_after); }},
    {{"verified", "", FieldKind::boolean}, [](const ExecuteResults& x) -> Cell { return x.verified(); }},
    {{"runs", "", FieldKind::records},
     [](const ExecuteResults& x) { return records_cell(make_records(Columns<ExecuteRun>(kRunColumns), x.runs)); }, Shown::always,
     false, run_schema},
};
constexpr auto execute_schema = nested_schema<kExecuteColumns>;

constexpr Column<rs::UpstreamCounters> kUpstreamColumns[] = {
    {{"device_allocs", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.device_allocs); }},
    {{"device_frees", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.device_frees); }},
    {{"device_alloc_failures", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.device_alloc_failures); }},
    {{"async_allocs", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.async_allocs); }},
    {{"async_frees", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.async_frees); }},
    {{"async_alloc_failures", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.async_alloc_failures); }},
    {{"pool_grows", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.pool_grows); }},
    {{"pool_releases", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.pool_releases); }},
    {{"fills", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.fills); }},
    {{"synchronizations", "", FieldKind::integer}, [](const rs::UpstreamCounters& c) { return u64(c.synchronizations); }},
    {{"peak_reserved_bytes", "", FieldKind::bytes}, [](const rs::UpstreamCounters& c) { return u64(c.peak_reserved_bytes); }},
};
constexpr auto upstream_schema = nested_schema<kUpstreamColumns>;

// details.<strategy>: hits and served, then the strategy's own figures
// (PyTorch's statistics names for torch-caching), whose keys the data name.
constexpr Column<rs::LaneResult> kDetailColumns[] = {
    {{"hits", "", FieldKind::integer}, [](const rs::LaneResult& l) { return u64(l.hits); }},
    {{"served", "", FieldKind::integer}, [](const rs::LaneResult& l) { return u64(l.served); }},
};
Record detail_record(const rs::LaneResult& lane) {
    Record record = make_record(Columns<rs::LaneResult>(kDetailColumns), lane);
    for (const auto& [key, value] : lane.details) record.add(Field{interned(key), "", FieldKind::integer}, value);
    return record;
}
const FieldSchemaSet& detail_schema() {
    static const FieldSchemaSet set = [] {
        FieldSchemaSet s = Columns<rs::LaneResult>(kDetailColumns).schema();
        s.other_keys = FieldKind::integer;
        return s;
    }();
    return set;
}

// An object keyed by strategy name (details, upstream): a record of records,
// one per strategy replayed; the schema names every strategy of the table.
template <const FieldSchemaSet& (*Each)()>
const FieldSchemaSet& per_strategy_schema() {
    static const FieldSchemaSet set = [] {
        FieldSchemaSet s;
        for (const Named<rs::StrategySpec>& row : rs::kStrategies) s.fields.push_back({Field{row.name, "", FieldKind::record}, true, Each});
        return s;
    }();
    return set;
}
template <typename Make>
Cell per_strategy(const ReuseSimResults& r, Make make) {
    Record record;
    for (const rs::LaneResult& lane : r.lanes) record.add(Field{interned(lane.strategy), "", FieldKind::record}, record_cell(make(lane)));
    return record_cell(std::move(record));
}

// ------------------------------------------------------------ document

struct Document {
    const ReuseSimRequest& q;
    const ReuseSimResults& r;
    const rs::ReplaySummary& summary() const { return *r.summary; }
};

constexpr Column<Document> kInputColumns[] = {
    {{"kind", "", FieldKind::text}, [](const Document& d) -> Cell { return std::string(d.q.input.trace ? "trace" : "workload"); },
     Shown::always, false, nullptr, input_kinds},
    {{"description", "", FieldKind::text}, [](const Document& d) -> Cell { return d.r.input_description; }},
    {{"format", "", FieldKind::text}, [](const Document& d) -> Cell { return d.r.input_format; }, Shown::always, false, nullptr,
     input_formats},
};
constexpr auto input_schema = nested_schema<kInputColumns>;

constexpr Column<Document> kCostTableColumns[] = {
    {{"device", "", FieldKind::text}, [](const Document& d) -> Cell { return d.r.cost_device; }},
    {{"source", "", FieldKind::text}, [](const Document& d) -> Cell { return d.r.cost_source; }},
};
constexpr auto cost_table_schema = nested_schema<kCostTableColumns>;

Cell unless(std::uint64_t value, std::uint64_t none) { return value == none ? Cell() : Cell(value); }

// The strategies' options as the run used them (ring's size from the first pass).
constexpr Column<rs::StrategyOptions> kOptionColumns[] = {
    // A named rule or any SIZE or xF (as alloc-test churn's): no enum.
    {{"growth", "", FieldKind::text}, [](const rs::StrategyOptions& o) -> Cell {
         const Named<GrowthPolicy>* named = kGrowthRules.find_value(o.growth);
         return named ? std::string(named->name) : o.growth.name();
     }},
    {{"zero_fill", "", FieldKind::boolean}, [](const rs::StrategyOptions& o) -> Cell { return o.zero_fill; }},
    {{"ring_buffers", "", FieldKind::integer}, [](const rs::StrategyOptions& o) { return u64(o.ring_buffers); }},
    {{"ring_size", "", FieldKind::bytes}, [](const rs::StrategyOptions& o) { return u64(o.ring_buffer_size()); }},
    {{"pool_initial", "", FieldKind::bytes}, [](const rs::StrategyOptions& o) { return u64(o.pool_initial); }},
    {{"pool_max", "", FieldKind::bytes}, [](const rs::StrategyOptions& o) { return unless(o.pool_maximum, rs::kUnlimited); }},
    {{"bins", "", FieldKind::list}, [](const rs::StrategyOptions& o) -> Cell { return o.bins; }},
    {{"bin_blocks", "", FieldKind::integer}, [](const rs::StrategyOptions& o) { return u64(o.bin_blocks); }},
    {{"max_split_size", "", FieldKind::bytes},
     [](const rs::StrategyOptions& o) { return unless(o.torch.max_split_size, rs::TorchOptions::kNoLimit); }},
    {{"max_non_split_rounding", "", FieldKind::bytes}, [](const rs::StrategyOptions& o) { return u64(o.torch.max_non_split_rounding); }},
    {{"roundup_power2_divisions", "", FieldKind::list},
     [](const rs::StrategyOptions& o) -> Cell {
         return std::vector<std::uint64_t>(o.torch.roundup_power2_divisions.begin(), o.torch.roundup_power2_divisions.end());
     }},
    {{"release_threshold", "", FieldKind::bytes}, [](const rs::StrategyOptions& o) { return u64(o.release_threshold); }},
    {{"garbage_collection_threshold", "", FieldKind::real},
     [](const rs::StrategyOptions& o) -> Cell { return o.torch.garbage_collection_threshold; }},
    {{"expandable_segments", "", FieldKind::boolean}, [](const rs::StrategyOptions& o) -> Cell { return o.torch.expandable_segments; }},
};
Cell options_cell(const Document& d) {
    Record options = make_record(Columns<rs::StrategyOptions>(kOptionColumns), d.r.strategy_options);
    options.add(Field{"sync_every", "", FieldKind::integer}, d.q.sync_every);
    return record_cell(std::move(options));
}
const FieldSchemaSet& options_schema() {
    static const FieldSchemaSet set = [] {
        FieldSchemaSet s = Columns<rs::StrategyOptions>(kOptionColumns).schema();
        s.fields.push_back({Field{"sync_every", "", FieldKind::integer}});
        return s;
    }();
    return set;
}

// What the recorded allocator did by its own account (a snapshot's segment
// and oom events), beside which the strategies' figures can be read.
constexpr Column<Document> kRecordedColumns[] = {
    {{"device_allocs", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().recorded.device_allocs); }},
    {{"device_frees", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().recorded.device_frees); }},
    {{"peak_reserved_bytes", "", FieldKind::bytes}, [](const Document& d) { return u64(d.summary().recorded.peak_reserved_bytes); }},
    {{"ooms", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().oom_events); }},
};
constexpr auto recorded_schema = nested_schema<kRecordedColumns>;
Cell recorded_cell(const Document& d) {
    if (d.summary().recorded.segment_events == 0 && d.summary().oom_events == 0) return Cell();
    return record_cell(make_record(Columns<Document>(kRecordedColumns), d));
}

// A settings change of the program as it ran: the event it was replayed at, its text.
using SettingsChange = std::pair<std::uint64_t, std::string>;
constexpr Column<SettingsChange> kSettingsChangeColumns[] = {
    {{"event", "", FieldKind::integer}, [](const SettingsChange& c) { return u64(c.first); }},
    {{"alloc_conf", "", FieldKind::text}, [](const SettingsChange& c) -> Cell { return c.second; }},
};
constexpr auto settings_change_schema = nested_schema<kSettingsChangeColumns>;

// A snapshot's allocator_settings (those it started with, where the program
// changed them as it ran: then `changes`); each null when the snapshot lacks it.
constexpr Column<ReuseSimResults> kSettingsColumns[] = {
    {{"alloc_conf", "", FieldKind::text}, [](const ReuseSimResults& r) { return optional_cell(r.allocator_settings->alloc_conf); }},
    {{"max_split_size", "", FieldKind::bytes},
     [](const ReuseSimResults& r) {
         const auto& v = r.allocator_settings->max_split_size;
         return v && *v != rs::RecordedAllocatorSettings::kUnlimitedSplit ? Cell(*v) : Cell();
     }},
    {{"roundup_power2_divisions", "", FieldKind::list},
     [](const ReuseSimResults& r) -> Cell {
         const auto& v = r.allocator_settings->roundup_power2_divisions;
         return v ? Cell(std::vector<std::uint64_t>(v->begin(), v->end())) : Cell();
     }},
    {{"garbage_collection_threshold", "", FieldKind::real},
     [](const ReuseSimResults& r) { return optional_cell(r.allocator_settings->garbage_collection_threshold); }},
    {{"expandable_segments", "", FieldKind::boolean},
     [](const ReuseSimResults& r) { return optional_cell(r.allocator_settings->expandable_segments); }},
    {{"overridden", "", FieldKind::list}, [](const ReuseSimResults& r) -> Cell { return r.overridden_settings; }},
    {{"changes", "", FieldKind::records},
     [](const ReuseSimResults& r) { return records_cell(make_records(Columns<SettingsChange>(kSettingsChangeColumns), r.settings_changes)); },
     Shown::always, false, settings_change_schema},
};
constexpr auto settings_schema = nested_schema<kSettingsColumns>;

// ------------------------------------------------------------ tuner

// A row of the tuner's table: a grid point, its replay, its rank.
struct TuneRowView {
    const rs::TuneRow* row;
    std::uint64_t rank;
    bool from_snapshot;  // the baseline is the snapshot's own setting
};

// A setting's knobs as a record: one key per row of kKnobs, typed.
Cell knob_cell(const rs::TorchOptions& o, rs::Knob knob) {
    switch (knob) {
        case rs::Knob::max_split_size: return unless(o.max_split_size, rs::TorchOptions::kNoLimit);
        case rs::Knob::roundup_power2_divisions:
            return std::vector<std::uint64_t>(o.roundup_power2_divisions.begin(), o.roundup_power2_divisions.end());
        case rs::Knob::expandable_segments: return o.expandable_segments;
        case rs::Knob::garbage_collection_threshold: return o.garbage_collection_threshold;
    }
    return Cell();
}
FieldKind knob_kind(rs::Knob knob) {
    switch (knob) {
        case rs::Knob::max_split_size: return FieldKind::bytes;
        case rs::Knob::roundup_power2_divisions: return FieldKind::list;
        case rs::Knob::expandable_segments: return FieldKind::boolean;
        case rs::Knob::garbage_collection_threshold: return FieldKind::real;
    }
    return FieldKind::text;
}
Cell settings_cell(const TuneRowView& v) {
    Record record;
    for (const Named<rs::KnobSpec>& knob : rs::kKnobs)
        record.add(Field{knob.name, "", knob_kind(knob.value.knob)}, knob_cell(v.row->point.options, knob.value.knob));
    return record_cell(std::move(record));
}
const FieldSchemaSet& knob_settings_schema() {
    static const FieldSchemaSet set = [] {
        FieldSchemaSet s;
        for (const Named<rs::KnobSpec>& knob : rs::kKnobs) s.fields.push_back({Field{knob.name, "", knob_kind(knob.value.knob)}});
        return s;
    }();
    return set;
}

// The table's setting: the recorded (or baseline) one says so first. The
// table wraps it after its commas (the full text is in JSON and the answer).
std::string conf_text(const TuneRowView& v) {
    const std::string conf = rs::alloc_conf(v.row->point.options);
    const std::string note = v.row->point.recorded ? std::string(v.from_snapshot ? "recorded: " : "baseline: ") : std::string();
    return note + (conf.empty() ? std::string("(PyTorch's defaults)") : conf);
}

constexpr Column<TuneRowView> kTuneColumns[] = {
    {{"rank", "#", FieldKind::integer}, [](const TuneRowView& v) { return u64(v.rank); }},
    {{"alloc_conf", "PYTORCH_CUDA_ALLOC_CONF", FieldKind::text}, [](const TuneRowView& v) -> Cell { return rs::alloc_conf(v.row->point.options); },
     Shown::machine_only},
    {{"alloc_conf", "PYTORCH_CUDA_ALLOC_CONF", FieldKind::text, 2, ','}, [](const TuneRowView& v) -> Cell { return conf_text(v); },
     Shown::table_only},
    {{"recorded", "", FieldKind::boolean}, [](const TuneRowView& v) -> Cell { return v.row->point.recorded; }, Shown::machine_only},
    {{"settings", "", FieldKind::record}, settings_cell, Shown::machine_only, false, knob_settings_schema},
    {{"peak_reserved", "peak reserved", FieldKind::bytes}, [](const TuneRowView& v) { return u64(v.row->outcome.peak_reserved); }},
    {{"ooms", "OOMs", FieldKind::integer}, [](const TuneRowView& v) { return u64(v.row->outcome.ooms); }},
    {{"first_oom_event", "first OOM", FieldKind::integer}, [](const TuneRowView& v) { return optional_cell(v.row->outcome.first_oom_event); }},
    {{"granted_recorded_ooms", "", FieldKind::integer}, [](const TuneRowView& v) { return u64(v.row->outcome.granted_ooms); },
     Shown::machine_only},
    {{"retries", "retries", FieldKind::integer}, [](const TuneRowView& v) { return u64(v.row->outcome.retries); }},
    {{"upstream_allocs", "allocs", FieldKind::integer}, [](const TuneRowView& v) { return u64(v.row->outcome.device_allocs); }},
    {{"upstream_frees", "frees", FieldKind::integer}, [](const TuneRowView& v) { return u64(v.row->outcome.device_frees); }},
    {{"modelled_ms", "model ms", FieldKind::real, 2}, [](const TuneRowView& v) { return ms(v.row->outcome.modelled_us); }},
};

std::vector<TuneRowView> tune_rows(const ReuseSimResults& r) {
    std::vector<TuneRowView> rows;
    for (std::size_t i = 0; i < r.tune->rows.size(); ++i) rows.push_back({&r.tune->rows[i], i + 1, r.allocator_settings.has_value()});
    return rows;
}

// Table mode: the settings with one outcome (every figure of a row, and
// the recorded OOMs it grants, alike) as one row, in rank order.
struct TuneGroupView {
    std::vector<TuneRowView> members;  // ranked; the first the best
    bool list_all = false;             // --all-settings: every member, else the first
};

bool same_outcome(const rs::TuneOutcome& a, const rs::TuneOutcome& b) {
    return a.peak_reserved == b.peak_reserved && a.ooms == b.ooms && a.retries == b.retries && a.device_allocs == b.device_allocs &&
           a.device_frees == b.device_frees && a.modelled_us == b.modelled_us && a.first_oom_event == b.first_oom_event &&
           a.granted_ooms == b.granted_ooms;
}

std::vector<TuneGroupView> tune_groups(const ReuseSimResults& r, bool list_all) {
    std::vector<TuneGroupView> groups;
    for (const TuneRowView& v : tune_rows(r)) {
        const auto same = std::find_if(groups.begin(), groups.end(), [&](const TuneGroupView& g) {
            return same_outcome(g.members.front().row->outcome, v.row->outcome);
        });
        if (same != groups.end()) same->members.push_back(v);
        else groups.push_back({{v}, list_all});
    }
    return groups;
}

// The ranks of a group's settings, runs as ranges: "1-4", "19,21".
std::string rank_ranges(const TuneGroupView& g) {
    std::string text;
    for (std::size_t i = 0; i < g.members.size();) {
        std::size_t j = i;
        while (j + 1 < g.members.size() && g.members[j + 1].rank == g.members[j].rank + 1) ++j;
        text += (text.empty() ? "" : ",") + std::to_string(g.members[i].rank) + (j > i ? "-" + std::to_string(g.members[j].rank) : "");
        i = j + 1;
    }
    return text;
}

// The settings of a group, one a line; without --all-settings the best, and
// how many more share its outcome.
std::string group_settings_text(const TuneGroupView& g) {
    std::string text = conf_text(g.members.front());
    if (!g.list_all) {
        if (g.members.size() > 1)
            text += "\n(and " + std::to_string(g.members.size() - 1) + " more setting" + (g.members.size() > 2 ? "s" : "") + " alike)";
        return text;
    }
    for (std::size_t i = 1; i < g.members.size(); ++i) text += "\n" + conf_text(g.members[i]);
    return text;
}

const rs::TuneOutcome& outcome(const TuneGroupView& g) { return g.members.front().row->outcome; }

// The tune table on a terminal or in a pipe: a row per outcome, its
// settings on lines of their own under its figures (the # is their ranks
// in the document's settings).
constexpr Column<TuneGroupView> kTuneGroupColumns[] = {
    {{"rank", "#", FieldKind::text}, [](const TuneGroupView& g) -> Cell { return rank_ranges(g); }},
    {{"peak_reserved", "peak reserved", FieldKind::bytes}, [](const TuneGroupView& g) { return u64(outcome(g).peak_reserved); }},
    {{"ooms", "OOMs", FieldKind::integer}, [](const TuneGroupView& g) { return u64(outcome(g).ooms); }},
    {{"first_oom_event", "first OOM", FieldKind::integer}, [](const TuneGroupView& g) { return optional_cell(outcome(g).first_oom_event); }},
    {{"retries", "retries", FieldKind::integer}, [](const TuneGroupView& g) { return u64(outcome(g).retries); }},
    {{"upstream_allocs", "allocs", FieldKind::integer}, [](const TuneGroupView& g) { return u64(outcome(g).device_allocs); }},
    {{"upstream_frees", "frees", FieldKind::integer}, [](const TuneGroupView& g) { return u64(outcome(g).device_frees); }},
    {{"modelled_ms", "model ms", FieldKind::real, 2}, [](const TuneGroupView& g) { return ms(outcome(g).modelled_us); }},
    {{"alloc_conf", "PYTORCH_CUDA_ALLOC_CONF", FieldKind::text, 2, ','}, [](const TuneGroupView& g) -> Cell { return group_settings_text(g); }},
};

// Rows of the tune table without --all-settings: the best outcomes.
constexpr std::size_t kTuneRowsShown = 10;

std::string baseline_name(const ReuseSimResults& r) { return r.allocator_settings ? "as recorded" : "with the baseline settings"; }

std::string tune_answer_text(const ReuseSimRequest& q, const ReuseSimResults& r, Unit unit) {
    return rs::tune_answer(r.tune->rows, q.capacity, r.tune->search, [unit](std::uint64_t b) { return format_bytes(b, unit); },
                           baseline_name(r), r.summary ? r.summary->oom_events : 0);
}

const rs::TuneRow* recorded_row(const TuneResults& t) {
    for (const rs::TuneRow& row : t.rows)
        if (row.point.recorded) return &row;
    return nullptr;
}

// A recording without an OOM: the cap each of the top settings needs.
struct FitCapacityView {
    const rs::TuneRow& row;
    const FitCapacity& fit;
};
std::vector<FitCapacityView> fit_capacity_views(const TuneResults& t) {
    std::vector<FitCapacityView> views;
    for (const FitCapacity& f : t.fit_capacities) views.push_back({t.rows[f.row], f});
    return views;
}
constexpr Column<FitCapacityView> kFitCapacityColumns[] = {
    {{"rank", "", FieldKind::integer}, [](const FitCapacityView& v) { return u64(v.fit.row + 1); }},
    {{"alloc_conf", "", FieldKind::text}, [](const FitCapacityView& v) -> Cell { return rs::alloc_conf(v.row.point.options); }},
    {{"smallest_capacity_bytes", "", FieldKind::bytes}, [](const FitCapacityView& v) { return optional_cell(v.fit.search.smallest); }},
    {{"capacity_resolution_bytes", "", FieldKind::bytes},
     [](const FitCapacityView& v) { return v.fit.search.smallest ? u64(v.fit.search.resolution) : Cell(); }},
    {{"capacity_not_searched", "", FieldKind::text},
     [](const FitCapacityView& v) { return v.fit.search.not_searched.empty() ? Cell() : Cell(v.fit.search.not_searched); }},
};
constexpr auto fit_capacity_schema = nested_schema<kFitCapacityColumns>;

// "The recording has no OOM; ... would need a cap of ...": one line.
std::optional<std::string> fit_capacities_text(const TuneResults& t, Unit unit) {
    if (t.fit_capacities.empty()) return std::nullopt;
    std::string text = "The recording has no OOM; the smallest cap each of the top settings runs in without one: ";
    bool first = true;
    for (const FitCapacityView& v : fit_capacity_views(t)) {
        text += first ? "" : "; ";
        first = false;
        const std::string conf = rs::alloc_conf(v.row.point.options);
        text += (v.fit.search.smallest ? format_bytes(*v.fit.search.smallest, unit) : "not known (" + v.fit.search.not_searched + ")") +
                " with " + (conf.empty() ? std::string("PyTorch's defaults") : conf);
    }
    return text + ".";
}

// The document's "tune": the answer and its parts, for scripts.
struct TuneDocument {
    const ReuseSimRequest& q;
    const ReuseSimResults& r;
    const TuneResults& t() const { return *r.tune; }
    const rs::TuneRow& best() const { return t().rows.front(); }
    const rs::TuneRow& recorded() const {
        const rs::TuneRow* row = recorded_row(t());
        return row ? *row : best();  // the grid always holds it; this only guards
    }
};
constexpr Column<TuneDocument> kTuneDocumentColumns[] = {
    {{"grid_points", "", FieldKind::integer}, [](const TuneDocument& d) { return u64(d.t().grid_points); }},
    {{"best_alloc_conf", "", FieldKind::text}, [](const TuneDocument& d) -> Cell { return rs::alloc_conf(d.best().point.options); }},
    {{"best_fits", "", FieldKind::boolean}, [](const TuneDocument& d) -> Cell { return d.best().outcome.ooms == 0; }},
    {{"best_peak_reserved", "", FieldKind::bytes}, [](const TuneDocument& d) { return u64(d.best().outcome.peak_reserved); }},
    {{"best_first_oom_event", "", FieldKind::integer}, [](const TuneDocument& d) { return optional_cell(d.best().outcome.first_oom_event); }},
    // The input's OOMs, and how many the best setting turns into successes:
    // after those the program would have gone its own way (best_changes_course),
    // asking for memory the recording never saw.
    {{"recorded_oom_events", "", FieldKind::integer}, [](const TuneDocument& d) { return u64(d.r.summary ? d.r.summary->oom_events : 0); }},
    {{"best_granted_recorded_ooms", "", FieldKind::integer}, [](const TuneDocument& d) { return u64(d.best().outcome.granted_ooms); }},
    {{"best_changes_course", "", FieldKind::boolean}, [](const TuneDocument& d) -> Cell { return d.best().outcome.granted_ooms > 0; }},
    {{"recorded_alloc_conf", "", FieldKind::text}, [](const TuneDocument& d) -> Cell { return rs::alloc_conf(d.recorded().point.options); }},
    {{"recorded_fits", "", FieldKind::boolean}, [](const TuneDocument& d) -> Cell { return d.recorded().outcome.ooms == 0; }},
    {{"recorded_peak_reserved", "", FieldKind::bytes}, [](const TuneDocument& d) { return u64(d.recorded().outcome.peak_reserved); }},
    {{"recorded_first_oom_event", "", FieldKind::integer},
     [](const TuneDocument& d) { return optional_cell(d.recorded().outcome.first_oom_event); }},
    {{"smallest_capacity_bytes", "", FieldKind::bytes}, [](const TuneDocument& d) { return optional_cell(d.t().search.smallest); }},
    {{"capacity_resolution_bytes", "", FieldKind::bytes},
     [](const TuneDocument& d) { return d.t().search.smallest ? u64(d.t().search.resolution) : Cell(); }},
    {{"capacity_search_replays", "", FieldKind::integer}, [](const TuneDocument& d) { return u64(d.t().search.replays); }},
    {{"capacity_not_searched", "", FieldKind::text},
     [](const TuneDocument& d) { return d.t().search.not_searched.empty() ? Cell() : Cell(d.t().search.not_searched); }},
    {{"answer", "", FieldKind::text}, [](const TuneDocument& d) -> Cell { return tune_answer_text(d.q, d.r, Unit::automatic); }},
    // A recording without an OOM: the top settings' smallest caps (empty otherwise).
    {{"fit_capacities", "", FieldKind::records},
     [](const TuneDocument& d) { return records_cell(make_records(Columns<FitCapacityView>(kFitCapacityColumns), fit_capacity_views(d.t()))); },
     Shown::always, false, fit_capacity_schema},
};
constexpr auto tune_document_schema = nested_schema<kTuneDocumentColumns>;
Cell tune_cell(const ReuseSimRequest& q, const ReuseSimResults& r) {
    if (!r.tune || r.tune->rows.empty()) return Cell();
    return record_cell(make_record(Columns<TuneDocument>(kTuneDocumentColumns), TuneDocument{q, r}));
}

// ------------------------------------------------------------ --confirm

std::string setting_or_defaults(const std::string& conf) { return conf.empty() ? std::string("(PyTorch's defaults)") : conf; }
Cell real_cell(const ConfirmRun& run, std::uint64_t RunFigures::*field) {
    return run.outcome.real ? u64((*run.outcome.real).*field) : Cell();
}

const char* confirm_stop_name(ConfirmStop stop) {
    switch (stop) {
        case ConfirmStop::converged: return "converged";
        case ConfirmStop::runs_spent: return "runs_spent";
        case ConfirmStop::nothing_left: return "nothing_left";
        case ConfirmStop::interrupted: return "interrupted";
    }
    return "converged";
}

// A tuning of a real run's recording: what it ranked best, and the
// smallest capacity that fits.
constexpr Column<ConfirmTuning> kConfirmTuningColumns[] = {
    {{"run", "", FieldKind::integer}, [](const ConfirmTuning& t) { return u64(t.run); }},
    {{"capacity_bytes", "", FieldKind::bytes}, [](const ConfirmTuning& t) { return unless(t.capacity, rs::kUnlimited); }},
    {{"best_alloc_conf", "", FieldKind::text},
     [](const ConfirmTuning& t) -> Cell { return t.tune.rows.empty() ? Cell() : Cell(rs::alloc_conf(t.tune.rows.front().point.options)); }},
    {{"best_fits", "", FieldKind::boolean},
     [](const ConfirmTuning& t) -> Cell { return t.tune.rows.empty() ? Cell() : Cell(t.tune.rows.front().outcome.ooms == 0); }},
    {{"settings_that_fit", "", FieldKind::integer},
     [](const ConfirmTuning& t) {
         return u64(static_cast<std::uint64_t>(
             std::count_if(t.tune.rows.begin(), t.tune.rows.end(), [](const rs::TuneRow& row) { return row.outcome.ooms == 0; })));
     }},
    {{"smallest_capacity_bytes", "", FieldKind::bytes}, [](const ConfirmTuning& t) { return optional_cell(t.tune.search.smallest); }},
    {{"capacity_not_searched", "", FieldKind::text},
     [](const ConfirmTuning& t) { return t.tune.search.not_searched.empty() ? Cell() : Cell(t.tune.search.not_searched); }},
};
constexpr auto confirm_tuning_schema = nested_schema<kConfirmTuningColumns>;

// A real run of --confirm: the prediction beside what torch.cuda.memory_stats() said.
constexpr Column<ConfirmRun> kConfirmRunColumns[] = {
    {{"rank", "#", FieldKind::integer}, [](const ConfirmRun& x) { return u64(x.rank); }},
    {{"setting", "PYTORCH_CUDA_ALLOC_CONF", FieldKind::text, 2, ','},
     [](const ConfirmRun& x) -> Cell { return setting_or_defaults(x.outcome.setting); }, Shown::table_only},
    {{"setting", "", FieldKind::text}, [](const ConfirmRun& x) -> Cell { return x.outcome.setting; }, Shown::machine_only},
    {{"alloc_conf", "", FieldKind::text}, [](const ConfirmRun& x) -> Cell { return x.alloc_conf; }, Shown::machine_only},
    {{"predicted_ooms", "OOMs pred", FieldKind::integer}, [](const ConfirmRun& x) { return u64(x.outcome.predicted.ooms); }},
    {{"real_ooms", "real", FieldKind::integer}, [](const ConfirmRun& x) { return real_cell(x, &RunFigures::ooms); }},
    // The OOMs the program saw (torch.cuda.OutOfMemoryError reaching its
    // Python code, Python 3.12 and later); null: not known. real_ooms is
    // the allocator's, which also counts requests retried inside PyTorch.
    {{"real_program_ooms", "seen", FieldKind::integer},
     [](const ConfirmRun& x) { return x.outcome.real ? optional_cell(x.outcome.real->program_ooms) : Cell(); }},
    {{"predicted_peak_reserved", "peak pred", FieldKind::bytes},
     [](const ConfirmRun& x) { return u64(x.outcome.predicted.peak_reserved); }},
    {{"real_peak_reserved", "real", FieldKind::bytes}, [](const ConfirmRun& x) { return real_cell(x, &RunFigures::peak_reserved); }},
    {{"predicted_retries", "retries pred", FieldKind::integer}, [](const ConfirmRun& x) { return u64(x.outcome.predicted.retries); }},
    {{"real_retries", "real", FieldKind::integer}, [](const ConfirmRun& x) { return real_cell(x, &RunFigures::retries); }},
    {{"predicted_device_allocs", "", FieldKind::integer}, [](const ConfirmRun& x) { return u64(x.outcome.predicted.device_allocs); },
     Shown::machine_only},
    {{"real_device_allocs", "", FieldKind::integer}, [](const ConfirmRun& x) { return real_cell(x, &RunFigures::device_allocs); },
     Shown::machine_only},
    {{"wall_seconds", "wall s", FieldKind::real, 1}, [](const ConfirmRun& x) -> Cell { return x.wall_seconds; }},
    {{"exit_status", "exit", FieldKind::integer}, [](const ConfirmRun& x) { return u64(static_cast<std::uint64_t>(x.exit_status)); }},
    {{"held", "held", FieldKind::boolean}, [](const ConfirmRun& x) -> Cell { return x.outcome.held; }},
    // The tuning that chose the setting: 0 the trace's, N run N's recording.
    {{"chosen_by_run", "by", FieldKind::integer}, [](const ConfirmRun& x) { return u64(x.outcome.chosen_by); }},
    {{"recording", "", FieldKind::text}, [](const ConfirmRun& x) { return optional_cell(x.recording); }, Shown::machine_only},
    {{"stats_file", "", FieldKind::text}, [](const ConfirmRun& x) { return optional_cell(x.stats); }, Shown::machine_only},
    {{"process_rank", "", FieldKind::integer},
     [](const ConfirmRun& x) { return x.process_rank ? u64(*x.process_rank) : Cell(); }, Shown::machine_only},
    {{"process_order", "", FieldKind::integer},
     [](const ConfirmRun& x) { return x.process_order ? u64(*x.process_order) : Cell(); }, Shown::machine_only},
    {{"process_pid", "", FieldKind::integer},
     [](const ConfirmRun& x) { return x.process_pid ? Cell(std::int64_t{*x.process_pid}) : Cell(); }, Shown::machine_only},
    {{"note", "", FieldKind::text}, [](const ConfirmRun& x) { return x.outcome.note.empty() ? Cell() : Cell(x.outcome.note); },
     Shown::machine_only},
};
constexpr auto confirm_run_schema = nested_schema<kConfirmRunColumns>;

constexpr Column<ConfirmResults> kConfirmColumns[] = {
    {{"candidates", "", FieldKind::integer}, [](const ConfirmResults& c) { return u64(c.candidates); }},
    {{"user_alloc_conf", "", FieldKind::text}, [](const ConfirmResults& c) { return optional_cell(c.user_alloc_conf); }},
    {{"user_alloc_conf_variable", "", FieldKind::text}, [](const ConfirmResults& c) { return optional_cell(c.user_alloc_conf_variable); }},
    {{"kept_alloc_conf", "", FieldKind::list}, [](const ConfirmResults& c) -> Cell { return c.merged.kept; }},
    {{"replaced_alloc_conf", "", FieldKind::list}, [](const ConfirmResults& c) -> Cell { return c.merged.replaced; }},
    {{"interrupted", "", FieldKind::boolean}, [](const ConfirmResults& c) -> Cell { return c.interrupted; }},
    // A run ran without an OOM (the last): its setting is the answer.
    {{"converged", "", FieldKind::boolean}, [](const ConfirmResults& c) -> Cell { return c.converged; }},
    {{"confirmed", "", FieldKind::boolean}, [](const ConfirmResults& c) -> Cell { return c.converged; }},
    {{"stop", "", FieldKind::text}, [](const ConfirmResults& c) -> Cell { return std::string(confirm_stop_name(c.stop)); }, Shown::always,
     false, nullptr, [] { return std::vector<std::string_view>{"converged", "runs_spent", "nothing_left", "interrupted"}; }},
    {{"cap_bytes", "", FieldKind::bytes}, [](const ConfirmResults& c) { return optional_cell(c.cap); }},
    {{"tunings", "", FieldKind::records},
     [](const ConfirmResults& c) { return records_cell(make_records(Columns<ConfirmTuning>(kConfirmTuningColumns), c.tunings)); },
     Shown::always, false, confirm_tuning_schema},
    {{"runs", "", FieldKind::records},
     [](const ConfirmResults& c) { return records_cell(make_records(Columns<ConfirmRun>(kConfirmRunColumns), c.runs)); }, Shown::always,
     false, confirm_run_schema},
};
constexpr auto confirm_schema = nested_schema<kConfirmColumns>;
Cell confirm_cell(const ReuseSimResults& r) {
    if (!r.confirm) return Cell();
    Record record = make_record(Columns<ConfirmResults>(kConfirmColumns), *r.confirm);
    const std::vector<std::string> lines = confirm_answer_lines(r);
    record.add(Field{"answer", "", FieldKind::text}, join(lines, "\n"));
    record.add(Field{"final_answer", "", FieldKind::text}, lines.empty() ? std::string() : lines.back());
    return record_cell(std::move(record));
}
const FieldSchemaSet& confirm_document_schema() {
    static const FieldSchemaSet set = [] {
        FieldSchemaSet s = confirm_schema();
        s.fields.push_back({Field{"answer", "", FieldKind::text}});
        s.fields.push_back({Field{"final_answer", "", FieldKind::text}});
        return s;
    }();
    return set;
}

// The recording's own cap (FILE.stats.json beside the trace, --record's).
constexpr Column<Document> kRecordedCapColumns[] = {
    {{"allowed_memory_maximum", "", FieldKind::bytes}, [](const Document& d) { return u64(d.q.recording->cap->call.allowed_memory_maximum); }},
    {{"memory_fraction", "", FieldKind::real}, [](const Document& d) -> Cell { return d.q.recording->cap->call.fraction; }},
    {{"device", "", FieldKind::integer}, [](const Document& d) { return u64(d.q.recording->cap->call.device); }},
    {{"device_total", "", FieldKind::bytes}, [](const Document& d) { return u64(d.q.recording->cap->call.device_total); }},
    {{"set_by", "", FieldKind::text}, [](const Document& d) -> Cell { return std::string(d.q.recording->cap->call.by_gpumem ? "gpumem" : "program"); },
     Shown::always, false, nullptr, [] { return std::vector<std::string_view>{"gpumem", "program"}; }},
    {{"replaced_gpumem", "", FieldKind::boolean}, [](const Document& d) -> Cell { return d.q.recording->cap->replaced_gpumem; }},
    {{"program_changes", "", FieldKind::integer}, [](const Document& d) { return u64(d.q.recording->cap->program_changes); }},
    {{"used", "", FieldKind::boolean}, [](const Document& d) -> Cell { return d.q.capacity_from_recording; }},
    {{"stats_file", "", FieldKind::text}, [](const Document& d) -> Cell { return d.q.recording->path; }},
};
constexpr auto recorded_cap_schema = nested_schema<kRecordedCapColumns>;
Cell recorded_cap_cell(const Document& d) {
    if (!d.q.recording || !d.q.recording->cap) return Cell();
    return record_cell(make_record(Columns<Document>(kRecordedCapColumns), d));
}

// A replay of the recorded settings (torch-caching's lane, the tuner's
// recorded row; without torch-caching and without a cap, any strategy)
// that ran out of memory less often than the recording did: the program
// had less memory than the replay gives. One line, its likely causes and
// what to pass.
std::optional<std::string> fewer_ooms_text(const ReuseSimRequest& q, const ReuseSimResults& r) {
    if (!r.summary || r.summary->oom_events == 0) return std::nullopt;
    std::optional<std::uint64_t> replay;
    if (r.tune) {
        if (const rs::TuneRow* row = recorded_row(*r.tune)) replay = row->outcome.ooms;
    } else {
        for (const rs::LaneResult& lane : r.lanes)
            if (lane.strategy == "torch-caching") replay = lane.ooms;
        if (!replay && q.capacity == rs::kUnlimited)
            for (const rs::LaneResult& lane : r.lanes) replay = std::min(replay.value_or(lane.ooms), lane.ooms);
    }
    if (!replay || *replay >= r.summary->oom_events) return std::nullopt;
    const std::optional<std::uint64_t> capacity = q.capacity == rs::kUnlimited ? std::nullopt : std::optional<std::uint64_t>(q.capacity);
    std::optional<std::uint64_t> recorded_cap;
    if (q.recording && q.recording->cap) recorded_cap = q.recording->cap->call.allowed_memory_maximum;
    return fewer_ooms_message(r.summary->oom_events, *replay, capacity, recorded_cap, r.summary->recorded.peak_reserved_bytes,
                              r.replay_causes);
}

constexpr Column<Document> kDocumentColumns[] = {
    {{"input", "", FieldKind::record}, [](const Document& d) { return record_cell(make_record(Columns<Document>(kInputColumns), d)); },
     Shown::always, false, input_schema},
    {{"events", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().events); }},
    {{"requests", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().allocs); }},
    {{"frees", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().frees); }},
    {{"sync_points", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().syncs); }},
    {{"empty_cache_points", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().empty_caches); }},
    {{"oom_events", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().oom_events); }},
    {{"skipped_events", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().skipped); }},
    {{"streams", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().streams); }},
    {{"peak_live_bytes", "", FieldKind::bytes}, [](const Document& d) { return u64(d.summary().peak_live_bytes); }},
    {{"largest_request_bytes", "", FieldKind::bytes}, [](const Document& d) { return u64(d.summary().largest_request); }},
    {{"max_live_allocations", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().max_live_allocations); }},
    {{"live_at_end", "", FieldKind::integer}, [](const Document& d) { return u64(d.summary().live_at_end); }},
    {{"capacity_bytes", "", FieldKind::bytes}, [](const Document& d) { return unless(d.q.capacity, rs::kUnlimited); }},
    {{"recorded_cap", "", FieldKind::record}, recorded_cap_cell, Shown::always, false, recorded_cap_schema},
    {{"fewer_ooms_than_recorded", "", FieldKind::text}, [](const Document& d) { return optional_cell(fewer_ooms_text(d.q, d.r)); }},
    {{"recorded", "", FieldKind::record}, recorded_cell, Shown::always, false, recorded_schema},
    {{"allocator_settings", "", FieldKind::record},
     [](const Document& d) {
         return d.r.allocator_settings ? record_cell(make_record(Columns<ReuseSimResults>(kSettingsColumns), d.r)) : Cell();
     },
     Shown::always, false, settings_schema},
    {{"simulation_seconds", "", FieldKind::real}, [](const Document& d) -> Cell { return d.summary().seconds; }},
    {{"events_per_second", "", FieldKind::real},
     [](const Document& d) -> Cell {
         const rs::ReplaySummary& s = d.summary();
         return s.seconds > 0 ? static_cast<double>(s.events) / s.seconds : 0.0;
     }},
    {{"cost_table", "", FieldKind::record},
     [](const Document& d) { return record_cell(make_record(Columns<Document>(kCostTableColumns), d)); }, Shown::always, false,
     cost_table_schema},
    {{"options", "", FieldKind::record}, options_cell, Shown::always, false, options_schema},
    {{"details", "", FieldKind::record}, [](const Document& d) { return per_strategy(d.r, detail_record); }, Shown::always, false,
     per_strategy_schema<detail_schema>},
    {{"upstream", "", FieldKind::record},
     [](const Document& d) {
         return per_strategy(d.r, [](const rs::LaneResult& l) { return make_record(Columns<rs::UpstreamCounters>(kUpstreamColumns), l.counters); });
     },
     Shown::always, false, per_strategy_schema<upstream_schema>},
    // With --execute only.
    {{"execute", "", FieldKind::record},
     [](const Document& d) {
         return d.r.execute ? record_cell(make_record(Columns<ExecuteResults>(kExecuteColumns), *d.r.execute)) : Cell();
     },
     Shown::always, true, execute_schema},
    // With --tune or --sweep only.
    {{"tune", "", FieldKind::record}, [](const Document& d) { return tune_cell(d.q, d.r); }, Shown::always, true, tune_document_schema},
    // With --confirm only: the real runs, as each ended.
    {{"confirm", "", FieldKind::record}, [](const Document& d) { return confirm_cell(d.r); }, Shown::always, true,
     confirm_document_schema},
    // With --max-batch only (its document holds this key alone).
    {{"max_batch", "", FieldKind::record}, [](const Document& d) { return max_batch_cell(d.q, d.r); }, Shown::always, true,
     max_batch_document_schema},
};

// ------------------------------------------------------------ text

std::string head_line(const ReuseSimRequest& q, const ReuseSimResults& r, Unit unit) {
    const rs::ReplaySummary& s = *r.summary;
    // The rows replay the requests the recording refused too (its OOMs), so
    // they count more requests, and may hold more live, than the recording:
    // the head line says so where the two numbers are.
    const std::string requests =
        s.oom_events == 0 ? std::to_string(s.allocs) + " requests, peak live "
                          : std::to_string(s.allocs) + " requests + " + std::to_string(s.oom_events) + " refused as recorded (rows replay all " +
                                std::to_string(s.allocs + s.oom_events) + "), recorded peak live ";
    std::string head = "reuse-sim: " + r.input_description + ": " + std::to_string(s.events) + " events, " + requests +
                       format_bytes(s.peak_live_bytes, unit) + ", largest request " + format_bytes(s.largest_request, unit);
    if (q.capacity != rs::kUnlimited) head += ", capacity " + format_bytes(q.capacity, unit);
    if (q.capacity_from_recording)
        head += std::string(" (the recording's cap, set by ") + (q.recording->cap->call.by_gpumem ? "gpumem" : "the program") + ")";
    return head;
}

// "allocator settings of the snapshot: max_split_size 64 MiB, ..." and what
// the recording itself did, under the head line.
std::vector<std::string> recorded_lines(const ReuseSimResults& r, Unit unit) {
    std::vector<std::string> lines;
    if (r.allocator_settings) {
        const rs::RecordedAllocatorSettings& a = *r.allocator_settings;
        std::string line = r.settings_changes.empty() ? "allocator settings of the snapshot:" : "allocator settings it started with:";
        if (a.max_split_size)
            line += " max_split_size " + (*a.max_split_size == rs::RecordedAllocatorSettings::kUnlimitedSplit ? std::string("unlimited")
                                                                                                            : format_bytes(*a.max_split_size, unit)) + ",";
        if (a.roundup_power2_divisions) {
            // As PYTORCH_CUDA_ALLOC_CONF writes it, so that it can be pasted back.
            const std::string d = rs::format_roundup_power2_divisions(*a.roundup_power2_divisions);
            line += " roundup_power2_divisions " + (d.empty() ? std::string("off") : d) + ",";
        }
        if (a.garbage_collection_threshold) line += " garbage_collection_threshold " + format_decimal(*a.garbage_collection_threshold, 2) + ",";
        if (a.expandable_segments) line += std::string(" expandable_segments ") + (*a.expandable_segments ? "True" : "False") + ",";
        if (line.back() == ',') line.pop_back();
        if (!r.overridden_settings.empty()) line += " (overridden by flags: " + join(r.overridden_settings) + ")";
        lines.push_back(line);
    }
    const rs::ReplaySummary& s = *r.summary;
    if (s.recorded.segment_events || s.oom_events)
        lines.push_back("recorded by the allocator itself: " + std::to_string(s.recorded.device_allocs) + " device allocs, " +
                        std::to_string(s.recorded.device_frees) + " device frees, peak reserved " +
                        format_bytes(s.recorded.peak_reserved_bytes, unit) + ", " + std::to_string(s.oom_events) + " OOMs");
    return lines;
}

std::string execute_line(const ExecuteResults& x) {
    return "--execute on GPU " + std::to_string(x.device.ordinal()) + " (" + x.device_name +
           "): GPU ms is the host time of the real CUDA calls; upstream call counts " +
           (!x.out_of_memory().empty() ? "not compared: the GPU ran out of memory"
            : x.mismatched().empty()   ? "agree with the simulation"
                                       : "DIFFER from the simulation");
}

// One line of levels per strategy: reserved bytes over the run, every row on
// one scale (the largest peak) so that rows compare, each row's own peak
// printed at its end.
std::vector<std::string> reserved_chart(const rs::Timeline& timeline, const ReuseSimResults& r, const LevelChartStyle& style,
                                        const OutputOptions& output) {
    const Unit unit = output.unit;
    const std::size_t points = timeline.points();
    if (points == 0) return {};
    std::vector<LevelSeries> series;
    for (std::size_t l = 0; l < r.lanes.size(); ++l) {
        LevelSeries s{r.lanes[l].strategy, {}};
        for (std::size_t p = 0; p < points; ++p) s.values.push_back(static_cast<double>(timeline.reserved(p, l)));
        series.push_back(std::move(s));
    }
    LevelSeries live{"live", {}};
    for (std::size_t p = 0; p < points; ++p) live.values.push_back(static_cast<double>(timeline.live(p)));
    series.push_back(std::move(live));
    std::vector<std::string> lines = {"", "Reserved bytes over events " + std::to_string(timeline.first_event(0)) + ".." +
                                              std::to_string(timeline.first_event(points - 1)) + " (one scale for all rows):"};
    LevelChartStyle shared = style;
    shared.shared_scale = true;
    shared.columns = output.columns;
    for (std::string& line : render_level_chart(series, shared, [unit](double peak) { return format_bytes(static_cast<std::uint64_t>(peak), unit); }))
        lines.push_back(std::move(line));
    return lines;
}

// Table mode: what follows the table. A failed --execute check still says
// how the counts compared; the legend and the chart come with a whole run.
std::vector<std::string> text_after(const ReuseSimRequest& q, const ReuseSimResults& r, const OutputOptions& output) {
    std::vector<std::string> lines;
    if (r.execute && r.execute->free_bytes_after) {
        lines.push_back("");
        lines.push_back(execute_line(*r.execute));
    }
    if (!r.complete) return lines;
    lines.push_back("");
    lines.push_back("* best in its column, among the strategies without OOMs (slack and frag: among those that reused memory). "
                    "Model ms: CUDA calls priced by the cost table (" + r.cost_device + ", " + (q.costs ? *q.costs : std::string("built-in")) + ").");
    if (q.chart && r.timeline)
        for (std::string& line : reserved_chart(*r.timeline, r, q.chart_style, output)) lines.push_back(std::move(line));
    return lines;
}

// The variable the recording's torch reads its settings from: 2.9 and
// later PYTORCH_ALLOC_CONF, older torch PYTORCH_CUDA_ALLOC_CONF (a
// recording that does not say: the new name, as torch_reads_alloc_conf
// decides everywhere).
std::string_view alloc_conf_variable(const ReuseSimRequest& q) {
    const std::optional<std::string_view> version =
        q.recording && q.recording->torch_version ? std::optional<std::string_view>(*q.recording->torch_version) : std::nullopt;
    return torch_reads_alloc_conf(version) ? kAllocConfVariable : kCudaAllocConfVariable;
}

// Table mode, tune's first lines: the best setting as a line to paste
// before the program ("PYTORCH_ALLOC_CONF=expandable_segments:True"), where
// one avoids every OOM and is not PyTorch's defaults, and the next step:
// a real run under it (--confirm), where none was made.
std::vector<std::string> paste_lines(const ReuseSimRequest& q, const ReuseSimResults& r, std::string_view variable) {
    std::vector<std::string> lines;
    const rs::TuneRow& best = r.tune->rows.front();
    const std::string conf = rs::alloc_conf(best.point.options);
    if (best.outcome.ooms != 0 || conf.empty()) return lines;
    lines.push_back(std::string(variable) + "=" + conf);
    if (!q.recording || !q.recording->torch_version)
        lines.push_back("(torch before 2.9 reads " + std::string(kCudaAllocConfVariable) + "; the recording does not say its version)");
    if (!q.confirm && q.input.trace && *q.input.trace != "-")
        lines.push_back("next, a real run under it: gpumem reuse-sim tune --trace " + *q.input.trace + " ... --confirm -- CMD");
    lines.emplace_back();
    return lines;
}

// --tune, --sweep: the answer, then the ranked settings instead of the
// strategies. Table mode: every line within the terminal's width (100
// columns in a pipe: OutputOptions::columns); a row per outcome, the best 10 unless --all-settings
// (JSON and CSV: a row per setting, every one).
Report tune_report(const ReuseSimRequest& q, const ReuseSimResults& r, const OutputOptions& output, Report report) {
    report.fields = make_record(Columns<Document>(kDocumentColumns), Document{q, r});
    if (output.format != Format::table || r.tune->rows.empty()) {
        report.tables.push_back(make_table("settings", Columns<TuneRowView>(kTuneColumns), tune_rows(r), output.format));
        return report;
    }
    const auto add = [&output](std::vector<std::string>& lines, const std::string& text) { lines.push_back(fit_prose(text, output.columns)); };
    const bool all = q.tune && q.tune->all_settings;
    std::vector<TuneGroupView> groups = tune_groups(r, all);
    const std::size_t outcomes = groups.size();
    const bool hidden_settings = !all && groups.size() > kTuneRowsShown;
    if (hidden_settings) groups.resize(kTuneRowsShown);
    const std::string_view variable = alloc_conf_variable(q);
    Table table = make_table("settings", Columns<TuneGroupView>(kTuneGroupColumns), groups, output.format);
    for (Field& field : table.fields)
        if (field.key == "alloc_conf") field.header = variable;  // the variable the recording's torch reads
    table.last_below = true;
    report.tables.push_back(std::move(table));

    // The answer first: the line to paste, the next step, then the sentence
    // that says why; the input and the ranking below it.
    for (const std::string& line : paste_lines(q, r, variable)) add(report.text_before, line);
    add(report.text_before, tune_answer_text(q, r, output.unit));
    if (const std::optional<std::string> fits = fit_capacities_text(*r.tune, output.unit)) add(report.text_before, *fits);
    report.text_before.emplace_back();
    add(report.text_before, head_line(q, r, output.unit));
    for (const std::string& line : recorded_lines(r, output.unit)) add(report.text_before, line);
    report.text_before.emplace_back();
    const std::uint64_t replayed = r.tune->lanes_replayed;
    add(report.text_before,
        "torch-caching under " + std::to_string(r.tune->grid_points) + " settings" +
            (replayed != 0 && replayed < r.tune->grid_points
                 ? " (" + std::to_string(replayed) + " replayed: the others provably replay as one of them)"
                 : std::string()) +
            ", ranked: no OOM first (then the fewest), then the lowest peak reserved, fewer retries, less modelled time; a row per "
            "outcome" +
            (hidden_settings ? ", the best " + std::to_string(kTuneRowsShown) + " of " + std::to_string(outcomes) +
                                   " (--all-settings: every one, and every setting)"
                             : " (" + std::to_string(outcomes) + ")") +
            ":");
    if (!r.confirm) return report;
    Table runs = make_table("confirm_runs", Columns<ConfirmRun>(kConfirmRunColumns), r.confirm->runs, output.format);
    report.tables.push_back(std::move(runs));
    if (!r.confirm->merged.kept.empty())
        add(report.text_after,
            "Real runs kept these items of your PYTORCH_CUDA_ALLOC_CONF, which the tuner does not set: " + join(r.confirm->merged.kept, ","));
    for (const std::string& line : confirm_answer_lines(r)) add(report.text_after, line);
    report.text_after.insert(report.text_after.begin(), "");
    return report;
}

}  // namespace

namespace {

Report reuse_sim_document(const ReuseSimRequest& q, const ReuseSimResults& r, const OutputOptions& output) {
    Report report;
    report.command = q.command;
    report.warnings = q.warnings;
    report.warnings.insert(report.warnings.end(), r.warnings.begin(), r.warnings.end());
    if (q.max_batch) return r.max_batch ? max_batch_report(q, r, output, std::move(report)) : report;
    if (!r.summary) return report;  // nothing simulated yet
    if (r.complete)
        if (std::optional<std::string> fewer = fewer_ooms_text(q, r)) report.warnings.push_back(std::move(*fewer));
    if (r.tune) return tune_report(q, r, output, std::move(report));
    const bool measured = q.execute_on.has_value();
    report.tables.push_back(make_table("strategies", Columns<StrategyRow>(kStrategyColumns), strategy_rows(r), output.format,
                                       [measured](const Field& f) { return measured || f.key != "measured_ms"; }));
    report.fields = make_record(Columns<Document>(kDocumentColumns), Document{q, r});
    if (output.format != Format::table) return report;
    // A replay on the GPU that stopped part way leaves its table unmarked.
    if (!r.execute || r.execute->free_bytes_after) mark_best(report.tables.back(), strategy_rows(r), output.unit);
    // On a narrow terminal the figures every strategy shares (requests,
    // peak live) go first, then the counts behind the others (--wide and
    // --json keep them).
    report.tables.back().drop_order = {"requests",       "peak_live", "upstream_frees", "slack_at_peak", "implicit_syncs",
                                       "upstream_allocs", "retries",   "fragmentation",  "hit_rate"};
    report.text_before.push_back(head_line(q, r, output.unit));
    for (std::string& line : recorded_lines(r, output.unit)) report.text_before.push_back(std::move(line));
    report.text_after = text_after(q, r, output);
    return report;
}

}  // namespace

Report reuse_sim_report(const ReuseSimRequest& q, const ReuseSimResults& r, const OutputOptions& output) {
    Report report = reuse_sim_document(q, r, output);
    if (q.plot)
        if (std::optional<Plot> plot = reuse_sim_plot(q, r)) report.plot = plot_file(*q.plot, *plot);
    return report;
}

DocumentSchema reuse_sim_document_schema(const std::string& command) {
    return {command,
            {{"strategies", Columns<StrategyRow>(kStrategyColumns).schema()},
             {"settings", Columns<TuneRowView>(kTuneColumns).schema()},
             {"max_batch_settings", max_batch_table_schema()}},
            Columns<Document>(kDocumentColumns).schema()};
}

}  // namespace gpumem::cli
