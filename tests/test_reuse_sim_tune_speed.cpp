// reuse-sim tune's fast path (reuse_sim/tune_replays.hpp): lanes on
// several threads, settings that provably replay alike replayed once, the
// bisection's probes. Each row must be what one thread replaying every
// setting gives, on the PyTorch recordings (tests/fixtures/torch, with
// their ambiguous releases) and on random 4-stream traces.
#include <doctest/doctest.h>


#include <algorithm>
#include <atomic>
#include <cmath>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "reuse_sim/reuse_sim_tune.hpp"
#include "reuse_sim/cost_table.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tune_replays.hpp"
#include "reuse_sim/work_pool.hpp"
#include "tests_dir.hpp"

using namespace gpumem;
using namespace gpumem::cli;
namespace rs = gpumem::reuse_sim;

namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

std::string fixture_dir() {
    return tests_dir() + "/fixtures/torch";
}

std::vector<std::string> fixtures() {
    std::vector<std::string> paths;
    for (const std::string& name : names_ending_in(fixture_dir(), ".pickle")) paths.push_back(fixture_dir() + "/" + name + ".pickle");
    return paths;
}

// A random trace as bench/reuse-sim.sh makes them: sizes log-uniform from
// 1 KiB to 64 MiB, random frees, 4 streams.
std::string random_trace(unsigned seed, int events) {
    char name[] = "/tmp/gpumem-tune-speed-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::ofstream out(name);
    out << "action,id,size,stream,tag\n";
    std::vector<int> live;
    int next = 1;
    for (int i = 0; i < events; ++i) {
        if (live.size() < 50 || (live.size() < 300 && u(rng) < 0.5)) {
            const auto size = static_cast<std::uint64_t>(std::exp(std::log(1024.0) + u(rng) * (std::log(64.0 * kMiB) - std::log(1024.0))));
            out << "alloc," << next << "," << size << "," << static_cast<int>(u(rng) * 4) << ",\n";
            live.push_back(next++);
        } else {
            const std::size_t k = static_cast<std::size_t>(u(rng) * static_cast<double>(live.size()));
            std::swap(live[k], live.back());
            out << "free," << live.back() << ",,,\n";
            live.pop_back();
        }
    }
    return name;
}

struct Tuned {
    std::map<std::string, rs::TuneOutcome> rows;
    rs::CapacitySearch search;
    std::uint64_t lanes = 0;
};

Tuned tune(const std::string& path, std::uint64_t capacity, unsigned threads, bool skip) {
    TuneRequest q;
    q.setup.strategies = {&rs::kStrategies.row("torch-caching")};
    q.setup.capacity = capacity;
    q.grid.axes = rs::grid_axes({}, true, capacity != rs::kUnlimited);
    q.grid.threads = threads;
    q.grid.skip_equivalent = skip;
    const rs::CostTable table = rs::default_cost_table();
    const rs::CostModel costs(table);
    std::unique_ptr<rs::EventSource> source = rs::open_trace(path, rs::TraceFormat::automatic, true);
    TuneResults r;
    r.strategy_options = q.setup.strategy_options;
    tune_replays(q, *source, costs, r);
    Tuned t;
    for (const rs::TuneRow& row : r.ranking->rows) t.rows[rs::alloc_conf(row.point.options)] = row.outcome;
    t.search = r.ranking->search;
    t.lanes = r.ranking->lanes_replayed;
    return t;
}

