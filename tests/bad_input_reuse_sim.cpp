// Bad invocations of gpumem reuse-sim: see bad_input.hpp.
#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> reuse_sim_cases(const Scratch& s) {
    (void)s;
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
        {{"reuse-sim", "--trace", "-"}},  // stdin needs --trace-format
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
    };
}

}  // namespace bad_input
