// Bad invocations of gpumem copy: see bad_input.hpp.
#include <sys/stat.h>

#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> copy_cases(const Scratch& s) {
    const std::string fifo = s.path("plot.fifo");
    mkfifo(fifo.c_str(), 0600);
    return {
        // --plot: a sweep's picture, its file checked before any driver call.
        {{"copy", "h2d", "--plot", s.path("p.svg")}, {2}, true},
        {{"copy", "h2d", "--sizes", "1MiB..4MiB", "--plot", ""}, {2}, true},
        {{"copy", "h2d", "--sizes", "1MiB..4MiB", "--plot", s.dir}, {2}, true},
        {{"copy", "h2d", "--sizes", "1MiB..4MiB", "--plot", s.dir + "/"}},
        {{"copy", "h2d", "--sizes", "1MiB..4MiB", "--plot", fifo}, {2}, true},
        {{"copy", "h2d", "--sizes", "1MiB..4MiB", "--plot", "/dev/null"}},
        {{"copy", "h2d", "--sizes", "1MiB..4MiB", "--plot", s.path("no/such/folder.svg")}},
        {{"copy", "h2d", "--sizes", "1MiB..4MiB", "--plot", "/proc/gpumem-plot.svg"}},
        {{"copy", "h2d", "--sizes", "1MiB..4MiB", "--plot", "/proc/self/exe"}},
        {{"copy"}},
        {{"copy", "sideways"}, {2}, true},
        {{"copy", "h2x"}, {2}, true},
        {{"copy", "h2d", "--host-memory", "pinnd"}, {2}, true},
        {{"copy", "h2d", "--expect-min", "50GB/h"}, {2}, true},
        {{"copy", "h2d", "--expect-min", "fast"}},
        {{"copy", "h2d", "--sample-time", "10x"}, {2}, true},
        {{"copy", "h2d", "--sample-time", "20s"}},
        {{"copy", "h2d", "d2h"}},
        {{"copy", "h2d", "--lock-timeout", "-1"}, {2}, true},
        {{"copy", "h2d", "-s", "0"}, {2}, true},
        {{"copy", "h2d", "-s", "-1MiB"}},
        {{"copy", "h2d", "-s", "3.5B"}, {2}, true},
        {{"copy", "h2d", "-s", "50%"}},  // a copy's size is bytes, never a percentage
        {{"copy", "h2d", "--sizes", "1KiB..1.5B"}},
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
        {{"copy", "h2d", "--peer", "1"}},  // --peer is for the peer directions
        // Usage errors that reached the driver before the Command contract (issue #13).
        {{"copy", "h2d", "--sizes", "4KiB...1GiB"}, {2}, true},
        {{"copy", "h2d", "--expect-min", "1e400"}, {2}, true},
        // --expect-min and --sample-time: finite, in range.
        {{"copy", "h2d", "--expect-min", "0"}},
        {{"copy", "h2d", "--expect-min", "nan"}},
        {{"copy", "h2d", "--expect-min", "inf"}},
        {{"copy", "h2d", "--expect-min", ""}},
        {{"copy", "h2d", "--expect-min", "1000001"}},
        {{"copy", "h2d", "--sample-time", "0"}},
        {{"copy", "h2d", "--sample-time", "nan"}},
        {{"copy", "h2d", "--sample-time", "11"}},
        {{"copy", "h2d", "--sample-time", "-0.01"}},
        // --peer: a -d style SPEC, for p2p and p2p-bidir only, not the device itself.
        {{"copy", "p2p", "--peer", ""}},
        {{"copy", "p2p", "-d", "0", "--peer", "0"}, {2}, true},
        {{"copy", "p2p-bidir", "-d", "1", "--peer", "1"}},
        {{"copy", "p2p-bidir", "--peer", "0,"}},
        {{"copy", "d2d", "--peer", "1"}},
        {{"copy", "bidir", "--peer", "all"}},
        // Sizes no GPU or host can hold (base/sizes.hpp's kLargestBufferBytes).
        {{"copy", "h2d", "-s", "257TiB"}, {2}, true},
        {{"copy", "h2d", "--sizes", "1GiB,512TiB"}},
        {{"copy", "h2d", "-s", "18446744073709551616"}},
        {{"copy", "h2d", "-s", ""}},
        {{"copy", "h2d", "--sizes", ""}},
        // Conflicting options.
        {{"copy", "d2d", "--host-memory", "pinned"}},
        {{"copy", "p2p-bidir", "--host-memory", "pageable"}},
        {{"copy", "h2h", "--engine", "sm", "--host-memory", "pageable-huge"}},
        {{"copy", "h2d", "--debug-corrupt-offset", "1"}},
        {{"copy", "h2d", "--size", "4KiB", "--sizes", "4KiB..8KiB"}},
        // Counts out of range.
        {{"copy", "h2d", "-n", "-1"}},
        {{"copy", "h2d", "-n", "4097"}},
        {{"copy", "h2d", "--warmup", "-1"}},
        {{"copy", "h2d", "--samples", "18446744073709551616"}},
        {{"copy", "p2p-bidir", "--engine", "dma"}},
    };
}

}  // namespace bad_input
