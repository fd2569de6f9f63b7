// Xid events without a GPU: the catalog's rows, the parser over every form
// of kernel log line (dmesg, dmesg -T, /dev/kmsg, journalctl, syslog, cut
// short, other drivers'), the saved logs of tests/fixtures/kernel_log, the
// refusals of --kernel-log, --xid-since and its window, and the xid.events
// check of a GPU against those logs.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/xid.hpp"
#include "bench/check_engine.hpp"
#include "cli/lists.hpp"
#include "core/kernel_log.hpp"
#include "usage_error.hpp"
#include "tests_dir.hpp"

using namespace gpumem;

namespace {

std::string fixture(const std::string& name) {
    return tests_dir() + "/fixtures/kernel_log/" + name;
}

PciAddress pci(unsigned bus) {
    PciAddress a;
    a.bus = bus;
    return a;
}

using gpumem::test::usage_error;

CheckOutcome check_of(const std::string& file, unsigned bus, const std::string& since = "boot") {
    const XidScan scan = read_kernel_log_file(fixture(file));
    const XidWindow window = xid_window(scan, parse_xid_since(since), std::nullopt);
    return xid_check(scan, window, pci(bus), {pci(0x18), pci(0x2a)});
}

}  // namespace

namespace {

// tests/fixtures/xid/catalog.tsv: the catalog's facts, one row a code.
struct CatalogFact {
    unsigned code = 0;
    std::string mnemonic, description, action;
};

std::vector<CatalogFact> catalog_facts() {
    std::ifstream in(tests_dir() + "/fixtures/xid/catalog.tsv");
    REQUIRE(in);
    std::vector<CatalogFact> facts;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#' || line.rfind("code\t", 0) == 0) continue;
        std::vector<std::string> cells;
        std::size_t start = 0;
        for (std::size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', start)) {
            cells.push_back(line.substr(start, tab - start));
            start = tab + 1;
        }
        cells.push_back(line.substr(start));
        REQUIRE(cells.size() == 5);
        facts.push_back({static_cast<unsigned>(std::stoul(cells[0])), cells[1], cells[2], cells[3]});
    }
    return facts;
}

}  // namespace

TEST_CASE("xid catalog: every code of NVIDIA's catalog, as the fixture holds its facts") {
    const std::vector<CatalogFact> facts = catalog_facts();
    REQUIRE(facts.size() == 172);
    REQUIRE(xid_catalog().size() == facts.size());
    for (const CatalogFact& f : facts) {
        CAPTURE(f.code);
        const XidCode* row = xid_code(f.code);
        REQUIRE(row != nullptr);
        CHECK(row->mnemonic == f.mnemonic);
        CHECK(row->description == f.description);
        CHECK(xid_action_row(row->action).name == f.action);
    }
    CHECK(xid_code(999) == nullptr);
    CHECK(xid_code(0) == nullptr);
    CHECK(xid_code(173) == nullptr);
    // In increasing order, each code once: xid_code's search relies on it.
    for (std::size_t i = 1; i < xid_catalog().size(); ++i) CHECK(xid_catalog()[i - 1].code < xid_catalog()[i].code);
}

