// CPU suite for alloc-test's pure logic: percentiles, ranges and chunk
// plans, the search of the largest allocation and the back-off, the churn planner, durations,
// API and pattern names, the pattern generators, the cost-table format and
// the per-device thread runner.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/alloc_apis.hpp"
#include "bench/alloc_modes.hpp"
#include "base/errors.hpp"
#include "core/kernels.hpp"
#include "base/sizes.hpp"
#include "base/stats.hpp"

using namespace gpumem;

namespace {

// --api and --pattern as check() reads them: the tables' lists under alloc-test's rules.
std::vector<AllocApi> parse_alloc_api_list(const std::vector<std::string>& items) {
    return kAllocApis.parse_list(items, kAllocTestListRules);
}
std::vector<Pattern> parse_pattern_list(const std::vector<std::string>& items) {
    return kPatterns.parse_list(items, kAllocTestListRules);
}

}  // namespace

TEST_CASE("alloc percentiles: linear interpolation between closest ranks") {
    std::vector<double> v;
    for (int i = 1; i <= 100; ++i) v.push_back(i);
    const Summary s = summarize(v);
    CHECK(s.count == 100);
    CHECK(s.median == doctest::Approx(50.5));
    CHECK(s.p90 == doctest::Approx(90.1));
    CHECK(s.p99 == doctest::Approx(99.01));
    CHECK(s.min == 1);
    CHECK(s.max == 100);
    // Order does not matter.
    std::vector<double> shuffled = {5, 1, 4, 2, 3};
    CHECK(summarize(shuffled).median == 3);
    CHECK(summarize(shuffled).p90 == doctest::Approx(4.6));
    CHECK(summarize({7}).p99 == 7);
    CHECK(summarize({}).count == 0);
    CHECK(percentile_sorted({1, 2}, 50) == doctest::Approx(1.5));
}

TEST_CASE("alloc ranges: the default latency and churn sizes") {
    CHECK(parse_size_range("4KiB,1MiB,16MiB,256MiB,1GiB") ==
          std::vector<std::uint64_t>{4096, 1 << 20, 16 << 20, 256 << 20, 1ULL << 30});
    const auto churn = parse_size_range("4KiB..64MiB");
    CHECK(churn.size() == 15);  // 2^12 .. 2^26
    CHECK(churn.front() == 4096);
    CHECK(churn.back() == 64ULL << 20);
}

TEST_CASE("alloc chunk plans cover the total exactly") {
    CHECK(plan_chunks(10, 3) == std::vector<std::uint64_t>{3, 3, 3, 1});
    CHECK(plan_chunks(9, 3) == std::vector<std::uint64_t>{3, 3, 3});
    CHECK(plan_chunks(2, 8) == std::vector<std::uint64_t>{2});
    CHECK(plan_chunks(0, 8).empty());
    const auto big = plan_chunks(95ULL << 30, 1ULL << 30);
    CHECK(big.size() == 95);
    std::uint64_t sum = 0;
    for (auto b : plan_chunks((7ULL << 30) + 12345, 1ULL << 30)) sum += b;
    CHECK(sum == (7ULL << 30) + 12345);
}

TEST_CASE("alloc totals: percentages round down to 2 MiB, sizes to whole words") {
    const std::uint64_t free = (80ULL << 30) + 12345;
    const std::uint64_t t = resolve_total(parse_size_spec("95%", {false, true}), free);
    CHECK(t % (2ULL << 20) == 0);
    CHECK(t <= free * 95 / 100);
    CHECK(t + (2ULL << 20) > free * 95 / 100);
    CHECK(resolve_total(parse_size_spec("100%", {false, true}), free) <= free);
    // Above 100% of the free memory is never there: a usage error (one size rule).
    CHECK_THROWS_AS(parse_size_spec("200%", {false, true}), gpumem::UsageError);
    CHECK(resolve_total(parse_size_spec("1001", {false, true}), free) == 1000);
    CHECK(resolve_total(parse_size_spec("1GiB", {false, true}), free) == 1ULL << 30);
}

