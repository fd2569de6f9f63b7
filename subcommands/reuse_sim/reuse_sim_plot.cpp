// reuse-sim --plot: the pictures of a replay (reserved and live memory over
// the run per strategy, the OOMs, the cap), of a tuning (the same for the
// best settings) and of --max-batch (peak reserved against the batch, the
// real runs, the answer). The replays a picture needs beyond the run's own
// are made here, in execute(), only with --plot; the pictures themselves are
// built from the typed results alone.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/cpu_affinity.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "reuse_sim/reuse_sim.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

constexpr std::size_t kPlotTimelinePoints = 1000;
// Batches --max-batch's curves are modelled at, besides the recordings',
// the answers' and the real runs'.
constexpr std::uint64_t kCurveBatches = 20;
constexpr int kLiveColour = 6, kRanColour = 2, kOomColour = 1, kAnswerColour = 7;

// Names a modelled trace's events for messages.
class CurveNames final : public rs::EventSource {
public:
    explicit CurveNames(std::uint64_t batch) : batch_(batch) {}
    bool next(rs::Event&) override { return false; }
    std::string location(std::uint64_t line) const override { return description() + ", event " + std::to_string(line); }
    std::string description() const override { return "batch " + std::to_string(batch_) + " (modelled, for --plot)"; }
    std::string format() const override { return "generated"; }
    bool rewind() override { return true; }

private:
    std::uint64_t batch_;
};

