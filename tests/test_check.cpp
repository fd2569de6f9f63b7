// gpumem check without a GPU: the check table, threshold options and files,
// default thresholds, verdicts and --strict, the worst of several, the NVML
// checks of synthetic health figures, the pairs of p2p rounds, and the
// report of synthetic results (its keys against check_schema(), the table,
// the failure lines, and the Prometheus text checked by promtool).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "base/check_plan.hpp"
#include "base/errors.hpp"
#include "bench/check_engine.hpp"
#include "check/check_report.hpp"
#include "core/thresholds_file.hpp"
#include "check_fixtures.hpp"
#include "cli_harness.hpp"
#include "cli/commands.hpp"
#include "in_process.hpp"
#include "usage_error.hpp"
#include "render_widths.hpp"

using namespace gpumem;
using namespace gpumem::cli;
using nlohmann::json;

namespace {

double value_of(const std::string& id, const std::string& text) { return parse_threshold_value(check_row(id), text); }

using gpumem::test::usage_error;

// A temporary folder for threshold files, removed at the end.
struct Folder {
    std::string dir;
    Folder() {
        char tmpl[] = "/tmp/gpumem-check-test.XXXXXX";
        REQUIRE(mkdtemp(tmpl) != nullptr);
        dir = tmpl;
    }
    ~Folder() { (void)std::system(("rm -rf '" + dir + "'").c_str()); }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(dir + "/" + name) << text;
        return dir + "/" + name;
    }
};

DeviceIdentity identity(int cuda) { return test_gpu_identity(cuda); }

// An H200 as NVML describes a healthy one, idle.
CheckDeviceFigures healthy(int cuda) {
    CheckDeviceFigures f;
    f.device = identity(cuda);
    NvmlHealth h;
    h.ecc_enabled = h.ecc_pending = true;
    h.ecc_corrected_volatile = h.ecc_uncorrected_volatile = h.ecc_corrected_aggregate = h.ecc_uncorrected_aggregate = 0;
    h.remapped_rows_correctable = h.remapped_rows_uncorrectable = 0;
    h.remapped_rows_pending = h.remapped_rows_failure = false;
    h.memory_clock_mhz = h.memory_clock_max_mhz = 3201;
    h.clock_event_reasons = 0x1;  // gpu_idle
    h.recovery_action = 0;        // none
    f.health = h;
    f.pcie = NvmlPcieLink{1, 16, 5, 16};  // an idle link at Gen1
    f.peak_bps = 4.8e12;
    f.processes_known = true;
    NvmlMemory m;
    m.total = 150754820096;  // 140.4 GiB
    m.reserved = 570425344;  // 544 MiB
    m.used = 0;
    m.free = m.total - m.reserved;
    m.has_reserved = true;
    f.memory = m;
    f.seconds = 0.016;
    return f;
}

const CheckOutcome& find(const std::vector<CheckOutcome>& checks, const std::string& id) {
    for (const CheckOutcome& c : checks)
        if (c.id == id) return c;
    FAIL("no check " << id);
    return checks.front();
}

}  // namespace

TEST_CASE("check table: levels, verdicts, every check's row") {
    CHECK(kCheckLevels.parse("long") == CheckLevel::deep);
    CHECK(kVerdicts.name_list() == std::vector<std::string_view>{"pass", "warn", "fail", "n/a", "unknown"});
    CHECK(worst_of({Verdict::na, Verdict::pass}) == Verdict::pass);
    CHECK(worst_of({Verdict::pass, Verdict::warn, Verdict::na}) == Verdict::warn);
    CHECK(worst_of({Verdict::fail, Verdict::warn}) == Verdict::fail);
    // A check that could not run is worse than a warning and better than a
    // failure (Nagios' CRITICAL > UNKNOWN > WARNING > OK).
    CHECK(worst_of({Verdict::pass, Verdict::unknown, Verdict::warn}) == Verdict::unknown);
    CHECK(worst_of({Verdict::unknown, Verdict::fail}) == Verdict::fail);
    CHECK(worst_of({Verdict::na, Verdict::unknown}) == Verdict::unknown);
    CHECK(kRemediations.name_list() == std::vector<std::string_view>{"none", "drain", "reset-gpu", "reboot", "service"});
    CHECK(worse_remediation(Remediation::drain, Remediation::reboot) == Remediation::reboot);
    CHECK(worse_remediation(Remediation::service, Remediation::none) == Remediation::service);
    CHECK(worse_remediation(Remediation::none, Remediation::none) == Remediation::none);
    for (const Named<Remediation>& row : kRemediations) CHECK(!row.help.empty());
    CHECK(worst_of({Verdict::na, Verdict::na}) == Verdict::na);
    CHECK(worst_of({}) == Verdict::na);
    for (const Named<CheckKind>& row : kChecks) {
        CAPTURE(row.name);
        CHECK(!row.value.unit.empty());
        CHECK(!row.value.threshold.empty());
        CHECK((row.value.beyond == Verdict::fail || row.value.beyond == Verdict::warn));
        CHECK(!row.value.source.empty());
        CHECK(runs_at(row.value, CheckLevel::deep));
        // The NVML checks are quick's; everything else needs a context.
        const std::string_view name(row.name);
        const bool signal = name.substr(0, 5) == "nvml." || name.substr(0, 5) == "node." || name.substr(0, 4) == "xid." || name.substr(0, 7) == "nvlink.";
        CHECK(runs_at(row.value, CheckLevel::quick) == signal);
    }
    CHECK(p2p_check_id(0, 1) == "p2p.0-1");
    CHECK(check_row("p2p.3-12").value.per_pair);
    CHECK(usage_error([] { check_row("p2p.1-1"); }).find("two different devices") != std::string::npos);
    CHECK(usage_error([] { check_row("p2p.1"); }).find("p2p.A-B") != std::string::npos);
    CHECK(usage_error([] { check_row("copy.h2x"); }).find("unknown check 'copy.h2x'") != std::string::npos);
}

