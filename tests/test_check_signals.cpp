// gpumem check's NVLink, expected GPUs and p2p reference without a GPU: the
// pure judges over fake NVML figures (a PCIe-only GPU, an HGX H100 with 18
// links to NVSwitches, a link down, error counters, NVML errors), node.gpus
// against --expect-gpus and lost GPUs, the threshold keys and their refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/check_plan.hpp"
#include "base/copy_plan.hpp"
#include "base/errors.hpp"
#include "base/text.hpp"
#include "bench/check_engine.hpp"
#include "tests_dir.hpp"
#include "usage_error.hpp"

using namespace gpumem;

namespace {

CheckDeviceFigures gpu(unsigned bus) {
    CheckDeviceFigures f;
    f.device.cuda_index = DeviceId(static_cast<int>(bus - 0x18));
    f.device.pci.bus = bus;
    f.pcie = NvmlPcieLink{5, 16, 5, 16};
    return f;
}

// An HGX H100: 18 NVLink 4.0 links, each to an NVSwitch.
NvmlNvLink hgx(unsigned active = 18) {
    NvmlNvLink l;
    l.supported = true;
    l.link_count = 18;
    for (unsigned i = 0; i < 18; ++i) {
        l.active.push_back(i < active);
        l.remote.emplace_back();
        l.remote_is_switch.push_back(i < active);
    }
    l.version = 6;
    l.replay_errors = l.recovery_errors = l.crc_flit_errors = l.crc_data_errors = 0;
    l.fabric = NvmlFabric{3, 0, "Success"};  // registered with the fabric manager
    return l;
}

const CheckOutcome& find(const std::vector<CheckOutcome>& checks, const std::string& id) {
    for (const CheckOutcome& c : checks)
        if (c.id == id) return c;
    FAIL("no check " << id);
    static CheckOutcome none;
    return none;
}

using gpumem::test::usage_error;

}  // namespace

TEST_CASE("nvlink checks: links against the GPU's, counters against thresholds") {
    SUBCASE("a PCIe-only GPU: n/a with the reason") {
        CheckDeviceFigures f = gpu(0x18);
        f.nvlink = NvmlNvLink{};
        const auto checks = nvlink_checks(f, {});
        REQUIRE(checks.size() == 5);  // nvlink.links, three counters, nvlink.fabric
        for (const CheckOutcome& c : checks) {
            CHECK(c.verdict == Verdict::na);
            CHECK(c.reason.find("PCIe only") != std::string::npos);
        }
    }
    SUBCASE("every link up and no errors: pass") {
        CheckDeviceFigures f = gpu(0x18);
        f.nvlink = hgx();
        const auto checks = nvlink_checks(f, {});
        const CheckOutcome& links = find(checks, "nvlink.links");
        CHECK(links.verdict == Verdict::pass);
        CHECK(links.value.value() == 18);
        CHECK(links.reason.find("18 of 18 active, NVLink 4.0") != std::string::npos);
        for (const char* id : {"nvlink.replay_errors", "nvlink.recovery_errors", "nvlink.crc_errors", "nvlink.fabric"})
            CHECK(find(checks, id).verdict == Verdict::pass);
    }
    SUBCASE("a link down fails with a GPU reset, naming the link") {
        CheckDeviceFigures f = gpu(0x18);
        f.nvlink = hgx();
        f.nvlink->active[7] = false;
        const std::vector<CheckOutcome> checks = nvlink_checks(f, {});
        const CheckOutcome& links = find(checks, "nvlink.links");
        CHECK(links.verdict == Verdict::fail);
        CHECK(links.remediation == Remediation::reset_gpu);
        CHECK(links.reason.find("17 < 18") == 0);
        CHECK(links.reason.find("down: link 7") != std::string::npos);
    }
    SUBCASE("no link up at all: n/a unless a threshold requires them") {
        CheckDeviceFigures f = gpu(0x18);
        f.nvlink = hgx(0);
        CHECK(find(nvlink_checks(f, {}), "nvlink.links").verdict == Verdict::na);
        ThresholdOverrides required;
        required["nvlink.links"] = ThresholdOverride{12, "--threshold"};
        CHECK(find(nvlink_checks(f, required), "nvlink.links").verdict == Verdict::fail);
    }
    SUBCASE("error counters: defaults, and thresholds the operator sets") {
        CheckDeviceFigures f = gpu(0x18);
        f.nvlink = hgx();
        f.nvlink->replay_errors = 250;
        f.nvlink->recovery_errors = 1;
        f.nvlink->crc_flit_errors = 60;
        f.nvlink->crc_data_errors = 50;
        auto checks = nvlink_checks(f, {});
        CHECK(find(checks, "nvlink.replay_errors").verdict == Verdict::warn);
        CHECK(find(checks, "nvlink.recovery_errors").verdict == Verdict::warn);
        CHECK(find(checks, "nvlink.recovery_errors").remediation == Remediation::reset_gpu);
        CHECK(find(checks, "nvlink.crc_errors").value.value() == 110);
        CHECK(find(checks, "nvlink.crc_errors").verdict == Verdict::warn);
        CHECK(find(checks, "nvlink.crc_errors").remediation == Remediation::service);
        const ThresholdOverrides loose = parse_threshold_file_text(R"({"nvlink.replay_errors": 1000, "nvlink.crc_errors": "500"})", "t.json");
        checks = nvlink_checks(f, loose);
        CHECK(find(checks, "nvlink.replay_errors").verdict == Verdict::pass);
        CHECK(find(checks, "nvlink.crc_errors").verdict == Verdict::pass);
        f.nvlink->crc_flit_errors.reset();
        f.nvlink->crc_data_errors.reset();
        CHECK(find(nvlink_checks(f, {}), "nvlink.crc_errors").verdict == Verdict::na);
    }
    SUBCASE("an NVML error, or a GPU lost meanwhile: never a pass") {
        CheckDeviceFigures f = gpu(0x18);
        f.nvlink = hgx();
        f.nvlink->error = "nvmlDeviceGetNvLinkState(link 3) failed: Insufficient Permissions";
        for (const CheckOutcome& c : nvlink_checks(f, {})) {
            if (c.id == "nvlink.fabric") continue;  // a query of its own, judged below
            CHECK(c.verdict != Verdict::pass);
            CHECK(c.reason.find("Insufficient Permissions") != std::string::npos);
        }
        CheckDeviceFigures lost = gpu(0x19);
        lost.why_no_nvlink = "NVML device 1: GPU is lost";
        for (const CheckOutcome& c : nvlink_checks(lost, {})) CHECK(c.verdict != Verdict::pass);
    }
}

