// The report pieces of gpumem reuse-sim's jobs that replay an input
// (reuse_sim_common.hpp): the document's fields every replayed input has
// (its input, the replay's counts, the cost table, the options, the
// recorded settings and cap, the strategies' details), from the column
// tables the schema is made from too, the head line and the recorded
// settings' lines. Each job's report adds its own (reuse_sim_replay_report.cpp,
// reuse_sim_tune_report.cpp).
#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/memory_policy.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "reuse_sim/reuse_sim_common.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

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
Cell per_strategy(const std::vector<rs::LaneResult>& lanes, Make make) {
    Record record;
    for (const rs::LaneResult& lane : lanes) record.add(Field{interned(lane.strategy), "", FieldKind::record}, record_cell(make(lane)));
    return record_cell(std::move(record));
}

using Document = ReplayDocument;

constexpr Column<Document> kInputColumns[] = {
    {{"kind", "", FieldKind::text}, [](const Document& d) -> Cell { return std::string(d.input.trace ? "trace" : "workload"); },
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
    options.add(Field{"sync_every", "", FieldKind::integer}, d.setup.sync_every);
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
constexpr Column<ReplayedInput> kSettingsColumns[] = {
    {{"alloc_conf", "", FieldKind::text}, [](const ReplayedInput& r) { return optional_cell(r.allocator_settings->alloc_conf); }},
    {{"max_split_size", "", FieldKind::bytes},
     [](const ReplayedInput& r) {
         const auto& v = r.allocator_settings->max_split_size;
         return v && *v != rs::RecordedAllocatorSettings::kUnlimitedSplit ? Cell(*v) : Cell();
     }},
    {{"roundup_power2_divisions", "", FieldKind::list},
     [](const ReplayedInput& r) -> Cell {
         const auto& v = r.allocator_settings->roundup_power2_divisions;
         return v ? Cell(std::vector<std::uint64_t>(v->begin(), v->end())) : Cell();
     }},
    {{"garbage_collection_threshold", "", FieldKind::real},
     [](const ReplayedInput& r) { return optional_cell(r.allocator_settings->garbage_collection_threshold); }},
    {{"expandable_segments", "", FieldKind::boolean},
     [](const ReplayedInput& r) { return optional_cell(r.allocator_settings->expandable_segments); }},
    {{"overridden", "", FieldKind::list}, [](const ReplayedInput& r) -> Cell { return r.overridden_settings; }},
    {{"changes", "", FieldKind::records},
     [](const ReplayedInput& r) { return records_cell(make_records(Columns<SettingsChange>(kSettingsChangeColumns), r.settings_changes)); },
     Shown::always, false, settings_change_schema},
};
constexpr auto settings_schema = nested_schema<kSettingsColumns>;

// The recording's own cap (FILE.stats.json beside the trace, record's).
constexpr Column<Document> kRecordedCapColumns[] = {
    {{"allowed_memory_maximum", "", FieldKind::bytes}, [](const Document& d) { return u64(d.input.recording->cap->call.allowed_memory_maximum); }},
    {{"memory_fraction", "", FieldKind::real}, [](const Document& d) -> Cell { return d.input.recording->cap->call.fraction; }},
    {{"device", "", FieldKind::integer}, [](const Document& d) { return u64(d.input.recording->cap->call.device); }},
    {{"device_total", "", FieldKind::bytes}, [](const Document& d) { return u64(d.input.recording->cap->call.device_total); }},
    {{"set_by", "", FieldKind::text}, [](const Document& d) -> Cell { return std::string(d.input.recording->cap->call.by_gpumem ? "gpumem" : "program"); },
     Shown::always, false, nullptr, [] { return std::vector<std::string_view>{"gpumem", "program"}; }},
    {{"replaced_gpumem", "", FieldKind::boolean}, [](const Document& d) -> Cell { return d.input.recording->cap->replaced_gpumem; }},
    {{"program_changes", "", FieldKind::integer}, [](const Document& d) { return u64(d.input.recording->cap->program_changes); }},
    {{"used", "", FieldKind::boolean}, [](const Document& d) -> Cell { return d.setup.capacity_from_recording; }},
    {{"stats_file", "", FieldKind::text}, [](const Document& d) -> Cell { return d.input.recording->path; }},
};
constexpr auto recorded_cap_schema = nested_schema<kRecordedCapColumns>;
Cell recorded_cap_cell(const Document& d) {
    if (!d.input.recording || !d.input.recording->cap) return Cell();
    return record_cell(make_record(Columns<Document>(kRecordedCapColumns), d));
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
    {{"capacity_bytes", "", FieldKind::bytes}, [](const Document& d) { return unless(d.setup.capacity, rs::kUnlimited); }},
    {{"recorded_cap", "", FieldKind::record}, recorded_cap_cell, Shown::always, false, recorded_cap_schema},
    {{"fewer_ooms_than_recorded", "", FieldKind::text}, [](const Document& d) { return optional_cell(d.fewer_ooms); }},
    {{"recorded", "", FieldKind::record}, recorded_cell, Shown::always, false, recorded_schema},
    {{"allocator_settings", "", FieldKind::record},
     [](const Document& d) {
         return d.r.allocator_settings ? record_cell(make_record(Columns<ReplayedInput>(kSettingsColumns), d.r)) : Cell();
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
    {{"details", "", FieldKind::record}, [](const Document& d) { return per_strategy(d.lanes, detail_record); }, Shown::always, false,
     per_strategy_schema<detail_schema>},
    {{"upstream", "", FieldKind::record},
     [](const Document& d) {
         return per_strategy(d.lanes, [](const rs::LaneResult& l) { return make_record(Columns<rs::UpstreamCounters>(kUpstreamColumns), l.counters); });
     },
     Shown::always, false, per_strategy_schema<upstream_schema>},
};

}  // namespace

// A replay of the recorded settings (`replay`: torch-caching's lane, the
// tuner's recorded row; without torch-caching and without a cap, any
// strategy's) that ran out of memory less often than the recording did:
// the program had less memory than the replay gives.
std::optional<std::string> fewer_ooms_text(const ReuseSimInput& input, const ReplaySetup& setup, const ReplayedInput& r,
                                           std::optional<std::uint64_t> replay) {
    if (!r.summary || r.summary->oom_events == 0) return std::nullopt;
    if (!replay || *replay >= r.summary->oom_events) return std::nullopt;
    const std::optional<std::uint64_t> capacity =
        setup.capacity == rs::kUnlimited ? std::nullopt : std::optional<std::uint64_t>(setup.capacity);
    std::optional<std::uint64_t> recorded_cap;
    if (input.recording && input.recording->cap) recorded_cap = input.recording->cap->call.allowed_memory_maximum;
    return fewer_ooms_message(r.summary->oom_events, *replay, capacity, recorded_cap, r.summary->recorded.peak_reserved_bytes,
                              r.replay_causes);
}

std::string head_line(const ReuseSimInput& input, const ReplaySetup& setup, const ReplayedInput& r, Unit unit) {
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
    if (setup.capacity != rs::kUnlimited) head += ", capacity " + format_bytes(setup.capacity, unit);
    if (setup.capacity_from_recording)
        head += std::string(" (the recording's cap, set by ") + (input.recording->cap->call.by_gpumem ? "gpumem" : "the program") + ")";
    return head;
}

// "allocator settings of the snapshot: max_split_size 64 MiB, ..." and what
// the recording itself did, under the head line.
std::vector<std::string> recorded_lines(const ReplayedInput& r, Unit unit) {
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

Record replayed_input_fields(const ReplayDocument& d) { return make_record(Columns<Document>(kDocumentColumns), d); }

FieldSchemaSet replayed_input_schema() { return Columns<Document>(kDocumentColumns).schema(); }

FieldSchemaSet with_replay_fields(const FieldSchemaSet& fields) {
    FieldSchemaSet set = replayed_input_schema();
    set.fields.insert(set.fields.end(), fields.fields.begin(), fields.fields.end());
    return set;
}

Report job_report(const std::string& command, const std::vector<std::string>& request_warnings, const std::vector<std::string>& warnings) {
    Report report;
    report.command = command;
    report.warnings = request_warnings;
    report.warnings.insert(report.warnings.end(), warnings.begin(), warnings.end());
    return report;
}

}  // namespace gpumem::cli
