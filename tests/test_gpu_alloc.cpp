// GPU suite for `gpumem alloc-test` (runs on the device machine). Every mode
// runs through the binary and must leave the device's free memory where it
// was once the process has exited; the core functions run in this process
// too, where cudaMemGetInfo before and after shows that their RAII owners
// free everything while the context lives on.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "bench/alloc_apis.hpp"
#include "bench/alloc_modes.hpp"
#include "cli_harness.hpp"
#include "memory_levels.hpp"

using namespace gpumem;
using Json = nlohmann::json;

namespace {

constexpr std::uint64_t MiB = 1ULL << 20;
constexpr std::uint64_t GiB = 1ULL << 30;
// Free memory may differ by a few large pages between two readings with
// nothing allocated (driver bookkeeping); anything leaked is far larger.
constexpr std::uint64_t kFreeSlack = 16 * MiB;
// The documented margin of `max` (man page, ALLOC-TEST): what can be
// obtained lies within max(1% of total, 512 MiB) of cudaMemGetInfo's free.
std::uint64_t max_margin(std::uint64_t total) { return std::max<std::uint64_t>(total / 100, 512 * MiB); }

std::uint64_t free_now(int device = 0) {
    cudaSetDevice(device);
    std::size_t free = 0, total = 0;
    REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
    return free;
}

std::uint64_t total_memory(int device = 0) {
    cudaSetDevice(device);
    std::size_t free = 0, total = 0;
    REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
    return total;
}

std::int64_t diff(std::uint64_t a, std::uint64_t b) { return static_cast<std::int64_t>(a) - static_cast<std::int64_t>(b); }

// Used memory of device 0 as `gpumem info` (NVML) reports it, in bytes.
std::uint64_t info_used() {
    const RunResult r = run_gpumem({"info", "--query", "used", "--format", "value", "-d", "0"});
    REQUIRE(r.status == 0);
    return std::stoull(r.out);
}

Json parse_json(const RunResult& r) {
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    Json doc;
    REQUIRE_NOTHROW(doc = Json::parse(r.out));
    return doc;
}

// Asserts that free memory is back where it was before a child ran.
void check_freed(std::uint64_t before, const char* what) {
    const std::uint64_t after = free_now();
    INFO(what << ": free before " << before << ", after " << after);
    CHECK(std::llabs(diff(after, before)) <= static_cast<long long>(kFreeSlack));
}

int device_count() {
    int n = 0;
    cudaGetDeviceCount(&n);
    return n;
}

}  // namespace

// ---------------------------------------------------------------------------
// Through the binary

TEST_CASE("gpu alloc-test latency: every API runs, the sync probe answers, everything is freed") {
    const std::uint64_t before = free_now();
    const RunResult r = run_gpumem({"alloc-test", "latency", "--api", "all", "--sizes", "4KiB,2MiB,64MiB", "--iterations",
                                    "5", "--json"});
    REQUIRE(r.status == 0);
    const Json doc = parse_json(r);
    const Json& rows = doc["latency"];
    REQUIRE(rows.size() == 9 * 3);
    for (const Json& row : rows) {
        INFO(row.dump());
        CHECK(row["iterations"] == 5);
        CHECK(row["alloc_p50_us"].get<double>() > 0);
        CHECK(row["free_p50_us"].get<double>() > 0);
        CHECK(row["alloc_p50_us"].get<double>() <= row["alloc_p90_us"].get<double>());
        CHECK(row["alloc_p90_us"].get<double>() <= row["alloc_p99_us"].get<double>());
        CHECK(row["alloc_p99_us"].get<double>() <= row["alloc_max_us"].get<double>());
        CHECK(row["allocated"].get<std::uint64_t>() >= row["size"].get<std::uint64_t>());
        if (row["api"] == "vmm") CHECK(row["allocated"].get<std::uint64_t>() % (2 * MiB) == 0);
        if (row["api"] == "device") {
            // Known behaviour of cudaMalloc/cudaFree (REFERENCE.md section 3):
            // the free waits for a kernel on another stream, the allocation does not.
            CHECK(row["free_syncs"] == true);
            CHECK(row["alloc_syncs"] == false);
        }
    }
    check_freed(before, "latency --api all");
}