TEST_CASE("alloc largest_succeeding finds the largest granule a monotonic probe accepts") {
    const std::uint64_t g = 2ULL << 20;
    const std::uint64_t limit = 80ULL << 30;
    const int log_granules = static_cast<int>(std::ceil(std::log2(static_cast<double>(limit / g + 1))));
    for (std::uint64_t capacity : std::vector<std::uint64_t>{0, 1, g - 1, g, 3 * g + 5, 79ULL << 30, limit - 5 * g,
                                                             limit - g, limit, limit + 1}) {
        CAPTURE(capacity);
        int probes = 0;
        const std::uint64_t got =
            largest_succeeding(limit, g, [&](std::uint64_t bytes) { return bytes <= capacity; }, &probes);
        CHECK(got == std::min(capacity, limit) / g * g);
        CHECK(probes <= 2 * log_granules + 1);
        // Near the limit (free memory, where the largest allocation lies) it takes a handful.
        if (capacity + 5 * g >= limit) CHECK(probes <= 6);
        if (capacity >= limit) CHECK(probes == 1);
    }
    // Every granule count from 0 to 40 under a limit of 37 granules.
    for (std::uint64_t capacity = 0; capacity <= 40; ++capacity)
        CHECK(largest_succeeding(37, 1, [&](std::uint64_t b) { return b <= capacity; }) == std::min<std::uint64_t>(capacity, 37));
    // Every probe is a multiple of the granularity and within the limit.
    largest_succeeding(100, 7, [](std::uint64_t b) {
        CHECK(b % 7 == 0);
        CHECK(b <= 100);
        return b <= 50;
    });
}

TEST_CASE("alloc obtain_in_chunks backs off like cuda_memtest down to the granularity") {
    const std::uint64_t g = 2ULL << 20, chunk = 1ULL << 30;
    for (std::uint64_t capacity : std::vector<std::uint64_t>{0, g, chunk - g, chunk, (5ULL << 30) + (300ULL << 20) + 7}) {
        std::uint64_t used = 0;
        int polls = 0;
        const ChunkedObtain got = obtain_in_chunks(
            chunk, g,
            [&](std::uint64_t bytes) {
                CHECK(bytes % g == 0);
                if (used + bytes > capacity) return false;
                used += bytes;
                return true;
            },
            [&] { ++polls; });
        CHECK(got.total() == used);
        CHECK(got.full_chunks == capacity / chunk);
        CHECK(got.full_bytes == capacity / chunk * chunk);
        CHECK(got.total() == capacity / g * g);  // the back-off takes everything down to one granule
        CHECK(polls > 0);
    }
    // A poll that throws stops the loop (Ctrl-C).
    CHECK_THROWS_AS(obtain_in_chunks(chunk, g, [](std::uint64_t) { return true; }, [] { throw InterruptedError(); }),
                    InterruptedError);
}

