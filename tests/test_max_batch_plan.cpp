// max-batch's planner (reuse_sim/max_batch_plan.hpp) without a program:
// facts in, steps out. A stand-in program written here, as
// tests/fixtures/record/batch_program.py is for the stand-in torch (20 MiB
// of weights, then per step 8 MiB and 4 MiB a sample, freed at the step's
// end; a run runs out of memory where what is live passes the cap), answers
// each run the planner asks for and gives the model its recordings; each
// case checks the steps the planner gave, in order, and how it ended. The
// cases are those tests/test_reuse_sim_max_batch.cpp runs end to end on a
// real python3, and the ones a stand-in run cannot reach cheaply: the budget
// spent at each phase, runs below the answer cut short, failures.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reuse_sim/max_batch_plan.hpp"
#include "reuse_sim_helpers.hpp"

// A failed comparison of steps shows them, one a line.
namespace doctest {
template <>
struct StringMaker<std::vector<std::string>> {
    static String convert(const std::vector<std::string>& lines) {
        std::string text = "\n";
        for (const std::string& line : lines) text += "  " + line + "\n";
        return text.c_str();
    }
};
}  // namespace doctest

namespace {

using Kind = rs::PlanStep::Kind;
using rs::RunOutcome;
using rs::RunReason;

// The program: batch_program.py's allocations and its options.
struct Program {
    std::uint64_t spike_from = 0, spike_mib = 0;  // from this batch on, a workspace of spike_mib MiB each step
    std::vector<std::uint64_t> spike_at;          // only at these batches
    bool fragment = false;                        // the split block PyTorch's caching allocator cannot release
    std::uint64_t fail_from = 0;                  // from this batch on, an error of the program's (no OOM)
    double rank_share = 1;                        // the batch a rank takes, in parts of the one given
    // Memory that varies from run to run: a batch's outcomes in the order
    // its runs are made (past the last, the last again), whatever the cap.
    std::map<std::uint64_t, std::vector<RunOutcome>> script;
    mutable std::map<std::uint64_t, std::size_t> made;

