// Bad invocations of gpumem: global options and the command line as a whole: see bad_input.hpp.
#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> global_cases(const Scratch& s) {
    (void)s;
    return {
        {{}, {2}, false},
        {{"frobnicate"}, {2}, true},
        {{"--no-such-flag", "info"}},
        {{"info", "--no-such-flag"}, {2}, true},
        {{"--format", "xml", "info"}},
        {{"--units", "parsecs", "info"}},
        {{"--csv", "--json", "info"}},
        {{"--json", "--format", "csv", "info"}},
        {{"--csv", "--format", "table", "info"}},
        {{"--csv", "--format=value", "info"}},
        {{"-q", "-v", "info"}},
        {{"-d"}},
        {{"info", "-d"}},
        {{"-d", "", "info"}},
        {{"-d", "-1", "info"}},
        {{"-d", "zero", "info"}},
        {{"-d", "0,0", "info"}, {2}, true},
        {{"-d", "0,,1", "info"}},
        {{"-d", "GPU-", "info"}},
        {{"-d", "0000:zz:00.0", "info"}},
        {{"-d", "99999999999999999999", "info"}},
        {{"-d", "all,0", "info"}},
        {{"-d", "99", "info"}, kDeviceList},
        {{"-d", "GPU-deadbeef-dead-beef-dead-beefdeadbeef", "info"}, kDeviceList},
        {{"-d", "0000:ff:1f.7", "info"}, kDeviceList},
    };
}

}  // namespace bad_input