TEST_CASE("xid catalog: one rule from the immediate action, and the departures named") {
    // Every action has its own row, and the rule is the issue's.
    for (const XidActionRow& a : xid_actions()) CHECK(xid_action_row(a.action).action == a.action);
    struct Rule {
        XidAction action;
        XidSeverity severity;
        Remediation remediation;
    };
    const Rule rules[] = {
        {XidAction::restart_app, XidSeverity::info, Remediation::none},          {XidAction::ignore, XidSeverity::info, Remediation::none},
        {XidAction::reset_gpu, XidSeverity::critical, Remediation::reset_gpu},   {XidAction::restart_bm, XidSeverity::critical, Remediation::reboot},
        {XidAction::contact_support, XidSeverity::critical, Remediation::service}, {XidAction::workflow_xid_48, XidSeverity::critical, Remediation::reset_gpu},
        {XidAction::workflow_nvlink_err, XidSeverity::critical, Remediation::reset_gpu}, {XidAction::workflow_xid_45, XidSeverity::info, Remediation::none},
    };
    for (const Rule& r : rules) {
        CAPTURE(xid_action_row(r.action).name);
        CHECK(xid_action_row(r.action).judgement.severity == r.severity);
        CHECK(xid_action_row(r.action).judgement.remediation == r.remediation);
    }
    // The codes the issue names: 39-41 restart the application (no drain),
    // 109 resets the GPU, 63 is ignored, 64 resets, 94 restarts the application.
    for (unsigned code : {39U, 40U, 41U, 13U, 31U, 43U, 63U, 94U}) {
        CAPTURE(code);
        CHECK(xid_judgement(*xid_code(code)).severity == XidSeverity::info);
    }
    for (unsigned code : {109U, 64U, 46U, 95U, 119U, 48U, 74U}) {
        CAPTURE(code);
        CHECK(xid_judgement(*xid_code(code)).severity == XidSeverity::critical);
        CHECK(xid_judgement(*xid_code(code)).remediation == Remediation::reset_gpu);
    }
    CHECK(xid_judgement(*xid_code(79)).remediation == Remediation::reboot);
    // The departures, each with its reason; every other row follows the rule.
    std::vector<unsigned> departing;
    for (const XidCode& c : xid_catalog())
        if (!c.why_departs.empty()) departing.push_back(c.code);
    CHECK(departing == std::vector<unsigned>{162, 171, 172});
    CHECK(xid_judgement(*xid_code(171)).severity == XidSeverity::critical);
    CHECK(xid_judgement(*xid_code(162)).severity == XidSeverity::info);
    CHECK(xid_judgement(*xid_code(167)).remediation == Remediation::drain);  // no action in the catalog: a person looks
}

TEST_CASE("--list xids: a person's two columns; in JSON and CSV each fact of the row on its own") {
    using namespace gpumem::cli;
    const nlohmann::json doc = nlohmann::json::parse(render(list_report("xids", Format::json), OutputOptions{Format::json}));
    const nlohmann::json& rows = doc.at("names");
    REQUIRE(rows.size() == xid_catalog().size());
    std::vector<unsigned> departing;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const nlohmann::json& r = rows[i];
        const XidCode& c = xid_catalog()[i];
        CAPTURE(c.code);
        CHECK(r.at("code") == c.code);
        CHECK(r.at("name") == std::to_string(c.code));
        CHECK(r.at("mnemonic") == std::string(c.mnemonic));
        CHECK(r.at("catalog_description") == std::string(c.description));
        const std::string_view action = xid_action_row(c.action).name;
        if (action.empty()) CHECK(r.at("immediate_action").is_null());
        else CHECK(r.at("immediate_action") == std::string(action));
        if (!r.at("departs").is_null()) departing.push_back(c.code);
        if (c.action == XidAction::xid_154) {  // judged by the action its line names
            CHECK(r.at("verdict").is_null());
            CHECK(r.at("remediation").is_null());
            continue;
        }
        const XidJudgement j = xid_judgement(c);
        const std::string verdict = j.severity == XidSeverity::info ? "pass" : j.severity == XidSeverity::warn ? "warn" : "fail";
        CHECK(r.at("verdict") == verdict);
        CHECK(r.at("remediation") == std::string(remediation_name(j.remediation)));
        CHECK(r.at("description").get<std::string>().find(std::string(c.description)) != std::string::npos);
    }
    CHECK(departing == std::vector<unsigned>{162, 171, 172});
    // The examples the issue names, as a fleet's tool reads them.
    CHECK(rows[39 - 1].at("verdict") == "pass");
    CHECK(rows[109 - 1].at("remediation") == "reset-gpu");
    CHECK(rows[79 - 1].at("remediation") == "reboot");
    // The table keeps its two columns within 100; CSV carries every key.
    const std::string table = render(list_report("xids", Format::table), OutputOptions{Format::table});
    CHECK(table.rfind("name  description\n", 0) == 0);
    CHECK(table.find("RESTART_APP]") != std::string::npos);
    CHECK(table.find("reset-gpu") == std::string::npos);  // the words, not the machine names
    const std::string csv = render(list_report("xids", Format::csv), OutputOptions{Format::csv});
    CHECK(csv.rfind("name,description,code,mnemonic,catalog_description,immediate_action,verdict,remediation,rule,departs\n", 0) == 0);
}