    bool spiked(std::uint64_t batch) const {
        return (spike_from != 0 && batch >= spike_from) || std::count(spike_at.begin(), spike_at.end(), batch) > 0;
    }
    std::vector<rs::Event> events(std::uint64_t given) const {
        const auto batch = static_cast<std::uint64_t>(static_cast<double>(given) * rank_share);
        std::vector<rs::Event> out{A(1, 20 * MiB)};
        std::uint64_t id = 2;
        for (int step = 0; step < 3; ++step) {
            const std::uint64_t x = id++, y = id++;
            out.push_back(A(x, batch * 8 * MiB));
            out.push_back(A(y, batch * 4 * MiB));
            if (spiked(given)) {
                out.push_back(A(id, spike_mib * MiB));
                out.push_back(F(id++));
            }
            out.push_back(F(x));
            if (fragment) {
                const std::uint64_t half = id++, more = id++;
                out.push_back(A(half, batch * 4 * MiB));
                out.push_back(A(more, batch * 9 * MiB));
                out.push_back(F(half));
                out.push_back(F(more));
            }
            out.push_back(F(y));
        }
        for (std::size_t n = 0; n < out.size(); ++n) out[n].line = n + 1;
        return out;
    }
    // What is live at the peak, as the stand-in torch counts it.
    std::uint64_t peak(std::uint64_t given) const {
        std::uint64_t live = 0, top = 0;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> held;
        for (const rs::Event& e : events(given)) {
            if (e.kind == rs::EventKind::alloc) {
                held.emplace_back(e.id, e.size);
                live += e.size;
                top = std::max(top, live);
            } else if (e.kind == rs::EventKind::free) {
                for (const auto& [id, size] : held)
                    if (id == e.id) live -= size;
            }
        }
        return top;
    }
    RunOutcome outcome(std::uint64_t batch, std::uint64_t cap) const {
        if (fail_from != 0 && batch >= fail_from) return RunOutcome::failed;
        if (const auto s = script.find(batch); s != script.end()) {
            const std::size_t n = made[batch]++;
            return s->second[std::min(n, s->second.size() - 1)];
        }
        return peak(batch) > cap ? RunOutcome::out_of_memory : RunOutcome::ran;
    }
};

// The program holding `mib` MiB more from batch `from` on (a library's
// choice the small batches' recordings never see).
Program spiked_from(std::uint64_t from, std::uint64_t mib) {
    Program p;
    p.spike_from = from;
    p.spike_mib = mib;
    return p;
}

// One process, or several ranks each taking its share of the batch.
struct Ranks {
    std::vector<Program> ranks;
    std::vector<std::string> timing = {};  // what the command would find in the recordings
    RunOutcome outcome(std::uint64_t batch, std::uint64_t cap) const {
        RunOutcome worst = RunOutcome::ran;
        for (const Program& p : ranks) {
            const RunOutcome o = p.outcome(batch, cap);
            if (o == RunOutcome::failed) return o;
            if (o == RunOutcome::out_of_memory) worst = o;
        }
        return worst;
    }
};

// A planned run, as the steps below write it: "83 at_answer", "58 under expandable_segments:True".
std::string text(const rs::PlannedRun& r) {
    std::string t = std::to_string(r.batch) + " " + rs::run_reason_name(r.why);
    if (!r.setting.empty()) t += " under " + r.setting;
    if (r.reuse) t += " (reused)";
    return t;
}

struct Drive {
    std::vector<std::string> steps;  // each step: "runs: a | b", "fit: 4 8", "note", "done 83 ran", "error: ...", "run failed"
    rs::PlanStep last;
    std::vector<std::pair<std::uint64_t, RunOutcome>> confirmed;  // --confirm's runs, as made
};

rs::MaxBatchPlanOptions options(std::uint64_t cap, std::vector<std::uint64_t> first = {4, 8}, unsigned max_runs = 12) {
    rs::MaxBatchPlanOptions o;
    o.first_batches = std::move(first);
    o.max_runs = max_runs;
    o.capacity = cap;
    o.search.replay.threads = 2;
    o.repeats = 1;  // the cases before repeats: one run a batch (--repeats 1)
    return o;
}

// The settings max-batch searches by default: the recorded one and expandable segments.
std::vector<rs::GridPoint> points() { return rs::grid_points(rs::TorchOptions{}, rs::grid_axes({"expandable_segments=false,true"}, false, true)); }

// Asks the planner until it is done, the runs answered by `program` under
// `cap`, each fit made on the program's events at the batches named.
// `slots`: the runs the command's slots allow after each runs step (as
// it tells the planner with set_parallel); none: the planner's own.
Drive drive(rs::MaxBatchPlanner& planner, const Ranks& program, std::uint64_t cap, std::optional<unsigned> slots = std::nullopt) {
    Drive d;
    for (int guard = 0; guard < 100; ++guard) {
        const rs::PlanStep step = planner.next();
        if (step.kind == Kind::runs && slots) planner.set_parallel(*slots);
        d.last = step;
        switch (step.kind) {
        case Kind::runs: {
            std::string line = "runs:";
            for (const rs::PlannedRun& run : step.runs) {
                line += (line.size() > 5 ? " | " : " ") + text(run);
                const RunOutcome o = program.outcome(run.batch, cap);
                if (run.why == RunReason::confirm) d.confirmed.emplace_back(run.batch, o);
                planner.ran(run, o);
            }
            d.steps.push_back(line);
            break;
        }
        case Kind::fit: {
            std::string line = "fit:";
            rs::ModelFit fit{{}, points(), rs::StrategyOptions{}, program.timing};
            for (std::size_t k = 0; k < program.ranks.size(); ++k) {
                std::vector<rs::BatchRecording> recordings;
                for (const rs::BatchRun& run : step.fit_on) recordings.push_back({run.batch, "bs" + std::to_string(run.batch), program.ranks[k].events(run.batch)});
                const std::optional<unsigned> rank = program.ranks.size() > 1 ? std::optional<unsigned>(static_cast<unsigned>(k)) : std::nullopt;
                fit.ranks.push_back({rank, rs::BatchModel::fit(std::move(recordings))});
            }
            for (const rs::BatchRun& run : step.fit_on) line += " " + std::to_string(run.batch);
            d.steps.push_back(line);
            planner.fitted(std::move(fit));
            break;
        }
        case Kind::note: d.steps.emplace_back("note"); break;
        case Kind::done:
            d.steps.push_back("done " + (step.answer ? std::to_string(*step.answer) : std::string("none")) + " " + rs::answer_status_name(step.status));
            return d;
        case Kind::error: d.steps.push_back(std::string(step.usage ? "usage error: " : "error: ") + step.text); return d;
        case Kind::run_failed: d.steps.emplace_back("run failed"); return d;
        }
    }
    FAIL("the planner never ended");
    return d;
}

Drive drive(rs::MaxBatchPlanner& planner, const Program& program, std::uint64_t cap) { return drive(planner, Ranks{{program}}, cap); }

std::vector<std::string> steps(std::initializer_list<const char*> lines) { return {lines.begin(), lines.end()}; }

}  // namespace

TEST_CASE("max-batch plan: first at 4 and 8 side by side, the refinement's two side by side, a check at the answer; done, it ran") {
    rs::MaxBatchPlanner planner(options(1 * GiB));
    const Drive d = drive(planner, Program{}, 1 * GiB);
    CHECK(d.steps == steps({"runs: 4 first | 8 first", "fit: 4 8", "runs: 42 near the answer | 62 near the answer", "fit: 4 8 42 62",
                            "runs: 83 check at the answer", "fit: 4 8 42 62 83", "done 83 ran"}));
    CHECK(planner.runs() == 5);
    const rs::MaxBatchState& s = planner.state();
    CHECK(s.first_answer == 83);
    CHECK(s.model_holds());
    CHECK_FALSE(s.budget_spent);
    REQUIRE(s.settings.size() == 2);
    CHECK(s.recorded() == &s.settings.front());  // 83 ranks first: expandable segments' 82 is refused under the cap
    CHECK(s.settings.back().answer.largest == 82);
    CHECK(planner.facts("", 83).answer_ran);
    // --record-batches 2,4,8: three at once.
    rs::MaxBatchPlanner three(options(1 * GiB, {2, 4, 8}));
    CHECK(drive(three, Program{}, 1 * GiB).steps.front() == "runs: 2 first | 4 first | 8 first");
}

