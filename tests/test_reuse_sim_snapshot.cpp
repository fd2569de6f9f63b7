// reuse-sim and PyTorch memory snapshots: the restricted unpickler, the
// snapshot reader (events, devices, allocator settings, empty_cache), the
// trace format's sync, empty_cache, oom and segment events with --save-trace
// round trips, each strategy's empty_cache, and sizes that would overflow.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>

#include "base/errors.hpp"
#include "reuse_sim/pickle_reader.hpp"
#include "reuse_sim/snapshot_reader.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/workloads.hpp"
#include "reuse_sim_helpers.hpp"
#include "tests_dir.hpp"

namespace pk = gpumem::reuse_sim::pickle;

namespace {

std::string snapshots_dir() {
    return tests_dir() + "/fixtures/snapshots/";
}

// A text of the events, one per line: "alloc 0 3145728 0".
std::string describe(const std::vector<rs::Event>& events) {
    static const char* names[] = {"alloc",        "free",          "sync",         "empty_cache",  "oom",          "settings",
                                  "pool_release", "segment_alloc", "segment_free", "segment_map", "segment_unmap"};
    std::string out;
    for (const rs::Event& e : events)
        out += std::string(names[static_cast<int>(e.kind)]) + " " + std::to_string(e.id) + " " + std::to_string(e.size) + " " +
               std::to_string(e.stream) + "\n";
    return out;
}

}  // namespace

TEST_CASE("unpickler: integers of every encoding, strings, memo, containers") {
    // {'a': [1, -2, 300, 70000, -5000000000, 2**64-1, 2**70, 1.5, None, True, b'x', ('a',)]}: pickle.dumps(..., protocol=3)
    // (protocol 2 pickles bytes through codecs.encode, a GLOBAL).
    const std::string p = std::string("\x80\x03\x7d\x71\x00\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71\x02\x28\x4b\x01\x4a\xfe\xff\xff\xff\x4d\x2c\x01\x4a\x70\x11\x01\x00\x8a\x05\x00\x0e\xfa\xd5\xfe\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x47\x3f\xf8\x00\x00\x00\x00\x00\x00\x4e\x88\x43\x01\x78\x71\x03\x68\x01\x85\x71\x04\x65\x73\x2e", 85);
    const pk::Document d = pk::unpickle(p, "t");
    const pk::Value* a = d.get(d.root(), "a");
    REQUIRE(a);
    const pk::Value* items = nullptr;
    std::size_t n = 0;
    REQUIRE(d.items(*a, items, n));
    REQUIRE(n == 12);
    std::int64_t i = 0;
    std::uint64_t u = 0;
    CHECK((d.as_i64(items[0], i) && i == 1));
    CHECK((d.as_i64(items[1], i) && i == -2));
    CHECK((d.as_u64(items[2], u) && u == 300));
    CHECK((d.as_u64(items[3], u) && u == 70000));
    CHECK((d.as_i64(items[4], i) && i == -5000000000LL));
    CHECK(!d.as_u64(items[4], u));
    CHECK((d.as_u64(items[5], u) && u == ~0ULL));
    CHECK(items[6].kind == pk::Kind::big_integer);
    double x = 0;
    CHECK((d.as_double(items[7], x) && x == 1.5));
    CHECK(items[8].kind == pk::Kind::none);
    bool b = false;
    CHECK((d.as_bool(items[9], b) && b));
    CHECK(items[10].kind == pk::Kind::bytes);
    const pk::Value* t = nullptr;
    std::size_t tn = 0;
    REQUIRE(d.items(items[11], t, tn));  // BINGET 1 gave the memoized 'a'
    std::string_view text;
    CHECK((tn == 1 && d.as_text(t[0], text) && text == "a"));
}