TEST_CASE("xid events: a planted Xid of each immediate action gives the table's verdict, in dmesg, journal and kmsg forms") {
    const std::string forms[] = {"[ 100.5] NVRM: Xid (PCI:0000:18:00): CODE, pid=1, name=x, text",
                                 "2026-11-25T03:40:12+0000 node kernel: NVRM: Xid (PCI:0000:18:00): CODE, pid=1, text",
                                 "4,1590,100500000,-;NVRM: Xid (PCI:0000:18:00): CODE, pid=1, text"};
    for (const XidActionRow& a : xid_actions()) {
        if (a.action == XidAction::xid_154) continue;  // by its text, below
        const auto row = std::find_if(xid_catalog().begin(), xid_catalog().end(),
                                      [&](const XidCode& c) { return c.action == a.action && c.why_departs.empty(); });
        REQUIRE(row != xid_catalog().end());
        for (const std::string& form : forms) {
            std::string line = form;
            line.replace(line.find("CODE"), 4, std::to_string(row->code));
            CAPTURE(line);
            const XidScan scan = scan_kernel_log_text(line + "\n", "planted");
            REQUIRE(scan.events.size() == 1);
            const CheckOutcome o = xid_check(scan, xid_window(scan, parse_xid_since("boot"), std::nullopt), pci(0x18), {pci(0x18)});
            const Verdict expected = a.judgement.severity == XidSeverity::info ? Verdict::pass
                                     : a.judgement.severity == XidSeverity::warn ? Verdict::warn
                                                                                 : Verdict::fail;
            CHECK(o.verdict == expected);
            CHECK(o.remediation == (expected == Verdict::pass ? Remediation::none : a.judgement.remediation));
            CHECK(o.value.value() == 1);
        }
    }
    // Xid 154: the recovery action its line names, in each form.
    const std::pair<std::string, Remediation> actions[] = {{"0x1 (GPU Reset Required)", Remediation::reset_gpu},
                                                           {"0x2 (Node Reboot Required)", Remediation::reboot},
                                                           {"0x4 (Drain and Reset)", Remediation::reset_gpu}};
    for (const auto& [text, remediation] : actions)
        for (const std::string& form : forms) {
            const std::string line = form.substr(0, form.find("CODE")) + "154, GPU recovery action changed from 0x0 (None) to " + text;
            CAPTURE(line);
            const XidScan scan = scan_kernel_log_text(line, "planted");
            REQUIRE(scan.events.size() == 1);
            const CheckOutcome o = xid_check(scan, xid_window(scan, parse_xid_since("boot"), std::nullopt), pci(0x18), {pci(0x18)});
            CHECK(o.verdict == Verdict::fail);
            CHECK(o.remediation == remediation);
        }
}

