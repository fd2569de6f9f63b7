// Every strategy's counts on small random multi-stream traces, pinned to the
// figures the straightforward implementation gave before it was made fast
// (issue 14: the speed work must not change a single count). torch-caching
// has its own exactness tests against PyTorch and is left out here.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "reuse_sim/rng.hpp"
#include "reuse_sim_helpers.hpp"

namespace {

// A random trace as bench/reuse-sim.sh makes (smaller): sizes log-uniform
// from 1 KiB to 64 MiB, frees of a random live allocation, the live count
// wandering between `low` and `high`, ids reused most recently freed first,
// allocations on `streams` streams (at random, or in turn when `in_turn`),
// and a sync point every `sync_every` events (0: none).
std::vector<rs::Event> random_trace(std::size_t events, std::uint64_t streams, bool in_turn, std::uint64_t seed,
                                    std::size_t low = 100, std::size_t high = 500, std::size_t sync_every = 0) {
    rs::Rng rng(seed);
    std::vector<rs::Event> out;
    std::vector<std::uint64_t> live, spare;
    std::uint64_t next_id = 1, allocs = 0;
    for (std::size_t n = 0; n < events; ++n) {
        if (sync_every != 0 && n % sync_every == sync_every - 1) {
            out.push_back(S());
            continue;
        }
        if (live.size() < low || (live.size() < high && rng.chance(0.5))) {
            const std::uint64_t base = std::uint64_t{1024} << rng.uniform(0, 15);
            const std::uint64_t size = base + rng.uniform(0, base - 1);
            const std::uint64_t stream = in_turn ? allocs % streams : rng.uniform(0, streams - 1);
            std::uint64_t id = next_id;
            if (spare.empty()) {
                ++next_id;
            } else {
                id = spare.back();
                spare.pop_back();
            }
            out.push_back(A(id, size, rs::kNoTag, stream));
            live.push_back(id);
            ++allocs;
        } else {
            const std::size_t i = rng.uniform(0, live.size() - 1);
            std::swap(live[i], live.back());
            out.push_back(F(live.back()));
            spare.push_back(live.back());
            live.pop_back();
        }
    }
    return out;
}

// One line of every count a strategy reports.
std::string figures(const Outcome& o) {
    const rs::LaneResult& r = o.result;
    std::string s = "requests " + std::to_string(r.requests) + " ooms " + std::to_string(r.ooms) + " hits " +
                    std::to_string(r.hits) + " retries " + std::to_string(r.retries) + " allocs " +
                    std::to_string(r.upstream_allocs) + " frees " + std::to_string(r.upstream_frees) + " peak " +
                    std::to_string(r.peak_reserved) + " frag " + std::to_string(r.fragmentation).substr(0, 6);
    for (const auto& [k, v] : r.details) s += " " + k + " " + std::to_string(v);
    return s;
}

std::string run(const std::string& strategy, const std::vector<rs::Event>& trace, rs::StrategyOptions o = {},
                std::uint64_t capacity = rs::kUnlimited) {
    std::uint64_t largest = 0;
    for (const rs::Event& e : trace) largest = std::max(largest, e.size);
    o.largest_request = largest;
    return figures(run_strategy(strategy, trace, o, capacity));
}

}  // namespace

TEST_CASE("pinned counts: 4 streams at random, unlimited device") {
    const auto trace = random_trace(20000, 4, false, 1, 100, 500, 997);
    CHECK(run("naive", trace) ==
          "requests 10151 ooms 0 hits 0 retries 0 allocs 10151 frees 9829 peak 2338294374 frag 0.0000");
    CHECK(run("grow-only", trace) ==
          "requests 10151 ooms 0 hits 8887 retries 0 allocs 1264 frees 921 peak 14434444740 frag 0.8511 slots 343 requesters 343");
    CHECK(run("shape-persistent", trace) ==
          "requests 10151 ooms 0 hits 0 retries 0 allocs 10151 frees 9808 peak 2452465022 frag 0.0628 slots 343 requesters 343");
    CHECK(run("ring", trace) ==
          "requests 10151 ooms 0 hits 224 retries 0 allocs 9927 frees 9605 peak 2579677079 frag 0.0935 ring_buffers 4 ring_buffer_size 67084996 waits 9923");
    CHECK(run("pool", trace) ==
          "requests 10151 ooms 0 hits 10136 retries 0 allocs 15 frees 0 peak 3655172096 frag 0.6209 pool_size 3655172096 upstream_blocks 15");
    CHECK(run("binning", trace) ==
          "requests 10151 ooms 0 hits 10149 retries 0 allocs 7 frees 0 peak 4160749568 frag 0.7973 pool_size 4160749568 upstream_blocks 7 bin_262144_chunks 2 bin_524288_chunks 1 bin_1048576_chunks 1 bin_2097152_chunks 1 bin_4194304_chunks 1");
    CHECK(run("async-pool", trace) ==
          "requests 10151 ooms 0 hits 9889 retries 0 allocs 262 frees 188 peak 4492099584 frag 0.5423");
}