void check_same(const Tuned& a, const Tuned& b) {
    REQUIRE(a.rows.size() == b.rows.size());
    for (const auto& entry : a.rows) {  // no structured binding: clang 14 cannot capture one in CAPTURE's lambda
        const std::string& conf = entry.first;
        const rs::TuneOutcome& x = entry.second;
        CAPTURE(conf);
        const rs::TuneOutcome& y = b.rows.at(conf);
        CHECK(x.peak_reserved == y.peak_reserved);
        CHECK(x.ooms == y.ooms);
        CHECK(x.retries == y.retries);
        CHECK(x.device_allocs == y.device_allocs);
        CHECK(x.device_frees == y.device_frees);
        CHECK(x.modelled_us == y.modelled_us);
        CHECK(x.first_oom_event == y.first_oom_event);
    }
    CHECK(a.search.smallest == b.search.smallest);
    CHECK(a.search.resolution == b.search.resolution);
    CHECK(a.search.replays == b.search.replays);
    CHECK(a.search.not_searched == b.search.not_searched);
}

}  // namespace

TEST_CASE("tune speed: skipped settings and threads give every row a full one-thread replay gives (recordings, capped)") {
    const std::vector<std::string> paths = fixtures();
    REQUIRE(paths.size() >= 10);
    std::uint64_t skipped = 0;
    for (const std::string& path : paths) {
        CAPTURE(path);
        // A cap below the recording's own peak, so that settings fail, are collected and retried.
        const Tuned uncapped = tune(path, rs::kUnlimited, 1, false);
        std::uint64_t peak = 0;
        for (const auto& [conf, o] : uncapped.rows) peak = std::max(peak, o.peak_reserved);
        for (const std::uint64_t capacity : {rs::kUnlimited, std::max<std::uint64_t>(peak * 3 / 4, 4 * kMiB)}) {
            CAPTURE(capacity);
            const Tuned full = capacity == rs::kUnlimited ? uncapped : tune(path, capacity, 1, false);
            const Tuned fast = tune(path, capacity, 3, true);
            check_same(full, fast);
            skipped += full.lanes - fast.lanes;
        }
    }
    CHECK(skipped > 0);  // the rules applied somewhere
}

TEST_CASE("tune speed: random 4-stream traces, skipped settings and threads alike") {
    for (const unsigned seed : {1U, 2U, 3U}) {
        CAPTURE(seed);
        const std::string path = random_trace(seed, 4000);
        for (const std::uint64_t capacity : {rs::kUnlimited, std::uint64_t{2} << 30, std::uint64_t{5} << 29}) {
            CAPTURE(capacity);
            const Tuned full = tune(path, capacity, 1, false);
            const Tuned fast = tune(path, capacity, 2, true);
            check_same(full, fast);
            // Sizes up to 64 MiB: max_split_size 128 and 512 are no limit without expandable segments.
            CHECK(fast.lanes < full.lanes);
        }
        std::remove(path.c_str());
    }
}

TEST_CASE("tune speed: equivalence rules, each on its own") {
    std::vector<rs::GridPoint> points(6);
    points[1].options.max_split_size = 128 * kMiB;           // above every segment: no limit
    points[2].options.max_split_size = 20 * kMiB;            // below the 64 MiB segment: a limit
    points[3].options.roundup_power2_divisions.fill(1);      // one division rounds like none
    points[4].options.expandable_segments = true;
    points[5].options.expandable_segments = true;
    points[5].options.garbage_collection_threshold = 0.8;    // frees nothing under expandable segments
    const std::vector<std::uint64_t> sizes = {1000, 3 * kMiB + 7, 64 * kMiB};
    const std::vector<std::size_t> same = rs::equivalent_points(points, sizes);
    CHECK(same == std::vector<std::size_t>{0, 0, 2, 0, 4, 4});
    // Divisions of 4 round 3 MiB + 7 otherwise: a setting of its own.
    points[3].options.roundup_power2_divisions.fill(4);
    CHECK(rs::equivalent_points(points, sizes)[3] == 3);
    // Without requests that reach the divided sizes it is the default again.
    CHECK(rs::equivalent_points(points, {1000, 2048})[3] == 0);
}