TEST_CASE("xid parser: the forms kernel logs take") {
    SUBCASE("dmesg") {
        const KernelLine l = parse_kernel_log_line("[ 7201.118455] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.");
        REQUIRE(l.kind == KernelLineKind::xid);
        CHECK(l.event.code == 79);
        CHECK(l.event.pci->bus == 0x18);
        CHECK(l.event.pci->domain == 0);
        CHECK(l.event.uptime.value() == doctest::Approx(7201.118455));
        CHECK(l.event.time_text == "7201.118 s after boot");
        CHECK(l.event.detail.find("GPU has fallen off the bus") != std::string::npos);
    }
    SUBCASE("/dev/kmsg record") {
        const KernelLine l = parse_kernel_log_line("4,1590,4100201337,-;NVRM: Xid (PCI:0000:18:00): 74, pid=52277, name=nccl, NVLink: fatal error");
        REQUIRE(l.kind == KernelLineKind::xid);
        CHECK(l.event.code == 74);
        CHECK(l.event.uptime.value() == doctest::Approx(4100.201337));
    }
    SUBCASE("journalctl -o short-iso: a wall clock time") {
        const KernelLine l = parse_kernel_log_line("2026-11-25T03:40:12+0000 node kernel: NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE");
        REQUIRE(l.kind == KernelLineKind::xid);
        CHECK(l.event.epoch.value() == 1795578012);  // date -d 2026-11-25T03:40:12Z +%s
        CHECK(l.event.time_text == "2026-11-25T03:40:12+0000");
    }
    SUBCASE("syslog with dmesg's time inside, and dmesg -T") {
        KernelLine l = parse_kernel_log_line("Nov 25 04:10:06 node kernel: [ 1406.25] NVRM: Xid (0000:18:00): 45, pid=7781, Ch 00000010");
        REQUIRE(l.kind == KernelLineKind::xid);
        CHECK(l.event.code == 45);
        CHECK(l.event.uptime.value() == doctest::Approx(1406.25));
        l = parse_kernel_log_line("[Wed Nov 25 05:00:01 2026] NVRM: Xid (PCI:0001:c3:00): 119, pid=2231, Timeout");
        REQUIRE(l.kind == KernelLineKind::xid);
        CHECK(l.event.pci->domain == 1);
        CHECK(l.event.pci->bus == 0xc3);
        CHECK(l.event.time_text == "Wed Nov 25 05:00:01 2026");
        CHECK_FALSE(l.event.uptime);
    }
    SUBCASE("klogctl's <prio> and a bare message") {
        KernelLine l = parse_kernel_log_line("<4>[   12.500000] NVRM: Xid (PCI:0000:18:00): 31, pid=1, MMU Fault");
        REQUIRE(l.kind == KernelLineKind::xid);
        CHECK(l.event.uptime.value() == doctest::Approx(12.5));
        l = parse_kernel_log_line("NVRM: Xid (PCI:0000:18:00): 13");
        REQUIRE(l.kind == KernelLineKind::xid);
        CHECK(l.event.code == 13);
        CHECK(l.event.time_text.empty());
    }
    SUBCASE("Xid 154 names its recovery action") {
        auto action = [](const std::string& text) {
            return parse_kernel_log_line("NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to " + text).event.recovery_action;
        };
        CHECK(action("0x1 (GPU Reset Required)") == Remediation::reset_gpu);
        CHECK(action("0x2 (Node Reboot Required)") == Remediation::reboot);
        CHECK(action("0x3 (Drain P2P)") == Remediation::drain);
        CHECK(action("0x4 (Drain and Reset)") == Remediation::reset_gpu);
        CHECK(action("0x0 (None)") == Remediation::none);
        CHECK_FALSE(action("0x9 (Something New)"));
    }
    SUBCASE("other drivers' lines, other NVRM lines") {
        CHECK(parse_kernel_log_line("[ 5140.002171] mlx5_core 0000:3b:00.0: QUERY_VPORT_COUNTER failed").kind == KernelLineKind::other);
        CHECK(parse_kernel_log_line("[ 7201.118460] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.").kind == KernelLineKind::other);
        CHECK(parse_kernel_log_line("").kind == KernelLineKind::other);
        CHECK(parse_kernel_log_line("nouveau 0000:18:00.0: Xid-like words").kind == KernelLineKind::other);
    }
    SUBCASE("cut short or in unexpected forms: not understood, never an event") {
        for (const char* line : {"[ 1.0] NVRM: Xid (PCI:0000:18:0", "[ 1.0] NVRM: Xid (PCI:0000:18:00): ", "NVRM: Xid (PCI:0000:18:00): forty-eight",
                                 "NVRM: Xid (PCI:zzzz): 48, pid=1", "NVRM:Xid 48", "NVRM: Xid", "NVRM: Xid (", "NVRM: Xid (PCI:0000:18:00) 48",
                                 "NVRM: Xid (PCI:0000:18:00): 999999, too large", "NVRM: Xid (PCI:0000:18:00): 48x", "[99999999999999999999.1] NVRM: Xid"}) {
            CAPTURE(line);
            CHECK(parse_kernel_log_line(line).kind == KernelLineKind::not_understood);
        }
    }
}

