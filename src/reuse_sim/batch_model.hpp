// reuse-sim max-batch: "what is the largest batch that fits?" from two
// (or more) recordings of one program at different batch sizes. The
// recordings are aligned request by request as a diff aligns lines: the
// fewest requests left unaligned, where two requests may pair when they are
// of one kind, stream and pool and the size does not shrink with the batch
// nor grow faster than its square (Myers' diff, linear when few differ;
// past 2,000 unaligned, a greedy diff that resynchronises within 64
// requests after each difference). Each aligned request's size is modelled
// as a function of
// the batch (constant, affine after PyTorch's 512-byte rounding, or, where
// no line holds on three recordings or more, a quadratic that grows faster
// than a line), the
// trace at any batch B is built from the model, and the largest B that
// replays without an OOM is searched for every setting asked. Pure logic: no
// CUDA, no I/O, no printing; the command reads the files and reports.
//
// The model never counts on less memory than the recordings allow: a size
// that differs between the two fitted recordings is modelled as every line
// base + slope * B whose rounding gives both recorded sizes, and the trace
// at B takes the largest size any of them gives (at the two fitted batches,
// exactly the recorded sizes). Sizes in bytes as the program asked (a
// PyTorch snapshot's: a granule of 1) are no rounding: the one line through
// both. A size equal in both is constant (weights, optimizer state); a
// third recording checks that too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reuse_sim/events.hpp"
#include "reuse_sim/tune_replays.hpp"

namespace gpumem::reuse_sim {

// One recording of the program, read whole, and the batch it ran at.
struct BatchRecording {
    std::uint64_t batch = 0;
    std::string name;            // for messages: the file
    std::vector<Event> events;   // as LoadedTrace::events() gives them
};

// How one aligned request's size follows the batch.
enum class SizeLaw : std::uint8_t {
    constant,    // the same size at every batch
    affine,      // base + slope * B, exact within PyTorch's 512-byte rounding
    quadratic,   // no line, but the quadratic through the three largest recordings, growing faster than a line, that the others bear out
    not_affine,  // three or more recordings disagree with any line (the model does not hold)
};

// A request the model could not follow: where, and what it saw.
struct ModelMismatch {
    std::string what;  // "request 1,204 (alloc on stream 0): 8 MiB at batch 8, 24 MiB at batch 16, 33 MiB at batch 24 (not affine)"
    std::uint64_t bytes_at_largest = 0;  // its size in the largest recording, 0 where absent
};

// What the alignment and the model found, for the report and the JSON.
struct BatchModelChecks {
    std::uint64_t requests = 0;   // allocations in the recording the trace is built from
    std::uint64_t aligned = 0;    // matched in every recording
    // quadratic: sizes no line follows but a convex quadratic does (eager
    // attention's L x L scores in a sequence length, an image's side
    // squared); it needs three recordings, and a fourth to be checked.
    std::uint64_t constant = 0, affine = 0, quadratic = 0, not_affine = 0;
    // Requests present in some recordings only (a library's workspace
    // appearing from some batch on, control flow that changes with the
    // batch): how the synthesized trace treats them is BatchModel's
    // `extras` rule below.
    std::uint64_t unaligned = 0;
    // Requests of a smaller recording with no partner in the largest one
    // (gone as the batch grew): counted, reported, never built into a trace.
    std::uint64_t vanished = 0;
    // The rounding the sizes were modelled in: 512 when every request of
    // every recording is a multiple of 512 (PyTorch's block sizes), else 1
    // (the bytes asked for, as a PyTorch snapshot records them).
    std::uint64_t granule = 512;
    std::vector<ModelMismatch> mismatches;  // the first few of not_affine and unaligned, largest first
    // Recordings beyond the two the model was fitted on: each one's batch and
    // whether the model rebuilt it exactly (every request within rounding).
    struct Held {
        std::uint64_t batch = 0;
        bool exact = false;
        std::uint64_t requests_off = 0;  // requests the model got wrong
    };
    std::vector<Held> checked;
    bool holds() const noexcept { return not_affine == 0 && unaligned == 0 && vanished == 0; }
};

// The model of one program's requests as functions of the batch.
class BatchModel {
public:
    // Fits the model on the two recordings with the largest batches and
    // checks it on the others. Throws UsageError for fewer than two
    // recordings, two at one batch, or a recording with no allocation.
    static BatchModel fit(std::vector<BatchRecording> recordings);

    const BatchModelChecks& checks() const noexcept;
    std::uint64_t smallest_recorded_batch() const noexcept;
    std::uint64_t largest_recorded_batch() const noexcept;

