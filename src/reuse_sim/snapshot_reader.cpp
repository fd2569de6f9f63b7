#include "reuse_sim/snapshot_reader.hpp"

#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/errors.hpp"
#include "reuse_sim/pickle_reader.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::reuse_sim {

namespace {

using pickle::Document;
using pickle::Kind;
using pickle::Value;

constexpr std::uint64_t kMiB = 1ULL << 20;
// An event dict holds about six keys; a larger one is not an event, and
// looking keys up in it for every event would cost its size each time.
constexpr std::size_t kMaxEventKeys = 64;

bool is_pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

std::size_t log2_of(std::uint64_t v) noexcept {
    std::size_t l = 0;
    while (v >>= 1) ++l;
    return l;
}

// ------------------------------------------------------- allocator_settings

class SettingsReader {
public:
    SettingsReader(const Document& doc, const std::string& name) : doc_(doc), name_(name) {}

    RecordedAllocatorSettings read(const Value& settings) const {
        RecordedAllocatorSettings s;
        if (settings.kind == Kind::none) return s;
        if (settings.kind != Kind::dict) fail("expected a dict, found " + std::string(Document::kind_name(settings.kind)));
        if (const Value* v = doc_.get(settings, "PYTORCH_CUDA_ALLOC_CONF")) {
            std::string_view text;
            if (doc_.as_text(*v, text)) s.alloc_conf = std::string(text);
        }
        if (const Value* v = doc_.get(settings, "max_split_size")) s.max_split_size = max_split_size(*v);
        if (const Value* v = doc_.get(settings, "roundup_power2_divisions")) s.roundup_power2_divisions = divisions(*v);
        if (const Value* v = doc_.get(settings, "garbage_collection_threshold")) {
            double t = 0;
            if (!doc_.as_double(*v, t) || !(t >= 0.0 && t <= 1.0)) fail("garbage_collection_threshold: expected a number from 0 to 1");
            s.garbage_collection_threshold = t;
        }
        if (const Value* v = doc_.get(settings, "expandable_segments")) {
            bool on = false;
            if (!doc_.as_bool(*v, on)) fail("expandable_segments: expected True or False");
            s.expandable_segments = on;
        }
        return s;
    }

private:
    [[noreturn]] void fail(const std::string& why) const { throw UsageError(name_ + ": allocator_settings: " + why); }

    // PyTorch writes int64(SIZE_MAX), -1, for "no limit".
    std::uint64_t max_split_size(const Value& v) const {
        std::int64_t signed_value = 0;
        std::uint64_t bytes = 0;
        if (doc_.as_i64(v, signed_value) && signed_value < 0) return RecordedAllocatorSettings::kUnlimitedSplit;
        if (!doc_.as_u64(v, bytes)) fail("max_split_size: expected an integer");
        if (bytes >= (1ULL << 63)) return RecordedAllocatorSettings::kUnlimitedSplit;
        if (bytes < 20 * kMiB) fail("max_split_size " + std::to_string(bytes) + " is below PyTorch's minimum of 20 MiB");
        return bytes;
    }

    std::uint64_t division(const Value& v) const {
        std::uint64_t d = 0;
        if (!doc_.as_u64(v, d) || (d != 0 && !is_pow2(d)) || d > (1ULL << 30))
            fail("roundup_power2_divisions: a division must be 0 or a power of two");
        return d;
    }

    // Two forms: PyTorch's dict {"1": N, "2": N, ..., "32768": N} keyed by
    // the interval's start in MiB (str or int), or a list of 16 divisions.
    std::array<std::uint64_t, 16> divisions(const Value& v) const {
        std::array<std::uint64_t, 16> out{};
        const Value* items = nullptr;
        std::size_t n = 0;
        if (!doc_.items(v, items, n) || (v.kind != Kind::dict && v.kind != Kind::list && v.kind != Kind::tuple))
            fail("roundup_power2_divisions: expected a dict of interval: divisions, or a list");
        if (v.kind != Kind::dict) {
            if (n > out.size()) fail("roundup_power2_divisions: more than 16 intervals");
            for (std::size_t i = 0; i < n; ++i) out[i] = division(items[i]);
            return out;
        }
        for (std::size_t i = 0; i + 1 < n; i += 2) out[interval_index(items[i])] = division(items[i + 1]);
        return out;
    }

