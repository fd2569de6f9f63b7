// gpumem reuse-sim --tune / --sweep: every setting of the grid is a
// torch-caching lane of one replay of the input; then, for the best setting,
// a few more replays (16 capacities a pass) search the smallest capacity it
// fits in. The grid, the ranking and the answer are reuse_sim/tuner.hpp's.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/sizes.hpp"
#include "reuse_sim.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// One lane of a tuner replay: a setting under a capacity.
struct TuneLane {
    rs::TorchOptions torch;
    std::uint64_t capacity = rs::kUnlimited;
};

struct LanesReplay {
    rs::ReplaySummary summary;
    std::vector<rs::LaneResult> lanes;
};

// The input replayed once through torch-caching lanes, from its start.
LanesReplay replay_lanes(const ReuseSimRequest& q, rs::EventSource& source, const rs::CostModel& costs, const rs::StrategyOptions& base,
                         const std::vector<TuneLane>& specs) {
    const rs::StrategySpec& torch = rs::kStrategies.parse("torch-caching");
    std::vector<std::unique_ptr<rs::Lane>> lanes;
    std::vector<rs::Lane*> lane_ptrs;
    auto add_lane = [&](const rs::StrategyOptions& options, std::uint64_t capacity) {
        auto lane = std::make_unique<rs::Lane>("torch-caching", std::make_unique<rs::SimulatedUpstream>(capacity, &costs));
        lane->strategy = rs::make_strategy(torch, options, *lane->upstream);
        lane_ptrs.push_back(lane.get());
        lanes.push_back(std::move(lane));
    };
    // First, unreported: the recorded settings under the recorded capacity,
    // which read the snapshot's ambiguous releases for every lane (see
    // rs::ReleaseReadings); a lane's own state would read a release PyTorch
    // made itself as the program's empty_cache under other settings.
    rs::StrategyOptions options = base;
    options.release_readings = std::make_shared<rs::ReleaseReadings>();
    options.decides_release_readings = true;
    add_lane(options, q.capacity);
    options.decides_release_readings = false;
    for (const TuneLane& spec : specs) {
        options.torch = spec.torch;
        add_lane(options, spec.capacity);
    }
    rs::ReplayOptions replay_options;
    replay_options.sync_every = q.sync_every;
    replay_options.poll = [] { throw_if_interrupted(); };
    rs::Replay replay(lane_ptrs, replay_options);
    LanesReplay result;
    result.summary = replay.run(source);
    for (std::size_t i = 1; i < lanes.size(); ++i) result.lanes.push_back(rs::summarize(*lanes[i]));
    return result;
}

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

// The search's bounds: 16 capacities a pass, at most 3 passes to narrow
// down (one more for its uncapped peak when the best setting does not fit
// under the cap, one more to look higher when nothing up to that fits), and
// no search that the grid's own replay says would take over a minute.
constexpr std::size_t kProbesPerPass = 16;
constexpr int kSearchPasses = 3;
constexpr double kSearchSeconds = 60.0;

// The smallest capacity of `probes` that `torch` fits in (no OOM), by one
// replay; also the largest that it does not fit in below that one.
std::pair<std::optional<std::uint64_t>, std::optional<std::uint64_t>> probe(const ReuseSimRequest& q, rs::EventSource& source,
                                                                            const rs::CostModel& costs,
                                                                            const rs::StrategyOptions& base, const rs::TorchOptions& torch,
                                                                            const std::vector<std::uint64_t>& probes) {
    if (!source.rewind()) throw Error("--tune: cannot read " + source.description() + " again");
    std::vector<TuneLane> specs;
    specs.reserve(probes.size());
    for (std::uint64_t c : probes) specs.push_back({torch, c});
    const LanesReplay replay = replay_lanes(q, source, costs, base, specs);
    std::optional<std::uint64_t> fits, fails;
    for (std::size_t i = 0; i < probes.size(); ++i) {
        if (replay.lanes[i].ooms == 0 && !fits) fits = probes[i];
        if (replay.lanes[i].ooms != 0 && !fits) fails = probes[i];
    }
    return {fits, fails};
}

