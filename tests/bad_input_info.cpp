// Bad invocations of gpumem info: see bad_input.hpp.
#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> info_cases(const Scratch& s) {
    (void)s;
    return {
        {{"info", "--query", "nonsense"}, {2}, true},
        {{"info", "--loop", "5x"}, {2}, true},
        {{"info", "--loop", "0s"}},
        {{"info", "--jsno"}},
        {{"info", "--query", "name,,total"}},
        {{"info", "--pick", "0"}},
        {{"info", "--pick", "-1"}},
        {{"info", "--pick", "x"}},
        {{"info", "--min-free", "1GiB"}},  // --min-free needs --pick
        {{"info", "--pick", "1", "--min-free", "lots"}},
        {{"info", "--loop", "0"}},
        {{"info", "--loop", "-1"}},
        {{"info", "--loop", "soon"}},
        {{"info", "--count", "3"}},  // --count needs --loop
        {{"info", "--loop", "1", "--count", "0"}},
        {{"info", "extra-positional"}},
        // --query: reached the driver (exit 3) before the Command contract.
        {{"info", "--query", ""}, {2}, true},
        {{"info", "--query", " "}},
        {{"info", "--query", ","}},
        {{"info", "--query", "used,"}},
        {{"info", "--query", "used,used"}, {2}, true},
        {{"info", "--query", "free,memory.free"}},  // a field and its alias
        {{"info", "--query", "Used"}},              // keys are lower case
        {{"info", "--query", "used;free"}},
        {{"info", "--query", "used", "--query", "free"}},
        // Ranges: CLI11 alone turned -1 and 2^64 into 2^64-1 and let nan through.
        {{"info", "--pick", ""}},
        {{"info", "--pick", "1.5"}},
        {{"info", "--pick", "65537"}},
        {{"info", "--pick", "18446744073709551616"}, {2}, true},
        {{"info", "--loop", ""}},
        {{"info", "--loop", "nan"}, {2}, true},
        {{"info", "--loop", "inf"}},
        {{"info", "--loop", "-inf"}},
        {{"info", "--loop", "1e400"}},
        {{"info", "--loop", "0.001"}},
        {{"info", "--loop", "86401"}},
        {{"info", "--loop", "1", "--count", "-1"}},
        {{"info", "--loop", "1", "--count", "18446744073709551616"}},
        {{"info", "--loop", "1", "--count", "1099511627777"}},  // 2^40 + 1
        {{"info", "--loop", "1", "--count", "nan"}},
        {{"info", "--pick", "1", "--min-free", ""}},
        {{"info", "--pick", "1", "--min-free", "0"}},
        {{"info", "--pick", "1", "--min-free", "nan%"}},
        {{"info", "--pick", "1", "--min-free", "101%"}, {2}, true},  // no device can have more than all of it free
        // Options that exclude or need each other.
        {{"info", "--pick", "1", "--query", "used"}, {2}, true},
        {{"info", "--pick", "1", "--processes"}},
        {{"info", "--pick", "1", "--loop", "1", "--count", "2"}},
        {{"info", "--pick", "1", "--count", "2"}},
        {{"info", "--min-free", "1GiB", "--loop", "1"}},
        {{"info", "--count", "2", "--query", "used"}},
        // Health fields: nvidia-smi's names that gpumem does not take, one field by two names.
        {{"info", "--query", "remapped_rows"}, {2}, true},
        {{"info", "--query", "ecc.errors.corrected.volatile.dram"}},  // per location: not read
        {{"info", "--query", "clocks_event_reasons.gpu_idle"}},       // one reason: the names field has them all
        {{"info", "--query", "retired_pages.sbe,retired_pages.single_bit_ecc.count"}, {2}, true},
        {{"info", "--query", "clocks.mem,memory_clock_mhz"}},
        {{"info", "--query", "clocks_event_reasons.active,clocks_throttle_reasons.active"}},
        {{"info", "--query", "ECC_ENABLED"}},
        {{"info", "--query", "ecc_enabled,"}},
        {{"info", "--query", "ecc.mode.current ecc.mode.pending"}},  // a list is comma-separated
        {{"info", "--pick", "1", "--query", "remapped_rows.pending"}},
        // --format prometheus: one exposition, of metrics (not a pick); one format at a time.
        {{"--format", "prometheus", "info", "--loop", "1"}},
        {{"--format=prometheus", "info", "--loop", "1", "--count", "2"}},
        {{"--format", "prometheus", "info", "--pick", "1"}},
        {{"--format", "prometheus", "info", "--pick", "1", "--min-free", "50%"}},
        {{"--format", "prometheus", "info", "--query", "nonsense"}},
        {{"--format", "prometheus", "info", "--query", "used,used"}},
        {{"--json", "--format", "prometheus", "info"}},
        {{"--csv", "--format", "prometheus", "info"}},
        {{"--format", "prometheus", "--format", "json", "info"}},
        {{"--format", "Prometheus", "info"}},
        {{"--format", "prometheus", "-d", "", "info"}},
        // -d syntax, checked with the rest before the driver.
        {{"-d", "", "info", "--query", "used"}, {2}, true},
        {{"-d", "0,,1", "info"}},
        {{"-d", "GPU-zz", "info", "--loop", "1"}},
    };
}

}  // namespace bad_input
