// `gpumem reuse-sim` from the command line: runs without a GPU or driver,
// one JSON document, exit statuses and one-line errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace {

struct TraceFile {
    std::string path;
    explicit TraceFile(const std::string& text, const std::string& suffix = ".csv") {
        char name[] = "/tmp/gpumem-cli-trace-XXXXXX";
        const int fd = mkstemp(name);
        close(fd);
        path = std::string(name) + suffix;
        std::rename(name, path.c_str());
        std::ofstream(path) << text;
    }
    ~TraceFile() { std::remove(path.c_str()); }
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("cli reuse-sim: no arguments compares every strategy, without a GPU") {
    // No device is visible: plain reuse-sim must not need one.
    const auto r = run_gpumem({"reuse-sim"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    for (const char* name : {"naive", "grow-only", "shape-persistent", "ring", "pool", "binning", "torch-caching", "async-pool"})
        CHECK(has(r.out, name));
    CHECK(has(r.out, "*"));  // best values marked
    CHECK(has(r.out, "Reserved bytes over events"));
}

TEST_CASE("cli reuse-sim: --json is one document with numbers as numbers") {
    const auto r = run_gpumem({"reuse-sim", "--json", "--workload", "training", "--steps", "5", "--no-chart"});
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["command"] == "reuse-sim");
    CHECK(doc["ok"] == true);
    REQUIRE(doc["strategies"].size() == 8);
    for (const auto& row : doc["strategies"]) {
        CHECK(row["requests"].is_number_unsigned());
        CHECK(row["peak_reserved"].is_number_unsigned());
        CHECK(row["hit_rate"].is_number());
    }
    CHECK(doc["events"].get<std::uint64_t>() > 0);
    CHECK(doc["details"]["torch-caching"].contains("num_device_alloc"));
}

TEST_CASE("cli reuse-sim: a trace file, --csv and --timeline") {
    TraceFile trace("action,id,size,stream,tag\nalloc,1,4096,0,a\nalloc,2,8192,0,b\nfree,1,,,\nfree,2,,,\nalloc,3,4096,0,a\nfree,3,,,\n");
    TraceFile timeline("", ".timeline.csv");
    const auto r = run_gpumem({"reuse-sim", "--trace", trace.path, "--strategy", "naive,grow-only", "--csv", "--timeline", timeline.path});
    REQUIRE(r.status == 0);
    CHECK(r.out.rfind("strategy,requests,upstream_allocs,", 0) == 0);
    CHECK(has(r.out, "\nnaive,3,3,3,"));
    CHECK(has(r.out, "\ngrow-only,3,2,0,"));
    std::ifstream in(timeline.path);
    std::string header;
    std::getline(in, header);
    CHECK(header == "event,live_bytes,naive,grow-only");
}

TEST_CASE("cli reuse-sim: a malformed trace exits 2 with one line on stderr naming file and line") {
    TraceFile trace("action,id,size,stream,tag\nalloc,1,4096,0,\nalloc,2,lots,0,\n");
    const auto r = run_gpumem({"reuse-sim", "--trace", trace.path});
    CHECK(r.status == 2);
    CHECK(r.stderr_lines() == 1);
    CHECK(has(r.err, trace.path + ":3: size"));
    CHECK(r.out.empty());
    const auto j = run_gpumem({"reuse-sim", "--trace", trace.path, "--json"});
    CHECK(j.status == 2);
    const auto doc = nlohmann::json::parse(j.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"] == "usage_error");
}

TEST_CASE("cli reuse-sim: usage errors") {
    CHECK(run_gpumem({"reuse-sim", "--strategy", "nope"}).status == 2);
    CHECK(run_gpumem({"reuse-sim", "--trace", "/nonexistent.csv"}).status == 2);
    CHECK(run_gpumem({"reuse-sim", "--trace", "x.csv", "--workload", "training"}).status == 2);
    CHECK(run_gpumem({"reuse-sim", "--capacity", "lots"}).status == 2);
    CHECK(run_gpumem({"reuse-sim", "--max-split-size", "1MiB"}).status == 2);  // PyTorch needs >= 20 MiB
    const auto d = run_gpumem({"reuse-sim", "-d", "0"});
    CHECK(d.status == 2);  // -d only means something with --execute
    CHECK(d.stderr_lines() == 1);
    TraceFile costs("{\"kind\": \"gpumem-cost-table\"}", ".json");
    const auto c = run_gpumem({"reuse-sim", "--costs", costs.path});
    CHECK(c.status == 2);
    CHECK(has(c.err, costs.path));
}

TEST_CASE("cli reuse-sim: --capacity makes strategies run out of memory, not the command") {
    const auto r = run_gpumem({"reuse-sim", "--json", "--capacity", "64MiB", "--workload", "training", "--steps", "3", "--no-chart"});
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    std::uint64_t ooms = 0;
    for (const auto& row : doc["strategies"]) ooms += row["ooms"].get<std::uint64_t>();
    CHECK(ooms > 0);
}

TEST_CASE("cli reuse-sim: --execute without a usable GPU exits 3") {
    const auto r = run_gpumem({"reuse-sim", "--execute", "--strategy", "naive", "--steps", "2"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(r.status == 3);
    CHECK(r.stderr_lines() == 1);
}