TEST_CASE("check thresholds: values in each check's unit, or with a unit") {
    CHECK(value_of("copy.h2d", "45") == doctest::Approx(45));
    CHECK(value_of("copy.h2d", "45GB/s") == doctest::Approx(45));
    CHECK(value_of("copy.h2d", "40GiB/s") == doctest::Approx(40 * 1.073741824));
    CHECK(value_of("copy.h2d", "10TB/s") == doctest::Approx(10000));
    CHECK(value_of("alloc.max", "60GiB") == doctest::Approx(60.0 * (1ULL << 30)));
    CHECK(value_of("alloc.max", "4096") == 4096);
    CHECK(value_of("nvml.memory_clock", "1500MHz") == 1500);
    CHECK(value_of("nvml.pcie.link", "x8") == 8);
    CHECK(value_of("nvml.pcie.link", "16lanes") == 16);
    CHECK(value_of("cuda.context", "2.5s") == doctest::Approx(2.5));
    // A threshold in seconds takes every form of a TIME.
    CHECK(value_of("cuda.context", "500ms") == doctest::Approx(0.5));
    CHECK(value_of("cuda.context", "1m30s") == doctest::Approx(90));
    CHECK(value_of("cuda.context", "0") == 0);
    CHECK(value_of("nvml.ecc.corrected.volatile", "100") == 100);
    CHECK(value_of("copy.h2d", "0") == 0);
    // A count is an N of VALUES: decimal or 0x hexadecimal.
    CHECK(value_of("node.gpus", "0x8") == 8);
    CHECK(value_of("nvml.ecc.corrected.volatile", "0X10") == 16);
    CHECK(parse_expect_gpus("0x8") == 8);
    CHECK_THROWS_AS(parse_expect_gpus("0x"), UsageError);
    CHECK_THROWS_AS(parse_expect_gpus("0x0"), UsageError);
    CHECK_THROWS_AS(value_of("nvml.ecc.corrected.volatile", "0xZZ"), UsageError);
    const char* bad[][2] = {
        {"copy.h2d", "nan"},          {"copy.h2d", "inf"},        {"copy.h2d", "-1"},         {"copy.h2d", "-1GB/s"},
        {"copy.h2d", "1e300"},        {"copy.h2d", "2000TB/s"},   {"copy.h2d", ""},           {"copy.h2d", "fast"},
        {"alloc.max", "1PiB"},        {"alloc.max", "-5GiB"},     {"fill.verify", "1.5"},     {"fill.verify", "18446744073709551616"},
        {"nvml.pcie.link", "x65"},    {"cuda.context", "2 days"}, {"nvml.ecc.mode", "1"},     {"nvml.remapped_rows.pending", "0"},
    };
    for (const auto& pair : bad) {
        const std::string id = pair[0], text = pair[1];  // CAPTURE cannot take a structured binding under clang 14
        CAPTURE(id);
        CAPTURE(text);
        CHECK_THROWS_AS(value_of(id, text), UsageError);
    }
    CHECK(parse_threshold_option("copy.h2d=45GB/s") == std::pair<std::string, double>{"copy.h2d", 45});
    CHECK(parse_threshold_option("p2p=100").first == "p2p");
    CHECK(parse_threshold_option("p2p.0-1=100").first == "p2p.0-1");
    for (const char* text : {"copy.h2d", "=5", "copy.h2d=", "copy.h3d=5", "p2p.0-0=5"}) {
        CAPTURE(text);
        CHECK_THROWS_AS(parse_threshold_option(text), UsageError);
    }
}

TEST_CASE("check thresholds: files, and --threshold over them") {
    const ThresholdOverrides good = parse_threshold_file_text(R"({"copy.h2d": "45GB/s", "alloc.max": 1e9, "p2p": 100})", "t.json");
    CHECK(good.at("copy.h2d").value == doctest::Approx(45));
    CHECK(good.at("copy.h2d").source == "t.json");
    CHECK(good.at("alloc.max").value == doctest::Approx(1e9));
    CHECK(good.at("p2p").value == 100);
    CHECK(parse_threshold_file_text("{}", "t.json").empty());
    const std::pair<const char*, const char*> bad[] = {
        {"{", "t.json: not JSON"},
        {"[1, 2]", "t.json: expected a JSON object"},
        {"\"copy.h2d\"", "t.json: expected a JSON object"},
        {R"({"copy.h3d": 5})", "t.json: unknown check 'copy.h3d'"},
        {R"({"copy.h2d": null})", "t.json: the threshold of copy.h2d must be a number"},
        {R"({"copy.h2d": [45]})", "t.json: the threshold of copy.h2d must be a number"},
        {R"({"copy.h2d": -1})", "t.json: threshold of copy.h2d '-1' is negative"},
        {R"({"copy.h2d": "nan"})", "t.json: threshold of copy.h2d"},
        {R"({"fill.verify": 18446744073709551616})", "t.json: threshold of fill.verify"},
        {R"({"nvml.ecc.mode": 1})", "t.json: nvml.ecc.mode takes no threshold"},
        {R"({"expect-gpu": 8})", "t.json: unknown check 'expect-gpu'"},
    };
    for (const auto& item : bad) {
        const std::string text = item.first, message = item.second;
        CAPTURE(text);
        CHECK(usage_error([&] { parse_threshold_file_text(text, "t.json"); }).rfind(message, 0) == 0);
    }

    // A key's typo is offered the key meant, the option's name among the check ids.
    CHECK(usage_error([] { parse_threshold_file_text(R"({"expect-gpu": 8})", "t.json"); }).find("did you mean 'expect-gpus'?") !=
          std::string::npos);
    CHECK(usage_error([] { parse_threshold_file_text(R"({"copy.h2x": 8})", "t.json"); }).find("did you mean 'copy.h2d'?") !=
          std::string::npos);
    CHECK(parse_threshold_file_text(R"({"expect-gpus": "0x8"})", "t.json").at("node.gpus").value == 8);

    Folder folder;
    const std::string file = folder.write("t.json", R"({"copy.h2d": 40, "copy.d2h": 41})");
    const ThresholdOverrides both = parse_threshold_overrides({"copy.h2d=50"}, file);
    CHECK(both.at("copy.h2d").value == 50);
    CHECK(both.at("copy.h2d").source == "--threshold");
    CHECK(both.at("copy.d2h").source == file);
    CHECK(usage_error([&] { parse_threshold_overrides({}, folder.write("empty.json", "")); }).find(": empty") != std::string::npos);
    CHECK(usage_error([&] { parse_threshold_overrides({}, folder.write("blank.json", " \n")); }).find(": empty") != std::string::npos);
    CHECK(usage_error([&] { parse_threshold_overrides({}, folder.dir); }).find("is a directory") != std::string::npos);
    const std::string fifo = folder.dir + "/fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(usage_error([&] { parse_threshold_overrides({}, fifo); }).find("not a regular file") != std::string::npos);
    CHECK(usage_error([&] { parse_threshold_overrides({}, folder.dir + "/missing.json"); }).find("No such file") != std::string::npos);
    CHECK(usage_error([&] { parse_threshold_overrides({}, std::string()); }) == "--thresholds: empty file name");
    CHECK(usage_error([] { parse_threshold_overrides({"copy.h2d=1", "copy.h2d=2"}, std::nullopt); }).find("twice") != std::string::npos);
}

