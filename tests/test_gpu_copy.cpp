// GPU suite for `gpumem copy`, through the binary: every direction and host
// memory kind copies the right bytes, odd sizes, the planted error is caught,
// JSON and CSV parse, --expect-min, sizes beyond free memory, p2p and
// p2p-bidir with their matrices. Runs on the device machine; exits 77
// (skipped) elsewhere.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace {

using nlohmann::json;

int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
}

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args) s += a + " ";
    return s;
}

// Runs gpumem with --json; requires exit `status` and returns the document.
json run_json(std::vector<std::string> args, int status = 0) {
    args.push_back("--json");
    const auto r = run_gpumem(args);
    INFO("gpumem " << joined(args) << "\nstderr: " << r.err);
    REQUIRE(r.status == status);
    return json::parse(r.out);
}

// Every row measured, verified and of `bytes`.
void check_verified_rows(const json& doc, std::uint64_t bytes, std::size_t rows) {
    REQUIRE(doc["results"].size() == rows);
    for (const auto& row : doc["results"]) {
        CAPTURE(row.dump());
        CHECK(row["verified"] == "ok");
        CHECK(row["mismatches"] == 0);
        CHECK(row["bytes"] == bytes);
        CHECK(row["median_gbps"].get<double>() > 0.0);
        CHECK(row["min_gbps"].get<double>() <= row["median_gbps"].get<double>());
        CHECK(row["max_gbps"].get<double>() >= row["median_gbps"].get<double>());
    }
}

// The document's p2p matrices of -d all on `n` devices (copy engines): peer
// access off then on, every cell but the diagonal measured (with peer access
// only where the devices can reach each other).
void check_matrices(const json& doc, const std::string& direction, int n, bool peer_access) {
    REQUIRE(doc["p2p_matrix"].size() == 2);
    for (int m = 0; m < 2; ++m) {
        const auto& matrix = doc["p2p_matrix"][m];
        CHECK(matrix["direction"] == direction);
        CHECK(matrix["peer_access"] == (m == 1));
        CHECK(matrix["engine"] == "ce");
        CHECK(matrix["bytes"] == 4u << 20);
        REQUIRE(matrix["rows"].size() == static_cast<std::size_t>(n));
        for (int s = 0; s < n; ++s) {
            CHECK(matrix["rows"][s]["source"] == s);
            REQUIRE(matrix["rows"][s]["gbps"].size() == static_cast<std::size_t>(n));
            for (int d = 0; d < n; ++d) {
                CAPTURE(s);
                CAPTURE(d);
                const auto& cell = matrix["rows"][s]["gbps"][d];
                if (s == d) CHECK(cell.is_null());
                else if (m == 0 || peer_access) CHECK(cell.get<double>() > 0.0);
            }
        }
    }
}

const std::vector<std::string> kHostKinds = {"pinned", "pageable", "pageable-huge", "write-combined", "mapped", "registered"};
const std::vector<std::string> kPinnedKinds = {"pinned", "write-combined", "mapped", "registered"};

std::vector<std::string> quick(std::vector<std::string> args) {
    for (const char* a : {"--samples", "2", "--warmup", "1", "--sample-time", "0.005"}) args.push_back(a);
    return args;
}

}  // namespace

TEST_CASE("copy: every direction and host memory kind copies the right bytes (copy engine)") {
    const std::uint64_t bytes = 8u << 20;
    for (const std::string dir : {"h2d", "d2h", "h2h", "bidir"})
        for (const std::string& kind : kHostKinds) {
            CAPTURE(dir);
            CAPTURE(kind);
            const json doc = run_json(quick({"copy", dir, "--host-memory", kind, "--size", "8MiB", "--verify"}));
            check_verified_rows(doc, bytes, dir == "bidir" ? 2 : 1);
            const auto& row = doc["results"][0];
            CHECK(row["host_memory"] == kind);
            CHECK(row["engine"] == "ce");
            const bool pinned = kind != "pageable" && kind != "pageable-huge";
            CHECK(row["timing"] == (pinned && dir != "h2h" ? "events" : "host-clock"));
            if (kind == "pageable-huge") CHECK(row["huge_pages"].is_boolean());
            if (dir == "bidir") {
                CHECK(doc["results"][0]["direction"] == "bidir-h2d");
                CHECK(doc["results"][1]["direction"] == "bidir-d2h");
            } else {
                CHECK(row["direction"] == dir);
            }
        }
    const json doc = run_json(quick({"copy", "d2d", "--size", "8MiB", "--verify"}));
    check_verified_rows(doc, bytes, 1);
    CHECK(doc["results"][0]["host_memory"].is_null());
    CHECK(doc["notes"][0].get<std::string>().find("d2d counts each byte once") == 0);
}