TEST_CASE("unpickler: code is refused, malformed input names the offset") {
    const std::map<std::string, std::string> cases = {
        {std::string("\x80\x02\x63\x6f\x73\x0a\x73\x79\x73\x74\x65\x6d\x0a\x28\x58\x04\x00\x00\x00\x65\x63\x68\x6f\x74\x52\x2e", 26), "offset 2: refusing opcode GLOBAL (0x63)"},
        {std::string("\x80\x04\x8c\x02\x6f\x73\x8c\x06\x73\x79\x73\x74\x65\x6d\x93\x2e", 16), "refusing opcode STACK_GLOBAL"},
        {std::string("\x80\x02\x4e\x29\x52\x2e", 6), "offset 4: refusing opcode REDUCE"},
        {std::string("\x80\x02\x7d\x7d\x62\x2e", 6), "refusing opcode BUILD"},
        {std::string("\x80\x02\x4e\x29\x81\x2e", 6), "refusing opcode NEWOBJ"},
        {std::string("\x80\x02\x50\x30\x0a\x2e", 6), "refusing opcode PERSID"},
        {std::string("\x80\x06\x7d\x2e", 4), "offset 0: unsupported pickle protocol 6"},
        {std::string("\x80\x02\x6a\xff\xff\xff\xff\x2e", 8), "memo index 4294967295 was never stored"},
        {std::string("\x80\x02\x58\xff\xff\xff\x7f\x61\x62\x63\x2e", 11), "the file is cut short: its BINUNICODE of 2147483647 bytes runs past the end (4 bytes left); copy or record the snapshot again"},
        {std::string("\x80\x04\x95\x00\x00\x00\x00\x01\x00\x00\x00\x7d\x2e", 13), "the file is cut short: its FRAME of 4294967296 bytes runs past the end (2 bytes left); copy or record"},
        {std::string("\x80\x02\x7d", 3), "the file is cut short: the pickle ends without its STOP opcode"},
        {std::string("\x80\x02\x2e", 3), "the stack is empty"},
        {std::string("\x80\x02\xff\x2e", 4), "unknown opcode 0xff"},
        {std::string("\x80\x02\x28\x64\x70\x30\x0a\x2e", 8), "protocol 0 opcode 'p'"},
        {std::string("\x80\x02\x4b\x01\x75\x2e", 6), "no MARK"},
        {std::string("\x80\x02\x5d\x4b\x01\x4b\x02\x73\x2e", 9), "SETITEM on a list"},
        {"\x80\x02" + std::string(2000, '(') + ".", "nested deeper than 1000 MARKs"},
    };
    for (const auto& [input, expected] : cases) {
        const std::string in = input, want = expected;
        CAPTURE(want);
        const std::string msg = usage_error([&] { pk::unpickle(in, "snap.pickle"); });
        CAPTURE(msg);
        CHECK(msg.rfind("snap.pickle: offset ", 0) == 0);
        CHECK(contains(msg, want));
    }
    // A far memo index costs one entry, not a vector that long (the C unpickler's 12 GB).
    const pk::Document far = pk::unpickle(std::string("\x80\x02\x5d\x72\x00\x00\x00\x30\x6a\x00\x00\x00\x30\x2e", 14), "t");
    CHECK(far.root().kind == pk::Kind::list);
}

TEST_CASE("snapshot: the history becomes events, in every protocol") {
    const std::string expected =
        "segment_alloc 139637976727552 20971520 0\nalloc 0 3145728 0\nalloc 1 4194304 0\nfree 0 3145728 0\nfree 1 4194304 0\n"
        "empty_cache 0 0 0\nsegment_free 139637976727552 20971520 0\nsegment_alloc 139638010281984 2097152 94000000000\n"
        "alloc 0 512 94000000000\nsegment_alloc 139637976727552 41943040 0\nalloc 1 34603008 0\nfree 1 34603008 0\n"
        "segment_free 139637976727552 41943040 0\noom 0 104857600 0\nfree 0 512 0\n";
    for (const char* name : {"small_p2.pickle", "small_p4.pickle", "small_p5.pickle"}) {
        CAPTURE(name);
        auto src = rs::open_trace(snapshots_dir() + name, rs::TraceFormat::automatic);
        CHECK(src->format() == "snapshot");
        CHECK(contains(src->description(), "(PyTorch snapshot, device 0)"));
        CHECK(describe(read_all(*src)) == expected);
        CHECK(src->skipped() == 1);  // the free of a block from before the recording
        REQUIRE(src->allocator_settings());
        const rs::RecordedAllocatorSettings& s = *src->allocator_settings();
        CHECK(s.max_split_size == 64 * MiB);
        CHECK((*s.roundup_power2_divisions)[0] == 4);
        CHECK((*s.roundup_power2_divisions)[1] == 0);
        CHECK(s.expandable_segments == false);
        CHECK(contains(*s.alloc_conf, "max_split_size_mb:64"));
        CHECK(src->rewind());
        CHECK(describe(read_all(*src)) == expected);
    }
    // The oom event's location is its offset in the pickle and its place in the history.
    auto src = rs::open_trace(snapshots_dir() + "small_p4.pickle", rs::TraceFormat::snapshot);
    const auto events = read_all(*src);
    CHECK(contains(src->location(events[13].line), "small_p4.pickle: offset "));
    CHECK(contains(src->location(events[13].line), "(device_traces[0][16])"));
}