TEST_CASE("check thresholds: defaults derived from the GPU's own figures") {
    CHECK(*pcie_rate_bps(5, 16) == doctest::Approx(63.015e9).epsilon(1e-4));
    CHECK(*pcie_rate_bps(4, 16) == doctest::Approx(31.51e9).epsilon(1e-3));
    CHECK(*pcie_rate_bps(1, 1) == doctest::Approx(0.25e9));
    CHECK_FALSE(pcie_rate_bps(0, 16));
    CHECK_FALSE(pcie_rate_bps(5, 0));
    const std::optional<Reference> link = pcie_reference(5u, 16u);
    REQUIRE(link);
    CHECK(link->name == "PCIe Gen5 x16's 63 GB/s");
    const CheckKind& h2d = check_row("copy.h2d").value;
    const std::optional<Threshold> t = threshold_for("copy.h2d", h2d, {}, link);
    REQUIRE(t);
    CHECK(t->value == doctest::Approx(0.6 * 63.015));
    CHECK(t->basis == "60% of PCIe Gen5 x16's 63 GB/s");
    CHECK_FALSE(threshold_for("copy.h2d", h2d, {}, std::nullopt));  // no link figures: no threshold
    ThresholdOverrides overrides{{"copy.h2d", {45, "--threshold"}}, {"p2p", {100, "f.json"}}};
    CHECK(threshold_for("copy.h2d", h2d, overrides, link)->value == 45);
    CHECK(threshold_for("p2p.1-0", check_row("p2p.1-0").value, overrides, link)->basis == "set by f.json");
    overrides["p2p.1-0"] = {200, "--threshold"};
    CHECK(threshold_for("p2p.1-0", check_row("p2p.1-0").value, overrides, link)->value == 200);
    CHECK(threshold_for("p2p.0-1", check_row("p2p.0-1").value, overrides, link)->value == 100);
    // A copy reads and writes each byte: half the peak.
    const std::optional<Reference> half = peak_reference(4.8e12, ThresholdRule::copy_fraction);
    CHECK(threshold_for("copy.d2d", check_row("copy.d2d").value, {}, half)->value == doctest::Approx(0.65 * 2400));
    CHECK(threshold_for("memset.bandwidth", check_row("memset.bandwidth").value, {}, peak_reference(4.8e12, ThresholdRule::peak_fraction))
              ->value == doctest::Approx(3840));
    CHECK(threshold_for("alloc.max", check_row("alloc.max").value, {}, free_reference(100ULL << 30))->value ==
          doctest::Approx(0.9 * (100ULL << 30)));
    CHECK_FALSE(threshold_for("nvml.ecc.corrected.volatile", check_row("nvml.ecc.corrected.volatile").value, {}, std::nullopt));
    CHECK(threshold_for("fill.verify", check_row("fill.verify").value, {}, std::nullopt)->value == 0);
}

TEST_CASE("check verdicts: comparisons, the warning band, n/a, --strict") {
    const Threshold t{47.3, "75% of PCIe Gen5 x16's 63 GB/s"};
    CheckOutcome pass = judged("copy.h2d", 55.3, t);
    CHECK(pass.verdict == Verdict::pass);
    CHECK(pass.reason == "55.3 GB/s >= 47.3 GB/s (75% of PCIe Gen5 x16's 63 GB/s)");
    CheckOutcome fail = judged("copy.h2d", 31.2, t);
    CHECK(fail.verdict == Verdict::fail);
    CHECK(fail.reason == "31.2 GB/s < 47.3 GB/s (75% of PCIe Gen5 x16's 63 GB/s)");
    CheckOutcome edge = judged("copy.h2d", 48.0, t);  // within 5% above the threshold
    CHECK(edge.verdict == Verdict::warn);
    CHECK(edge.reason.find("within 5% of it") != std::string::npos);
    CHECK(judged("fill.verify", 0.0, Threshold{0, "default"}).verdict == Verdict::pass);
    const CheckOutcome bad_words = judged("fill.verify", 3.0, Threshold{0, "default"}, "first bad word at 0x10");
    CHECK(bad_words.verdict == Verdict::fail);
    CHECK(bad_words.reason == "3 > 0 (default); first bad word at 0x10");
    CHECK(judged("nvml.ecc.uncorrected.aggregate", 2.0, Threshold{0, "default"}).verdict == Verdict::warn);
    CHECK(judged("nvml.ecc.mode", 0.0, Threshold{1, ""}).reason == "0 != 1");
    CHECK(judged("nvml.ecc.mode", 0.0, Threshold{1, ""}).verdict == Verdict::warn);
    const CheckOutcome unset = judged("nvml.ecc.corrected.volatile", 12.0, std::nullopt);
    CHECK(unset.verdict == Verdict::pass);
    CHECK(unset.reason.find("no threshold") != std::string::npos);
    CHECK(judged("copy.h2d", std::nullopt, t).verdict == Verdict::na);
    CHECK(not_applicable("nvml.retired_pages.sbe", "not supported").verdict == Verdict::na);
    const CheckOutcome broken = failed_check("memset.bandwidth", "CUDA error\non two lines");
    CHECK(broken.verdict == Verdict::fail);
    CHECK(broken.reason == "CUDA error on two lines");
    // Work that could not be done fails, whatever the row's verdict beyond
    // its threshold: no context is no GPU for the next job.
    CHECK(failed_check("cuda.context", "no context").verdict == Verdict::fail);
    CHECK(failed_check("cuda.context", "no context").remediation == Remediation::reset_gpu);
    CHECK(broken.remediation == Remediation::drain);
    // Remediations come from the row on fail, and on warn where crossing the
    // threshold is itself a warning; a GPU in the margin band of a failing
    // row asks for nothing until --strict makes it a failure.
    CHECK(fail.remediation == Remediation::drain);
    CHECK(edge.verdict == Verdict::warn);
    CHECK(edge.remediation == Remediation::none);
    CheckOutcome edge_failed = edge;
    apply_strict(edge_failed, true);
    CHECK(edge_failed.remediation == Remediation::drain);
    CHECK(judged("nvml.pcie.link", 8.0, Threshold{16, "the link's maximum"}).remediation == Remediation::drain);
    CHECK(pass.remediation == Remediation::none);
    CHECK(judged("fill.verify", 3.0, Threshold{0, "default"}).remediation == Remediation::service);
    CHECK(not_applicable("copy.h2d", "x").remediation == Remediation::none);
    const CheckOutcome unknown = unknown_check("nvml.remapped_rows.pending", "nvmlDeviceGetRemappedRows failed:\nNo permission");
    CHECK(unknown.verdict == Verdict::unknown);
    CHECK(unknown.reason == "nvmlDeviceGetRemappedRows failed: No permission");
    CHECK(unknown.remediation == Remediation::none);
    CheckOutcome strict_unknown = unknown;
    apply_strict(strict_unknown, false);
    CHECK(strict_unknown.verdict == Verdict::unknown);
    apply_strict(strict_unknown, true);
    CHECK(strict_unknown.verdict == Verdict::fail);
    CHECK(strict_unknown.reason.find("could not run: a failure under --strict") != std::string::npos);
    CHECK(strict_unknown.remediation == Remediation::drain);

    CheckOutcome strict_edge = edge;
    apply_strict(strict_edge, false);
    CHECK(strict_edge.verdict == Verdict::warn);
    apply_strict(strict_edge, true);
    CHECK(strict_edge.verdict == Verdict::fail);
    CHECK(strict_edge.reason.find("--strict") != std::string::npos);
    CheckOutcome strict_pass = pass;
    apply_strict(strict_pass, true);
    CHECK(strict_pass.verdict == Verdict::pass);

    const VerdictCounts counts = count_verdicts({pass, edge, fail, not_applicable("copy.d2h", "x"), unknown});
    CHECK(counts.passed == 1);
    CHECK(counts.warned == 1);
    CHECK(counts.failed == 1);
    CHECK(counts.na == 1);
    CHECK(counts.unknown == 1);
    CHECK(counts.worst == Verdict::fail);
    CHECK(counts.remediation == Remediation::drain);
    const VerdictCounts unsure = count_verdicts({pass, edge, unknown});
    CHECK(unsure.worst == Verdict::unknown);
    CHECK(count_verdicts({pass, judged("fill.verify", 1.0, Threshold{0, "default"})}).remediation == Remediation::service);
}

