// The bad-input table: the gpumem binary over many bad invocations of every
// subcommand. Each must exit with the documented status, print exactly one
// line on stderr and nothing on stdout; with --json, exactly one JSON error
// document on stdout whose error.status is the exit status.
//
// Every case is rejected before the driver is touched, so its status is the
// same here (no driver) and on a GPU machine. The few cases whose rejection
// needs the device list (a well-formed but absent device) accept 2 or 3: 2
// where that GPU machine has fewer devices, 3 where there is no driver.
#include <doctest/doctest.h>

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

using nlohmann::json;
using Args = std::vector<std::string>;

namespace {

struct BadCase {
    Args args;
    std::set<int> statuses = {2};
    bool json = false;  // also run with --json and check the error document
};

// Trace files and the like, written once per process into a temporary folder.
struct Scratch {
    std::string dir;
    Scratch() {
        char tmpl[] = "/tmp/gpumem-bad-input.XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
        dir = tmpl;
        write("empty.csv", "");
        write("comments.csv", "# only a comment\n\n");
        write("bad_header.csv", "this,is,not,a,trace\nalloc,1,10,0,\n");
        write("truncated.csv", "action,id,size,stream,tag\nalloc,1,4096,0,a\nalloc,2,40");
        write("zero_size.csv", "action,id,size,stream,tag\nalloc,1,0,0,\n");
        write("bad_action.csv", "action,id,size,stream,tag\nmalloc,1,10,0,\n");
        write("few_fields.csv", "action,id,size,stream,tag\nalloc,1,10\n");
        write("many_fields.csv", "action,id,size,stream,tag\nalloc,1,10,0,t,extra\n");
        write("huge_size.csv", "action,id,size,stream,tag\nalloc,1,99999999999999999999999,0,\n");
        write("negative_size.csv", "action,id,size,stream,tag\nalloc,1,-5,0,\n");
        write("bad_id.csv", "action,id,size,stream,tag\nalloc,x,10,0,\n");
        write("rmm_bad_pointer.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0xZZ,10,0x0\n");
        write("rmm_bad_action.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,0.1,grab,0x10,10,0x0\n");
        write("rmm_truncated.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0x10");
        write("rmm_zero.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0x10,0,0x0\n");
        write("good.csv", "action,id,size,stream,tag\nalloc,1,4096,0,a\nfree,1,,,\n");
        write("binary.csv", std::string("\x00\x01\x02\xff\xfe\n\x00", 7));
        write("costs_bad.json", "{\"schema_version\": 1, \"kind\": \"gpumem-cost-table\"");
        write("costs_wrong.json", "{\"kind\": \"something else\"}");
        write("costs_array.json", "[1, 2, 3]");
    }
    ~Scratch() {
        const std::string cmd = "rm -rf '" + dir + "'";
        (void)std::system(cmd.c_str());
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(dir + "/" + name, std::ios::binary) << text;
    }
    std::string path(const std::string& name) const { return dir + "/" + name; }
};

const Scratch& scratch() {
    static const Scratch s;
    return s;
}

std::vector<BadCase> bad_cases() {
    const Scratch& s = scratch();
    const std::set<int> device_list = {2, 3};  // needs the device list: see the top of the file
    std::vector<BadCase> v = {
        // ---- global options and the command line as a whole
        {{}, {2}, false},
        {{"frobnicate"}, {2}, true},
        {{"--no-such-flag", "info"}},
        {{"info", "--no-such-flag"}, {2}, true},
        {{"--format", "xml", "info"}},
        {{"--units", "parsecs", "info"}},
        {{"--csv", "--json", "info"}, {2}, true},
        {{"--json", "--format", "csv", "info"}, {2}, true},
        {{"--csv", "--format", "table", "info"}},
        {{"--csv", "--format=value", "info"}},
        {{"-q", "-v", "info"}},
        {{"-d"}},
        {{"info", "-d"}},
        {{"-d", "", "info"}},
        {{"-d", "-1", "info"}},
        {{"-d", "zero", "info"}},
        {{"-d", "0,0", "info"}, {2}, true},
        {{"-d", "0,,1", "info"}},
        {{"-d", "GPU-", "info"}},
        {{"-d", "0000:zz:00.0", "info"}},
        {{"-d", "99999999999999999999", "info"}},
        {{"-d", "all,0", "info"}},
        {{"-d", "99", "info"}, device_list},
        {{"-d", "GPU-deadbeef-dead-beef-dead-beefdeadbeef", "info"}, device_list},
        {{"-d", "0000:ff:1f.7", "info"}, device_list},
        // ---- info
        {{"info", "--query", "nonsense"}, {2}, true},
        {{"info", "--query", "name,,total"}},
        {{"info", "--pick", "0"}},
        {{"info", "--pick", "-1"}},
        {{"info", "--pick", "x"}},
        {{"info", "--min-free", "1GiB"}},  // --min-free needs --pick
        {{"info", "--pick", "1", "--min-free", "lots"}},
        {{"info", "--loop", "0"}},
        {{"info", "--loop", "-1"}},
        {{"info", "--loop", "soon"}},
        {{"info", "--count", "3"}},  // --count needs --loop
        {{"info", "--loop", "1", "--count", "0"}},
        {{"info", "extra-positional"}},
        // ---- memset
        {{"memset", "-s", "0"}, {2}, true},
        {{"memset", "-s", "-1"}},
        {{"memset", "-s", "1.5.5GiB"}},
        {{"memset", "-s", "99999999999999999999"}},
        {{"memset", "-s", "18446744073709551616"}},
        {{"memset", "-s", "16EiB"}},
        {{"memset", "-s", "1GiBB"}},
        {{"memset", "-s", "10001%"}},
        {{"memset", "-s", "0%"}},
        {{"memset", "-s", ""}},
        {{"memset", "--width", "7"}, {2}, true},
        {{"memset", "--width", "64"}},
        {{"memset", "--value", "0x1ff", "--width", "8"}},
        {{"memset", "--value", "banana"}},
        {{"memset", "--value", "-1"}},
        {{"memset", "--offset", "-4"}},
        {{"memset", "--target", "tape"}, {2}, true},
        {{"memset", "--host-memory", "floppy"}},
        {{"memset", "-n", "0"}},
        {{"memset", "-n", "-3"}},
        {{"memset", "--samples", "0"}},
        {{"memset", "--warmup", "x"}},
        {{"memset", "-s", "1MiB", "--offset", "2MiB"}},
        // ---- copy
        {{"copy"}},
        {{"copy", "sideways"}, {2}, true},
        {{"copy", "h2d", "d2h"}},
        {{"copy", "h2d", "-s", "0"}, {2}, true},
        {{"copy", "h2d", "-s", "-1MiB"}},
        {{"copy", "h2d", "-s", "huge"}},
        {{"copy", "h2d", "-s", "99999999999999999999"}},
        {{"copy", "h2d", "-s", "1GiB", "--sizes", "4KiB:1MiB:x2"}},
        {{"copy", "h2d", "--sizes", "1MiB:4KiB:x2"}},
        {{"copy", "h2d", "--sizes", "4KiB:1MiB:x1"}},
        {{"copy", "h2d", "--sizes", "4KiB:1MiB:x0"}},
        {{"copy", "h2d", "--sizes", "4KiB:"}},
        {{"copy", "h2d", "--sizes", ":::"}},
        {{"copy", "h2d", "--sizes", "1B:1EiB:+1B"}},
        {{"copy", "h2d", "--engine", "warp"}, {2}, true},
        {{"copy", "h2d", "--host-memory", "floppy"}},
        {{"copy", "h2d", "--expect-min", "-1"}},
        {{"copy", "h2d", "--expect-min", "fast"}},
        {{"copy", "h2d", "-n", "0"}},
        {{"copy", "h2d", "--samples", "0"}},
        {{"copy", "h2d", "--streams", "0"}},
        {{"copy", "d2d", "--peer", "x"}},
        {{"copy", "h2d", "--peer", "1"}},  // --peer is for d2d and p2p
        // ---- alloc-test
        {{"alloc-test"}},
        {{"alloc-test", "allocate-everything"}, {2}, true},
        {{"alloc-test", "latency", "--api", "malloc2"}, {2}, true},
        {{"alloc-test", "latency", "--api", ""}},
        {{"alloc-test", "latency", "--api", "device,,managed"}},
        {{"alloc-test", "latency", "--sizes", "0:1MiB:x2"}},
        {{"alloc-test", "latency", "--sizes", "banana"}},
        {{"alloc-test", "latency", "--iterations", "0"}},
        {{"alloc-test", "latency", "--iterations", "-5"}},
        {{"alloc-test", "latency", "--save-costs", "/proc/x"}, {2}, true},
        {{"alloc-test", "latency", "--save-costs", "/nonexistent/dir/costs.json"}},
        {{"alloc-test", "latency", "--save-costs", s.dir}},  // a directory
        {{"alloc-test", "max", "--granularity", "0"}},
        {{"alloc-test", "max", "--granularity", "-2MiB"}},
        {{"alloc-test", "max", "--chunk", "zero"}},
        {{"alloc-test", "fill", "0"}, {2}, true},
        {{"alloc-test", "fill", "-1GiB"}},
        {{"alloc-test", "fill", "20000%"}},
        {{"alloc-test", "fill", "1GiB", "2GiB"}},
        {{"alloc-test", "fill", "--pattern", "plaid"}, {2}, true},
        {{"alloc-test", "fill", "--pattern", "zeros,,ones"}},
        {{"alloc-test", "fill", "--passes", "0"}},
        {{"alloc-test", "fill", "--chunk", "0"}},
        {{"alloc-test", "fill", "--debug-corrupt-word", "x"}},
        {{"alloc-test", "hold"}},
        {{"alloc-test", "hold", "0"}},
        {{"alloc-test", "hold", "1GiB", "--duration", "-1s"}},
        {{"alloc-test", "hold", "1GiB", "--duration", "forever"}},
        {{"alloc-test", "churn", "--via", "carrier-pigeon"}, {2}, true},
        {{"alloc-test", "churn", "--ops", "0"}},
        {{"alloc-test", "churn", "--sizes", "1MiB:1KiB:x2"}},
        {{"alloc-test", "churn", "--duration", "0"}},
        {{"alloc-test", "churn", "--max-live", "0"}},
        // ---- reuse-sim (pure: no driver needed at all without --execute)
        {{"reuse-sim", "--strategy", "nope"}, {2}, true},
        {{"reuse-sim", "--strategy", ""}},
        {{"reuse-sim", "--strategy", "naive,,ring"}},
        {{"reuse-sim", "--workload", "quantum"}, {2}, true},
        {{"reuse-sim", "--trace", "/nonexistent.csv"}, {2}, true},
        {{"reuse-sim", "--trace", s.dir}},  // a directory
        {{"reuse-sim", "--trace", s.path("empty.csv")}, {2}, true},
        {{"reuse-sim", "--trace", s.path("comments.csv")}},
        {{"reuse-sim", "--trace", s.path("bad_header.csv")}, {2}, true},
        {{"reuse-sim", "--trace", s.path("truncated.csv")}, {2}, true},
        {{"reuse-sim", "--trace", s.path("zero_size.csv")}},
        {{"reuse-sim", "--trace", s.path("bad_action.csv")}},
        {{"reuse-sim", "--trace", s.path("few_fields.csv")}},
        {{"reuse-sim", "--trace", s.path("many_fields.csv")}},
        {{"reuse-sim", "--trace", s.path("huge_size.csv")}},
        {{"reuse-sim", "--trace", s.path("negative_size.csv")}},
        {{"reuse-sim", "--trace", s.path("bad_id.csv")}},
        {{"reuse-sim", "--trace", s.path("binary.csv")}},
        {{"reuse-sim", "--trace", s.path("rmm_bad_pointer.csv")}, {2}, true},
        {{"reuse-sim", "--trace", s.path("rmm_bad_action.csv")}},
        {{"reuse-sim", "--trace", s.path("rmm_truncated.csv")}},
        {{"reuse-sim", "--trace", s.path("rmm_zero.csv")}},
        {{"reuse-sim", "--trace", s.path("good.csv"), "--trace-format", "rmm"}},
        {{"reuse-sim", "--trace", s.path("good.csv"), "--trace-format", "parquet"}},
        {{"reuse-sim", "--trace", "-"}},  // stdin needs --trace-format
        {{"reuse-sim", "--trace", s.path("good.csv"), "--workload", "training"}},
        {{"reuse-sim", "--capacity", "lots"}},
        {{"reuse-sim", "--capacity", "0"}},
        {{"reuse-sim", "--capacity", "-1GiB"}},
        {{"reuse-sim", "--growth", "x3"}},
        {{"reuse-sim", "--ring-buffers", "0"}},
        {{"reuse-sim", "--bins", "banana"}},
        {{"reuse-sim", "--bins", ""}},
        {{"reuse-sim", "--max-split-size", "1MiB"}},
        {{"reuse-sim", "--roundup-power2-divisions", "3"}},
        {{"reuse-sim", "--roundup-power2-divisions", "[1:2"}},
        {{"reuse-sim", "--steps", "0"}},
        {{"reuse-sim", "--steps", "-1"}},
        {{"reuse-sim", "--sync-every", "x"}},
        {{"reuse-sim", "--timeline-points", "0"}},
        {{"reuse-sim", "--costs", s.path("costs_bad.json")}, {2}, true},
        {{"reuse-sim", "--costs", s.path("costs_wrong.json")}},
        {{"reuse-sim", "--costs", s.path("costs_array.json")}},
        {{"reuse-sim", "--costs", "/nonexistent.json"}},
        {{"reuse-sim", "--timeline", "/nonexistent/dir/x.csv"}, {2}, true},
        {{"reuse-sim", "--timeline", "/proc/x"}},
        {{"reuse-sim", "--save-trace", "/nonexistent/dir/t.csv"}, {2}, true},
        {{"reuse-sim", "--save-trace", s.dir}},
        {{"reuse-sim", "-d", "0"}},  // -d only with --execute
        {{"reuse-sim", "--execute", "--strategy", "nope"}},
        {{"reuse-sim", "--execute", "--capacity", "lots"}},
    };
    return v;
}

std::string joined(const Args& args) {
    std::string s = "gpumem";
    for (const auto& a : args) s += " '" + a + "'";
    return s;
}

}  // namespace

