#include "reuse_sim/simulator.hpp"

#include <algorithm>
#include <chrono>

#include "base/errors.hpp"

namespace gpumem::reuse_sim {

// ------------------------------------------------------------------ Timeline

Timeline::Timeline(std::size_t lanes, std::size_t max_points)
    : lanes_(lanes),
      max_points_(max_points < 2 ? 2 : max_points),
      bucket_(lanes + 1, 0),
      bucket_min_(lanes + 1, ~std::uint64_t{0}),
      bucket_refusals_(lanes, 0) {}

void Timeline::record(std::uint64_t event_index, const std::vector<Lane*>& lanes, std::uint64_t live_bytes) {
    if (in_bucket_ == 0) bucket_first_ = event_index;
    bucket_[0] = std::max(bucket_[0], live_bytes);
    bucket_min_[0] = std::min(bucket_min_[0], live_bytes);
    for (std::size_t i = 0; i < lanes_; ++i) {
        const std::uint64_t reserved = lanes[i]->upstream->counters().reserved_bytes;
        bucket_[i + 1] = std::max(bucket_[i + 1], reserved);
        bucket_min_[i + 1] = std::min(bucket_min_[i + 1], reserved);
        // A lane without a strategy (a test's bare upstream) refuses nothing.
        bucket_refusals_[i] = lanes[i]->strategy ? lanes[i]->strategy->counters().refusals : 0;
    }
    if (++in_bucket_ == width_) push_bucket();
}

void Timeline::push_bucket() {
    first_event_.push_back(bucket_first_);
    values_.insert(values_.end(), bucket_.begin(), bucket_.end());
    minima_.insert(minima_.end(), bucket_min_.begin(), bucket_min_.end());
    refusals_.insert(refusals_.end(), bucket_refusals_.begin(), bucket_refusals_.end());
    std::fill(bucket_.begin(), bucket_.end(), 0);
    std::fill(bucket_min_.begin(), bucket_min_.end(), ~std::uint64_t{0});
    in_bucket_ = 0;
    if (first_event_.size() >= max_points_ * 2) {
        // Halve the resolution: merge neighbours, keeping the maxima, the
        // minima and the later count of refusals.
        const std::size_t n = first_event_.size() / 2, stride = lanes_ + 1;
        for (std::size_t p = 0; p < n; ++p) {
            first_event_[p] = first_event_[2 * p];
            for (std::size_t k = 0; k < stride; ++k) {
                values_[p * stride + k] = std::max(values_[2 * p * stride + k], values_[(2 * p + 1) * stride + k]);
                minima_[p * stride + k] = std::min(minima_[2 * p * stride + k], minima_[(2 * p + 1) * stride + k]);
            }
            for (std::size_t k = 0; k < lanes_; ++k) refusals_[p * lanes_ + k] = refusals_[(2 * p + 1) * lanes_ + k];
        }
        first_event_.resize(n);
        values_.resize(n * stride);
        minima_.resize(n * stride);
        refusals_.resize(n * lanes_);
        width_ *= 2;
    }
}

void Timeline::finish() {
    if (in_bucket_ > 0) push_bucket();
}

// -------------------------------------------------------------------- Replay

Replay::Replay(std::vector<Lane*> lanes, ReplayOptions options) : lanes_(std::move(lanes)), options_(std::move(options)) {
    streams_.put(0, 0);  // the default stream is index 0 whether or not it appears first
    if (options_.timeline_points > 0) timeline_ = std::make_unique<Timeline>(lanes_.size(), options_.timeline_points);
}

std::uint32_t Replay::stream_index(std::uint64_t stream) {
    if (stream == last_stream_) return last_stream_index_;
    std::uint32_t i;
    if (const std::uint32_t* found = streams_.find(stream)) {
        i = *found;
    } else {
        i = static_cast<std::uint32_t>(streams_.size());
        streams_.put(stream, i);
    }
    last_stream_ = stream;
    last_stream_index_ = i;
    return i;
}

void Replay::synchronize_all() {
    for (Lane* lane : lanes_) lane->strategy->synchronize_point();
}

// The per-event work below is always inlined into run(): the loop is the
// simulator's hot path (bench/reuse-sim.sh), and its running totals stay in
// run()'s registers across the strategies' virtual calls.

void Replay::note_initial_reservations() {
    for (Lane* lane : lanes_) {
        // Strategies that reserve at construction (RMM's bins) start above zero.
        const std::uint64_t reserved = lane->upstream->counters().reserved_bytes;
        if (reserved > lane->metrics.peak_reserved_bytes) lane->metrics.peak_reserved_bytes = reserved;
    }
}

inline std::uint32_t Replay::take_handle(const EventSource& source, const Event& e) {
    if (ids_.find(e.id))
        throw UsageError(source.location(e.line) + ": alloc of id " + std::to_string(e.id) + ", which is already live");
    const std::uint32_t handle = handles_.take();
    ids_.put(e.id, handle);
    return handle;
}

namespace {

// "trace.csv:3: alloc of N bytes: ", the start of a message about an event's size.
std::string size_context(const EventSource& source, const Event& e) {
    return source.location(e.line) + ": " + (e.kind == EventKind::oom ? "oom" : "alloc") + " of " + std::to_string(e.size) +
           " bytes: ";
}

void check_request_size(const EventSource& source, const Event& e) {
    if (e.size > kMaxRequestBytes)
        throw UsageError(size_context(source, e) +
                         "larger than 4 EiB (2^62 bytes), which no strategy can round or add up within 64 bits");
}

}  // namespace

inline void Replay::serve(Lane& lane, const Request& r, const EventSource& source, const Event& e, std::uint64_t event_ordinal) {
    LaneMetrics& m = lane.metrics;
    bool ok = false;
    try {
        ok = lane.strategy->allocate(r);
    } catch (const SizeOverflow& overflow) {
        throw UsageError(size_context(source, e) + lane.name + ": " + overflow.what());
    } catch (const UsageError& error) {  // GrowthPolicy's own size checks
        throw UsageError(size_context(source, e) + lane.name + ": " + error.what());
    }
    // The strategy counted the request, its hit or refusal, and holds it if granted.
    if (ok) {
        m.live_bytes += r.size;
        m.peak_live_bytes = std::max(m.peak_live_bytes, m.live_bytes);
    } else {
        if (m.first_oom_event == 0) m.first_oom_event = event_ordinal;
        stop_ = stop_ || options_.stop_at_first_oom;
    }
    const UpstreamCounters& c = lane.upstream->counters();
    if (c.reserved_bytes > m.peak_reserved_bytes) {
        m.peak_reserved_bytes = c.reserved_bytes;
        m.live_at_peak_reserved = m.live_bytes;
    }
}

inline void Replay::replay_alloc(const EventSource& source, const Event& e, ReplaySummary& s, std::uint64_t& live_bytes) {
    if (!granted_handles_.empty()) free_granted_ooms();
    check_request_size(source, e);
    if (live_bytes > ~0ULL - e.size) throw UsageError(size_context(source, e) + "the live allocations would exceed 2^64 bytes");
    const std::uint32_t handle = take_handle(source, e);
    Request r;
    r.handle = handle;
    r.size = e.size;
    r.stream = stream_index(e.stream);
    r.stream_value = e.stream;
    r.slot = e.tag == kNoTag ? ((std::uint64_t{1} << 63) | e.id) : e.tag;
    r.pool = e.pool;
    r.capturing = e.capturing;
    at_grow(live_, handle) = Live{e.size, r.stream};
    live_bytes += e.size;
    s.peak_live_bytes = std::max(s.peak_live_bytes, live_bytes);
    s.max_live_allocations = std::max<std::uint64_t>(s.max_live_allocations, ids_.size());
    s.largest_request = std::max(s.largest_request, e.size);
    s.requested_bytes = s.requested_bytes > ~0ULL - e.size ? ~0ULL : s.requested_bytes + e.size;  // a statistic: saturates
    ++s.allocs;
    for (Lane* lane : lanes_) serve(*lane, r, source, e, s.events);
    if (options_.sync_every && s.allocs % options_.sync_every == 0) synchronize_all();
}

inline void Replay::replay_free(const EventSource& source, const Event& e, ReplaySummary& s, std::uint64_t& live_bytes) {
    const std::uint32_t* found = ids_.find(e.id);
    if (!found) throw UsageError(source.location(e.line) + ": free of id " + std::to_string(e.id) + ", which is not live");
    const std::uint32_t handle = *found;
    const Live l = live_[handle];
    if (e.size != 0 && e.size != l.size)
        throw UsageError(source.location(e.line) + ": free of id " + std::to_string(e.id) + " with size " +
                         std::to_string(e.size) + ", but it was allocated with " + std::to_string(l.size));
    for (Lane* lane : lanes_) {
        if (!lane->strategy->holds(handle)) continue;  // refused
        if (e.deferred) lane->strategy->deallocate_deferred(handle);
        else lane->strategy->deallocate(handle);
        lane->metrics.live_bytes -= l.size;
    }
    ids_.erase(e.id);
    handles_.give_back(handle);
    live_bytes -= l.size;
    ++s.frees;
}

// A request the recorded allocator refused: each strategy is asked for it
// too (PyTorch's own OOM path releases cached blocks first). Its lifetime
// where a strategy grants it is not in the recording, which shows what the
// program did instead: it caught the error, and the frames of the failed step
// were unwound (their tensors freed, with the handler's own work such as
// zero_grad or empty_cache in between) before it asked for memory again, to
// retry smaller, skip the step or end the sequence. A granted block belongs
// to that failed step: it is held until the program's next request (alloc
// or oom) and freed then, before that request (and before a release that
// came right before it, which torch-caching reads with the request: see
// Strategy::deallocate_granted_oom); at the end of the input, at the end.
// Neither at once (the unwinding's frees and the handler's empty_cache would
// see it gone) nor never (a leak the program would not have).
void Replay::replay_oom(const EventSource& source, const Event& e, ReplaySummary& s) {
    if (!granted_handles_.empty()) free_granted_ooms();
    check_request_size(source, e);
    ++s.oom_events;
    Request r;
    r.handle = handles_.take();
    r.size = e.size;
    r.stream = stream_index(e.stream);
    r.stream_value = e.stream;
    // One requester for every untagged refusal: grow-only keeps one buffer for them, not one each.
    r.slot = e.tag == kNoTag ? (std::uint64_t{3} << 62) : e.tag;
    r.recorded_oom = true;
    r.pool = e.pool;
    r.capturing = e.capturing;
    bool granted = false;
    for (Lane* lane : lanes_) {
        if (lane->metrics.live_bytes > ~0ULL - e.size)
            throw UsageError(size_context(source, e) + "the live allocations would exceed 2^64 bytes");
        serve(*lane, r, source, e, s.events);
        if (!lane->strategy->holds(r.handle)) continue;
        ++lane->metrics.granted_oom_events;
        granted = true;
    }
    if (!granted) {
        handles_.give_back(r.handle);
        return;
    }
    granted_handles_.push_back(r.handle);
    granted_ooms_.push_back(Live{e.size, r.stream});
}

// The recorded OOMs some lane granted, freed in the order they were granted.
void Replay::free_granted_ooms() {
    for (std::size_t i = 0; i < granted_handles_.size(); ++i) {
        const std::uint32_t handle = granted_handles_[i];
        for (Lane* lane : lanes_) {
            if (!lane->strategy->holds(handle)) continue;
            lane->strategy->deallocate_granted_oom(handle);
            lane->metrics.live_bytes -= granted_ooms_[i].size;
        }
        handles_.give_back(handle);
    }
    granted_handles_.clear();
    granted_ooms_.clear();
}

// The events other than alloc and free, off the hot path.
void Replay::replay_other(const EventSource& source, const Event& e, ReplaySummary& s) {
    RecordedFigures& rec = s.recorded;
    switch (e.kind) {
        case EventKind::alloc:
        case EventKind::free: break;
        case EventKind::sync:
            ++s.syncs;
            synchronize_all();
            break;
        case EventKind::empty_cache:
            ++s.empty_caches;
            for (Lane* lane : lanes_) lane->strategy->empty_cache();
            break;
        case EventKind::oom: replay_oom(source, e, s); break;
        case EventKind::settings: {
            const std::string conf = source.tag_name(e.tag);
            for (Lane* lane : lanes_) lane->strategy->settings_changed(conf);
            break;
        }
        case EventKind::pool_release:
            for (Lane* lane : lanes_) lane->strategy->pool_released(static_cast<std::uint32_t>(e.id), e.size != 0);
            break;
        case EventKind::segment_alloc:
            for (Lane* lane : lanes_) lane->strategy->recorded_segment(e.id, e.size);
            [[fallthrough]];
        case EventKind::segment_map:
            if (e.kind == EventKind::segment_map)
                for (Lane* lane : lanes_) lane->strategy->recorded_mapping(e.size);
            ++rec.segment_events;
            ++rec.device_allocs;
            rec.reserved_bytes = rec.reserved_bytes > ~0ULL - e.size ? ~0ULL : rec.reserved_bytes + e.size;
            rec.peak_reserved_bytes = std::max(rec.peak_reserved_bytes, rec.reserved_bytes);
            break;
        case EventKind::segment_free:
        case EventKind::segment_unmap:
            ++rec.segment_events;
            ++rec.device_frees;
            // Segments from before the recording began were never counted in.
            rec.reserved_bytes -= std::min(rec.reserved_bytes, e.size);
            break;
    }
}

ReplaySummary Replay::run(EventSource& source) {
    ReplaySummary s;
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t live_bytes = 0;
    std::uint64_t until_poll = options_.poll_interval;
    note_initial_reservations();
    Event e;
    while (!stop_ && source.next(e)) {
        ++s.events;
        switch (e.kind) {
            case EventKind::alloc: replay_alloc(source, e, s, live_bytes); break;
            case EventKind::free: replay_free(source, e, s, live_bytes); break;
            default: replay_other(source, e, s); break;
        }
        if (timeline_) timeline_->record(s.events - 1, lanes_, live_bytes);
        if (--until_poll == 0) {
            until_poll = options_.poll_interval;
            if (options_.poll) options_.poll();
        }
    }
    s.stopped_at_oom = stop_;
    if (!stop_) {
        if (!granted_handles_.empty()) free_granted_ooms();
        for (Lane* lane : lanes_) lane->strategy->end_of_trace();
    }
    if (timeline_) timeline_->finish();
    s.skipped = source.skipped();
    s.live_at_end = ids_.size();
    s.live_bytes_at_end = live_bytes;
    s.streams = static_cast<std::uint32_t>(streams_.size());
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return s;
}

void Replay::teardown() {
    if (!granted_handles_.empty()) free_granted_ooms();  // a run stopped early (Ctrl-C) may hold some
    std::vector<std::uint32_t> handles;
    ids_.for_each([&handles](std::uint64_t, std::uint32_t h) { handles.push_back(h); });
    std::sort(handles.begin(), handles.end());
    for (Lane* lane : lanes_) {
        for (std::uint32_t h : handles)
            if (lane->strategy->holds(h)) lane->strategy->deallocate(h);
        lane->strategy->release_all();
    }
    ids_.clear();
}

// ----------------------------------------------------------------- results

LaneResult summarize(const Lane& lane) {
    LaneResult r;
    const LaneMetrics& m = lane.metrics;
    const UpstreamCounters& c = lane.upstream->counters();
    const StrategyCounters& sc = lane.strategy->counters();
    r.strategy = lane.name;
    r.requests = sc.requests;
    r.ooms = sc.refusals;
    r.first_oom_event = m.first_oom_event;
    r.granted_oom_events = m.granted_oom_events;
    r.served = sc.requests - sc.refusals;
    r.hits = sc.hits;
    r.retries = sc.retries;
    r.upstream_allocs = c.device_allocs + c.pool_grows;
    r.upstream_frees = c.device_frees + c.pool_releases;
    r.implicit_syncs = c.device_frees + c.fills;  // cudaFree and legacy-stream cudaMemset stall the device
    r.hit_rate = sc.requests ? static_cast<double>(sc.hits) / static_cast<double>(sc.requests) : 0.0;
    // The upstream saw every byte (also within a call, between a release and
    // a retry); the replay knows what was live when the peak was reached.
    r.peak_reserved = std::max(c.peak_reserved_bytes, m.peak_reserved_bytes);
    r.peak_live = m.peak_live_bytes;
    // Slack: what the strategy holds beyond the program's own peak need.
    r.slack_at_peak = r.peak_reserved - std::min(r.peak_reserved, r.peak_live);
    // Fragmentation: the share of the reservation that held no request at
    // the moment the reservation peaked (memory the strategy could not reuse
    // for the request that made it grow).
    r.fragmentation = r.peak_reserved
                          ? 1.0 - static_cast<double>(std::min(r.peak_reserved, m.live_at_peak_reserved)) /
                                      static_cast<double>(r.peak_reserved)
                          : 0.0;
    r.modelled_us = c.modelled_us;
    r.measured_us = c.measured_us;
    r.counters = c;
    r.details = lane.strategy->details();
    return r;
}

std::uint64_t largest_request(EventSource& source) {
    if (!source.rewind()) throw UsageError("ring needs the largest request size: give --ring-size for standard input");
    std::uint64_t largest = 0;
    Event e;
    while (source.next(e))
        if (e.kind == EventKind::alloc || e.kind == EventKind::oom) largest = std::max(largest, e.size);
    if (!source.rewind()) throw UsageError("cannot rewind " + source.description());
    return largest;
}

}  // namespace gpumem::reuse_sim
