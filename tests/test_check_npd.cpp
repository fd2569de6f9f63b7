// gpumem check --format npd, node-problem-detector's custom plugin contract
// (pkg/custompluginmonitor/plugin/plugin.go): exit 0 OK, 1 NonOK, anything
// else Unknown; stdout, trimmed, is the condition's message, cut at
// max_output_length bytes (80 by default). Checked here: the status and the
// line of every verdict from synthetic results, the binary without a driver
// and with bad input, and deploy/kubernetes/gpumem-monitor.json read as
// NPD's CustomPluginConfig reads it (pkg/custompluginmonitor/types).
#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/check_plan.hpp"
#include "bench/check_engine.hpp"
#include "check/check_report.hpp"
#include "check_fixtures.hpp"
#include "cli_harness.hpp"
#include "in_process.hpp"
#include "tests_dir.hpp"

using namespace gpumem;
using namespace gpumem::cli;
using nlohmann::json;

namespace {

DeviceIdentity gpu(int cuda) { return test_gpu_identity(cuda); }

// `gpus` GPUs whose every check passed.
CheckResults passing(int gpus) {
    CheckResults r;
    for (int d = 0; d < gpus; ++d) {
        CheckDeviceResult device{gpu(d), {}};
        device.checks.push_back(judged("cuda.context", 0.31, Threshold{10, "default"}));
        device.checks.push_back(judged("fill.verify", 0.0, Threshold{0, "default"}));
        device.checks.push_back(judged("copy.h2d", 55.3, Threshold{47.26, "75% of PCIe Gen5 x16's 63 GB/s"}));
        r.devices.push_back(std::move(device));
    }
    r.seconds = 0.42;
    return r;
}

CheckRequest request(CheckLevel level) {
    CheckRequest q;
    q.settings.level = level;
    return q;
}

Report::PluginOutput npd(const CheckResults& results, CheckLevel level = CheckLevel::standard) {
    const Report report = check_report(request(level), results, OutputOptions{Format::npd});
    REQUIRE(report.plugin);
    return *report.plugin;
}

// What NPD makes of the line: one line, whole within max_output_length.
void check_line(const std::string& line) {
    CAPTURE(line);
    CHECK(!line.empty());
    CHECK(line.size() <= kNpdLineBytes);
    CHECK(line.find('\n') == std::string::npos);
    CHECK(line.find('\t') == std::string::npos);
}

// A Go duration as time.ParseDuration reads the ones NPD's configurations
// use ("30s", "5m", "1h30m", "1.5s"), in seconds; nullopt if not one.
std::optional<double> go_duration(const std::string& text) {
    static const std::map<std::string, double> units{{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
    double total = 0;
    std::size_t i = 0;
    if (text.empty()) return std::nullopt;
    while (i < text.size()) {
        const std::size_t start = i;
        while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
        if (i == start) return std::nullopt;
        const double number = std::stod(text.substr(start, i - start));
        const std::size_t unit_start = i;
        while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
        const auto unit = units.find(text.substr(unit_start, i - unit_start));
        if (unit == units.end()) return std::nullopt;
        total += number * unit->second;
    }
    return total;
}

// The keys a JSON object of NPD's configuration may have: its Go struct's
// json tags. Go's decoder skips other keys silently, so a misspelt one
// would be a setting NPD never sees.
void only_keys(const json& object, const std::set<std::string>& allowed) {
    REQUIRE(object.is_object());
    // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
    for (auto item = object.begin(); item != object.end(); ++item) {
        const std::string key = item.key();
        CAPTURE(key);
        CHECK(allowed.count(key) == 1);
    }
}

json monitor_config() {
    std::ifstream in(tests_dir() + "/../deploy/kubernetes/gpumem-monitor.json");
    REQUIRE(in.good());
    return json::parse(in);
}

}  // namespace

TEST_CASE("check --format npd: fail exits 1 with the worst check, its GPU and remediation") {
    CheckResults r = passing(1);
    r.devices[0].checks[1] = judged("fill.verify", 2.0, Threshold{0, "default"}, "first bad word at 0x7f0000001000");
    const Report::PluginOutput failed = npd(r);
    CHECK(failed.status == 1);
    CHECK(failed.text == "FAIL fill.verify on GPU 0: service; 2 > 0 (default); first bad word at 0x7f00...");
    check_line(failed.text);

    // Several GPUs: the check with the worst remediation is named (a drain
    // on GPU 0 first, bad words on GPU 2 later), with the counts.
    CheckResults fleet = passing(8);
    fleet.devices[0].checks[2] = judged("copy.h2d", 31.2, Threshold{47.26, "75% of PCIe Gen5 x16's 63 GB/s"});
    fleet.devices[2].checks[1] = judged("fill.verify", 2.0, Threshold{0, "default"});
    fleet.devices[2].checks[2] = judged("copy.h2d", 30.0, Threshold{47.26, "75% of PCIe Gen5 x16's 63 GB/s"});
    const Report::PluginOutput several = npd(fleet);
    CHECK(several.status == 1);
    CHECK(several.text.rfind("FAIL fill.verify on GPU 2 [3 checks on 2 of 8 GPUs]: service; 2 > 0", 0) == 0);
    check_line(several.text);

    // Several checks of one GPU: counted, without a GPU count.
    CheckResults one = passing(2);
    one.devices[1].checks[0] = failed_check("cuda.context", "cudaSetDevice: GPU is lost");
    one.devices[1].checks[2] = judged("copy.h2d", 31.2, Threshold{47.26, "75% of PCIe Gen5 x16's 63 GB/s"});
    const Report::PluginOutput same_gpu = npd(one);
    CHECK(same_gpu.text.rfind("FAIL cuda.context on GPU 1 [2 checks]: reset-gpu; ", 0) == 0);
    check_line(same_gpu.text);
}

TEST_CASE("check --format npd: warn and pass exit 0, unknown exits 2, each a line of at most 80 bytes") {
    const Report::PluginOutput passed = npd(passing(8), CheckLevel::quick);
    CHECK(passed.status == 0);
    CHECK(passed.text == "PASS 24 checks on 8 GPUs (level quick, 0.42 s)");
    check_line(passed.text);
    CHECK(npd(passing(1)).text == "PASS 3 checks on 1 GPU (level standard, 0.42 s)");

    CheckResults warned = passing(1);
    warned.devices[0].checks.push_back(judged("nvml.processes", 1.0, Threshold{0, "default"}, "pid 7 python (1.0 GiB)"));
    REQUIRE(warned.devices[0].checks.back().verdict == Verdict::warn);
    const Report::PluginOutput warning = npd(warned);
    CHECK(warning.status == 0);  // no action on the node: NPD's condition stays false
    CHECK(warning.text.rfind("WARN nvml.processes on GPU 0: ", 0) == 0);
    CHECK(warning.text.find("pid 7 python") != std::string::npos);
    check_line(warning.text);

    // A check that could not run, and none failed: NPD's Unknown.
    CheckResults unsure = warned;
    unsure.devices[0].checks.push_back(unknown_check("nvml.remapped_rows.pending", "nvmlDeviceGetRemappedRows failed: GPU is lost"));
    const Report::PluginOutput unknown = npd(unsure);
    CHECK(unknown.status == 2);
    CHECK(unknown.text.rfind("UNKNOWN nvml.remapped_rows.pending on GPU 0: nvmlDeviceGetRemappedRows failed", 0) == 0);
    check_line(unknown.text);
    // A failure beside it is still a problem: fail is worse than unknown.
    unsure.devices[0].checks.push_back(failed_check("alloc.max", "out of memory"));
    CHECK(npd(unsure).status == 1);

    // --strict: a warning is a failure, and so a problem.
    CheckResults strict = passing(1);
    CheckOutcome held = judged("nvml.processes", 1.0, Threshold{0, "default"}, "pid 7 python");
    apply_strict(held, true);
    strict.devices[0].checks.push_back(held);
    CHECK(npd(strict).status == 1);

    // A reason of many lines and many bytes, some of them UTF-8: one line,
    // cut at a character's start, within 80 bytes.
    CheckResults wordy = passing(1);
    std::string reason = "first line\nsecond\tline ";
    for (int i = 0; i < 40; ++i) reason += "\xc3\xa9";  // é
    wordy.devices[0].checks.push_back(failed_check("alloc.max", reason));
    const std::string cut = npd(wordy).text;
    check_line(cut);
    CHECK(cut.size() > 70);
    CHECK(cut.substr(cut.size() - 3) == "...");
    CHECK((static_cast<unsigned char>(cut[cut.size() - 4]) == 0xa9));  // a whole é before "..."
}

TEST_CASE("npd_line: one line within 80 bytes, never a broken UTF-8 character") {
    CHECK(npd_line("  OK \n") == "OK");
    CHECK(npd_line(std::string(80, 'x')) == std::string(80, 'x'));
    CHECK(npd_line(std::string(81, 'x')) == std::string(77, 'x') + "...");
    for (std::size_t lead = 70; lead < 80; ++lead) {
        const std::string line = npd_line(std::string(lead, 'x') + "\xe2\x89\xa5\xe2\x89\xa5\xe2\x89\xa5\xe2\x89\xa5");  // ≥≥≥≥
        CAPTURE(lead);
        CHECK(line.size() <= kNpdLineBytes);
        const std::string kept = line.substr(0, line.size() - 3);
        if (kept.size() > lead) CHECK((kept.size() - lead) % 3 == 0);  // whole ≥ only
    }
}

TEST_CASE("gpumem check --format npd: no verdict (no driver here) is unknown, exit 2 with one line") {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"check", "--level", "quick", "--format", "npd"}, {"--format=npd", "check"}}) {
        const RunResult r = run_gpumem(args, {"CUDA_VISIBLE_DEVICES"});
        CAPTURE(r.out);
        CAPTURE(r.err);
        if (r.status == 0 || r.status == 1) {
            // A GPU machine: a verdict, in the contract all the same.
            if (r.status == 1) CHECK(r.out.rfind("FAIL ", 0) == 0);
            else CHECK((r.out.rfind("PASS ", 0) == 0 || r.out.rfind("WARN ", 0) == 0));
        } else {
            CHECK(r.status == 2);
            CHECK(r.out.rfind("UNKNOWN ", 0) == 0);
            CHECK(r.out.find("usage error") == std::string::npos);
        }
        REQUIRE(!r.out.empty());
        CHECK(r.out.back() == '\n');
        check_line(r.out.substr(0, r.out.size() - 1));
    }
    // No usable GPU under gpumem's own statuses is 3, which NPD reads as
    // unknown too; --format npd says 2, the status its contract names.
    const RunResult hidden = run_gpumem({"--format", "npd", "check", "--level", "quick"}, {"CUDA_VISIBLE_DEVICES=-1"});
    CAPTURE(hidden.out);
    CAPTURE(hidden.err);
    CHECK(hidden.status == 2);
    CHECK(hidden.out.rfind("UNKNOWN ", 0) == 0);
}

