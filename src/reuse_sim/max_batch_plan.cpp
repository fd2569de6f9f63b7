#include "reuse_sim/max_batch_plan.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <utility>

namespace gpumem::reuse_sim {
namespace {

// The batches 1, 2 and 4 below the answer: spread out, so that an OOM a
// few batches down is found for the same runs as the next ones.
constexpr std::uint64_t kBelowOffsets[] = {1, 2, 4};
constexpr std::uint64_t kNearCapDivisor = 100;  // 1 % of the cap
// --confirm's runs below an answer that ran out of memory for real.
constexpr int kConfirmStepsDown = 3;
// The runs an answer needs, all without an OOM: two for every program (one
// more costs no wall time beside the first), three where the recordings
// show what timing can change (ranks, streams, frees waiting on another
// stream's work): a DDP program fitted 2 of 3 times at one batch.
constexpr unsigned kRepeats = 2;
constexpr unsigned kRepeatsTimed = 3;
// The ladder's runs beside the first recordings at most: from 8, up to 512
// (a batch), from 256, up to 16384 (a length). Each a doubling: the largest
// that ran is within twice the answer, the smallest that did not bounds it.
constexpr unsigned kLadderRuns = 6;

// The segment PyTorch's caching allocator would take for the largest
// request of the model's trace at `batch`: below 1 MiB a small pool's 2 MiB,
// below 10 MiB a 20 MiB segment, else the request rounded up to 2 MiB.
std::uint64_t largest_segment(const BatchModel& model, std::uint64_t batch) {
    constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
    std::uint64_t largest = 0;
    for (const Event& e : model.events_at(batch))
        if (e.kind == EventKind::alloc) largest = std::max(largest, e.size);
    if (largest < MiB) return 2 * MiB;
    if (largest < 10 * MiB) return 20 * MiB;
    return (largest + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
}

PlanStep runs_step(std::vector<PlannedRun> runs) {
    PlanStep step;
    step.kind = PlanStep::Kind::runs;
    step.runs = std::move(runs);
    return step;
}

PlanStep error_step(std::string text, bool usage = false) {
    PlanStep step;
    step.kind = PlanStep::Kind::error;
    step.text = std::move(text);
    step.usage = usage;
    return step;
}

std::string join_numbers(const std::vector<std::uint64_t>& numbers) {
    std::string out;
    for (const std::uint64_t n : numbers) out += (out.empty() ? "" : ", ") + std::to_string(n);
    return out;
}

// Ranked: the largest batch first (none last), then the recorded setting
// (nothing to change), then the lower peak at that batch.
void rank_settings(std::vector<MaxBatchSetting>& settings) {
    std::stable_sort(settings.begin(), settings.end(), [](const MaxBatchSetting& a, const MaxBatchSetting& b) {
        const std::uint64_t la = a.answer.largest.value_or(0), lb = b.answer.largest.value_or(0);
        if (la != lb) return la > lb;
        if (a.point.recorded != b.point.recorded) return a.point.recorded;
        return a.answer.peak_reserved_at_largest < b.answer.peak_reserved_at_largest;
    });
}

}  // namespace

// ------------------------------------------------------------------ facts

SettingFacts setting_facts(const std::vector<const BatchRun*>& runs, std::optional<std::uint64_t> model_answer) {
    SettingFacts f;
    // A given recording that completed may have run under another cap: no
    // fact that it fits; one the allocator refused requests in is an OOM.
    for (const BatchRun* run : runs) {
        if (!run->recorded_here && !run->ran_out_of_memory()) continue;
        f.any_run = f.any_run || run->recorded_here;
        auto at = std::lower_bound(f.tallies.begin(), f.tallies.end(), run->batch,
                                   [](const BatchTally& t, std::uint64_t batch) { return t.batch < batch; });
        if (run->outcome == RunOutcome::failed) continue;
        if (at == f.tallies.end() || at->batch != run->batch) at = f.tallies.insert(at, BatchTally{run->batch, 0, 0, 0});
        ++at->runs;
        if (run->ran_out_of_memory()) ++at->ooms;
        else ++at->passes;
    }
    for (const BatchTally& t : f.tallies) {
        if (t.always_ran()) f.ran = t.batch;
        if (t.varies()) f.varies.push_back(t.batch);
    }
    for (const BatchTally& t : f.tallies)
        if (t.ooms > 0 && t.batch > f.ran) {
            f.ran_out = t.batch;
            break;
        }
    // Below `ran`: the batches that ran out of memory every time (memory
    // not monotone), and the largest batch at or below which none did.
    std::uint64_t first_bad = 0;
    for (const BatchTally& t : f.tallies) {
        if (t.batch >= f.ran || t.ooms == 0) continue;
        if (t.passes == 0) f.oom_below.push_back(t.batch);
        if (first_bad == 0) first_bad = t.batch;
    }
    f.answer_ran = f.ran != 0 && model_answer && *model_answer == f.ran;
    f.all_below_ran = first_bad == 0 ? f.ran : first_bad - 1;
    if (!f.oom_below.empty())
        for (const BatchTally& t : f.tallies)
            if (t.always_ran() && t.batch < f.oom_below.front()) f.ran_below_oom = std::max(f.ran_below_oom, t.batch);
    return f;
}

const BatchTally* SettingFacts::tally(std::uint64_t batch) const noexcept {
    for (const BatchTally& t : tallies)
        if (t.batch == batch) return &t;
    return nullptr;
}

const char* answer_status_name(AnswerStatus status) noexcept {
    switch (status) {
    case AnswerStatus::ran: return "ran";
    case AnswerStatus::model_only: return "model only";
    case AnswerStatus::not_confirmed: return "not confirmed";
    }
    return "";
}

AnswerStatus answer_status(const MaxBatchSetting& s, const SettingFacts& f, bool checks_off) noexcept {
    if (f.answer_ran) return AnswerStatus::ran;
    // The recorded setting of the end-to-end form always has runs (its
    // recordings): with its checks off (--no-refine), its answer is the
    // model's; else the checks were cut short.
    if (s.point.recorded && (checks_off || !f.any_run)) return AnswerStatus::model_only;
    if (!s.point.recorded && !f.any_run) return AnswerStatus::model_only;
    return AnswerStatus::not_confirmed;
}

const MaxBatchSetting* MaxBatchState::recorded() const {
    for (const MaxBatchSetting& s : settings)
        if (s.point.recorded) return &s;
    return nullptr;
}

std::string knob_superlative(const std::string& knob) {
    std::string lower;
    for (const char c : knob) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* length : {"seq", "len", "ctx", "context", "token"})
        if (lower.find(length) != std::string::npos) return "longest " + knob;
    return "largest " + knob;
}

std::string knob_values(const std::string& knob) { return knob == "batch" ? std::string("batches") : knob + " values"; }

// ---------------------------------------------------------------- planner

MaxBatchPlanner::MaxBatchPlanner(MaxBatchPlanOptions options)
    : options_(std::move(options)), phase_(options_.first_batches.empty() ? Phase::given : Phase::first), first_batches_(options_.first_batches) {
    state_.max_runs = options_.max_runs;
}

void MaxBatchPlanner::given(std::uint64_t batch, RunOutcome outcome) {
    BatchRun run;
    run.batch = batch;
    run.why = RunReason::given;
    run.outcome = outcome;
    runs_.push_back(std::move(run));
}

PlanStep MaxBatchPlanner::next() {
    if (failures_pending_) weigh_failures();
    if (run_failed_) {
        PlanStep step;
        step.kind = PlanStep::Kind::run_failed;
        step.failed_at = failed_at_;
        return step;
    }
    if (needs_fit_) return fit_step();
    if (needs_search_) search();
    for (;;) {
        std::optional<PlanStep> step;
        switch (phase_) {
        case Phase::given:
            needs_fit_ = true;
            phase_ = Phase::done;
            break;
        case Phase::first: step = first_step(); break;
        case Phase::refine: step = refine_step(); break;
        case Phase::check:
            step = check_step("", 0);
            if (!step) phase_ = Phase::below;
            break;
        case Phase::below: step = below_step(); break;
        case Phase::best: step = best_step(); break;
        case Phase::confirm: step = confirm_step(); break;
        case Phase::done: return done_step();
        }
        if (step) return *step;
        if (needs_fit_) return fit_step();
    }
}

const BatchRun& MaxBatchPlanner::ran(const PlannedRun& planned, RunOutcome outcome, std::uint64_t peak_reserved) {
    BatchRun run;
    run.batch = planned.batch;
    run.setting = planned.setting;
    run.why = planned.why;
    run.outcome = outcome;
    run.peak_reserved = peak_reserved;
    run.recorded_here = true;
    if (planned.why == RunReason::confirm) {
        confirm_outcome(outcome);
        last_confirm_ = std::move(run);
        return last_confirm_;
    }
    run.order = ++made_;
    runs_.push_back(std::move(run));
    const BatchRun& kept = runs_.back();
    if (outcome == RunOutcome::failed) {
        failures_pending_ = true;
    } else if (after_runs_ == After::refit) {
        // A run the model takes changes the model; any other, the facts the
        // settings are searched with.
        // A batch that ran before is in the model already (a repeat).
        const bool again = std::any_of(runs_.begin(), runs_.end() - 1, [&](const BatchRun& r) {
            return r.setting.empty() && r.batch == kept.batch && r.outcome == RunOutcome::ran;
        });
        if (kept.setting.empty() && outcome == RunOutcome::ran && !again) needs_fit_ = true;
        else needs_search_ = true;
    }
    return kept;
}

// A run that failed otherwise than by an OOM, above every value of its
// setting that ran, bounds the search like an OOM (the program cannot run
// there, whatever the reason); one of the first recordings, or one at or
// below a value that ran, stops it: the program fails for a reason of its
// own, and the model needs runs that complete.
void MaxBatchPlanner::weigh_failures() {
    failures_pending_ = false;
    for (const BatchRun& failed : runs_) {
        if (failed.outcome != RunOutcome::failed || !failed.recorded_here) continue;
        bool ran_below = false, ran_above = false;
        for (const BatchRun& run : runs_) {
            if (run.setting != failed.setting || run.outcome != RunOutcome::ran) continue;
            (run.batch < failed.batch ? ran_below : ran_above) = true;
        }
        if (failed.why == RunReason::first || !ran_below || ran_above) {
            run_failed_ = true;
            failed_at_ = failed.batch;
            return;
        }
        auto& above = state_.failed_above;
        if (std::find(above.begin(), above.end(), failed.batch) != above.end()) continue;
        above.insert(std::lower_bound(above.begin(), above.end(), failed.batch), failed.batch);
        const std::uint64_t below = (failed.batch - 1) / step() * step();
        if (below < options_.search.limit) {
            options_.search.limit = std::max(step(), below);
            needs_search_ = needs_search_ || !models_.empty();
        }
    }
}

void MaxBatchPlanner::fitted(ModelFit fit) {
    models_ = std::move(fit.ranks);
    points_ = std::move(fit.points);
    options_.search.replay.base = std::move(fit.base);
    state_.timing = std::move(fit.timing);
    state_.repeats = options_.repeats != 0 ? options_.repeats : state_.timing.empty() ? kRepeats : kRepeatsTimed;
    state_.ranks.clear();
    for (const RankModel& m : models_)
        if (m.rank) state_.ranks.push_back(*m.rank);
    needs_fit_ = false;
    search();
}

SettingFacts MaxBatchPlanner::facts(const std::string& setting, std::optional<std::uint64_t> model_answer) const {
    return setting_facts(runs_of(setting), model_answer);
}

// ------------------------------------------------------------ the phases

// The first recordings, at --record-batches: where fewer than two run
// without an OOM, every batch halved (down to 1,2) and recorded again. Side
// by side, the first round also climbs a ladder above them (ladder_runs).
std::optional<PlanStep> MaxBatchPlanner::first_step() {
    after_runs_ = After::nothing;
    std::vector<PlannedRun> runs;
    for (const std::uint64_t batch : first_batches_) {
        if (recorded_at(batch, "")) continue;
        if (!can_run(runs.size())) {
            if (!runs.empty()) break;
            return error_step("max-batch: the run budget (--max-runs " + std::to_string(options_.max_runs) +
                              ") was spent before two recordings ran without an OOM");
        }
        runs.push_back(plan_run(batch, RunReason::first));
    }
    if (!runs.empty() && made_ == 0) {
        std::vector<PlannedRun> ladder = ladder_runs(runs.size());
        runs.insert(runs.end(), ladder.begin(), ladder.end());
    }
    if (!runs.empty()) return runs_step(std::move(runs));
    if (usable().size() >= 2) {
        needs_fit_ = true;
        phase_ = Phase::refine;
        return std::nullopt;
    }
    if (first_batches_.back() <= 2 * step()) {
        std::vector<const BatchRun*> by_batch;
        for (const BatchRun& run : runs_) by_batch.push_back(&run);
        std::stable_sort(by_batch.begin(), by_batch.end(), [](const BatchRun* a, const BatchRun* b) { return a->batch < b->batch; });
        std::vector<std::uint64_t> oom;
        for (const BatchRun* run : by_batch)
            if (run->ran_out_of_memory()) oom.push_back(run->batch);
        return error_step("max-batch: the program ran out of memory under the cap at " + options_.knob + " " + join_numbers(oom) +
                          " (halved down to 1,2): the model needs runs at two " + knob_values(options_.knob) + " that fit");
    }
    std::vector<std::uint64_t> halved;
    for (const std::uint64_t batch : first_batches_)
        if (halved.empty() || halved.back() != down(batch / 2)) halved.push_back(down(batch / 2));
    if (halved.size() < 2) halved = {step(), 2 * step()};
    first_batches_ = std::move(halved);
    PlanStep note;
    note.kind = PlanStep::Kind::note;
    note.text = "max-batch: fewer than two recordings ran without an OOM: recording at half the " + knob_values(options_.knob);
    return note;
}

// The ladder: where slots are free beside the first recordings (and the
// search checks its answer), runs doubling above the largest of them, up to
// kLadderRuns and the search's limit. The first answer is then fitted on
// the two largest that ran, within twice the answer (the smallest that did
// not bounds it), and needs no refinement: the answer's check can be the
// next step, and the whole search two steps of runs. Without --max-runs the
// budget grows by the ladder's runs: they cost no wall time.
std::vector<PlannedRun> MaxBatchPlanner::ladder_runs(std::size_t planned) {
    std::vector<PlannedRun> runs;
    if (!options_.refine || first_batches_ != options_.first_batches || first_batches_.empty()) return runs;
    std::uint64_t batch = *std::max_element(first_batches_.begin(), first_batches_.end());
    while (runs.size() < kLadderRuns && planned + runs.size() < options_.parallel && batch <= options_.search.limit / 2) {
        if (options_.max_runs_given && !can_run(planned + runs.size())) break;
        batch = down(2 * batch);
        runs.push_back(plan_run(batch, RunReason::ladder));
    }
    if (!options_.max_runs_given) options_.max_runs += static_cast<unsigned>(runs.size());
    state_.max_runs = options_.max_runs;
    return runs;
}

// Refinement: the first recordings are small batches, where libraries
// pick other kernels and workspaces, and extrapolating 50-200x magnifies
// every error: record again near the answer, at 1/2 and 3/4 of it, above
// every batch recorded; none where the first answer is within twice the
// largest recorded batch (the extrapolation is short). --no-refine: neither
// this nor the checks after it.
std::optional<PlanStep> MaxBatchPlanner::refine_step() {
    if (!options_.refine) {
        state_.checks_off = true;
        phase_ = Phase::confirm;
        return std::nullopt;
    }
    phase_ = Phase::check;
    const MaxBatchSetting* recorded = state_.recorded();
    if (recorded == nullptr || !recorded->answer.largest || recorded->answer.reached_limit) return std::nullopt;
    const std::uint64_t first = *recorded->answer.largest;
    // The largest that ran: an OOM (a ladder's) tells nothing of the fit.
    std::uint64_t largest = 0;
    for (const BatchRun& run : runs_)
        if (!run.ran_out_of_memory()) largest = std::max(largest, run.batch);
    if (first <= 2 * largest) return std::nullopt;
    std::vector<std::uint64_t> batches;
    for (const std::uint64_t batch : {down((first + 1) / 2), down((3 * first + 2) / 4)})
        if (batch > largest && (batches.empty() || batches.back() != batch)) batches.push_back(batch);
    if (batches.empty()) return std::nullopt;
    state_.first_answer = first;
    std::vector<PlannedRun> runs;
    for (const std::uint64_t batch : batches) {
        if (!can_run(runs.size())) {
            state_.budget_spent = true;
            break;
        }
        runs.push_back(plan_run(batch, RunReason::near_answer));
    }
    // Side by side, the first answer's check goes out beside the
    // refinement (its repeats, the next batch, those just below): where the
    // refitted model agrees, the answer is settled in this one step.
    if (options_.parallel >= runs.size() + 2) {
        const std::size_t refine = runs.size();
        for (unsigned k = 0; k < state_.repeats && runs.size() < options_.parallel && can_run(runs.size()); ++k)
            runs.push_back(plan_run(first, k == 0 ? RunReason::at_answer : RunReason::repeat));
        if (runs.size() > refine) {
            std::vector<PlannedRun> beside = beside_check(first, runs.size());
            runs.insert(runs.end(), beside.begin(), beside.end());
        }
    }
    needs_fit_ = true;
    after_runs_ = After::nothing;
    if (runs.empty()) return std::nullopt;
    return runs_step(std::move(runs));
}

// Real runs for a setting until its answer is a batch that ran (and the
// next batch ran out of memory, where the search came from above), or the
// budget is spent; the model refitted after each. None: settled.
std::optional<PlanStep> MaxBatchPlanner::check_step(const std::string& setting, std::uint64_t floor) {
    std::optional<PlanStep> repeats = repeat_step(setting);
    // One at a time, the answer's repeats first: a failure changes what is next.
    if (repeats && options_.parallel <= 1) return repeats;
    std::vector<PlannedRun> runs;
    if (repeats) runs = std::move(repeats->runs);
    const std::optional<Step> step = next_step(setting, floor);
    if (!step || !can_run(runs.size())) {
        if (step) state_.budget_spent = true;
        if (runs.empty()) return std::nullopt;
        return runs_step(std::move(runs));
    }
    after_runs_ = After::refit;
    runs.push_back(plan_run(step->batch, step->why, setting));
    // Side by side: a check's repeats go out with it (and, for the recorded
    // setting, the next batch and those just below): a run each, no more
    // wall time than the check alone.
    if (options_.parallel > 1) {
        for (unsigned k = runs_at(step->batch, setting) + 1; k < state_.repeats && runs.size() < options_.parallel && can_run(runs.size()); ++k)
            runs.push_back(plan_run(step->batch, RunReason::repeat, setting));
        if (setting.empty() && step->why == RunReason::at_answer) {
            std::vector<PlannedRun> beside = beside_check(step->batch, runs.size());
            runs.insert(runs.end(), beside.begin(), beside.end());
        }
        // The best other setting's check, where slots are left: its answer
        // is searched on the same model, and its runs hang on nothing here.
        if (setting.empty()) {
            std::vector<PlannedRun> best = best_beside(runs.size());
            runs.insert(runs.end(), best.begin(), best.end());
        }
    }
    return runs_step(std::move(runs));
}

// The best setting's next run and its repeats, while the step has slots
// left (none where the recorded setting is the best).
std::vector<PlannedRun> MaxBatchPlanner::best_beside(std::size_t planned) {
    std::vector<PlannedRun> runs;
    const MaxBatchSetting* recorded = state_.recorded();
    const MaxBatchSetting* best = state_.best();
    if (recorded == nullptr || best == nullptr || best == recorded || best->answer.largest.value_or(0) <= recorded->answer.largest.value_or(0))
        return runs;
    const std::optional<Step> step = next_step(best->key(), facts("", std::nullopt).ran);
    if (!step) return runs;
    for (unsigned k = runs_at(step->batch, best->key()); k < state_.repeats; ++k) {
        if (planned + runs.size() >= options_.parallel || !can_run(planned + runs.size())) break;
        runs.push_back(plan_run(step->batch, runs.empty() ? step->why : RunReason::repeat, best->key()));
    }
    return runs;
}

// Room for one more of an answer's repeats. Without --max-runs, the repeats
// come on top of a spent budget, as the ladder's runs do (at most twice
// the repeats in a search): a DDP MLP's answer under one NCCL rank rested
// on one run, its repeat cut by the default budget, and ran out of memory
// 2 times in 8 when run again (bench/results/2026-12-02-fast-exit.md).
bool MaxBatchPlanner::can_repeat(std::size_t more) {
    if (can_run(more)) return true;
    if (options_.max_runs_given || repeats_on_top_ >= 2 * state_.repeats) return false;
    ++repeats_on_top_;
    ++options_.max_runs;
    state_.max_runs = options_.max_runs;
    return can_run(more);
}

// An answer that ran, run again until it ran `repeats` times (side by side:
// every repeat at once). None: it has them all, or it is no batch that ran.
std::optional<PlanStep> MaxBatchPlanner::repeat_step(const std::string& setting) {
    const MaxBatchSetting* s = row_of(setting);
    if (s == nullptr || !s->answer.largest) return std::nullopt;
    const std::uint64_t answer = *s->answer.largest;
    const SettingFacts f = facts(setting, answer);
    if (!f.answer_ran) return std::nullopt;
    const unsigned made = runs_at(answer, setting);
    if (made >= state_.repeats) return std::nullopt;
    std::vector<PlannedRun> runs;
    for (unsigned k = made; k < state_.repeats; ++k) {
        if (!can_repeat(runs.size())) {
            state_.repeats_cut = true;
            break;
        }
        runs.push_back(plan_run(answer, RunReason::repeat, setting));
        if (options_.parallel <= 1) break;  // one at a time: a failure ends them
    }
    if (runs.empty()) return std::nullopt;
    after_runs_ = After::refit;
    return runs_step(std::move(runs));
}

// Beside a check at the recorded setting's answer, when runs go side by
// side: the next batch (settles the answer when it runs out of memory) and
// the batches just below it, each where the model puts it near the cap or
// where a slot would be idle otherwise: the model refitted on the check
// may put it near (a Lightning ViT's 95, below 97, was near only then), and
// a step of its own for it costs a whole run's wall time.
std::vector<PlannedRun> MaxBatchPlanner::beside_check(std::uint64_t answer, std::size_t planned) {
    std::vector<PlannedRun> runs;
    const MaxBatchSetting* recorded = state_.recorded();
    const auto room = [&] { return planned + runs.size() < options_.parallel && can_run(planned + runs.size()); };
    if (recorded != nullptr && !recorded->answer.reached_limit && answer + step() <= options_.search.limit && !recorded_at(answer + step(), "") &&
        room())
        runs.push_back(plan_run(answer + step(), RunReason::above_answer));
    for (const std::uint64_t below : kBelowOffsets) {
        const std::uint64_t offset = below * step();
        if (offset >= answer || !room()) break;
        const std::uint64_t batch = answer - offset;
        if (recorded_at(batch, "")) break;
        runs.push_back(plan_run(batch, RunReason::below_answer));
    }
    return runs;
}

unsigned MaxBatchPlanner::runs_at(std::uint64_t batch, const std::string& setting) const {
    const SettingFacts f = facts(setting, std::nullopt);
    const BatchTally* t = f.tally(batch);
    return t == nullptr ? 0 : t->runs;
}

// Memory that is not monotone in the batch: a batch below one that ran may
// run out (a cached block split otherwise, a kernel or workspace chosen by
// the batch: a Llama prefill ran at 150, 153 and 154 but not at 148 or
// 152). Run the batches 1, 2 and 4 below the answer, each only where the
// model says it is near the cap (near_cap), or once one below the answer
// ran out of memory. A batch well inside the cap ends them: those below it
// are further inside. The runs whose making no outcome can change go out
// together; the model is not refitted between them.
std::optional<PlanStep> MaxBatchPlanner::below_step() {
    after_runs_ = After::nothing;
    const MaxBatchSetting* recorded = state_.recorded();
    const std::uint64_t answer = recorded != nullptr ? recorded->answer.largest.value_or(0) : 0;
    const bool recorded_point = std::any_of(points_.begin(), points_.end(), [](const GridPoint& p) { return p.recorded; });
    if (answer <= 1 || !facts("", answer).answer_ran || !recorded_point) {
        phase_ = Phase::best;
        return std::nullopt;
    }
    std::vector<PlannedRun> runs;
    for (; below_next_ < std::size(kBelowOffsets); ++below_next_) {
        const std::uint64_t offset = kBelowOffsets[below_next_] * step();
        if (offset >= answer) break;
        const std::uint64_t batch = answer - offset;
        if (recorded_at(batch, "")) continue;
        // Whether to run it may hang on the outcome of those going out now.
        if (!near_cap(batch) && facts("", answer).oom_below.empty()) {
            if (!runs.empty()) return runs_step(std::move(runs));
            break;
        }
        if (!can_run(runs.size())) {
            if (!runs.empty()) return runs_step(std::move(runs));
            state_.budget_spent = true;
            state_.below_cut = true;
            break;
        }
        runs.push_back(plan_run(batch, RunReason::below_answer));
    }
    if (!runs.empty()) return runs_step(std::move(runs));
    // A batch below the answer that ran out of memory once, run again: one
    // that fails every time is memory not monotone in the batch, one that
    // ran the second time memory that varies from run to run.
    for (const BatchTally& t : facts("", answer).tallies) {
        if (state_.repeats <= 1 || t.batch >= answer || t.runs != 1 || t.ooms != 1) continue;
        if (!can_run(runs.size())) {
            state_.budget_spent = true;
            state_.below_cut = true;
            break;
        }
        runs.push_back(plan_run(t.batch, RunReason::repeat));
    }
    phase_ = Phase::best;
    if (runs.empty()) return std::nullopt;
    return runs_step(std::move(runs));
}

// The best setting's answer run for real under that setting (after the
// recorded one's): its checks as the recorded setting's, the recorded
// answer the floor of its bisection. Then whichever setting ranks best.
// Where the model does not hold, the settings' answers share its error:
// once one setting's run at a batch ran out of memory, another whose answer
// is no larger is not run (a DDP program under 4 GiB spent 3 of its 10 runs
// on 3 settings at 46, each an OOM); it stays "model only".
std::optional<PlanStep> MaxBatchPlanner::best_step() {
    for (;;) {
        if (best_setting_) {
            if (std::optional<PlanStep> step = check_step(*best_setting_, best_floor_)) return step;
            if (state_.budget_spent) break;
            for (const BatchRun* run : runs_of(*best_setting_))
                if (run->recorded_here && run->ran_out_of_memory() && (refuted_ == 0 || run->batch < refuted_)) refuted_ = run->batch;
            best_setting_.reset();
            ++best_round_;
        }
        const MaxBatchSetting* recorded = state_.recorded();
        const MaxBatchSetting* best = state_.best();
        if (best_round_ >= state_.settings.size() || recorded == nullptr || best == nullptr || best == recorded) break;
        const std::uint64_t answer = best->answer.largest.value_or(0);
        if (answer <= recorded->answer.largest.value_or(0)) break;
        if (refuted_ != 0 && !state_.model_holds() && answer <= refuted_) break;
        const std::uint64_t floor = facts("", std::nullopt).ran;
        if (!next_step(best->key(), floor)) break;  // settled
        best_setting_ = best->key();
        best_floor_ = floor;
    }
    phase_ = Phase::confirm;
    return std::nullopt;
}

// ---------------------------------------------------------------- confirm

// --confirm: the recorded setting's answer and the next batch, then the
// best setting's where it answers more; each a run unless the search ran
// that batch under that setting already.
std::optional<PlanStep> MaxBatchPlanner::confirm_step() {
    if (!options_.confirm) {
        phase_ = Phase::done;
        return std::nullopt;
    }
    if (!confirm_planned_) {
        confirm_planned_ = true;
        const MaxBatchSetting* recorded = state_.recorded();
        const MaxBatchSetting* best = state_.best();
        const auto confirm = [this](const MaxBatchSetting& row, bool is_recorded) {
            Confirming c;
            c.row = row;
            c.recorded = is_recorded;
            confirming_.push_back(c);
        };
        if (recorded != nullptr) confirm(*recorded, true);
        if (recorded != nullptr && best != nullptr && best != recorded &&
            best->answer.largest.value_or(0) > recorded->answer.largest.value_or(0))
            confirm(*best, false);
    }
    while (!confirming_.empty()) {
        if (std::optional<PlanStep> step = confirm_row_step(confirming_.front())) return step;
        confirming_.erase(confirming_.begin());
    }
    phase_ = Phase::done;
    return std::nullopt;
}

// One row: at its answer; where that runs out of memory, one batch lower
// at a time (3 more runs at most) until a run fits; then, where the answer
// itself fitted, the next batch, where the model says it runs out of memory.
std::optional<PlanStep> MaxBatchPlanner::confirm_row_step(Confirming& c) {
    const MaxBatchAnswer& a = c.row.answer;
    const auto confirm_at = [&](std::uint64_t batch, bool expect_oom, Confirming::Wait wait) {
        c.wait = wait;
        c.outcome.reset();
        PlannedRun run = plan_run(batch, RunReason::confirm, c.row.key());
        run.expect_oom = expect_oom;
        run.reuse = std::any_of(runs_.begin(), runs_.end(),
                                [&](const BatchRun& r) { return r.recorded_here && r.batch == batch && r.setting == run.setting; });
        return runs_step({run});
    };
    switch (c.wait) {
    case Confirming::Wait::start:
        if (a.largest) {
            c.batch = *a.largest;
            return confirm_at(c.batch, false, Confirming::Wait::answer);
        }
        if (!a.reached_limit && c.recorded) return confirm_at(step(), true, Confirming::Wait::first);
        return std::nullopt;
    case Confirming::Wait::answer:
        if (c.outcome == RunOutcome::ran) {
            if (c.recorded) state_.confirmed_batch = c.batch;
            if (c.batch == *a.largest && !a.reached_limit) return confirm_at(c.batch + step(), true, Confirming::Wait::next);
            return std::nullopt;
        }
        if (c.outcome != RunOutcome::out_of_memory || c.steps == kConfirmStepsDown || c.batch <= step()) return std::nullopt;
        ++c.steps;
        c.batch -= step();
        return confirm_at(c.batch, false, Confirming::Wait::answer);
    case Confirming::Wait::next:
        if (c.outcome == RunOutcome::ran && c.recorded) state_.confirmed_batch = c.batch + step();
        return std::nullopt;
    case Confirming::Wait::first: return std::nullopt;
    }
    return std::nullopt;
}

void MaxBatchPlanner::confirm_outcome(RunOutcome outcome) {
    if (!confirming_.empty()) confirming_.front().outcome = outcome;
}

PlanStep MaxBatchPlanner::fit_step() const {
    const std::vector<const BatchRun*> kept = usable();
    if (kept.size() < 2) return error_step("max-batch: fewer than two recordings ran without an OOM: the model needs two batches that fit", true);
    PlanStep step;
    step.kind = PlanStep::Kind::fit;
    for (const BatchRun* run : kept) step.fit_on.push_back(*run);
    return step;
}

PlanStep MaxBatchPlanner::done_step() const {
    PlanStep step;
    step.kind = PlanStep::Kind::done;
    if (const MaxBatchSetting* recorded = state_.recorded()) {
        step.answer = recorded->answer.largest;
        step.status = answer_status(*recorded, facts("", recorded->answer.largest), state_.checks_off);
    }
    return step;
}

// ---------------------------------------------------------------- policy

// The next real run for a setting's answer, none when it is settled: its
// model's answer while no run has tried it; between the largest batch that
// ran and the smallest above it that ran out of memory, the midpoint
// wherever the model's answer there is no guess of its own (clipped at the
// OOM: the model missed what ran out, a library's workspace, a cached block
// split) or its last guess ran out of memory; once the answer ran, the
// hopeful answer a few batches above where the model does not hold
// (recorded setting). `floor`: a batch believed to fit, where the setting
// has no run that fitted yet.
std::optional<MaxBatchPlanner::Step> MaxBatchPlanner::next_step(const std::string& setting, std::uint64_t floor) const {
    const MaxBatchSetting* s = row_of(setting);
    if (s == nullptr || !s->answer.largest) return std::nullopt;
    const MaxBatchAnswer& a = s->answer;
    const std::uint64_t answer = *a.largest;
    const SettingFacts f = facts(setting, answer);
    const std::uint64_t lo = f.ran;
    // The smallest value above the largest that ran where a run failed: by an OOM, or otherwise (weigh_failures).
    const std::uint64_t failed = state_.failed_above.empty() ? 0 : state_.failed_above.front();
    const std::uint64_t hi = failed > lo && (f.ran_out == 0 || failed < f.ran_out) ? failed : f.ran_out;
    if (hi != 0 && hi <= lo + step()) return std::nullopt;  // settled: a run and the next batch's OOM or failure
    if (answer > lo) {
        // Every batch searched fits: no edge to check.
        if (a.reached_limit && hi == 0) return std::nullopt;
        // (A failure that bounds the search refutes no model: the answer below it is checked.)
        const bool clipped = hi != 0 && hi == f.ran_out && a.reached_limit && answer + step() >= hi;
        // The model's last guess ran out of memory every time it was run (a
        // batch that varied instead moved the answer down by the variance
        // margin: a guess of the model's own again).
        const BatchRun* last = nullptr;
        for (const BatchRun* run : runs_of(setting))
            if (run->recorded_here && run->why == RunReason::at_answer && (last == nullptr || run->order > last->order)) last = run;
        const BatchTally* at_last = last != nullptr ? f.tally(last->batch) : nullptr;
        const bool refuted = at_last != nullptr && at_last->ooms > 0 && at_last->passes == 0 && last->batch == hi;
        if (hi != 0 && (clipped || refuted)) {
            std::uint64_t low = lo;
            if (low == 0 && floor > 0 && floor < hi) {
                if (hi - floor <= step()) return Step{floor, RunReason::bisection};
                low = floor;
            }
            const std::uint64_t middle = midpoint(low, hi);
            if (middle == 0 || middle <= low) return std::nullopt;
            return Step{middle, RunReason::bisection};
        }
        return Step{answer, RunReason::at_answer};
    }
    if (answer != lo) return std::nullopt;
    // The answer ran every time, and the batch above the range varied: the
    // model (with its variance margin) stops short of it, and the batches
    // between are the runs' to settle. Each is run `repeats` times.
    if (const BatchTally* above = f.tally(hi); above != nullptr && above->varies() && hi > lo + step())
        return Step{midpoint(lo, hi), RunReason::bisection};
    if (!setting.empty()) return std::nullopt;
    // A narrow range only (a few batches: doubt about the last requests); a
    // wide one means the hopeful trace leaves out much of the program (a
    // detection model's thousands of data-dependent requests: 29 to 267),
    // no answer a run would bear out. And until a hopeful check runs out of
    // memory: the hopeful trace is then refuted at the edge.
    const bool refuted = std::any_of(runs_.begin(), runs_.end(),
                                     [](const BatchRun& run) { return run.why == RunReason::at_hopeful && run.ran_out_of_memory(); });
    const std::optional<std::uint64_t>& hopeful_answer = a.largest_hopeful;
    if (!state_.model_holds() && !refuted && hopeful_answer && *hopeful_answer > answer &&
        *hopeful_answer - answer <= std::max<std::uint64_t>(2 * step(), answer / 16)) {
        // Below a batch that ran out of memory, no further than the
        // midpoint: a run there narrows the range whatever it says.
        const std::uint64_t hopeful = hi != 0 ? std::min(*hopeful_answer, midpoint(lo, hi)) : *hopeful_answer;
        if (hopeful > answer && !recorded_at(hopeful, setting)) return Step{hopeful, RunReason::at_hopeful};
    }
    return std::nullopt;
}

// Near the cap, as the model says on any rank: an OOM or a retry in the
// modelled replay, a peak within 1/kNearCapDivisor of the cap, or the
// cautious and hopeful traces disagreeing.
bool MaxBatchPlanner::near_cap(std::uint64_t batch) const {
    const auto point = std::find_if(points_.begin(), points_.end(), [](const GridPoint& p) { return p.recorded; });
    const TorchLane lane{point->options, options_.capacity};
    const std::uint64_t margin = options_.capacity / kNearCapDivisor;
    bool near = false;
    for (const RankModel& m : models_) {
        const BatchReplay c = replay_batches(m.model, lane, {batch}, false, options_.search).front();
        near = near || !c.no_oom || c.retries > 0 || c.peak_reserved + margin >= options_.capacity;
        if (!m.model.checks().holds()) near = near || !replay_batches(m.model, lane, {batch}, true, options_.search).front().no_oom;
    }
    return near;
}

// Every setting searched on every rank's model, with the facts of its runs;
// a setting's answer is its tightest rank's.
void MaxBatchPlanner::search() {
    needs_search_ = false;
    std::vector<BatchLane> lanes;
    lanes.reserve(points_.size());
    for (const GridPoint& p : points_) {
        const SettingFacts f = facts(p.recorded ? std::string() : alloc_conf(p.options), std::nullopt);
        lanes.emplace_back(TorchLane{p.options, options_.capacity}, f.ran, f.ran_out);
        if (p.recorded) state_.oom_batch = f.ran_out != 0 ? std::optional<std::uint64_t>(f.ran_out) : std::nullopt;
    }
    // Memory that varies from run to run: the model's peak is one run's, and
    // another ran out of memory with it under the cap. The answer then
    // leaves room for one more of the program's largest request (a new
    // segment of it) at the batch that varied: where the room a request
    // finds hangs on timing, a run short of it by more than that is not
    // seen. The batches that ran every time stand as facts.
    MaxBatchOptions search_options = options_.search;
    const SettingFacts recorded_facts = facts("", std::nullopt);
    if (!recorded_facts.varies.empty()) {
        state_.variance_margin = 0;
        for (const RankModel& m : models_)
            state_.variance_margin = std::max(state_.variance_margin, largest_segment(m.model, recorded_facts.varies.back()));
        search_options.headroom += state_.variance_margin;
    }
    std::vector<std::vector<MaxBatchAnswer>> per_rank;
    per_rank.reserve(models_.size());
    for (const RankModel& m : models_) per_rank.push_back(search_max_batch(m.model, lanes, search_options));
    merge_ranks(per_rank);
    rank_settings(state_.settings);
    const MaxBatchSetting* recorded = state_.recorded();
    std::size_t tight = 0;
    for (std::size_t k = 0; k < models_.size(); ++k)
        if (recorded != nullptr && recorded->tightest_rank == models_[k].rank) tight = k;
    state_.checks = models_[tight].model.checks();
    state_.model = models_[tight].model;
}

// Every rank must fit: the smallest answer is the program's.
void MaxBatchPlanner::merge_ranks(const std::vector<std::vector<MaxBatchAnswer>>& per_rank) {
    state_.settings.clear();
    for (std::size_t i = 0; i < points_.size(); ++i) {
        std::size_t tight = 0;
        for (std::size_t k = 1; k < models_.size(); ++k)
            if (per_rank[k][i].largest.value_or(0) < per_rank[tight][i].largest.value_or(0)) tight = k;
        MaxBatchSetting s{points_[i], per_rank[tight][i], models_[tight].rank};
        for (std::size_t k = 0; k < models_.size(); ++k) {
            if (k == tight) continue;
            s.answer.replays += per_rank[k][i].replays;
            const std::optional<std::uint64_t>& h = per_rank[k][i].largest_hopeful;
            if (h && s.answer.largest_hopeful && *h < *s.answer.largest_hopeful) s.answer.largest_hopeful = h;
        }
        if (models_.size() == 1) s.tightest_rank = std::nullopt;
        state_.settings.push_back(s);
    }
}

// ---------------------------------------------------------------- queries

std::vector<const BatchRun*> MaxBatchPlanner::runs_of(const std::string& setting) const {
    std::vector<const BatchRun*> runs;
    for (const BatchRun& run : runs_)
        if (run.setting == setting) runs.push_back(&run);
    return runs;
}

// The model's recordings: the recorded setting's runs that completed,
// ascending batch (the two largest fit it; the others check it).
std::vector<const BatchRun*> MaxBatchPlanner::usable() const {
    std::vector<const BatchRun*> kept;
    for (const BatchRun* run : runs_of(""))
        if (run->outcome == RunOutcome::ran) kept.push_back(run);
    std::stable_sort(kept.begin(), kept.end(), [](const BatchRun* a, const BatchRun* b) { return a->batch < b->batch; });
    // A batch run again (a repeat) is one recording: the model's first run there.
    kept.erase(std::unique(kept.begin(), kept.end(), [](const BatchRun* a, const BatchRun* b) { return a->batch == b->batch; }), kept.end());
    return kept;
}

bool MaxBatchPlanner::recorded_at(std::uint64_t batch, const std::string& setting) const {
    return std::any_of(runs_.begin(), runs_.end(), [&](const BatchRun& run) { return run.batch == batch && run.setting == setting; });
}

const MaxBatchSetting* MaxBatchPlanner::row_of(const std::string& setting) const {
    for (const MaxBatchSetting& s : state_.settings)
        if (s.key() == setting) return &s;
    return nullptr;
}

PlannedRun MaxBatchPlanner::plan_run(std::uint64_t batch, RunReason why, const std::string& setting) const {
    PlannedRun run;
    run.batch = batch;
    run.setting = setting;
    run.why = why;
    return run;
}

}  // namespace gpumem::reuse_sim