TEST_CASE("snapshot: a partial release is the allocator's own; devices; the list form of the settings") {
    auto partial = rs::open_trace(snapshots_dir() + "partial_release.pickle", rs::TraceFormat::automatic);
    CHECK(!contains(describe(read_all(*partial)), "empty_cache"));
    CHECK(partial->allocator_settings() == nullptr);

    const std::string two = snapshots_dir() + "two_devices.pickle";
    CHECK(contains(usage_error([&] { rs::open_trace(two, rs::TraceFormat::automatic); }), "devices 0, 1 all have events: choose one with --trace-device"));
    CHECK(contains(usage_error([&] { rs::open_trace(two, rs::TraceFormat::automatic, false, 2); }), "the snapshot has 2 device trace(s)"));
    auto one = rs::open_trace(two, rs::TraceFormat::automatic, false, 1);
    CHECK(describe(read_all(*one)) == "alloc 0 8192 0\n");
    const rs::RecordedAllocatorSettings& s = *one->allocator_settings();
    CHECK(s.max_split_size == rs::RecordedAllocatorSettings::kUnlimitedSplit);
    CHECK((*s.roundup_power2_divisions)[15] == 2);
    CHECK(s.garbage_collection_threshold == 0.5);
    CHECK(s.expandable_segments == true);

    auto none = rs::open_trace(snapshots_dir() + "no_history.pickle", rs::TraceFormat::automatic);
    CHECK(read_all(*none).empty());
    REQUIRE(none->notes().size() == 1);
    CHECK(contains(none->notes()[0], "no allocation history"));
}

