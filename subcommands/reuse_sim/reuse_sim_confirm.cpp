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

std::string process_line(const RecordedProcess& p) {
    std::string line = "recorded " + *p.snapshot + " (" + rs::group_digits(p.events) + " events";
    if (p.rank) line += ", rank " + std::to_string(*p.rank);
    if (!p.why.empty() && p.why != "exit") line += ", ended by " + p.why;
    return line + "); torch.cuda.memory_stats() in " + p.stats.value_or("?");
}

// A real run's figures from the statistics file the hook wrote.
std::optional<RunFigures> read_figures(const std::string& stats_path, std::string& note) {
    std::ifstream in(stats_path);
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    if (!doc.is_object() || !doc.contains("memory_stats") || !doc["memory_stats"].is_object()) {
        note = stats_path + ": no memory_stats";
        return std::nullopt;
    }
    const nlohmann::json& s = doc["memory_stats"];
    auto count = [&s](const char* key) { return s.contains(key) && s[key].is_number() ? s[key].get<std::uint64_t>() : 0; };
    RunFigures f;
    f.ooms = count("num_ooms");
    f.peak_reserved = count("reserved_bytes.all.peak");
    f.retries = count("num_alloc_retries");
    f.device_allocs = count("num_device_alloc");
    f.device_frees = count("num_device_free");
    return f;
}

RunFigures predicted_figures(const rs::TuneOutcome& o) {
    return {o.ooms, o.peak_reserved, o.retries, o.device_allocs, o.device_frees};
}

// A private directory for the real runs' snapshots, removed afterwards.
class ScratchDirectory {
public:
    ScratchDirectory() {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/gpumem-confirm-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) throw Error(pattern + ": cannot create a directory for the real runs");
        path_ = pattern;
    }
    ~ScratchDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ScratchDirectory(const ScratchDirectory&) = delete;
    ScratchDirectory& operator=(const ScratchDirectory&) = delete;
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

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
const RecordedProcess* compared_process(const std::vector<const RecordedProcess*>& recorded, std::optional<unsigned> traced) {
    const unsigned want = traced.value_or(0);
    for (const RecordedProcess* p : recorded)
        if (p->rank == want) return p;
    if (!traced || (recorded.size() == 1 && !recorded.front()->rank)) return recorded.front();  // one process: it is the program
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
                     ": PYTORCH_CUDA_ALLOC_CONF=" + (run.alloc_conf.empty() ? "(unset)" : run.alloc_conf));
    ChildStyle style;
    style.own_group = true;
    style.environment.push_back("PYTORCH_CUDA_ALLOC_CONF=" + run.alloc_conf);
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
    const RecordedProcess* compared = compared_process(recorded, traced);
    if (compared == nullptr) {
        run.outcome.note = "rank " + std::to_string(traced.value_or(0)) +
                           ", the trace's, wrote no memory_stats() (its file name says which rank it was recorded from)";
        return run;
    }
    run.process_rank = compared->rank;
    run.outcome.real = read_figures(*compared->stats, run.outcome.note);
    if (run.outcome.real) run.outcome.held = prediction_held(run.outcome.predicted, *run.outcome.real);
    return run;
}

std::string figures_line(const ConfirmRun& run) {
    if (!run.outcome.real) return "no figures: " + run.outcome.note;
    const std::string of_rank = run.process_rank ? " (rank " + std::to_string(*run.process_rank) + ")" : "";
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
    for (const RecordedProcess* p : recorded) say(session, process_line(*p));
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
    if (const char* user = std::getenv("PYTORCH_CUDA_ALLOC_CONF"); user != nullptr && *user != '\0') c.user_alloc_conf = user;
    c.merged = merge_alloc_conf(c.user_alloc_conf.value_or(""), "", grid_keys());
    if (!c.merged.kept.empty())
        say(session, "--confirm: kept from your PYTORCH_CUDA_ALLOC_CONF (the tuner does not set them): " + join(c.merged.kept, ","));
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