TEST_CASE("gpumem --format npd: a bad command line is unknown (2) with its line; other commands refuse it") {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"--format", "npd", "check", "--level", "fast"},
             {"--format", "npd", "check", "--threshold", "copy.h2d=-1"},
             {"--format", "npd", "check", "--bogus"}}) {
        const RunResult r = run_gpumem(args);
        CAPTURE(args);
        CAPTURE(r.out);
        CHECK(r.status == 2);
        CHECK(r.out.rfind("UNKNOWN usage error: ", 0) == 0);
        REQUIRE(!r.out.empty());
        check_line(r.out.substr(0, r.out.size() - 1));
        CHECK(r.stderr_lines() == 1);
    }
    // A command that is no plugin refuses it as any format it does not offer
    // (issue 48): exit 2, the message on stderr, no plugin line.
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"--format", "npd", "info"}, {"--format", "npd", "--list", "checks"}}) {
        const RunResult r = run_gpumem(args);
        CAPTURE(args);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
    }
    const RunResult info = run_gpumem({"--format", "npd", "info"});
    CHECK(info.err.find("offered by check only") != std::string::npos);
    // Formats that contradict each other: the plain usage error, nothing on stdout.
    const RunResult both = run_gpumem({"--format", "npd", "--json", "check"});
    CHECK(both.status == 2);
    CHECK(both.out.find("UNKNOWN") == std::string::npos);
}

