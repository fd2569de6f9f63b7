// gpumem reuse-sim tune --confirm: the program run under the recording hook
// (record_run.hpp) under the tuner's best setting: it compares the real run's torch.cuda.memory_stats() (and the OOMs the program saw)
// with the prediction, and after a run with an OOM tunes again from that
// run's own recording (kept beside the trace) and runs the best untried
// setting that fits there, until one runs without an OOM
// (base/record_plan.hpp's rules).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/terminal.hpp"
#include "core/cuda_devices.hpp"
#include "reuse_sim/reuse_sim_tune.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

RunFigures predicted_figures(const rs::TuneOutcome& o) {
    return {o.ooms, o.peak_reserved, o.retries, o.device_allocs, o.device_frees, std::nullopt};
}

// A path as the program sees it whatever directory it changes to.
std::string absolute_path(const std::string& path) {
    if (!path.empty() && path.front() == '/') return path;
    std::string cwd(4096, '\0');
    if (::getcwd(cwd.data(), cwd.size()) == nullptr) throw Error("--confirm: cannot read the working directory");
    return std::string(cwd.c_str()) + "/" + path;
}

std::vector<std::string_view> grid_keys() { return alloc_conf_grid_keys(); }

// The process of a real run whose figures answer for the trace: with
// several ranks, the one the trace was recorded from (`traced`, from its
// file name), else rank 0, else (no rank named) the first that wrote
// figures; none when the traced rank did not record. Each rank's
// allocations differ (rank 0 often holds more), so another rank's peak would
// judge the prediction against the wrong program.
// Of several processes without ranks (or of one rank), the one in the
// trace's place: its file name's .procN, else the first to use CUDA.
const RecordedProcess* compared_process(const std::vector<const RecordedProcess*>& recorded, std::optional<unsigned> traced,
                                        unsigned traced_order) {
    const unsigned want = traced.value_or(0);
    const auto in_place = [traced_order](const RecordedProcess* p) { return p->order.value_or(1) == traced_order; };
    for (const RecordedProcess* p : recorded)
        if (p->rank == want && in_place(p)) return p;
    if (!traced) {
        for (const RecordedProcess* p : recorded)
            if (!p->rank && in_place(p)) return p;
        if (recorded.size() == 1 && traced_order == 1) return recorded.front();  // one process: it is the program
    }
    return nullptr;
}

std::string tuning_name(std::size_t chosen_by) {
    return chosen_by == 0 ? std::string("the trace's tuning") : "the tuning of run " + std::to_string(chosen_by) + "'s recording";
}

// One real run under the tuned setting of `row` (ranked `rank` by the
// tuning of `chosen_by`), recorded beside the trace.
ConfirmRun confirm_one(const TuneRequest& q, const rs::TuneRow& row, std::size_t rank, std::size_t chosen_by, const ConfirmResults& c,
                       Session& session) {
    ConfirmRun run;
    run.rank = rank;
    run.outcome.setting = rs::alloc_conf(row.point.options);
    run.outcome.predicted = predicted_figures(row.outcome);
    run.outcome.chosen_by = chosen_by;
    run.alloc_conf = merge_alloc_conf(c.user_alloc_conf.value_or(""), run.outcome.setting, grid_keys()).conf;
    const std::size_t number = c.runs.size() + 1;
    RecordSettings settings = q.confirm->settings;
    // No cap given: the runs get the one the recording ran under (its
    // statistics'), as the replay does; an uncapped run finds no OOM and
    // would confirm any setting.
    if (q.setup.capacity_from_recording && !settings.capacity && !settings.memory_fraction) settings.capacity = q.setup.capacity;
    settings.file = absolute_path(confirm_file_name(q.input.trace.value_or("-"), number));
    say_on_stderr(session, "--confirm: run " + std::to_string(number) + " of at most " + std::to_string(c.candidates) + " (" +
                     (run.alloc_conf.empty() ? std::string("PyTorch's defaults") : "PYTORCH_CUDA_ALLOC_CONF=" + run.alloc_conf) +
                     ", rank " + std::to_string(rank) + " of " + tuning_name(chosen_by) + ")" +
                     (c.runs.empty() ? std::string() : ", the last took " + format_decimal(c.runs.back().wall_seconds, 1) + " s") +
                     "; recorded in " + settings.file);
    process::ChildOptions style;
    style.own_group = true;
    // Under both names: torch 2.9 and later read PYTORCH_ALLOC_CONF first,
    // older torch only PYTORCH_CUDA_ALLOC_CONF; either way it reads this.
    style.environment.push_back(std::string(kAllocConfVariable) + "=" + run.alloc_conf);
    style.environment.push_back(std::string(kCudaAllocConfVariable) + "=" + run.alloc_conf);
    const ChildRun child = run_recorded(q.confirm->command, settings, style);
    run.wall_seconds = child.wall_seconds;
    run.exit_status = child.exit_status;
    if (child.interrupted) {
        run.outcome.note = "interrupted";
        return run;
    }
    const std::vector<const RecordedProcess*> recorded = child.recorded();
    if (recorded.empty()) {
        run.outcome.note = nothing_recorded_reason(child) + ", exit status " + std::to_string(child.exit_status);
        return run;
    }
    const std::optional<unsigned> traced = q.input.trace ? rank_of_file_name(*q.input.trace) : std::nullopt;
    const unsigned traced_order = q.input.trace ? process_of_file_name(*q.input.trace).value_or(1) : 1;
    const RecordedProcess* compared = compared_process(recorded, traced, traced_order);
    if (compared == nullptr) {
        run.outcome.note = (traced ? "rank " + std::to_string(*traced) + (traced_order > 1 ? ", " : "") : std::string()) +
                           (traced_order > 1 || !traced ? "process " + std::to_string(traced_order) : std::string()) +
                           ", the trace's, wrote no memory_stats() (its file name says which it was recorded from)";
        return run;
    }
    run.process_rank = compared->rank;
    if (recorded.size() > 1 || traced_order > 1) {
        run.process_order = compared->order.value_or(1);
        run.process_pid = compared->pid;
    }
    run.recording = compared->snapshot;
    run.stats = compared->stats;
    run.outcome.real = read_figures(*compared->stats, run.outcome.note);
    if (run.outcome.real) run.outcome.held = prediction_held(run.outcome.predicted, *run.outcome.real);
    return run;
}