TEST_CASE("node.gpus: --expect-gpus, its file key, and lost GPUs") {
    CheckNodeFigures node;
    node.visible = 8;
    node.nvml = true;
    ThresholdOverrides expect8;
    expect8["node.gpus"] = ThresholdOverride{8, "--expect-gpus"};
    CHECK(node_gpus_check(node, expect8).verdict == Verdict::pass);
    CHECK(node_gpus_check(node, {}).verdict == Verdict::pass);
    CHECK(node_gpus_check(node, {}).reason.find("no --expect-gpus") != std::string::npos);
    node.visible = 7;
    const CheckOutcome fewer = node_gpus_check(node, expect8);
    CHECK(fewer.verdict == Verdict::fail);
    CHECK(fewer.remediation == Remediation::reboot);
    CHECK(fewer.reason.find("GPUs visible on the node: 7 < 8") == 0);
    node.lost = {"NVML device 3: GPU is lost (fallen off the bus)"};
    node.visible = 8;
    const CheckOutcome lost = node_gpus_check(node, {});
    CHECK(lost.verdict == Verdict::fail);
    CHECK(lost.remediation == Remediation::reboot);
    CHECK(lost.reason.find("1 lost: NVML device 3") != std::string::npos);

    CHECK(parse_expect_gpus("8") == 8);
    CHECK(parse_threshold_file_text(R"({"expect-gpus": 8})", "t.json").at("node.gpus").value == 8);
    CHECK(parse_threshold_file_text(R"({"node.gpus": "4"})", "t.json").at("node.gpus").value == 4);
    for (const char* bad : {"0", "-1", "eight", "8.5", "", "1e9", "nan"}) {
        CAPTURE(bad);
        CHECK(usage_error([&] { parse_expect_gpus(bad); }).find("--expect-gpus '") == 0);
    }
    for (const char* bad : {R"({"expect-gpu": 8})", R"({"expect-gpus": 0})", R"({"expect-gpus": "eight"})", R"({"expect-gpus": 8.5})",
                            R"({"expect-gpus": [8]})", R"({"expect-gpus": 8, "node.gpus": 8})", R"({"nvlink.link": 18})",
                            R"({"nvlink.crc_errors": -1})", R"({"nvlink.replay_errors": "many"})", R"({"xid.events": 0})"}) {
        CAPTURE(bad);
        CHECK(usage_error([&] { parse_threshold_file_text(bad, "t.json"); }).find("t.json: ") == 0);
    }
}