TEST_CASE("max-batch plan: --no-refine records the first batches only, and the answer is the model's") {
    rs::MaxBatchPlanOptions o = options(1 * GiB);
    o.refine = false;
    rs::MaxBatchPlanner planner(o);
    CHECK(drive(planner, Program{}, 1 * GiB).steps == steps({"runs: 4 first | 8 first", "fit: 4 8", "done 83 model only"}));
    CHECK(planner.state().checks_off);
    CHECK_FALSE(planner.state().first_answer);
}

TEST_CASE("max-batch plan: recordings given are facts, an OOM among them too; fewer than two that fit is a usage error") {
    rs::MaxBatchPlanner planner(options(1 * GiB, {}));
    planner.given(8, RunOutcome::ran);
    planner.given(62, RunOutcome::ran);
    planner.given(84, RunOutcome::out_of_memory);
    CHECK(drive(planner, Program{}, 1 * GiB).steps == steps({"fit: 8 62", "done 83 model only"}));
    CHECK(planner.state().oom_batch == 84);
    CHECK(planner.runs() == 0);
    rs::MaxBatchPlanner one(options(1 * GiB, {}));
    one.given(8, RunOutcome::ran);
    one.given(84, RunOutcome::out_of_memory);
    const Drive d = drive(one, Program{}, 1 * GiB);
    CHECK(d.steps == steps({"usage error: max-batch: fewer than two recordings ran without an OOM: the model needs two batches that fit"}));
}

TEST_CASE("max-batch plan: first recordings that run out of memory are halved, down to 1,2; then the model's clipped answer is bisected") {
    // 62 MiB: 4 and 8 run out of memory (68 and 116 MiB); 2 then 1 run.
    rs::MaxBatchPlanner planner(options(62 * MiB));
    CHECK(drive(planner, Program{}, 62 * MiB).steps == steps({"runs: 4 first | 8 first", "note", "runs: 2 first", "note", "runs: 1 first", "fit: 1 2",
                                                              "runs: 3 bisection", "fit: 1 2 3", "done 3 ran"}));
    CHECK(planner.state().oom_batch == 4);
    // Under 30 MiB even batch 1 runs out of memory: an error, with every batch tried.
    rs::MaxBatchPlanner none(options(30 * MiB));
    const Drive d = drive(none, Program{}, 30 * MiB);
    CHECK(d.steps.back() == "error: max-batch: the program ran out of memory under the cap at batch 1, 2, 4, 8 (halved down to 1,2): the model needs runs "
                            "at two batches that fit");
}

TEST_CASE("max-batch plan: a check at the answer that runs out of memory starts a bisection down to a batch that ran; the best setting gets the last run") {
    // From batch 70 on, 200 MiB more: every batch from 70 up runs out of memory under 1 GiB, 69 fits.
    rs::MaxBatchPlanner planner(options(1 * GiB, {4, 8}, 10));
    const Drive d = drive(planner, spiked_from(70, 200), 1 * GiB);
    CHECK(d.steps == steps({"runs: 4 first | 8 first", "fit: 4 8", "runs: 42 near the answer | 62 near the answer", "fit: 4 8 42 62",
                            "runs: 83 check at the answer", "runs: 72 bisection", "runs: 67 bisection", "fit: 4 8 42 62 67", "runs: 69 bisection",
                            "fit: 4 8 42 62 67 69", "runs: 70 bisection", "runs: 82 check at the answer under expandable_segments:True",
                            "done 69 ran"}));
    // An OOM changes no model (no fit, a search with the new fact); the tenth run spends the budget.
    CHECK(planner.runs() == 10);
    CHECK(planner.state().budget_spent);
    const rs::MaxBatchSetting* best = planner.state().best();
    REQUIRE(best != nullptr);
    CHECK(rs::answer_status(*best, planner.facts(best->key(), best->answer.largest), false) == rs::AnswerStatus::not_confirmed);
}

TEST_CASE("max-batch plan: the budget spent before the answer ran: done, not confirmed, the range in the facts") {
    rs::MaxBatchPlanner planner(options(1 * GiB, {4, 8}, 6));
    const Drive d = drive(planner, spiked_from(70, 200), 1 * GiB);
    CHECK(d.steps.back() == "done 71 not confirmed");
    CHECK(planner.runs() == 6);
    CHECK(planner.state().budget_spent);
    const rs::SettingFacts f = planner.facts("", 71);
    CHECK(f.ran == 62);
    CHECK(f.ran_out == 72);
    // Spent within the refinement: its second run is not made, the model refitted all the same.
    rs::MaxBatchPlanner short_budget(options(1 * GiB, {4, 8}, 3));
    CHECK(drive(short_budget, Program{}, 1 * GiB).steps ==
          steps({"runs: 4 first | 8 first", "fit: 4 8", "runs: 42 near the answer", "fit: 4 8 42", "done 83 not confirmed"}));
    // Spent before two recordings fit: an error.
    rs::MaxBatchPlanner first_only(options(62 * MiB, {4, 8}, 2));
    CHECK(drive(first_only, Program{}, 62 * MiB).steps ==
          steps({"runs: 4 first | 8 first", "note", "error: max-batch: the run budget (--max-runs 2) was spent before two recordings ran without an OOM"}));
}

