// GPU suite for `gpumem memset` through the binary.
#include <doctest/doctest.h>

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