TEST_CASE("check NVML health: synthetic figures judged") {
    const std::vector<CheckOutcome> ok = nvml_checks(healthy(0), {});
    std::size_t nvml_rows = 0;
    for (const Named<CheckKind>& row : kChecks) nvml_rows += std::string_view(row.name).substr(0, 5) == "nvml.";
    REQUIRE(ok.size() == nvml_rows);
    for (const CheckOutcome& c : ok) {
        CAPTURE(c.id);
        CAPTURE(c.reason);
        // The retired pages of pre-Ampere GPUs are n/a on an H200; the rest passes.
        CHECK(c.verdict == (c.id.rfind("nvml.retired_pages", 0) == 0 ? Verdict::na : Verdict::pass));
    }
    CHECK(find(ok, "nvml.pcie.link").reason.find("Gen1 now, Gen5 at most") != std::string::npos);
    CHECK(find(ok, "nvml.clock_event_reasons").reason.find("normal: gpu_idle") != std::string::npos);
    CHECK(find(ok, "nvml.memory.in_use").reason.find("544 MiB reserved by the driver, not counted") != std::string::npos);

    CheckDeviceFigures sick = healthy(1);
    sick.health->ecc_uncorrected_volatile = 2;
    sick.health->remapped_rows_pending = true;
    sick.health->remapped_rows_uncorrectable = 1;
    sick.health->ecc_pending = false;
    sick.pcie->current_width = 8;
    sick.health->memory_clock_mhz = 1593;
    sick.health->clock_event_reasons = 0x8 | 0x40;  // hw_slowdown, hw_thermal_slowdown
    sick.others = {NvmlProcess{7, "python", 10ULL << 30}};
    sick.memory->used = 10ULL << 30;
    sick.memory->free -= sick.memory->used;
    const std::vector<CheckOutcome> s = nvml_checks(sick, {});
    CHECK(find(s, "nvml.ecc.uncorrected.volatile").verdict == Verdict::fail);
    CHECK(find(s, "nvml.remapped_rows.pending").verdict == Verdict::fail);
    CHECK(find(s, "nvml.remapped_rows.uncorrectable").verdict == Verdict::warn);
    CHECK(find(s, "nvml.ecc.mode").verdict == Verdict::warn);
    CHECK(find(s, "nvml.ecc.mode").reason.find("off after the next reboot") != std::string::npos);
    CHECK(find(s, "nvml.pcie.link").verdict == Verdict::warn);
    CHECK(find(s, "nvml.pcie.link").reason.rfind("x8 < x16", 0) == 0);
    CHECK(find(s, "nvml.memory_clock").verdict == Verdict::warn);
    CHECK(find(s, "nvml.memory_clock").reason.find("hw_slowdown") != std::string::npos);
    CHECK(find(s, "nvml.clock_event_reasons").value == 2.0);
    CHECK(find(s, "nvml.clock_event_reasons").verdict == Verdict::fail);
    CHECK(find(s, "nvml.clock_event_reasons").remediation == Remediation::drain);
    CHECK(find(s, "nvml.clock_event_reasons").reason.find("fault: hw_slowdown, hw_thermal_slowdown") != std::string::npos);
    CHECK(find(s, "nvml.processes").verdict == Verdict::warn);
    CHECK(find(s, "nvml.processes").remediation == Remediation::none);
    CHECK(find(s, "nvml.processes").reason.find("pid 7 python") != std::string::npos);
    const CheckOutcome& in_use = find(s, "nvml.memory.in_use");
    CHECK(in_use.verdict == Verdict::fail);
    CHECK(in_use.remediation == Remediation::drain);
    CHECK(in_use.value == 10.0 * (1ULL << 30));
    CHECK(in_use.threshold == doctest::Approx(0.01 * 150754820096));
    CAPTURE(in_use.reason);
    CHECK(in_use.reason.find("> 1.4 GiB (1% of the 140.4 GiB total)") != std::string::npos);
    CHECK(in_use.reason.find("held by pid 7 python (10 GiB)") != std::string::npos);
    CHECK(find(s, "nvml.ecc.uncorrected.volatile").remediation == Remediation::reset_gpu);
    CHECK(find(s, "nvml.remapped_rows.pending").remediation == Remediation::reset_gpu);
    CHECK(count_verdicts(s).remediation == Remediation::reset_gpu);

    // A memory clock below its maximum with nothing holding it back is idle.
    CheckDeviceFigures idle = healthy(2);
    idle.health->memory_clock_mhz = 405;
    CHECK(find(nvml_checks(idle, {}), "nvml.memory_clock").verdict == Verdict::pass);
    // Thresholds the user sets count: corrected errors above 10 warn.
    idle.health->ecc_corrected_volatile = 11;
    CHECK(find(nvml_checks(idle, {{"nvml.ecc.corrected.volatile", {10, "--threshold"}}}), "nvml.ecc.corrected.volatile").verdict ==
          Verdict::warn);

    CheckDeviceFigures none;
    none.device = identity(3);
    none.why_no_nvml = "NVML unavailable";
    for (const CheckOutcome& c : nvml_checks(none, {})) {  // could not run: never a pass
        CHECK(c.verdict == Verdict::unknown);
        CHECK(c.reason == "NVML unavailable");
    }
    CheckDeviceFigures unlisted = healthy(4);
    unlisted.processes_known = false;
    unlisted.processes_error = "Insufficient Permissions";
    unlisted.health->remapped_rows_pending.reset();
    const std::vector<CheckOutcome> u = nvml_checks(unlisted, {});
    CHECK(find(u, "nvml.processes").verdict == Verdict::unknown);
    CHECK(find(u, "nvml.processes").reason.find("Insufficient Permissions") != std::string::npos);
    CHECK(find(u, "nvml.remapped_rows.pending").verdict == Verdict::na);
    CHECK(find(u, "nvml.remapped_rows.pending").reason.find("Ampere") != std::string::npos);
}