TEST_CASE("max-batch plan: runs below the answer near the cap go out together; an OOM below the answer makes the next one run") {
    // Under 4 GiB 339 fits; 337 and 338 hold 200 MiB more and run out of
    // memory. 338 and 337 are within 1 % of the cap in the model: run side
    // by side; 335 is not, but runs since an OOM was found below.
    Program p;
    p.spike_at = {337, 338};
    p.spike_mib = 200;
    rs::MaxBatchPlanner planner(options(4 * GiB));
    const Drive d = drive(planner, p, 4 * GiB);
    REQUIRE(d.steps.size() >= 3);
    CHECK(d.steps[d.steps.size() - 3] == "runs: 338 below the answer | 337 below the answer");
    CHECK(d.steps[d.steps.size() - 2] == "runs: 335 below the answer");
    CHECK(d.steps.back() == "done 339 ran");
    const rs::SettingFacts f = planner.facts("", 339);
    CHECK(f.oom_below == std::vector<std::uint64_t>{337, 338});
    CHECK(f.all_below_ran == 336);
    CHECK(f.ran_below_oom == 335);
    // 337 alone: 338 runs, 337 does not, 335 runs.
    p.spike_at = {337};
    rs::MaxBatchPlanner two_below(options(4 * GiB));
    const Drive e = drive(two_below, p, 4 * GiB);
    CHECK(e.steps[e.steps.size() - 2] == "runs: 335 below the answer");
    CHECK(two_below.facts("", 339).oom_below == std::vector<std::uint64_t>{337});
    // Far from the cap (1 GiB, 70 and up spiked: the answer 69 at 848 MiB), none.
    rs::MaxBatchPlanner none(options(1 * GiB));
    for (const std::string& step : drive(none, spiked_from(70, 200), 1 * GiB).steps) CHECK(step.find("below the answer") == std::string::npos);
}

TEST_CASE("max-batch plan: the budget ends the runs below the answer: said so (below_cut), the answer stands") {
    Program p;
    p.spike_at = {337, 338};
    p.spike_mib = 200;
    rs::MaxBatchPlanner planner(options(4 * GiB, {4, 8}, 6));  // 4, 8, 170, 255, 339, then one below
    const Drive d = drive(planner, p, 4 * GiB);
    CHECK(d.steps[d.steps.size() - 2] == "runs: 338 below the answer");
    CHECK(d.steps.back() == "done 339 ran");
    CHECK(planner.state().budget_spent);
    CHECK(planner.state().below_cut);
}

TEST_CASE("max-batch plan: where the answer ran and the model does not hold, a run at the hopeful answer; one OOM there ends them") {
    // From 60 on, 8 MiB more each step: 62 has it, 42 not: an extra request.
    rs::MaxBatchPlanner planner(options(1 * GiB));
    const Drive d = drive(planner, spiked_from(60, 8), 1 * GiB);
    CHECK(d.steps == steps({"runs: 4 first | 8 first", "fit: 4 8", "runs: 42 near the answer | 62 near the answer", "fit: 4 8 42 62",
                            "runs: 82 check at the answer", "fit: 4 8 42 62 82", "runs: 83 check at the hopeful answer", "fit: 4 8 42 62 82 83",
                            "runs: 81 below the answer", "done 83 ran"}));
    CHECK_FALSE(planner.state().model_holds());
    // From 50 on, 30 MiB: 80 fits, the hopeful 83 runs out of memory, and no further hopeful run.
    rs::MaxBatchPlanner refuted(options(1 * GiB));
    const Drive e = drive(refuted, spiked_from(50, 30), 1 * GiB);
    CHECK(std::count(e.steps.begin(), e.steps.end(), "runs: 83 check at the hopeful answer") == 1);
    CHECK(e.steps.back() == "done 80 ran");
}

TEST_CASE("max-batch plan: the best setting's answer is run under that setting; --confirm reuses the search's runs") {
    // The caching allocator keeps a split block (21 MiB a sample reserved:
    // 47 under 1 GiB); expandable segments unmap it (58). What is live
    // (17 MiB a sample) is what runs out.
    Program p;
    p.fragment = true;
    rs::MaxBatchPlanOptions o = options(1 * GiB);
    o.confirm = true;
    rs::MaxBatchPlanner planner(o);
    const Drive d = drive(planner, p, 1 * GiB);
    const auto at = [&](const char* line) { return std::find(d.steps.begin(), d.steps.end(), line) - d.steps.begin(); };
    CHECK(at("runs: 47 check at the answer") < at("runs: 58 check at the answer under expandable_segments:True"));
    CHECK(at("runs: 58 check at the answer under expandable_segments:True") < static_cast<std::ptrdiff_t>(d.steps.size()));
    // --confirm: 47 and 58 ran in the search: reused; 48 and 59 new runs.
    CHECK(at("runs: 47 confirm (reused)") < at("runs: 48 confirm"));
    CHECK(at("runs: 58 confirm under expandable_segments:True (reused)") < at("runs: 59 confirm under expandable_segments:True"));
    CHECK(d.steps.back() == "done 47 ran");
    // 48 ran (what is live fits): the recorded setting is confirmed one higher.
    CHECK(planner.state().confirmed_batch == 48);
    REQUIRE(planner.state().best() != nullptr);
    CHECK(planner.state().best()->answer.largest == 58);
}