TEST_CASE("snapshot: a free that waited for another stream (record_stream) completes where PyTorch completed it") {
    // record_stream_retry.pickle (make_snapshots.py): x's free_completed comes
    // after y's request, right before the release z makes under 40 MiB.
    auto src = rs::open_trace(snapshots_dir() + "record_stream_retry.pickle", rs::TraceFormat::automatic);
    std::vector<rs::Event> events = read_all(*src);
    CHECK(describe(events) ==
          "segment_alloc 139637976727552 20971520 0\nalloc 0 20971520 0\nsegment_alloc 139638010281984 20971520 0\n"
          "alloc 1 20971520 0\nfree 0 20971520 0\nempty_cache 0 0 0\nsegment_free 139637976727552 20971520 0\n"
          "segment_alloc 139638043836416 20971520 0\nalloc 0 20971520 0\nfree 1 20971520 0\nfree 0 20971520 0\n");
    std::vector<bool> deferred;
    for (const rs::Event& e : events)
        if (e.kind == rs::EventKind::free) deferred.push_back(e.deferred);
    CHECK(deferred == std::vector<bool>{true, false, false});  // right after its free_requested: at once

    // PyTorch: z finds nothing cached (x still waits); a third segment
    // exceeds the cap; release_cached_blocks completes x and frees its
    // segment; the retry takes a new one: 3 allocations, 1 free, 1 retry.
    const Outcome retry = run_strategy("torch-caching", events, {}, 40 * MiB);
    CHECK(retry.result.upstream_allocs == 3);
    CHECK(retry.result.upstream_frees == 1);
    CHECK(retry.result.peak_reserved == 40 * MiB);
    CHECK(retry.result.retries == 1);
    CHECK(retry.result.ooms == 0);
    CHECK(retry.detail("empty_caches_read_as_own_release") == 1);
    // A late free that the very next request completed reads as an
    // immediate one (free_completed right after free_requested). Without
    // max_split_size and garbage collection the last one before a request is
    // held alike, which ends the same for an immediate one.
    std::vector<rs::Event> adjacent = events;
    for (rs::Event& e : adjacent) e.deferred = false;
    CHECK(run_strategy("torch-caching", adjacent, {}, 40 * MiB).result.retries == 1);
    // With max_split_size (64 MiB: no block here reaches it) it is cached at
    // once, as before the flag: x serves z and the release reads as the
    // program's: no retry. The flag still holds a late free.
    rs::StrategyOptions split;
    split.torch.max_split_size = 64 * MiB;
    CHECK(run_strategy("torch-caching", adjacent, split, 40 * MiB).result.retries == 0);
    CHECK(run_strategy("torch-caching", events, split, 40 * MiB).result.retries == 1);

    // record_stream_cached.pickle: the same free completing at z's start
    // (process_events), and z served by x's cached block.
    auto cached_src = rs::open_trace(snapshots_dir() + "record_stream_cached.pickle", rs::TraceFormat::automatic);
    const Outcome cached = run_strategy("torch-caching", read_all(*cached_src), {}, 40 * MiB);
    CHECK(cached.result.upstream_allocs == 2);
    CHECK(cached.result.upstream_frees == 0);
    CHECK(cached.result.retries == 0);
    CHECK(cached.result.hits == 1);
}

TEST_CASE("snapshot: a CUDA graph's private pool, from the segments it still held, keeps its blocks to itself") {
    // graph_pool.pickle (make_snapshots.py): segment B is pool (1, 0)'s at the end.
    auto src = rs::open_trace(snapshots_dir() + "graph_pool.pickle", rs::TraceFormat::automatic);
    const std::vector<rs::Event> events = read_all(*src);
    std::vector<std::uint32_t> pools;
    for (const rs::Event& e : events)
        if (e.kind == rs::EventKind::alloc) pools.push_back(e.pool);
    CHECK(pools == std::vector<std::uint32_t>{0, 1, 0, 0});
    // The release of A alone is still the program's empty_cache: B is not the default pools' to release.
    CHECK(contains(describe(events), "empty_cache"));
    // PyTorch: the captured request takes a segment of the graph's pool
    // though a default block is cached; the eager one after it reuses the
    // default block; empty_cache frees A only; the last takes a new segment.
    const Outcome o = run_strategy("torch-caching", events);
    CHECK(o.result.upstream_allocs == 3);
    CHECK(o.result.upstream_frees == 1);
    CHECK(o.result.peak_reserved == 4 * MiB);
    CHECK(o.result.retries == 0);
    // Read without the pool (as before), the captured request reused the cached block.
    std::vector<rs::Event> flat = events;
    for (rs::Event& e : flat) e.pool = 0;
    CHECK(run_strategy("torch-caching", flat).result.upstream_allocs == 2);
    CHECK(src->notes().empty());

    // A pool released before the snapshot is not in its segments: said, not guessed.
    auto released = rs::open_trace(snapshots_dir() + "graph_pool_released.pickle", rs::TraceFormat::automatic);
    read_all(*released);
    REQUIRE(released->notes().size() == 1);
    CHECK(contains(released->notes()[0], "graph_pool_released.pickle: 1 release(s) gave a CUDA graph's private pool back"));
}

TEST_CASE("snapshot: the release warning counts the releases read as PyTorch's own, the only ones that may add a retry") {
    CHECK(rs::release_note("run.pickle", 0).empty());
    const std::string note = rs::release_note("run.pickle", 2);
    CHECK(note.rfind("run.pickle: torch-caching's retries may be up to 2 too many", 0) == 0);
}