TEST_CASE("gpu alloc-test latency --save-costs writes a cost table that parses") {
    const std::string path = "/tmp/gpumem-test-costs.json";
    std::remove(path.c_str());
    const RunResult r = run_gpumem({"alloc-test", "latency", "--api", "device,async,async-pool,host", "--sizes",
                                    "4KiB,1MiB,16MiB", "--iterations", "5", "--no-sync-probe", "--save-costs", path});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("cost table written to") != std::string::npos);
    const std::string text = slurp(path);
    std::vector<std::string> missing;
    const reuse_sim::CostTable table = reuse_sim::parse_cost_table(text, path, &missing);  // reuse-sim accepts it
    CHECK(!table.device.empty());
    for (const char* api : {"device", "async_grow", "async", "host"}) {
        CAPTURE(api);
        const reuse_sim::CostCurve* alloc = table.find(api, "alloc");
        REQUIRE(alloc != nullptr);
        REQUIRE(alloc->points.size() == 3);
        CHECK(alloc->points[0].bytes == 4096);
        CHECK(alloc->points[2].bytes == 16 * MiB);
        for (const auto& p : alloc->points) CHECK(p.median_us > 0);
    }
    const Json doc = Json::parse(text);
    CHECK(doc["kind"] == "gpumem-cost-table");
    // reuse-sim's API names (src/reuse_sim/cost_table.hpp on branch reusesim).
    for (const char* api : {"device", "async_grow", "async", "host"}) CHECK(doc["apis"].contains(api));
    // A pool hit costs far less than growing the pool and releasing it again.
    CHECK(doc["apis"]["async"]["alloc"][0]["median_us"].get<double>() <
          doc["apis"]["async_grow"]["alloc"][0]["median_us"].get<double>());
    std::remove(path.c_str());
}

TEST_CASE("gpu alloc-test max agrees with free memory within the documented margin") {
    const std::uint64_t before = free_now();
    const RunResult r = run_gpumem({"alloc-test", "max", "--json"});
    REQUIRE(r.status == 0);
    const Json row = parse_json(r)["max"][0];
    INFO(row.dump());
    const std::uint64_t free = row["free"], total = row["total"], largest = row["largest_single"],
                        obtainable = row["obtainable"];
    CHECK(total == total_memory());
    CHECK(largest % (2 * MiB) == 0);
    CHECK(largest <= free + 2 * MiB);
    CHECK(largest + max_margin(total) >= free);
    CHECK(obtainable <= free + 2 * MiB);
    CHECK(obtainable + max_margin(total) >= free);
    CHECK(row["chunks"].get<std::uint64_t>() == obtainable / GiB);
    check_freed(before, "max");
}

TEST_CASE("gpu alloc-test fill 95% --verify passes and frees") {
    const std::uint64_t before = free_now();
    const RunResult r = run_gpumem({"alloc-test", "fill", "95%", "--verify", "--json"});
    REQUIRE(r.status == 0);
    const Json row = parse_json(r)["fill"][0];
    INFO(row.dump());
    CHECK(row["result"] == "ok");
    CHECK(row["mismatched_words"] == 0);
    const std::uint64_t free = row["free"], allocated = row["allocated"];
    CHECK(allocated <= free * 95 / 100);
    CHECK(allocated + 4 * MiB >= free * 95 / 100);
    CHECK(row["bytes_written"].get<std::uint64_t>() == 5 * (allocated / 8 * 8));  // all five patterns
    CHECK(row["bytes_read"] == row["bytes_written"]);
    CHECK(row["gbps"].get<double>() > 100);  // any HBM GPU writes and reads far faster
    check_freed(before, "fill 95%");
}

TEST_CASE("gpu alloc-test fill of twice the free memory exits 5, says how far it got and frees everything") {
    const std::uint64_t before = free_now();
    // Twice the free memory in bytes (a percentage above 100% is a usage error).
    const RunResult r = run_gpumem({"alloc-test", "fill", std::to_string(2 * before), "--json"});
    CHECK(r.status == 5);
    CHECK(r.stderr_lines() == 1);
    CHECK(r.err.find("all of it was freed") != std::string::npos);
    const Json doc = parse_json(r);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"].is_string());
    const std::uint64_t got = doc["allocation_failure"]["allocated_before_failure"];
    CHECK(got > 0);
    CHECK(got <= before);
    check_freed(before, "fill of twice the free memory");
}

