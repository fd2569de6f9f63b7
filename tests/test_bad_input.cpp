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

// The only format asked for is prometheus.
bool prometheus_alone(const Args& args) {
    int formats = 0;
    bool prometheus = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--json" || a == "--csv" || a.rfind("--format", 0) == 0) ++formats;
        if (a == "--format=prometheus" || (a == "--format" && i + 1 < args.size() && args[i + 1] == "prometheus")) prometheus = true;
    }
    return prometheus && formats == 1;
}

// The only format asked for is nagios: a plugin's UNKNOWN line comes instead
// of a usage error's 2, which Nagios would read as CRITICAL.
bool nagios_alone(const Args& args) {
    int formats = 0;
    bool nagios = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--json" || a == "--csv" || a.rfind("--format", 0) == 0) ++formats;
        if (a == "--format=nagios" || (a == "--format" && i + 1 < args.size() && args[i + 1] == "nagios")) nagios = true;
    }
    // Only check is a Nagios plugin: elsewhere --format nagios is a plain
    // usage error, with nothing on stdout (issue 48).
    const bool check = std::find(args.begin(), args.end(), "check") != args.end();
    return nagios && formats == 1 && check;
}

// A failure's exposition: its last sample is gpumem_run_exit_status, `status`.
bool exposition_of_status(const std::string& out, int status) {
    const std::size_t last = out.rfind('\n', out.size() - 2);
    const std::string line = out.substr(last == std::string::npos ? 0 : last + 1);
    const std::string tail = "} " + std::to_string(status) + "\n";
    return line.rfind("gpumem_run_exit_status{", 0) == 0 && line.size() > tail.size() &&
           line.compare(line.size() - tail.size(), tail.size(), tail) == 0;
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
        // An option is named once: "--xid-since 'x': ...", not "--xid-since: --xid-since 'x': ...".
        const std::size_t option = r.err.find("error: --");
        if (option != std::string::npos) {
            const std::size_t colon = r.err.find(": ", option + 7);
            if (colon != std::string::npos) {
                const std::string name = r.err.substr(option + 7, colon - option - 7);
                CHECK(r.err.compare(colon + 2, name.size() + 1, name + " ") != 0);
            }
        }
        // Only a consistent --json brings a document; contradicting formats bring none.
        const bool has_json = std::find(c.args.begin(), c.args.end(), "--json") != c.args.end();
        const bool other_format = std::any_of(c.args.begin(), c.args.end(),
                                              [](const std::string& a) { return a == "--csv" || a.rfind("--format", 0) == 0; });
        // --format prometheus alone: nothing, or the failure's exposition
        // (a textfile collector's file then says the run failed, and why).
        if (prometheus_alone(c.args)) CHECK((r.out.empty() || exposition_of_status(r.out, r.status)));
        else if (nagios_alone(c.args)) CHECK((r.out.rfind("GPUMEM UNKNOWN - ", 0) == 0 && r.out.find('\n') == r.out.size() - 1));
        else if (!has_json || other_format) CHECK(r.out.empty());
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

