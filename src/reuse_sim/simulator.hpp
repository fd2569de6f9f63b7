// The replay: feeds one stream of events to any number of strategies at once
// ("lanes", each with its own upstream), checks the events (a free must name
// a live id), and measures what the issue asks per strategy. Memory is
// proportional to the live allocations and to the timeline's fixed number of
// points, not to the length of the trace.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reuse_sim/events.hpp"
#include "reuse_sim/flat_map.hpp"
#include "reuse_sim/recycled_ids.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/upstream.hpp"

namespace gpumem::reuse_sim {

// What the replay measures of a lane; the strategy counts its requests, hits,
// refusals and retries itself (Strategy::counters()).
struct LaneMetrics {
    std::uint64_t first_oom_event = 0;  // the ordinal (from 1) of the event first refused; 0: none
    std::uint64_t granted_oom_events = 0;  // requests the recording refused (oom events) that this lane served
    std::uint64_t live_bytes = 0, peak_live_bytes = 0;        // requested bytes live in this lane
    std::uint64_t peak_reserved_bytes = 0, live_at_peak_reserved = 0;
};

struct Lane {
    Lane(std::string name, std::unique_ptr<Upstream> upstream)
        : name(std::move(name)), upstream(std::move(upstream)) {}
    std::string name;
    std::unique_ptr<Upstream> upstream;  // declared first: the strategy refers to it
    std::unique_ptr<Strategy> strategy;
    LaneMetrics metrics;
};

// Reserved bytes per lane (and live bytes) over the run, kept to a fixed
// number of points: when full, neighbouring points merge and each point
// covers twice as many events. A point keeps the maximum and the minimum of
// its events (a plot draws the band between them, so a spike between two
// points is not lost), and each lane's refused requests so far (where its
// OOMs fall).
class Timeline {
public:
    Timeline(std::size_t lanes, std::size_t max_points);
    void record(std::uint64_t event_index, const std::vector<Lane*>& lanes, std::uint64_t live_bytes);
    void finish();
    std::size_t points() const noexcept { return first_event_.size(); }
    std::size_t lanes() const noexcept { return lanes_; }
    // Events [first_event(p), first_event(p + 1)) are point p's.
    std::uint64_t first_event(std::size_t point) const { return first_event_[point]; }
    std::uint64_t live(std::size_t point) const { return values_[point * (lanes_ + 1)]; }
    std::uint64_t reserved(std::size_t point, std::size_t lane) const { return values_[point * (lanes_ + 1) + 1 + lane]; }
    std::uint64_t live_min(std::size_t point) const { return minima_[point * (lanes_ + 1)]; }
    std::uint64_t reserved_min(std::size_t point, std::size_t lane) const { return minima_[point * (lanes_ + 1) + 1 + lane]; }
    // The lane's requests refused from the first event to point p's last.
    std::uint64_t refusals(std::size_t point, std::size_t lane) const { return refusals_[point * lanes_ + lane]; }

private:
    void push_bucket();
    std::size_t lanes_, max_points_;
    std::uint64_t width_ = 1, in_bucket_ = 0, bucket_first_ = 0;
    std::vector<std::uint64_t> bucket_, bucket_min_;  // lanes_ + 1 maxima and minima of the open bucket
    std::vector<std::uint64_t> bucket_refusals_;      // each lane's refusals at the bucket's latest event
    std::vector<std::uint64_t> first_event_;
    std::vector<std::uint64_t> values_, minima_;  // per point: live, then each lane's reserved
    std::vector<std::uint64_t> refusals_;         // per point: each lane's
};

struct ReplayOptions {
    std::uint64_t sync_every = 0;       // also synchronize after every N requests (0: never)
    std::size_t timeline_points = 0;    // 0: no timeline
    std::function<void()> poll;         // called every poll_interval events (Ctrl-C checks)
    std::uint64_t poll_interval = 1 << 16;
    // Stop at the first request a lane refuses: the tuner's capacity search
    // asks only whether a setting fits (the summary then covers the events
    // up to it, and says so).
    bool stop_at_first_oom = false;
};

// What the recorded allocator did by its own account (a PyTorch snapshot's
// segment events): PyTorch's num_device_alloc counts segment_alloc and
// segment_map, num_device_free segment_free and segment_unmap.
struct RecordedFigures {
    std::uint64_t segment_events = 0;  // 0: the input recorded none
    std::uint64_t device_allocs = 0, device_frees = 0;
    std::uint64_t reserved_bytes = 0, peak_reserved_bytes = 0;  // from the start of the recording
};

struct ReplaySummary {
    std::uint64_t events = 0, allocs = 0, frees = 0, syncs = 0, skipped = 0;
    std::uint64_t empty_caches = 0;  // empty_cache events
    std::uint64_t oom_events = 0;    // requests the recorded allocator refused (replayed as requests)
    RecordedFigures recorded;
    std::uint64_t peak_live_bytes = 0, live_at_end = 0, live_bytes_at_end = 0, max_live_allocations = 0;
    std::uint64_t largest_request = 0;
    std::uint64_t requested_bytes = 0;
    std::uint32_t streams = 0;
    double seconds = 0;
    bool stopped_at_oom = false;  // ReplayOptions::stop_at_first_oom ended it before the input's end
};

class Replay {
public:
    Replay(std::vector<Lane*> lanes, ReplayOptions options);
    // Runs the source to its end. Throws UsageError for inconsistent events
    // (free of an id that is not live, alloc of a live id, a free whose size
    // differs from the allocation's) and for sizes that would overflow (a
    // request above kMaxRequestBytes, live bytes beyond 2^64, a strategy's
    // SizeOverflow), naming the source location.
    ReplaySummary run(EventSource& source);
    // Frees what is still live through each strategy, then has each release
    // its cache: the end of an --execute run. Not part of the metrics.
    void teardown();
    const Timeline* timeline() const noexcept { return timeline_.get(); }

private:
    struct Live {
        std::uint64_t size = 0;
        std::uint32_t stream = 0;
    };
    std::uint32_t stream_index(std::uint64_t stream);
    void synchronize_all();
    // The parts of run(), always inlined into it (simulator.cpp).
    void note_initial_reservations();
    [[gnu::always_inline]] inline std::uint32_t take_handle(const EventSource& source, const Event& e);
    [[gnu::always_inline]] inline void serve(Lane& lane, const Request& r, const EventSource& source, const Event& e,
                                             std::uint64_t event_ordinal);
    [[gnu::always_inline]] inline void replay_alloc(const EventSource& source, const Event& e, ReplaySummary& s,
                                                    std::uint64_t& live_bytes);
    [[gnu::always_inline]] inline void replay_free(const EventSource& source, const Event& e, ReplaySummary& s,
                                                   std::uint64_t& live_bytes);
    void replay_other(const EventSource& source, const Event& e, ReplaySummary& s);
    void replay_oom(const EventSource& source, const Event& e, ReplaySummary& s);
    void free_granted_ooms();