TEST_CASE("gpu alloc-test fill: a corrupted word is caught, exit 4 with its address") {
    const RunResult r = run_gpumem({"alloc-test", "fill", "256MiB", "--verify", "--pattern", "random,zeros",
                                    "--debug-corrupt-word", "1000", "--json"});
    CHECK(r.status == 4);
    CHECK(r.stderr_lines() == 1);
    CHECK(r.err.find("read back wrong") != std::string::npos);
    const Json doc = parse_json(r);
    CHECK(doc["fill"][0]["mismatched_words"] == 1);  // only the first pattern is corrupted
    REQUIRE(doc["mismatches"].size() == 1);
    const Json& m = doc["mismatches"][0];
    CHECK(m["pattern"] == "random");
    CHECK(m["chunk"] == 0);
    CHECK(m["offset"] == 8000);
    CHECK(r.err.find(m["address"].get<std::string>()) != std::string::npos);
    // The word read back is the inverse of the expected one.
    CHECK(~std::stoull(m["expected"].get<std::string>(), nullptr, 16) == std::stoull(m["actual"].get<std::string>(), nullptr, 16));
}

TEST_CASE("gpu alloc-test fill without the hook passes every pattern") {
    const RunResult r = run_gpumem({"alloc-test", "fill", "1GiB", "--chunk", "256MiB", "--verify", "--passes", "2", "--csv"});
    CHECK(r.status == 0);
    CHECK(r.out.find(",ok") != std::string::npos);
}

TEST_CASE("gpu alloc-test churn: direct and through MixMemory") {
    const std::uint64_t before = free_now();
    for (const char* api : {"device", "async", "async-pool", "vmm", "host"}) {
        const RunResult r = run_gpumem({"alloc-test", "churn", "--api", api, "--ops", "600", "--sizes", "4KiB..16MiB", "--json"});
        REQUIRE(r.status == 0);
        const Json row = parse_json(r)["churn"][0];
        INFO(api << ": " << row.dump());
        CHECK(row["ops"] == 600);
        CHECK(row["allocations"].get<std::uint64_t>() + row["failures"].get<std::uint64_t>() +
                  row["frees"].get<std::uint64_t>() ==
              600);
        CHECK(row["failures"] == 0);
        CHECK(row["frees"].get<std::uint64_t>() <= row["allocations"].get<std::uint64_t>());
        CHECK(row["peak_live"].get<std::uint64_t>() > 0);
        if (std::string(api) != "host") CHECK(row["peak_used"].get<std::uint64_t>() > 0);
    }
    const RunResult m = run_gpumem({"alloc-test", "churn", "--via", "mixmemory", "--slots", "3", "--growth", "x2", "--ops",
                                    "1000", "--json"});
    REQUIRE(m.status == 0);
    const Json row = parse_json(m)["churn"][0];
    INFO(row.dump());
    CHECK(row["allocations"].get<std::uint64_t>() + row["reuses"].get<std::uint64_t>() == 1000);
    CHECK(row["reuses"].get<std::uint64_t>() > row["allocations"].get<std::uint64_t>());  // grow-only reuses most requests
    CHECK(row["peak_live"].get<std::uint64_t>() <= 3 * 2 * (64 * MiB));  // three slots, at most twice the largest size
    check_freed(before, "churn");
}

TEST_CASE("gpu alloc-test churn is repeatable for a seed") {
    auto run = [](const char* seed) {
        const RunResult r = run_gpumem({"alloc-test", "churn", "--ops", "400", "--seed", seed, "--json"});
        REQUIRE(r.status == 0);
        const Json row = parse_json(r)["churn"][0];
        return std::vector<std::uint64_t>{row["allocations"], row["frees"], row["bytes_allocated"], row["peak_live"]};
    };
    CHECK(run("7") == run("7"));
    CHECK(run("7") != run("8"));
}