TEST_CASE("p2p reference: NVLink where the pair has it, else PCIe") {
    CheckDeviceFigures a = gpu(0x18), b = gpu(0x2a);
    SUBCASE("PCIe only: the slower link") {
        b.pcie = NvmlPcieLink{4, 16, 4, 16};
        const auto r = p2p_reference(a, b);
        REQUIRE(r);
        CHECK(r->value == doctest::Approx(31.5).epsilon(0.01));
        CHECK(r->name.find("PCIe Gen4 x16") == 0);
    }
    SUBCASE("HGX H100 through NVSwitch: 18 x 25 GB/s") {
        a.nvlink = b.nvlink = hgx();
        const auto r = p2p_reference(a, b);
        REQUIRE(r);
        CHECK(r->value == doctest::Approx(450));
        CHECK(r->name == "NVLink 4.0 x18 (through NVSwitch)'s 450 GB/s");
        const std::optional<Threshold> t = threshold_for("p2p.0-1", check_row("p2p.0-1").value, {}, r);
        CHECK(t->value == doctest::Approx(225));
        b.nvlink = hgx(16);  // two of b's links down: the fewer
        CHECK(p2p_reference(a, b)->value == doctest::Approx(400));
    }
    SUBCASE("a direct NVLink bridge between two PCIe cards: only the links to the peer") {
        NvmlNvLink la, lb;
        la.supported = lb.supported = true;
        la.version = lb.version = 4;  // NVLink 3.0 (A100 bridge)
        for (unsigned i = 0; i < 12; ++i) {
            la.active.push_back(i < 4);
            lb.active.push_back(i < 4);
            la.remote.push_back(i < 4 ? std::optional<PciAddress>(b.device.pci) : std::nullopt);
            lb.remote.push_back(i < 4 ? std::optional<PciAddress>(a.device.pci) : std::nullopt);
            la.remote_is_switch.push_back(false);
            lb.remote_is_switch.push_back(false);
        }
        la.link_count = lb.link_count = 12;
        a.nvlink = la;
        b.nvlink = lb;
        const auto r = p2p_reference(a, b);
        CHECK(r->value == doctest::Approx(100));
        CHECK(r->name.find("NVLink 3.0 x4 (direct)") == 0);
        CheckDeviceFigures c = gpu(0x3c);
        c.nvlink = lb;  // linked to a, not to c: PCIe between b and c
        CHECK(p2p_reference(b, c)->name.find("PCIe") == 0);
    }
    CHECK(nvlink_link_gbps(1) == 20);
    CHECK(nvlink_link_gbps(6) == 25);
    CHECK(nvlink_link_gbps(7) == 50);
    CHECK_FALSE(nvlink_link_gbps(0));
    CHECK_FALSE(nvlink_link_gbps(42));
}