    std::vector<Lane*> lanes_;
    ReplayOptions options_;
    U64Map ids_;       // live id -> handle
    U64Map streams_;   // stream -> dense index
    std::uint64_t last_stream_ = 0;        // most traces use one stream: skip the lookup
    std::uint32_t last_stream_index_ = 0;
    std::vector<Live> live_;
    RecycledIds<std::uint32_t> handles_{0};
    // Recorded OOMs that some lane granted, held until the program's next
    // request (see replay_oom): their handles and sizes.
    std::vector<Live> granted_ooms_;
    std::vector<std::uint32_t> granted_handles_;
    std::unique_ptr<Timeline> timeline_;
    bool stop_ = false;  // a lane refused a request under stop_at_first_oom
};

// Per-strategy results as reported.
struct LaneResult {
    std::string strategy;
    std::uint64_t requests = 0, served = 0, hits = 0, ooms = 0, retries = 0;
    std::uint64_t first_oom_event = 0;  // the ordinal (from 1) of the event first refused; 0: none
    std::uint64_t granted_oom_events = 0;  // of the recording's refused requests (oom events), those served
    std::uint64_t upstream_allocs = 0, upstream_frees = 0, implicit_syncs = 0;
    double hit_rate = 0;  // hits / requests
    std::uint64_t peak_reserved = 0, peak_live = 0;
    std::uint64_t slack_at_peak = 0;  // peak_reserved - peak_live
    double fragmentation = 0;  // 1 - live / reserved when the reservation peaked
    double modelled_us = 0, measured_us = 0;
    UpstreamCounters counters;
    std::vector<std::pair<std::string, std::uint64_t>> details;
};
LaneResult summarize(const Lane& lane);

// The largest request of a source (a pre-pass for ring's buffer size); the
// source is rewound before and after. Throws UsageError if it cannot rewind.
std::uint64_t largest_request(EventSource& source);

}  // namespace gpumem::reuse_sim