TEST_CASE("check clock event reasons: every reason NVML reports classified, named in the reason") {
    // Normal operation: an idle H200 at its software power cap passed, then
    // warned, then warned (issue 22); each of these passes.
    for (const std::uint64_t normal : {0x1ULL, 0x2ULL, 0x4ULL, 0x10ULL, 0x100ULL, 0x1ULL | 0x4ULL}) {
        CAPTURE(normal);
        CHECK(clock_event_reasons_bad(normal) == 0);
        CheckDeviceFigures f = healthy(0);
        f.health->clock_event_reasons = normal;
        f.health->memory_clock_mhz = 1593;  // below its maximum under normal reasons only: passes too
        const std::vector<CheckOutcome> out = nvml_checks(f, {});
        CHECK(find(out, "nvml.clock_event_reasons").verdict == Verdict::pass);
        CHECK(find(out, "nvml.clock_event_reasons").reason.find("normal: ") != std::string::npos);
        CHECK(find(out, "nvml.memory_clock").verdict == Verdict::pass);
    }
    CHECK(clock_reason_class(0x4) == ClockReasonClass::normal);
    CHECK(clock_reason_class(0x20) == ClockReasonClass::warning);
    for (const std::uint64_t fault : {0x8ULL, 0x40ULL, 0x80ULL}) CHECK(clock_reason_class(fault) == ClockReasonClass::fault);
    CHECK(clock_reason_class(0x200) == ClockReasonClass::warning);  // a bit NVML adds later
    // SW thermal slowdown warns (no remediation: look at the cooling), and
    // holds a lower memory clock to a warning that names it.
    CheckDeviceFigures hot = healthy(0);
    hot.health->clock_event_reasons = 0x20 | 0x4;
    hot.health->memory_clock_mhz = 1593;
    const std::vector<CheckOutcome> h = nvml_checks(hot, {});
    CHECK(find(h, "nvml.clock_event_reasons").verdict == Verdict::warn);
    CHECK(find(h, "nvml.clock_event_reasons").remediation == Remediation::none);
    CHECK(find(h, "nvml.clock_event_reasons").reason == "0 <= 0 (default); active: warning: sw_thermal_slowdown; normal: sw_power_cap");
    CHECK(find(h, "nvml.memory_clock").verdict == Verdict::warn);
    CHECK(find(h, "nvml.memory_clock").reason.find("held back by sw_thermal_slowdown") != std::string::npos);
    // Each hardware reason fails with a drain.
    for (const std::uint64_t fault : {0x8ULL, 0x40ULL, 0x80ULL}) {
        CheckDeviceFigures f = healthy(0);
        f.health->clock_event_reasons = fault | 0x1;
        const CheckOutcome o = find(nvml_checks(f, {}), "nvml.clock_event_reasons");  // a copy: the vector is a temporary
        CHECK(o.verdict == Verdict::fail);
        CHECK(o.remediation == Remediation::drain);
        CHECK(o.reason.find("fault: hw_") != std::string::npos);
    }
    // A bit this build does not know warns, naming it.
    CheckDeviceFigures odd = healthy(0);
    odd.health->clock_event_reasons = 0x400;
    const CheckOutcome o = find(nvml_checks(odd, {}), "nvml.clock_event_reasons");  // a copy: the vector is a temporary
    CHECK(o.verdict == Verdict::warn);
    CHECK(o.reason.find("warning: 0x400") != std::string::npos);
}

TEST_CASE("check unknown: an NVML call that failed is unknown, one not supported n/a") {
    CheckDeviceFigures f = healthy(0);
    f.health->remapped_rows_correctable.reset();
    f.health->remapped_rows_uncorrectable.reset();
    f.health->remapped_rows_pending.reset();
    f.health->remapped_rows_failure.reset();
    f.health->errors.emplace_back("nvmlDeviceGetRemappedRows", "Insufficient Permissions");
    f.health->clock_event_reasons.reset();  // not supported: n/a
    const std::vector<CheckOutcome> out = nvml_checks(f, {});
    for (const char* id : {"nvml.remapped_rows.correctable", "nvml.remapped_rows.uncorrectable", "nvml.remapped_rows.pending",
                           "nvml.remapped_rows.failure"}) {
        CAPTURE(id);
        CHECK(find(out, id).verdict == Verdict::unknown);
        CHECK(find(out, id).reason == "nvmlDeviceGetRemappedRows failed: Insufficient Permissions");
    }
    CHECK(find(out, "nvml.clock_event_reasons").verdict == Verdict::na);
    CHECK(count_verdicts(out).worst == Verdict::unknown);  // never a pass
    CHECK(find(out, "nvml.retired_pages.sbe").verdict == Verdict::na);  // not this GPU's: still n/a
    // A failed call marks its own checks only, by the whole function name.
    CheckDeviceFigures old = healthy(0);
    old.health->retired_pages_sbe.reset();
    old.health->retired_pages_dbe.reset();
    old.health->errors.emplace_back("nvmlDeviceGetRetiredPages", "Unknown Error");
    const std::vector<CheckOutcome> o = nvml_checks(old, {});
    CHECK(find(o, "nvml.retired_pages.sbe").verdict == Verdict::unknown);
    CHECK(find(o, "nvml.retired_pages.pending").verdict == Verdict::na);  // nvmlDeviceGetRetiredPagesPendingStatus is another call
    f.memory.reset();
    f.memory_error = "nvmlDeviceGetMemoryInfo failed: GPU is lost";
    CHECK(find(nvml_checks(f, {}), "nvml.memory.in_use").verdict == Verdict::unknown);
    // The PCIe link: a GPU that does not report it is n/a, a failed call unknown.
    CheckDeviceFigures pcie = healthy(0);
    pcie.pcie.reset();
    CHECK(find(nvml_checks(pcie, {}), "nvml.pcie.link").verdict == Verdict::na);
    pcie.health->errors.emplace_back("nvmlDeviceGetMaxPcieLinkWidth", "GPU is lost");
    const CheckOutcome lost = find(nvml_checks(pcie, {}), "nvml.pcie.link");
    CHECK(lost.verdict == Verdict::unknown);
    CHECK(lost.reason == "nvmlDeviceGetMaxPcieLinkWidth failed: GPU is lost");
    // The current width alone failing: the link is read, its width is not.
    CheckDeviceFigures width = healthy(0);
    width.pcie->current_width = 0;
    width.health->errors.emplace_back("nvmlDeviceGetCurrPcieLinkWidth", "Insufficient Permissions");
    CHECK(find(nvml_checks(width, {}), "nvml.pcie.link").verdict == Verdict::unknown);
}