TEST_CASE("xid logs: the saved fixtures, each event on its GPU") {
    SUBCASE("a GPU fallen off the bus fails with reboot; the application's faults pass, named") {
        const CheckOutcome fallen = check_of("dmesg_xid79.log", 0x18);
        CHECK(fallen.verdict == Verdict::fail);
        CHECK(fallen.remediation == Remediation::reboot);
        CHECK(fallen.value.value() == 1);
        CHECK(fallen.reason.find("Xid 79 at 7201.118 s after boot (GPU has fallen off the bus; reboot the node)") != std::string::npos);
        // The Mellanox NIC's Xid 119 is no GPU checked: named, not counted.
        CHECK(fallen.reason.find("1 Xid event of devices not checked here (PCI:0000:3b:00 Xid 119)") != std::string::npos);
        const CheckOutcome app = check_of("dmesg_xid79.log", 0x2a);
        CHECK(app.verdict == Verdict::pass);  // RESTART_APP: not a node fault
        CHECK(app.remediation == Remediation::none);
        CHECK(app.value.value() == 3);
        CHECK(app.reason.find("3 Xid events in the whole log") == 0);
        CHECK(app.reason.find("Xid 13 at 3612.778 s after boot") != std::string::npos);
        const CheckOutcome other = check_of("dmesg_xid79.log", 0x4c);
        CHECK(other.verdict == Verdict::pass);
        CHECK(other.value.value() == 0);
    }
    SUBCASE("journalctl: the worst of DBE, row remap, contained ECC and a recovery action") {
        const CheckOutcome a = check_of("journal_short_iso.log", 0x18);
        CHECK(a.verdict == Verdict::fail);
        CHECK(a.value.value() == 4);
        CHECK(a.remediation == Remediation::reset_gpu);
        const CheckOutcome b = check_of("journal_short_iso.log", 0x2a);
        CHECK(b.verdict == Verdict::fail);
        CHECK(b.remediation == Remediation::reboot);  // Xid 154: Node Reboot Required
        CHECK(b.reason.find("Xid 154 at 2026-11-25T04:55:31+0000 (GPU recovery action changed to 0x2 (Node Reboot Required); reboot the node)") !=
              std::string::npos);
    }
    SUBCASE("/dev/kmsg records with their continuation lines") {
        const CheckOutcome k = check_of("kmsg.log", 0x18);
        CHECK(k.verdict == Verdict::fail);
        CHECK(k.value.value() == 2);
        CHECK(k.reason.find("Xid 74") < k.reason.find("Xid 13"));  // worst first
    }
    SUBCASE("mangled lines are counted and named; an unknown code warns by its number") {
        const XidScan scan = read_kernel_log_file(fixture("syslog_mangled.log"));
        CHECK(scan.lines == 11);
        CHECK(scan.not_understood == 5);
        CHECK(scan.events.size() == 4);
        const CheckOutcome m = check_of("syslog_mangled.log", 0x18);
        CHECK(m.verdict == Verdict::warn);
        CHECK(m.reason.find("Xid 999 is not in gpumem's catalog") != std::string::npos);
        CHECK(m.reason.find("5 Xid lines not understood (first: '") != std::string::npos);
        CHECK(m.reason.find("an action gpumem does not know") != std::string::npos);
    }
    SUBCASE("a clean log passes") {
        const CheckOutcome c = check_of("clean_h100.log", 0x18);
        CHECK(c.verdict == Verdict::pass);
        CHECK(c.reason.find("no Xid events in the whole log (5 lines of ") == 0);
    }
    SUBCASE("a log that may not be read is unknown, never a pass") {
        XidScan scan;
        scan.source = "/dev/kmsg";
        scan.why_unreadable = "the kernel log cannot be read: /dev/kmsg: Operation not permitted";
        const CheckOutcome u = xid_check(scan, xid_window(scan, XidSince{}, std::nullopt), pci(0x18), {pci(0x18)});
        CHECK(u.verdict != Verdict::pass);
        CHECK(u.reason.find("not permitted") != std::string::npos);
    }
}

