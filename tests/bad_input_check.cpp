// Bad invocations of gpumem check: see bad_input.hpp. Every one is refused
// before NVML or the driver is touched, a FIFO as --thresholds included
// (refused without opening it, so that nothing blocks).
#include <sys/stat.h>

#include "bad_input.hpp"

namespace bad_input {

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
    return {
        {{"check", "--level", "fast"}, {2}, true},
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
        {{"--format", "nagios", "info"}, {3}},   // offered by check only
        {{"--format", "nagios", "report"}, {3}},
        {{"--format", "nagios", "--list", "checks"}, {3}},
        {{"--format", "nagios", "--json", "check"}},  // contradicting formats: a plain usage error
    };
}

}  // namespace bad_input