TEST_CASE("gpu alloc-test hold: ready line, visible in gpumem info, frees on SIGTERM") {
    const std::uint64_t used_before = info_used();
    const std::uint64_t free_before = free_now();
    Started hold = start_gpumem({"alloc-test", "hold", "4GiB"}, {}, /*stdout_pipe=*/true);
    const std::string ready = hold.read_line(60);
    INFO("ready line: " << ready << "\nstderr: " << hold.err());
    REQUIRE(ready.rfind("ready: held 4 GiB on device 0 (GPU-", 0) == 0);
    const std::uint64_t used_held = info_used();
    CHECK(used_held >= used_before + 4 * GiB);
    hold.signal(SIGTERM);
    CHECK(hold.wait_within(30) == 130);
    const std::string rest = hold.read_rest();
    CHECK(rest.find("signal") != std::string::npos);
    CHECK(hold.err().find("interrupted") != std::string::npos);
    check_freed(free_before, "hold after SIGTERM");
    const std::uint64_t used_after = info_used();
    CHECK(std::llabs(diff(used_after, used_before)) <= static_cast<long long>(kFreeSlack));
}

TEST_CASE("gpu alloc-test hold --json: a ready event, then the final document; --duration ends with 0") {
    Started hold = start_gpumem({"alloc-test", "hold", "1GiB", "--duration", "1s", "--json"}, {}, /*stdout_pipe=*/true);
    const std::string event_line = hold.read_line(60);
    Json event;
    REQUIRE_NOTHROW(event = Json::parse(event_line));
    CHECK(event["event"] == "ready");
    CHECK(event["held"] == GiB);
    CHECK(event["devices"][0]["uuid"].get<std::string>().rfind("GPU-", 0) == 0);
    CHECK(hold.wait_within(30) == 0);
    const std::string rest = hold.read_rest();
    CHECK(std::count(rest.begin(), rest.end(), '\n') == 1);  // JSON Lines: one more line
    const Json doc = Json::parse(rest);
    CHECK(doc["ok"] == true);
    CHECK(doc["hold"][0]["ended"] == "duration");
    CHECK(doc["hold"][0]["held_seconds"].get<double>() >= 0.95);
}

TEST_CASE("gpu alloc-test hold: a closed stdout ends it quietly at the ready line, by SIGPIPE") {
    for (const char* format : {"--format=table", "--json"}) {
        CAPTURE(format);
        const auto t0 = std::chrono::steady_clock::now();
        const RunResult r = run_gpumem_to(StdoutTo::closed_pipe(), {"alloc-test", "hold", "1GiB", "--duration", "20s", format});
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        CHECK(r.status == 128 + SIGPIPE);
        CHECK(r.err.empty());
        CHECK(seconds < 15);  // the ready line's write ended it, not the duration
    }
}

TEST_CASE("gpu alloc-test fill stops on SIGINT with exit 130 and frees") {
    const std::uint64_t before = free_now();
    Started fill = start_gpumem({"alloc-test", "fill", "2GiB", "--verify", "--passes", "1000000"}, {}, /*stdout_pipe=*/true);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    fill.signal(SIGINT);
    CHECK(fill.wait_within(20) == 130);
    check_freed(before, "fill after SIGINT");
}

TEST_CASE("gpu alloc-test -d all runs every device") {
    const RunResult r = run_gpumem({"alloc-test", "fill", "512MiB", "--verify", "-d", "all", "--json"});
    REQUIRE(r.status == 0);
    const Json doc = parse_json(r);
    CHECK(doc["fill"].size() == static_cast<std::size_t>(device_count()));
    for (const Json& row : doc["fill"]) CHECK(row["result"] == "ok");
}

// ---------------------------------------------------------------------------
// In this process: the owners free while the context lives on

