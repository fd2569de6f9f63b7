// Bad invocations of gpumem copy: see bad_input.hpp.
#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> copy_cases(const Scratch& s) {
    (void)s;
    return {
        {{"copy"}},
        {{"copy", "sideways"}, {2}, true},
        {{"copy", "h2d", "d2h"}},
        {{"copy", "h2d", "-s", "0"}, {2}, true},
        {{"copy", "h2d", "-s", "-1MiB"}},
        {{"copy", "h2d", "-s", "huge"}},
        {{"copy", "h2d", "-s", "99999999999999999999"}},
        {{"copy", "h2d", "-s", "1GiB", "--sizes", "4KiB:1MiB:x2"}},
        {{"copy", "h2d", "--sizes", "1MiB:4KiB:x2"}},
        {{"copy", "h2d", "--sizes", "4KiB:1MiB:x1"}},
        {{"copy", "h2d", "--sizes", "4KiB:1MiB:x0"}},
        {{"copy", "h2d", "--sizes", "4KiB:"}},
        {{"copy", "h2d", "--sizes", ":::"}},
        {{"copy", "h2d", "--sizes", "1B:1EiB:+1B"}},
        {{"copy", "h2d", "--engine", "warp"}, {2}, true},
        {{"copy", "h2d", "--host-memory", "floppy"}},
        {{"copy", "h2d", "--expect-min", "-1"}},
        {{"copy", "h2d", "--expect-min", "fast"}},
        {{"copy", "h2d", "-n", "0"}},
        {{"copy", "h2d", "--samples", "0"}},
        {{"copy", "h2d", "--streams", "0"}},
        {{"copy", "d2d", "--peer", "x"}},
        {{"copy", "h2d", "--peer", "1"}},  // --peer is for d2d and p2p
    };
}

}  // namespace bad_input