TEST_CASE("copy: the SM engine copies the right bytes from and to page-locked memory") {
    for (const std::string dir : {"h2d", "d2h", "bidir"})
        for (const std::string& kind : kPinnedKinds) {
            CAPTURE(dir);
            CAPTURE(kind);
            const json doc = run_json(quick({"copy", dir, "--engine", "sm", "--host-memory", kind, "--size", "8MiB", "--verify"}));
            check_verified_rows(doc, 8u << 20, dir == "bidir" ? 2 : 1);
            CHECK(doc["results"][0]["engine"] == "sm");
            CHECK(doc["results"][0]["timing"] == "events");
        }
    check_verified_rows(run_json(quick({"copy", "d2d", "--engine", "sm", "--size", "8MiB", "--verify"})), 8u << 20, 1);
    check_verified_rows(run_json(quick({"copy", "h2h", "--engine", "sm", "--size", "8MiB", "--verify"})), 8u << 20, 1);
}

TEST_CASE("copy: odd sizes copy every byte, including a partial last word") {
    for (const std::string size : {"1", "7", "4097", "1000003"}) {
        const std::uint64_t bytes = std::stoull(size);
        for (const std::string dir : {"h2d", "d2h", "d2d", "h2h", "bidir"})
            for (const std::string kind : {"pinned", "pageable"}) {
                if (dir == "d2d" && kind == "pageable") continue;
                CAPTURE(size);
                CAPTURE(dir);
                CAPTURE(kind);
                std::vector<std::string> args = {"copy", dir, "--size", size, "--verify"};
                if (dir != "d2d") args.insert(args.end(), {"--host-memory", kind});
                check_verified_rows(run_json(quick(args)), bytes, dir == "bidir" ? 2 : 1);
            }
        for (const std::string dir : {"h2d", "d2h", "d2d"}) {
            CAPTURE(dir);
            check_verified_rows(run_json(quick({"copy", dir, "--engine", "sm", "--size", size, "--verify"})), bytes, 1);
        }
    }
    // A sweep of odd sizes reuses the largest buffer for every size.
    const json sweep = run_json(quick({"copy", "d2h", "--sizes", "1000003,17,65537", "--verify"}));
    REQUIRE(sweep["results"].size() == 3);
    const std::uint64_t swept[] = {1000003, 17, 65537};
    for (int i = 0; i < 3; ++i) {
        CHECK(sweep["results"][i]["bytes"] == swept[i]);
        CHECK(sweep["results"][i]["verified"] == "ok");
    }
}

TEST_CASE("copy --verify catches a planted error: exit 4, with the offset") {
    struct Case {
        std::vector<std::string> args;
        std::uint64_t offset;
    };
    const std::vector<Case> cases = {
        {{"copy", "h2d", "--size", "1000003"}, 12345},                                        // device destination
        {{"copy", "h2d", "--size", "1000003"}, 1000002},                                      // its partial last word
        {{"copy", "d2h", "--size", "1000003"}, 777},                                          // host destination (CPU check)
        {{"copy", "d2h", "--size", "1000003"}, 1000001},                                      // host partial last word
        {{"copy", "d2h", "--size", "4MiB", "--host-memory", "write-combined"}, 4u << 19},     // checked on the device
        {{"copy", "d2h", "--size", "64MiB", "--host-memory", "pageable"}, (64u << 20) - 9},   // multi-threaded CPU check
        {{"copy", "d2d", "--size", "1MiB"}, 0},
        {{"copy", "h2h", "--size", "1MiB"}, 4096},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args = quick(c.args);
        args.insert(args.end(), {"--verify", "--debug-corrupt-offset", std::to_string(c.offset)});
        CAPTURE(joined(args));
        const json doc = run_json(args, 4);
        CHECK(doc["ok"] == false);
        CHECK(doc["error"]["status"] == 4);
        CHECK(doc["error"]["code"] == "verification_failed");
        CHECK(doc["error"]["message"].get<std::string>().find("offset " + std::to_string(c.offset)) != std::string::npos);
        REQUIRE(doc["results"].size() == 1);
        CHECK(doc["results"][0]["verified"] == "FAILED");
        CHECK(doc["results"][0]["mismatches"] == 1);
        CHECK(doc["results"][0]["first_bad_offset"] == c.offset);
    }
    // bidir: both directions are checked, and both fail.
    const json doc = run_json(quick({"copy", "bidir", "--size", "1MiB", "--verify", "--debug-corrupt-offset", "100"}), 4);
    CHECK(doc["results"][0]["verified"] == "FAILED");
    CHECK(doc["results"][1]["verified"] == "FAILED");
    // Table mode: the results still print on stdout, the error is one line on stderr.
    const auto r = run_gpumem(quick({"copy", "h2d", "--size", "1MiB", "--verify", "--debug-corrupt-offset", "5"}));
    CHECK(r.status == 4);
    CHECK(r.out.find("FAILED") != std::string::npos);
    CHECK(r.stderr_lines() == 1);
    CHECK(r.err.find("first bad byte at offset 5") != std::string::npos);
}

