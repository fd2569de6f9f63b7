// PyTorch's newer allocator features through `gpumem reuse-sim`: private
// torch.cuda.MemPool pools, settings changed while the program runs
// (torch.cuda.memory._set_allocator_settings) and an OOM inside a CUDA graph
// capture. Each recording of tests/fixtures/allocator_features/ (NAME.pickle
// and the statistics --record wrote beside it, NAME.stats.json) is replayed
// by the gpumem binary as a user would (its cap and the program's allocator
// calls read from the statistics) and must give the five counters PyTorch's
// torch.cuda.memory_stats() reported: num_device_alloc, num_device_free,
// reserved_bytes.all.peak, num_alloc_retries, num_ooms. The hand-made ones
// (make_fixtures.py) hold the counters derived from CUDACachingAllocator.cpp;
// the real ones were recorded on a GPU (their README.md).
#include <doctest/doctest.h>


#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "reuse_sim/snapshot_reader.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim_helpers.hpp"
#include "tests_dir.hpp"

namespace {

using nlohmann::json;

std::string features_dir() {
    return tests_dir() + "/fixtures/allocator_features";
}

std::vector<std::string> feature_fixtures() { return names_ending_in(features_dir(), ".stats.json"); }

json read_stats(const std::string& name) {
    std::ifstream in(features_dir() + "/" + name + ".stats.json");
    REQUIRE(in);
    return json::parse(in);
}

json replay(const std::string& name, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"reuse-sim", "replay", "--trace", features_dir() + "/" + name + ".pickle", "--strategy", "torch-caching",
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = run_gpumem(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return json::parse(r.out);
}

}  // namespace

TEST_CASE("allocator features: every recording replays PyTorch's five counters exactly") {
    const std::vector<std::string> names = feature_fixtures();
    REQUIRE(names.size() >= 4);
    for (const std::string& name : names) {
        CAPTURE(name);
        const json stats = read_stats(name).at("memory_stats");
        const json doc = replay(name);
        const json& lane = doc.at("strategies").at(0);
        std::ostringstream line;
        line << name << ": PyTorch/model";
        const std::pair<const char*, const char*> counters[] = {
            {"num_device_alloc", "upstream_allocs"}, {"num_device_free", "upstream_frees"},
            {"reserved_bytes.all.peak", "peak_reserved"}, {"num_alloc_retries", "retries"}, {"num_ooms", "ooms"},
        };
        for (const auto& counter : counters) {
            // No structured binding: clang 14 refuses one inside CAPTURE's lambda.
            const char* const torch_key = counter.first;
            const char* const model_key = counter.second;
            CAPTURE(torch_key);
            const std::uint64_t torch = stats.at(torch_key).get<std::uint64_t>();
            const std::uint64_t model = lane.at(model_key).get<std::uint64_t>();
            line << " " << torch_key << " " << torch << "/" << model;
            CHECK(model == torch);
        }
        MESSAGE(line.str());
        CHECK(doc["fewer_ooms_than_recorded"].is_null());
    }
}

TEST_CASE("allocator features: settings changed as the program ran are replayed phase by phase, and said") {
    const json doc = replay("synthetic_settings_change");
    // The replay starts under what the process started with (no variable set), not the snapshot's last.
    CHECK(doc["allocator_settings"]["expandable_segments"] == false);
    REQUIRE(doc["allocator_settings"]["changes"].size() == 1);
    CHECK(doc["allocator_settings"]["changes"][0]["alloc_conf"] == "expandable_segments:True");
    // After the first phase's five entries and its empty_cache.
    CHECK(doc["allocator_settings"]["changes"][0]["event"] == 6);
    CHECK(doc["warnings"].dump().find("changed its allocator settings 1 time as it ran") != std::string::npos);
    // --tune says which phase a suggested setting replaces.
    const RunResult tune = run_gpumem({"reuse-sim", "tune", "--trace", features_dir() + "/synthetic_settings_change.pickle"});
    CHECK(tune.status == 0);
    CHECK(unwrapped(tune.err).find("A suggested setting replaces only the first phase (events 1 to 5)") != std::string::npos);
}

TEST_CASE("allocator features: a recording without the hook's calls says what the replay may place otherwise") {
    const json doc = replay("synthetic_mempool_oom");
    const std::string warnings = doc["warnings"].dump();
    CHECK(warnings.find("the program used 1 torch.cuda.MemPool pool") != std::string::npos);
    CHECK(warnings.find("1 refused request(s) in the private pool of the request before them") != std::string::npos);
    CHECK(warnings.find("a cap the recording did not capture") == std::string::npos);
}

TEST_CASE("allocator features: the reader places requests by the hook's contexts, and a pool's release is not empty_cache") {
    rs::RecordedCalls calls;
    calls.recorded = true;
    const json stats = read_stats("synthetic_mempool_release");
    for (const json& c : stats["allocator"]["allocator_calls"]) {
        rs::AllocatorCall call;
        const std::string kind = c["call"];
        call.kind = kind == "use_mem_pool_begin" ? rs::AllocatorCall::Kind::mem_pool_begin
                    : kind == "use_mem_pool_end" ? rs::AllocatorCall::Kind::mem_pool_end
                                                 : rs::AllocatorCall::Kind::pool_release;
        call.position = c["position"];
        call.pool = {c["pool"][0], c["pool"][1]};
        calls.calls.push_back(call);
    }
    auto src = rs::open_trace(features_dir() + "/synthetic_mempool_release.pickle", rs::TraceFormat::automatic, false, std::nullopt, &calls);
    std::vector<std::uint32_t> pools;
    int empty_caches = 0, releases = 0;
    rs::Event e;
    while (src->next(e)) {
        if (e.kind == rs::EventKind::alloc) pools.push_back(e.pool);
        empty_caches += e.kind == rs::EventKind::empty_cache;
        releases += e.kind == rs::EventKind::pool_release;
    }
    CHECK(pools == std::vector<std::uint32_t>{0, 1, 0});
    CHECK(releases == 1);
    CHECK(empty_caches == 0);
    REQUIRE(src->allocator_facts());
    CHECK(src->allocator_facts()->mem_pools == 1);
    // Without the calls, the pool's segment is gone from the snapshot: its request reads as the default pool's,
    // and nothing says the pool was given up.
    auto bare = rs::open_trace(features_dir() + "/synthetic_mempool_release.pickle", rs::TraceFormat::automatic);
    pools.clear();
    releases = 0;
    while (bare->next(e)) {
        if (e.kind == rs::EventKind::alloc) pools.push_back(e.pool);
        releases += e.kind == rs::EventKind::pool_release;
    }
    CHECK(pools == std::vector<std::uint32_t>{0, 0, 0});
    CHECK(releases == 0);
}

TEST_CASE("allocator features: settings and pool_release events round-trip through a gpumem trace") {
    TempFile in("action,id,size,stream,tag\nalloc,1,4096,0,\nsettings,,,,expandable_segments:True;max_split_size_mb:64\n"
                "pool_release,2,1,,\nfree,1,,,\n");
    auto src = rs::open_trace(in.path, rs::TraceFormat::gpumem);
    const std::vector<rs::Event> events = read_all(*src);
    REQUIRE(events.size() == 4);
    CHECK(events[1].kind == rs::EventKind::settings);
    CHECK(src->tag_name(events[1].tag) == "expandable_segments:True,max_split_size_mb:64");
    CHECK(events[2].kind == rs::EventKind::pool_release);
    CHECK(events[2].id == 2);
    CHECK(events[2].size == 1);
    TempFile out("");
    {
        rs::GpumemTraceWriter w(out.path);
        for (const rs::Event& e : events) w.write(e, src->tag_name(e.tag));
        w.close();
    }
    std::ifstream back(out.path);
    const std::string text((std::istreambuf_iterator<char>(back)), std::istreambuf_iterator<char>());
    CHECK(text.find("settings,,,,expandable_segments:True;max_split_size_mb:64\n") != std::string::npos);
    CHECK(text.find("pool_release,2,1,,\n") != std::string::npos);
    // A settings line needs its text.
    TempFile bad("action,id,size,stream,tag\nsettings,,,,\n");
    CHECK_THROWS_AS(read_all(*rs::open_trace(bad.path, rs::TraceFormat::gpumem)), gpumem::UsageError);
}
