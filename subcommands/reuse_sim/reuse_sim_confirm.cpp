// gpumem reuse-sim record and tune --confirm: the program run under the
// recording hook (record_run.hpp). --record runs it once and says on stderr
// what it wrote; --confirm runs it under the tuner's best setting, compares
// the real run's torch.cuda.memory_stats() (and the OOMs the program saw)
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
#include "reuse_sim/reuse_sim.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// gpumem's own lines among the program's: few, and marked; within stderr's
// width, but an error, which stays one line.
void say(const Session& session, const std::string& line) {
    const std::string text = line.rfind("error: ", 0) == 0 ? line : stderr_text("gpumem: ", line, session.output().screen);
    if (!session.globals().quiet) std::fprintf(stderr, "gpumem: %s\n", text.c_str());
}

// The allocator settings the process ran under, as its torch read them.
std::string alloc_conf_text(const RecordedProcess& p) {
    const AllocConfRead read = read_alloc_conf(p.alloc_conf, p.cuda_alloc_conf, p.torch_version);
    if (!read.value) return read.ignored.empty() ? std::string() : ", " + read.ignored + " set but not read by torch " + p.torch_version.value_or("");
    std::string text = ", under " + read.variable + "=" + *read.value;
    if (!read.ignored.empty()) text += "; " + read.ignored + " set too, not read";
    return text;
}

std::string process_line(const RecordedProcess& p, std::size_t processes) {
    std::string line = "recorded " + *p.snapshot + " (" + rs::group_digits(p.events) + " events";
    if (p.rank) line += ", rank " + std::to_string(*p.rank);
    // Several processes: which one wrote it (the order they first used CUDA).
    if (processes > 1) line += ", process " + std::to_string(p.order.value_or(1)) + ", pid " + std::to_string(p.pid);
    if (!p.why.empty() && p.why != "exit") line += ", ended by " + p.why;
    line += alloc_conf_text(p);
    return line + "); torch.cuda.memory_stats() in " + p.stats.value_or("?");
}