TEST_CASE("copy: default run, JSON and CSV parse") {
    const json doc = run_json({"copy", "h2d"});
    CHECK(doc["ok"] == true);
    CHECK(doc["command"] == "copy");
    REQUIRE(doc["results"].size() == 1);
    const auto& row = doc["results"][0];
    CHECK(row["bytes"] == 64u << 20);
    CHECK(row["samples"] == 5);
    CHECK(row["warmup"] == 2);
    CHECK(row["iterations"].get<int>() >= 1);
    CHECK(row["verified"] == "no");
    CHECK(row["median_gbps"].get<double>() > 1.0);  // any PCIe link since Gen1 x4
    CHECK(row["cv_percent"].get<double>() >= 0.0);
    CHECK(doc["details"][0]["samples_us"].size() == 5);
    CHECK(doc["cpu_affinity"].is_array());
    CHECK(doc["p2p_matrix"].empty());

    const auto r = run_gpumem(quick({"copy", "d2h", "--sizes", "1MiB,2MiB", "--csv"}));
    REQUIRE(r.status == 0);
    std::stringstream ss(r.out);
    std::vector<std::string> lines;
    for (std::string line; std::getline(ss, line);) lines.push_back(line);
    REQUIRE(lines.size() == 3);
    CHECK(lines[0].rfind("device,direction,host_memory,engine,bytes,", 0) == 0);
    CHECK(lines[0].find("median_gbps [GB/s]") != std::string::npos);
    const auto commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
    CHECK(commas(lines[1]) == commas(lines[0]));
    CHECK(lines[1].rfind("0,d2h,pinned,ce,1048576,", 0) == 0);
    CHECK(lines[2].rfind("0,d2h,pinned,ce,2097152,", 0) == 0);

    // Explicit iterations and samples are used as given.
    const json fixed = run_json({"copy", "h2d", "--size", "4MiB", "--iterations", "3", "--samples", "4", "--warmup", "0"});
    CHECK(fixed["results"][0]["iterations"] == 3);
    CHECK(fixed["results"][0]["samples"] == 4);
    CHECK(fixed["details"][0]["samples_us"].size() == 4);
    // GiB/s on request.
    const auto gib = run_gpumem(quick({"copy", "h2d", "--size", "4MiB", "--units", "GiB"}));
    CHECK(gib.status == 0);
    CHECK(gib.out.find("GiB/s") != std::string::npos);
}

TEST_CASE("copy: a sweep prints one row per size and an ASCII chart off a terminal") {
    const auto r = run_gpumem(quick({"copy", "h2d", "--sizes", "4KiB..1MiB"}));
    REQUIRE(r.status == 0);
    CHECK(r.out.find("bandwidth by size: h2d, device 0, pinned, ce") != std::string::npos);
    std::size_t rows = 0, bars = 0;
    std::stringstream ss(r.out);
    for (std::string line; std::getline(ss, line);) {
        if (line.find(" h2d ") != std::string::npos) ++rows;
        if (line.find(" |#") != std::string::npos) ++bars;
    }
    CHECK(rows == 9);
    CHECK(bars == 9);
    CHECK(r.out.find("\u2588") == std::string::npos);
    const auto plain = run_gpumem(quick({"copy", "h2d", "--sizes", "4KiB..1MiB", "--no-chart"}));
    CHECK(plain.status == 0);
    CHECK(plain.out.find('#') == std::string::npos);
    // Larger copies are not slower than 4 KiB ones: latency dominates small copies.
    const json doc = run_json(quick({"copy", "h2d", "--sizes", "4KiB,16MiB"}));
    CHECK(doc["results"][1]["median_gbps"].get<double>() > doc["results"][0]["median_gbps"].get<double>());
}