TEST_CASE("tune speed: bisection probes, the midpoint first, to a MiB") {
    CHECK(rs::bisection_midpoint(0, 8 * kMiB) == 4 * kMiB);
    CHECK(rs::bisection_midpoint(4 * kMiB, 5 * kMiB) == std::nullopt);
    CHECK(rs::bisection_midpoint(4 * kMiB - 1, 5 * kMiB) == 4 * kMiB);
    CHECK(rs::bisection_probes(0, 8 * kMiB, 1) == std::vector<std::uint64_t>{4 * kMiB});
    CHECK(rs::bisection_probes(0, 8 * kMiB, 3) == std::vector<std::uint64_t>{4 * kMiB, 2 * kMiB, 6 * kMiB});
    CHECK(rs::bisection_probes(0, 2 * kMiB, 8) == std::vector<std::uint64_t>{kMiB});
}

namespace {
// An input that never ends: an alloc and its free, over and over.
class EndlessSource final : public rs::EventSource {
public:
    bool next(rs::Event& e) override {
        e = rs::Event{};
        e.kind = (count_ % 2 == 0) ? rs::EventKind::alloc : rs::EventKind::free;
        e.id = count_ / 2;
        e.size = 4096;
        e.line = ++count_;
        return true;
    }
    std::string location(std::uint64_t line) const override { return "endless, event " + std::to_string(line); }
    std::string description() const override { return "endless"; }
    std::string format() const override { return "generated"; }
    bool rewind() override { return false; }
    std::uint64_t count_ = 0;
};
}  // namespace

TEST_CASE("tune: an input that never ends is refused at the limit of what --tune holds in memory") {
    EndlessSource endless;
    std::string message;
    try {
        const rs::LoadedTrace trace(endless, {}, 1000);
    } catch (const UsageError& e) {
        message = e.what();
    }
    CHECK(message.find("endless: more than 1000 events") != std::string::npos);
    CHECK(message.find("the limit of what reuse-sim tune holds in memory") != std::string::npos);
    CHECK(endless.count_ == 1001);  // read one past the limit, no further
    CHECK(rs::LoadedTrace::kMaxLoadedEvents == 100'000'000);
}

// The one pool of threads (reuse_sim/work_pool.hpp) under tune's lanes and
// max-batch's modelled traces: each item once, whatever the threads; after
// an error no item starts and a long one stops through its WorkStop; the
// error rethrown is the first by index, not the first in time.
TEST_CASE("work pool: every item once; the first error by index; the others stop") {
    for (const unsigned threads : {1U, 2U, 8U}) {
        CAPTURE(threads);
        std::vector<int> done(100, 0);
        rs::run_parallel(done.size(), threads, [&](std::size_t i, const rs::WorkStop&) { ++done[i]; });
        CHECK(std::all_of(done.begin(), done.end(), [](int n) { return n == 1; }));
        rs::run_parallel(0, threads, [](std::size_t, const rs::WorkStop&) { FAIL("no item"); });
    }
    // Item 3 fails at once, item 1 later: item 1's error is the one rethrown;
    // item 0, a long one, stops early through its WorkStop.
    std::atomic<bool> zero_stopped{false};
    std::atomic<int> started{0};
    const auto work = [&](std::size_t i, const rs::WorkStop& stop) {
        ++started;
        if (i == 0) {
            for (int n = 0; n < 10000; ++n) {
                if (stop.requested()) zero_stopped = true;
                stop.throw_if_requested();
                ::usleep(1000);
            }
        }
        if (i == 1) {
            ::usleep(50 * 1000);
            throw std::runtime_error("item 1");
        }
        if (i == 3) throw std::runtime_error("item 3");
        // The rest take a moment, as real items do: instant ones let the
        // other threads start all 1000 before item 3's error reaches the
        // pool on a loaded machine (seen in CI), and the check below would
        // test the scheduler, not the pool.
        if (i > 3) ::usleep(1000);
    };
    CHECK_THROWS_WITH(rs::run_parallel(1000, 4, work), "item 1");
    CHECK(zero_stopped);
    CHECK(started < 1000);
}
