// reuse-sim max-batch's search policy: which real runs of the program to
// make, in what order, and when the answer is settled. Pure: no CUDA, no
// I/O, no processes, no clock. The command (subcommands/reuse_sim/
// reuse_sim_max_batch.cpp) asks for the next step, makes what it asks for
// (runs of the program under the cap, or the model fitted on recordings),
// and tells the planner what came of it; the planner holds the facts (each
// run's batch, setting and outcome), searches every setting on the model
// (batch_model.hpp) with those facts, and decides.
//
// The policy, in order: the first recordings (--record-batches, halved while
// fewer than two run without an OOM); the refinement near the first answer;
// checks of the recorded setting's answer (a run at it, a bisection after
// an OOM, a run at the hopeful answer where the model does not hold); runs
// just below the answer where the model puts it near the cap (memory that
// is not monotone in the batch); the best other setting's answer checked
// under that setting; --confirm's runs at each answer and the next batch.
// A run budget (--max-runs) bounds every run but --confirm's.
//
// One run that fitted is no proof: the same program at the same batch may
// fit or not from run to run (blocks freed on another stream come back when
// its events complete; ranks and autotuning race). So an answer is a batch
// that ran every time it was run, at least `repeats` times (two, three
// where the recordings show what timing can change); a batch whose runs
// disagree "varies", one whose every run ran out of memory below the answer
// is memory not monotone in the batch. Where several runs can go at once
// (`parallel`), a check at the answer goes out with its repeats, the next
// batch and the batches just below it, as one step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reuse_sim/batch_model.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::reuse_sim {

// How the answer names the knob searched: "largest batch", "longest seq"
// (a name that reads as a length: seq, len, ctx, context, token).
std::string knob_superlative(const std::string& knob);
// Its values, in words: "batches", "seq values".
std::string knob_values(const std::string& knob);

// What a real run of the program did under the cap.
enum class RunOutcome : std::uint8_t {
    ran,            // completed without an OOM (on every rank)
    out_of_memory,  // ran out of memory (on any rank): the batch does not fit
    failed,         // failed otherwise (an error of the program's, nothing recorded)
};

// Why a run was made; its name is the report's and the document's "why".
enum class RunReason : std::uint8_t {
    given,         // --batch-trace: a recording made before, not by this search
    first,         // --record-batches (halved after an OOM)
    ladder,        // side by side with the first: doubling above them, while slots are free
    near_answer,   // the refinement, at 1/2 and 3/4 of the first answer
    at_answer,     // a check: a real run at the model's answer
    at_hopeful,    // where the answer ran and the model does not hold
    bisection,     // between the largest batch that ran and the smallest above it that did not
    below_answer,  // just below an answer whose modelled peak is near the cap
    repeat,        // again at a batch that ran (or ran out of memory below the answer): does it every time?
    above_answer,  // the batch after the answer, beside the check at it
    confirm,       // --confirm: at an answer, or at the batch after it
};
constexpr const char* run_reason_name(RunReason why) noexcept {
    switch (why) {
    case RunReason::given: return "given";
    case RunReason::first: return "first";
    case RunReason::ladder: return "ladder";
    case RunReason::near_answer: return "near the answer";
    case RunReason::at_answer: return "check at the answer";
    case RunReason::at_hopeful: return "check at the hopeful answer";
    case RunReason::bisection: return "bisection";
    case RunReason::below_answer: return "below the answer";
    case RunReason::repeat: return "repeat";
    case RunReason::above_answer: return "the next batch";
    case RunReason::confirm: return "confirm";
    }
    return "";
}

// One run of the program (or a recording given): a fact.
struct BatchRun {
    std::uint64_t batch = 0;
    // The allocator setting it ran under (PYTORCH_CUDA_ALLOC_CONF, another
    // setting of the grid); empty: the program's own, the recorded setting.
    // Only runs of the recorded setting are modelled; the others are facts
    // for theirs.
    std::string setting;
    RunReason why = RunReason::given;
    RunOutcome outcome = RunOutcome::ran;
    std::uint64_t peak_reserved = 0;  // its memory_stats()' peak reserved (the largest of its ranks); 0: not measured
    // The order the search ran it in (1 first; 0 for a recording given).
    unsigned order = 0;
    // Recorded by this search, gpumem running the program under the cap: a
    // run that completed is a fact that the batch fits (a recording given
    // may have run under another cap).
    bool recorded_here = false;
    bool ran_out_of_memory() const noexcept { return outcome == RunOutcome::out_of_memory; }
};