TEST_CASE("alloc churn planner: repeatable for a seed, respects the live cap") {
    const std::vector<std::uint64_t> sizes = parse_size_range("4KiB..64MiB");
    const std::uint64_t cap = 256ULL << 20;
    auto simulate = [&](std::uint64_t seed) {
        ChurnPlanner planner(seed, sizes, cap);
        std::vector<std::uint64_t> live;
        std::uint64_t live_bytes = 0, allocs = 0, frees = 0, max_live = 0;
        std::vector<std::uint64_t> trace;
        for (int i = 0; i < 20000; ++i) {
            const auto step = planner.next_direct(live.size(), live_bytes);
            if (step.allocate) {
                CHECK(std::find(sizes.begin(), sizes.end(), step.size) != sizes.end());
                live.push_back(step.size);
                live_bytes += step.size;
                ++allocs;
                trace.push_back(step.size);
            } else {
                REQUIRE(step.victim < live.size());
                live_bytes -= live[step.victim];
                live[step.victim] = live.back();
                live.pop_back();
                ++frees;
                trace.push_back(0);
            }
            max_live = std::max(max_live, live_bytes);
        }
        CHECK(max_live <= cap);
        CHECK(allocs > 5000);
        CHECK(frees > 5000);
        return trace;
    };
    CHECK(simulate(1) == simulate(1));
    CHECK(simulate(1) != simulate(2));

    // The first allocation into an empty set happens even above the cap.
    ChurnPlanner tiny(3, {1ULL << 30}, 1);
    CHECK(tiny.next_direct(0, 0).allocate);
    CHECK_FALSE(tiny.next_direct(1, 1ULL << 30).allocate);

    // Slot requests cover every slot and only the given sizes.
    ChurnPlanner slots(9, {4096, 8192}, 0, 4);
    std::map<std::size_t, int> seen;
    for (int i = 0; i < 1000; ++i) {
        const auto step = slots.next_slot_request();
        CHECK(step.slot < 4);
        CHECK((step.size == 4096 || step.size == 8192));
        ++seen[step.slot];
    }
    CHECK(seen.size() == 4);
    CHECK_THROWS_AS(ChurnPlanner(1, {}, 10), UsageError);
}

TEST_CASE("alloc durations") {
    CHECK(parse_duration_seconds("30") == 30);
    CHECK(parse_duration_seconds("30s") == 30);
    CHECK(parse_duration_seconds("1.5s") == 1.5);
    CHECK(parse_duration_seconds("500ms") == doctest::Approx(0.5));
    CHECK(parse_duration_seconds("2m") == 120);
    CHECK(parse_duration_seconds("1h") == 3600);
    CHECK(parse_duration_seconds(" 10 s ") == 10);
    CHECK_THROWS_AS(parse_duration_seconds(""), UsageError);
    CHECK_THROWS_AS(parse_duration_seconds("0"), UsageError);
    CHECK_THROWS_AS(parse_duration_seconds("-1s"), UsageError);
    CHECK_THROWS_AS(parse_duration_seconds("5x"), UsageError);
    CHECK_THROWS_AS(parse_duration_seconds("s"), UsageError);
    CHECK_THROWS_AS(parse_duration_seconds("400d"), UsageError);
}

TEST_CASE("alloc API and pattern names") {
    CHECK(parse_alloc_api_list({"device"}) == std::vector<AllocApi>{AllocApi::device});
    CHECK(parse_alloc_api_list({"device,async", "vmm", "device"}) ==
          std::vector<AllocApi>{AllocApi::device, AllocApi::async, AllocApi::vmm});
    CHECK(parse_alloc_api_list({"all"}).size() == 9);
    CHECK(parse_alloc_api("async-pool") == AllocApi::async_pool);
    for (AllocApi a : all_alloc_apis()) CHECK(parse_alloc_api(alloc_api_name(a)) == a);
    CHECK(parse_alloc_api("host-wc") == AllocApi::host_wc);
    CHECK_THROWS_AS(parse_alloc_api_list({"cuda"}), UsageError);
    CHECK_THROWS_AS(parse_alloc_api_list({"device,"}), UsageError);
    CHECK(alloc_api_uses_device_memory(AllocApi::vmm));
    CHECK_FALSE(alloc_api_uses_device_memory(AllocApi::registered));

    CHECK(parse_pattern_list({"all"}).size() == 5);
    CHECK(parse_pattern_list({"random,zeros", "random"}) == std::vector<Pattern>{Pattern::random, Pattern::zeros});
    for (Pattern p : all_patterns()) CHECK(parse_pattern(pattern_name(p)) == p);
    CHECK_THROWS_AS(parse_pattern_list({"stripes"}), UsageError);
    CHECK_THROWS_AS(parse_pattern_list({" "}), UsageError);
}