    // The events at batch B (B >= 1), in the order of the largest recording,
    // its frees, streams, pools and deferred frees kept (its segment events,
    // the recorded allocator's own, left out); each event's line is its
    // ordinal, and the sizes the largest the model allows (see above), at
    // least one granule. Requests of the largest recording missing from
    // some other one (extras) are kept when `with_extras` (the cautious
    // trace: the answer never counts on their absence): fitted like the
    // others when two recordings have them, else at their recorded size up
    // to the largest batch and growing in proportion to the batch beyond it.
    // An extra seen at one size in its two largest recordings (a library's
    // workspace) keeps that size at every batch; one whose size grew
    // follows its line. A not-affine request whose two largest recordings
    // agree is kept at that size too (a workspace chosen anew at small
    // batches). Left out otherwise (the hopeful trace). A not-affine request takes,
    // in the cautious trace, the largest size the lines through any two of
    // its recordings give; in the hopeful one, the fit of the two largest.
    // The two answers bound the truth when the model does not hold, as far
    // as a trace asking for more never fits in less: the caching allocator's
    // layout can break that by a batch or two (seen on a synthetic pair with
    // thousands of extras: cautious 363, hopeful 359).
    std::vector<Event> events_at(std::uint64_t batch, bool with_extras = true) const;

private:
    struct Impl;
    std::shared_ptr<const Impl> impl_;
};

// The search's answer for one setting (one lane of the tuner's grid).
struct MaxBatchAnswer {
    std::optional<std::uint64_t> largest;       // none: even batch 1 runs out of memory
    bool reached_limit = false;                 // every batch up to the search's limit fits
    std::uint64_t peak_reserved_at_largest = 0;  // replayed at `largest`
    std::uint64_t peak_reserved_at_next = 0;    // at largest + 1: what the next batch would need (its replay with no cap)
    std::uint64_t replays = 0;
    // Where the model does not hold (checks().holds() false): the hopeful
    // trace's answer; `largest` is always the cautious one's. Report the two
    // as a range, not `largest` alone as the answer.
    std::optional<std::uint64_t> largest_hopeful;
    // largest + 1 replays with no OOM under the cap, refused only because
    // its peak reserved lies within the headroom (MaxBatchOptions::headroom):
    // a real run may tell (--confirm).
    bool next_fits_without_headroom = false;
};

struct MaxBatchOptions {
    std::uint64_t limit = 1u << 20;  // the largest batch searched
    // Only multiples of this are searched (--multiple-of: a length in
    // multiples of 64, a page size): the answer is the largest multiple
    // that fits, and the next batch is the answer plus the step.
    std::uint64_t step = 1;
    // A batch fits when its trace replays with no OOM and its peak reserved
    // stays at or below the cap less this (the model's peak is not exact to
    // the byte: a modelled peak a few MB under the cap may be a real OOM).
    std::uint64_t headroom = 0;
    LaneReplayOptions replay;        // threads, costs, poll, progress
};

// A lane and what real runs under its setting and cap showed.
struct BatchLane {
    BatchLane(const TorchLane& lane_, std::uint64_t ran_, std::uint64_t ran_out_) : lane(lane_), ran(ran_), ran_out(ran_out_) {}
    TorchLane lane;
    // The largest batch a real run fitted (0: none): a fact, counted as
    // fitting whatever its modelled trace replays to (the model may miss
    // what the run did; the run stands).
    std::uint64_t ran = 0;
    // The smallest batch above `ran` that a real run ran out of memory at
    // (0: none): a fact too, and the lane's search stops below it (its limit).
    std::uint64_t ran_out = 0;
};

// For every lane (a setting under a capacity), the largest batch whose
// cautious trace replays with no OOM and within the headroom: exponential steps from the largest
// recorded batch (doubling while it fits, else bisecting down to 1), then
// bisection, all lanes' probes of one round replayed together on
// options.replay.threads threads, each distinct batch's trace built once.
// Honesty: `largest` is always a batch whose trace was replayed and fitted,
// and largest + 1 (when below the limit) one that was replayed and did not;
// assumes more batch never needs less memory between the two (bisection).
// Each lane reads a snapshot's ambiguous releases for itself
// (options.replay.base.release_readings is ignored: they belong to one trace).
std::vector<MaxBatchAnswer> search_max_batch(const BatchModel& model, const std::vector<BatchLane>& lanes, const MaxBatchOptions& options);
// The same for lanes no real run was made under.
std::vector<MaxBatchAnswer> search_max_batch(const BatchModel& model, const std::vector<TorchLane>& lanes, const MaxBatchOptions& options);

// One batch's modelled trace replayed under one lane (its cap): what a
// real run there may meet, for choosing which batches to run.
struct BatchReplay {
    std::uint64_t batch = 0;
    bool no_oom = false;              // no OOM under the cap
    std::uint64_t peak_reserved = 0;  // up to the first OOM, if any
    std::uint64_t retries = 0;        // the allocator freed its cache to fit a request
};
// The cautious trace (`hopeful`: the hopeful one) at each of `batches`,
// replayed under `lane`; in the order given. options.headroom is not
// applied: these are the model's replays alone.
std::vector<BatchReplay> replay_batches(const BatchModel& model, const TorchLane& lane, const std::vector<std::uint64_t>& batches, bool hopeful,
                                        const MaxBatchOptions& options);

}  // namespace gpumem::reuse_sim