std::string figures_line(const ConfirmRun& run) {
    if (!run.outcome.real) return "no figures: " + run.outcome.note;
    std::string of_rank = run.process_rank ? "rank " + std::to_string(*run.process_rank) : "";
    if (run.process_order)
        of_rank += (of_rank.empty() ? "" : ", ") + std::string("process ") + std::to_string(*run.process_order) + ", pid " +
                   std::to_string(run.process_pid.value_or(0));
    if (!of_rank.empty()) of_rank = " (" + of_rank + ")";
    const RunFigures& p = run.outcome.predicted;
    const RunFigures& r = *run.outcome.real;
    const std::string real = r.program_ooms ? std::to_string(*r.program_ooms) + " seen by the program (allocator " + std::to_string(r.ooms) + ")"
                                            : std::to_string(r.ooms) + " (the allocator's)";
    return "OOMs predicted " + std::to_string(p.ooms) + ", real " + real + "; peak reserved predicted " +
           rs::group_digits(p.peak_reserved) + " B, real " + rs::group_digits(r.peak_reserved) + " B; " +
           (run.outcome.held ? "the prediction held" : "the prediction did NOT hold") + of_rank;
}

// The best-ranked setting of `tune` not yet tried whose replay had no OOM.
std::optional<std::size_t> next_setting(const TuneRanking& tune, const std::vector<std::string>& tried) {
    for (std::size_t i = 0; i < tune.rows.size(); ++i) {
        if (tune.rows[i].outcome.ooms != 0) continue;
        if (std::find(tried.begin(), tried.end(), rs::alloc_conf(tune.rows[i].point.options)) == tried.end()) return i;
    }
    return std::nullopt;
}

// The cap a run ran under: its recording's cap in force (gpumem's, or the
// program's own), else the replay's.
std::uint64_t run_capacity(const TuneRequest& q, const ConfirmRun& run) {
    if (run.stats)
        if (const std::optional<RecordingStats> stats = read_recording_stats(*run.stats); stats && stats->cap)
            return stats->cap->call.allowed_memory_maximum;
    return q.setup.capacity;
}

