// GPU suite for `gpumem memset` through the binary.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

TEST_CASE("memset --verify passes for each width and reports bandwidth") {
    for (const char* width : {"8", "16", "32"}) {
        CAPTURE(width);
        const auto r = run_gpumem({"memset", "--size", "64MiB", "--width", width, "--value", "0x7", "--verify", "--json"});
        REQUIRE(r.status == 0);
        const auto doc = nlohmann::json::parse(r.out);
        CHECK(doc["ok"] == true);
        CHECK(doc["results"][0]["verified"] == "ok");
        CHECK(doc["results"][0]["mismatches"] == 0);
        CHECK(doc["results"][0]["bytes"] == 64u << 20);
        CHECK(doc["results"][0]["bandwidth_gbps"].get<double>() > 10.0);
    }
}

TEST_CASE("memset --verify catches a planted corruption: exit 4") {
    const auto r = run_gpumem({"memset", "--size", "1000003", "--offset", "3", "--debug-corrupt-offset", "777", "--json"});
    CHECK(r.status == 4);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["status"] == 4);
    CHECK(doc["details"][0]["first_bad_offset"] == 780);
    CHECK(r.stderr_lines() == 1);
}

TEST_CASE("memset on host memory kinds, CSV output") {
    for (const char* kind : {"pinned", "pageable", "registered"}) {
        CAPTURE(kind);
        const auto r = run_gpumem({"memset", "--target", "host", "--host-memory", kind, "--size", "16MiB", "--verify", "--csv"});
        CHECK(r.status == 0);
        CHECK(r.out.rfind("device,target,bytes", 0) == 0);
        CHECK(r.out.find(std::string("host:") + kind) != std::string::npos);
    }
}

TEST_CASE("memset: sizes beyond free memory exit 5; bad geometry exits 2") {
    auto r = run_gpumem({"memset", "--size", "1TiB"});  // beyond any GPU's memory (300% is a usage error)
    CHECK(r.status == 5);
    CHECK(r.out.empty());
    CHECK(r.stderr_lines() == 1);
    r = run_gpumem({"memset", "--size", "1001", "--width", "32"});
    CHECK(r.status == 2);
    r = run_gpumem({"memset", "--size", "4KiB", "--offset", "4KiB"});
    CHECK(r.status == 2);
    r = run_gpumem({"memset", "-d", "99"});
    CHECK(r.status == 2);
}

TEST_CASE("memset -d all gives one row per device; 90% of free works") {
    auto r = run_gpumem({"memset", "-d", "all", "--size", "32MiB", "--json"});
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["results"].size() >= 1);
    r = run_gpumem({"memset", "--size", "90%", "--iterations", "2", "--samples", "2", "--verify", "--json"});
    CHECK(r.status == 0);
}

TEST_CASE("memset --sizes: one row per size; --plot writes the sweep's picture, naming the GPU and its peak") {
    char dir[] = "/tmp/gpumem-memset-plot-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string svg = std::string(dir) + "/memset.svg";
    const auto r = run_gpumem({"memset", "--sizes", "1MiB..8MiB", "--samples", "2", "--json", "--plot", svg});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    REQUIRE(doc["results"].size() == 4);
    CHECK(doc["results"][0]["bytes"] == 1048576);
    CHECK(doc["results"][3]["bytes"] == 8388608);
    const std::string picture = slurp(svg);
    CHECK(picture.rfind("<?xml", 0) == 0);
    CHECK(picture.find("gpumem memset: bandwidth by size on device 0 (") != std::string::npos);
    CHECK(picture.find("peak memory bandwidth (NVML)") != std::string::npos);
    CHECK(picture.find("</svg>") != std::string::npos);
    (void)std::system((std::string("rm -rf ") + dir).c_str());
}

// issue 45: every GPU command's human output, as a person sees it on a
// terminal 80 and 100 columns wide (stderr there too: warnings) and in a
// pipe (100 columns), has no longer line; an error stays one line within
// 100. The tables are also rendered from fixtures at both widths on the CPU
// (test_info, test_alloc_report, test_copy, test_check); this runs them.
TEST_CASE("every GPU command's human output within 80 and 100 columns, and 100 in a pipe") {
    const std::vector<std::vector<std::string>> commands = {
        {"info"},
        {"memset", "--size", "64MiB", "--verify"},
        {"copy", "h2d", "--sizes", "4KiB..64MiB"},
        {"copy", "d2d", "--sizes", "64MiB"},
        {"alloc-test", "latency", "--api", "device,async,host", "--iterations", "10"},
        {"alloc-test", "max"},
        {"alloc-test", "fill", "1GiB", "--verify"},
        {"alloc-test", "churn", "--duration", "1s"},
        {"alloc-test", "hold", "256MiB", "--duration", "1s"},
        {"check", "--level", "quick"},
    };
    for (const std::vector<std::string>& args : commands) {
        std::string joined = "gpumem";
        for (const std::string& a : args) joined += " " + a;
        CAPTURE(joined);
        for (const int columns : {80, 100, 0}) {  // 0: a pipe
            CAPTURE(columns);
            const RunResult r = columns == 0 ? run_gpumem(args) : run_on_terminal(args, columns, {}, true);
            CHECK((r.status == 0 || (args[0] == "check" && r.status == 7)));  // a check may fail on a busy GPU
            CHECK_FALSE(r.out.empty());
            const std::size_t width = columns == 0 ? 100 : static_cast<std::size_t>(columns);
            for (const std::string& line : lines_wider(r.out + r.err, width)) {
                CAPTURE(line);
                CHECK(line.rfind("gpumem: error: ", 0) == 0);  // an error is one line
                CHECK(line_columns(line) <= 100);
            }
        }
    }
}