TEST_CASE("check memory in use: beyond the driver's reserve, its holders or none visible, a settable threshold") {
    CheckDeviceFigures f = healthy(0);
    f.memory->used = 700ULL << 20;  // 0.5% of 140 GiB: passes
    CHECK(find(nvml_checks(f, {}), "nvml.memory.in_use").verdict == Verdict::pass);
    f.memory->used = 71ULL << 30;  // held, but no process visible (another container, a leak)
    const CheckOutcome leak = find(nvml_checks(f, {}), "nvml.memory.in_use");
    CHECK(leak.verdict == Verdict::fail);
    CHECK(leak.reason.find("held by none visible (a leak, or a process of another container)") != std::string::npos);
    // Its threshold is settable, as a size or a plain number of bytes.
    CHECK(value_of("nvml.memory.in_use", "80GiB") == 80.0 * (1ULL << 30));
    CHECK(find(nvml_checks(f, {{"nvml.memory.in_use", {80.0 * (1ULL << 30), "--threshold"}}}), "nvml.memory.in_use").verdict ==
          Verdict::pass);
    // Four holders: three named, then how many in all.
    f.others = {NvmlProcess{1, "a", 1ULL << 30}, NvmlProcess{2, "b", std::nullopt}, NvmlProcess{3, "c", 1ULL << 30},
                NvmlProcess{4, "d", 1ULL << 30}};
    const CheckOutcome held = find(nvml_checks(f, {}), "nvml.memory.in_use");
    CAPTURE(held.reason);
    CHECK(held.reason.find("held by pid 1 a (1 GiB), pid 2 b, pid 3 c (1 GiB), ... (4 in all)") != std::string::npos);
    // Without memory info v2 the figure includes the reserve, and says so.
    f.memory->has_reserved = false;
    CHECK(find(nvml_checks(f, {}), "nvml.memory.in_use").reason.find("includes the driver's reserve") != std::string::npos);
}

TEST_CASE("check p2p rounds: every pair once, no device twice in a round") {
    CHECK(pair_rounds(0).empty());
    CHECK(pair_rounds(1).empty());
    for (std::size_t n = 2; n <= 9; ++n) {
        CAPTURE(n);
        std::set<std::pair<std::size_t, std::size_t>> seen;
        for (const auto& round : pair_rounds(n)) {
            std::set<std::size_t> busy;
            for (const auto& [a, b] : round) {
                CHECK(a < b);
                CHECK(b < n);
                CHECK(busy.insert(a).second);
                CHECK(busy.insert(b).second);
                CHECK(seen.insert({a, b}).second);
            }
        }
        CHECK(seen.size() == n * (n - 1) / 2);
        CHECK(pair_rounds(n).size() == (n % 2 ? n : n - 1));
    }
}

namespace {

// A standard run on two GPUs: device 0 healthy, device 1 with a slow h2d
// copy and bad words; p2p both ways.
CheckResults two_devices() {
    CheckResults r;
    for (int d = 0; d < 2; ++d) {
        CheckDeviceResult device{identity(d), nvml_checks(healthy(d), {})};
        const Threshold link{47.26, "75% of PCIe Gen5 x16's 63 GB/s"};
        device.checks.push_back(judged("cuda.context", 0.31, Threshold{10, "default"}));
        device.checks.push_back(judged("alloc.max", 1.3e11, Threshold{1.25e11, "90% of the 130 GiB free"}));
        device.checks.push_back(judged("fill.verify", d == 1 ? 2.0 : 0.0, Threshold{0, "default"},
                                       d == 1 ? "first bad word at 0x7f0000001000" : ""));
        device.checks.push_back(judged("copy.h2d", d == 1 ? 31.2 : 55.3, link));
        device.checks.push_back(judged(p2p_check_id(d, 1 - d), 390.5, Threshold{31.5, "50% of PCIe Gen5 x16's 63 GB/s"}));
        for (CheckOutcome& c : device.checks) c.seconds = 0.25;
        r.devices.push_back(std::move(device));
    }
    r.seconds = 2.5;
    return r;
}

CheckRequest standard_request() {
    CheckRequest q;
    q.settings.level = CheckLevel::standard;
    return q;
}

std::set<std::string> document_keys(const json& doc) {
    std::set<std::string> keys;
    for (const auto& [key, value] : doc.items()) {
        keys.insert(key);
        if (value.is_array() && !value.empty() && value[0].is_object())
            for (const auto& [name, unused] : value[0].items()) keys.insert(key + "." + name);
    }
    return keys;
}

std::set<std::string> schema_keys(const json& schema) {
    std::set<std::string> keys;
    for (const auto& [key, value] : schema.at("properties").items()) {
        if (key == "error" || key == "warnings" || key == "origin") continue;
        keys.insert(key);
        if (value.contains("items") && value["items"].contains("properties"))
            for (const auto& [name, unused] : value["items"]["properties"].items()) keys.insert(key + "." + name);
    }
    return keys;
}

}  // namespace

TEST_CASE("check report: the document's keys are check_schema()'s; verdicts, counts, failure lines") {
    const CheckResults results = two_devices();
    const json doc = json::parse(render(check_report(standard_request(), results, OutputOptions{Format::json}), OutputOptions{Format::json}));
    CHECK(document_keys(doc) == schema_keys(schema_json(check_schema())));
    CHECK(doc.at("command") == "check");
    CHECK(doc.at("level") == "standard");
    CHECK(doc.at("strict") == false);
    CHECK(doc.at("verdict") == "fail");
    CHECK(doc.at("seconds") == 2.5);
    const json& h2d = doc.at("checks").at(nvml_checks(healthy(0), {}).size() + 3);
    CHECK(h2d.at("check") == "copy.h2d");
    CHECK(h2d.at("verdict") == "pass");
    CHECK(h2d.at("value") == 55.3);
    CHECK(h2d.at("unit") == "GB/s");
    CHECK(h2d.at("threshold") == 47.26);
    CHECK(h2d.at("comparison") == ">=");
    CHECK(h2d.at("uuid") == identity(0).uuid);
    CHECK(h2d.at("name") == "NVIDIA H200");
    const json& devices = doc.at("devices");
    REQUIRE(devices.size() == 2);
    CHECK(devices[0].at("verdict") == "pass");
    CHECK(devices[1].at("verdict") == "fail");
    CHECK(devices[1].at("failed") == 2);
    CHECK(devices[1].at("pci_bus_id") == "0000:19:00.0");
    CHECK(devices[0].at("na") == 3);  // the retired pages of older GPUs
    // The schema names the verdicts, levels and comparisons.
    const json schema = schema_json(check_schema());
    CHECK(schema["properties"]["checks"]["items"]["properties"]["verdict"]["enum"] ==
          json::array({"pass", "warn", "fail", "n/a", "unknown", nullptr}));
    CHECK(schema["properties"]["checks"]["items"]["properties"]["remediation"]["enum"] ==
          json::array({"none", "drain", "reset-gpu", "reboot", "service", nullptr}));
    CHECK(schema["properties"]["devices"]["items"]["properties"]["remediation"]["enum"].size() == 6);
    // Each check's remediation, and each device's worst.
    CHECK(h2d.at("remediation") == "none");
    CHECK(doc.at("checks").at(2 * nvml_checks(healthy(0), {}).size() + 8).at("remediation") == "drain");  // GPU 1's copy.h2d
    CHECK(devices[0].at("remediation") == "none");
    CHECK(devices[1].at("remediation") == "service");  // fill.verify found bad words
    CHECK(devices[1].at("unknown") == 0);
    CHECK(schema["properties"]["level"]["enum"] == json::array({"quick", "standard", "long", nullptr}));

    const std::vector<std::string> lines = check_failure_lines(results);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "GPU 1 (" + identity(1).uuid + "): fill.verify: 2 > 0 (default); first bad word at 0x7f0000001000");
    CHECK(lines[1] == "GPU 1 (" + identity(1).uuid + "): copy.h2d: 31.2 GB/s < 47.3 GB/s (75% of PCIe Gen5 x16's 63 GB/s)");
    CHECK(check_failure_summary(results) == "2 of " + std::to_string(doc.at("checks").size()) +
                                                " checks failed on 1 of 2 GPU(s): fill.verify on GPU 1, copy.h2d on GPU 1");
    CheckResults good = results;
    good.devices.pop_back();
    CHECK(check_failure_summary(good).empty());
}