TEST_CASE("pinned counts: 4 streams at random, a device of 3 GiB") {
    const auto trace = random_trace(20000, 4, false, 2, 100, 500, 997);
    const std::uint64_t cap = 3 * GiB;
    CHECK(run("grow-only", trace, {}, cap) ==
          "requests 10044 ooms 1125 hits 6585 retries 0 allocs 2334 frees 2149 peak 3221222797 frag 0.8724 slots 221 requesters 221");
    CHECK(run("pool", trace, {}, cap) ==
          "requests 10044 ooms 0 hits 10034 retries 0 allocs 10 frees 0 peak 2675060736 frag 0.5847 pool_size 2675060736 upstream_blocks 10");
    CHECK(run("binning", trace, {}, cap) ==
          "requests 10044 ooms 0 hits 10042 retries 0 allocs 7 frees 0 peak 3120562176 frag 0.7390 pool_size 3120562176 upstream_blocks 7 bin_262144_chunks 1 bin_524288_chunks 1 bin_1048576_chunks 1 bin_2097152_chunks 1 bin_4194304_chunks 1");
    CHECK(run("async-pool", trace, {}, cap) ==
          "requests 10044 ooms 17 hits 9786 retries 0 allocs 241 frees 204 peak 3221225472 frag 0.6075");
    rs::StrategyOptions o;
    o.pool_maximum = 2 * GiB;
    CHECK(run("pool", trace, o) ==
          "requests 10044 ooms 9 hits 10029 retries 0 allocs 6 frees 0 peak 2127557632 frag 0.3386 pool_size 2127557632 upstream_blocks 6");
    CHECK(run("binning", trace, o) ==
          "requests 10044 ooms 162 hits 9876 retries 0 allocs 7 frees 0 peak 2143652352 frag 0.5294 pool_size 2143652352 upstream_blocks 7 bin_262144_chunks 1 bin_524288_chunks 1 bin_1048576_chunks 1 bin_2097152_chunks 1 bin_4194304_chunks 1");
    // Tight: how many requests fail depends on every block the pool chose.
    o.pool_maximum = 1 * GiB;
    CHECK(run("pool", trace, o) ==
          "requests 10044 ooms 351 hits 9688 retries 0 allocs 5 frees 0 peak 1052678144 frag 0.1586 pool_size 1052678144 upstream_blocks 5");
    o.bin_blocks = 4;
    CHECK(run("binning", trace, o) ==
          "requests 10044 ooms 388 hits 9652 retries 0 allocs 5 frees 0 peak 1069753856 frag 0.2591 pool_size 1069753856 upstream_blocks 5 bin_262144_chunks 29 bin_524288_chunks 6 bin_1048576_chunks 5 bin_2097152_chunks 6 bin_4194304_chunks 7");
    CHECK(run("async-pool", trace, {}, 1 * GiB) ==
          "requests 10044 ooms 767 hits 9187 retries 0 allocs 90 frees 65 peak 1073741824 frag 0.6355");
}

TEST_CASE("pinned counts: 300 streams in turn, and 64 at random") {
    const auto in_turn = random_trace(20000, 300, true, 3, 100, 500, 1999);
    CHECK(run("pool", in_turn) ==
          "requests 10086 ooms 0 hits 10074 retries 0 allocs 12 frees 0 peak 3036413952 frag 0.7177 pool_size 3036413952 upstream_blocks 12");
    CHECK(run("binning", in_turn) ==
          "requests 10086 ooms 0 hits 10084 retries 0 allocs 7 frees 0 peak 4160749568 frag 0.8009 pool_size 4160749568 upstream_blocks 7 bin_262144_chunks 2 bin_524288_chunks 1 bin_1048576_chunks 1 bin_2097152_chunks 1 bin_4194304_chunks 1");
    CHECK(run("async-pool", in_turn) ==
          "requests 10086 ooms 0 hits 8340 retries 0 allocs 1746 frees 1627 peak 6960447488 frag 0.7805");
    rs::StrategyOptions tight;
    tight.pool_maximum = 1 * GiB;
    tight.bin_blocks = 4;
    CHECK(run("pool", in_turn, tight) ==
          "requests 10086 ooms 369 hits 9712 retries 0 allocs 5 frees 0 peak 1070129408 frag 0.2815 pool_size 1070129408 upstream_blocks 5");
    CHECK(run("binning", in_turn, tight) ==
          "requests 10086 ooms 382 hits 9699 retries 0 allocs 6 frees 0 peak 1071012864 frag 0.2917 pool_size 1071012864 upstream_blocks 6 bin_262144_chunks 33 bin_524288_chunks 6 bin_1048576_chunks 5 bin_2097152_chunks 6 bin_4194304_chunks 5");
    CHECK(run("async-pool", in_turn, {}, 1 * GiB) ==
          "requests 10086 ooms 3846 hits 5957 retries 0 allocs 283 frees 257 peak 1073741824 frag 0.5363");
    const auto at_random = random_trace(20000, 64, false, 4, 50, 300, 0);
    rs::StrategyOptions o;
    o.pool_initial = 256 * MiB;
    CHECK(run("pool", at_random, o) ==
          "requests 10073 ooms 0 hits 10069 retries 0 allocs 5 frees 0 peak 4294967296 frag 0.7053 pool_size 4294967296 upstream_blocks 5");
    CHECK(run("binning", at_random, o) ==
          "requests 10073 ooms 0 hits 10071 retries 0 allocs 5 frees 0 peak 4294967296 frag 0.8211 pool_size 4294967296 upstream_blocks 5 bin_262144_chunks 2 bin_524288_chunks 1 bin_1048576_chunks 1 bin_2097152_chunks 1 bin_4194304_chunks 1");
    CHECK(run("async-pool", at_random) ==
          "requests 10073 ooms 0 hits 9677 retries 0 allocs 396 frees 0 peak 13914603520 frag 0.9060");
}
