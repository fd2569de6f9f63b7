#include "reuse_sim/tune_replays.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <string>
#include <utility>

#include "base/errors.hpp"
#include "reuse_sim/cost_table.hpp"
#include "reuse_sim/torch_caching.hpp"
#include "reuse_sim/work_pool.hpp"

namespace gpumem::reuse_sim {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kPollEvents = 1 << 14;

// A source over a LoadedTrace's events; the loaded source answers the rest.
class MemorySource final : public EventSource {
public:
    explicit MemorySource(const LoadedTrace& trace) : trace_(trace) {}
    bool next(Event& e) override {
        if (next_ == trace_.events().size()) return false;
        e = trace_.events()[next_++];
        return true;
    }
    std::string location(std::uint64_t line) const override { return trace_.source().location(line); }
    std::string description() const override { return trace_.source().description(); }
    std::string format() const override { return trace_.source().format(); }
    bool rewind() override {
        next_ = 0;
        return true;
    }
    std::uint64_t skipped() const override { return trace_.source().skipped(); }
    std::string skipped_what() const override { return trace_.source().skipped_what(); }
    std::vector<std::string> notes() const override { return trace_.source().notes(); }
    const RecordedAllocatorSettings* allocator_settings() const override { return trace_.source().allocator_settings(); }
    const AllocatorFacts* allocator_facts() const override { return trace_.source().allocator_facts(); }
    std::string tag_name(std::uint32_t tag) const override { return trace_.source().tag_name(tag); }

private:
    const LoadedTrace& trace_;
    std::size_t next_ = 0;
};

// One lane alone over the trace.
LaneResult replay_lane(const LoadedTrace& trace, const TorchLane& spec, const StrategyOptions& options, const LaneReplayOptions& o,
                       const std::function<void()>& poll, ReplaySummary& summary) {
    static const StrategySpec& torch = kStrategies.parse("torch-caching");
    // The cost model's size caches are written as it is read: one per lane,
    // not shared between threads.
    std::unique_ptr<CostModel> costs = o.costs ? std::make_unique<CostModel>(o.costs->table()) : nullptr;
    Lane lane("torch-caching", std::make_unique<SimulatedUpstream>(spec.capacity, costs.get()));
    StrategyOptions lane_options = options;
    lane_options.torch = spec.torch;
    lane.strategy = make_strategy(torch, lane_options, *lane.upstream);
    ReplayOptions replay_options;
    replay_options.sync_every = o.sync_every;
    replay_options.poll = poll;
    replay_options.poll_interval = kPollEvents;
    replay_options.stop_at_first_oom = o.stop_at_first_oom;
    Replay replay(std::vector<Lane*>{&lane}, replay_options);
    std::unique_ptr<EventSource> source = trace.cursor();
    summary = replay.run(*source);
    return summarize(lane);
}

}  // namespace

// ---------------------------------------------------------------- LoadedTrace

LoadedTrace::LoadedTrace(EventSource& source, const std::function<void()>& poll, std::uint64_t max_events) : source_(source) {
    Event e;
    std::uint64_t until_poll = 1 << 16;
    while (source.next(e)) {
        if (events_.size() >= max_events)
            throw UsageError(source.description() + ": more than " + std::to_string(max_events) +
                             " events, the limit of what reuse-sim tune holds in memory (48 bytes an event): replay a part "
                             "of the trace, or one setting with reuse-sim replay (streamed, no limit)");
        events_.push_back(e);
        if (e.kind == EventKind::alloc || e.kind == EventKind::oom) request_sizes_.push_back(e.size);
        if (e.kind == EventKind::empty_cache) ++empty_caches_;
        if (--until_poll == 0) {
            until_poll = 1 << 16;
            if (poll) poll();
        }
    }
    std::sort(request_sizes_.begin(), request_sizes_.end());
    request_sizes_.erase(std::unique(request_sizes_.begin(), request_sizes_.end()), request_sizes_.end());
    request_sizes_.shrink_to_fit();
}

LoadedTrace::LoadedTrace(const EventSource& names, std::vector<Event> events) : source_(names), events_(std::move(events)) {
    for (const Event& e : events_) {
        if (e.kind == EventKind::alloc || e.kind == EventKind::oom) request_sizes_.push_back(e.size);
        if (e.kind == EventKind::empty_cache) ++empty_caches_;
    }
    std::sort(request_sizes_.begin(), request_sizes_.end());
    request_sizes_.erase(std::unique(request_sizes_.begin(), request_sizes_.end()), request_sizes_.end());
    request_sizes_.shrink_to_fit();
}

std::uint64_t LoadedTrace::largest_segment() const noexcept {
    if (request_sizes_.empty()) return 0;
    return detail::torch::TorchCaching::get_allocation_size(request_sizes_.back()) + detail::torch::kRoundLarge;
}

std::unique_ptr<EventSource> LoadedTrace::cursor() const { return std::make_unique<MemorySource>(*this); }

// ------------------------------------------------------------------- replays

