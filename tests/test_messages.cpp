// Messages that say what is wrong and what to do (issue 48): each of these
// ran before without naming the option, echoed a file's raw bytes, showed a
// library's words, or said something beside the point. Through the binary,
// without a GPU.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "tests_dir.hpp"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A file in /tmp holding `bytes`, removed with the object.
struct ScratchFile {
    std::string path;
    explicit ScratchFile(const std::string& bytes, const std::string& suffix = "") {
        char name[] = "/tmp/gpumem-messages-XXXXXX";
        const int fd = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path = std::string(name) + suffix;
        std::rename(name, path.c_str());
        std::ofstream(path, std::ios::binary) << bytes;
    }
    ~ScratchFile() { std::remove(path.c_str()); }
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;
};

// Every byte printable ASCII or a newline: nothing of a binary file reached stderr.
bool printable_text(const std::string& text) {
    for (char c : text)
        if (c != '\n' && (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)) return false;
    return true;
}

}  // namespace

TEST_CASE("messages: a binary --trace is named as such, its bytes never echoed raw") {
    ScratchFile binary(std::string("\x7f" "ELF\x02\x01\x01\x00\x00\x00\x1b[31m\xff\xfe\n\x00\x01", 18), ".bin");
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--trace", binary.path});
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(r.stderr_lines() == 1);
    CHECK(printable_text(r.err));
    CHECK(has(r.err, binary.path + ": binary data, not a trace"));
    CHECK(has(r.err, "give --trace a trace file"));
    // A text line that is no header is quoted, bytes beyond ASCII as \xNN.
    ScratchFile text("caf\xc3\xa9,menu\n", ".csv");
    const RunResult t = run_gpumem({"reuse-sim", "replay", "--trace", text.path});
    CAPTURE(t.err);
    CHECK(t.status == 2);
    CHECK(printable_text(t.err));
    CHECK(has(t.err, "unrecognised trace header 'caf\\xc3\\xa9,menu'"));
}

TEST_CASE("messages: memset --value and --offset name the option") {
    const RunResult v = run_gpumem({"memset", "--value", "0xZZ"});
    CAPTURE(v.err);
    CHECK(v.status == 2);
    CHECK(has(v.err, "error: --value 0xZZ: invalid number '0xZZ' (expected decimal or 0x-prefixed hexadecimal)"));
    const RunResult o = run_gpumem({"memset", "--offset", "lots"});
    CHECK(o.status == 2);
    CHECK(has(o.err, "error: --offset lots: "));
}

TEST_CASE("messages: an option of one value given twice says so, not CLI11's 'At Most 1 required'") {
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--strategy", "pool", "--strategy", "binning"});
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(!has(r.err, "At Most"));
    CHECK(has(r.err, "--strategy given 2 times: give it once"));
    CHECK(has(r.err, "(a list is one value: --strategy A,B)"));
    const RunResult level = run_gpumem({"check", "--level", "quick", "--level", "long"});
    CHECK(level.status == 2);
    CHECK(has(level.err, "--level given 2 times: give it once"));
}

TEST_CASE("messages: a malformed --costs file, in words and with what makes one") {
    ScratchFile costs("{\"schema_version\": 1, \"kind\": \"gpumem-cost-table\"", ".json");
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--costs", costs.path});
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(!has(r.err, "[json.exception"));
    CHECK(!has(r.err, "syntax error while parsing"));
    CHECK(has(r.err, costs.path + ": invalid JSON at line 1, column "));
    CHECK(has(r.err, ": unexpected end of input"));
    CHECK(has(r.err, "gpumem alloc-test latency --save-costs FILE"));
}

TEST_CASE("messages: words after -- for a command that runs no program") {
    const RunResult r = run_gpumem({"copy", "--", "h2d"});
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(!has(r.err, "direction is required"));
    CHECK(has(r.err, "unexpected argument 'h2d' after --: gpumem copy runs no program; leave out the -- (gpumem copy ... h2d)"));
}

TEST_CASE("messages: --format nagios or npd on a command that is no plugin is a usage error (2), as other formats") {
    for (const char* format : {"nagios", "npd"}) {
        CAPTURE(format);
        const RunResult r = run_gpumem({"memset", "--format", format});
        CHECK(r.status == 2);
        CHECK(r.out.empty());  // no plugin's UNKNOWN line
        CHECK(has(r.err, std::string("--format ") + format + " is offered by check only"));
    }
    // check is a plugin: its usage error stays the plugin's UNKNOWN.
    const RunResult plugin = run_gpumem({"--format", "nagios", "check", "--level", "fast"});
    CHECK(plugin.status == 3);
    CHECK(plugin.out.rfind("GPUMEM UNKNOWN", 0) == 0);
}