// nvml.recovery_action against fake NVML health figures: every value of
// nvmlDeviceGpuRecoveryAction_t, one this build does not know, the field
// not reported, the query failed, and NVML_ERROR_RESET_REQUIRED.
TEST_CASE("nvml.recovery_action: the driver's own verdict, every value") {
    CheckDeviceFigures f = gpu(0x18);
    f.health = NvmlHealth{};
    auto judge = [&] { return judge_check("nvml.recovery_action", f, {}); };
    struct Expected {
        unsigned value;
        Verdict verdict;
        Remediation remediation;
        const char* words;
    };
    const Expected expected[] = {
        {0, Verdict::pass, Remediation::none, "none"},
        {1, Verdict::fail, Remediation::reset_gpu, "GPU reset"},
        {2, Verdict::fail, Remediation::reboot, "node reboot"},
        {3, Verdict::fail, Remediation::drain, "drain P2P"},
        {4, Verdict::fail, Remediation::reset_gpu, "drain and reset"},
        {5, Verdict::fail, Remediation::drain, "newer than this build"},
    };
    for (const Expected& e : expected) {
        CAPTURE(e.value);
        f.health->recovery_action = e.value;
        const CheckOutcome o = judge();
        CHECK(o.verdict == e.verdict);
        CHECK(o.remediation == e.remediation);
        CHECK(o.value.value() == e.value);
        CHECK(o.reason.find(e.words) != std::string::npos);
    }
    SUBCASE("a driver without the field: n/a") {
        f.health->recovery_action.reset();
        CHECK(judge().verdict == Verdict::na);
    }
    SUBCASE("the query failed: unknown, naming it") {
        f.health->recovery_action.reset();
        f.health->errors.emplace_back(std::string(kRecoveryActionQuery), "Insufficient Permissions");
        const CheckOutcome o = judge();
        CHECK(o.verdict == Verdict::unknown);
        CHECK(o.reason.find("NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) failed: Insufficient Permissions") != std::string::npos);
    }
    SUBCASE("any query answered NVML_ERROR_RESET_REQUIRED: fail, reset the GPU, whatever the field says") {
        f.health->recovery_action = 0;
        f.health->reset_required_by = "nvmlDeviceGetRemappedRows";
        const CheckOutcome o = judge();
        CHECK(o.verdict == Verdict::fail);
        CHECK(o.remediation == Remediation::reset_gpu);
        CHECK(o.reason.find("nvmlDeviceGetRemappedRows answered NVML_ERROR_RESET_REQUIRED") == 0);
    }
    SUBCASE("no NVML at all: unknown, as every NVML health check") {
        f.health.reset();
        f.why_no_nvml = "NVML unavailable, the check could not run";
        CHECK(judge().verdict == Verdict::unknown);
    }
}

// nvlink.fabric against fake NVML NVLink figures: every fabric state, a
// failed status, a failed query, and GPUs with no fabric.
TEST_CASE("nvlink.fabric: the NVSwitch fabric registration, every state") {
    CheckDeviceFigures f = gpu(0x18);
    f.nvlink = hgx();
    auto judge = [&] { return judge_check("nvlink.fabric", f, {}); };
    SUBCASE("completed with success: pass") {
        const CheckOutcome o = judge();
        CHECK(o.verdict == Verdict::pass);
        CHECK(o.value.value() == 1);
        CHECK(o.reason.find("completed with success") != std::string::npos);
    }
    SUBCASE("completed with a failed status: fail, naming the status, restart the fabric manager, else service") {
        f.nvlink->fabric = NvmlFabric{3, 999, "Unknown Error"};
        const CheckOutcome o = judge();
        CHECK(o.verdict == Verdict::fail);
        CHECK(o.remediation == Remediation::drain);
        CHECK(o.reason.find("status 999 (Unknown Error)") != std::string::npos);
        CHECK(o.reason.find("nvidia-fabricmanager") != std::string::npos);
        CHECK(o.reason.find("service") != std::string::npos);
    }
    SUBCASE("not started: fail, restart the fabric manager") {
        f.nvlink->fabric = NvmlFabric{1, 0, "Success"};
        const CheckOutcome o = judge();
        CHECK(o.verdict == Verdict::fail);
        CHECK(o.remediation == Remediation::drain);
        CHECK(o.reason.find("not started") != std::string::npos);
        CHECK(o.reason.find("nvidia-fabricmanager") != std::string::npos);
    }
    SUBCASE("in progress: unknown") {
        f.nvlink->fabric = NvmlFabric{2, 0, "Success"};
        const CheckOutcome o = judge();
        CHECK(o.verdict == Verdict::unknown);
        CHECK(o.remediation == Remediation::none);
        CHECK(o.reason.find("in progress") != std::string::npos);
    }
    SUBCASE("a state this build does not know: unknown") {
        f.nvlink->fabric = NvmlFabric{7, 0, "Success"};
        CHECK(judge().verdict == Verdict::unknown);
    }
    SUBCASE("state not supported, or no fabric call: n/a") {
        f.nvlink->fabric = NvmlFabric{0, 0, "Success"};
        CHECK(judge().verdict == Verdict::na);
        f.nvlink->fabric.reset();
        CHECK(judge().verdict == Verdict::na);
        f.nvlink = NvmlNvLink{};  // PCIe only
        CHECK(judge().reason.find("PCIe only") != std::string::npos);
        f.nvlink.reset();  // no NVML
        CHECK(judge().verdict == Verdict::na);
    }
    SUBCASE("the query failed, or the GPU was lost: unknown") {
        f.nvlink->fabric.reset();
        f.nvlink->fabric_error = "nvmlDeviceGetGpuFabricInfoV failed: Insufficient Permissions";
        CHECK(judge().verdict == Verdict::unknown);
        CHECK(judge().reason.find("Insufficient Permissions") != std::string::npos);
        CheckDeviceFigures lost = gpu(0x19);
        lost.why_no_nvlink = "NVML device 1: GPU is lost";
        CHECK(judge_check("nvlink.fabric", lost, {}).verdict == Verdict::unknown);
    }
}