TEST_CASE("deploy/kubernetes/gpumem-monitor.json: NPD's custom plugin monitor configuration") {
    const json config = monitor_config();
    // CustomPluginConfig's json tags.
    only_keys(config, {"plugin", "pluginConfig", "source", "conditions", "rules", "metricsReporting"});
    CHECK(config.at("plugin") == "custom");  // Validate(): the only plugin NPD supports
    REQUIRE(config.at("source").is_string());
    CHECK(!config.at("source").get<std::string>().empty());
    if (config.contains("metricsReporting")) CHECK(config["metricsReporting"].is_boolean());

    // pluginGlobalConfig: every field the issue asks for, of its Go type.
    const json& global = config.at("pluginConfig");
    only_keys(global, {"invoke_interval", "timeout", "max_output_length", "concurrency",
                       "enable_message_change_based_condition_update", "skip_initial_status"});
    REQUIRE(global.at("invoke_interval").is_string());
    REQUIRE(global.at("timeout").is_string());
    const std::optional<double> interval = go_duration(global["invoke_interval"]);
    const std::optional<double> timeout = go_duration(global["timeout"]);
    REQUIRE(interval);
    REQUIRE(timeout);
    CHECK(*timeout < *interval);  // one run ends before the next is due
    REQUIRE(global.at("max_output_length").is_number_integer());
    CHECK(global["max_output_length"].get<std::size_t>() >= kNpdLineBytes);  // the whole line shown
    REQUIRE(global.at("concurrency").is_number_integer());
    CHECK(global["concurrency"].get<int>() >= 1);
    CHECK(global.at("enable_message_change_based_condition_update").is_boolean());

    // Conditions: types.Condition's type, reason and message.
    std::set<std::string> condition_types;
    REQUIRE(config.at("conditions").is_array());
    for (const json& c : config["conditions"]) {
        only_keys(c, {"type", "reason", "message"});
        CHECK(c.at("reason").is_string());
        CHECK(c.at("message").is_string());
        condition_types.insert(c.at("type").get<std::string>());
    }
    CHECK(condition_types.count("GpuMemoryUnhealthy") == 1);

    // Rules: CustomRule's fields; a permanent one's condition has its
    // default (Validate() refuses it otherwise), and its timeout is within
    // the global one (Validate() again).
    REQUIRE(config.at("rules").is_array());
    REQUIRE(config["rules"].size() == 1);
    for (const json& rule : config["rules"]) {
        only_keys(rule, {"type", "condition", "reason", "path", "args", "timeout", "invoke_interval"});
        CHECK(rule.at("type") == "permanent");
        CHECK(condition_types.count(rule.at("condition").get<std::string>()) == 1);
        REQUIRE(rule.at("reason").is_string());
        CHECK(!rule["reason"].get<std::string>().empty());
        REQUIRE(rule.at("timeout").is_string());
        const std::optional<double> rule_timeout = go_duration(rule["timeout"]);
        REQUIRE(rule_timeout);
        CHECK(*rule_timeout <= *timeout);
        // Where the Debian package installs the binary, run with the rule's
        // arguments: gpumem accepts them (no usage error) and answers in
        // NPD's contract.
        CHECK(rule.at("path") == "/usr/bin/gpumem");
        REQUIRE(rule.at("args").is_array());
        std::vector<std::string> args;
        for (const json& a : rule["args"]) args.push_back(a.get<std::string>());
        CHECK(args == std::vector<std::string>{"check", "--level", "quick", "--format", "npd"});
        CHECK(parse_only(args) == 0);  // everything check() checks, before the driver
        const RunResult r = run_gpumem(args);
        CAPTURE(r.out);
        CAPTURE(r.err);
        CHECK((r.status == 0 || r.status == 1 || r.status == 2));
        CHECK(r.out.find("usage error") == std::string::npos);
        REQUIRE(!r.out.empty());
        check_line(r.out.substr(0, r.out.size() - 1));
    }
}

TEST_CASE("check --format npd: a run that judged no device is UNKNOWN (2), not a crash") {
    const Report::PluginOutput none = npd(CheckResults{});
    CHECK(none.status == 2);
    CHECK(none.text == "UNKNOWN no GPU was checked (level standard)");
}