TEST_CASE("copy --expect-min: passes above, exits 6 below with the results printed") {
    CHECK(run_json({"copy", "h2d", "--expect-min", "1"})["ok"] == true);
    const json doc = run_json({"copy", "h2d", "--expect-min", "100000"}, 6);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"] == "below_expectation");
    CHECK(doc["results"].size() == 1);
    CHECK(doc["expect_min_gbps"] == 100000);
    const auto r = run_gpumem({"copy", "h2d", "--expect-min", "100000"});
    CHECK(r.status == 6);
    CHECK(r.out.find("h2d") != std::string::npos);
    CHECK(r.stderr_lines() == 1);
    CHECK(r.err.find("below --expect-min") != std::string::npos);
}

TEST_CASE("copy: sizes beyond free memory exit 5 before allocating; -d all reports each device") {
    for (const std::string dir : {"d2d", "h2d", "bidir"}) {
        CAPTURE(dir);
        const auto r = run_gpumem({"copy", dir, "--size", "100TiB"});
        CHECK(r.status == 5);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
        CHECK(r.err.find("free") != std::string::npos);
    }
    const json doc = run_json(quick({"copy", "h2d", "-d", "all", "--size", "4MiB"}));
    CHECK(doc["results"].size() == static_cast<std::size_t>(device_count()));
    for (std::size_t i = 0; i < doc["results"].size(); ++i) CHECK(doc["results"][i]["device"] == i);
    // Affinity off still works.
    CHECK(run_json(quick({"copy", "h2d", "--size", "4MiB", "--no-affinity"}))["cpu_affinity"].empty());
    // An unknown device is a usage error.
    const auto r = run_gpumem({"copy", "h2d", "-d", "99"});
    CHECK(r.status == 2);
}

TEST_CASE("copy p2p: with and without peer access, or a clear error on one GPU") {
    const int n = device_count();
    if (n < 2) {
        for (const std::string dir : {"p2p", "p2p-bidir"}) {
            const auto r = run_gpumem({"copy", dir});
            CHECK(r.status == 2);
            CHECK(r.err.find("second device") != std::string::npos);
            CHECK(r.stderr_lines() == 1);
        }
        MESSAGE("only " << n << " GPU: p2p copies were not exercised (needs nvidia-h200-x2 or larger)");
        return;
    }
    const auto same = run_gpumem({"copy", "p2p", "-d", "0", "--peer", "0"});
    CHECK(same.status == 2);
    CHECK(same.stderr_lines() == 1);

    int can = 0;
    REQUIRE(cudaDeviceCanAccessPeer(&can, 0, 1) == cudaSuccess);
    const json doc = run_json(quick({"copy", "p2p", "-d", "0", "--peer", "1", "--size", "8MiB", "--verify"}));
    REQUIRE(doc["results"].size() == 2);
    const auto& staged = doc["results"][0];
    const auto& direct = doc["results"][1];
    CHECK(staged["peer"] == 1);
    CHECK(staged["peer_access"] == false);
    CHECK(staged["verified"] == "ok");
    CHECK(staged["timing"] == "host-clock");
    CHECK(direct["peer_access"] == true);
    if (can) {
        CHECK(direct["verified"] == "ok");
        CHECK(direct["timing"] == "events");
        CHECK(direct["median_gbps"].get<double>() > 0.0);
        check_verified_rows(run_json(quick({"copy", "p2p", "-d", "0", "--peer", "1", "--engine", "sm", "--size", "1000003", "--verify"})),
                            1000003, 1);
    } else {
        CHECK(direct["median_gbps"].is_null());
        CHECK(direct["skipped"].is_string());
    }
    // The planted error is caught on the peer too.
    const json bad = run_json(quick({"copy", "p2p", "-d", "0", "--peer", "1", "--size", "1MiB", "--verify", "--debug-corrupt-offset", "99"}), 4);
    CHECK(bad["results"][0]["first_bad_offset"] == 99);
    // The matrix: every ordered pair, with and without peer access.
    const json all = run_json(quick({"copy", "p2p", "-d", "all", "--size", "4MiB"}));
    CHECK(all["results"].size() == static_cast<std::size_t>(n * (n - 1) * 2));
    check_matrices(all, "p2p", n, can != 0);
    const auto table = run_gpumem(quick({"copy", "p2p", "-d", "all", "--size", "4MiB"}));
    CHECK(table.status == 0);
    CHECK(table.out.find("p2p matrix, median GB/s") != std::string::npos);
}