// The check table drives the run: each row is judged, run as device work,
// or run per pair, exactly one of them; the quick rows are the judged ones.
TEST_CASE("check table: every row has exactly one runner") {
    for (const Named<CheckKind>& row : kChecks) {
        CAPTURE(row.name);
        const int runners = int{has_judge(row.name)} + int{has_device_step(row.name)} + int{row.value.per_pair};
        CHECK(runners == 1);
        CHECK(has_judge(row.name) == (row.value.level == CheckLevel::quick));
    }
    CHECK_FALSE(has_judge("nvml.no_such_check"));
    CHECK_FALSE(has_device_step("copy.h3d"));
}

// A device check is one row, as a quick one is: the row names its device
// step and the step's setting, and src/bench runs the step by its kind with
// the row's id. So the id of a device check is written once in the sources
// (its row, base/check_table.hpp), never again where its step is: adding a
// check on a step that exists touches that file alone (and its tests and
// documents; docs/developing.md's recipe "A check").
TEST_CASE("check table: a device check's id is written in one place of the sources, its row") {
    const std::filesystem::path root = std::filesystem::path(tests_dir()) / "..";
    std::vector<std::pair<std::string, std::string>> sources;  // path, text
    for (const char* folder : {"src", "subcommands"})
        for (const auto& entry : std::filesystem::recursive_directory_iterator(root / folder)) {
            const std::string ext = entry.path().extension().string();
            if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
            std::ifstream in(entry.path());
            std::stringstream text;
            text << in.rdbuf();
            sources.emplace_back(std::filesystem::relative(entry.path(), root).string(), text.str());
        }
    REQUIRE(sources.size() > 50);
    int device_rows = 0;
    for (const Named<CheckKind>& row : kChecks) {
        if (row.value.step == DeviceStep::none) continue;
        ++device_rows;
        CAPTURE(row.name);
        const std::string quoted = "\"" + std::string(row.name) + "\"";
        std::vector<std::string> where;
        for (const auto& [path, text] : sources)
            for (std::size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
                // An example in a comment names no check; a table of that
                // name is another thing ("memtest": memtest's tests, --list memtest).
                const std::size_t line = text.rfind('\n', at) + 1;  // npos + 1: the first line
                const std::string before = text.substr(line, at - line);
                if (before.find("//") != std::string::npos || before.find("NameTable<") != std::string::npos) continue;
                where.push_back(path + ":" + std::to_string(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1));
            }
        CAPTURE(join(where));
        REQUIRE(where.size() == 1);
        CHECK(where.front().rfind("src/base/check_table.hpp:", 0) == 0);
        // A copy's setting is a direction copy knows.
        if (row.value.step == DeviceStep::copy) CHECK(kCopyDirections.find(row.value.step_setting) != nullptr);
    }
    CHECK(device_rows >= 8);  // cuda.context to memtest at least
}

// A --threshold for a check the level does not run is refused, naming the
// levels that do run it, and never the level it was given.
TEST_CASE("--threshold at a level that does not run the check: one clear message") {
    for (const Named<CheckKind>& row : kChecks) {
        const std::string id = row.value.per_pair ? "p2p" : std::string(row.name);
        for (const Named<CheckLevel>& level : kCheckLevels) {
            CAPTURE(id);
            CAPTURE(level.name);
            if (runs_at(row.value, level.value)) {
                require_runs_at(id, level.value);
                continue;
            }
            const std::string message = usage_error([&] { require_runs_at(id, level.value); });
            CHECK(message.find("does not run at --level " + std::string(level.name)) != std::string::npos);
            CHECK(message.find("(it runs at " + std::string(levels_text(row.value.level)) + ")") != std::string::npos);
            const std::string runs = message.substr(message.find("(it runs at"));
            CHECK(runs.find(std::string(level.name)) == std::string::npos);
        }
    }
    CHECK(usage_error([] { require_runs_at("memtest", CheckLevel::standard); }) ==
          "--threshold memtest: memtest does not run at --level standard (it runs at long)");
}
