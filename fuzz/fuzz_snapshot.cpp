// The PyTorch snapshot reader: the restricted unpickler, then the snapshot
// source (every device asked for, events consumed, a rewind and a second
// pass) and a replay through torch-caching and naive. Only gpumem's own
// errors may come out; anything else (a crash, a sanitizer report, an
// allocation the input's size does not bound) is a finding. Replaces the
// Python target that fuzzed tools/torch_snapshot_to_trace.py without
// coverage feedback.
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_common.hpp"
#include "reuse_sim/pickle_reader.hpp"
#include "reuse_sim/simulator.hpp"
#include "reuse_sim/snapshot_reader.hpp"

namespace rs = gpumem::reuse_sim;

namespace {

void consume(const std::string& data, std::optional<std::uint32_t> device) {
    auto source = rs::open_snapshot("fuzz.pickle", data, device);
    rs::Event e;
    std::uint64_t events = 0;
    while (source->next(e)) {
        if ((e.kind == rs::EventKind::alloc || e.kind == rs::EventKind::oom) && e.size == 0) std::abort();  // the reader promises >= 1
        (void)source->location(e.line);
        ++events;
    }
    (void)source->notes();
    if (!source->rewind()) std::abort();  // a snapshot rewinds in memory
    std::vector<std::unique_ptr<rs::Lane>> lanes;
    for (const char* name : {"torch-caching", "naive"}) {
        auto lane = std::make_unique<rs::Lane>(name, std::make_unique<rs::SimulatedUpstream>(1ULL << 30, nullptr));
        rs::StrategyOptions options;
        if (const rs::RecordedAllocatorSettings* s = source->allocator_settings()) {
            if (s->max_split_size) options.torch.max_split_size = *s->max_split_size;
            if (s->roundup_power2_divisions) options.torch.roundup_power2_divisions = *s->roundup_power2_divisions;
        }
        lane->strategy = rs::make_strategy(rs::kStrategies.parse(name), options, *lane->upstream);
        lanes.push_back(std::move(lane));
    }
    rs::Replay replay({lanes[0].get(), lanes[1].get()}, {});
    const rs::ReplaySummary summary = replay.run(*source);
    if (summary.events != events) std::abort();  // the second pass reads what the first did
    replay.teardown();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    const std::string input(reinterpret_cast<const char*>(data), size);
    for (std::optional<std::uint32_t> device : {std::optional<std::uint32_t>(), std::optional<std::uint32_t>(1)})
        fuzz_expect_only_gpumem_errors([&] { consume(input, device); });
    return 0;
}
