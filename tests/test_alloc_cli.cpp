// CLI checks of `gpumem alloc-test` that need no GPU: bad input gives exit 2
// with one line on stderr and nothing on stdout (or one JSON document with
// --json), checked before the driver is touched; no visible device gives 3.
#include <doctest/doctest.h>

#include <stdlib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace {

void check_usage_error(const std::vector<std::string>& args, const std::string& needle) {
    INFO("gpumem " << [&] {
        std::string s;
        for (const auto& a : args) s += a + " ";
        return s;
    }());
    const RunResult r = run_gpumem(args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.stderr_lines() == 1);
    CHECK(r.err.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("alloc-test cli: help lists the modes") {
    const RunResult r = run_gpumem({"alloc-test", "--help"});
    CHECK(r.status == 0);
    for (const char* mode : {"latency", "max", "fill", "churn", "hold"}) CHECK(r.out.find(mode) != std::string::npos);
    const RunResult fill = run_gpumem({"alloc-test", "fill", "--help"});
    CHECK(fill.status == 0);
    CHECK(fill.out.find("--verify") != std::string::npos);
    CHECK(fill.out.find("debug-corrupt") == std::string::npos);  // the test hook stays hidden
}

TEST_CASE("alloc-test cli: unknown modes, APIs and patterns are usage errors") {
    check_usage_error({"alloc-test"}, "needs a mode");
    check_usage_error({"alloc-test", "bogus"}, "unknown alloc-test mode 'bogus'");
    check_usage_error({"alloc-test", "latency", "--api", "cuda"}, "unknown allocation API 'cuda'");
    check_usage_error({"alloc-test", "latency", "--api", "device,foo"}, "unknown allocation API 'foo'");
    check_usage_error({"alloc-test", "fill", "--pattern", "stripes"}, "unknown pattern 'stripes'");
    check_usage_error({"alloc-test", "fill", "--pattern", "zeros", "--pattern", "nope"}, "unknown pattern 'nope'");
    check_usage_error({"alloc-test", "churn", "--via", "pool"}, "--via");
    check_usage_error({"alloc-test", "churn", "--api", "malloc"}, "unknown allocation API 'malloc'");
}

TEST_CASE("alloc-test cli: bad sizes, ranges and durations are usage errors") {
    check_usage_error({"alloc-test", "fill", "0"}, "invalid size");
    check_usage_error({"alloc-test", "fill", "12XB"}, "invalid size");
    check_usage_error({"alloc-test", "fill", "--total", "-1GiB"}, "negative");
    check_usage_error({"alloc-test", "fill", "1GiB", "--chunk", "13"}, "multiple of 8");
    check_usage_error({"alloc-test", "hold", "abc"}, "invalid size");
    check_usage_error({"alloc-test", "latency", "--sizes", "1GiB..1MiB"}, "smaller than the start");
    check_usage_error({"alloc-test", "latency", "--sizes", "0"}, "invalid size");
    check_usage_error({"alloc-test", "latency", "--iterations", "0"}, "--iterations");
    check_usage_error({"alloc-test", "churn", "--duration", "5x"}, "invalid duration");
    check_usage_error({"alloc-test", "churn", "--max-live", "lots"}, "invalid size");
    check_usage_error({"alloc-test", "max", "--granularity", "2MiB", "--chunk", "1MiB"}, "--chunk");
}

TEST_CASE("alloc-test cli: invalid combinations are usage errors") {
    check_usage_error({"alloc-test", "hold"}, "TOTAL is required");
    check_usage_error({"alloc-test", "hold", "1GiB", "--total", "2GiB"}, "TOTAL given twice");
    check_usage_error({"alloc-test", "fill", "1GiB", "2GiB"}, "unexpected argument '2GiB'");
    check_usage_error({"alloc-test", "fill", "--debug-corrupt-word", "5"}, "needs --verify");
    check_usage_error({"alloc-test", "churn", "--slots", "8"}, "need --via mixmemory");
    check_usage_error({"alloc-test", "churn", "--via", "mixmemory", "--api", "host"}, "--api must be device");
    check_usage_error({"alloc-test", "latency", "--save-costs", "/nonexistent-dir/costs.json"}, "--save-costs");
    check_usage_error({"alloc-test", "latency", "--save-costs", "/tmp/costs.json", "-d", "all"}, "one device");
    check_usage_error({"alloc-test", "max", "-d", "nonsense"}, "invalid device");
}

TEST_CASE("alloc-test cli: --save-costs '' or DIR/ is refused by check(), before the driver") {
    // Both reached the driver before (exit 3 here, a full measurement on a GPU machine).
    check_usage_error({"alloc-test", "latency", "--save-costs", ""}, "--save-costs needs a file name");
    check_usage_error({"alloc-test", "latency", "--save-costs", "/tmp/"}, "names a directory");
    check_usage_error({"alloc-test", "latency", "--save-costs", "/tmp/costs.json", "-d", "0,1"}, "one device");
    check_usage_error({"alloc-test", "churn", "--duration", ""}, "invalid duration ''");
    check_usage_error({"alloc-test", "hold", "1GiB", "--duration", ""}, "invalid duration ''");
    check_usage_error({"alloc-test", "churn", "--seed", "-1"}, "--seed");
    check_usage_error({"alloc-test", "churn", "--growth", "x2"}, "need --via mixmemory");
    check_usage_error({"alloc-test", "churn", "--via", "mixmemory", "--growth", "x0.5"}, "growth factor");
}

TEST_CASE("alloc-test cli: trying --save-costs leaves no file behind") {
    char dir[] = "/tmp/gpumem-costs.XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string path = std::string(dir) + "/costs.json";
    const RunResult r = run_gpumem({"alloc-test", "latency", "--save-costs", path}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(r.status == 3);  // the file could be written; then no device
    CHECK(access(path.c_str(), F_OK) != 0);
    CHECK(rmdir(dir) == 0);
}

TEST_CASE("alloc-test cli: an unwritable --save-costs is a usage error before any GPU work") {
    // access() on the folder passed for root (also into /proc) and for a
    // folder named as the file: the driver was reached first (exit 3 here,
    // a full measurement then exit 1 on a GPU machine).
    check_usage_error({"alloc-test", "latency", "--save-costs", "/proc/gpumem-costs.json"}, "--save-costs");
    check_usage_error({"alloc-test", "latency", "--save-costs", "/tmp"}, "--save-costs");
    check_usage_error({"alloc-test", "latency", "--save-costs", "/nonexistent/dir/costs.json"}, "--save-costs");
}

TEST_CASE("alloc-test cli: --json usage errors are one JSON document") {
    const RunResult r = run_gpumem({"alloc-test", "fill", "--pattern", "x", "--json"});
    CHECK(r.status == 2);
    CHECK(r.stderr_lines() == 1);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["status"] == 2);
}

TEST_CASE("alloc-test cli: no visible device gives exit 3 in every mode") {
    // An empty CUDA_VISIBLE_DEVICES hides every GPU, so this holds on the GPU machine too.
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"alloc-test", "latency"}, {"alloc-test", "max"}, {"alloc-test", "fill", "1GiB"},
          {"alloc-test", "churn", "--ops", "10"}, {"alloc-test", "hold", "1GiB", "--duration", "1s"}}) {
        const RunResult r = run_gpumem(args, {"CUDA_VISIBLE_DEVICES="});
        CHECK(r.status == 3);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
    }
    const RunResult j = run_gpumem({"alloc-test", "max", "--json"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(j.status == 3);
    CHECK(nlohmann::json::parse(j.out)["error"]["code"].is_string());
}
