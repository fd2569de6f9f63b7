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

#include "bad_input.hpp"
#include "cli_harness.hpp"

using nlohmann::json;
using bad_input::Args;
using bad_input::BadCase;
using bad_input::Scratch;
using bad_input::scratch;

namespace {


std::vector<BadCase> bad_cases() {
    const Scratch& s = scratch();
    std::vector<BadCase> all;
    for (auto* part : {bad_input::global_cases, bad_input::info_cases, bad_input::memset_cases, bad_input::copy_cases,
                       bad_input::alloc_test_cases, bad_input::reuse_sim_cases,
                       bad_input::report_cases, bad_input::check_cases}) {
        std::vector<BadCase> cases = part(s);
        all.insert(all.end(), cases.begin(), cases.end());
    }
    return all;
}

std::string joined(const BadCase& c) {
    std::string s;
    for (const auto& e : c.env) s += (e.find('=') == std::string::npos ? "-u " : "") + e + " ";
    s += "gpumem";
    const Args& args = c.args;
    for (const auto& a : args) s += " '" + a + "'";
    return s;
}

}  // namespace

TEST_CASE("bad input: documented status, one stderr line, nothing on stdout") {
    const auto cases = bad_cases();
    CHECK(cases.size() >= 100);
    int json_cases = 0;
    for (const BadCase& c : cases) {
        CAPTURE(joined(c));
        const RunResult r = run_gpumem(c.args, c.env);
        CAPTURE(r.err);
        CAPTURE(r.out);
        CHECK(c.statuses.count(r.status) == 1);
        CHECK(r.stderr_lines() == 1);
        CHECK((!r.err.empty() && r.err.back() == '\n'));
        // Only a consistent --json brings a document; contradicting formats bring none.
        const bool has_json = std::find(c.args.begin(), c.args.end(), "--json") != c.args.end();
        const bool other_format = std::any_of(c.args.begin(), c.args.end(),
                                              [](const std::string& a) { return a == "--csv" || a.rfind("--format", 0) == 0; });
        if (!has_json || other_format) CHECK(r.out.empty());
        if (!c.json) continue;
        ++json_cases;
        Args with_json = c.args;
        with_json.push_back("--json");
        CAPTURE(joined(BadCase{with_json, c.statuses, c.json, c.env}));
        const RunResult j = run_gpumem(with_json, c.env);
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
