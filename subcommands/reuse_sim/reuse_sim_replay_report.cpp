// The report of gpumem reuse-sim replay, from its request and results
// alone: the strategies table (best values marked in table mode), the
// document's fields (the replayed input's, reuse_sim_common.hpp, then
// --execute's), the chart of reserved bytes, the picture, and the schema of
// all of it from the same column tables.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/chart.hpp"
#include "cli/commands.hpp"
#include "reuse_sim/reuse_sim_replay.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

std::vector<std::string_view> strategy_names() { return rs::kStrategies.name_list(); }

Cell u64(std::uint64_t v) { return v; }
Cell ms(double us) { return us / 1000.0; }

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

std::vector<StrategyRow> strategy_rows(const ReplayResults& r) {
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

// The replay's OOMs beside the recording's: torch-caching's lane, else
// without a cap the fewest of any strategy.
std::optional<std::uint64_t> replayed_ooms(const ReplayRequest& q, const ReplayResults& r) {
    std::optional<std::uint64_t> replay;
    for (const rs::LaneResult& lane : r.lanes)
        if (lane.strategy == "torch-caching") replay = lane.ooms;
    if (!replay && q.setup.capacity == rs::kUnlimited)
        for (const rs::LaneResult& lane : r.lanes) replay = std::min(replay.value_or(lane.ooms), lane.ooms);
    return replay;
}

// The document's fields: the replayed input's, then --execute's (with --execute only).
Record document_fields(const ReplayRequest& q, const ReplayResults& r) {
    Record fields = replayed_input_fields({q.input, q.setup, r, r.lanes, fewer_ooms_text(q.input, q.setup, r, replayed_ooms(q, r))});
    if (r.execute)
        fields.add(Field{"execute", "", FieldKind::record}, record_cell(make_record(Columns<ExecuteResults>(kExecuteColumns), *r.execute)));
    return fields;
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
std::vector<std::string> reserved_chart(const rs::Timeline& timeline, const ReplayResults& r, const LevelChartStyle& style,
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
std::vector<std::string> text_after(const ReplayRequest& q, const ReplayResults& r, const OutputOptions& output) {
    std::vector<std::string> lines;
    if (r.execute && r.execute->free_bytes_after) {
        lines.push_back("");
        lines.push_back(execute_line(*r.execute));
    }
    if (!r.complete) return lines;
    lines.push_back("");
    lines.push_back("* best in its column, among the strategies without OOMs (slack and frag: among those that reused memory). "
                    "Model ms: CUDA calls priced by the cost table (" + r.cost_device + ", " + (q.setup.costs ? *q.setup.costs : std::string("built-in")) + ").");
    if (q.chart && r.timeline)
        for (std::string& line : reserved_chart(*r.timeline, r, q.chart_style, output)) lines.push_back(std::move(line));
    return lines;
}

Report replay_document(const ReplayRequest& q, const ReplayResults& r, const OutputOptions& output) {
    Report report = job_report("reuse-sim replay", q.warnings, r.warnings);
    if (!r.summary) return report;  // nothing simulated yet
    if (r.complete)
        if (std::optional<std::string> fewer = fewer_ooms_text(q.input, q.setup, r, replayed_ooms(q, r))) report.warnings.push_back(std::move(*fewer));
    const bool measured = q.execute_on.has_value();
    report.tables.push_back(make_table("strategies", Columns<StrategyRow>(kStrategyColumns), strategy_rows(r), output.format,
                                       [measured](const Field& f) { return measured || f.key != "measured_ms"; }));
    report.fields = document_fields(q, r);
    if (output.format != Format::table) return report;
    // A replay on the GPU that stopped part way leaves its table unmarked.
    if (!r.execute || r.execute->free_bytes_after) mark_best(report.tables.back(), strategy_rows(r), output.unit);
    // On a narrow terminal the figures every strategy shares (requests,
    // peak live) go first, then the counts behind the others (--wide and
    // --json keep them).
    report.tables.back().drop_order = {"requests",       "peak_live", "upstream_frees", "slack_at_peak", "implicit_syncs",
                                       "upstream_allocs", "retries",   "fragmentation",  "hit_rate"};
    report.text_before.push_back(head_line(q.input, q.setup, r, output.unit));
    for (std::string& line : recorded_lines(r, output.unit)) report.text_before.push_back(std::move(line));
    report.text_after = text_after(q, r, output);
    return report;
}

Plot replay_picture(const ReplayRequest& q, const ReplayResults& r) {
    Plot plot;
    plot.x = {"event (in the input's order)", AxisScale::linear, AxisValues::number, true};
    plot.y = {"memory", AxisScale::linear, AxisValues::bytes, true};
    std::vector<std::string> names;
    for (const rs::LaneResult& lane : r.lanes) names.push_back(lane.strategy);
    add_timeline(plot, *r.timeline, names);
    add_cap(plot, q.setup.capacity);
    const std::string input = q.input.trace ? base_name(*q.input.trace) : r.input_description;
    plot.title = "gpumem reuse-sim replay: reserved memory replaying " + input + recorded_on(q.recorded_device);
    plot.subtitle = std::to_string(r.lanes.size()) + (r.lanes.size() == 1 ? " strategy" : " strategies") + " on a simulated device, " +
                    cap_text(q.setup.capacity) + "; " + rs::group_digits(r.summary->events) + " events";
    plot.notes.push_back(band_note(*r.timeline, r.summary->events));
    for (const rs::LaneResult& lane : r.lanes)
        if (lane.ooms > 0)
            plot.notes.push_back(lane.strategy + ": " + rs::group_digits(lane.ooms) + " request(s) refused, the first at event " +
                                 rs::group_digits(lane.first_oom_event));
    return plot;
}

}  // namespace

Report replay_report(const ReplayRequest& q, const ReplayResults& r, const OutputOptions& output) {
    return with_picture(replay_document(q, r, output), q.plot, [&] { return replay_plot(q, r); });
}

std::optional<Plot> replay_plot(const ReplayRequest& q, const ReplayResults& r) {
    if (!r.timeline || !r.summary) return std::nullopt;
    return replay_picture(q, r);
}

DocumentSchema replay_document_schema() {
    FieldSchemaSet execute;
    // With --execute only.
    execute.fields.push_back({Field{"execute", "", FieldKind::record}, true, execute_schema});
    return {"reuse-sim replay", {{"strategies", Columns<StrategyRow>(kStrategyColumns).schema()}}, with_replay_fields(execute)};
}

}  // namespace gpumem::cli