    std::size_t interval_index(const Value& key) const {
        std::uint64_t mib = 0;
        std::string_view text;
        bool ok = doc_.as_u64(key, mib);
        if (!ok && doc_.as_text(key, text) && !text.empty() && text.size() <= 6) {
            ok = true;
            for (char c : text) {
                if (c < '0' || c > '9') ok = false;
                mib = mib * 10 + static_cast<std::uint64_t>(c - '0');
            }
        }
        if (!ok || !is_pow2(mib) || mib > 32768)
            fail("roundup_power2_divisions: an interval must start at a power of two from 1 to 32768 MiB");
        return log2_of(mib);
    }

    const Document& doc_;
    const std::string& name_;
};

// ------------------------------------------------------------------- source

class SnapshotSource final : public EventSource {
public:
    SnapshotSource(std::string name, Document doc, std::optional<std::uint32_t> device, const RecordedCalls* calls)
        : name_(std::move(name)), doc_(std::move(doc)) {
        const Value& root = doc_.root();
        if (root.kind != Kind::dict)
            throw UsageError(name_ + ": not a memory snapshot: the pickle holds a " + Document::kind_name(root.kind) +
                             ", not a dict with 'device_traces'");
        select_device(root, device);
        if (calls && calls->recorded) {
            calls_ = calls->calls;
            // Stable: calls at one place stay in the order made.
            std::stable_sort(calls_.begin(), calls_.end(),
                             [](const AllocatorCall& a, const AllocatorCall& b) { return a.position < b.position; });
            facts_.calls_recorded = true;
        }
        read_private_segments(root);
        if (const Value* s = doc_.get(root, "allocator_settings"); s && s->kind != Kind::none) {
            settings_ = SettingsReader(doc_, name_).read(*s);
            has_settings_ = true;
            facts_.final_conf = settings_.alloc_conf;
        }
        read_settings_calls(calls);
    }