// The smallest capacity the best setting fits in, assuming that a setting
// that fits in some capacity fits in every larger one.
rs::CapacitySearch search_capacity(const ReuseSimRequest& q, rs::EventSource& source, const rs::CostModel& costs,
                                   const ReuseSimResults& r, const rs::TuneRow& best, double grid_seconds) {
    rs::CapacitySearch search;
    const std::uint64_t peak_live = r.summary->peak_live_bytes;
    if (peak_live == 0) {
        search.not_searched = "the input allocates nothing";
        return search;
    }
    const double lane_seconds = grid_seconds / static_cast<double>(std::max<std::uint64_t>(r.tune->grid_points, 1));
    const double estimate = lane_seconds * static_cast<double>(kProbesPerPass * (kSearchPasses + 1) + 1);
    if (estimate > kSearchSeconds) {
        search.not_searched = "it would take about " + std::to_string(static_cast<long long>(estimate)) + " s more";
        return search;
    }
    // `high`: the cap when the best setting fits under it; else its peak
    // without a cap, which the first pass checks. Below the peak of live
    // requests nothing fits.
    std::uint64_t low = peak_live - 1, high = q.capacity;
    std::optional<std::uint64_t> smallest;
    if (q.capacity != rs::kUnlimited && best.outcome.ooms == 0) {
        smallest = high;
    } else if (q.capacity == rs::kUnlimited) {
        high = best.outcome.peak_reserved;
    } else {
        if (!source.rewind()) throw Error("--tune: cannot read " + source.description() + " again");
        high = replay_lanes(q, source, costs, r.strategy_options, {{best.point.options, rs::kUnlimited}}).lanes.front().peak_reserved;
        search.replays += 1;
    }
    // At least one pass: an uncapped peak is checked under a cap of its size.
    // Where nothing up to it fits (under a cap the allocator decides
    // otherwise: garbage collection, expandable segments), one pass looks
    // up to 4 times higher before the others narrow down.
    bool looked_higher = false;
    for (int pass = 0; pass <= kSearchPasses && (pass == 0 || high > low + (1ULL << 20)); ++pass) {
        const std::vector<std::uint64_t> probes = rs::capacity_probes(low, high, kProbesPerPass);
        const auto [fits, fails] = probe(q, source, costs, r.strategy_options, best.point.options, probes);
        search.replays += probes.size();
        if (fails) low = *fails;
        if (!fits) {
            if (smallest || looked_higher || high > rs::kUnlimited / 4) break;
            looked_higher = true;
            high *= 4;
            continue;
        }
        high = *fits;
        smallest = high;
        if (pass == kSearchPasses - 1 && !looked_higher) break;
    }
    if (!smallest) {
        search.not_searched = "it ran out of memory at every capacity tried, up to " + format_bytes(high);
        return search;
    }
    search.smallest = smallest;
    search.resolution = high - low;
    return search;
}

}  // namespace

void tune_reuse_sim(const ReuseSimRequest& q, rs::EventSource& source, const rs::CostModel& costs, ReuseSimResults& r) {
    const std::vector<rs::GridPoint> points = rs::grid_points(r.strategy_options.torch, q.tune->axes);
    std::vector<TuneLane> specs;
    specs.reserve(points.size());
    for (const rs::GridPoint& p : points) specs.push_back({p.options, q.capacity});
    r.tune = TuneResults{};
    r.tune->grid_points = points.size();
    LanesReplay grid = replay_lanes(q, source, costs, r.strategy_options, specs);
    if (grid.summary.skipped) r.warnings.push_back(std::to_string(grid.summary.skipped) + " " + source.skipped_what() + " were not replayed");
    for (std::string& note : source.notes()) r.warnings.push_back(std::move(note));
    r.summary = grid.summary;
    for (std::size_t i = 0; i < points.size(); ++i) r.tune->rows.push_back({points[i], outcome_of(grid.lanes[i])});
    rs::rank_rows(r.tune->rows);
    r.tune->search = search_capacity(q, source, costs, r, r.tune->rows.front(), grid.summary.seconds);
}

}  // namespace gpumem::cli
