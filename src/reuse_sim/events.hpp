// Allocation events, as read from a trace or produced by a workload
// generator, and the streaming source interface every input implements.
// Pure logic: no CUDA, no printing.
#pragma once

#include <cstdint>
#include <string>

namespace gpumem::reuse_sim {

enum class EventKind : std::uint8_t {
    alloc,  // a request for `size` bytes, live under `id` until its free
    free,   // the end of the allocation `id`
    sync,   // a device synchronization point (stream-ordered pools release memory here)
};

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
    // Events the source saw but does not replay (RMM "allocate failure" lines).
    virtual std::uint64_t skipped() const { return 0; }
    // The text of a tag index, for writing the events back out.
    virtual std::string tag_name(std::uint32_t tag) const { return tag == kNoTag ? std::string() : "t" + std::to_string(tag); }
};

}  // namespace gpumem::reuse_sim