std::string base_name(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string setting_name(const rs::TorchOptions& options) {
    const std::string conf = rs::alloc_conf(options);
    return conf.empty() ? "PyTorch's defaults" : conf;
}

std::string cap_text(std::uint64_t capacity) { return capacity == rs::kUnlimited ? "no cap" : "cap " + format_bytes(capacity); }

// The lanes of `timeline` as lines (the most reserved in each point, a band
// down to the least), the live bytes, and a cross where a lane's requests
// were refused (kMostCrosses a lane at most).
constexpr std::size_t kMostCrosses = 40;

void add_timeline(Plot& plot, const rs::Timeline& timeline, const std::vector<std::string>& names) {
    const std::size_t points = timeline.points();
    for (std::size_t l = 0; l < timeline.lanes(); ++l) {
        PlotSeries s;
        s.label = "reserved: " + names[l];
        s.colour = static_cast<int>(l);
        for (std::size_t p = 0; p < points; ++p) {
            s.x.push_back(static_cast<double>(timeline.first_event(p) + 1));
            s.y.push_back(static_cast<double>(timeline.reserved(p, l)));
            s.y_low.push_back(static_cast<double>(timeline.reserved_min(p, l)));
        }
        plot.series.push_back(std::move(s));
    }
    PlotSeries live;
    live.label = "live: bytes the program's requests hold";
    live.colour = kLiveColour;
    live.dashed = true;
    for (std::size_t p = 0; p < points; ++p) {
        live.x.push_back(static_cast<double>(timeline.first_event(p) + 1));
        live.y.push_back(static_cast<double>(timeline.live(p)));
        live.y_low.push_back(static_cast<double>(timeline.live_min(p)));
    }
    plot.series.push_back(std::move(live));
    // A run that keeps running out of memory refuses requests in most
    // stretches: a cross in each would be a band that hides the line and
    // the cap's label. At most kMostCrosses a lane, evenly apart (the
    // first where it began; the notes count them all).
    const std::size_t apart = std::max<std::size_t>(1, points / kMostCrosses);
    for (std::size_t l = 0; l < timeline.lanes(); ++l) {
        std::uint64_t before = 0;
        std::optional<std::size_t> last;
        for (std::size_t p = 0; p < points; ++p) {
            const std::uint64_t refused = timeline.refusals(p, l);
            if (refused > before && (!last || p - *last >= apart)) {
                plot.markers.push_back({static_cast<double>(timeline.first_event(p) + 1), static_cast<double>(timeline.reserved(p, l)),
                                        MarkerShape::cross, static_cast<int>(l), names[l] + ": out of memory (a request refused)", ""});
                last = p;
            }
            before = refused;
        }
    }
}

void add_cap(Plot& plot, std::uint64_t capacity) {
    if (capacity != rs::kUnlimited) plot.rules.push_back({false, static_cast<double>(capacity), cap_text(capacity), -2});
}

std::string band_note(const rs::Timeline& timeline, std::uint64_t events) {
    return "each line is the most reserved within each of " + std::to_string(timeline.points()) + " stretches of the " +
           rs::group_digits(events) + " events; its band reaches down to the least";
}

std::string recorded_on(const ReuseSimRequest& q) {
    return q.recorded_device ? " (recorded on " + *q.recorded_device + ")" : "";
}

Plot replay_plot(const ReuseSimRequest& q, const ReuseSimResults& r) {
    Plot plot;
    plot.x = {"event (in the input's order)", AxisScale::linear, AxisValues::number, true};
    plot.y = {"memory", AxisScale::linear, AxisValues::bytes, true};
    std::vector<std::string> names;
    for (const rs::LaneResult& lane : r.lanes) names.push_back(lane.strategy);
    add_timeline(plot, *r.timeline, names);
    add_cap(plot, q.capacity);
    const std::string input = q.input.trace ? base_name(*q.input.trace) : r.input_description;
    plot.title = "gpumem reuse-sim replay: reserved memory replaying " + input + recorded_on(q);
    plot.subtitle = std::to_string(r.lanes.size()) + (r.lanes.size() == 1 ? " strategy" : " strategies") + " on a simulated device, " +
                    cap_text(q.capacity) + "; " + rs::group_digits(r.summary->events) + " events";
    plot.notes.push_back(band_note(*r.timeline, r.summary->events));
    for (const rs::LaneResult& lane : r.lanes)
        if (lane.ooms > 0)
            plot.notes.push_back(lane.strategy + ": " + rs::group_digits(lane.ooms) + " request(s) refused, the first at event " +
                                 rs::group_digits(lane.first_oom_event));
    return plot;
}

Plot tune_plot(const ReuseSimRequest& q, const ReuseSimResults& r) {
    const TuneResults& t = *r.tune;
    Plot plot;
    plot.x = {"event (in the input's order)", AxisScale::linear, AxisValues::number, true};
    plot.y = {"memory", AxisScale::linear, AxisValues::bytes, true};
    std::vector<std::string> names;
    for (std::size_t k = 0; k < t.plotted_rows.size(); ++k) {
        const rs::TuneRow& row = t.rows[t.plotted_rows[k]];
        std::string name = (k == 0 ? "best: " : "#" + std::to_string(t.plotted_rows[k] + 1) + ": ") + setting_name(row.point.options);
        if (row.point.recorded) name += " (as recorded)";
        names.push_back(std::move(name));
    }
    add_timeline(plot, *t.plotted, names);
    add_cap(plot, q.capacity);
    const std::string input = q.input.trace ? base_name(*q.input.trace) : r.input_description;
    plot.title = "gpumem reuse-sim tune: torch-caching's settings replaying " + input + recorded_on(q);
    plot.subtitle = std::to_string(t.plotted_rows.size()) + " of " + std::to_string(t.grid_points) + " settings (the best of distinct outcomes" +
                    " and the recorded one), " + cap_text(q.capacity) + "; " + rs::group_digits(r.summary->events) + " events";
    plot.notes.push_back(band_note(*t.plotted, r.summary->events));
    for (std::size_t k = 0; k < t.plotted_rows.size(); ++k) {
        const rs::TuneRow& row = t.rows[t.plotted_rows[k]];
        if (row.outcome.ooms > 0 && row.outcome.first_oom_event)
            plot.notes.push_back(names[k] + ": " + rs::group_digits(row.outcome.ooms) + " request(s) refused, the first at event " +
                                 rs::group_digits(*row.outcome.first_oom_event));
    }
    return plot;
}

// The modelled peak of curve `c` at `batch`, where it was modelled there.
std::optional<double> peak_at(const MaxBatchResults::Curve& c, std::uint64_t batch) {
    for (const auto& [b, peak] : c.peaks)
        if (b == batch) return static_cast<double>(peak);
    return std::nullopt;
}

Plot max_batch_plot(const ReuseSimRequest& q, const ReuseSimResults& r) {
    const MaxBatchResults& x = *r.max_batch;
    Plot plot;
    plot.x = {"batch", AxisScale::linear, AxisValues::whole, true};
    plot.y = {"peak reserved", AxisScale::linear, AxisValues::bytes, true};
    const MaxBatchSetting* recorded = x.recorded();
    const MaxBatchSetting* best = x.best();
    for (const MaxBatchResults::Curve& c : x.curves) {
        const MaxBatchSetting& s = x.settings[c.setting];
        PlotSeries series;
        const std::string name = setting_name(s.point.options);
        series.label = (&s == best ? "best: " : "") + std::string(s.point.recorded ? "as recorded (" + name + ")" : name) +
                       ", modelled, no cap";
        series.colour = s.point.recorded ? 0 : 4;
        for (const auto& [batch, peak] : c.peaks) {
            series.x.push_back(static_cast<double>(batch));
            series.y.push_back(static_cast<double>(peak));
        }
        plot.series.push_back(std::move(series));
    }
    add_cap(plot, q.capacity);
    if (q.max_batch && q.max_batch->headroom > 0 && q.capacity > q.max_batch->headroom)
        plot.rules.push_back({false, static_cast<double>(q.capacity - q.max_batch->headroom),
                              "cap less the headroom (" + format_bytes(q.max_batch->headroom) + ")", 3});
    // The real runs, each on the recorded setting's line at its batch (what
    // the batch needs: a run that ran out of memory stopped short of it; a
    // recording's own peak is the model's there), else at its own peak.
    const MaxBatchResults::Curve* recorded_curve = nullptr;
    for (const MaxBatchResults::Curve& c : x.curves)
        if (&x.settings[c.setting] == recorded) recorded_curve = &c;
    auto run_mark = [&](std::uint64_t batch, bool oom, std::optional<double> y) {
        if (recorded_curve)
            if (const std::optional<double> modelled = peak_at(*recorded_curve, batch)) y = modelled;
        if (!y) return;
        plot.markers.push_back({static_cast<double>(batch), *y, oom ? MarkerShape::cross : MarkerShape::ring, oom ? kOomColour : kRanColour,
                                oom ? "real run: out of memory" : "real run: ran", ""});
    };
    for (const MaxBatchRecording& rec : x.recordings) run_mark(rec.batch, rec.ran_out_of_memory(), std::nullopt);
    for (const MaxBatchConfirmRun& run : x.confirm_runs) {
        if (!run.real) continue;
        run_mark(run.batch, judged_ooms(*run.real) > 0, static_cast<double>(run.real->peak_reserved));
    }
    if (best && best->answer.largest) {
        const std::uint64_t answer = *best->answer.largest;
        const bool other = best != recorded;
        plot.rules.push_back({true, static_cast<double>(answer),
                              "answer: " + std::to_string(answer) + (other ? " with " + setting_name(best->point.options) : ""), kAnswerColour});
        plot.markers.push_back({static_cast<double>(answer), static_cast<double>(best->answer.peak_reserved_at_largest), MarkerShape::diamond,
                                kAnswerColour, "the answer's modelled peak", std::to_string(answer)});
        if (other && recorded && recorded->answer.largest)
            plot.rules.push_back({true, static_cast<double>(*recorded->answer.largest),
                                  "as recorded: " + std::to_string(*recorded->answer.largest), 0});
    }
    std::string on = x.device_name ? " (recorded on " + *x.device_name + ")" : "";
    plot.title = "gpumem reuse-sim max-batch: peak reserved against the batch" + on;
    plot.subtitle = r.input_description + "; " + cap_text(q.capacity);
    if (best && !best->answer.largest) plot.notes.push_back("no batch fits: even batch 1 runs out of memory in the model");
    if (best && best->answer.largest && best->answer.largest_hopeful && *best->answer.largest_hopeful != *best->answer.largest)
        plot.notes.push_back("the model does not hold: the answer is a range, " + std::to_string(*best->answer.largest) + " to " +
                             std::to_string(*best->answer.largest_hopeful));
    plot.notes.push_back("lines: the peak reserved the model gives each batch with no cap; marks: the program's real runs, on the recorded "
                         "setting's line at their batch");
    return plot;
}

}  // namespace