// The runs made here at one batch of one setting.
struct BatchTally {
    std::uint64_t batch = 0;
    unsigned runs = 0;    // that completed or ran out of memory
    unsigned passes = 0;  // completed without an OOM
    unsigned ooms = 0;
    bool varies() const noexcept { return passes > 0 && ooms > 0; }
    bool always_ran() const noexcept { return passes > 0 && ooms == 0; }
};

// What the runs of one setting say, beside its model's answer.
struct SettingFacts {
    // The largest batch every run made here completed at (a batch that ran
    // out of memory in any run is not one); 0: none.
    std::uint64_t ran = 0;
    std::uint64_t ran_out = 0;  // the smallest batch above `ran` that ran out of memory in any run; 0: none
    bool any_run = false;       // a run under this setting was made here
    bool answer_ran = false;    // the model's answer is `ran`: the answer is a batch that ran
    // Below the answer: batches that ran out of memory (memory not
    // monotone in the batch), ascending; the largest batch at or below
    // which no run ran out of memory (not every batch there was run); and
    // the largest batch below them all that ran (0: none).
    // oom_below holds the batches whose every run ran out of memory.
    std::vector<std::uint64_t> oom_below;
    std::uint64_t all_below_ran = 0;
    std::uint64_t ran_below_oom = 0;
    // Batches whose runs disagreed (some ran, some ran out of memory):
    // memory that varies from run to run, ascending.
    std::vector<std::uint64_t> varies;
    std::vector<BatchTally> tallies;  // every batch run here, ascending
    const BatchTally* tally(std::uint64_t batch) const noexcept;
};
// The facts of the runs of one setting (every run given is of it).
SettingFacts setting_facts(const std::vector<const BatchRun*>& runs, std::optional<std::uint64_t> model_answer);

// One setting of the grid and its answer.
struct MaxBatchSetting {
    GridPoint point;
    MaxBatchAnswer answer;
    // Several ranks: the rank whose model gives the smallest answer (every
    // rank must fit; `answer` is that rank's).
    std::optional<unsigned> tightest_rank;
    // The setting its runs are under: "" for the recorded one.
    std::string key() const { return point.recorded ? std::string() : alloc_conf(point.options); }
};

// What backs a setting's answer: a run at it, the model alone (no run tried
// it: --batch-trace, --no-refine, a setting not run), or nothing yet (runs
// were made, the budget ended before one ran there).
enum class AnswerStatus : std::uint8_t { ran, model_only, not_confirmed };
const char* answer_status_name(AnswerStatus status) noexcept;
// `checks_off`: the search made no checks (--no-refine).
AnswerStatus answer_status(const MaxBatchSetting& s, const SettingFacts& facts, bool checks_off) noexcept;

// What the search found so far, for the report: its answers and how it ended.
struct MaxBatchState {
    std::vector<MaxBatchSetting> settings;  // ranked: the largest batch first; the recorded setting marked
    // The first answer (the recorded setting's cautious one), where the
    // search recorded again near it.
    std::optional<std::uint64_t> first_answer;
    // The smallest batch the recorded setting ran out of memory at, above
    // the largest that ran (at the last search): every answer is below it.
    std::optional<std::uint64_t> oom_batch;
    std::optional<BatchModelChecks> checks;  // the tightest rank's model's, once fitted
    std::optional<BatchModel> model;         // that model (--plot draws its peaks)
    std::vector<unsigned> ranks;             // the ranks modelled (several: torchrun); empty for one process
    // The run budget ended the search before the answer was a batch that
    // ran (or before the runs below it were made).
    bool budget_spent = false;
    // The budget ended the runs below the answer before they were done:
    // memory below it is not known to be monotone.
    bool below_cut = false;
    bool checks_off = false;  // the search made no checks (--no-refine)
    // --confirm: the largest batch a run fitted (after stepping down from
    // an answer that ran out of memory); none where none did.
    std::optional<std::uint64_t> confirmed_batch;
    // The runs an answer needs, all without an OOM (the repeats), once
    // decided, and why a run's outcome may hang on timing here (each a
    // phrase: "2 ranks", "3 streams", "40 frees waited on another stream's
    // work"); empty: nothing seen.
    unsigned repeats = 0;
    std::vector<std::string> timing;
    // The budget ended the repeats before the answer had them all.
    bool repeats_cut = false;
    // Where a batch varied: the room the search left under the cap for it
    // (one more segment of the program's largest request); 0: none.
    std::uint64_t variance_margin = 0;
    // The run budget in force: --max-runs, or its default with the
    // ladder's runs added (they go beside the first, in no more wall time).
    unsigned max_runs = 0;
    // Values above every one that ran where the program failed otherwise
    // than by an OOM (the end of a position table, a batch larger than the
    // dataset, a library's allocation failure not counted as an OOM),
    // ascending: the search stays below the smallest.
    std::vector<std::uint64_t> failed_above;

