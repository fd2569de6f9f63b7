// gpumem reuse-sim tune's replays: the input is read once into memory;
// every setting of the grid is a torch-caching lane replayed alone, the
// lanes spread over every core (reuse_sim/tune_replays.hpp), and settings
// that provably replay alike replayed once. Then, for the best setting, a
// bisection searches the smallest capacity it fits in, each probe stopping
// at its first OOM. The grid, the ranking and the answer are
// reuse_sim/tuner.hpp's.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/cpu_affinity.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "cli/progress.hpp"
#include "reuse_sim/reuse_sim_tune.hpp"
#include "reuse_sim/snapshot_reader.hpp"
#include "reuse_sim/tune_replays.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

rs::TuneOutcome outcome_of(const rs::LaneResult& lane) {
    rs::TuneOutcome o;
    o.peak_reserved = lane.peak_reserved;
    o.ooms = lane.ooms;
    o.retries = lane.retries;
    o.device_allocs = lane.upstream_allocs;
    o.device_frees = lane.upstream_frees;
    o.modelled_us = lane.modelled_us;
    o.granted_ooms = lane.granted_oom_events;
    if (lane.first_oom_event != 0) o.first_oom_event = lane.first_oom_event;
    return o;
}

// What every replay of the run shares: the input in memory, the options,
// and the progress line.
struct TuneRun {
    const TuneRequest& q;
    const rs::LoadedTrace& trace;
    rs::LaneReplayOptions options;
    std::optional<std::size_t> progress_columns;  // the progress line's width (stderr's); none: no line

    // `lanes` replayed; progress as `label` on a terminal.
    rs::LaneReplays replay(const std::vector<rs::TorchLane>& lanes, const std::string& label, bool stop_at_first_oom = false) const {
        rs::LaneReplayOptions o = options;
        o.stop_at_first_oom = stop_at_first_oom;
        Progress progress(progress_columns.has_value(), "reuse-sim tune: " + label, 100, progress_columns.value_or(kPipeColumns));
        if (progress_columns)
            o.progress = [&progress](std::uint64_t done, std::uint64_t total) { progress.update(total ? done * 100 / total : 0); };
        return rs::replay_torch_lanes(trace, lanes, o);
    }
};

// No search that would take over a minute by the grid's own pace.
constexpr double kSearchSeconds = 60.0;
constexpr std::uint64_t kMiB = 1ULL << 20;

// Whether the setting fits (no OOM) under each capacity, by replays that
// stop at their first OOM.
std::map<std::uint64_t, bool> probe(const TuneRun& run, const rs::TorchOptions& torch, const std::vector<std::uint64_t>& capacities,
                                    const std::string& label) {
    std::vector<rs::TorchLane> lanes;
    lanes.reserve(capacities.size());
    for (std::uint64_t c : capacities) lanes.push_back({torch, c});
    const rs::LaneReplays replays = run.replay(lanes, label, true);
    std::map<std::uint64_t, bool> fits;
    for (std::size_t i = 0; i < capacities.size(); ++i) fits[capacities[i]] = replays.lanes[i].ooms == 0;
    return fits;
}