void tune_plot_timeline(const ReuseSimRequest& q, const rs::LoadedTrace& trace, const rs::LaneReplayOptions& options,
                        const rs::CostModel& costs, TuneResults& tune) {
    const auto same_outcome = [](const rs::TuneOutcome& a, const rs::TuneOutcome& b) {
        return a.peak_reserved == b.peak_reserved && a.ooms == b.ooms && a.retries == b.retries && a.device_allocs == b.device_allocs &&
               a.device_frees == b.device_frees;
    };
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < tune.rows.size() && rows.size() + 1 < kPlottedSettings; ++i)
        if (std::none_of(rows.begin(), rows.end(), [&](std::size_t k) { return same_outcome(tune.rows[k].outcome, tune.rows[i].outcome); }))
            rows.push_back(i);
    for (std::size_t i = 0; i < tune.rows.size(); ++i)
        if (tune.rows[i].point.recorded && std::find(rows.begin(), rows.end(), i) == rows.end()) rows.push_back(i);
    const Named<rs::StrategySpec>& torch = rs::kStrategies.row("torch-caching");
    std::vector<std::unique_ptr<rs::Lane>> lanes;
    std::vector<rs::Lane*> lane_ptrs;
    for (std::size_t i : rows) {
        rs::StrategyOptions o = options.base;
        o.torch = tune.rows[i].point.options;
        auto lane = std::make_unique<rs::Lane>(std::string(torch.name), std::make_unique<rs::SimulatedUpstream>(q.capacity, &costs));
        lane->strategy = rs::make_strategy(torch.value, o, *lane->upstream);
        lane_ptrs.push_back(lane.get());
        lanes.push_back(std::move(lane));
    }
    rs::ReplayOptions replay_options;
    replay_options.sync_every = options.sync_every;
    replay_options.timeline_points = kPlotTimelinePoints;
    replay_options.poll = [] { throw_if_interrupted(); };
    rs::Replay replay(lane_ptrs, replay_options);
    const std::unique_ptr<rs::EventSource> cursor = trace.cursor();
    (void)replay.run(*cursor);
    tune.plotted_rows = rows;
    tune.plotted = *replay.timeline();
}