TEST_CASE("gpu ApiAllocation: each API allocates, and frees on reset") {
    ensure_context(DeviceId(0));
    for (AllocApi api : all_alloc_apis()) {
        INFO(alloc_api_name(api));
        const std::uint64_t before = free_now();
        {
            AllocResources resources(DeviceId(0), {api});
            ApiAllocation a(api, DeviceId(0), 64 * MiB, resources.stream(), resources.pool());
            CHECK(a.data() != nullptr);
            CHECK(a.size() >= 64 * MiB);
            // Memory that really is on the device shows in cudaMemGetInfo
            // (managed memory only once touched).
            if (alloc_api_uses_device_memory(api) && api != AllocApi::managed) CHECK(free_now() + 60 * MiB <= before);
            ApiAllocation moved = std::move(a);
            CHECK_FALSE(static_cast<bool>(a));
            CHECK(static_cast<bool>(moved));
        }
        CHECK_MEMORY_LEVEL(std::llabs(diff(free_now(), before)) <= static_cast<long long>(kFreeSlack));
    }
    // VMM memory is usable by kernels: fill and verify it.
    CudaStream stream(DeviceId(0));
    ApiAllocation v(AllocApi::vmm, DeviceId(0), 4 * MiB, stream.get());
    DeviceAllocation result(DeviceId(0), sizeof(VerifyResult));
    launch_fill_pattern(v.data(), v.size() / 8, Pattern::address, 1, stream.get());
    reset_verify_result(static_cast<VerifyResult*>(result.data()), stream.get());
    launch_verify_pattern(v.data(), v.size() / 8, Pattern::address, 1, static_cast<VerifyResult*>(result.data()), stream.get());
    VerifyResult host{};
    REQUIRE(cudaMemcpyAsync(&host, result.data(), sizeof host, cudaMemcpyDeviceToHost, stream.get()) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
    CHECK(host.mismatches == 0);
}

TEST_CASE("gpu alloc-test core: the modes leave free memory unchanged in-process") {
    ensure_context(DeviceId(0));
    StopToken stop;
    const std::uint64_t before = free_now();

    LatencyOptions lo;
    lo.apis = all_alloc_apis();
    lo.sizes = {4096, 8 * MiB};
    lo.iterations = 3;
    const LatencyResult lr = run_latency(DeviceId(0), lo, stop);
    CHECK(lr.rows.size() == 18);
    CHECK(lr.sync.size() == 9);
    CHECK_MEMORY_LEVEL(std::llabs(diff(free_now(), before)) <= static_cast<long long>(kFreeSlack));

    MaxResult mr = run_max(DeviceId(0), MaxOptions{}, stop);
    CHECK(mr.chunks.total() > 0);
    CHECK_MEMORY_LEVEL(std::llabs(diff(free_now(), before)) <= static_cast<long long>(kFreeSlack));

    FillOptions fo;
    fo.total = parse_size_spec("1GiB", {false, true});
    fo.chunk = 300 * MiB + 8;  // a chunk that is no multiple of the page size
    fo.verify = true;
    fo.patterns = all_patterns();
    const FillResult fr = run_fill(DeviceId(0), fo, stop);
    CHECK(fr.allocated == GiB);
    CHECK(fr.chunks == 4);
    CHECK(fr.mismatched_words == 0);
    CHECK_MEMORY_LEVEL(std::llabs(diff(free_now(), before)) <= static_cast<long long>(kFreeSlack));

    for (auto via : {ChurnOptions::Via::direct, ChurnOptions::Via::mixmemory}) {
        ChurnOptions co;
        co.via = via;
        co.sizes = parse_size_range("4KiB..32MiB");
        co.ops = 500;
        co.max_live = parse_size_spec("1GiB", {false, true});
        const ChurnResult cr = run_churn(DeviceId(0), co, stop);
        CHECK(cr.ops == 500);
        CHECK(cr.failures == 0);
        CHECK_MEMORY_LEVEL(std::llabs(diff(free_now(), before)) <= static_cast<long long>(kFreeSlack));
    }

    {
        HeldMemory held = allocate_held(DeviceId(0), parse_size_spec("2GiB", {false, true}), GiB, stop);
        CHECK(held.bytes == 2 * GiB);
        CHECK(free_now() + 2 * GiB <= before + kFreeSlack);
    }
    CHECK_MEMORY_LEVEL(std::llabs(diff(free_now(), before)) <= static_cast<long long>(kFreeSlack));

    // A failing chunked allocation frees what it got before throwing.
    try {
        allocate_chunks(DeviceId(0), 4 * total_memory(), GiB, stop);
        FAIL("allocation of four times the device's memory succeeded");
    } catch (const PartialAllocationError& e) {
        CHECK(e.allocated_bytes() > 0);
        CHECK(e.status() == ExitStatus::out_of_memory);
    }
    CHECK_MEMORY_LEVEL(std::llabs(diff(free_now(), before)) <= static_cast<long long>(kFreeSlack));
}

TEST_CASE("gpu alloc-test core: managed memory beyond free memory is refused, not asked for") {
    ensure_context(DeviceId(0));
    CHECK_THROWS_AS(check_managed_fits(DeviceId(0), free_now()), OutOfMemoryError);
    CHECK_NOTHROW(check_managed_fits(DeviceId(0), 64 * MiB));
}
