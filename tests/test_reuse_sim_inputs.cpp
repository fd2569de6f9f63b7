// reuse-sim inputs: the trace parsers (valid and malformed lines), the replay's
// checks, workload determinism, the cost table and the small utilities.
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <unordered_map>

#include "base/errors.hpp"
#include "reuse_sim/flat_map.hpp"
#include "reuse_sim_helpers.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/workloads.hpp"

TEST_CASE("gpumem CSV: comments, header, alloc and free with tags and streams") {
    TempFile f("# gpumem-trace v1\n\naction,id,size,stream,tag\n# a comment\nalloc,1,4096,0,conv1.out\r\n"
               "alloc,2,1048576,3,\nfree,1,,,\nfree,2,1048576,,\nalloc,1,10,0,conv1.out");
    auto src = rs::open_trace(f.path, rs::TraceFormat::automatic);
    const auto ev = read_all(*src);
    REQUIRE(ev.size() == 5);
    CHECK(ev[0].kind == rs::EventKind::alloc);
    CHECK(ev[0].id == 1);
    CHECK(ev[0].size == 4096);
    CHECK(ev[0].line == 5);
    CHECK(ev[1].stream == 3);
    CHECK(ev[1].tag == rs::kNoTag);
    CHECK(ev[2].kind == rs::EventKind::free);
    CHECK(ev[2].size == 0);
    CHECK(ev[3].size == 1048576);
    CHECK(ev[4].tag == ev[0].tag);  // the same text, the same tag
    CHECK(ev[4].tag != rs::kNoTag);
    CHECK(src->rewind());
    CHECK(read_all(*src).size() == 5);
}

TEST_CASE("gpumem CSV: malformed lines name the file and the line") {
    const std::map<std::string, std::string> cases = {
        {"action,id,size,stream,tag\nalloc,1,100,0,\nallocate,2,100,0,\n", ":3: unknown action"},
        {"action,id,size,stream,tag\nalloc,x,100,0,\n", ":2: id: expected an unsigned integer"},
        {"action,id,size,stream,tag\nalloc,1,,0,\n", ":2: alloc needs a size"},
        {"action,id,size,stream,tag\nalloc,1,0,0,\n", ":2: alloc needs a size"},
        {"action,id,size,stream,tag\nalloc,1,12k,0,\n", ":2: size: expected bytes"},
        {"action,id,size,stream,tag\nalloc,1,100,-1,\n", ":2: stream: expected an unsigned integer"},
        {"action,id,size,stream,tag\nalloc,1,100\n", ":2: expected 5 fields"},
        {"action,id,size,stream,tag\nalloc,1,100,0,a,b\n", ":2: expected 5 fields"},
        {"action,id,size,stream,tag\nalloc,1,99999999999999999999999,0,\n", ":2: size"},
        {"# only a comment\naction,id,size\nalloc,1,100,0,\n", ":2: expected the gpumem trace header"},
    };
    for (const auto& [text, expected] : cases) {
        const std::string input = text;  // clang 14 cannot capture a structured binding (CAPTURE is a lambda)
        CAPTURE(input);
        TempFile f(text);
        const std::string msg = usage_error([&] {
            auto src = rs::open_trace(f.path, rs::TraceFormat::gpumem);
            read_all(*src);
        });
        CHECK(contains(msg, f.path + expected));
    }
}

TEST_CASE("trace format detection by the header") {
    TempFile g("#c\naction,id,size,stream,tag\n");
    TempFile r("Thread,Time,Action,Pointer,Size,Stream\n");
    TempFile bad("time,what\n");
    TempFile empty("# nothing\n");
    CHECK(rs::detect_trace_format(g.path) == rs::TraceFormat::gpumem);
    CHECK(rs::detect_trace_format(r.path) == rs::TraceFormat::rmm);
    CHECK(contains(usage_error([&] { rs::detect_trace_format(bad.path); }), bad.path + ":1: unrecognised trace header"));
    CHECK(contains(usage_error([&] { rs::detect_trace_format(empty.path); }), "empty trace"));
    CHECK(contains(usage_error([&] { rs::open_trace("/nonexistent/trace.csv", rs::TraceFormat::automatic); }),
                   "/nonexistent/trace.csv: cannot open trace"));
}