void max_batch_plot_curves(const rs::CostModel& costs, ReuseSimResults& r) {
    if (!r.max_batch || !r.max_batch->model || r.max_batch->settings.empty()) return;
    MaxBatchResults& x = *r.max_batch;
    for (const MaxBatchRecording& rec : x.recordings)
        if (!x.device_name)
            x.device_name = recorded_device_name(stats_file_name(rec.file));
    std::vector<std::size_t> drawn = {0};  // the best
    for (std::size_t i = 1; i < x.settings.size(); ++i)
        if (x.settings[i].point.recorded) drawn.push_back(i);
    // The batches: evenly from 1 past the last thing marked, and each marked batch itself.
    std::vector<std::uint64_t> marked;
    for (const MaxBatchRecording& rec : x.recordings) marked.push_back(rec.batch);
    for (const MaxBatchConfirmRun& run : x.confirm_runs) marked.push_back(run.batch);
    for (std::size_t i : drawn)
        if (const std::optional<std::uint64_t> largest = x.settings[i].answer.largest) {
            marked.push_back(*largest);
            marked.push_back(*largest + 1);
        }
    std::uint64_t top = 2;
    for (std::uint64_t b : marked) top = std::max(top, b);
    top = std::max(top + 2, top + top / 5);
    std::vector<std::uint64_t> batches = marked;
    for (std::uint64_t k = 0; k <= kCurveBatches; ++k) batches.push_back(std::max<std::uint64_t>(1, top * k / kCurveBatches));
    std::sort(batches.begin(), batches.end());
    batches.erase(std::unique(batches.begin(), batches.end()), batches.end());

    std::vector<rs::TorchLane> lanes;
    lanes.reserve(drawn.size());
    for (std::size_t i : drawn) lanes.push_back({x.settings[i].point.options, rs::kUnlimited});
    rs::LaneReplayOptions options;
    options.base = r.strategy_options;
    options.base.release_readings = nullptr;  // each lane reads a modelled trace's releases for itself
    options.base.decides_release_readings = false;
    options.costs = &costs;
    options.threads = allowed_cpu_count();
    options.poll = [] { throw_if_interrupted(); };
    x.curves.clear();
    for (std::size_t i : drawn) x.curves.push_back({i, {}});
    for (std::uint64_t batch : batches) {
        const CurveNames names(batch);
        const rs::LoadedTrace trace(names, x.model->events_at(batch, true));
        if (!trace.request_sizes().empty() && trace.request_sizes().back() >= rs::kMaxRequestBytes) continue;
        const rs::LaneReplays replays = rs::replay_torch_lanes(trace, lanes, options);
        for (std::size_t k = 0; k < drawn.size(); ++k) x.curves[k].peaks.emplace_back(batch, replays.lanes[k].peak_reserved);
    }
}

std::optional<Plot> reuse_sim_plot(const ReuseSimRequest& q, const ReuseSimResults& r) {
    if (q.max_batch) return r.max_batch && !r.max_batch->curves.empty() ? std::optional<Plot>(max_batch_plot(q, r)) : std::nullopt;
    if (r.tune) return r.tune->plotted && r.summary ? std::optional<Plot>(tune_plot(q, r)) : std::nullopt;
    if (r.timeline && r.summary) return replay_plot(q, r);
    return std::nullopt;
}

}  // namespace gpumem::cli