// The program's own set_per_process_memory_fraction after gpumem's cap:
// the recording ran under the program's, and its statistics say so.
std::optional<std::string> replaced_cap_line(const RecordedProcess& p) {
    std::uint32_t device = 0;
    for (const MemoryFractionCall& c : p.fraction_calls)
        if (c.by_gpumem) device = c.device;
    const std::optional<CapInForce> cap = cap_in_force(p.fraction_calls, device);
    if (!cap || !cap->replaced_gpumem) return std::nullopt;
    return "the program replaced gpumem's cap (" + exact_size_text(cap->gpumem_allowed) + ") with its own: " +
           "set_per_process_memory_fraction(" + format_decimal(cap->call.fraction, 4) + ") on device " + std::to_string(cap->call.device) +
           ", " + exact_size_text(cap->call.allowed_memory_maximum) + "; " + *p.snapshot + " was recorded under the program's, as " +
           stats_file_name(*p.snapshot) + " says";
}

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
ConfirmRun confirm_one(const ReuseSimRequest& q, const rs::TuneRow& row, std::size_t rank, std::size_t chosen_by, const ConfirmResults& c,
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
    if (q.capacity_from_recording && !settings.capacity && !settings.memory_fraction) settings.capacity = q.capacity;
    settings.file = absolute_path(confirm_file_name(q.input.trace.value_or("-"), number));
    say(session, "--confirm: run " + std::to_string(number) + " of at most " + std::to_string(c.candidates) + " (" +
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

}  // namespace

void record_reuse_sim(const ReuseSimRequest& q, ReuseSimResults& r, Session& session) {
    r.record = run_recorded(q.record->command, q.record->settings, process::ChildOptions{});
    const ChildRun& run = *r.record;
    session.set_exit_status(run.exit_status);
    const std::vector<const RecordedProcess*> recorded = run.recorded();
    std::vector<std::string> written;
    for (const RecordedProcess* p : recorded) {
        say(session, process_line(*p, recorded.size()));
        if (const std::optional<std::string> replaced = replaced_cap_line(*p)) say(session, *replaced);
        // The hook gives each process its own file; two claiming one would be a bug to see, not a file lost unsaid.
        if (std::find(written.begin(), written.end(), *p->snapshot) != written.end())
            say(session, "warning: " + *p->snapshot + " was written by more than one process; the last one's is kept");
        written.push_back(*p->snapshot);
    }
    if (recorded.size() > 1) say(session, std::to_string(recorded.size()) + " processes recorded: " + join(written, ", "));
    if (!recorded.empty()) return;
    // Nothing recorded: the program's own failure keeps its status; a
    // program that succeeded without recording anything is gpumem's failure.
    if (run.exit_status != 0) {
        // A program that never started is gpumem's error to say, as one.
        say(session, (run.start_error ? "error: " : "") + nothing_recorded_reason(run));
        return;
    }
    throw Error(nothing_recorded_reason(run));
}

namespace {

// The best-ranked setting of `tune` not yet tried whose replay had no OOM.
std::optional<std::size_t> next_setting(const TuneResults& tune, const std::vector<std::string>& tried) {
    for (std::size_t i = 0; i < tune.rows.size(); ++i) {
        if (tune.rows[i].outcome.ooms != 0) continue;
        if (std::find(tried.begin(), tried.end(), rs::alloc_conf(tune.rows[i].point.options)) == tried.end()) return i;
    }
    return std::nullopt;
}

// The cap a run ran under: its recording's cap in force (gpumem's, or the
// program's own), else the replay's.
std::uint64_t run_capacity(const ReuseSimRequest& q, const ConfirmRun& run) {
    if (run.stats)
        if (const std::optional<RecordingStats> stats = read_recording_stats(*run.stats); stats && stats->cap)
            return stats->cap->call.allowed_memory_maximum;
    return q.capacity;
}

// The runs' loop; `c.stop` says how it ended.
void confirm_loop(const ReuseSimRequest& q, ReuseSimResults& r, ConfirmResults& c, Session& session) {
    std::vector<std::string> tried;
    // The latest tuning: the trace's, then that of each run whose program saw an OOM.
    const auto latest = [&]() -> const TuneResults& { return c.tunings.empty() ? *r.tune : c.tunings.back().tune; };
    const auto latest_run = [&] { return c.tunings.empty() ? std::size_t{0} : c.tunings.back().run; };
    std::optional<std::size_t> row = 0;
    for (std::size_t n = 1; n <= c.candidates; ++n) {
        throw_if_interrupted();
        const rs::TuneRow& chosen = latest().rows[*row];
        tried.push_back(rs::alloc_conf(chosen.point.options));
        c.runs.push_back(confirm_one(q, chosen, *row + 1, latest_run(), c, session));
        const ConfirmRun& run = c.runs.back();
        if (run.outcome.note == "interrupted") throw InterruptedError();
        say(session, "--confirm: run " + std::to_string(n) + ": " + figures_line(run));
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
            say(session, "--confirm: tuning run " + std::to_string(n) + "'s recording (" + *run.recording + ") under " +
                             (capacity == rs::kUnlimited ? std::string("no cap") : "the cap " + exact_size_text(capacity)));
            try {
                c.tunings.push_back({n, capacity, tune_recording(q, *run.recording, capacity)});
            } catch (const InterruptedError&) {
                throw;
            } catch (const Error& e) {
                say(session, "--confirm: run " + std::to_string(n) + "'s recording could not be tuned: " + e.what());
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

void confirm_reuse_sim(const ReuseSimRequest& q, ReuseSimResults& r, Session& session) {
    ConfirmResults& c = r.confirm.emplace();
    c.candidates = r.tune->rows.empty() ? 0 : q.confirm->candidates;
    // The user's settings as the program's torch reads them (its version
    // from the recording's statistics, when the trace has them).
    const auto env = [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        return value ? std::optional<std::string>(value) : std::nullopt;
    };
    std::optional<std::string_view> torch_version;
    if (q.recording && q.recording->torch_version) torch_version = *q.recording->torch_version;
    const AllocConfRead user = read_alloc_conf(env(kAllocConfVariable), env(kCudaAllocConfVariable), torch_version);
    if (user.value && !user.value->empty()) {
        c.user_alloc_conf = user.value;
        c.user_alloc_conf_variable = user.variable;
    }
    if (!user.ignored.empty())
        say(session, "--confirm: " + user.ignored + " is set but the program's torch" +
                         (torch_version ? " (" + std::string(*torch_version) + ")" : std::string()) + " does not read it" +
                         (user.value ? ": it reads " + user.variable : std::string()));
    c.merged = merge_alloc_conf(c.user_alloc_conf.value_or(""), "", grid_keys());
    if (!c.merged.kept.empty())
        say(session, "--confirm: kept from your " + c.user_alloc_conf_variable.value_or(std::string(kCudaAllocConfVariable)) +
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

std::vector<std::string> confirm_answer_lines(const ReuseSimResults& r) {
    const ConfirmResults& c = *r.confirm;
    std::vector<ConfirmRunOutcome> outcomes;
    for (const ConfirmRun& run : c.runs) outcomes.push_back(run.outcome);
    ConfirmEnding ending;
    ending.stop = c.stop;
    ending.candidates = c.candidates;
    ending.cap = c.cap;
    // What would fit instead: the latest tuning's best setting and its search.
    const TuneResults* latest = c.tunings.empty() ? (r.tune ? &*r.tune : nullptr) : &c.tunings.back().tune;
    ending.last_tuning = c.tunings.empty() ? 0 : c.tunings.back().run;
    if (latest && !latest->rows.empty()) {
        ending.best_setting = rs::alloc_conf(latest->rows.front().point.options);
        ending.would_fit = latest->search.smallest;
        ending.not_searched = latest->search.not_searched;
    }
    return confirm_answer(outcomes, ending);
}

std::string confirm_answer_text(const ReuseSimResults& r) { return join(confirm_answer_lines(r), "\n"); }

std::vector<std::string_view> alloc_conf_grid_keys() {
    std::vector<std::string_view> keys;
    for (const Named<rs::KnobSpec>& knob : rs::kKnobs) keys.push_back(knob.value.conf_key);
    return keys;
}

}  // namespace gpumem::cli