// The smallest capacity the best setting fits in, to within a MiB, assuming
// that a setting that fits in some capacity fits in every larger one: a
// bisection between the peak of live requests (below which nothing fits)
// and a capacity it fits in: the cap where it fits under it, else found by
// steps up from the peak of live requests (uncapped: from its own peak,
// checked first). Each round replays the next probes of the
// bisection on every core at once (the midpoint, and those it leads to), so
// the answer, and the count of replays it needed, is that of one probe at a
// time.
rs::CapacitySearch search_capacity(const TuneRun& run, const TuneResults& r, const rs::TuneRow& best, double lane_seconds) {
    const std::uint64_t capacity = run.q.setup.capacity;
    rs::CapacitySearch search;
    const std::uint64_t peak_live = r.summary->peak_live_bytes;
    if (peak_live == 0) {
        search.not_searched = "the input allocates nothing";
        return search;
    }
    std::uint64_t low = peak_live - 1, high = capacity;
    std::optional<std::uint64_t> smallest;
    const bool fits_under_cap = capacity != rs::kUnlimited && best.outcome.ooms == 0;
    // Replays one probe at a time would take: the bisection's steps over
    // the range (4 times the cap, or the peak, when not known yet), plus the
    // replays that find its top.
    const double cap = static_cast<double>(capacity), peak = static_cast<double>(best.outcome.peak_reserved);
    const double range_guess = fits_under_cap ? cap - static_cast<double>(low)
                               : capacity == rs::kUnlimited ? peak - static_cast<double>(low)
                                                              : 4 * std::max(cap, peak) - static_cast<double>(low);
    const double steps = std::ceil(std::log2(std::max(2.0, range_guess / static_cast<double>(kMiB)))) + 2;
    const double estimate = lane_seconds * steps;
    if (estimate > kSearchSeconds) {
        search.not_searched = "it would take about " + std::to_string(static_cast<long long>(estimate)) + " s more";
        return search;
    }
    const rs::TorchOptions& setting = best.point.options;
    if (fits_under_cap) {
        smallest = high;
    } else if (capacity == rs::kUnlimited) {
        // Its uncapped peak, checked under a cap of its size.
        high = std::max(best.outcome.peak_reserved, low + 1);
        search.replays += 1;
        if (probe(run, setting, {high}, "capacity search")[high]) smallest = high;
        else low = high;
    }
    if (!smallest) {
        // Up from what is known too small, by steps that double from the
        // largest segment, until one fits (probes that fail stop at their
        // first OOM); the cores try the next steps at once.
        std::uint64_t step = std::max<std::uint64_t>(run.trace.largest_segment(), kMiB);
        while (!smallest && low < rs::kUnlimited / 2) {
            std::vector<std::uint64_t> probes;
            for (std::uint64_t c = low, s = step; probes.size() < std::max(1U, run.options.threads) && c < rs::kUnlimited / 2; s *= 2)
                probes.push_back(c = std::min(c + s, rs::kUnlimited / 2));
            const std::map<std::uint64_t, bool> fits = probe(run, setting, probes, "capacity search above " + format_bytes(low));
            for (const std::uint64_t c : probes) {
                search.replays += 1;
                step *= 2;
                if (fits.at(c)) {
                    smallest = high = c;
                    break;
                }
                low = c;
            }
        }
    }
    if (!smallest) {
        search.not_searched = "it ran out of memory at every capacity tried, up to " + format_bytes(low);
        return search;
    }
    while (rs::bisection_midpoint(low, high)) {
        const std::vector<std::uint64_t> probes = rs::bisection_probes(low, high, std::max(1U, run.options.threads));
        const std::map<std::uint64_t, bool> fits =
            probe(run, setting, probes, "capacity search between " + format_bytes(low) + " and " + format_bytes(high));
        for (std::optional<std::uint64_t> mid = rs::bisection_midpoint(low, high); mid && fits.count(*mid);
             mid = rs::bisection_midpoint(low, high)) {
            search.replays += 1;
            (fits.at(*mid) ? high : low) = *mid;
        }
    }
    search.smallest = high;
    search.resolution = high - low;
    return search;
}

}  // namespace