TEST_CASE("RMM log CSV: hexadecimal pointers and streams; allocate failure lines are counted, not replayed") {
    TempFile f("Thread,Time,Action,Pointer,Size,Stream\n"
               "140231,13:25:42.123456,allocate,0x7f1200000000,256,0x0\n"
               "140231,13:25:42.123460,allocate failure,0x0,99999999999,0x0\n"
               "140232,13:25:42.123470,allocate,0x7f1200000100,1000,0x55d0c0ffee00\n"
               "140231,13:25:42.123480,free,0x7f1200000000,256,0x0\n");
    auto src = rs::open_trace(f.path, rs::TraceFormat::automatic);
    const auto ev = read_all(*src);
    REQUIRE(ev.size() == 3);
    CHECK(ev[0].id == 0x7f1200000000ULL);
    CHECK(ev[0].size == 256);
    CHECK(ev[1].stream == 0x55d0c0ffee00ULL);
    CHECK(ev[2].kind == rs::EventKind::free);
    CHECK(ev[2].line == 5);
    CHECK(src->skipped() == 1);
}

TEST_CASE("RMM log CSV: malformed lines") {
    const std::map<std::string, std::string> cases = {
        {"Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0xZZ,256,0x0\n", ":2: Pointer: expected a hexadecimal address"},
        {"Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10,abc,0x0\n", ":2: Size: expected bytes"},
        {"Thread,Time,Action,Pointer,Size,Stream\n1,t,reallocate,0x10,1,0x0\n", ":2: unknown action"},
        {"Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10,1\n", ":2: expected 6 fields"},
        {"Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10,1,stream0\n", ":2: Stream: expected a hexadecimal"},
    };
    for (const auto& [text, expected] : cases) {
        const std::string input = text;  // clang 14 cannot capture a structured binding (CAPTURE is a lambda)
        CAPTURE(input);
        TempFile f(text);
        const std::string msg = usage_error([&] {
            auto src = rs::open_trace(f.path, rs::TraceFormat::rmm);
            read_all(*src);
        });
        CHECK(contains(msg, f.path + expected));
    }
}

TEST_CASE("replay: inconsistent traces are usage errors with the location") {
    auto run = [](const std::string& text) {
        TempFile f(text);
        return usage_error([&] {
            auto src = rs::open_trace(f.path, rs::TraceFormat::gpumem);
            rs::Lane lane("naive", std::make_unique<rs::SimulatedUpstream>(rs::kUnlimited, nullptr));
            lane.strategy = rs::make_strategy(rs::kStrategies.parse("naive"), {}, *lane.upstream);
            rs::Replay replay({&lane}, {});
            replay.run(*src);
        });
    };
    CHECK(contains(run("action,id,size,stream,tag\nalloc,1,10,0,\nfree,2,,,\n"), ":3: free of id 2, which is not live"));
    CHECK(contains(run("action,id,size,stream,tag\nalloc,1,10,0,\nalloc,1,10,0,\n"), ":3: alloc of id 1, which is already live"));
    CHECK(contains(run("action,id,size,stream,tag\nalloc,1,10,0,\nfree,1,11,,\n"), ":3: free of id 1 with size 11"));
    CHECK(run("action,id,size,stream,tag\nalloc,1,10,0,\nfree,1,10,,\nalloc,1,10,0,\nfree,1,,,\n").empty());
}

TEST_CASE("workloads are deterministic for a seed and differ between seeds") {
    for (const auto& row : rs::kWorkloads) {
        const std::string name(row.name);
        CAPTURE(name);
        rs::WorkloadOptions o;
        o.name = name;
        o.steps = 30;
        auto a = read_all(*rs::make_workload(o));
        auto b = read_all(*rs::make_workload(o));
        REQUIRE(a.size() == b.size());
        bool same = true;
        for (std::size_t i = 0; i < a.size(); ++i)
            same = same && a[i].kind == b[i].kind && a[i].id == b[i].id && a[i].size == b[i].size && a[i].tag == b[i].tag;
        CHECK(same);
        // Balanced: everything allocated is freed by the end.
        std::int64_t live = 0;
        for (const auto& e : a) live += e.kind == rs::EventKind::alloc ? 1 : e.kind == rs::EventKind::free ? -1 : 0;
        CHECK(live == 0);
        // A rewind replays the same events.
        auto src = rs::make_workload(o);
        const auto first = read_all(*src);
        REQUIRE(src->rewind());
        CHECK(read_all(*src).size() == first.size());
        if (name == "dynamic" || name == "detector" || name == "llm-decode") {
            o.seed = 2;
            auto c = read_all(*rs::make_workload(o));
            bool differs = c.size() != a.size();
            for (std::size_t i = 0; !differs && i < a.size(); ++i) differs = a[i].size != c[i].size;
            CHECK(differs);
        }
    }
    rs::WorkloadOptions bad;
    bad.name = "nope";
    CHECK(contains(usage_error([&] { rs::make_workload(bad); }), "unknown workload 'nope'"));
}

