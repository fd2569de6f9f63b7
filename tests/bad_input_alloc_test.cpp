// Bad invocations of gpumem alloc-test: see bad_input.hpp.
#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> alloc_test_cases(const Scratch& s) {
    (void)s;
    return {
        {{"alloc-test"}},
        {{"alloc-test", "allocate-everything"}, {2}, true},
        {{"alloc-test", "latency", "--api", "malloc2"}, {2}, true},
        {{"alloc-test", "latency", "--api", ""}},
        {{"alloc-test", "latency", "--api", "device,,managed"}},
        {{"alloc-test", "latency", "--sizes", "0:1MiB:x2"}},
        {{"alloc-test", "latency", "--sizes", "banana"}},
        {{"alloc-test", "latency", "--iterations", "0"}},
        {{"alloc-test", "latency", "--iterations", "-5"}},
        {{"alloc-test", "latency", "--save-costs", "/proc/x"}, {2}, true},
        {{"alloc-test", "latency", "--save-costs", "/nonexistent/dir/costs.json"}},
        {{"alloc-test", "latency", "--save-costs", s.dir}},  // a directory
        {{"alloc-test", "max", "--granularity", "0"}},
        {{"alloc-test", "max", "--granularity", "-2MiB"}},
        {{"alloc-test", "max", "--chunk", "zero"}},
        {{"alloc-test", "fill", "0"}, {2}, true},
        {{"alloc-test", "fill", "-1GiB"}},
        {{"alloc-test", "fill", "20000%"}},
        {{"alloc-test", "fill", "1GiB", "2GiB"}},
        {{"alloc-test", "fill", "--pattern", "plaid"}, {2}, true},
        {{"alloc-test", "fill", "--pattern", "zeros,,ones"}},
        {{"alloc-test", "fill", "--passes", "0"}},
        {{"alloc-test", "fill", "--chunk", "0"}},
        {{"alloc-test", "fill", "--debug-corrupt-word", "x"}},
        {{"alloc-test", "hold"}},
        {{"alloc-test", "hold", "0"}},
        {{"alloc-test", "hold", "1GiB", "--duration", "-1s"}},
        {{"alloc-test", "hold", "1GiB", "--duration", "forever"}},
        {{"alloc-test", "churn", "--via", "carrier-pigeon"}, {2}, true},
        {{"alloc-test", "churn", "--ops", "0"}},
        {{"alloc-test", "churn", "--sizes", "1MiB:1KiB:x2"}},
        {{"alloc-test", "churn", "--duration", "0"}},
        {{"alloc-test", "churn", "--max-live", "0"}},
    };
}

}  // namespace bad_input