TEST_CASE("messages: a replay's capacity beside the recording's cap, in the units of the rest") {
    ScratchFile trace("action,id,size,stream,tag\nalloc,1,4096,0,a\nfree,1,,,\n", ".csv");
    const std::string stats = trace.path.substr(0, trace.path.size() - 4) + ".stats.json";
    std::ofstream(stats) << R"({"kind": "gpumem-torch-recording", "device": 0,
        "allocator": {"allowed_memory_maximum": 75054940160, "memory_fraction": 0.5, "device_total": 150109880320}})";
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--trace", trace.path, "--capacity", "64GiB"});
    std::remove(stats.c_str());
    CAPTURE(r.err);
    CHECK(r.status == 0);
    CHECK(has(unwrapped(r.err), "the replay's capacity 64GiB is not the cap the recording ran under, 69.9 GiB (75054940160 bytes)"));
    CHECK(has(unwrapped(r.err), "leave out --capacity and --memory-fraction to replay under the recording's"));
}

TEST_CASE("messages: a count below its least value says the least value") {
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--steps=-5"});
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(has(r.err, "--steps -5 is below the least value, 1 (it takes 1 to "));
    const RunResult word = run_gpumem({"reuse-sim", "replay", "--steps", "many"});
    CHECK(word.status == 2);
    CHECK(has(word.err, "; it takes 1 to "));
}

TEST_CASE("messages: a program --record cannot start is gpumem's error, with what to do") {
    ScratchFile out("", ".pickle");
    const RunResult r = run_gpumem({"reuse-sim", "record", "-o", out.path, "--", "/nonexistent/gpumem-no-such-program"});
    CAPTURE(r.err);
    CHECK(r.status != 0);
    CHECK(has(unwrapped(r.err), "gpumem: error: cannot run /nonexistent/gpumem-no-such-program: No such file or directory "
                     "(name a program in PATH, or give its path)"));
}

TEST_CASE("messages: a check that judged no device says unknown, not n/a") {
    // No driver here (or -d naming no GPU there): the run judged nothing.
    const RunResult r = run_gpumem({"check", "--json", "-d", "99"});
    CAPTURE(r.err);
    REQUIRE(r.status != 0);
    REQUIRE(r.status != 7);
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["verdict"] == "unknown");
}

TEST_CASE("messages: alloc-test hold's usage line shows TOTAL as required, as its help says") {
    // The "Usage:" line of a help page.
    auto usage_of = [](const std::string& page) {
        const std::size_t at = page.find("Usage:");
        return at == std::string::npos ? std::string() : page.substr(at, page.find('\n', at) - at);
    };
    const RunResult r = run_gpumem({"alloc-test", "hold", "--help"});
    REQUIRE(r.status == 0);
    const std::string usage = usage_of(r.out);
    CAPTURE(usage);
    CHECK(!has(usage, "[total]"));
    CHECK(has(usage, " total"));
    CHECK(has(r.out, "(required)"));
    // fill's TOTAL has a default: optional, in brackets.
    const RunResult fill = run_gpumem({"alloc-test", "fill", "--help"});
    CHECK(has(usage_of(fill.out), "[total]"));
}

TEST_CASE("messages: reuse-sim replay --growth takes what alloc-test churn --growth takes") {
    for (const char* growth : {"x3", "64KiB", "x1.5", "2MiB"}) {
        CAPTURE(growth);
        const RunResult r = run_gpumem({"reuse-sim", "replay", "--strategy", "grow-only", "--growth", growth, "--steps", "20", "--json"});
        CAPTURE(r.err);
        CHECK(r.status == 0);
    }
    const RunResult x3 = run_gpumem({"reuse-sim", "replay", "--strategy", "grow-only", "--growth", "x3", "--steps", "20", "--json"});
    CHECK(nlohmann::json::parse(x3.out)["options"]["growth"] == "x3");
    const RunResult named = run_gpumem({"reuse-sim", "replay", "--strategy", "grow-only", "--growth", "512B", "--steps", "20", "--json"});
    CHECK(nlohmann::json::parse(named.out)["options"]["growth"] == "512B");
    CHECK(run_gpumem({"reuse-sim", "replay", "--growth", "x17"}).status == 2);
}

