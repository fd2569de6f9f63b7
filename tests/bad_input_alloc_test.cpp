// Bad invocations of gpumem alloc-test: see bad_input.hpp.
#include <sys/stat.h>

#include "bad_input.hpp"

namespace bad_input {

namespace {

// A FIFO nobody reads, for --save-costs: opening it for writing would block.
std::string unread_fifo(const Scratch& s) {
    const std::string path = s.path("costs.fifo");
    ::mkfifo(path.c_str(), 0600);  // already there on a second call
    return path;
}

}  // namespace

std::vector<BadCase> alloc_test_cases(const Scratch& s) {
    const std::string costs = s.path("costs.json");
    return {
        {{"alloc-test"}},
        {{"alloc-test", "allocate-everything"}, {2}, true},
        {{"alloc-test", "hodl"}, {2}, true},
        {{"alloc-test", "hold", "1GiB", "--total", "2GiB"}, {2}, true},
        {{"alloc-test", "fill", "1GiB", "--total", "2GiB"}, {2}, true},
        {{"alloc-test", "hold", "1GiB", "--duration", "5x"}},
        {{"alloc-test", "latency", "--api", "malloc2"}, {2}, true},
        {{"alloc-test", "latency", "--api", ""}},
        {{"alloc-test", "latency", "--lock-timeout", "1mm"}},  // 1m is a TIME, as every duration option takes
        {{"alloc-test", "latency", "--lock-timeout", "2d"}},   // beyond a day
        {{"alloc-test", "churn", "--duration", "1m30"}},       // each part needs its unit
        {{"alloc-test", "churn", "--lock-timeout", "-0.5"}, {2}, true},
        {{"alloc-test", "max", "--lock-timeout", "99999"}},
        {{"alloc-test", "fill", "1GiB", "--lock-timeout", "x"}},
        {{"alloc-test", "hold", "1GiB", "--lock-timeout", "5"}},  // hold takes no lock: no such option
        {{"alloc-test", "latency", "--api", "device,,managed"}},
        {{"alloc-test", "latency", "--api", "all,"}},
        {{"alloc-test", "latency", "--sizes", "0:1MiB:x2"}},
        {{"alloc-test", "latency", "--sizes", "banana"}},
        {{"alloc-test", "latency", "--sizes", ""}},
        {{"alloc-test", "latency", "--iterations", "0"}},
        {{"alloc-test", "latency", "--iterations", "-5"}},
        {{"alloc-test", "latency", "--iterations", "18446744073709551616"}},
        {{"alloc-test", "latency", "--warmup", "nan"}},
        // --save-costs: refused by check() (the name, the devices) or, for the
        // file itself, first thing in execute, before the driver.
        {{"alloc-test", "latency", "--save-costs", ""}, {2}, true},
        {{"alloc-test", "latency", "--save-costs", s.dir + "/"}, {2}, true},
        {{"alloc-test", "latency", "--save-costs", costs, "-d", "all"}, {2}, true},
        {{"alloc-test", "latency", "--save-costs", costs, "-d", "0,1"}},
        {{"alloc-test", "latency", "--save-costs", unread_fifo(s)}, {2}, true},
        {{"alloc-test", "latency", "--save-costs", "/proc/x"}, {2}, true},
        {{"alloc-test", "latency", "--save-costs", "/nonexistent/dir/costs.json"}},
        {{"alloc-test", "latency", "--save-costs", s.dir}},  // a directory
        {{"alloc-test", "max", "--granularity", "0"}},
        {{"alloc-test", "max", "--granularity", "-2MiB"}},
        {{"alloc-test", "max", "--granularity", "18446744073709551616"}},
        {{"alloc-test", "max", "--chunk", "zero"}},
        {{"alloc-test", "max", "--granularity", "2MiB", "--chunk", "1MiB"}},
        {{"alloc-test", "fill", "0"}, {2}, true},
        {{"alloc-test", "fill", "-1GiB"}},
        {{"alloc-test", "fill", "20000%"}},
        // Percentages are of the free memory: above 100% is a usage error,
        // as is a fraction of a byte (one rule for every size).
        {{"alloc-test", "fill", "101%"}, {2}, true},
        {{"alloc-test", "fill", "3.5B"}, {2}, true},
        {{"alloc-test", "fill", "0.1KiB"}},
        {{"alloc-test", "fill", "1GiB", "--chunk", "1.5B"}},
        {{"alloc-test", "hold", "150%"}},
        {{"alloc-test", "hold", "2.25B"}},
        {{"alloc-test", "max", "--granularity", "3.5B"}},
        {{"alloc-test", "churn", "--max-live", "200%"}},
        {{"alloc-test", "latency", "--sizes", "1.5B,4KiB"}},
        {{"alloc-test", "fill", ""}},
        {{"alloc-test", "fill", "1GiB", "2GiB"}},
        {{"alloc-test", "fill", "--pattern", "plaid"}, {2}, true},
        {{"alloc-test", "fill", "--pattern", "zeros,,ones"}},
        {{"alloc-test", "fill", "--pattern", ""}, {2}, true},
        {{"alloc-test", "fill", "--passes", "0"}},
        {{"alloc-test", "fill", "--chunk", "0"}},
        {{"alloc-test", "fill", "--chunk", "13"}},
        {{"alloc-test", "fill", "--seed", "nan"}},
        {{"alloc-test", "fill", "--seed", "inf"}},
        {{"alloc-test", "fill", "--seed", "-1"}},
        {{"alloc-test", "fill", "--debug-corrupt-word", "x"}},
        {{"alloc-test", "fill", "--debug-corrupt-word", "5"}},  // needs --verify
        {{"alloc-test", "hold"}},
        {{"alloc-test", "hold", "0"}},
        {{"alloc-test", "hold", ""}},
        {{"alloc-test", "hold", "1GiB", "--duration", "-1s"}},
        {{"alloc-test", "hold", "1GiB", "--duration", "forever"}},
        {{"alloc-test", "hold", "1GiB", "--duration", ""}, {2}, true},  // held forever before
        {{"alloc-test", "hold", "1GiB", "--duration", "inf"}},
        {{"alloc-test", "hold", "1GiB", "--chunk", "12"}},
        {{"alloc-test", "churn", "--via", "carrier-pigeon"}, {2}, true},
        {{"alloc-test", "churn", "--via", ""}},
        {{"alloc-test", "churn", "--api", ""}},
        {{"alloc-test", "churn", "--ops", "0"}},
        {{"alloc-test", "churn", "--ops", "-1"}},
        {{"alloc-test", "churn", "--ops", "18446744073709551616"}},
        {{"alloc-test", "churn", "--seed", "18446744073709551616"}, {2}, true},
        {{"alloc-test", "churn", "--seed", "-1"}},
        {{"alloc-test", "churn", "--sizes", "1MiB:1KiB:x2"}},
        {{"alloc-test", "churn", "--duration", "0"}},
        {{"alloc-test", "churn", "--duration", ""}},  // ran the default 10000 ops before
        {{"alloc-test", "churn", "--max-live", "0"}},
        {{"alloc-test", "churn", "--slots", "0", "--via", "mixmemory"}},
        {{"alloc-test", "churn", "--slots", "18446744073709551616", "--via", "mixmemory"}},
        {{"alloc-test", "churn", "--slots", "8"}},     // needs --via mixmemory
        {{"alloc-test", "churn", "--growth", "x2"}},   // needs --via mixmemory
        {{"alloc-test", "churn", "--via", "mixmemory", "--growth", "x0.5"}},
        {{"alloc-test", "churn", "--via", "mixmemory", "--growth", ""}},
        {{"alloc-test", "churn", "--via", "mixmemory", "--growth", "nan"}},
        {{"alloc-test", "churn", "--via", "mixmemory", "--api", "host"}, {2}, true},
    };
}

}  // namespace bad_input