TEST_CASE("max-batch plan --confirm: an answer that runs out of memory steps down a batch at a time, three more runs at most") {
    rs::MaxBatchPlanOptions o = options(1 * GiB);
    o.refine = false;
    o.confirm = true;
    rs::MaxBatchPlanner planner(o);
    const Drive d = drive(planner, spiked_from(80, 40), 1 * GiB);
    CHECK(d.confirmed == std::vector<std::pair<std::uint64_t, RunOutcome>>{
                             {83, RunOutcome::out_of_memory}, {82, RunOutcome::out_of_memory}, {81, RunOutcome::out_of_memory}, {80, RunOutcome::ran}});
    CHECK(planner.state().confirmed_batch == 80);
    CHECK(planner.runs() == 2);  // --confirm's runs are not the budget's
    rs::MaxBatchPlanner none(o);
    CHECK(drive(none, spiked_from(80, 60), 1 * GiB).confirmed.size() == 4);
    CHECK_FALSE(none.state().confirmed_batch);
}

TEST_CASE("max-batch plan: a run that fails otherwise than by an OOM stops the search; under --confirm it is noted and the confirm goes on") {
    Program p;
    p.fail_from = 8;
    rs::MaxBatchPlanner planner(options(1 * GiB));
    CHECK(drive(planner, p, 1 * GiB).steps == steps({"runs: 4 first | 8 first", "run failed"}));
    CHECK(planner.next().kind == Kind::run_failed);  // and stays stopped
    // At a batch that ran (a repeat that fails): the same.
    Program flaky;
    flaky.script[83] = {RunOutcome::ran, RunOutcome::failed};
    rs::MaxBatchPlanOptions twice = options(1 * GiB);
    twice.repeats = 2;
    rs::MaxBatchPlanner repeated(twice);
    const Drive stopped = drive(repeated, flaky, 1 * GiB);
    CHECK(stopped.steps.back() == "run failed");
    CHECK(stopped.last.failed_at == 83);
    // --confirm's run at the next batch fails: no confirmed batch above the answer, the search done.
    p.fail_from = 84;
    rs::MaxBatchPlanOptions o = options(1 * GiB);
    o.confirm = true;
    rs::MaxBatchPlanner confirming(o);
    const Drive d = drive(confirming, p, 1 * GiB);
    CHECK(d.steps.back() == "done 83 ran");
    CHECK(d.confirmed == std::vector<std::pair<std::uint64_t, RunOutcome>>{{83, RunOutcome::ran}, {84, RunOutcome::failed}});
    CHECK(confirming.state().confirmed_batch == 83);
}

TEST_CASE("max-batch plan: a run that fails otherwise than by an OOM above every batch that ran bounds the search; the answer below it is checked") {
    // The check at 83 fails (a batch larger than the data): 82 is checked, and is the answer.
    Program p;
    p.fail_from = 83;
    rs::MaxBatchPlanner at_check(options(1 * GiB));
    const Drive d = drive(at_check, p, 1 * GiB);
    CHECK(d.steps == steps({"runs: 4 first | 8 first", "fit: 4 8", "runs: 42 near the answer | 62 near the answer", "fit: 4 8 42 62",
                            "runs: 83 check at the answer", "runs: 82 check at the answer", "fit: 4 8 42 62 82", "done 82 ran"}));
    CHECK(at_check.state().failed_above == std::vector<std::uint64_t>{83});
    // A ladder run that fails above one that ran out of memory (seq 16384 past a position table): noted, nothing changes.
    Program beyond;
    beyond.fail_from = 512;
    rs::MaxBatchPlanOptions o = options(1 * GiB);
    o.parallel = 8;
    rs::MaxBatchPlanner ladder(o);
    const Drive l = drive(ladder, beyond, 1 * GiB);
    REQUIRE(l.steps.size() > 1);
    CHECK(l.steps.front() == "runs: 4 first | 8 first | 16 ladder | 32 ladder | 64 ladder | 128 ladder | 256 ladder | 512 ladder");
    CHECK(l.steps.back() == "done 83 ran");
    CHECK(ladder.state().failed_above == std::vector<std::uint64_t>{512});
    // Every ladder run above 64 fails, none by an OOM: the search stays below 128, and 83 still answers.
    beyond.fail_from = 128;
    rs::MaxBatchPlanner bounded(o);
    CHECK(drive(bounded, beyond, 1 * GiB).steps.back() == "done 83 ran");
    CHECK(bounded.state().failed_above == std::vector<std::uint64_t>{128, 256, 512});
    // A program that fails from 80 on, above 64 that ran: 79 is the answer, its failure named.
    beyond.fail_from = 80;
    rs::MaxBatchPlanner limited(o);
    CHECK(drive(limited, beyond, 1 * GiB).steps.back() == "done 79 ran");
    CHECK(limited.state().failed_above.front() == 80);
}