TEST_CASE("alloc API and pattern tables: one row per name, lists as before") {
    CHECK(kAllocApis.what() == "allocation API");
    CHECK(alloc_api_names() == "device, async, async-pool, managed, host, host-wc, host-mapped, registered, vmm");
    CHECK(all_alloc_apis() == kAllocApis.values());
    for (const Named<AllocApi>& row : kAllocApis) {
        CHECK(std::string(alloc_api_name(row.value)) == row.name);
        CHECK_FALSE(row.help.empty());
    }
    CHECK(parse_alloc_api(" vmm ") == AllocApi::vmm);  // blanks around a single name, as before
    CHECK_THROWS_WITH_AS(parse_alloc_api("cuda"),
                         "unknown allocation API 'cuda' (nearest: host, vmm, async; gpumem --list apis)",
                         UsageError);
    // `all` among names: the names first, then every other API in table order.
    const std::vector<AllocApi> vmm_first = parse_alloc_api_list({"vmm, all"});
    REQUIRE(vmm_first.size() == 9);
    CHECK(vmm_first.front() == AllocApi::vmm);
    CHECK(vmm_first[1] == AllocApi::device);
    CHECK(parse_alloc_api_list({"all", "device"}) == all_alloc_apis());
    CHECK_THROWS_AS(parse_alloc_api_list({""}), UsageError);
    CHECK_THROWS_AS(parse_alloc_api_list({"device,,managed"}), UsageError);

    CHECK(kPatterns.names(", ") == "zeros, ones, walking, address, random");
    CHECK(all_patterns() == kPatterns.values());
    for (const Named<Pattern>& row : kPatterns) CHECK(std::string(pattern_name(row.value)) == row.name);
    CHECK(parse_pattern(" address") == Pattern::address);
    CHECK_THROWS_WITH_AS(parse_pattern("stripes"), "unknown pattern 'stripes' (expected zeros, ones, walking, address or random)",
                         UsageError);
    CHECK(parse_pattern_list({"random", "all"}) ==
          std::vector<Pattern>{Pattern::random, Pattern::zeros, Pattern::ones, Pattern::walking, Pattern::address});
}

TEST_CASE("alloc pattern generators (pattern_word) as the kernels compute them") {
    const std::uint64_t base = 0x7f0000000000ULL;
    for (std::uint64_t i : {0ULL, 1ULL, 63ULL, 64ULL, 1000003ULL}) {
        CHECK(pattern_word(Pattern::zeros, 1, i, base + 8 * i) == 0);
        CHECK(pattern_word(Pattern::ones, 1, i, base + 8 * i) == ~0ULL);
        const std::uint64_t w = pattern_word(Pattern::walking, 1, i, base + 8 * i);
        CHECK(w == 1ULL << ((i + 1) & 63));
        CHECK(pattern_word(Pattern::address, 1, i, base + 8 * i) == base + 8 * i);
    }
    // Walking ones visit every bit over 64 consecutive words.
    std::uint64_t all = 0;
    for (std::uint64_t i = 0; i < 64; ++i) all |= pattern_word(Pattern::walking, 5, i, 0);
    CHECK(all == ~0ULL);
    // Random: a function of (seed, index) only, and well spread.
    CHECK(pattern_word(Pattern::random, 7, 42, 0) == pattern_word(Pattern::random, 7, 42, 123));
    CHECK(pattern_word(Pattern::random, 7, 42, 0) != pattern_word(Pattern::random, 8, 42, 0));
    CHECK(pattern_word(Pattern::random, 7, 42, 0) != pattern_word(Pattern::random, 7, 43, 0));
    int bits = 0;
    for (std::uint64_t i = 0; i < 1000; ++i) bits += __builtin_popcountll(pattern_word(Pattern::random, 1, i, 0));
    CHECK(bits / 1000.0 == doctest::Approx(32).epsilon(0.05));
}