TEST_CASE("gpumem CSV: sync, empty_cache, oom and segment lines, and the old '# sync' comments") {
    TempFile f("action,id,size,stream,tag\nalloc,1,4096,0,a\n# sync\nsync,,,,\nempty_cache,,,,\noom,,8192,3,b\n"
               "segment_alloc,77,2097152,0,\nsegment_free,,2097152,,\nsegment_map,,4096,1,\nsegment_unmap,5,4096,,\nfree,1,,,\n");
    auto src = rs::open_trace(f.path, rs::TraceFormat::automatic);
    CHECK(describe(read_all(*src)) ==
          "alloc 1 4096 0\nsync 0 0 0\nsync 0 0 0\nempty_cache 0 0 0\noom 0 8192 3\nsegment_alloc 77 2097152 0\n"
          "segment_free 0 2097152 0\nsegment_map 0 4096 1\nsegment_unmap 5 4096 0\nfree 1 0 0\n");
    const std::map<std::string, std::string> bad = {
        {"sync,1,,,", ":2: sync takes no id"},
        {"empty_cache,,5,,", ":2: empty_cache takes no size"},
        {"sync,,,,t", ":2: sync takes no tag"},
        {"oom,,0,0,", ":2: oom needs a size of at least 1 byte"},
        {"oom,3,100,0,", ":2: oom takes no id"},
        {"segment_alloc,,,0,", ":2: segment_alloc needs a size"},
        {"segment_free,1,10,0,t", ":2: segment_free takes no tag"},
        {"emptycache,,,,", ":2: unknown action 'emptycache' (expected alloc, free, sync, empty_cache, oom, settings, pool_release, segment_alloc"},
    };
    for (const auto& [line, expected] : bad) {
        const std::string text = "action,id,size,stream,tag\n" + line + "\n", want = expected;
        CAPTURE(text);
        TempFile t(text);
        CHECK(contains(usage_error([&] { read_all(*rs::open_trace(t.path, rs::TraceFormat::gpumem)); }), want));
    }
}

TEST_CASE("--save-trace: every event written is read back the same, and replays alike") {
    for (const std::string& input : {snapshots_dir() + "small_p4.pickle", std::string("workload")}) {
        CAPTURE(input);
        std::unique_ptr<rs::EventSource> src;
        if (input == "workload") {
            rs::WorkloadOptions w;
            w.name = "dynamic";
            w.steps = 40;
            w.streams = 2;
            src = rs::make_workload(w);
        } else {
            src = rs::open_trace(input, rs::TraceFormat::automatic);
        }
        const auto events = read_all(*src);
        TempFile saved("");
        {
            rs::GpumemTraceWriter w(saved.path);
            for (const rs::Event& e : events) w.write(e, src->tag_name(e.tag));
            w.close();
        }
        auto back = rs::open_trace(saved.path, rs::TraceFormat::automatic);
        const auto again = read_all(*back);
        // Frees name their id alone in the CSV, syncs nothing (they are device-wide); everything else is kept.
        auto without_free_sizes = [](std::vector<rs::Event> v) {
            for (rs::Event& e : v)
                if (e.kind == rs::EventKind::free || e.kind == rs::EventKind::sync) e.size = e.stream = 0;
            return v;
        };
        CHECK(describe(without_free_sizes(events)) == describe(without_free_sizes(again)));
        for (const rs::StrategySpec& spec : {rs::kStrategies.parse("async-pool"), rs::kStrategies.parse("torch-caching")}) {
            const std::string name(rs::kStrategies.name_of(spec));
            CAPTURE(name);
            const Outcome a = run_strategy(name, events), b = run_strategy(name, again);
            CHECK(a.result.upstream_allocs == b.result.upstream_allocs);
            CHECK(a.result.upstream_frees == b.result.upstream_frees);
            CHECK(a.result.peak_reserved == b.result.peak_reserved);
            CHECK(a.summary.syncs == b.summary.syncs);
            CHECK(a.summary.empty_caches == b.summary.empty_caches);
            CHECK(a.summary.recorded.device_allocs == b.summary.recorded.device_allocs);
        }
    }
}