TEST_CASE("max-batch plan: several ranks each modelled; the answer is the tightest rank's, named") {
    // Rank 1 takes twice the batch: 41 fits 1 GiB on it, 83 on rank 0.
    Program rank0, rank1;
    rank1.rank_share = 2;
    rs::MaxBatchPlanner planner(options(1 * GiB));
    const Drive d = drive(planner, Ranks{{rank0, rank1}}, 1 * GiB);
    CHECK(d.steps.back() == "done 41 ran");
    CHECK(planner.state().ranks == std::vector<unsigned>{0, 1});
    REQUIRE(planner.state().recorded() != nullptr);
    CHECK(planner.state().recorded()->tightest_rank == 1);
}

TEST_CASE("max-batch plan: the facts of a setting: only runs made under the cap say a batch fits; an OOM given is a fact") {
    rs::BatchRun given{62, "", RunReason::given, RunOutcome::ran, 0, 0, false};
    rs::BatchRun oom{84, "", RunReason::given, RunOutcome::out_of_memory, 0, 0, false};
    rs::BatchRun ran{80, "", RunReason::at_answer, RunOutcome::ran, 0, 1, true};
    rs::BatchRun below{78, "", RunReason::below_answer, RunOutcome::out_of_memory, 0, 2, true};
    rs::BatchRun failed{79, "", RunReason::below_answer, RunOutcome::failed, 0, 3, true};
    const rs::SettingFacts f = rs::setting_facts({&given, &oom, &ran, &below, &failed}, 80);
    CHECK(f.ran == 80);
    CHECK(f.ran_out == 84);
    CHECK(f.any_run);
    CHECK(f.answer_ran);
    CHECK(f.oom_below == std::vector<std::uint64_t>{78});
    CHECK(f.all_below_ran == 77);
    CHECK(f.ran_below_oom == 0);  // 62 was given: not known to fit under this cap
    const rs::SettingFacts g = rs::setting_facts({&given, &oom}, 83);
    CHECK(g.ran == 0);
    CHECK_FALSE(g.any_run);
    rs::MaxBatchSetting row;
    row.point.recorded = true;
    CHECK(rs::answer_status(row, g, false) == rs::AnswerStatus::model_only);
    CHECK(rs::answer_status(row, f, false) == rs::AnswerStatus::ran);
    rs::MaxBatchSetting other;
    other.point.options.expandable_segments = true;
    CHECK(other.key() == "expandable_segments:True");
    CHECK(rs::answer_status(other, rs::setting_facts({&ran}, 81), false) == rs::AnswerStatus::not_confirmed);
}

TEST_CASE("max-batch plan: an answer needs two runs without an OOM; side by side the check goes out with its repeat and the next batch") {
    // One at a time: the check, then its repeat.
    rs::MaxBatchPlanOptions o = options(1 * GiB);
    o.repeats = 0;  // the default: two, three where timing can change the outcome
    rs::MaxBatchPlanner planner(o);
    CHECK(drive(planner, Program{}, 1 * GiB).steps == steps({"runs: 4 first | 8 first", "fit: 4 8", "runs: 42 near the answer | 62 near the answer",
                                                             "fit: 4 8 42 62", "runs: 83 check at the answer", "fit: 4 8 42 62 83", "runs: 83 repeat",
                                                             "done 83 ran"}));
    CHECK(planner.state().repeats == 2);
    CHECK(planner.facts("", 83).tally(83)->passes == 2);
    // Side by side, eight slots: the first recordings climb a ladder
    // (16 to 512 beside 4 and 8); the largest that ran, 64, is within twice
    // the answer: no refinement, and the check goes out with its repeat and
    // the next batch (whose OOM settles it): two steps of runs.
    o.parallel = 8;
    rs::MaxBatchPlanner side(o);
    const Drive d = drive(side, Program{}, 1 * GiB);
    // The slots left take the batches just below it (no step of their own later).
    CHECK(d.steps == steps({"runs: 4 first | 8 first | 16 ladder | 32 ladder | 64 ladder | 128 ladder | 256 ladder | 512 ladder",
                            "fit: 4 8 16 32 64",
                            "runs: 83 check at the answer | 83 repeat | 84 the next batch | 82 below the answer | 81 below the answer | 79 below the answer",
                            "fit: 4 8 16 32 64 79 81 82 83", "done 83 ran"}));
    CHECK(side.facts("", 83).ran_out == 84);
    CHECK(side.state().max_runs == 12 + 6);  // the ladder's runs on top of the default budget
    // Four slots: a shorter ladder, 32 the largest; the first answer's
    // check goes out with the refinement and its repeat (no room for the
    // next batch: the model's word for it); the refitted model agrees:
    // settled in that step.
    o.parallel = 4;
    rs::MaxBatchPlanner four(o);
    CHECK(drive(four, Program{}, 1 * GiB).steps ==
          steps({"runs: 4 first | 8 first | 16 ladder | 32 ladder", "fit: 4 8 16 32",
                 "runs: 42 near the answer | 62 near the answer | 83 check at the answer | 83 repeat", "fit: 4 8 16 32 42 62 83", "done 83 ran"}));
    // Three: the check after the refinement, with its repeat and the next batch.
    o.parallel = 3;
    rs::MaxBatchPlanner three(o);
    CHECK(drive(three, Program{}, 1 * GiB).steps == steps({"runs: 4 first | 8 first | 16 ladder", "fit: 4 8 16",
                                                           "runs: 42 near the answer | 62 near the answer", "fit: 4 8 16 42 62",
                                                           "runs: 83 check at the answer | 83 repeat | 84 the next batch", "fit: 4 8 16 42 62 83",
                                                           "done 83 ran"}));
    // Several ranks (the command's timing note): three runs.
    o.parallel = 1;
    rs::MaxBatchPlanner ranked(o);
    Program rank0, rank1;
    rank1.rank_share = 2;
    const Drive e = drive(ranked, Ranks{{rank0, rank1}, {"2 ranks"}}, 1 * GiB);
    CHECK(ranked.state().repeats == 3);
    CHECK(std::count(e.steps.begin(), e.steps.end(), "runs: 41 repeat") == 2);
    CHECK(e.steps.back() == "done 41 ran");
}