TEST_CASE("alloc cost table: latency medians in reuse-sim's format, read back by reuse-sim") {
    LatencyResult lr(DeviceId(0));
    auto row = [](AllocApi api, std::uint64_t size, double a, double f) {
        LatencyRow r;
        r.api = api;
        r.size = size;
        r.allocated = size;
        r.alloc_us.median = a;
        r.free_us.median = f;
        return r;
    };
    // Sizes out of order and an API in between: points still ascend per API.
    lr.rows = {row(AllocApi::device, 1 << 20, 34, 27), row(AllocApi::device, 4096, 35, 28), row(AllocApi::host, 4096, 450, 200),
               row(AllocApi::device, 1ULL << 30, 129, 320), row(AllocApi::async, 4096, 50, 20),
               row(AllocApi::async_pool, 4096, 0.4, 0.3), row(AllocApi::vmm, 4096, 60, 40),
               row(AllocApi::device, 4096, 99, 99)};  // measured twice: the first one counts
    const reuse_sim::CostTable table = cost_table_from_latency(lr, "NVIDIA H200 \"test\"", "unit test");
    REQUIRE(table.apis.size() == 5);
    const auto& device_alloc = table.apis.at("device").at("alloc").points;
    REQUIRE(device_alloc.size() == 3);
    CHECK(device_alloc[0].bytes == 4096);
    CHECK(device_alloc[0].median_us == 35);
    CHECK(table.apis.at("device").at("free").points[2].median_us == 320);
    // reuse-sim's names: the growing async cycle is async_grow, the pool-served one async.
    CHECK(table.apis.at("async_grow").at("alloc").points[0].median_us == 50);
    CHECK(table.apis.at("async").at("alloc").points[0].median_us == doctest::Approx(0.4));
    CHECK(table.apis.count("vmm") == 1);

    const std::string text = reuse_sim::cost_table_to_json(table);
    const auto doc = nlohmann::json::parse(text);
    CHECK(doc["kind"] == "gpumem-cost-table");
    CHECK(doc["device"] == "NVIDIA H200 \"test\"");
    CHECK(doc["apis"]["device"]["alloc"][0]["bytes"] == 4096);
    const reuse_sim::CostTable back = reuse_sim::parse_cost_table(text, "round-trip");
    CHECK(back.device == table.device);
    CHECK(back.source == table.source);
    CHECK(back.find("device", "alloc")->at(1 << 20) == doctest::Approx(34));
    CHECK(back.find("host", "free")->at(4096) == doctest::Approx(200));
}

TEST_CASE("alloc run_on_devices: a failing device stops the others and its error wins") {
    std::atomic<int> stopped_by_sibling{0};
    const auto start = std::chrono::steady_clock::now();
    try {
        run_on_devices(std::vector<DeviceId>{DeviceId(0), DeviceId(1), DeviceId(2)}, [&](DeviceId device, const StopToken& stop) -> int {
            if (device == DeviceId(1)) throw OutOfMemoryError("device 1 is full", 1);
            try {
                while (std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
                    stop.throw_if_stopped();
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
            } catch (const StoppedBySiblingError&) {
                ++stopped_by_sibling;
                throw;
            }
            return device.ordinal();
        });
        FAIL("no exception");
    } catch (const OutOfMemoryError& e) {
        CHECK(std::string(e.what()) == "device 1 is full");
    }
    CHECK(stopped_by_sibling == 2);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));

    // Results come back in device order; one device runs on the calling thread.
    const auto caller = std::this_thread::get_id();
    const auto ids = run_on_devices(std::vector<DeviceId>{DeviceId(4)}, [&](DeviceId, const StopToken&) { return std::this_thread::get_id(); });
    CHECK(ids.front() == caller);
    const auto doubled = run_on_devices(std::vector<DeviceId>{DeviceId(3), DeviceId(1), DeviceId(2)},
                                        [](DeviceId d, const StopToken&) { return 2 * d.ordinal(); });
    CHECK(doubled == std::vector<int>{6, 2, 4});
}
