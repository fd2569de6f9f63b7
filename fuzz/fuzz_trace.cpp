// The trace readers (gpumem CSV and RMM log CSV, and format detection) read
// files, so each input is written to one in-memory file (memfd) that they open
// by its /proc/self/fd path. Every event is consumed, then the trace is
// replayed through the naive strategy when the readers accept it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_common.hpp"
#include "reuse_sim/simulator.hpp"
#include "reuse_sim/trace_reader.hpp"

namespace rs = gpumem::reuse_sim;

namespace {

const std::string& input_path(const unsigned char* data, std::size_t size) {
    static const int fd = memfd_create("gpumem-fuzz-trace", 0);
    static const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
    return path;
}

void consume(const std::string& path, rs::TraceFormat format) {
    auto source = rs::open_trace(path, format);
    rs::Event e;
    std::uint64_t n = 0;
    while (source->next(e)) {
        if (e.kind == rs::EventKind::alloc && e.size == 0) std::abort();  // readers promise size >= 1
        (void)source->tag_name(e.tag);
        ++n;
    }
    (void)n;
    if (!source->rewind()) std::abort();  // a regular file rewinds
    rs::Lane lane("naive", std::make_unique<rs::SimulatedUpstream>(64ULL << 30, nullptr));
    lane.strategy = rs::make_strategy(rs::kStrategies.parse("naive"), {}, *lane.upstream);
    rs::Replay replay({&lane}, {});
    (void)replay.run(*source);
    replay.teardown();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    const std::string& path = input_path(data, size);
    for (auto format : {rs::TraceFormat::automatic, rs::TraceFormat::gpumem, rs::TraceFormat::rmm})
        fuzz_expect_only_gpumem_errors([&] { consume(path, format); });
    return 0;
}
