// gpumem reuse-sim max-batch --plot: peak reserved against the batch, the
// real runs, the answer. The curves the picture needs beyond the search's
// own are modelled in execute(), only with --plot; the picture itself is
// built from the typed results alone.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "base/cpu_affinity.hpp"
#include "base/interrupt.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "reuse_sim/reuse_sim_max_batch.hpp"
#include "reuse_sim/tune_replays.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// Batches the curves are modelled at, besides the recordings', the
// answers' and the real runs'.
constexpr std::uint64_t kCurveBatches = 20;
constexpr int kRanColour = 2, kOomColour = 1, kAnswerColour = 7, kVariedColour = 5;

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


// The modelled peak of curve `c` at `batch`, where it was modelled there.
std::optional<double> peak_at(const MaxBatchSearchResults::Curve& c, std::uint64_t batch) {
    for (const auto& [b, peak] : c.peaks)
        if (b == batch) return static_cast<double>(peak);
    return std::nullopt;
}


Plot max_batch_picture(const MaxBatchRequest& q, const MaxBatchResults& r) {
    const MaxBatchSearchResults& x = *r.search;
    Plot plot;
    plot.x = {x.knob, AxisScale::linear, AxisValues::whole, true};
    plot.y = {"peak reserved", AxisScale::linear, AxisValues::bytes, true};
    const MaxBatchSetting* recorded = x.recorded();
    const MaxBatchSetting* best = x.best();
    for (const MaxBatchSearchResults::Curve& c : x.curves) {
        const MaxBatchSetting& s = x.settings[c.setting];
        PlotSeries series;
        const std::string name = plot_setting_name(s.point.options);
        series.label = (&s == best ? "best: " : "") + std::string(s.point.recorded ? "as recorded (" + name + ")" : name) +
                       ", modelled, no cap";
        series.colour = s.point.recorded ? 0 : 4;
        for (const auto& [batch, peak] : c.peaks) {
            series.x.push_back(static_cast<double>(batch));
            series.y.push_back(static_cast<double>(peak));
        }
        plot.series.push_back(std::move(series));
    }
    add_cap(plot, q.setup.capacity);
    if (q.headroom > 0 && q.setup.capacity > q.headroom)
        plot.rules.push_back({false, static_cast<double>(q.setup.capacity - q.headroom),
                              "cap less the headroom (" + format_bytes(q.headroom) + ")", 3});
    // The real runs, each on the recorded setting's line at its batch (what
    // the batch needs: a run that ran out of memory stopped short of it; a
    // recording's own peak is the model's there), else at its own peak.
    const MaxBatchSearchResults::Curve* recorded_curve = nullptr;
    for (const MaxBatchSearchResults::Curve& c : x.curves)
        if (&x.settings[c.setting] == recorded) recorded_curve = &c;
    // One mark a batch and setting: its runs' tally beside it where it was
    // run more than once ("2/2" ran every time; "1/2", a batch that varied,
    // marked apart).
    auto run_mark = [&](std::uint64_t batch, unsigned passes, unsigned runs, std::optional<double> y) {
        if (recorded_curve)
            if (const std::optional<double> modelled = peak_at(*recorded_curve, batch)) y = modelled;
        if (!y || runs == 0) return;
        const std::string tally = runs > 1 ? std::to_string(passes) + "/" + std::to_string(runs) : "";
        if (passes > 0 && passes < runs) {
            plot.markers.push_back({static_cast<double>(batch), *y, MarkerShape::dot, kVariedColour, "real runs: ran in some, not all", tally});
            return;
        }
        const bool oom = passes == 0;
        plot.markers.push_back({static_cast<double>(batch), *y, oom ? MarkerShape::cross : MarkerShape::ring, oom ? kOomColour : kRanColour,
                                oom ? "real run: out of memory" : "real run: ran", tally});
    };
    std::vector<std::string> settings{""};
    for (const MaxBatchRecording& rec : x.recordings)
        if (std::find(settings.begin(), settings.end(), rec.setting) == settings.end()) settings.push_back(rec.setting);
    for (const std::string& setting : settings)
        for (const rs::BatchTally& t : x.facts(setting, std::nullopt).tallies) run_mark(t.batch, t.passes, t.runs, std::nullopt);
    for (const MaxBatchConfirmRun& run : x.confirm_runs) {
        if (!run.real) continue;
        const bool oom = judged_ooms(*run.real) > 0;
        run_mark(run.batch, oom ? 0 : 1, 1, static_cast<double>(run.real->peak_reserved));
    }
    if (best && best->answer.largest) {
        const std::uint64_t answer = *best->answer.largest;
        const bool other = best != recorded;
        plot.rules.push_back({true, static_cast<double>(answer),
                              "answer: " + std::to_string(answer) + (other ? " with " + plot_setting_name(best->point.options) : ""), kAnswerColour});
        plot.markers.push_back({static_cast<double>(answer), static_cast<double>(best->answer.peak_reserved_at_largest), MarkerShape::diamond,
                                kAnswerColour, "the answer's modelled peak", std::to_string(answer)});
        if (other && recorded && recorded->answer.largest)
            plot.rules.push_back({true, static_cast<double>(*recorded->answer.largest),
                                  "as recorded: " + std::to_string(*recorded->answer.largest), 0});
    }
    std::string on = x.device_name ? " (recorded on " + *x.device_name + ")" : "";
    plot.title = "gpumem reuse-sim max-batch: peak reserved against the " + x.knob + on;
    plot.subtitle = r.input_description + "; " + cap_text(q.setup.capacity);
    if (best && !best->answer.largest) plot.notes.push_back("no batch fits: even batch 1 runs out of memory in the model");
    if (best && best->answer.largest && best->answer.largest_hopeful && *best->answer.largest_hopeful != *best->answer.largest)
        plot.notes.push_back("the model does not hold: the answer is a range, " + std::to_string(*best->answer.largest) + " to " +
                             std::to_string(*best->answer.largest_hopeful));
    plot.notes.push_back("lines: the peak reserved the model gives each batch with no cap; marks: the program's real runs, on the recorded "
                         "setting's line at their batch");
    return plot;
}


}  // namespace

void max_batch_plot_curves(const rs::CostModel& costs, MaxBatchResults& r) {
    if (!r.search || !r.search->model || r.search->settings.empty()) return;
    MaxBatchSearchResults& x = *r.search;
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


std::optional<Plot> max_batch_plot(const MaxBatchRequest& q, const MaxBatchResults& r) {
    if (!r.search || r.search->curves.empty()) return std::nullopt;
    return max_batch_picture(q, r);
}

}  // namespace gpumem::cli
