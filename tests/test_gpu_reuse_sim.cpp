// GPU suite for `reuse-sim replay --execute`: replaying for real gives the same
// upstream call counts as the simulation, and every byte goes back, also when
// the replay is interrupted.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "memory_levels.hpp"
#include "bench/cuda_upstream.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "reuse_sim/simulator.hpp"
#include "reuse_sim/workloads.hpp"

namespace rs = gpumem::reuse_sim;

namespace {

constexpr std::uint64_t MiB = 1 << 20;

std::uint64_t device_free() { return rs::cuda_device_memory(gpumem::DeviceId(0)).free_bytes; }

std::int64_t difference(std::uint64_t a, std::uint64_t b) { return static_cast<std::int64_t>(a) - static_cast<std::int64_t>(b); }

}  // namespace

TEST_CASE("gpu reuse-sim replay --execute: real CUDA call counts equal the simulated ones") {
    const auto r = run_gpumem({"reuse-sim", "replay", "--execute", "--strategy", "naive,pool,async-pool,torch-caching,grow-only",
                               "--zero-fill", "--workload", "dynamic", "--steps", "40", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["execute"]["verified"] == true);
    REQUIRE(doc["execute"]["runs"].size() == 5);
    for (const auto& run : doc["execute"]["runs"]) {
        CAPTURE(run.dump());
        CHECK(run["counts_agree"] == true);
        CHECK(run["measured_ms"].get<double>() > 0);
    }
    for (const auto& row : doc["strategies"]) CHECK(row["measured_ms"].is_number());
    // The process freed what it replayed before it looked at free memory again.
    CHECK(std::llabs(difference(doc["execute"]["free_bytes_before"], doc["execute"]["free_bytes_after"])) <= 64 * MiB);
}

TEST_CASE("gpu reuse-sim: the CUDA upstream matches the simulation and frees everything") {
    const std::uint64_t before = device_free();  // after the context exists
    rs::CostModel costs(rs::default_cost_table());
    rs::WorkloadOptions w;
    w.name = "training";
    w.steps = 6;
    w.streams = 2;
    for (const char* name : {"naive", "pool", "async-pool", "torch-caching", "binning"}) {
        const std::string strategy = name;
        const rs::StrategySpec& kind = rs::kStrategies.row(strategy).value;
        CAPTURE(strategy);
        rs::StrategyOptions o;
        o.bin_blocks = 8;
        auto source = rs::make_workload(w);
        rs::Lane sim(strategy, std::make_unique<rs::SimulatedUpstream>(rs::kUnlimited, &costs));
        sim.strategy = rs::make_strategy(kind, o, *sim.upstream);
        rs::Replay(std::vector<rs::Lane*>{&sim}, {}).run(*source);
        REQUIRE(source->rewind());
        {
            rs::Lane real(strategy, rs::make_cuda_upstream(gpumem::DeviceId(0), rs::kUnlimited, &costs));
            real.strategy = rs::make_strategy(kind, o, *real.upstream);
            rs::Replay replay(std::vector<rs::Lane*>{&real}, {});
            replay.run(*source);
            const auto& s = sim.upstream->counters();
            const auto& c = real.upstream->counters();
            CHECK(c.device_allocs == s.device_allocs);
            CHECK(c.device_frees == s.device_frees);
            CHECK(c.async_allocs == s.async_allocs);
            CHECK(c.async_frees == s.async_frees);
            CHECK(c.synchronizations == s.synchronizations);
            CHECK(c.measured_us > 0);
            replay.teardown();
        }
        CHECK_MEMORY_LEVEL(std::llabs(difference(before, device_free())) <= static_cast<long long>(64 * MiB));
    }
}

TEST_CASE("gpu reuse-sim: an interrupted real replay still frees everything") {
    const std::uint64_t before = device_free();
    rs::WorkloadOptions w;
    w.name = "training";
    w.steps = 50;
    auto source = rs::make_workload(w);
    {
        rs::Lane real("naive", rs::make_cuda_upstream(gpumem::DeviceId(0), rs::kUnlimited, nullptr));
        real.strategy = rs::make_strategy(rs::kStrategies.parse("naive"), {}, *real.upstream);
        rs::ReplayOptions o;
        o.poll = [] { gpumem::throw_if_interrupted(); };
        o.poll_interval = 40;  // some allocations are live when the "Ctrl-C" lands
        gpumem::request_interrupt_for_testing(SIGINT);
        CHECK_THROWS_AS(rs::Replay(std::vector<rs::Lane*>{&real}, o).run(*source), gpumem::InterruptedError);
        gpumem::request_interrupt_for_testing(0);
        CHECK(real.upstream->counters().reserved_bytes > 0);
    }
    CHECK_MEMORY_LEVEL(std::llabs(difference(before, device_free())) <= static_cast<long long>(64 * MiB));
}
