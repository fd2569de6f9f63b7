// gpumem reuse-sim --record and --confirm: the program run under the
// recording hook (record_run.hpp). --record runs it once and says on stderr
// what it wrote; --confirm runs it under the tuner's best settings, best
// first, comparing each real run's torch.cuda.memory_stats() with the
// prediction, until one holds (base/record_plan.hpp's rule).
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
#include "core/cuda_devices.hpp"
#include "reuse_sim/reuse_sim.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// gpumem's own lines among the program's: few, and marked.
void say(const Session& session, const std::string& line) {
    if (!session.globals().quiet) std::fprintf(stderr, "gpumem: %s\n", line.c_str());
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
    return {o.ooms, o.peak_reserved, o.retries, o.device_allocs, o.device_frees};
}

// The tuner's knobs: their keys in PYTORCH_CUDA_ALLOC_CONF are the grid's to set.
std::vector<std::string_view> grid_keys() {
    std::vector<std::string_view> keys;
    for (const Named<rs::KnobSpec>& knob : rs::kKnobs) keys.push_back(knob.value.conf_key);
    return keys;
}

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

// One real run under the tuned setting of `row` (ranked `rank`).
ConfirmRun confirm_one(const ReuseSimRequest& q, const rs::TuneRow& row, std::size_t rank, const ConfirmResults& c,
                       const std::string& dir, Session& session) {
    ConfirmRun run;
    run.rank = rank;
    run.outcome.setting = rs::alloc_conf(row.point.options);
    run.outcome.predicted = predicted_figures(row.outcome);
    run.alloc_conf = merge_alloc_conf(c.user_alloc_conf.value_or(""), run.outcome.setting, grid_keys()).conf;
    RecordSettings settings = q.confirm->settings;
    settings.file = dir + "/run" + std::to_string(c.runs.size() + 1) + ".pickle";
    say(session, "--confirm: real run " + std::to_string(c.runs.size() + 1) + " of at most " + std::to_string(c.candidates) +
                     ": PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF=" + (run.alloc_conf.empty() ? "(empty)" : run.alloc_conf));
    ChildStyle style;
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
    return "OOMs predicted " + std::to_string(p.ooms) + ", real " + std::to_string(r.ooms) + "; peak reserved predicted " +
           rs::group_digits(p.peak_reserved) + " B, real " + rs::group_digits(r.peak_reserved) + " B; " +
           (run.outcome.held ? "the prediction held" : "the prediction did NOT hold") + of_rank;
}

}  // namespace

void record_reuse_sim(const ReuseSimRequest& q, ReuseSimResults& r, Session& session) {
    r.record = run_recorded(q.record->command, q.record->settings, ChildStyle{});
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
        say(session, nothing_recorded_reason(run));
        return;
    }
    throw Error(nothing_recorded_reason(run));
}

void confirm_reuse_sim(const ReuseSimRequest& q, ReuseSimResults& r, Session& session) {
    ConfirmResults& c = r.confirm.emplace();
    c.candidates = std::min(q.confirm->candidates, r.tune->rows.size());
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
    const ScratchDirectory dir;
    for (std::size_t i = 0; i < c.candidates; ++i) {
        throw_if_interrupted();
        c.runs.push_back(confirm_one(q, r.tune->rows[i], i + 1, c, dir.path(), session));
        if (c.runs.back().outcome.note == "interrupted") {
            c.interrupted = true;
            throw InterruptedError();
        }
        say(session, "--confirm: real run " + std::to_string(c.runs.size()) + ": " + figures_line(c.runs.back()));
        if (confirm_should_stop(c.runs.back().outcome)) break;
    }
}

std::string confirm_answer_text(const ReuseSimResults& r) {
    std::vector<ConfirmRunOutcome> outcomes;
    for (const ConfirmRun& run : r.confirm->runs) outcomes.push_back(run.outcome);
    return confirm_answer(outcomes, r.confirm->candidates, r.confirm->interrupted);
}

}  // namespace gpumem::cli