void tune_replays(const TuneRequest& q, rs::EventSource& source, const rs::CostModel& costs, TuneResults& r,
                  std::optional<std::size_t> progress_columns) {
    const std::vector<rs::GridPoint> points = rs::grid_points(r.strategy_options.torch, q.grid.axes);
    r.ranking = TuneRanking{};
    r.ranking->grid_points = points.size();
    const auto poll = [] { throw_if_interrupted(); };
    const rs::LoadedTrace trace(source, poll);
    for (std::string& note : source.notes()) r.warnings.push_back(std::move(note));

    TuneRun run{q, trace, {}, progress_columns};
    run.options.base = r.strategy_options;
    run.options.costs = &costs;
    run.options.sync_every = q.setup.sync_every;
    run.options.threads = q.grid.threads ? q.grid.threads : allowed_cpu_count();
    run.options.poll = poll;

    // The snapshot's ambiguous releases, read once by the recorded settings
    // under the recorded capacity (see rs::ReleaseReadings): a lane's own
    // state would read a release PyTorch made itself as the program's
    // empty_cache under other settings. Inputs without any need none.
    const rs::TorchLane recorded{r.strategy_options.torch, q.setup.capacity};
    std::optional<rs::DecidedReadings> decided;
    if (trace.empty_caches() > 0) {
        decided = rs::decide_release_readings(trace, recorded, run.options);
        run.options.base.release_readings = decided->readings;
        const auto& own = decided->readings->own;
        if (std::string note = rs::release_note(source.description(), static_cast<std::uint64_t>(std::count(own.begin(), own.end(), true)));
            !note.empty())
            r.warnings.push_back(note);
    }

    // Each setting that replays differently from every earlier one, once.
    std::vector<std::size_t> same_as(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) same_as[i] = i;
    if (q.grid.skip_equivalent) same_as = rs::equivalent_points(points, trace.request_sizes());
    std::vector<rs::TorchLane> lanes;
    std::vector<std::size_t> lane_of(points.size(), 0);
    std::vector<std::size_t> from_decider;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (same_as[i] != i) continue;
        if (decided && rs::same_setting(points[i].options, recorded.torch)) {
            from_decider.push_back(i);
            continue;
        }
        lane_of[i] = lanes.size();
        lanes.push_back({points[i].options, q.setup.capacity});
    }
    const rs::LaneReplays grid = run.replay(lanes, std::to_string(lanes.size()) + " settings");
    r.summary = lanes.empty() ? decided->replay.summary : grid.summary;
    r.summary->seconds = grid.summary.seconds + (decided ? decided->replay.summary.seconds : 0.0);
    if (r.summary->skipped) r.warnings.push_back(std::to_string(r.summary->skipped) + " " + source.skipped_what() + " were not replayed");
    for (std::size_t i = 0; i < points.size(); ++i) {
        const std::size_t rep = same_as[i];
        const bool decider = std::find(from_decider.begin(), from_decider.end(), rep) != from_decider.end();
        const rs::LaneResult& lane = decider ? decided->replay.lanes.front() : grid.lanes[lane_of[rep]];
        r.ranking->rows.push_back({points[i], outcome_of(lane)});
    }
    r.ranking->lanes_replayed = lanes.size() + (decided ? 1 : 0);
    rs::rank_rows(r.ranking->rows);
    // The pace of one lane alone: the grid's wall time over the lanes each thread replayed.
    const double per_thread = static_cast<double>(std::max<std::size_t>(1, lanes.size())) /
                              static_cast<double>(std::max<std::size_t>(1, std::min<std::size_t>(run.options.threads, lanes.size())));
    const double lane_seconds = lanes.empty() ? decided->replay.summary.seconds : grid.summary.seconds / per_thread;
    r.ranking->search = search_capacity(run, r, r.ranking->rows.front(), lane_seconds);
    if (q.plot) tune_plot_timeline(q, trace, run.options, costs, *r.ranking);
    // A recording without an OOM: the cap each of the top settings would
    // need ("would it fit in 40 GB?"), one search per distinct outcome
    // (settings that replay alike need the same).
    if (r.summary->oom_events != 0) return;
    const std::vector<rs::TuneRow>& rows = r.ranking->rows;
    const auto same_outcome = [](const rs::TuneOutcome& a, const rs::TuneOutcome& b) {
        return a.peak_reserved == b.peak_reserved && a.ooms == b.ooms && a.retries == b.retries && a.device_allocs == b.device_allocs &&
               a.device_frees == b.device_frees;
    };
    r.ranking->fit_capacities.push_back({0, r.ranking->search});
    for (std::size_t i = 1; i < rows.size() && r.ranking->fit_capacities.size() < kFitCapacitySettings; ++i) {
        const bool repeated = std::any_of(r.ranking->fit_capacities.begin(), r.ranking->fit_capacities.end(),
                                          [&](const FitCapacity& f) { return same_outcome(rows[f.row].outcome, rows[i].outcome); });
        if (!repeated) r.ranking->fit_capacities.push_back({i, search_capacity(run, r, rows[i], lane_seconds)});
    }
}

TuneRanking tune_recording(const TuneRequest& q, const std::string& trace, std::uint64_t capacity) {
    // The trace's request, but this recording's file and the runs' cap: the
    // same grid (its axes were chosen for the trace's cap, as the runs').
    TuneRequest rq = q;
    rq.input.trace = trace;
    rq.input.trace_format = rs::TraceFormat::automatic;
    rq.setup.capacity = capacity;
    rq.confirm.reset();
    rq.input.recording = read_recording_stats(stats_file_name(trace));
    TuneResults r;
    const rs::CostTable table = load_costs(rq.setup, r);
    const rs::CostModel costs(table);
    std::unique_ptr<rs::EventSource> source = open_replayed_input(rq.input, rq.setup, true, r);
    tune_replays(rq, *source, costs, r, std::nullopt);
    return std::move(*r.ranking);
}

void tune_plot_timeline(const TuneRequest& q, const rs::LoadedTrace& trace, const rs::LaneReplayOptions& options,
                        const rs::CostModel& costs, TuneRanking& tune) {
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
        auto lane = std::make_unique<rs::Lane>(std::string(torch.name), std::make_unique<rs::SimulatedUpstream>(q.setup.capacity, &costs));
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

}  // namespace gpumem::cli