LaneReplays replay_torch_lanes(const LoadedTrace& trace, const std::vector<TorchLane>& lanes, const LaneReplayOptions& o) {
    const auto start = std::chrono::steady_clock::now();
    const std::size_t n = lanes.size();
    LaneReplays result;
    result.lanes.resize(n);
    std::vector<ReplaySummary> summaries(n);
    std::atomic<std::uint64_t> done_events{0};
    const std::uint64_t total = static_cast<std::uint64_t>(trace.events().size()) * n;
    run_parallel(
        n, o.threads,
        [&](std::size_t i, const WorkStop& stop) {
            std::uint64_t polled = 0;
            const std::function<void()> poll = [&] {
                stop.throw_if_requested();
                polled += kPollEvents;
                done_events += kPollEvents;
                if (o.poll) o.poll();
            };
            result.lanes[i] = replay_lane(trace, lanes[i], o.base, o, poll, summaries[i]);
            done_events += trace.events().size() - std::min<std::uint64_t>(polled, trace.events().size());
        },
        o.progress ? std::function<void()>([&] { o.progress(done_events.load(), total); }) : std::function<void()>());
    const auto whole = std::find_if(summaries.begin(), summaries.end(), [](const ReplaySummary& s) { return !s.stopped_at_oom; });
    if (whole != summaries.end()) result.summary = *whole;
    else if (n > 0) result.summary = summaries.front();
    result.summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

DecidedReadings decide_release_readings(const LoadedTrace& trace, const TorchLane& recorded, const LaneReplayOptions& options) {
    DecidedReadings decided;
    decided.readings = std::make_shared<ReleaseReadings>();
    LaneReplayOptions o = options;
    o.base.release_readings = decided.readings;
    o.base.decides_release_readings = true;
    o.stop_at_first_oom = false;
    decided.replay = replay_torch_lanes(trace, {recorded}, o);
    return decided;
}

// --------------------------------------------------------------- equivalence

std::vector<std::size_t> equivalent_points(const std::vector<GridPoint>& points, const std::vector<std::uint64_t>& request_sizes) {
    using detail::torch::TorchCaching;
    SimulatedUpstream upstream(kUnlimited, nullptr);
    // Each distinct roundup_power2_divisions: the first one that rounds every
    // request alike, and the largest segment a request takes under it.
    struct Rounding {
        std::array<std::uint64_t, 16> divisions;
        std::size_t same_as;
        std::uint64_t largest_segment;
    };
    std::vector<Rounding> roundings;
    auto rounding_of = [&](const TorchOptions& o) -> const Rounding& {
        for (const Rounding& r : roundings)
            if (r.divisions == o.roundup_power2_divisions) return r;
        TorchOptions alone;
        alone.roundup_power2_divisions = o.roundup_power2_divisions;
        const TorchCaching model(upstream, alone);
        Rounding r{o.roundup_power2_divisions, roundings.size(), 0};
        for (std::uint64_t size : request_sizes)
            r.largest_segment = std::max(r.largest_segment, TorchCaching::get_allocation_size(model.round_size(size)));
        for (const Rounding& earlier : roundings) {
            if (earlier.same_as != static_cast<std::size_t>(&earlier - roundings.data())) continue;
            TorchOptions other;
            other.roundup_power2_divisions = earlier.divisions;
            const TorchCaching earlier_model(upstream, other);
            const bool same = std::all_of(request_sizes.begin(), request_sizes.end(),
                                          [&](std::uint64_t size) { return model.round_size(size) == earlier_model.round_size(size); });
            if (same) {
                r.same_as = earlier.same_as;
                break;
            }
        }
        roundings.push_back(r);
        return roundings.back();
    };
    // A setting reduced to what its replay depends on.
    struct Key {
        std::size_t rounding;
        std::uint64_t max_split_size, max_non_split_rounding;
        double gc;
        bool expandable;
        bool operator==(const Key& k) const noexcept {
            return rounding == k.rounding && max_split_size == k.max_split_size && max_non_split_rounding == k.max_non_split_rounding &&
                   gc == k.gc && expandable == k.expandable;
        }
    };
    std::vector<Key> keys;
    std::vector<std::size_t> representative;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const TorchOptions& o = points[i].options;
        const Rounding& r = rounding_of(o);
        Key k{r.same_as, o.max_split_size, o.max_non_split_rounding, o.garbage_collection_threshold, o.expandable_segments};
        if (!o.expandable_segments && o.max_split_size > r.largest_segment) k.max_split_size = TorchOptions::kNoLimit;
        // Without a limit, the rounding above one is never read.
        if (k.max_split_size == TorchOptions::kNoLimit) k.max_non_split_rounding = 0;
        if (o.expandable_segments) k.gc = 0.0;
        const auto same = std::find(keys.begin(), keys.end(), k);
        representative.push_back(same == keys.end() ? i : representative[static_cast<std::size_t>(same - keys.begin())]);
        keys.push_back(k);
    }
    return representative;
}

// ----------------------------------------------------------------- bisection

std::optional<std::uint64_t> bisection_midpoint(std::uint64_t low, std::uint64_t high) {
    if (high <= low || high - low < 2) return std::nullopt;
    const std::uint64_t middle = low + (high - low) / 2;
    std::uint64_t mid = middle / kMiB * kMiB;
    if (mid != middle && mid <= ~0ULL - kMiB) mid += kMiB;  // up to a MiB
    if (mid >= high) mid = middle / kMiB * kMiB;             // else down
    if (mid <= low || mid >= high) return std::nullopt;
    return mid;
}

std::vector<std::uint64_t> bisection_probes(std::uint64_t low, std::uint64_t high, std::size_t count) {
    std::vector<std::uint64_t> probes;
    std::deque<std::pair<std::uint64_t, std::uint64_t>> ranges{{low, high}};
    while (!ranges.empty() && probes.size() < count) {
        const auto [l, h] = ranges.front();
        ranges.pop_front();
        const std::optional<std::uint64_t> mid = bisection_midpoint(l, h);
        if (!mid) continue;
        probes.push_back(*mid);
        // A probe that fits leads below it: that side first.
        ranges.emplace_back(l, *mid);
        ranges.emplace_back(*mid, h);
    }
    return probes;
}

}  // namespace gpumem::reuse_sim