TEST_CASE("empty_cache: each strategy gives back what it naturally can") {
    auto E = [] { return rs::Event{rs::EventKind::empty_cache, 0, 0, 0, rs::kNoTag, 0}; };
    const std::vector<rs::Event> events = {A(1, 4 * MiB), A(2, 512), F(1), F(2), E(), A(3, 4 * MiB)};
    const std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> expected = {
        {"naive", {3, 2}},          // nothing cached
        {"grow-only", {3, 2}},      // the idle buffers go back, the next request allocates again
        {"shape-persistent", {3, 2}},
        {"torch-caching", {3, 2}},  // release_cached_blocks: both unsplit segments
        {"pool", {2, 0}},           // RMM's pool gives nothing back before its release
    };
    for (const auto& [strategy, counts] : expected) {
        const std::string name = strategy;
        CAPTURE(name);
        const Outcome o = run_strategy(name, events);
        CHECK(o.result.upstream_allocs == counts.first);
        CHECK(o.result.upstream_frees == counts.second);
        CHECK(o.summary.empty_caches == 1);
    }
    // async-pool: synchronize and trim to nothing, whatever the release threshold.
    rs::StrategyOptions keep;
    keep.release_threshold = 1 * GiB;
    const Outcome pool = run_strategy("async-pool", {A(1, 4 * MiB), F(1), E(), A(2, 4 * MiB)}, keep);
    CHECK(pool.result.counters.pool_releases == 1);
    CHECK(pool.result.counters.synchronizations == 1);
    // ring: the idle buffers.
    rs::StrategyOptions ring;
    ring.ring_size = 4 * MiB;
    const Outcome r = run_strategy("ring", {A(1, MiB), A(2, MiB), F(1), E(), A(3, MiB), F(2), F(3)}, ring);
    CHECK(r.result.upstream_frees == 1);
}

TEST_CASE("oom events: each strategy is asked; what it serves is held until the program's next request") {
    auto E = [] { return rs::Event{rs::EventKind::empty_cache, 0, 0, 0, rs::kNoTag, 0}; };
    auto O = [](std::uint64_t size) { return rs::Event{rs::EventKind::oom, 0, size, 0, rs::kNoTag, 0}; };
    const rs::Event refused{rs::EventKind::oom, 0, 100 * MiB, 0, rs::kNoTag, 0};
    const Outcome fits = run_strategy("naive", {A(1, MiB), refused, F(1)});
    CHECK(fits.summary.oom_events == 1);
    CHECK(fits.result.requests == 2);
    CHECK(fits.result.ooms == 0);
    CHECK(fits.result.granted_oom_events == 1);
    CHECK(fits.result.upstream_frees == 2);  // the granted one at the end of the input
    const Outcome capped = run_strategy("torch-caching", {A(1, MiB), refused, F(1)}, {}, 64 * MiB);
    CHECK(capped.result.ooms == 1);
    CHECK(capped.result.granted_oom_events == 0);
    CHECK(capped.detail("num_ooms") == 1);

    SUBCASE("freed before the next request: a cap that holds one of them holds both in turn") {
        // Never freed, the 60 MiB alloc would not fit beside it under 100 MiB.
        const Outcome turn = run_strategy("naive", {A(1, 30 * MiB), O(60 * MiB), F(1), A(2, 60 * MiB), F(2)}, {}, 100 * MiB);
        CHECK(turn.result.ooms == 0);
        CHECK(turn.result.granted_oom_events == 1);
        CHECK(turn.result.peak_reserved == 90 * MiB);  // 1 and the granted one, never the granted one and 2
        const Outcome next_oom = run_strategy("naive", {O(60 * MiB), O(60 * MiB)}, {}, 100 * MiB);
        CHECK(next_oom.result.ooms == 0);
        CHECK(next_oom.result.granted_oom_events == 2);
    }
    SUBCASE("held through the unwinding: the failed step's frees and the handler's empty_cache") {
        // torch-caching: the granted 40 MiB is a segment of its own. The
        // handler's empty_cache, with the failed step's frees on both sides
        // (skip_batch_loose's order), cannot release it while it is held, and
        // the next request of its size finds it cached. Freed at once, the
        // empty_cache would have given it back and 3 taken a new segment.
        const Outcome held =
            run_strategy("torch-caching", {A(1, 30 * MiB), A(2, 10 * MiB), O(40 * MiB), F(1), E(), F(2), A(3, 40 * MiB), F(3)});
        CHECK(held.result.granted_oom_events == 1);
        CHECK(held.result.counters.device_allocs == 3);
        CHECK(held.result.counters.device_frees == 1);  // 1's segment
        CHECK(held.result.hits == 1);
        // A release right before the next request is read with that request
        // (the program's empty_cache, or PyTorch's own inside it): the
        // unwinding was over, and the granted block goes with the others.
        const Outcome before_request = run_strategy("torch-caching", {A(1, 30 * MiB), O(40 * MiB), F(1), E(), A(3, 40 * MiB), F(3)});
        CHECK(before_request.result.counters.device_allocs == 3);
        CHECK(before_request.result.counters.device_frees == 2);
    }
    SUBCASE("the lanes that refuse it are not touched, in one replay with lanes that grant it") {
        VectorSource source({A(1, 30 * MiB), O(60 * MiB), F(1), A(2, 60 * MiB), F(2)});
        rs::Lane small("naive", std::make_unique<rs::SimulatedUpstream>(64 * MiB, nullptr));
        rs::Lane large("naive", std::make_unique<rs::SimulatedUpstream>(rs::kUnlimited, nullptr));
        for (rs::Lane* lane : {&small, &large}) lane->strategy = rs::make_strategy(rs::kStrategies.parse("naive"), {}, *lane->upstream);
        rs::Replay replay({&small, &large}, {});
        replay.run(source);
        CHECK(rs::summarize(small).ooms == 1);
        CHECK(rs::summarize(small).granted_oom_events == 0);
        CHECK(rs::summarize(small).upstream_frees == 2);
        CHECK(rs::summarize(large).granted_oom_events == 1);
        CHECK(rs::summarize(large).upstream_frees == 3);
    }
}