TEST_CASE("check report: a table a person reads at a glance") {
    const std::string text = render(check_report(standard_request(), two_devices(), OutputOptions{}), OutputOptions{});
    check_widths(check_report(standard_request(), two_devices(), OutputOptions{}));
    CHECK(text.find("gpu  check") == 0);
    CHECK(text.find("copy.h2d") != std::string::npos);
    CHECK(text.find(">= 47.3 GB/s") != std::string::npos);
    CHECK(text.find("31.2 GB/s") != std::string::npos);
    CHECK(text.find("verdict: fail (level standard, 2.5 s)") != std::string::npos);
    CHECK(text.find("\"") == std::string::npos);
}

TEST_CASE("check report: Prometheus metrics pass promtool") {
    Report report = check_report(standard_request(), two_devices(), OutputOptions{Format::prometheus});
    report.metric_labels = {{"host", "node1"}, {"job_id", "42"}};
    const std::string text = render_prometheus(report, 7);
    CHECK(text.find("# TYPE gpumem_check_pass gauge") != std::string::npos);
    CHECK(text.find("gpumem_check_pass{gpu=\"1\",uuid=\"" + identity(1).uuid + "\",name=\"NVIDIA H200\",check=\"copy.h2d\",host=\"node1\",job_id=\"42\"} 0") !=
          std::string::npos);
    CHECK(text.find("gpumem_check_verdict{gpu=\"0\",uuid=\"" + identity(0).uuid +
                    "\",name=\"NVIDIA H200\",check=\"copy.h2d\",verdict=\"pass\",host=\"node1\",job_id=\"42\"} 1") != std::string::npos);
    CHECK(text.find("check=\"copy.h2d\",unit=\"bytes_per_second\",host=\"node1\",job_id=\"42\"} 55") != std::string::npos);
    CHECK(text.find("gpumem_check_duration_seconds{") != std::string::npos);
    CHECK(text.find("gpumem_run_exit_status{command=\"check\"") != std::string::npos);
    // Remediations: per check and per device, one-hot.
    CHECK(text.find("gpumem_check_remediation{gpu=\"1\",uuid=\"" + identity(1).uuid +
                    "\",name=\"NVIDIA H200\",check=\"copy.h2d\",remediation=\"drain\",host=\"node1\",job_id=\"42\"} 1") !=
          std::string::npos);
    CHECK(text.find("gpumem_check_device_remediation{gpu=\"1\",uuid=\"" + identity(1).uuid +
                    "\",name=\"NVIDIA H200\",remediation=\"service\",host=\"node1\",job_id=\"42\"} 1") != std::string::npos);
    CHECK(text.find("gpumem_check_device_verdict{gpu=\"0\",uuid=\"" + identity(0).uuid +
                    "\",name=\"NVIDIA H200\",verdict=\"pass\",host=\"node1\",job_id=\"42\"} 1") != std::string::npos);
    CHECK(text.find("check=\"nvml.memory.in_use\",unit=\"bytes\",host=\"node1\",job_id=\"42\"} 0") != std::string::npos);
    // n/a checks have a verdict but no pass sample.
    CHECK(text.find("gpumem_check_pass{gpu=\"0\",uuid=\"" + identity(0).uuid + "\",name=\"NVIDIA H200\",check=\"nvml.retired_pages.sbe\"") ==
          std::string::npos);
    CHECK(text.find("gpumem_check_verdict{gpu=\"0\",uuid=\"" + identity(0).uuid +
                    "\",name=\"NVIDIA H200\",check=\"nvml.retired_pages.sbe\",verdict=\"n/a\",host=\"node1\",job_id=\"42\"} 1") != std::string::npos);
    const RunResult promtool = run_program("/bin/sh", {"-c", "command -v promtool >/dev/null || exit 77; "
                                                             "printf '%s' \"$0\" | promtool check metrics", text});
    if (promtool.status == 77) {
        MESSAGE("promtool not installed: the text was not validated");
        return;
    }
    CAPTURE(promtool.out);
    CAPTURE(promtool.err);
    CHECK(promtool.status == 0);
}