TEST_CASE("simulation results are deterministic for a seed") {
    rs::WorkloadOptions w;
    w.steps = 50;
    auto run_all = [&] {
        auto src = rs::make_workload(w);
        std::vector<std::unique_ptr<rs::Lane>> lanes;
        std::vector<rs::Lane*> ptrs;
        rs::StrategyOptions o;
        o.ring_size = rs::largest_request(*src);
        for (const auto& row : rs::kStrategies) {
            lanes.push_back(std::make_unique<rs::Lane>(std::string(row.name), std::make_unique<rs::SimulatedUpstream>(rs::kUnlimited, nullptr)));
            lanes.back()->strategy = rs::make_strategy(row.value, o, *lanes.back()->upstream);
            ptrs.push_back(lanes.back().get());
        }
        rs::Replay replay(ptrs, {});
        replay.run(*src);
        std::vector<std::uint64_t> figures;
        for (const auto& l : lanes) {
            const auto r = rs::summarize(*l);
            figures.insert(figures.end(), {r.upstream_allocs, r.upstream_frees, r.peak_reserved, r.hits});
        }
        return figures;
    };
    CHECK(run_all() == run_all());
}

TEST_CASE("cost table: built-in figures, interpolation in log size, file round trip") {
    const rs::CostTable t = rs::default_cost_table();
    const rs::CostCurve* malloc_curve = t.find("device", "alloc");
    REQUIRE(malloc_curve);
    CHECK(malloc_curve->at(4 * KiB) == doctest::Approx(35));
    CHECK(malloc_curve->at(GiB) == doctest::Approx(129));
    CHECK(malloc_curve->at(64 * MiB) == doctest::Approx(82));  // halfway between 16 MiB and 256 MiB in log size
    CHECK(malloc_curve->at(512) > 35);                          // extends the first segment
    CHECK(t.find("device", "free")->at(256 * MiB) == doctest::Approx(105));

    TempFile f("", ".json");
    rs::CostTable mine;
    mine.device = "Test GPU";
    mine.source = "test";
    mine.apis["device"]["alloc"] = rs::CostCurve{{{1024, 10}, {1048576, 20}}};
    rs::write_cost_table(f.path, mine);
    std::vector<std::string> missing;
    const rs::CostTable back = rs::read_cost_table(f.path, &missing);
    CHECK(back.device == "Test GPU");
    CHECK(back.find("device", "alloc")->at(32 * 1024) == doctest::Approx(15));
    CHECK(std::find(missing.begin(), missing.end(), "device.free") != missing.end());
    CHECK(back.find("device", "free") != nullptr);  // taken from the built-in table
}

TEST_CASE("cost table: malformed files are usage errors naming the file") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{", "invalid JSON"},
        {"[]", "not an object"},
        {R"({"schema_version":1,"kind":"other","apis":{}})", "\"kind\""},
        {R"({"schema_version":2,"kind":"gpumem-cost-table","apis":{}})", "schema_version 2"},
        {R"({"schema_version":1,"kind":"gpumem-cost-table"})", "no \"apis\""},
        {R"({"schema_version":1,"kind":"gpumem-cost-table","apis":{"device":{"alloc":[]}}})", "non-empty array"},
        {R"({"schema_version":1,"kind":"gpumem-cost-table","apis":{"device":{"alloc":[{"bytes":10}]}}})", "median_us"},
        {R"({"schema_version":1,"kind":"gpumem-cost-table","apis":{"device":{"alloc":[{"bytes":10,"median_us":1},{"bytes":5,"median_us":1}]}}})", "ascending"},
        {R"({"schema_version":1,"kind":"gpumem-cost-table","apis":{"device":{"alloc":[{"bytes":10,"median_us":-1}]}}})", ">= 0"},
        // Found by fuzz_cost_table: a number beyond double's range is
        // nlohmann's out_of_range, not parse_error, and escaped as exit 1.
        {R"({"schema_version":1,"kind":"gpumem-cost-table","apis":{"device":{"alloc":[{"bytes":10,"median_us":10e48576}]}}})", "invalid JSON"},
    };
    for (const auto& [text, expected] : cases) {
        const std::string input = text;  // clang 14 cannot capture a structured binding (CAPTURE is a lambda)
        CAPTURE(input);
        TempFile f(text, ".json");
        const std::string msg = usage_error([&] { rs::read_cost_table(f.path); });
        CHECK(contains(msg, f.path + ": "));
        CHECK(contains(msg, expected));
    }
    CHECK(contains(usage_error([&] { rs::read_cost_table("/nonexistent/costs.json"); }), "/nonexistent/costs.json"));
}