TEST_CASE("xid window: --xid-since") {
    CHECK(parse_xid_since("boot").kind == XidSince::Kind::boot);
    CHECK(parse_xid_since("90s").seconds == 90);
    CHECK(parse_xid_since("30m").seconds == 1800);
    CHECK(parse_xid_since("6h").seconds == 21600);
    CHECK(parse_xid_since("2d").seconds == 172800);
    CHECK(parse_xid_since("2026-11-25T03:00:00Z").epoch == 1795575600);
    CHECK(parse_xid_since("2026-11-25T04:00:00+01:00").epoch == 1795575600);
    CHECK(parse_xid_since("2026-11-25 03:00Z").epoch == 1795575600);
    CHECK(parse_xid_since("2026-11-25T03:00:00").kind == XidSince::Kind::time);  // local time
    // A duration in the grammar of every duration option.
    CHECK(parse_xid_since("1.5h").seconds == 5400);
    CHECK(parse_xid_since("1h30m").seconds == 5400);
    CHECK(parse_xid_since("1 h").seconds == 3600);
    CHECK(parse_xid_since("90").seconds == 90);
    CHECK(parse_xid_since("90").kind == XidSince::Kind::duration);
    // A leap day is a date in a leap year only.
    CHECK(parse_xid_since("2024-02-29T00:00:00Z").epoch == 1709164800);
    CHECK(parse_xid_since("2000-02-29T00:00:00Z").kind == XidSince::Kind::time);
    for (const char* bad : {"", "0h", "1y", "h", "-1h", "yesterday", "2026-13-01T00:00:00", "2026-11-25T03:00:00+", "2026-11-25T03:00:00Zjunk",
                            "99999999999d", "1h30", "400d",
                            // Dates that do not exist: timegm would roll them into the next month.
                            "2026-02-30T05:00:00", "2026-02-29T00:00:00", "2100-02-29T00:00:00", "2026-04-31T00:00", "2026-11-25T24:00",
                            "2026-11-25T23:60", "2026-11-00T00:00"}) {
        CAPTURE(bad);
        CHECK(usage_error([&] { parse_xid_since(bad); }).find("--xid-since") == 0);
    }
    SUBCASE("a saved log: a duration counts back from its last time") {
        const XidScan scan = read_kernel_log_file(fixture("dmesg_xid79.log"));
        CHECK(scan.last_uptime.value() == doctest::Approx(7305.441902));
        const XidWindow w = xid_window(scan, parse_xid_since("1h"), std::nullopt);  // from 3705.4 s on
        CHECK(w.events.size() == 2);  // the Xid 79 and the NIC's 119
        CHECK(w.before == 3);
        CHECK(w.description == "in the last 1h of the log");
        const CheckOutcome fallen = xid_check(scan, w, pci(0x18), {pci(0x18), pci(0x2a)});
        CHECK(fallen.verdict == Verdict::fail);
        CHECK(xid_check(scan, w, pci(0x2a), {pci(0x18), pci(0x2a)}).verdict == Verdict::pass);
    }
    SUBCASE("a saved journal: a time against its ISO timestamps") {
        const XidScan scan = read_kernel_log_file(fixture("journal_short_iso.log"));
        const XidWindow w = xid_window(scan, parse_xid_since("2026-11-25T04:00:00Z"), std::nullopt);
        CHECK(w.events.size() == 2);
        CHECK(w.before == 4);
        CHECK(w.not_comparable == 0);
        // dmesg's times since boot cannot be placed against a date: kept, counted.
        const XidScan dmesg = read_kernel_log_file(fixture("dmesg_xid79.log"));
        const XidWindow d = xid_window(dmesg, parse_xid_since("2026-11-25T04:00:00Z"), std::nullopt);
        CHECK(d.events.size() == 5);
        CHECK(d.not_comparable == 5);
        CHECK(xid_check(dmesg, d, pci(0x18), {pci(0x18)}).reason.find("events with no time to compare, counted") != std::string::npos);
    }
    SUBCASE("the live log: times since boot placed by the clock") {
        const XidScan scan = scan_kernel_log_text("4,1,1000000000,-;NVRM: Xid (PCI:0000:18:00): 79, gone\n4,2,5000000000,-;NVRM: Xid (PCI:0000:18:00): 13, app\n",
                                                  "/dev/kmsg");
        const XidClock clock{5100, 1795575600};  // 5100 s after boot
        const XidWindow w = xid_window(scan, parse_xid_since("10m"), clock);
        REQUIRE(w.events.size() == 1);
        CHECK(w.events[0].code == 13);
        CHECK(w.description == "in the last 10m");
        const XidWindow t = xid_window(scan, XidSince{XidSince::Kind::time, 0, 1795575600 - 200, "a time"}, clock);
        REQUIRE(t.events.size() == 1);  // 200 s before now is 4900 s after boot
        CHECK(xid_window(scan, XidSince{}, clock).description == "since boot");
    }
}