// The runs' loop; `c.stop` says how it ended.
void confirm_loop(const TuneRequest& q, TuneResults& r, ConfirmResults& c, Session& session) {
    std::vector<std::string> tried;
    // The latest tuning: the trace's, then that of each run whose program saw an OOM.
    const auto latest = [&]() -> const TuneRanking& { return c.tunings.empty() ? *r.ranking : c.tunings.back().tune; };
    const auto latest_run = [&] { return c.tunings.empty() ? std::size_t{0} : c.tunings.back().run; };
    std::optional<std::size_t> row = 0;
    for (std::size_t n = 1; n <= c.candidates; ++n) {
        throw_if_interrupted();
        const rs::TuneRow& chosen = latest().rows[*row];
        tried.push_back(rs::alloc_conf(chosen.point.options));
        c.runs.push_back(confirm_one(q, chosen, *row + 1, latest_run(), c, session));
        const ConfirmRun& run = c.runs.back();
        if (run.outcome.note == "interrupted") throw InterruptedError();
        say_on_stderr(session, "--confirm: run " + std::to_string(n) + ": " + figures_line(run));
        if (!c.cap && run.stats) {
            const std::uint64_t cap = run_capacity(q, run);
            if (cap != rs::kUnlimited) c.cap = cap;
        }
        if (confirm_converged(run.outcome)) {
            c.converged = true;
            c.stop = ConfirmStop::converged;
            return;
        }
        // The program saw an OOM (or wrote no figures): its own recording,
        // which holds what the first never reached, is tuned again.
        if (run.recording) {
            const std::uint64_t capacity = run_capacity(q, run);
            say_on_stderr(session, "--confirm: tuning run " + std::to_string(n) + "'s recording (" + *run.recording + ") under " +
                             (capacity == rs::kUnlimited ? std::string("no cap") : "the cap " + exact_size_text(capacity)));
            try {
                c.tunings.push_back({n, capacity, tune_recording(q, *run.recording, capacity)});
            } catch (const InterruptedError&) {
                throw;
            } catch (const Error& e) {
                say_on_stderr(session, "--confirm: run " + std::to_string(n) + "'s recording could not be tuned: " + e.what());
            }
        }
        if (n == c.candidates) {
            c.stop = ConfirmStop::runs_spent;
            return;
        }
        row = next_setting(latest(), tried);
        if (!row) {
            c.stop = ConfirmStop::nothing_left;
            return;
        }
    }
    c.stop = ConfirmStop::runs_spent;
}

}  // namespace

void confirm_tune(const TuneRequest& q, TuneResults& r, Session& session) {
    ConfirmResults& c = r.confirm.emplace();
    c.candidates = r.ranking->rows.empty() ? 0 : q.confirm->candidates;
    // The user's settings as the program's torch reads them (its version
    // from the recording's statistics, when the trace has them).
    const auto env = [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        return value ? std::optional<std::string>(value) : std::nullopt;
    };
    std::optional<std::string_view> torch_version;
    if (q.input.recording && q.input.recording->torch_version) torch_version = *q.input.recording->torch_version;
    const AllocConfRead user = read_alloc_conf(env(kAllocConfVariable), env(kCudaAllocConfVariable), torch_version);
    if (user.value && !user.value->empty()) {
        c.user_alloc_conf = user.value;
        c.user_alloc_conf_variable = user.variable;
    }
    if (!user.ignored.empty())
        say_on_stderr(session, "--confirm: " + user.ignored + " is set but the program's torch" +
                         (torch_version ? " (" + std::string(*torch_version) + ")" : std::string()) + " does not read it" +
                         (user.value ? ": it reads " + user.variable : std::string()));
    c.merged = merge_alloc_conf(c.user_alloc_conf.value_or(""), "", grid_keys());
    if (!c.merged.kept.empty())
        say_on_stderr(session, "--confirm: kept from your " + c.user_alloc_conf_variable.value_or(std::string(kCudaAllocConfVariable)) +
                         " (the tuner does not set them): " + join(c.merged.kept, ","));
    if (c.candidates == 0) {
        c.stop = ConfirmStop::nothing_left;
        return;
    }
    try {
        confirm_loop(q, r, c, session);
    } catch (const InterruptedError&) {
        // What was measured is kept: the report of the runs that ended.
        c.interrupted = true;
        c.stop = ConfirmStop::interrupted;
        throw;
    }
}

std::vector<std::string> confirm_answer_lines(const TuneResults& r) {
    const ConfirmResults& c = *r.confirm;
    std::vector<ConfirmRunOutcome> outcomes;
    for (const ConfirmRun& run : c.runs) outcomes.push_back(run.outcome);
    ConfirmEnding ending;
    ending.stop = c.stop;
    ending.candidates = c.candidates;
    ending.cap = c.cap;
    // What would fit instead: the latest tuning's best setting and its search.
    const TuneRanking* latest = c.tunings.empty() ? (r.ranking ? &*r.ranking : nullptr) : &c.tunings.back().tune;
    ending.last_tuning = c.tunings.empty() ? 0 : c.tunings.back().run;
    if (latest && !latest->rows.empty()) {
        ending.best_setting = rs::alloc_conf(latest->rows.front().point.options);
        ending.would_fit = latest->search.smallest;
        ending.not_searched = latest->search.not_searched;
    }
    return confirm_answer(outcomes, ending);
}

std::string confirm_answer_text(const TuneResults& r) { return join(confirm_answer_lines(r), "\n"); }

}  // namespace gpumem::cli