    const MaxBatchSetting* recorded() const;
    const MaxBatchSetting* best() const { return settings.empty() ? nullptr : &settings.front(); }
    bool model_holds() const { return checks && checks->holds(); }
};

// What the command asks.
struct MaxBatchPlanOptions {
    // The first recordings' batches (--record-batches); empty: the
    // recordings are given (--batch-trace), and no run is made.
    std::vector<std::uint64_t> first_batches;
    bool refine = true;    // off with --no-refine: no refinement, no checks
    bool confirm = false;  // --confirm
    unsigned max_runs = 16;  // every run but --confirm's
    // --max-runs was given: the ladder's runs count against it (else the
    // default budget grows by them, and is the search's after the ladder).
    bool max_runs_given = false;
    std::string knob = "batch";  // the knob searched, for the words of errors and notes
    // The runs an answer needs, all without an OOM (--repeats); 0: two, or
    // three where the recordings show what timing can change.
    unsigned repeats = 0;
    // How many runs can go at once (--jobs): above 1, the first recordings
    // go out with a ladder above them (doubling, up to kLadderRuns more: the
    // largest that fits is then within twice the answer, which settles
    // without a refinement), and a check with its repeats, the next batch
    // and the batches just below it.
    unsigned parallel = 1;
    std::uint64_t capacity = 0;
    // The search's limit and headroom, and how its replays run (threads,
    // costs, poll); replay.base comes with each fit.
    MaxBatchOptions search;
};

// A run the planner asks for.
struct PlannedRun {
    std::uint64_t batch = 0;
    std::string setting;  // as BatchRun::setting
    RunReason why = RunReason::first;
    bool expect_oom = false;  // --confirm at the batch after the answer: the model says it runs out of memory
    // --confirm: the search ran this batch under this setting already: that
    // run answers (no new run; its outcome is given back all the same).
    bool reuse = false;
};

// One rank's model (one for a single process).
struct RankModel {
    std::optional<unsigned> rank;
    BatchModel model;
};

// The model the command fitted on a fit step's recordings.
struct ModelFit {
    std::vector<RankModel> ranks;
    std::vector<GridPoint> points;  // the settings to search, the recorded one marked
    StrategyOptions base;           // torch-caching's options but the setting (the recorded ones)
    // Why a run's outcome may hang on timing, from the recordings (see
    // MaxBatchState::timing): more repeats.
    std::vector<std::string> timing;
};

struct PlanStep {
    enum class Kind : std::uint8_t {
        runs,        // make `runs` (independent of one another: side by side if the host allows), then give each outcome back
        fit,         // fit the model on `fit_on` (the recorded setting's runs that completed, ascending batch), then give it back
        note,        // tell the user `text`, then ask again
        done,        // the search is over: `answer` (the recorded setting's) and `status`
        error,       // the search cannot go on: `text` says why (`usage`: an error in what was given)
        run_failed,  // a run failed otherwise than by an OOM at `failed_at` where nothing bounds it: the search cannot go on
    };
    Kind kind = Kind::done;
    std::vector<PlannedRun> runs;
    std::vector<BatchRun> fit_on;
    std::string text;
    bool usage = false;
    std::optional<std::uint64_t> answer;
    AnswerStatus status = AnswerStatus::model_only;
    std::uint64_t failed_at = 0;  // run_failed: the value whose run failed
};

class MaxBatchPlanner {
public:
    explicit MaxBatchPlanner(MaxBatchPlanOptions options);

    // A recording given (--batch-trace), before the first step: a fact of
    // the recorded setting (its outcome read from the file).
    void given(std::uint64_t batch, RunOutcome outcome);
    // The next step; after a `runs` step, once every run's outcome is back.
    PlanStep next();
    // What came of a run of the last `runs` step: the fact as kept.
    const BatchRun& ran(const PlannedRun& planned, RunOutcome outcome, std::uint64_t peak_reserved = 0);
    // The model fitted on the last `fit` step's recordings: every setting is
    // searched on it. Throws what the search throws (Ctrl-C through poll).
    void fitted(ModelFit fit);