TEST_CASE("messages: a capacity under 1 MiB without a unit is warned of, naming the unit; a unit after a space is told to join its number") {
    // --capacity 40 is 40 bytes, as every size without a unit: kept, and said.
    const RunResult bare = run_gpumem({"reuse-sim", "replay", "--workload", "inference", "--steps", "5", "--strategy", "naive", "--capacity", "40"}, {"COLUMNS=300"});
    CAPTURE(bare.err);
    CHECK(bare.status == 0);
    CHECK(has(unwrapped(bare.err), "--capacity 40 is 40 B (a size without a unit is bytes): did you mean 40GiB?"));
    // A larger bare number reads as nvidia-smi's MiB; a tuning and a recording's cap too.
    const RunResult mib = run_gpumem({"reuse-sim", "tune", "--workload", "inference", "--steps", "5", "--capacity", "81559"}, {"COLUMNS=300"});
    CHECK(has(unwrapped(mib.err), "--capacity 81559 is 81559 B (a size without a unit is bytes): did you mean 81559MiB?"));
    const RunResult total = run_gpumem({"reuse-sim", "replay", "--workload", "inference", "--steps", "5", "--strategy", "naive",
                                        "--memory-fraction", "0.5", "--device-total", "80"});
    CHECK(has(total.err, "--device-total 80 is 80 B"));
    // With a unit, or from 1 MiB up, nothing is said.
    for (const char* capacity : {"40GiB", "40B", "1048576"}) {
        CAPTURE(capacity);
        const RunResult r = run_gpumem({"reuse-sim", "replay", "--workload", "inference", "--steps", "5", "--strategy", "naive", "--capacity", capacity}, {"COLUMNS=300"});
        CHECK(r.status == 0);
        CHECK_FALSE(has(r.err, "without a unit"));
    }
    // "--capacity 40 GB": the value takes no space, whichever job (a word
    // left over is the program's first for the jobs that run one).
    const std::vector<std::vector<std::string>> spaced = {
        {"reuse-sim", "replay", "--workload", "inference", "--capacity", "40", "GB"},
        {"reuse-sim", "tune", "--trace", "x.pickle", "--capacity", "40", "GB"},
        {"reuse-sim", "record", "-o", "r.pickle", "--capacity", "40", "GB", "--", "python3", "x.py"},
        {"reuse-sim", "max-batch", "--capacity", "40", "GB", "--", "python3", "x.py", "{batch}"},
    };
    for (const std::vector<std::string>& args : spaced) {
        const RunResult r = run_gpumem(args, {"COLUMNS=300"});
        CAPTURE(r.err);
        CHECK(r.status == 2);
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, "'GB' after '--capacity 40': a size takes its unit with no space: write --capacity 40GB"));
        CHECK_FALSE(has(r.err, "after --"));
    }
    const RunResult eq = run_gpumem({"reuse-sim", "replay", "--capacity=40", "GiB"}, {"COLUMNS=300"});
    CHECK(has(eq.err, "write --capacity=40GiB"));
}

TEST_CASE("messages: a warning whose first word does not fit after 'gpumem: warning:' keeps within the width (issue 57)") {
    // The issue's run: its first warning starts with a 73-character path.
    const std::string trace = tests_dir() + "/fixtures/allocator_features/hook_graph_capture_oom_cap50.pickle";
    for (const char* columns : {"COLUMNS=80", "COLUMNS=100"}) {
        const RunResult r = run_gpumem({"reuse-sim", "replay", "--trace", trace, "--strategy", "torch-caching"}, {columns});
        CAPTURE(columns);
        REQUIRE(r.status == 0);
        REQUIRE(has(r.err, "gpumem: warning:"));
        const std::size_t width = std::stoul(std::string(columns).substr(8));
        std::size_t at = 0;
        for (std::size_t end = r.err.find('\n'); end != std::string::npos; at = end + 1, end = r.err.find('\n', at)) {
            const std::string line = r.err.substr(at, end - at);
            CAPTURE(line);
            CHECK(line.size() <= width);
            CHECK(line.find("warning:   ") == std::string::npos);  // no continuation indent after the prefix
        }
    }
}
