// The report of gpumem reuse-sim tune, from its request and results alone:
// the answer first (the line to paste, the next step), the ranked settings
// (a row per outcome in table mode), --confirm's real runs and its answer;
// the document's fields (the replayed input's, reuse_sim_common.hpp, then
// "tune" and "confirm"), the picture, and the schema of all of it from the
// same column tables.
#include <algorithm>
#include <string>
#include <vector>

#include "base/memory_policy.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/width.hpp"
#include "cli/commands.hpp"
#include "reuse_sim/reuse_sim_tune.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

Cell u64(std::uint64_t v) { return v; }
Cell ms(double us) { return us / 1000.0; }
Cell unless(std::uint64_t value, std::uint64_t none) { return value == none ? Cell() : Cell(value); }

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

std::vector<TuneRowView> tune_rows(const TuneResults& r) {
    std::vector<TuneRowView> rows;
    for (std::size_t i = 0; i < r.ranking->rows.size(); ++i) rows.push_back({&r.ranking->rows[i], i + 1, r.allocator_settings.has_value()});
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

std::vector<TuneGroupView> tune_groups(const TuneResults& r, bool list_all) {
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

std::string baseline_name(const TuneResults& r) { return r.allocator_settings ? "as recorded" : "with the baseline settings"; }

std::string tune_answer_text(const TuneRequest& q, const TuneResults& r, Unit unit) {
    return rs::tune_answer(r.ranking->rows, q.setup.capacity, r.ranking->search, [unit](std::uint64_t b) { return format_bytes(b, unit); },
                           baseline_name(r), r.summary ? r.summary->oom_events : 0);
}

const rs::TuneRow* recorded_row(const TuneRanking& t) {
    for (const rs::TuneRow& row : t.rows)
        if (row.point.recorded) return &row;
    return nullptr;
}

// A recording without an OOM: the cap each of the top settings needs.
struct FitCapacityView {
    const rs::TuneRow& row;
    const FitCapacity& fit;
};
std::vector<FitCapacityView> fit_capacity_views(const TuneRanking& t) {
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
std::optional<std::string> fit_capacities_text(const TuneRanking& t, Unit unit) {
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
    const TuneRequest& q;
    const TuneResults& r;
    const TuneRanking& t() const { return *r.ranking; }
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
constexpr auto tune_document_fields_schema = nested_schema<kTuneDocumentColumns>;
Cell tune_cell(const TuneRequest& q, const TuneResults& r) {
    if (!r.ranking || r.ranking->rows.empty()) return Cell();
    return record_cell(make_record(Columns<TuneDocument>(kTuneDocumentColumns), TuneDocument{q, r}));
}

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
Cell confirm_cell(const TuneResults& r) {
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

// The replay of the recorded setting, for fewer_ooms_text: the tuner's recorded row.
std::optional<std::uint64_t> replayed_ooms(const TuneResults& r) {
    if (!r.ranking) return std::nullopt;
    const rs::TuneRow* row = recorded_row(*r.ranking);
    return row ? std::optional<std::uint64_t>(row->outcome.ooms) : std::nullopt;
}

// The document's fields: the replayed input's, then "tune" and (with
// --confirm only: the real runs, as each ended) "confirm".
Record document_fields(const TuneRequest& q, const TuneResults& r) {
    static const std::vector<rs::LaneResult> no_lanes;
    Record fields = replayed_input_fields({q.input, q.setup, r, no_lanes, fewer_ooms_text(q.input, q.setup, r, replayed_ooms(r))});
    if (Cell tune = tune_cell(q, r); !std::holds_alternative<std::monostate>(tune)) fields.add(Field{"tune", "", FieldKind::record}, std::move(tune));
    if (Cell confirm = confirm_cell(r); !std::holds_alternative<std::monostate>(confirm))
        fields.add(Field{"confirm", "", FieldKind::record}, std::move(confirm));
    return fields;
}

// The variable the recording's torch reads its settings from: 2.9 and
// later PYTORCH_ALLOC_CONF, older torch PYTORCH_CUDA_ALLOC_CONF (a
// recording that does not say: the new name, as torch_reads_alloc_conf
// decides everywhere).
std::string_view alloc_conf_variable(const TuneRequest& q) {
    const std::optional<std::string_view> version =
        q.input.recording && q.input.recording->torch_version ? std::optional<std::string_view>(*q.input.recording->torch_version) : std::nullopt;
    return torch_reads_alloc_conf(version) ? kAllocConfVariable : kCudaAllocConfVariable;
}

// Table mode, tune's first lines: the best setting as a line to paste
// before the program ("PYTORCH_ALLOC_CONF=expandable_segments:True"), where
// one avoids every OOM and is not PyTorch's defaults, and the next step:
// a real run under it (--confirm), where none was made.
std::vector<std::string> paste_lines(const TuneRequest& q, const TuneResults& r, std::string_view variable) {
    std::vector<std::string> lines;
    const rs::TuneRow& best = r.ranking->rows.front();
    const std::string conf = rs::alloc_conf(best.point.options);
    if (best.outcome.ooms != 0 || conf.empty()) return lines;
    lines.push_back(std::string(variable) + "=" + conf);
    if (!q.input.recording || !q.input.recording->torch_version)
        lines.push_back("(torch before 2.9 reads " + std::string(kCudaAllocConfVariable) + "; the recording does not say its version)");
    if (!q.confirm && q.input.trace && *q.input.trace != "-")
        lines.push_back("next, a real run under it: gpumem reuse-sim tune --trace " + *q.input.trace + " ... --confirm -- CMD");
    lines.emplace_back();
    return lines;
}

// The answer, then the ranked settings. Table mode: every line within the terminal's width (100
// columns in a pipe: OutputOptions::columns); a row per outcome, the best 10 unless --all-settings
// (JSON and CSV: a row per setting, every one).
Report ranking_report(const TuneRequest& q, const TuneResults& r, const OutputOptions& output, Report report) {
    report.fields = document_fields(q, r);
    if (output.format != Format::table || r.ranking->rows.empty()) {
        report.tables.push_back(make_table("settings", Columns<TuneRowView>(kTuneColumns), tune_rows(r), output.format));
        return report;
    }
    const auto add = [&output](std::vector<std::string>& lines, const std::string& text) { lines.push_back(fit_prose(text, output.columns)); };
    const bool all = q.grid.all_settings;
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
    if (const std::optional<std::string> fits = fit_capacities_text(*r.ranking, output.unit)) add(report.text_before, *fits);
    report.text_before.emplace_back();
    add(report.text_before, head_line(q.input, q.setup, r, output.unit));
    for (const std::string& line : recorded_lines(r, output.unit)) add(report.text_before, line);
    report.text_before.emplace_back();
    const std::uint64_t replayed = r.ranking->lanes_replayed;
    add(report.text_before,
        "torch-caching under " + std::to_string(r.ranking->grid_points) + " settings" +
            (replayed != 0 && replayed < r.ranking->grid_points
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

Report tune_document(const TuneRequest& q, const TuneResults& r, const OutputOptions& output) {
    Report report = job_report("reuse-sim tune", q.warnings, r.warnings);
    if (!r.summary || !r.ranking) return report;  // nothing replayed yet
    if (r.complete)
        if (std::optional<std::string> fewer = fewer_ooms_text(q.input, q.setup, r, replayed_ooms(r))) report.warnings.push_back(std::move(*fewer));
    return ranking_report(q, r, output, std::move(report));
}

Plot tune_picture(const TuneRequest& q, const TuneResults& r) {
    const TuneRanking& t = *r.ranking;
    Plot plot;
    plot.x = {"event (in the input's order)", AxisScale::linear, AxisValues::number, true};
    plot.y = {"memory", AxisScale::linear, AxisValues::bytes, true};
    std::vector<std::string> names;
    for (std::size_t k = 0; k < t.plotted_rows.size(); ++k) {
        const rs::TuneRow& row = t.rows[t.plotted_rows[k]];
        std::string name = (k == 0 ? "best: " : "#" + std::to_string(t.plotted_rows[k] + 1) + ": ") + plot_setting_name(row.point.options);
        if (row.point.recorded) name += " (as recorded)";
        names.push_back(std::move(name));
    }
    add_timeline(plot, *t.plotted, names);
    add_cap(plot, q.setup.capacity);
    const std::string input = q.input.trace ? base_name(*q.input.trace) : r.input_description;
    plot.title = "gpumem reuse-sim tune: torch-caching's settings replaying " + input + recorded_on(q.recorded_device);
    plot.subtitle = std::to_string(t.plotted_rows.size()) + " of " + std::to_string(t.grid_points) + " settings (the best of distinct outcomes" +
                    " and the recorded one), " + cap_text(q.setup.capacity) + "; " + rs::group_digits(r.summary->events) + " events";
    plot.notes.push_back(band_note(*t.plotted, r.summary->events));
    for (std::size_t k = 0; k < t.plotted_rows.size(); ++k) {
        const rs::TuneRow& row = t.rows[t.plotted_rows[k]];
        if (row.outcome.ooms > 0 && row.outcome.first_oom_event)
            plot.notes.push_back(names[k] + ": " + rs::group_digits(row.outcome.ooms) + " request(s) refused, the first at event " +
                                 rs::group_digits(*row.outcome.first_oom_event));
    }
    return plot;
}

}  // namespace

Report tune_report(const TuneRequest& q, const TuneResults& r, const OutputOptions& output) {
    return with_picture(tune_document(q, r, output), q.plot, [&] { return tune_plot(q, r); });
}

std::optional<Plot> tune_plot(const TuneRequest& q, const TuneResults& r) {
    if (!r.ranking || !r.ranking->plotted || !r.summary) return std::nullopt;
    return tune_picture(q, r);
}

DocumentSchema tune_document_schema() {
    FieldSchemaSet fields;
    fields.fields.push_back({Field{"tune", "", FieldKind::record}, true, tune_document_fields_schema});
    // With --confirm only: the real runs, as each ended.
    fields.fields.push_back({Field{"confirm", "", FieldKind::record}, true, confirm_document_schema});
    return {"reuse-sim tune", {{"settings", Columns<TuneRowView>(kTuneColumns).schema()}}, with_replay_fields(fields)};
}

}  // namespace gpumem::cli