    bool next(Event& e) override {
        while (queue_.empty()) {
            if (index_ == count_) {
                if (!apply_calls_due(true)) return false;
                continue;
            }
            read_entry();
        }
        e = queue_.front();
        queue_.pop_front();
        ++state_.emitted;
        if (e.kind == EventKind::settings) facts_.settings_changes[e.tag].first = state_.emitted;
        return true;
    }
    std::string location(std::uint64_t line) const override {
        if (line == 0 || line > count_) return name_;
        return name_ + ": offset " + std::to_string(doc_.offset_of(entries_[line - 1])) + " (device_traces[" +
               std::to_string(device_) + "][" + std::to_string(line - 1) + "])";
    }
    std::string description() const override { return name_ + " (PyTorch snapshot, device " + std::to_string(device_) + ")"; }
    std::string format() const override { return "snapshot"; }
    bool rewind() override {
        index_ = 0;
        state_ = State{};
        queue_.clear();
        return true;
    }
    std::string tag_name(std::uint32_t tag) const override {
        return tag < facts_.settings_changes.size() ? facts_.settings_changes[tag].second : EventSource::tag_name(tag);
    }
    const AllocatorFacts* allocator_facts() const override {
        return facts_.calls_recorded || facts_.mem_pools || facts_.graph_pools || facts_.final_conf ? &facts_ : nullptr;
    }
    std::uint64_t skipped() const override { return state_.unknown_frees; }
    std::string skipped_what() const override { return "frees of blocks allocated before the recording began"; }
    std::vector<std::string> notes() const override;
    const RecordedAllocatorSettings* allocator_settings() const override { return has_settings_ ? &settings_ : nullptr; }

private:
    struct LiveBlock {
        std::uint64_t id, size, segment;
        bool in_segment;
    };
    struct Segment {
        std::uint64_t size = 0, live = 0;
    };
    // A segment a CUDA graph's private pool held when the snapshot was taken
    // (snapshot["segments"], segment_pool_id other than (0, 0)): the
    // requests placed in it after the history last gave any of its range
    // back were that pool's.
    struct PrivateSegment {
        std::uint64_t end = 0;
        std::uint32_t pool = 0;  // Event::pool
        std::size_t since = 0;   // the first history entry that may be its
    };
    // A capture or use_mem_pool context under way (PyTorch's captures_underway).
    struct Window {
        std::uint32_t pool = 0;
        std::optional<std::uint64_t> stream;  // a capture's stream; none: every request (use_mem_pool's thread)
    };
    // What the history has said so far: a rewind starts it again.
    struct State {
        std::unordered_map<std::uint64_t, LiveBlock> live;  // by address
        std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> free_ids;
        std::uint64_t next_id = 0;
        std::map<std::uint64_t, Segment> segments;  // cudaMalloc'd segments seen allocated, by address
        std::uint64_t free_segments = 0;            // of those, the ones holding no live block
        std::uint64_t unknown_frees = 0, free_requested = 0, markers = 0, unknown_actions = 0;
        std::uint64_t ambiguous_empty_caches = 0;  // read as empty_cache, right before a new segment
        // Blocks the program freed whose free has not completed, by address.
        std::unordered_set<std::uint64_t> free_pending;
        std::size_t last_free_requested = ~std::size_t{0};  // the entry of the latest free_requested
        std::uint64_t last_free_requested_address = 0;
        std::uint64_t private_pool_releases = 0;  // runs that gave a private pool's segments back
        // The recording hook's calls: the entries counted as memory_stats
        // counts them (their position), the next call, the captures and
        // use_mem_pool contexts under way (innermost last).
        std::uint64_t counted = 0, emitted = 0;
        std::size_t next_call = 0;
        std::vector<Window> windows;
        bool pool_release_pending = false;  // the next release run is that pool's emptyCache
        std::uint32_t released_pool = 0;    // ... of this pool
        // With the calls: the segments taken by a private pool's requests (address -> pool).
        std::unordered_map<std::uint64_t, std::uint32_t> pool_segments;
        std::uint32_t last_alloc_pool = 0;  // without the calls: the pool of the latest request
        std::uint64_t ooms_placed_by_guess = 0;
    };

    void select_device(const Value& root, std::optional<std::uint32_t> device);
    void read_private_segments(const Value& root);
    void read_settings_calls(const RecordedCalls* calls);
    std::uint32_t pool_index(std::pair<std::int64_t, std::int64_t> id);
    bool apply_calls_due(bool at_end);
    bool call_due() const { return state_.next_call < calls_.size() && calls_[state_.next_call].position <= state_.counted; }
    void route(std::size_t index, std::uint64_t address, Event& e, bool segment = false);
    std::uint32_t private_pool_of(std::size_t index, std::uint64_t address) const;
    [[noreturn]] void fail(std::size_t index, const std::string& why) const {
        throw UsageError(location(index + 1) + ": " + why);
    }
    std::string_view action_of(std::size_t index) const;
    std::uint64_t field(std::size_t index, std::string_view key, bool required, std::uint64_t fallback = 0) const;
    std::uint64_t stream_of(std::size_t index) const;
    void read_entry();
    void on_alloc(std::size_t index);
    void on_free(std::size_t index);
    Event segment_event(std::size_t index, EventKind kind);
    void on_release_run();
    Segment* segment_holding(std::uint64_t address);

