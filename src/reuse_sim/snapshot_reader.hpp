// PyTorch memory snapshots (the pickle of torch.cuda.memory._snapshot()) as
// an event source: one device's allocator history (snapshot["device_traces"])
// becomes trace events, and snapshot["allocator_settings"] the settings the
// recording ran with. Read with the restricted unpickler (pickle_reader.hpp):
// plain values only, nothing callable.
//
// The history's actions become events as follows:
//  - alloc: an alloc of the size the caller asked for (PyTorch records
//    orig_size), its address mapped to a small id reused after its free;
//  - free_completed: the free (the block is back in the cache then; a
//    free_requested of a block used on other streams completes later);
//    free_requested is counted only;
//  - segment_alloc, segment_free, segment_map, segment_unmap: the recorded
//    allocator's own actions, kept as such (not replayed, counted);
//  - oom: an oom event (a request the allocator refused, of the size it had
//    rounded it to);
//  - a run of segment_free/segment_unmap that is not the allocator's own
//    release inside a request (which ends in an oom, or leaves some cached
//    segment in place: release_available_cached_blocks, garbage collection)
//    is also an empty_cache event before it: PyTorch's release_cached_blocks
//    frees every cached unsplit segment at once. Its last-resort release
//    before a retried cudaMalloc looks the same in a snapshot; replaying it
//    as empty_cache reaches the same state without counting the retry.
//  - snapshot (a marker) is skipped.
// Pure logic: no CUDA, no printing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reuse_sim/events.hpp"

namespace gpumem::reuse_sim {

// One of the program's calls that change how PyTorch's allocator serves
// requests, as gpumem's recording hook saw it (the statistics file's
// "allocator_calls"), at its place in the history: `position` entries of the
// device's history came before it (alloc, free_requested, free_completed,
// segment and oom entries: what torch.cuda.memory_stats counts of them).
struct AllocatorCall {
    enum class Kind : std::uint8_t {
        settings,        // torch.cuda.memory._set_allocator_settings(settings)
        mem_pool_begin,  // torch.cuda.use_mem_pool(pool) entered: this thread's requests go to the pool
        mem_pool_end,    // ... and left
        capture_begin,   // a CUDA graph capture began on `stream`, into `pool`
        capture_end,     // ... and ended
        pool_release,    // a torch.cuda.MemPool deleted: PyTorch empties its cache and may free it later
    };
    Kind kind = Kind::settings;
    std::uint64_t position = 0;
    std::string settings;
    std::pair<std::int64_t, std::int64_t> pool{0, 0};  // the pool's MempoolId_t
    std::optional<std::uint64_t> stream;               // capture_begin: the capturing stream, as the history names it
};

// The calls of one process on the snapshot's device, in the order made.
struct RecordedCalls {
    bool recorded = false;                    // the hook recorded calls (none recorded: none made)
    std::optional<std::string> initial_conf;  // the settings the process started with (its PYTORCH_ALLOC_CONF)
    std::vector<AllocatorCall> calls;
};

// A source over the snapshot in `bytes` (the whole file). `device`: the
// entry of device_traces to read; none: the only device with events (an
// error when several have some). `calls`: what the recording hook saw the
// program do (null: nothing known; the private pools then come from the
// segments the snapshot still lists, and settings are the snapshot's last).
// Throws UsageError "NAME: offset N: why".
std::unique_ptr<EventSource> open_snapshot(const std::string& name, std::string bytes, std::optional<std::uint32_t> device,
                                           const RecordedCalls* calls = nullptr);

// The warning for a replay that read `read_as_own` releases of a snapshot as
// PyTorch's own inside a request (TorchCaching's
// empty_caches_read_as_own_release): each counted a retry, one too many if
// it was the program's torch.cuda.empty_cache(). Empty when none: a release
// read as the program's adds no retry, and the direction is only ever "too
// many". `input` names the snapshot.
std::string release_note(const std::string& input, std::uint64_t read_as_own);

}  // namespace gpumem::reuse_sim