TEST_CASE("max-batch plan: a batch whose runs disagree varies; the answer is the largest batch that ran every time, the model given a margin") {
    // 83 fits one run in two (another stream's frees come back late); 82
    // and below run every time. Two runs an answer, four side by side.
    const auto varying = [] {
        Program p;
        p.script[83] = {RunOutcome::ran, RunOutcome::out_of_memory};
        return p;
    };
    const auto side_by_side = [](unsigned max_runs) {
        rs::MaxBatchPlanOptions o = options(1 * GiB, {4, 8}, max_runs);
        o.repeats = 2;
        o.parallel = 4;
        o.max_runs_given = true;  // the ladder's runs count
        return o;
    };
    rs::MaxBatchPlanner planner(side_by_side(20));
    const Drive d = drive(planner, varying(), 1 * GiB);
    const rs::SettingFacts f = planner.facts("", std::nullopt);
    INFO(d.steps);
    CHECK(f.varies == std::vector<std::uint64_t>{83});
    CHECK(f.oom_below.empty());  // varying is not "fails every time"
    CHECK(f.ran == 82);
    CHECK(d.steps.back() == "done 82 ran");
    REQUIRE(f.tally(82) != nullptr);
    CHECK(f.tally(82)->passes >= 2);
    CHECK(planner.state().variance_margin == 664 * MiB);  // 83 x 8 MiB, the largest request, a segment of its own
    // The batches between the margin's answer and 83 were bisected, two runs each.
    // beside 62's repeat (the answer the margin left), which goes out with the first.
    CHECK(std::find(d.steps.begin(), d.steps.end(), "runs: 62 repeat | 72 bisection | 72 repeat") != d.steps.end());
    CHECK(planner.runs() <= 20);
    // Under a budget too small for the bisection: the largest batch that ran every time so far.
    rs::MaxBatchPlanner cut(side_by_side(8));
    const Drive e = drive(cut, varying(), 1 * GiB);
    CHECK(cut.runs() <= 8);
    const rs::SettingFacts g = cut.facts("", std::nullopt);
    REQUIRE(e.last.answer);
    CHECK(g.tally(*e.last.answer) != nullptr);
    CHECK(g.tally(*e.last.answer)->always_ran());
}

TEST_CASE("max-batch plan: an OOM below the answer is run again: failing every time is not monotone, running the second time varies") {
    Program p;
    p.spike_at = {337, 338};
    p.spike_mib = 200;
    p.script[337] = {RunOutcome::out_of_memory, RunOutcome::ran};  // 338 fails every time
    rs::MaxBatchPlanOptions o = options(4 * GiB);
    o.repeats = 2;
    rs::MaxBatchPlanner planner(o);
    const Drive d = drive(planner, p, 4 * GiB);
    CHECK(std::find(d.steps.begin(), d.steps.end(), "runs: 337 repeat | 338 repeat") != d.steps.end());
    CHECK(d.steps.back() == "done 339 ran");
    const rs::SettingFacts f = planner.facts("", 339);
    CHECK(f.oom_below == std::vector<std::uint64_t>{338});
    CHECK(f.varies == std::vector<std::uint64_t>{337});
    CHECK(f.all_below_ran == 336);
}

TEST_CASE("max-batch plan: the facts count each batch's runs; a repeat is one recording for the model") {
    rs::BatchRun a{80, "", RunReason::at_answer, RunOutcome::ran, 0, 1, true};
    rs::BatchRun b{80, "", RunReason::repeat, RunOutcome::out_of_memory, 0, 2, true};
    rs::BatchRun c{70, "", RunReason::near_answer, RunOutcome::ran, 0, 3, true};
    const rs::SettingFacts f = rs::setting_facts({&a, &b, &c}, 80);
    CHECK(f.ran == 70);
    CHECK(f.ran_out == 80);
    CHECK_FALSE(f.answer_ran);
    CHECK(f.varies == std::vector<std::uint64_t>{80});
    REQUIRE(f.tally(80) != nullptr);
    CHECK(f.tally(80)->runs == 2);
    CHECK(f.tally(80)->passes == 1);
    CHECK(f.tally(80)->varies());
}

