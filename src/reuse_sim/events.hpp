// Allocation events, as read from a trace or produced by a workload
// generator, and the streaming source interface every input implements.
// Pure logic: no CUDA, no printing.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpumem::reuse_sim {

enum class EventKind : std::uint8_t {
    alloc,        // a request for `size` bytes, live under `id` until its free
    free,         // the end of the allocation `id`
    sync,         // a device synchronization point (stream-ordered pools release memory here)
    empty_cache,  // the program asked the allocator to release its cached blocks (torch.cuda.empty_cache())
    oom,          // a request for `size` bytes that the recorded allocator refused (the program went on)
    // The program changed the allocator's settings from here on
    // (torch.cuda.memory._set_allocator_settings): the text of its call is
    // the source's tag_name(tag), PYTORCH_ALLOC_CONF's syntax.
    settings,
    // The program gave a private memory pool up (the last graph captured
    // into it, or its torch.cuda.MemPool, deleted): `id` is the pool
    // (Event::pool). From then on every release of cached blocks frees its
    // unsplit blocks too; `size` 1: PyTorch also emptied its cache at once
    // (~MemPool's emptyCache of that pool).
    pool_release,
    // What the recorded allocator itself did (a PyTorch snapshot's segment
    // events): not replayed, counted as the recording's own figures. `id` is
    // the segment's address when known.
    segment_alloc,  // cudaMalloc of a segment
    segment_free,   // cudaFree of a segment
    segment_map,    // pages mapped into an expandable segment
    segment_unmap,  // pages unmapped from an expandable segment
};

// Whether the event is one of the recorded allocator's own actions.
constexpr bool is_segment_event(EventKind kind) noexcept { return kind >= EventKind::segment_alloc; }

// Requests above this many bytes (4 EiB) are refused as usage errors: no
// strategy could round them, or add a few of them up, within 64 bits.
inline constexpr std::uint64_t kMaxRequestBytes = std::uint64_t{1} << 62;

// Tag index for "no tag": grow-only and shape-persistent then keep one
// buffer per id.
inline constexpr std::uint32_t kNoTag = 0xffffffffu;

struct Event {
    EventKind kind = EventKind::alloc;
    std::uint64_t id = 0;
    std::uint64_t size = 0;    // alloc: bytes requested; free: 0 when the source does not say
    std::uint64_t stream = 0;  // the stream as the source names it (PyTorch orders blocks by it)
    std::uint32_t tag = kNoTag;
    std::uint64_t line = 0;  // source line, for messages; for generated events their ordinal
    // free: the block came back later than the program freed it (a PyTorch
    // snapshot's free_completed apart from its free_requested: the block was
    // used on other streams, record_stream). PyTorch returned it to its cache
    // at the start of a later request (process_events) or in a release's
    // synchronize_and_free_events, which a snapshot shows alike.
    bool deferred = false;
    // alloc, oom: the PyTorch private memory pool that served it (a CUDA
    // graph's during capture, a torch.cuda.MemPool's in use_mem_pool), as a
    // small index; 0: the default pools.
    std::uint32_t pool = 0;
    // alloc, oom: made while a capture or a use_mem_pool context was under way
    // (PyTorch's captures_underway), in a default pool: as a private pool's
    // request, it may not release cached blocks to retry.
    bool capturing = false;
};

// The CUDACachingAllocator settings a PyTorch snapshot records
// (snapshot["allocator_settings"]); each is empty when the snapshot lacks it.
struct RecordedAllocatorSettings {
    std::optional<std::string> alloc_conf;                      // PYTORCH_CUDA_ALLOC_CONF as last set
    std::optional<std::uint64_t> max_split_size;                // bytes; kUnlimitedSplit: no limit
    std::optional<std::array<std::uint64_t, 16>> roundup_power2_divisions;  // per interval from 1 MiB
    std::optional<double> garbage_collection_threshold;
    std::optional<bool> expandable_segments;
    static constexpr std::uint64_t kUnlimitedSplit = ~0ULL;
};

// What a PyTorch snapshot (with the statistics gpumem's record wrote beside
// it) says of the program's use of private pools and of settings changed
// while it ran, for the report's warnings; filled as the input is read.
struct AllocatorFacts {
    bool calls_recorded = false;     // the recording hook recorded the program's allocator calls
    std::uint32_t mem_pools = 0;     // torch.cuda.MemPool pools seen (ids (0, N))
    std::uint32_t graph_pools = 0;   // CUDA graphs' private pools seen (ids (N, 0))
    std::uint64_t unexplained_pool_releases = 0;  // releases of a pool the input does not name
    std::uint64_t ooms_placed_by_guess = 0;       // refused requests given the pool of the request before them
    // Each settings change: the ordinal (from 1) of its settings event, and its text.
    std::vector<std::pair<std::uint64_t, std::string>> settings_changes;
    std::optional<std::string> final_conf;  // the snapshot's PYTORCH_CUDA_ALLOC_CONF (as last set)
};

// A stream of events read one at a time, so that memory stays proportional
// to what is live, not to the length of the trace.
class EventSource {
public:
    virtual ~EventSource() = default;
    // Next event; false at the end. Malformed input throws UsageError naming
    // the place ("file:line: what").
    virtual bool next(Event& event) = 0;
    // "trace.csv:12" or "workload dynamic, event 12": for messages about an event.
    virtual std::string location(std::uint64_t line) const = 0;
    // One line for reports: "trace.csv (gpumem CSV)", "workload dynamic, 200 steps, seed 1".
    virtual std::string description() const = 0;
    // The input's format, for reports: a trace format's name ("gpumem",
    // "rmm"), or "generated" for a workload.
    virtual std::string format() const = 0;
    // Back to the first event, for a pre-pass or a second replay; false when
    // impossible (standard input or a FIFO not opened to be read again).
    virtual bool rewind() = 0;
    // Events the source saw but does not replay (RMM "allocate failure"
    // lines, frees of blocks a snapshot saw allocated before its recording began).
    virtual std::uint64_t skipped() const { return 0; }
    // What skipped() counts, for the report: "'allocate failure' lines".
    virtual std::string skipped_what() const { return "events"; }
    // Remarks on the input for the report's warnings, once it was read.
    virtual std::vector<std::string> notes() const { return {}; }
    // The allocator settings the input recorded (a PyTorch snapshot), or null;
    // where the program changed them as it ran, those it started with.
    virtual const RecordedAllocatorSettings* allocator_settings() const { return nullptr; }
    // Private pools and settings changes of a PyTorch snapshot, or null.
    virtual const AllocatorFacts* allocator_facts() const { return nullptr; }
    // The text of a tag index, for writing the events back out.
    virtual std::string tag_name(std::uint32_t tag) const { return tag == kNoTag ? std::string() : "t" + std::to_string(tag); }
};

}  // namespace gpumem::reuse_sim