TEST_CASE("xid --kernel-log: refused before anything is read") {
    char tmpl[] = "/tmp/gpumem-xid-test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    const std::string binary = dir + "/binary.log", big = dir + "/big.log", fifo = dir + "/fifo.log", longline = dir + "/long.log";
    std::ofstream(binary, std::ios::binary) << std::string("\x1f\x8b\x08\x00\x00\x00", 6);
    {
        std::FILE* f = std::fopen(big.c_str(), "w");
        REQUIRE(f != nullptr);
        REQUIRE(ftruncate(fileno(f), 1LL << 30) == 0);  // 1 GiB, sparse
        std::fclose(f);
    }
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    std::ofstream(longline) << std::string(kKernelLogMaxLine + 10, 'x');
    const auto start = std::chrono::steady_clock::now();
    CHECK(usage_error([&] { read_kernel_log_file(dir + "/missing.log"); }).find("No such file") != std::string::npos);
    CHECK(usage_error([&] { read_kernel_log_file(dir); }).find("is a directory") != std::string::npos);
    CHECK(usage_error([&] { read_kernel_log_file(binary); }).find("binary") != std::string::npos);
    CHECK(usage_error([&] { read_kernel_log_file(big); }).find("is larger than a kernel log can be (at most 256") != std::string::npos);
    CHECK(usage_error([&] { read_kernel_log_file(fifo); }).find("not a regular file") != std::string::npos);
    CHECK(usage_error([&] { read_kernel_log_file("/dev/zero"); }).find("not a regular file") != std::string::npos);
    CHECK(usage_error([&] { read_kernel_log_file(longline); }).find("a line longer than") != std::string::npos);
    CHECK(usage_error([&] { read_kernel_log_file(""); }).find("empty file name") != std::string::npos);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1.0);
    (void)std::system(("rm -rf '" + dir + "'").c_str());
}
