// Bad invocations of gpumem memset: see bad_input.hpp.
#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> memset_cases(const Scratch& s) {
    return {
        {{"memset", "-s", "0"}, {2}, true},
        {{"memset", "-s", "-1"}},
        {{"memset", "--lock-timeout", "-5"}, {2}, true},
        {{"memset", "--lock-timeout", "forever"}},
        {{"memset", "-s", "1.5.5GiB"}},
        {{"memset", "-s", "99999999999999999999"}},
        {{"memset", "-s", "18446744073709551616"}},
        {{"memset", "-s", "16EiB"}},
        {{"memset", "-s", "1GiBB"}},
        {{"memset", "-s", "10001%"}},
        {{"memset", "-s", "0%"}},
        {{"memset", "-s", "100.5%"}, {2}, true},
        {{"memset", "-s", "3.5B"}, {2}, true},
        {{"memset", "-s", "1GiB", "--offset", "0.5B"}},
        {{"memset", "-s", ""}},
        {{"memset", "--width", "7"}, {2}, true},
        {{"memset", "--width", "64"}},
        {{"memset", "--value", "0x1ff", "--width", "8"}},
        {{"memset", "--value", "banana"}},
        {{"memset", "--value", "-1"}},
        {{"memset", "--offset", "-4"}},
        {{"memset", "--target", "tape"}, {2}, true},
        {{"memset", "--host-memory", "floppy"}},
        {{"memset", "-n", "0"}},
        {{"memset", "-n", "-3"}},
        {{"memset", "--samples", "0"}},
        {{"memset", "--warmup", "x"}},
        {{"memset", "-s", "1MiB", "--offset", "2MiB"}},
        // --sizes, a sweep, and --plot, its picture.
        {{"memset", "-s", "1MiB", "--sizes", "1MiB..4MiB"}, {2}, true},
        {{"memset", "--sizes", "4MiB..1MiB"}},
        {{"memset", "--sizes", "0,1MiB"}},
        {{"memset", "--sizes", "1MiB..4MiB", "--offset", "2MiB"}},
        {{"memset", "--plot", s.path("p.svg")}, {2}, true},
        {{"memset", "--sizes", "1MiB..4MiB", "--plot", s.dir}, {2}, true},
        {{"memset", "--sizes", "1MiB..4MiB", "--plot", "/proc/gpumem-plot.svg"}},
    };
}

}  // namespace bad_input