TEST_CASE("bad input: documented status, one stderr line, nothing on stdout") {
    const auto cases = bad_cases();
    CHECK(cases.size() >= 100);
    int json_cases = 0;
    for (const BadCase& c : cases) {
        CAPTURE(joined(c.args));
        const RunResult r = run_gpumem(c.args);
        CAPTURE(r.err);
        CAPTURE(r.out);
        CHECK(c.statuses.count(r.status) == 1);
        CHECK(r.stderr_lines() == 1);
        CHECK((!r.err.empty() && r.err.back() == '\n'));
        const bool has_json = std::find(c.args.begin(), c.args.end(), "--json") != c.args.end();
        if (!has_json) CHECK(r.out.empty());
        if (!c.json) continue;
        ++json_cases;
        Args with_json = c.args;
        with_json.push_back("--json");
        CAPTURE(joined(with_json));
        const RunResult j = run_gpumem(with_json);
        CAPTURE(j.out);
        CHECK(j.status == r.status);
        json doc;
        REQUIRE_NOTHROW(doc = json::parse(j.out));  // exactly one document: parse rejects trailing ones
        REQUIRE(doc.is_object());
        CHECK(doc.value("ok", true) == false);
        REQUIRE(doc.contains("error"));
        CHECK(doc["error"].value("status", -1) == j.status);
        CHECK(j.stderr_lines() <= 1);
    }
    CHECK(json_cases >= 20);
    MESSAGE(cases.size() << " bad invocations, " << json_cases << " of them also with --json");
}