TEST_CASE("max-batch plan: the ladder: within --max-runs where given, none with --no-refine, multiples of --multiple-of, under the limit") {
    // --max-runs given: the ladder's runs count, and leave the budget as it was.
    rs::MaxBatchPlanOptions o = options(1 * GiB, {4, 8}, 10);
    o.parallel = 8;
    o.max_runs_given = true;
    rs::MaxBatchPlanner given(o);
    const Drive d = drive(given, Program{}, 1 * GiB);
    INFO(d.steps);
    CHECK(d.steps.front() == "runs: 4 first | 8 first | 16 ladder | 32 ladder | 64 ladder | 128 ladder | 256 ladder | 512 ladder");
    CHECK(given.state().max_runs == 10);
    CHECK(given.runs() <= 10);
    CHECK(d.steps.back() == "done 83 ran");
    // --no-refine: the first recordings only.
    o.refine = false;
    rs::MaxBatchPlanner bare(o);
    CHECK(drive(bare, Program{}, 1 * GiB).steps.front() == "runs: 4 first | 8 first");
    // --multiple-of 8: doubling keeps the multiples.
    o.refine = true;
    o.max_runs_given = false;
    o.first_batches = {8, 16};
    o.search.step = 8;
    o.parallel = 4;
    rs::MaxBatchPlanner multiples(o);
    const Drive m = drive(multiples, Program{}, 1 * GiB);
    CHECK(m.steps.front() == "runs: 8 first | 16 first | 32 ladder | 64 ladder");
    CHECK(m.steps.back() == "done 80 ran");
    // Never above the search's limit.
    o.search.step = 1;
    o.first_batches = {4, 8};
    o.search.limit = 40;
    rs::MaxBatchPlanner limited(o);
    CHECK(drive(limited, Program{}, 1 * GiB).steps.front() == "runs: 4 first | 8 first | 16 ladder | 32 ladder");
    // After halving (8 and 4 ran out of memory), no ladder: the slots go to the halved batches alone.
    Program heavy = spiked_from(4, 2000);
    o.search.limit = 1u << 20;
    o.parallel = 8;
    rs::MaxBatchPlanner halved(o);
    const Drive h = drive(halved, heavy, 1 * GiB);
    REQUIRE(h.steps.size() >= 3);
    CHECK(h.steps[2] == "runs: 2 first");
}

TEST_CASE("max-batch plan: a launcher's program, one run at a time until its ranks are known, then as the slots allow") {
    rs::MaxBatchPlanOptions o = options(1 * GiB);
    o.repeats = 2;
    o.parallel = 1;  // the command's start: a launcher's ranks not known
    rs::MaxBatchPlanner planner(o);
    Program rank0, rank1;
    rank1.rank_share = 2;
    // After the first step the slots allow 8: the refinement goes out with the check at its first answer.
    const Drive d = drive(planner, Ranks{{rank0, rank1}, {"2 ranks"}}, 1 * GiB, 8);
    INFO(d.steps);
    REQUIRE(d.steps.size() >= 3);
    CHECK(d.steps[0] == "runs: 4 first | 8 first");
    CHECK(d.steps[2] == "runs: 21 near the answer | 31 near the answer | 41 check at the answer | 41 repeat | 42 the next batch | 40 below the answer | "
                        "39 below the answer | 37 below the answer");
    CHECK(d.steps.back() == "done 41 ran");
}

// A DDP MLP's answer under one NCCL rank rested on one run (its repeat cut
// by the default budget) and ran out of memory 2 times in 8 when run again.
TEST_CASE("max-batch plan: without --max-runs an answer's repeats come on top of a spent budget (twice the repeats at most); with it they are cut") {
    const auto planned = [](bool given) {
        rs::MaxBatchPlanOptions o = options(1 * GiB, {4, 8}, 5);
        o.repeats = 2;
        o.parallel = 1;
        o.max_runs_given = given;
        return o;
    };
    rs::MaxBatchPlanner grown(planned(false));
    const Drive d = drive(grown, Program{}, 1 * GiB);
    INFO(d.steps);
    CHECK(d.steps.back() == "done 83 ran");
    CHECK_FALSE(grown.state().repeats_cut);
    CHECK(grown.state().max_runs == 6);  // the budget in force, grown by the repeat
    CHECK(grown.runs() == 6);
    rs::MaxBatchPlanner cut(planned(true));
    const Drive c = drive(cut, Program{}, 1 * GiB);
    INFO(c.steps);
    CHECK(c.steps.back() == "done 83 ran");
    CHECK(cut.state().repeats_cut);
    CHECK(cut.state().max_runs == 5);
    CHECK(cut.runs() == 5);
    // A budget far too small grows by twice the repeats at most.
    rs::MaxBatchPlanOptions tight = planned(false);
    tight.max_runs = 2;
    Program varying;
    varying.script[83] = {RunOutcome::ran, RunOutcome::out_of_memory};
    rs::MaxBatchPlanner bounded(tight);
    drive(bounded, varying, 1 * GiB);
    CHECK(bounded.state().max_runs <= 2 + 4);
}