TEST_CASE("sizes that would overflow are usage errors naming the event, in every strategy") {
    for (const gpumem::Named<rs::StrategySpec>& row : rs::kStrategies) {
        const std::string name(row.name);
        CAPTURE(name);
        rs::StrategyOptions o;
        o.ring_size = 4 * MiB;
        const std::string huge =
            usage_error([&] { run_strategy(name, {A(1, 4096), A(2, ~0ULL)}, o, 80 * GiB); });
        CHECK(contains(huge, "test:2: alloc of 18446744073709551615 bytes: larger than 4 EiB"));
        const std::string oom = usage_error([&] { run_strategy(name, {rs::Event{rs::EventKind::oom, 0, ~0ULL - 5, 0, rs::kNoTag, 0}}, o); });
        CHECK(contains(oom, "test:1: oom of 18446744073709551610 bytes"));
        // Four requests of 4 EiB are 2^64 bytes live.
        const std::string sum = usage_error(
            [&] { run_strategy(name, {A(1, rs::kMaxRequestBytes), A(2, rs::kMaxRequestBytes), A(3, rs::kMaxRequestBytes), A(4, rs::kMaxRequestBytes)}, o); });
        CHECK(contains(sum, "test:4: alloc of 4611686018427387904 bytes: the live allocations would exceed 2^64 bytes"));
    }
    // The simulated device's addresses are never reused: a trace allocating
    // more than the address space in all is refused, not wrapped around.
    std::vector<rs::Event> many;
    for (std::uint64_t i = 0; i < 5; ++i) {
        many.push_back(A(1, rs::kMaxRequestBytes));
        many.push_back(F(1));
    }
    CHECK(contains(usage_error([&] { run_strategy("naive", many); }), "naive: the simulated device's 64-bit address space is used up"));
    // An option near 2^64: RMM's pool limit no longer wraps to 0.
    rs::StrategyOptions wide;
    wide.pool_maximum = ~0ULL - 10;
    CHECK(contains(usage_error([&] { run_strategy("pool", {A(1, 4096)}, wide); }), "test:1: alloc of 4096 bytes: pool: rounding"));
}