TEST_CASE("copy p2p-bidir: both ways at once, a row for each, with and without peer access") {
    const int n = device_count();
    if (n < 2) {
        MESSAGE("only " << n << " GPU: p2p-bidir was not exercised (needs nvidia-h200-x2 or larger)");
        return;
    }
    int can01 = 0, can10 = 0;
    REQUIRE(cudaDeviceCanAccessPeer(&can01, 0, 1) == cudaSuccess);
    REQUIRE(cudaDeviceCanAccessPeer(&can10, 1, 0) == cudaSuccess);
    const bool can = can01 && can10;
    const json doc = run_json(quick({"copy", "p2p-bidir", "-d", "0", "--peer", "1", "--size", "1000003", "--verify"}));
    // Peer access off (two rows, one per way), then on (two rows).
    REQUIRE(doc["results"].size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& row = doc["results"][i];
        CAPTURE(row.dump());
        CHECK(row["direction"] == "p2p-bidir");
        CHECK(row["device"] == (i % 2 == 0 ? 0 : 1));
        CHECK(row["peer"] == (i % 2 == 0 ? 1 : 0));
        CHECK(row["peer_access"] == (i >= 2));
        CHECK(row["host_memory"].is_null());
        if (i < 2 || can) {
            CHECK(row["verified"] == "ok");
            CHECK(row["timing"] == (i < 2 ? "host-clock" : "events"));
            CHECK(row["median_gbps"].get<double>() > 0.0);
        } else {
            CHECK(row["skipped"].is_string());
        }
    }
    CHECK(doc["notes"][0].get<std::string>().rfind("p2p-bidir: ", 0) == 0);
    if (can) {
        // The SM engine: peer access only, both ways verified.
        const json sm = run_json(quick({"copy", "p2p-bidir", "-d", "0", "--peer", "1", "--engine", "sm", "--size", "8MiB", "--verify"}));
        check_verified_rows(sm, 8u << 20, 2);
        CHECK(sm["results"][1]["device"] == 1);
        // A planted error is caught in both ways.
        const json bad = run_json(
            quick({"copy", "p2p-bidir", "-d", "0", "--peer", "1", "--size", "1MiB", "--verify", "--debug-corrupt-offset", "77"}), 4);
        for (const auto& row : bad["results"]) CHECK(row["first_bad_offset"] == 77);
    }
    // -d all: each pair once, both ways: every ordered pair, with and without peer access.
    const json all = run_json(quick({"copy", "p2p-bidir", "-d", "all", "--size", "4MiB"}));
    CHECK(all["results"].size() == static_cast<std::size_t>(n * (n - 1) * 2));
    check_matrices(all, "p2p-bidir", n, can);
}

TEST_CASE("copy --sizes --plot: the sweep's picture names the GPU and has a line per direction") {
    char dir[] = "/tmp/gpumem-copy-plot-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string svg = std::string(dir) + "/bidir.svg";
    const json doc = run_json({"copy", "bidir", "--sizes", "1MiB..4MiB", "--samples", "2", "--plot", svg});
    CHECK(doc["results"].size() == 6);  // 3 sizes, both ways
    const std::string picture = slurp(svg);
    CHECK(picture.rfind("<?xml", 0) == 0);
    CHECK(picture.find("gpumem copy bidir: bandwidth by size on device 0 (") != std::string::npos);
    CHECK(picture.find(">bidir-h2d, pinned<") != std::string::npos);
    CHECK(picture.find(">bidir-d2h, pinned<") != std::string::npos);
    (void)std::system((std::string("rm -rf ") + dir).c_str());
}
