// The tuner's replays (tune, --sweep), fast: the input is read once into
// memory and every torch-caching lane replays it alone, on as many threads
// as there are cores. Lanes are independent once the snapshot's ambiguous
// releases are read (ReleaseReadings, decided by one replay of the recorded
// settings first), so a lane's result does not depend on the threads, the
// order the lanes run in, or the other lanes: the same as one replay of all
// lanes in step. Also the grid points that provably replay alike
// (equivalent_points), which are then replayed once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "reuse_sim/events.hpp"
#include "reuse_sim/simulator.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/tuner.hpp"
#include "reuse_sim/upstream.hpp"

namespace gpumem::reuse_sim {

// An input read whole into memory (48 bytes an event), from the source it
// came from: that source still answers for locations, notes, skipped events
// and the recorded settings, and must outlive it.
class LoadedTrace {
public:
    // Reads `source` from where it stands to its end; `poll` (may be empty)
    // every 65536 events, to stop on Ctrl-C. Throws what the source throws,
    // and a UsageError naming the limit past `max_events` events: an input
    // that never ends (a FIFO, a generator) must not take the host's memory.
    LoadedTrace(EventSource& source, const std::function<void()>& poll, std::uint64_t max_events = kMaxLoadedEvents);
    // 100 M events: 4.8 GB in memory, a hundred times the million-entry
    // snapshots PyTorch users record.
    static constexpr std::uint64_t kMaxLoadedEvents = 100'000'000;
    // Events already in memory (a trace built by the batch model): `names`
    // answers for their locations and the rest, and must outlive it.
    LoadedTrace(const EventSource& names, std::vector<Event> events);
    const std::vector<Event>& events() const noexcept { return events_; }
    const EventSource& source() const noexcept { return source_; }
    std::uint64_t empty_caches() const noexcept { return empty_caches_; }
    // The sizes of every request (alloc and oom events), each once, ascending.
    const std::vector<std::uint64_t>& request_sizes() const noexcept { return request_sizes_; }
    // The largest segment a request of the input takes without rounding
    // settings (get_allocation_size of its largest request), plus the
    // rounding to 2 MiB a setting can add; 0 without requests.
    std::uint64_t largest_segment() const noexcept;
    // A source over the events, from the first; any number may read at once.
    std::unique_ptr<EventSource> cursor() const;

private:
    const EventSource& source_;
    std::vector<Event> events_;
    std::vector<std::uint64_t> request_sizes_;
    std::uint64_t empty_caches_ = 0;
};

// One lane: a setting under a capacity.
struct TorchLane {
    TorchOptions torch;
    std::uint64_t capacity = kUnlimited;
};

struct LaneReplayOptions {
    // torch-caching's options but the setting; release_readings, when set,
    // complete and read by every lane (no lane decides).
    StrategyOptions base;
    const CostModel* costs = nullptr;
    std::uint64_t sync_every = 0;
    unsigned threads = 1;            // at most this many lanes at once
    bool stop_at_first_oom = false;  // a lane stops at its first refused request
    // Called from the replaying threads (it must be safe to call from
    // several at once): throws to stop every lane (Ctrl-C).
    std::function<void()> poll;
    // Called on the calling thread about ten times a second while lanes
    // run: events replayed so far over all lanes, and in all.
    std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

struct LaneReplays {
    // What the replay saw of the input (it does not depend on the lane):
    // from the first lane that read it to its end; seconds: wall time of all.
    ReplaySummary summary;
    std::vector<LaneResult> lanes;  // in the order of the specs
};

// Every lane replayed alone over `trace`, up to options.threads at a time.
// The first error in lane order is rethrown once every thread has stopped.
LaneReplays replay_torch_lanes(const LoadedTrace& trace, const std::vector<TorchLane>& lanes, const LaneReplayOptions& options);

// The recorded settings under the recorded capacity, replayed alone, as the
// lane that reads the snapshot's ambiguous releases for every other lane.
struct DecidedReadings {
    std::shared_ptr<ReleaseReadings> readings;
    LaneReplays replay;  // its one lane: the recorded setting's own result
};
DecidedReadings decide_release_readings(const LoadedTrace& trace, const TorchLane& recorded, const LaneReplayOptions& options);

// For each grid point, the first point (by index, maybe itself) whose
// replay it provably equals under one capacity, given every request size of
// the input (LoadedTrace::request_sizes):
//  - roundup_power2_divisions that round every request of the input to the
//    same size are the same setting (round_size is their only use);
//  - without expandable segments, a max_split_size above the largest segment
//    any request takes (get_allocation_size of its rounded size) is no limit:
//    no block or request reaches it;
//  - with expandable segments, garbage_collection_threshold does nothing: it
//    frees only whole cudaMalloc'd segments, which expandable segments never
//    make.
std::vector<std::size_t> equivalent_points(const std::vector<GridPoint>& points, const std::vector<std::uint64_t>& request_sizes);

// The capacities a bisection between `low` (too small) and `high` (fits)
// probes next, in order of need: the midpoint first, then those it leads to
// on either outcome, breadth first; `count` of them at most (the threads
// that can replay at once). Midpoints are rounded up to MiB; the search ends
// where no MiB lies strictly between.
std::vector<std::uint64_t> bisection_probes(std::uint64_t low, std::uint64_t high, std::size_t count);
// The next capacity a bisection probes between `low` and `high`; none when done.
std::optional<std::uint64_t> bisection_midpoint(std::uint64_t low, std::uint64_t high);

}  // namespace gpumem::reuse_sim