TEST_CASE("check report: --format nagios, one status line with performance data and the plugin's status") {
    const CheckRequest q = standard_request();
    auto nagios = [&](const CheckResults& r) { return *check_report(q, r, OutputOptions{Format::nagios}).plugin; };
    // CRITICAL: GPU 1 failed two checks, named with their remediation.
    const Report::PluginOutput critical = nagios(two_devices());
    CHECK(critical.status == 2);
    CHECK(critical.text.rfind("GPUMEM CRITICAL - 2 fail: GPU 1 fill.verify: 2 > 0 (default); first bad word at 0x7f0000001000 "
                              "[service]; GPU 1 copy.h2d: 31.2 GB/s < 47.3 GB/s (75% of PCIe Gen5 x16's 63 GB/s) [drain] "
                              "(level standard, 2.5 s) | ",
                              0) == 0);
    CHECK(critical.text.find('\n') == std::string::npos);
    CHECK(std::count(critical.text.begin(), critical.text.end(), '|') == 1);
    // Performance data: bytes in B, ranges by comparison, the unit in the
    // label where Nagios has none.
    CHECK(critical.text.find("'gpu0 copy.h2d GB/s'=55.3;;47.26:;0;") != std::string::npos);
    CHECK(critical.text.find("'gpu1 fill.verify'=2;;0;0;") != std::string::npos);
    CHECK(critical.text.find("'gpu0 nvml.memory.in_use'=0B;;1507548200.96;0;") == std::string::npos);  // whole bytes only
    CHECK(critical.text.find("'gpu0 nvml.memory.in_use'=0B;;1507548201;0;") != std::string::npos);
    CHECK(critical.text.find("'gpu0 nvml.ecc.mode'=1;;1:1;0;") == std::string::npos);  // ecc.mode only warns:
    CHECK(critical.text.find("'gpu0 nvml.ecc.mode'=1;1:1;;0;") != std::string::npos);  // its range is the warning's
    CHECK(critical.text.find("'gpu0 cuda.context'=0.31s;10;;0;") != std::string::npos);
    // OK, WARNING and UNKNOWN.
    CheckResults good = two_devices();
    good.devices.pop_back();
    const Report::PluginOutput ok = nagios(good);
    CHECK(ok.status == 0);
    CHECK(ok.text.rfind("GPUMEM OK - " + std::to_string(good.devices[0].checks.size()) + " checks on 1 GPU(s): none warned or failed", 0) == 0);
    CheckResults warned = good;
    warned.devices[0].checks.push_back(judged("nvml.processes", 1.0, Threshold{0, "default"}, "pid 7 python (1.0 GiB)"));
    CHECK(nagios(warned).status == 1);
    CHECK(nagios(warned).text.rfind("GPUMEM WARNING - 1 warn: GPU 0 nvml.processes: 1 > 0 (default); pid 7 python (1.0 GiB) (level", 0) == 0);
    CheckResults unsure = warned;
    unsure.devices[0].checks.push_back(unknown_check("nvml.remapped_rows.pending", "nvmlDeviceGetRemappedRows failed: GPU is lost"));
    CHECK(nagios(unsure).status == 3);
    CHECK(nagios(unsure).text.rfind("GPUMEM UNKNOWN - 1 unknown: GPU 0 nvml.remapped_rows.pending: nvmlDeviceGetRemappedRows", 0) == 0);
    // A '|' in a reason cannot end the status line early.
    CheckResults piped = good;
    piped.devices[0].checks.push_back(failed_check("alloc.max", "a | b"));
    const std::string piped_text = nagios(piped).text;
    CHECK(std::count(piped_text.begin(), piped_text.end(), '|') == 1);
}

// What gpumem report reads of a check document is what check writes: the
// failed GPU and its checks come out of the merge.
TEST_CASE("check report: gpumem report reads the document check writes") {
    Report report = check_report(standard_request(), two_devices(), OutputOptions{Format::json});
    report.origin.add({"host", "", FieldKind::text}, std::string("node1"));
    Folder folder;
    const std::string file =
        folder.write("check.json", render_json_error(report, CheckFailedError("2 of 42 checks failed"), OutputOptions{Format::json}));
    const RunResult r = run_gpumem({"report", file, "--json"});
    CAPTURE(r.err);
    CAPTURE(r.out);
    CHECK(r.status == 7);
    const json doc = json::parse(r.out);
    const std::string text = doc.dump();
    CHECK(text.find("fill.verify") != std::string::npos);
    CHECK(text.find("copy.h2d") != std::string::npos);
    CHECK(text.find(identity(1).uuid) != std::string::npos);
}

TEST_CASE("check options: check() accepts what it should, before any driver call") {
    Folder folder;
    const std::string file = folder.write("t.json", R"({"copy.h2d": "40GB/s"})");
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"check"},
             {"check", "--level", "quick"},
             {"check", "--level", "long", "--strict"},
             {"check", "--threshold", "copy.h2d=45GB/s", "--threshold", "p2p=100"},
             {"check", "--threshold", "nvml.ecc.corrected.volatile=10", "--level", "quick"},
             {"check", "--thresholds", file, "--level", "quick"},
             {"check", "--thresholds", file, "--threshold", "copy.h2d=50"},
             {"check", "--format", "prometheus"},
             {"--format", "nagios", "check", "--level", "quick"},
             {"check", "--threshold", "nvml.memory.in_use=2GiB", "--level", "quick"},
             {"check", "-d", "0,1", "--json"},
             {"check", "--expect-gpus", "0x8", "--level", "quick"},
             {"check", "--threshold", "node.gpus=0x8", "--level", "quick"},
         }) {
        std::string line;
        for (const std::string& a : args) line += a + " ";
        CAPTURE(line);
        CHECK(parse_only(args) == 0);
    }
}

TEST_CASE("check host link: a rate that does not pass is measured again after each pause, the best attempt judged") {
    using std::chrono::milliseconds;
    const std::vector<milliseconds> pauses = {milliseconds(250), milliseconds(500), milliseconds(1000)};
    auto run = [&](std::vector<double> bests, std::vector<milliseconds>& waited) {
        std::size_t next = 0;
        return retest_rate(
            [&] {
                const double b = bests.at(next++);
                return RateAttempt{b, b * 0.9};
            },
            [](double bps) { return bps >= 37.8e9; }, pauses, [&](milliseconds p) { waited.push_back(p); });
    };
    // A passing first attempt: measured once, no pause, no note.
    std::vector<milliseconds> waited;
    RetestedRate healthy = run({55.3e9}, waited);
    CHECK(healthy.attempts == 1);
    CHECK(waited.empty());
    CHECK(healthy.best.best_bps == 55.3e9);
    CHECK(retest_note(healthy, pauses).empty());
    // One slow window: the second attempt passes, after the first pause only.
    waited.clear();
    const RetestedRate transient = run({33.5e9, 55.2e9}, waited);
    CHECK(transient.attempts == 2);
    CHECK(waited == std::vector<milliseconds>{milliseconds(250)});
    CHECK(transient.best.best_bps == 55.2e9);
    CHECK(transient.best.median_bps == doctest::Approx(55.2e9 * 0.9));
    CHECK(transient.best_attempt == 2);
    CHECK(transient.first_best_bps == 33.5e9);
    CHECK(retest_note(transient, pauses) ==
          "; attempt 2 of 2 (the first gave 33.5 GB/s; a rate that does not pass is measured again after 0.25, 0.5 and 1 s)");
    // A link trained down: slow every time, measured once per pause and no more; the best of them is judged.
    waited.clear();
    const RetestedRate narrowed = run({26.1e9, 26.4e9, 26.2e9, 26.0e9, 99e9}, waited);
    CHECK(narrowed.attempts == 4);
    CHECK(waited == pauses);
    CHECK(narrowed.best.best_bps == 26.4e9);
    CHECK(narrowed.best_attempt == 2);
    CHECK(retest_note(narrowed, pauses).find("; attempt 2 of 4 (the first gave 26.1 GB/s;") == 0);
    // A stop during a pause ends the retest there.
    std::size_t measured = 0;
    CHECK_THROWS_AS(retest_rate([&] { ++measured; return RateAttempt{1e9, 1e9}; }, [](double) { return false; }, pauses,
                                [](milliseconds) { throw InterruptedError(); }),
                    InterruptedError);
    CHECK(measured == 1);
    // The shipped pauses: a few, growing, about 2 s in all.
    std::chrono::milliseconds total{0};
    for (const milliseconds p : kHostLinkRetestPauses) total += p;
    CHECK(kHostLinkRetestPauses.size() == 3);
    CHECK(total <= std::chrono::milliseconds(2000));
}