TEST_CASE("strategy names, growth rules and PyTorch's roundup_power2_divisions syntax") {
    CHECK(rs::kStrategies.parse_list("all").size() == 8);
    CHECK(rs::kStrategies.parse_list("pool,torch-caching") ==
          std::vector<rs::StrategySpec>{rs::kStrategies.parse("pool"), rs::kStrategies.parse("torch-caching")});
    CHECK(contains(usage_error([] { rs::kStrategies.parse_list("pool,nope"); }), "unknown strategy 'nope'"));
    CHECK(contains(usage_error([] { rs::kStrategies.parse_list("pool,pool"); }), "named twice"));
    // The options each strategy takes, from its row.
    CHECK(rs::strategies_using("--pool-initial") == "pool, binning");
    CHECK(rs::strategies_using("--growth") == "grow-only");
    CHECK(rs::strategies_using("--bins") == "binning");
    CHECK(rs::strategies_using("--release-threshold") == "async-pool");
    CHECK(rs::strategies_using("--roundup-power2-divisions") == "torch-caching");
    CHECK(rs::strategies_using("--capacity").empty());
    // --growth takes the named rules only (MixMemory's GrowthPolicy).
    CHECK(gpumem::kGrowthRules.parse("x1.5").capacity_for(1000, 4096) == 6144);
    CHECK(gpumem::kGrowthRules.parse("512B").capacity_for(1000, 0) == 1024);
    CHECK(contains(usage_error([] { gpumem::kGrowthRules.parse("x3"); }), "unknown growth rule 'x3'"));

    auto d = rs::parse_roundup_power2_divisions("4");
    CHECK(d[0] == 4);
    CHECK(d[15] == 4);
    d = rs::parse_roundup_power2_divisions("[256:1,512:2,>:8]");
    CHECK(d[0] == 1);  // the first entry also covers the smaller intervals
    CHECK(d[8] == 1);  // 256 MiB = 2^8 MiB
    // PyTorch 2.11's '>' fills the intervals after the last named one: 512
    // MiB keeps its 2 (the roundup_list fixture's snapshot records
    // [256:1,512:2,1024:4,>:8] with 4 at 1024 MiB).
    CHECK(d[9] == 2);
    CHECK(d[10] == 8);
    CHECK(d[15] == 8);
    CHECK(contains(usage_error([] { rs::parse_roundup_power2_divisions("3"); }), "power of two"));
    CHECK(contains(usage_error([] { rs::parse_roundup_power2_divisions("[256:1"); }), "']'"));
}

TEST_CASE("U64Map agrees with std::unordered_map under random inserts and erases") {
    rs::U64Map map(8);
    std::unordered_map<std::uint64_t, std::uint32_t> ref;
    std::mt19937_64 gen(42);
    for (int i = 0; i < 200000; ++i) {
        const std::uint64_t key = (gen() % 5000) << (gen() % 3 == 0 ? 21 : 0);  // clustered keys, like addresses
        if (gen() % 3 == 0) {
            CHECK(map.erase(key) == (ref.erase(key) == 1));
        } else {
            const auto v = static_cast<std::uint32_t>(gen());
            map.put(key, v);
            ref[key] = v;
        }
    }
    CHECK(map.size() == ref.size());
    for (const auto& [k, v] : ref) {
        const std::uint32_t* found = map.find(k);
        REQUIRE(found);
        CHECK(*found == v);
    }
}

TEST_CASE("timeline keeps a bounded number of points with the maxima") {
    rs::Lane lane("naive", std::make_unique<rs::SimulatedUpstream>(rs::kUnlimited, nullptr));
    lane.strategy = rs::make_strategy(rs::kStrategies.parse("naive"), {}, *lane.upstream);
    std::vector<rs::Event> ev;
    for (std::uint64_t i = 1; i <= 1000; ++i) {
        ev.push_back(A(i, i));
        ev.push_back(F(i));
    }
    VectorSource src(ev);
    rs::ReplayOptions o;
    o.timeline_points = 50;
    rs::Replay replay({&lane}, o);
    replay.run(src);
    const rs::Timeline* t = replay.timeline();
    REQUIRE(t);
    CHECK(t->points() >= 50);
    CHECK(t->points() < 100);
    std::uint64_t top = 0;
    for (std::size_t p = 0; p < t->points(); ++p) top = std::max(top, t->reserved(p, 0));
    CHECK(top == 1000);
    CHECK(t->first_event(0) == 0);
}
