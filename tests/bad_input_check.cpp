// Bad invocations of gpumem check: see bad_input.hpp. Every one is refused
// before NVML or the driver is touched, a FIFO as --thresholds included
// (refused without opening it, so that nothing blocks).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "bad_input.hpp"
#include "cli_harness.hpp"

namespace bad_input {
namespace {

// Every check's --threshold at every level (gpumem --list checks, so that a
// new row is covered): a value no unit reads ("oops") is refused at every
// level, and a plain "1" at each level that does not run the check (or for
// a check that takes no threshold). Never a run: the cases that would run
// are left out.
std::vector<BadCase> threshold_level_cases() {
    const RunResult listed = run_gpumem({"--list", "checks", "--format", "value"});
    std::vector<BadCase> cases;
    std::istringstream lines(listed.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        // Tab-separated: name, description, levels, threshold, remediation, source.
        std::vector<std::string> fields;
        std::istringstream cells(line);
        for (std::string cell; std::getline(cells, cell, '\t');) fields.push_back(cell);
        if (fields.size() < 3) continue;
        const std::string id = fields[0] == "p2p.A-B" ? "p2p" : fields[0];
        const std::string& levels = fields[2];
        for (const char* level : {"quick", "standard", "long"}) {
            cases.push_back({{"check", "--level", level, "--threshold", id + "=oops"}});
            const bool runs = levels == "every level" || (levels == "standard and long" && std::string(level) != "quick") ||
                              (levels == "long" && std::string(level) == "long");
            if (!runs) cases.push_back({{"check", "--level", level, "--threshold", id + "=1"}, {2}, true});
        }
    }
    return cases;
}

}  // namespace

std::vector<BadCase> check_cases(const Scratch& s) {
    s.write("check_empty.json", "");
    s.write("check_malformed.json", "{\"copy.h2d\": 45");
    s.write("check_array.json", "[\"copy.h2d\", 45]");
    s.write("check_unknown.json", "{\"copy.h3d\": 45}");
    s.write("check_negative.json", "{\"copy.h2d\": -45}");
    s.write("check_huge.json", "{\"fill.verify\": 18446744073709551616}");
    s.write("check_null.json", "{\"copy.h2d\": null}");
    const std::string fifo = s.path("check_fifo.json");
    ::mkfifo(fifo.c_str(), 0600);  // already there on a second call: fine
    s.write("check_expect_misspelled.json", "{\"expect-gpu\": 8}");
    s.write("check_expect_zero.json", "{\"expect-gpus\": 0}");
    s.write("check_expect_text.json", "{\"expect-gpus\": \"eight\"}");
    s.write("check_expect_fraction.json", "{\"node.gpus\": 7.5}");
    s.write("check_nvlink_misspelled.json", "{\"nvlink.crc_error\": 10}");
    s.write("check_nvlink_negative.json", "{\"nvlink.replay_errors\": -5}");
    s.write("check_xid_threshold.json", "{\"xid.events\": 1}");
    s.write("kernel_binary.log", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8));
    s.write("kernel_long_line.log", std::string((1 << 20) + 16, 'x'));
    const std::string kernel_fifo = s.path("kernel_fifo.log");
    ::mkfifo(kernel_fifo.c_str(), 0600);
    const std::string kernel_huge = s.path("kernel_huge.log");
    if (FILE* f = std::fopen(kernel_huge.c_str(), "w")) {
        if (ftruncate(fileno(f), 1LL << 30) != 0) {}  // 1 GiB, sparse: refused by its size, unread
        std::fclose(f);
    }
    std::vector<BadCase> cases = {
        {{"check", "--level", "fast"}, {2}, true},
        {{"check", "--levle", "quick"}, {2}, true},
        {{"check", "--thresholds", "copy.h2d=45GB/s"}, {2}, true},
        {{"check", "--threshold", "copy.h2x=45GB/s"}, {2}, true},
        {{"check", "--level", ""}},
        {{"check", "--level", "QUICK"}},
        {{"check", "--level"}},
        {{"check", "--threshold", "copy.h2d"}, {2}, true},
        {{"check", "--threshold", "copy.h3d=45GB/s"}, {2}, true},
        {{"check", "--threshold", "copy.h2d=nan"}},
        {{"check", "--threshold", "copy.h2d=inf"}},
        {{"check", "--threshold", "copy.h2d=-1"}},
        {{"check", "--threshold", "copy.h2d=10PB/s"}},
        {{"check", "--threshold", "fill.verify=18446744073709551616"}},
        {{"check", "--threshold", "fill.verify=0.5"}},
        {{"check", "--threshold", "alloc.max=1.5.5GiB"}},
        {{"check", "--threshold", "nvml.remapped_rows.pending=1"}},
        {{"check", "--threshold", "p2p.0-0=100"}},
        {{"check", "--threshold", "p2p.x-1=100"}},
        {{"check", "--threshold", "=45"}},
        {{"check", "--threshold", "copy.h2d=45", "--threshold", "copy.h2d=50"}, {2}, true},
        {{"check", "--level", "quick", "--threshold", "copy.h2d=45GB/s"}, {2}, true},
        {{"check", "--thresholds", ""}, {2}, true},
        {{"check", "--thresholds", s.dir}},
        {{"check", "--thresholds", fifo}, {2}, true},
        {{"check", "--thresholds", s.path("check_missing.json")}},
        {{"check", "--thresholds", s.path("check_empty.json")}},
        {{"check", "--thresholds", s.path("check_malformed.json")}, {2}, true},
        {{"check", "--thresholds", s.path("check_array.json")}},
        {{"check", "--thresholds", s.path("check_unknown.json")}},
        {{"check", "--thresholds", s.path("check_negative.json")}},
        {{"check", "--thresholds", s.path("check_huge.json")}},
        {{"check", "--thresholds", s.path("check_null.json")}},
        {{"check", "--expect-gpus", "0"}, {2}, true},
        {{"check", "--expect-gpus", "-1"}},
        {{"check", "--expect-gpus", "eight"}},
        {{"check", "--expect-gpus", "1.5"}},
        {{"check", "--expect-gpus", ""}},
        {{"check", "--expect-gpus", "99999"}},
        {{"check", "--expect-gpus", "2", "--threshold", "node.gpus=2"}, {2}, true},
        {{"check", "--thresholds", s.path("check_expect_misspelled.json")}, {2}, true},
        {{"check", "--thresholds", s.path("check_expect_zero.json")}},
        {{"check", "--thresholds", s.path("check_expect_text.json")}},
        {{"check", "--thresholds", s.path("check_expect_fraction.json")}},
        {{"check", "--thresholds", s.path("check_nvlink_misspelled.json")}},
        {{"check", "--thresholds", s.path("check_nvlink_negative.json")}},
        {{"check", "--thresholds", s.path("check_xid_threshold.json")}},
        {{"check", "--threshold", "xid.events=0"}},
        {{"check", "--threshold", "nvlink.links=x18"}},
        {{"check", "--kernel-log", s.path("kernel_missing.log")}, {2}, true},
        {{"check", "--kernel-log", s.dir}},
        {{"check", "--kernel-log", ""}},
        {{"check", "--kernel-log", s.path("kernel_binary.log")}, {2}, true},
        {{"check", "--kernel-log", s.path("kernel_long_line.log")}},
        {{"check", "--kernel-log", kernel_huge}, {2}, true},
        {{"check", "--kernel-log", kernel_fifo}},
        {{"check", "--kernel-log", "/dev/zero"}},
        {{"check", "--kernel-log", "/dev/kmsg"}},
        // Reading /proc/kmsg waits for the next message (and takes it from syslog): refused, never read.
        {{"check", "--kernel-log", "/proc/kmsg"}},
        {{"check", "--kernel-log", "/proc/self/status"}},
        {{"check", "--xid-since", "yesterday"}, {2}, true},
        {{"check", "--xid-since", "0h"}},
        {{"check", "--xid-since", "-1h"}},
        {{"check", "--xid-since", "2026-13-40"}},
        // Dates that do not exist (timegm would roll them into the next month).
        {{"check", "--xid-since", "2026-02-30T05:00:00"}, {2}, true},
        {{"check", "--xid-since", "2026-02-29T05:00:00"}},
        {{"check", "--xid-since", "2026-04-31T05:00"}},
        {{"check", "--xid-since", "2026-11-25T24:00:00"}},
        {{"check", "--lock-timeout", "5x"}},
        {{"check", "--lock-timeout", "-1s"}},
        {{"check", "--xid-since", ""}},
        // --lock-timeout: seconds, 0 to 86400.
        {{"check", "--lock-timeout", "-1"}, {2}, true},
        {{"check", "--lock-timeout", "abc"}},
        {{"check", "--lock-timeout", "nan"}},
        {{"check", "--lock-timeout", "1e999"}},
        {{"check", "--lock-timeout", "86401"}},
        {{"check", "--lock-timeout", ""}},
        {{"check", "--lock-timeout"}},
        {{"check", "-d", "local"}, {2}, true, no_launcher()},
        {{"check", "-d", "local", "--level", "quick"}, {2}, false, no_launcher()},
        {{"check", "-d", "0,,1"}},
        {{"check", "standard"}},
        {{"check", "--strict", "--format", "value", "--json"}},
        // Sizes follow one rule everywhere: no fraction of a byte.
        {{"check", "--threshold", "alloc.max=3.5B"}, {2}, true},
        {{"check", "--threshold", "nvml.memory.in_use=0.1KiB"}},
        {{"check", "--threshold", "nvml.memory.in_use=-1GiB"}},
        {{"check", "--threshold", "nvml.memory.in_use=banana"}},
        // --format nagios: a usage error is UNKNOWN (3) with its status line,
        // as the Nagios plugin guidelines ask; 2 would read as CRITICAL.
        {{"--format", "nagios", "check", "--level", "fast"}, {3}},
        {{"--format=nagios", "check", "--threshold", "copy.h2d=-1"}, {3}},
        {{"--format", "nagios", "check", "--threshold", "alloc.max=3.5B"}, {3}},
        {{"--format", "nagios", "check", "--bogus"}, {3}},
        // Offered by check only: elsewhere a usage error like any format a
        // command does not offer (2), not a plugin's UNKNOWN (issue 48).
        {{"--format", "nagios", "info"}, {2}},
        {{"--format", "nagios", "memset"}, {2}},
        {{"--format", "nagios", "report"}, {2}},
        {{"--format", "nagios", "--list", "checks"}, {2}},
        {{"--format", "npd", "memset"}, {2}},
        {{"--format", "nagios", "--json", "check"}},  // contradicting formats: a plain usage error
    };
    for (BadCase& c : threshold_level_cases()) cases.push_back(std::move(c));
    return cases;
}

}  // namespace bad_input