    std::string name_;
    Document doc_;
    std::uint32_t device_ = 0;
    const Value* entries_ = nullptr;
    std::size_t count_ = 0;
    std::size_t index_ = 0;  // the next entry to read
    RecordedAllocatorSettings settings_;
    bool has_settings_ = false;
    State state_;
    std::deque<Event> queue_;  // events read ahead of the caller
    std::map<std::uint64_t, PrivateSegment> private_segments_;  // by address
    std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> pools_;  // MempoolId_t -> Event::pool
    std::vector<AllocatorCall> calls_;  // the recording hook's, by position
    std::vector<std::uint32_t> settings_tags_;  // per call: its settings event's tag (settings calls)
    AllocatorFacts facts_;
};

void SnapshotSource::select_device(const Value& root, std::optional<std::uint32_t> device) {
    const Value* traces = doc_.get(root, "device_traces");
    if (!traces) throw UsageError(name_ + ": not a memory snapshot: no 'device_traces' (was memory history recorded?)");
    const Value* lists = nullptr;
    std::size_t devices = 0;
    if (traces->kind != Kind::list || !doc_.items(*traces, lists, devices))
        throw UsageError(name_ + ": 'device_traces': expected a list, found " + Document::kind_name(traces->kind));
    std::vector<std::uint32_t> with_events;
    for (std::size_t d = 0; d < devices; ++d) {
        const Value* first = nullptr;
        std::size_t n = 0;
        if (lists[d].kind != Kind::list || !doc_.items(lists[d], first, n))
            throw UsageError(name_ + ": device_traces[" + std::to_string(d) + "]: expected a list, found " +
                             Document::kind_name(lists[d].kind));
        if (n > 0) with_events.push_back(static_cast<std::uint32_t>(d));
    }
    if (device) {
        if (*device >= devices)
            throw UsageError(name_ + ": --trace-device " + std::to_string(*device) + ": the snapshot has " + std::to_string(devices) +
                             " device trace(s)");
        device_ = *device;
    } else if (with_events.size() > 1) {
        std::string list;
        for (std::uint32_t d : with_events) list += (list.empty() ? "" : ", ") + std::to_string(d);
        throw UsageError(name_ + ": devices " + list + " all have events: choose one with --trace-device");
    } else {
        device_ = with_events.empty() ? 0 : with_events.front();
    }
    if (device_ < devices) doc_.items(lists[device_], entries_, count_);
}

// The segments of private pools on this device; without any, nothing is
// read further (no history is scanned).
void SnapshotSource::read_private_segments(const Value& root) {
    const Value* segments = doc_.get(root, "segments");
    const Value* items = nullptr;
    std::size_t n = 0;
    if (!segments || segments->kind != Kind::list || !doc_.items(*segments, items, n)) return;
    for (std::size_t i = 0; i < n; ++i) {
        const Value& segment = items[i];
        if (segment.kind != Kind::dict) continue;
        std::uint64_t device = 0, address = 0, size = 0;
        const Value* d = doc_.get(segment, "device");
        const Value* a = doc_.get(segment, "address");
        const Value* t = doc_.get(segment, "total_size");
        const Value* id = doc_.get(segment, "segment_pool_id");
        if (!d || !a || !t || !id || !doc_.as_u64(*d, device) || !doc_.as_u64(*a, address) || !doc_.as_u64(*t, size)) continue;
        const Value* pair = nullptr;
        std::size_t two = 0;
        std::pair<std::int64_t, std::int64_t> key{0, 0};
        if (!doc_.items(*id, pair, two) || two != 2 || !doc_.as_i64(pair[0], key.first) || !doc_.as_i64(pair[1], key.second))
            continue;
        if (device != device_ || (key.first == 0 && key.second == 0) || size == 0 || address > ~0ULL - size) continue;
        private_segments_[address] = PrivateSegment{address + size, pool_index(key), 0};
    }
    if (private_segments_.empty()) return;
    // A release of any part of the range ends what the history says of it.
    for (std::size_t index = 0; index < count_; ++index) {
        const std::string_view action = action_of(index);
        if (action != "segment_free" && action != "segment_unmap") continue;
        const std::uint64_t address = field(index, "addr", true), size = field(index, "size", true);
        auto it = private_segments_.upper_bound(address);
        if (it != private_segments_.begin() && std::prev(it)->second.end > address) --it;
        for (; it != private_segments_.end() && it->first < address + size; ++it) it->second.since = index + 1;
    }
}

std::uint32_t SnapshotSource::pool_index(std::pair<std::int64_t, std::int64_t> id) {
    const auto [it, added] = pools_.emplace(id, static_cast<std::uint32_t>(pools_.size() + 1));
    if (added) {
        // MemPool ids are (0, N), graph pools' (N, 0) (MemPool's constructor).
        if (id.first == 0) ++facts_.mem_pools;
        else ++facts_.graph_pools;
    }
    return it->second;
}

// With settings changed as the program ran, the replay starts under those it
// started with (its PYTORCH_ALLOC_CONF), not the snapshot's last.
void SnapshotSource::read_settings_calls(const RecordedCalls* calls) {
    settings_tags_.assign(calls_.size(), 0);
    for (std::size_t i = 0; i < calls_.size(); ++i) {
        if (calls_[i].kind != AllocatorCall::Kind::settings) continue;
        settings_tags_[i] = static_cast<std::uint32_t>(facts_.settings_changes.size());
        facts_.settings_changes.emplace_back(0, calls_[i].settings);
    }
    if (facts_.settings_changes.empty()) return;
    TorchOptions start;
    const std::string conf = calls && calls->initial_conf ? *calls->initial_conf : std::string();
    try {
        apply_alloc_conf(conf, start);
    } catch (const UsageError& e) {
        throw UsageError(name_ + ": the settings it started with, '" + conf + "': " + e.what());
    }
    RecordedAllocatorSettings s;
    s.alloc_conf = conf;
    s.max_split_size = start.max_split_size == TorchOptions::kNoLimit ? RecordedAllocatorSettings::kUnlimitedSplit : start.max_split_size;
    s.roundup_power2_divisions = start.roundup_power2_divisions;
    s.garbage_collection_threshold = start.garbage_collection_threshold;
    s.expandable_segments = start.expandable_segments;
    settings_ = s;
    has_settings_ = true;
}

// The calls due at this point of the history, as events and contexts; at the
// end, those left. Returns whether any was due.
bool SnapshotSource::apply_calls_due(bool at_end) {
    bool any = false;
    while (state_.next_call < calls_.size() && (at_end || calls_[state_.next_call].position <= state_.counted)) {
        const std::size_t i = state_.next_call++;
        const AllocatorCall& c = calls_[i];
        any = true;
        const std::uint64_t line = std::min<std::uint64_t>(index_, count_) + 1;
        switch (c.kind) {
            case AllocatorCall::Kind::settings:
                queue_.push_back(Event{EventKind::settings, 0, 0, 0, settings_tags_[i], line});
                break;
            case AllocatorCall::Kind::mem_pool_begin: state_.windows.push_back(Window{pool_index(c.pool), std::nullopt}); break;
            case AllocatorCall::Kind::capture_begin: state_.windows.push_back(Window{pool_index(c.pool), c.stream}); break;
            case AllocatorCall::Kind::mem_pool_end:
            case AllocatorCall::Kind::capture_end: {
                const std::uint32_t pool = pool_index(c.pool);
                for (auto w = state_.windows.rbegin(); w != state_.windows.rend(); ++w)
                    if (w->pool == pool) {
                        state_.windows.erase(std::next(w).base());
                        break;
                    }
                break;
            }
            case AllocatorCall::Kind::pool_release: {
                // A MemPool's (id (0, N)) destructor empties its cache; a graph's pool waits for a release.
                const bool mem_pool = c.pool.first == 0;
                const std::uint32_t pool = pool_index(c.pool);
                queue_.push_back(Event{EventKind::pool_release, pool, mem_pool ? 1U : 0U, 0, kNoTag, line});
                state_.pool_release_pending = mem_pool;
                state_.released_pool = pool;
                break;
            }
        }
    }
    return any;
}

// Which pool served a request (alloc or oom) at `address` (0: unknown, an
// oom): the innermost capture or use_mem_pool context that takes its stream,
// as PyTorch's get_pool; without the hook's calls, the private segment that
// held it at the end of the snapshot, and for an oom the pool of the
// request before it (a refused request has no address). `segment`: the
// segment_alloc at `address` that a request is about to take.
void SnapshotSource::route(std::size_t index, std::uint64_t address, Event& e, bool segment) {
    if (facts_.calls_recorded) {
        if (state_.windows.empty()) return;
        for (auto w = state_.windows.rbegin(); w != state_.windows.rend(); ++w) {
            if (w->stream && *w->stream != e.stream) continue;
            e.pool = w->pool;
            return;
        }
        // A capture's other streams: the pool its segments show, else a default pool, still under capture.
        if (e.kind == EventKind::alloc && !private_segments_.empty()) e.pool = private_pool_of(index, address);
        e.capturing = e.pool == 0;
        return;
    }
    if (private_segments_.empty()) return;
    if (segment) {
        e.pool = private_pool_of(index, address);
    } else if (e.kind == EventKind::alloc) {
        e.pool = private_pool_of(index, address);
        state_.last_alloc_pool = e.pool;
    } else if (state_.last_alloc_pool != 0) {
        e.pool = state_.last_alloc_pool;
        facts_.ooms_placed_by_guess = ++state_.ooms_placed_by_guess;
    }
}

// The private pool (Event::pool) whose segment held the block allocated at
// `address` by history entry `index`; 0: the default pools.
std::uint32_t SnapshotSource::private_pool_of(std::size_t index, std::uint64_t address) const {
    auto it = private_segments_.upper_bound(address);
    if (it == private_segments_.begin()) return 0;
    --it;
    const PrivateSegment& s = it->second;
    return address < s.end && index >= s.since ? s.pool : 0;
}

std::string_view SnapshotSource::action_of(std::size_t index) const {
    const Value& entry = entries_[index];
    const Value* first = nullptr;
    std::size_t n = 0;
    if (entry.kind != Kind::dict || !doc_.items(entry, first, n))
        fail(index, std::string("expected an event (a dict), found a ") + Document::kind_name(entry.kind));
    if (n / 2 > kMaxEventKeys) fail(index, "a dict of " + std::to_string(n / 2) + " keys is not an allocator event");
    const Value* action = doc_.get(entry, "action");
    std::string_view text;
    if (!action || !doc_.as_text(*action, text)) fail(index, "the event has no 'action' string");
    return text;
}

std::uint64_t SnapshotSource::field(std::size_t index, std::string_view key, bool required, std::uint64_t fallback) const {
    const Value* v = doc_.get(entries_[index], key);
    if (!v || (!required && v->kind == Kind::none)) {
        if (required) fail(index, std::string(action_of(index)) + " without '" + std::string(key) + "'");
        return fallback;
    }
    std::uint64_t out = 0;
    if (!doc_.as_u64(*v, out))
        fail(index, std::string(action_of(index)) + ": '" + std::string(key) + "' is " +
                        (v->kind == Kind::big_integer ? std::string("an int beyond 64 bits")
                                                      : std::string("a ") + Document::kind_name(v->kind)) +
                        ", not a non-negative integer");
    return out;
}

// PyTorch writes int64(stream); a missing or None stream is the default one.
std::uint64_t SnapshotSource::stream_of(std::size_t index) const {
    const Value* v = doc_.get(entries_[index], "stream");
    std::int64_t s = 0;
    if (!v || v->kind == Kind::none) return 0;
    if (doc_.as_i64(*v, s)) return static_cast<std::uint64_t>(s);
    return field(index, "stream", true);
}

SnapshotSource::Segment* SnapshotSource::segment_holding(std::uint64_t address) {
    auto it = state_.segments.upper_bound(address);
    if (it == state_.segments.begin()) return nullptr;
    --it;
    return address - it->first < it->second.size ? &it->second : nullptr;
}

void SnapshotSource::read_entry() {
    if (call_due()) {
        apply_calls_due(false);
        return;  // the events before the entry, then the entry
    }
    const std::size_t index = index_++;
    const std::string_view action = action_of(index);
    const std::uint64_t line = index + 1;
    const bool counted = action == "alloc" || action == "free_requested" || action == "free_completed" || action == "oom" ||
                         action == "segment_alloc" || action == "segment_map";
    if (counted) ++state_.counted;
    if (action != "segment_free" && action != "segment_unmap") state_.pool_release_pending = false;
    if (action == "alloc") on_alloc(index);
    else if (action == "free_completed") on_free(index);
    else if (action == "free_requested") {
        ++state_.free_requested;
        state_.last_free_requested_address = field(index, "addr", true);
        state_.free_pending.insert(state_.last_free_requested_address);
        state_.last_free_requested = index;
    }
    else if (action == "segment_alloc") {
        const Event e = segment_event(index, EventKind::segment_alloc);
        // A private pool's segment is not the default pools' cache, which a
        // release of everything empties (on_release_run).
        Event request{EventKind::alloc, 0, 0, e.stream, kNoTag, line};
        route(index, e.id, request, true);
        if (request.pool != 0 && facts_.calls_recorded) state_.pool_segments[e.id] = request.pool;
        if (request.pool == 0) {
            auto [it, added] = state_.segments.emplace(e.id, Segment{e.size, 0});
            if (added) ++state_.free_segments;
        }
        queue_.push_back(e);
    } else if (action == "segment_map") queue_.push_back(segment_event(index, EventKind::segment_map));
    else if (action == "segment_free" || action == "segment_unmap") {
        index_ = index;
        on_release_run();
    } else if (action == "oom") {
        const std::uint64_t size = field(index, "size", true);
        if (size == 0) fail(index, "oom of 0 bytes");
        Event e{EventKind::oom, 0, size, stream_of(index), kNoTag, line};
        route(index, 0, e);
        queue_.push_back(e);
    } else if (action == "snapshot") ++state_.markers;
    else ++state_.unknown_actions;
}

void SnapshotSource::on_alloc(std::size_t index) {
    const std::uint64_t address = field(index, "addr", true);
    const std::uint64_t size = field(index, "size", true);
    if (size == 0) fail(index, "alloc of 0 bytes");
    if (state_.live.count(address))
        fail(index, "alloc at an address that is already live (a corrupt history)");
    std::uint64_t id = state_.next_id;
    if (!state_.free_ids.empty()) {
        id = state_.free_ids.top();
        state_.free_ids.pop();
    } else {
        ++state_.next_id;
    }
    LiveBlock block{id, size, 0, false};
    if (Segment* s = segment_holding(address)) {
        if (s->live++ == 0) --state_.free_segments;
        block.in_segment = true;
        block.segment = address;
    }
    state_.live.emplace(address, block);
    Event e{EventKind::alloc, id, size, stream_of(index), kNoTag, index + 1};
    route(index, address, e);
    queue_.push_back(e);
}

void SnapshotSource::on_free(std::size_t index) {
    const std::uint64_t address = field(index, "addr", true);
    const auto it = state_.live.find(address);
    if (it == state_.live.end()) {
        // Allocated before the history began, or dropped by its ring buffer.
        ++state_.unknown_frees;
        return;
    }
    const LiveBlock block = it->second;
    state_.live.erase(it);
    // PyTorch's free() writes free_completed right after free_requested when
    // it caches the block at once; anything in between means the free waited
    // for the block's other streams.
    const bool requested = state_.free_pending.erase(address) != 0;
    const bool deferred =
        requested && !(state_.last_free_requested + 1 == index && state_.last_free_requested_address == address);
    if (block.in_segment)
        if (Segment* s = segment_holding(block.segment); s && --s->live == 0) ++state_.free_segments;
    state_.free_ids.push(block.id);
    Event e{EventKind::free, block.id, block.size, 0, kNoTag, index + 1};
    e.deferred = deferred;
    queue_.push_back(e);
}

Event SnapshotSource::segment_event(std::size_t index, EventKind kind) {
    const std::uint64_t address = field(index, "addr", true);
    const std::uint64_t size = field(index, "size", true);
    if (size == 0) fail(index, std::string(action_of(index)) + " of 0 bytes");
    return Event{kind, address, size, stream_of(index), kNoTag, index + 1};
}

// A run of segment_free / segment_unmap entries: an empty_cache of the
// program, or the allocator's own release inside a request (see the header).
void SnapshotSource::on_release_run() {
    std::vector<Event> run;
    bool whole_segments = false;
    // release_cached_blocks frees the default large pool's segments, then the
    // small pool's (2 MiB each), then those of the private pools whose graphs
    // are gone, each pool's small ones before its large ones (>= 10 MiB): a
    // large segment after a small one is a private pool's.
    bool small_freed = false, private_freed = false;
    const bool pools_own = state_.pool_release_pending;  // a MemPool's emptyCache: not the program's empty_cache
    state_.pool_release_pending = false;
    while (index_ < count_ && (run.empty() || !call_due())) {
        const std::string_view action = action_of(index_);
        const bool unmap = action == "segment_unmap";
        if (!unmap && action != "segment_free") break;
        if (pools_own && !unmap) {
            // The pool's emptyCache frees its segments only; a release right after it is another.
            const auto own = state_.pool_segments.find(field(index_, "addr", true));
            if (own == state_.pool_segments.end() || own->second != state_.released_pool) break;
            state_.pool_segments.erase(own);
        }
        ++state_.counted;
        const Event e = segment_event(index_++, unmap ? EventKind::segment_unmap : EventKind::segment_free);
        if (!unmap) {
            whole_segments = true;
            if (e.size == 2 * kMiB) small_freed = true;
            else if (small_freed && e.size >= 10 * kMiB) private_freed = true;
            if (auto it = state_.segments.find(e.id); it != state_.segments.end()) {
                if (it->second.live == 0) --state_.free_segments;
                state_.segments.erase(it);
            }
        }
        run.push_back(e);
    }
    if (private_freed && !pools_own && !facts_.calls_recorded) facts_.unexplained_pool_releases = ++state_.private_pool_releases;
    const bool before_oom = index_ < count_ && action_of(index_) == "oom";
    const bool partial = whole_segments && state_.free_segments > 0;
    if (!before_oom && !partial && !pools_own) {
        queue_.push_back(Event{EventKind::empty_cache, 0, 0, 0, kNoTag, run.front().line});
        const std::string_view next = index_ < count_ ? action_of(index_) : std::string_view();
        if (next == "segment_alloc" || next == "segment_map") ++state_.ambiguous_empty_caches;
    }
    queue_.insert(queue_.end(), run.begin(), run.end());
}

std::vector<std::string> SnapshotSource::notes() const {
    std::vector<std::string> notes;
    if (count_ == 0)
        notes.push_back(name_ + ": no allocation history for device " + std::to_string(device_) +
                        " (record it with torch.cuda.memory._record_memory_history before the allocations)");
    if (state_.unknown_actions)
        notes.push_back(name_ + ": " + std::to_string(state_.unknown_actions) + " events of actions this reader does not know were skipped");
    if (state_.private_pool_releases)
        notes.push_back(name_ + ": " + std::to_string(state_.private_pool_releases) +
                        " release(s) gave a CUDA graph's private pool back (a large segment freed after small ones): the "
                        "snapshot no longer lists its segments, so the requests it served replay as the default pools' "
                        "and the counters may differ");
    // The releases that look like the program's empty_cache() are told in
    // the light of the replay (release_note): it knows which it read as a
    // request's own.
    return notes;
}

}  // namespace

std::string release_note(const std::string& input, std::uint64_t read_as_own) {
    if (read_as_own == 0) return {};
    // What it changes in the result, in one line; why is in gpumem(1) and tests/TRACE_FORMAT.md.
    return input + ": torch-caching's retries may be up to " + std::to_string(read_as_own) +
           " too many (it read that many releases as PyTorch's own before a retried cudaMalloc; a program's empty_cache() "
           "looks alike in a snapshot)";
}

std::unique_ptr<EventSource> open_snapshot(const std::string& name, std::string bytes, std::optional<std::uint32_t> device,
                                           const RecordedCalls* calls) {
    pickle::Document doc = pickle::unpickle(bytes, name);
    bytes = std::string();  // the document holds what it needs
    return std::make_unique<SnapshotSource>(name, std::move(doc), device, calls);
}

}  // namespace gpumem::reuse_sim