    const MaxBatchState& state() const noexcept { return state_; }
    // How many runs can go at once from the next step on (the GPUs a run
    // takes are known once one ran; the free memory moves).
    void set_parallel(unsigned parallel) noexcept { options_.parallel = parallel == 0 ? 1 : parallel; }
    // The runs made (--confirm's not counted) against the budget.
    unsigned runs() const noexcept { return made_; }
    // The facts of one setting's runs ("" the recorded one).
    SettingFacts facts(const std::string& setting, std::optional<std::uint64_t> model_answer) const;

private:
    enum class Phase : std::uint8_t { given, first, refine, check, below, best, confirm, done };
    struct Step {
        std::uint64_t batch;
        RunReason why;
    };
    // What follows a `runs` step once its outcomes are back.
    enum class After : std::uint8_t {
        nothing,  // the phase asks for what it needs
        refit,    // a run the model takes: fit it again; any other: search again with the new facts
    };
    // --confirm's progress through one setting's answer.
    struct Confirming {
        MaxBatchSetting row;
        bool recorded = false;  // the recorded setting's row (it sets confirmed_batch)
        enum class Wait : std::uint8_t {
            start,   // nothing run yet
            first,   // no answer: batch 1, expected to run out of memory
            answer,  // at the answer, or a step below it
            next,    // at the batch after the answer
        } wait = Wait::start;
        std::uint64_t batch = 0;  // the batch of the run out
        int steps = 0;            // steps down from the answer
        std::optional<RunOutcome> outcome;  // of the run out, once back
    };

    std::optional<PlanStep> first_step();
    std::vector<PlannedRun> ladder_runs(std::size_t planned);
    std::optional<PlanStep> refine_step();
    std::optional<PlanStep> check_step(const std::string& setting, std::uint64_t floor);
    std::optional<PlanStep> repeat_step(const std::string& setting);
    std::vector<PlannedRun> beside_check(std::uint64_t answer, std::size_t planned);
    std::vector<PlannedRun> best_beside(std::size_t planned);
    unsigned runs_at(std::uint64_t batch, const std::string& setting) const;
    std::optional<PlanStep> below_step();
    std::optional<PlanStep> best_step();
    std::optional<PlanStep> confirm_step();
    std::optional<PlanStep> confirm_row_step(Confirming& c);
    void confirm_outcome(RunOutcome outcome);
    PlanStep fit_step() const;
    PlanStep done_step() const;
    void weigh_failures();

    std::optional<Step> next_step(const std::string& setting, std::uint64_t floor) const;
    bool near_cap(std::uint64_t batch) const;
    void search();
    void merge_ranks(const std::vector<std::vector<MaxBatchAnswer>>& per_rank);
    std::vector<const BatchRun*> runs_of(const std::string& setting) const;
    std::vector<const BatchRun*> usable() const;
    bool recorded_at(std::uint64_t batch, const std::string& setting) const;
    const MaxBatchSetting* row_of(const std::string& setting) const;
    bool can_run(std::size_t more = 0) const noexcept { return made_ + more < options_.max_runs; }
    bool can_repeat(std::size_t more);
    // --multiple-of: every value run is a multiple of the step.
    std::uint64_t step() const noexcept { return std::max<std::uint64_t>(1, options_.search.step); }
    // A value rounded down to a multiple of the step (the step at least).
    std::uint64_t down(std::uint64_t value) const noexcept { return std::max(step(), value / step() * step()); }
    // The multiple of the step halfway between two (below `high`; `low` where none lies between).
    std::uint64_t midpoint(std::uint64_t low, std::uint64_t high) const noexcept {
        return low + (high - low) / (2 * step()) * step();
    }
    PlannedRun plan_run(std::uint64_t batch, RunReason why, const std::string& setting = "") const;

    MaxBatchPlanOptions options_;
    MaxBatchState state_;
    Phase phase_;
    std::vector<BatchRun> runs_;  // every run and recording given, in the order made
    unsigned made_ = 0;
    unsigned repeats_on_top_ = 0;  // an answer's repeats the default budget grew by (can_repeat)
    bool needs_fit_ = false, needs_search_ = false, run_failed_ = false;
    // Runs that failed otherwise than by an OOM, not yet weighed (at the
    // next step, once all of a step's outcomes are back), and the value of
    // the one that stops the search (those that bound it instead are the
    // state's failed_above).
    bool failures_pending_ = false;
    std::uint64_t failed_at_ = 0;
    After after_runs_ = After::nothing;
    std::vector<RankModel> models_;
    std::vector<GridPoint> points_;
    // first: the batches of the current round.
    std::vector<std::uint64_t> first_batches_;
    // below: the next offset below the answer.
    std::size_t below_next_ = 0;
    // best: the rounds made, the setting checked, its floor, the smallest
    // batch a setting's run ran out of memory at.
    std::size_t best_round_ = 0;
    std::optional<std::string> best_setting_;
    std::uint64_t best_floor_ = 0, refuted_ = 0;
    // confirm: the rows still to confirm, the first being confirmed.
    std::vector<Confirming> confirming_;
    bool confirm_planned_ = false;
    BatchRun last_confirm_;
};

}  // namespace gpumem::reuse_sim