// The third trace format, PyTorch memory snapshots, is read by
// tools/torch_snapshot_to_trace.py: bad files exit 1 with one line on stderr,
// and a pickle that names a callable is refused, not run (the same contract
// as gpumem's, for a tool that loads files people pass around).
TEST_CASE("bad input: torch snapshot converter refuses bad and hostile snapshots") {
    const char* tests_dir = std::getenv("GPUMEM_TESTS_DIR");
    const std::string tool = std::string(tests_dir ? tests_dir : GPUMEM_TESTS_SOURCE_DIR) + "/../tools/torch_snapshot_to_trace.py";
    if (run_program("/usr/bin/env", {"python3", "-c", "pass"}).status != 0) {
        MESSAGE("python3 not found: converter cases not run");
        return;
    }
    const Scratch& s = scratch();
    const std::string marker = s.path("converter-ran-code");
    // GLOBAL os.system, a string, TUPLE1, REDUCE: pickle.load would run it.
    s.write("hostile.pickle", "cos\nsystem\n(S'touch " + marker + "'\ntR.");
    s.write("not_a_pickle.pickle", "action,id,size,stream,tag\n");
    s.write("truncated.pickle", std::string("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c", 15));
    s.write("no_traces.pickle", "(dp0\nVsegments\np1\n(lp2\ns.");           // {'segments': []}
    s.write("bad_event.pickle", "(dp0\nVdevice_traces\np1\n(lp2\n(lp3\nI7\naas.");  // device_traces [[7]]
    // {'device_traces': [[{'action': 'alloc', 'addr': 'x', 'size': 1}]]}
    s.write("bad_addr.pickle",
            "(dp0\nVdevice_traces\np1\n(lp2\n(lp3\n(dp4\nVaction\np5\nValloc\np6\nsVaddr\np7\nVx\np8\nsVsize\np9\nI1\nsaas.");
    // LONG_BINPUT with a memo index of 0x30000000: 12 GB for the C unpickler.
    s.write("memo_bomb.pickle", std::string("(dp0\nr\x00\x00\x00\x30.", 11));
    // BYTEARRAY8 (protocol 5) declaring 11 GB in a 15-byte file: the Python
    // unpickler would allocate all of it before reading.
    s.write("bytearray_bomb.pickle", std::string("\x80\x05\x96\x12\x34\x56\x9b\x02\x00\x00\x00" "abc.", 15));
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"hostile.pickle", "refusing to load code"},
        {"not_a_pickle.pickle", "cannot load snapshot"},
        {"truncated.pickle", "cannot load snapshot"},
        {"missing.pickle", "No such file"},
        {"no_traces.pickle", "no 'device_traces'"},
        {"bad_event.pickle", "event 0: expected a dict, found int"},
        {"bad_addr.pickle", "'addr' is 'x'"},
        {"memo_bomb.pickle", "no 'device_traces'"},
        {"bytearray_bomb.pickle", "BYTEARRAY8 of 11196052498 bytes"},
    };
    for (const auto& [name, expected] : cases) {
        const std::string file = name;  // CAPTURE cannot take a structured binding under clang 14
        CAPTURE(file);
        const RunResult r = run_program("/usr/bin/env", {"python3", tool, s.path(name), s.path("out.csv")});
        CAPTURE(r.err);
        CHECK(r.status == 1);
        CHECK(r.stderr_lines() == 1);
        CHECK(r.err.rfind("torch_snapshot_to_trace: error: ", 0) == 0);
        CHECK(r.err.find(expected) != std::string::npos);
        CHECK(r.out.empty());
    }
    CHECK(access(marker.c_str(), F_OK) != 0);  // os.system never ran
    // A device the snapshot does not have is an error too, and a good snapshot converts.
    // {'device_traces': [[{'action': 'alloc', 'addr': 4096, 'size': 512}]]}
    s.write("good.pickle",
            "(dp0\nVdevice_traces\np1\n(lp2\n(lp3\n(dp4\nVaction\np5\nValloc\np6\nsVaddr\np7\nI4096\nsVsize\np8\nI512\nsaas.");
    const RunResult wrong_device = run_program("/usr/bin/env", {"python3", tool, s.path("good.pickle"), "-", "--device", "3"});
    CHECK(wrong_device.status == 1);
    CHECK(wrong_device.err.find("device 3 not in snapshot") != std::string::npos);
    const RunResult good = run_program("/usr/bin/env", {"python3", tool, s.path("good.pickle"), "-"});
    CHECK(good.status == 0);
    CHECK(good.out.find("\nalloc,0,512,0,\n") != std::string::npos);
}
