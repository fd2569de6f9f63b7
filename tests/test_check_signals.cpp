// gpumem check's NVLink, expected GPUs and p2p reference without a GPU: the
// pure judges over fake NVML figures (a PCIe-only GPU, an HGX H100 with 18
// links to NVSwitches, a link down, error counters, NVML errors), node.gpus
// against --expect-gpus and lost GPUs, the threshold keys and their refusals.
#include <doctest/doctest.h>

#include <string>

#include "base/check_plan.hpp"
#include "base/errors.hpp"
#include "bench/check_engine.hpp"
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
        REQUIRE(checks.size() == 4);
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
        for (const char* id : {"nvlink.replay_errors", "nvlink.recovery_errors", "nvlink.crc_errors"}) CHECK(find(checks, id).verdict == Verdict::pass);
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
