// Bad invocations of gpumem reuse-sim: see bad_input.hpp.
#include <sys/stat.h>

#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> reuse_sim_cases(const Scratch& s) {
    // A FIFO nobody writes to: each case must be refused before opening it
    // (which would wait for a writer).
    const std::string fifo = s.path("trace.fifo");
    mkfifo(fifo.c_str(), 0600);
    return {
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
        {{"reuse-sim", "--trace", "-"}},  // stdin is /dev/null here: an empty trace
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
        // Issue #13: these ran a default simulation and exited 0.
        {{"reuse-sim", "--trace", ""}, {2}, true},
        {{"reuse-sim", "--sync-every", "0"}, {2}, true},
        {{"reuse-sim", "--seed", "18446744073709551616"}, {2}, true},
        {{"reuse-sim", "--change-rate", "nan"}, {2}, true},
        // Option ranges: 0, negative, 2^64, nan, inf, empty.
        {{"reuse-sim", "--change-rate", "inf"}},
        {{"reuse-sim", "--change-rate", "-0.1"}},
        {{"reuse-sim", "--change-rate", "1.5"}},
        {{"reuse-sim", "--steps", "18446744073709551616"}},
        {{"reuse-sim", "--steps", "1e3"}},
        {{"reuse-sim", "--seed", "-1"}},
        {{"reuse-sim", "--sync-every", "-1"}},
        {{"reuse-sim", "--layers", "0"}},
        {{"reuse-sim", "--layers", "1001"}},
        {{"reuse-sim", "--streams", "1025"}},
        {{"reuse-sim", "--max-detections", "-1"}},
        {{"reuse-sim", "--bin-blocks", "0"}},
        {{"reuse-sim", "--ring-buffers", "18446744073709551616"}},
        {{"reuse-sim", "--timeline-points", "1"}},
        {{"reuse-sim", "--timeline-points", "nan"}},
        {{"reuse-sim", "--ring-size", "0"}},
        {{"reuse-sim", "--release-threshold", "-1"}},
        {{"reuse-sim", "--pool-initial", "2GiB", "--pool-max", "1GiB"}},
        {{"reuse-sim", "--max-non-split-rounding", "1MiB"}},
        {{"reuse-sim", "--batch", "0..4"}},
        {{"reuse-sim", "--batch", "8..4"}},
        {{"reuse-sim", "--tokens", "0"}},
        {{"reuse-sim", "--strategy", " "}},
        {{"reuse-sim", "--workload", ""}},
        {{"reuse-sim", "--growth", ""}},
        {{"reuse-sim", "--trace-format", ""}},
        // File arguments: empty names, directories, a FIFO, the trace overwritten.
        {{"reuse-sim", "--timeline", ""}, {2}, true},
        {{"reuse-sim", "--save-trace", ""}},
        {{"reuse-sim", "--costs", ""}},
        {{"reuse-sim", "--costs", s.dir}},
        {{"reuse-sim", "--trace", s.dir + "/"}},
        {{"reuse-sim", "--trace", "/dev/null"}},  // read once: an empty trace
        {{"reuse-sim", "--trace", fifo, "--save-trace", fifo}, {2}, true},
        {{"reuse-sim", "--trace", fifo, "--steps", "3"}},
        {{"reuse-sim", "--trace", fifo, "--trace-format", "parquet"}},
        {{"reuse-sim", "--trace", fifo, "--sync-every", "0"}},
        {{"reuse-sim", "--trace", s.path("good.csv"), "--save-trace", s.path("good.csv")}},
        // --execute and -d: one device, named before any driver call.
        {{"reuse-sim", "--execute", "--trace", ""}},
        {{"-d", "all", "reuse-sim", "--execute"}, {2}, true},
        {{"-d", "0,1", "reuse-sim", "--execute"}},
        {{"-d", "0", "reuse-sim", "--strategy", "naive"}},
        {{"-d", "", "reuse-sim", "--execute"}},
        {{"reuse-sim", "--execute", "--sync-every", "0"}},
        {{"-d", "local", "reuse-sim", "--execute"}, {2}, false, no_launcher()},
        // Two formats: an error, and no document on stdout (issue #13).
        {{"--json", "--csv", "reuse-sim"}},
        {{"reuse-sim", "--csv", "--json"}},
        {{"--json", "reuse-sim", "--format", "table", "--trace", ""}},
    };
}

}  // namespace bad_input
