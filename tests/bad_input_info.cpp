// Bad invocations of gpumem info: see bad_input.hpp.
#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> info_cases(const Scratch& s) {
    (void)s;
    return {
        {{"info", "--query", "nonsense"}, {2}, true},
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
    };
}

}  // namespace bad_input
