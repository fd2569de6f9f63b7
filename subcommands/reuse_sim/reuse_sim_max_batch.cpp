// gpumem reuse-sim max-batch: the largest batch that fits under a cap, from
// recordings of one program at several batches. What to run and when the
// answer is settled is the planner's (reuse_sim/max_batch_plan.hpp), the
// model and its search batch_model.hpp's; this file is the loop that asks
// the planner, makes the runs (through the recording hook, record_run.hpp,
// reading each run's torch.cuda.memory_stats() as tune --confirm does) or
// fits the model on the files, and gives back what came of them.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/cpu_affinity.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/terminal.hpp"
#include "cli/width.hpp"
#include "process/temporary_directory.hpp"
#include "base/run_slots.hpp"
#include "reuse_sim/reuse_sim_max_batch.hpp"
#include "reuse_sim/run_slots_here.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tune_replays.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// gpumem's own lines among the program's: few, and marked.
void say(const Session& session, const std::string& line) {
    if (!session.globals().quiet) std::fprintf(stderr, "gpumem: %s\n", stderr_text("gpumem: ", line, session.output().screen).c_str());
}

// One line per real run (batch, why, what it did, seconds): on stderr
// unless -q, and not under --json when stderr is no terminal (a script
// reading the document wants nothing else there).
bool show_runs(const Session& session) {
    if (session.globals().quiet) return false;
    return session.output().format != Format::json || session.output().screen.stderr_terminal;
}

// The program's output during a search: a dozen runs, most of them ending
// in an OOM's traceback, would bury gpumem's lines a screen at a time. So
// each run's goes to a file in the scratch folder, shown only where a run
// fails for another reason; with -v it comes as it is written (on gpumem's
// stderr: gpumem's stdout holds the report).
std::string run_log(const Session& session, const std::string& scratch, const std::string& name) {
    return session.globals().verbosity > 0 ? std::string() : scratch + "/" + name + ".log";
}

// The last lines of the output shown for a failed run.
constexpr std::size_t kFailedOutputLines = 15;

// A line of the program's output as a terminal showed it: the text after
// its last "\r" (a progress bar's final drawing), without escape sequences
// (colours) or other control bytes; a tab a space.
std::string shown_line(std::string_view line) {
    if (const std::size_t cr = line.rfind('\r'); cr != std::string_view::npos) line.remove_prefix(cr + 1);
    std::string out;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const auto c = static_cast<unsigned char>(line[i]);
        if (c == 0x1B && i + 1 < line.size() && line[i + 1] == '[') {
            for (i += 2; i < line.size() && !(line[i] >= '@' && line[i] <= '~');) ++i;
        } else if (c == '\t') {
            out += ' ';
        } else if (c >= 0x20 && c != 0x7F) {
            out += static_cast<char>(c);
        }
    }
    return out;
}

// A run that failed, not for want of memory: the end of its output on
// stderr (where gpumem's run lines go), each line within the terminal, and
// the whole of it moved out of the scratch folder, whose removal would
// take it. The words for the error or the run's note: where the output is.
std::string failed_run_output(const Session& session, const std::string& log) {
    if (log.empty()) return "its output is above";  // -v: it went by as it came
    std::ifstream in(log, std::ios::binary);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        lines.push_back(shown_line(line));
        if (lines.size() > kFailedOutputLines) lines.erase(lines.begin());
    }
    in.close();
    if (lines.empty()) return "it wrote no output";
    // The scratch folder is in $TMPDIR too: a rename, not a copy.
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = tmp && *tmp ? tmp : "/tmp";
    std::string kept = dir + "/gpumem-max-batch-run-XXXXXX.log";
    const int fd = ::mkstemps(kept.data(), 4);
    bool moved = false;
    if (fd >= 0) {
        ::close(fd);
        std::error_code error;
        std::filesystem::rename(log, kept, error);
        if (error) std::filesystem::copy_file(log, kept, std::filesystem::copy_options::overwrite_existing, error);
        moved = !error;
        if (!moved) std::filesystem::remove(kept, error);
    }
    const bool shown = show_runs(session);
    if (shown) {
        const std::size_t width = session.output().screen.stderr_columns;
        std::fprintf(stderr, "gpumem: max-batch: the end of the program's output:\n");
        for (const std::string& line : lines)  // indented 2, cut before the last column
            std::fprintf(stderr, "  %s\n", fit_columns(line, width - 3).c_str());
    }
    if (shown) return moved ? "the end of its output is above; all of it in " + kept : "the end of its output is above";
    return moved ? "its output is in " + kept : "its output could not be kept in " + dir;
}

// Another setting of the grid goes to the program's torch under both names
// (whichever its version reads), the user's other keys kept.
process::ChildOptions program_style(const std::string& output_file, const std::string& alloc_conf = "", bool set_conf = false) {
    process::ChildOptions style;
    style.own_group = true;
    style.output_file = output_file;
    if (set_conf) {
        style.environment.push_back(std::string(kAllocConfVariable) + "=" + alloc_conf);
        style.environment.push_back(std::string(kCudaAllocConfVariable) + "=" + alloc_conf);
    }
    return style;
}

// The user's allocator settings as the program's torch would read them
// (the newest torch's rule: the version is not known before a run).
std::string user_alloc_conf() {
    const auto env = [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        return value ? std::optional<std::string>(value) : std::nullopt;
    };
    return read_alloc_conf(env(kAllocConfVariable), env(kCudaAllocConfVariable), std::nullopt).value.value_or("");
}

// A run the search made: its recording (an OOM, on any rank, is no error:
// it says the answer is below its batch), or why it failed otherwise.
struct SearchRun {
    MaxBatchRecording rec;
    std::string failure;  // the error, where it failed otherwise than by an OOM
};

// The figures of every rank's first process (a rank's later processes, and
// the children of a process without a launcher, are its helpers) into
// `rec`: its file (or each rank's), OOMs and peak. False: none recorded.
bool read_ranks(const ChildRun& run, MaxBatchRecording& rec) {
    std::vector<const RecordedProcess*> processes;
    for (const RecordedProcess* p : run.recorded())
        if (p->order.value_or(1) == 1 && std::none_of(processes.begin(), processes.end(), [&](const RecordedProcess* q) { return q->rank == p->rank; }))
            processes.push_back(p);
    if (processes.empty()) return false;
    const bool ranked = processes.size() > 1 || processes.front()->rank.has_value();
    for (const RecordedProcess* p : processes) {
        std::string note;
        const std::optional<RunFigures> figures = p->stats ? read_figures(*p->stats, note) : std::nullopt;
        const std::uint64_t ooms = figures ? figures->ooms : 0;
        rec.ooms += ooms;
        if (figures) rec.peak_reserved = std::max(rec.peak_reserved, figures->peak_reserved);
        if (ranked) rec.ranks.push_back({p->rank.value_or(0), p->snapshot.value_or(""), ooms, 0});
    }
    std::sort(rec.ranks.begin(), rec.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
    rec.file = ranked ? rec.ranks.front().file : processes.front()->snapshot.value_or("");
    rec.outcome = rec.ooms > 0 ? rs::RunOutcome::out_of_memory : rs::RunOutcome::ran;
    return true;
}

// The end-to-end form: one recording of the program at the run's batch,
// under the recorded setting (`setting` empty) or another of the grid. A
// program of several ranks (torchrun) leaves a file per rank. Prepared
// here, run side by side with others, and read back by finish_run.
struct PreparedRun {
    RecordedRunRequest request;
    SearchRun made;
    std::string log;   // the program's output, where it goes to a file
    std::string knob;  // for the words of its error
};

PreparedRun prepare_run(const MaxBatchRequest& m, const rs::PlannedRun& planned, std::size_t number, const std::string& scratch,
                        const Session& session) {
    PreparedRun p;
    MaxBatchRecording& rec = p.made.rec;
    static_cast<rs::BatchRun&>(rec) = {planned.batch, planned.setting, planned.why, rs::RunOutcome::failed, 0, 0, true};
    const std::uint64_t batch = planned.batch;
    const std::string& setting = planned.setting;
    // -o FILE keeps the recorded setting's first run at each batch (a
    // repeat's batch has one already).
    rec.kept = m.keep.has_value() && setting.empty() && planned.why != rs::RunReason::repeat;
    RecordSettings settings = m.settings;
    const std::string own = "run" + std::to_string(number);
    settings.file = rec.kept ? batch_file_name(*m.keep, m.knob, batch) : scratch + "/" + own + batch_file_name("", m.knob, batch) + ".pickle";
    p.request.command = program_at(m.program, m.knob, batch);
    p.request.settings = settings;
    if (session.globals().verbosity > 0 && show_runs(session))
        say(session, "max-batch: running " + join(p.request.command, " ") + (setting.empty() ? "" : " under " + setting));
    p.log = run_log(session, scratch, own);
    p.knob = m.knob;
    p.request.options =
        program_style(p.log, setting.empty() ? "" : merge_alloc_conf(user_alloc_conf(), setting, alloc_conf_grid_keys()).conf, !setting.empty());
    return p;
}

void finish_run(PreparedRun& p, const ChildRun& run, Session& session) {
    MaxBatchRecording& rec = p.made.rec;
    rec.wall_seconds = run.wall_seconds;
    rec.exit_status = run.exit_status;
    const std::string at = "max-batch: the run at " + p.knob + " " + std::to_string(rec.batch);
    if (!read_ranks(run, rec)) {
        p.made.failure = at + " recorded nothing: " + nothing_recorded_reason(run) + ", exit status " + std::to_string(run.exit_status) +
                         (run.start_error ? "" : " (" + failed_run_output(session, p.log) + ")");
    } else if (!rec.ran_out_of_memory() && run.exit_status != 0) {
        rec.outcome = rs::RunOutcome::failed;
        p.made.failure = at + " failed otherwise than by an OOM, exit status " + std::to_string(run.exit_status) + " (" +
                         failed_run_output(session, p.log) + ")";
    }
}

// A launcher's program (torchrun and its kind): how many GPUs a run takes
// is known only once one ran.
bool launches_ranks(const std::vector<std::string>& program) {
    for (const std::string& word : program) {
        const std::string name = word.substr(word.rfind('/') + 1);
        if (name == "torchrun" || name == "torch.distributed.run" || name == "torch.distributed.launch" || name == "mpirun" ||
            name == "mpiexec" || name == "srun" || name == "deepspeed" || name == "accelerate")
            return true;
    }
    return false;
}

// The line a real run leaves on stderr.
void say_run(const Session& session, const MaxBatchSearchResults& x, const MaxBatchRequest& m, const MaxBatchRecording& rec) {
    if (!show_runs(session)) return;
    std::string what = rec.ran_out_of_memory() ? "ran out of memory" : "ran without an OOM";
    std::vector<std::string> out;
    for (const MaxBatchRecording::Rank& k : rec.ranks)
        if (k.ooms > 0) out.push_back(std::to_string(k.rank));
    if (!out.empty()) what += " on rank " + join(out, ", ");
    say(session, "max-batch: run " + std::to_string(x.runs()) + " of " + std::to_string(x.max_runs) + " at most: " + m.knob + " " +
                     std::to_string(rec.batch) + " (" + rs::run_reason_name(rec.why) + (rec.setting.empty() ? "" : ", under " + rec.setting) +
                     "): " + what + ", " + format_decimal(rec.wall_seconds, 1) + " s");
}

// --confirm: one real run at `batch` under the cap and the row's setting,
// its OOMs read back (on every rank).
MaxBatchConfirmRun confirm_at(const MaxBatchRequest& m, std::uint64_t batch, const std::string& setting, bool expect_oom, const std::string& scratch,
                              Session& session) {
    MaxBatchConfirmRun run;
    run.batch = batch;
    run.setting = setting;
    run.expect_oom = expect_oom;
    RecordSettings settings = m.settings;
    settings.file = scratch + "/confirm" + std::to_string(batch) + (setting.empty() ? "" : ".setting") + ".pickle";
    const std::vector<std::string> command = program_at(m.program, m.knob, batch);
    say(session, "--confirm: real run at " + m.knob + " " + std::to_string(batch) + (setting.empty() ? "" : " under " + setting) +
                     (expect_oom ? " (an OOM expected)" : " (no OOM expected)") + ": " + join(command, " "));
    const std::string log = run_log(session, scratch, "confirm" + std::to_string(batch) + (setting.empty() ? "" : ".setting"));
    const ChildRun child = run_recorded(
        command, settings,
        program_style(log, setting.empty() ? "" : merge_alloc_conf(user_alloc_conf(), setting, alloc_conf_grid_keys()).conf, !setting.empty()));
    run.exit_status = child.exit_status;
    run.wall_seconds = child.wall_seconds;
    if (child.interrupted) {
        run.note = "interrupted";
        return run;
    }
    // Every rank's figures: an OOM on any is the program's.
    for (const RecordedProcess* p : child.recorded()) {
        if (!p->stats) continue;
        std::string note;
        const std::optional<RunFigures> f = read_figures(*p->stats, note);
        if (!f) continue;
        if (!run.real) {
            run.real = f;
            continue;
        }
        run.real->ooms += f->ooms;
        run.real->peak_reserved = std::max(run.real->peak_reserved, f->peak_reserved);
    }
    if (!run.real) {
        run.note = nothing_recorded_reason(child) + ", exit status " + std::to_string(child.exit_status) +
                   (child.start_error ? "" : " (" + failed_run_output(session, log) + ")");
        return run;
    }
    // Failed without an OOM: why is in its output.
    if (child.exit_status != 0 && run.real->ooms == 0) run.note = failed_run_output(session, log);
    run.held = expect_oom ? run.real->ooms > 0 : run.real->ooms == 0 && child.exit_status == 0;
    return run;
}


// A run the search made already, as --confirm's: no run twice.
std::optional<MaxBatchConfirmRun> reuse_run(const MaxBatchSearchResults& x, std::uint64_t batch, const std::string& setting, bool expect_oom) {
    for (const MaxBatchRecording& rec : x.recordings) {
        if (!rec.recorded_here || rec.batch != batch || rec.setting != setting) continue;
        MaxBatchConfirmRun run;
        run.batch = batch;
        run.setting = setting;
        run.reused = true;
        run.expect_oom = expect_oom;
        run.exit_status = rec.exit_status;
        run.wall_seconds = rec.wall_seconds;
        RunFigures f;
        f.ooms = rec.ooms;
        f.peak_reserved = rec.peak_reserved;
        run.real = f;
        run.held = expect_oom ? rec.ran_out_of_memory() : !rec.ran_out_of_memory();
        return run;
    }
    return std::nullopt;
}

std::string confirm_run_line(const MaxBatchConfirmRun& run, const std::string& knob) {
    if (!run.real) return knob + " " + std::to_string(run.batch) + ": no figures: " + run.note;
    return knob + " " + std::to_string(run.batch) + (run.setting.empty() ? "" : " under " + run.setting) + ": " + std::to_string(run.real->ooms) +
           " OOMs, peak reserved " + rs::group_digits(run.real->peak_reserved) + " B, exit status " + std::to_string(run.exit_status) + "; " +
           (run.held ? "as predicted" : "NOT as predicted");
}


// What a confirm run says, as the planner takes it: an OOM on any rank, a
// run that completed without one, or a failure of another kind.
rs::RunOutcome outcome_of(const MaxBatchConfirmRun& run) {
    if (!run.real) return rs::RunOutcome::failed;
    if (run.real->ooms > 0) return rs::RunOutcome::out_of_memory;
    return run.exit_status == 0 ? rs::RunOutcome::ran : rs::RunOutcome::failed;
}

}  // namespace

std::vector<std::string> knob_placeholders(const std::vector<std::string>& program) {
    std::vector<std::string> names;
    for (const std::string& word : program)
        for (std::size_t open = word.find('{'); open != std::string::npos; open = word.find('{', open + 1)) {
            const std::size_t close = word.find('}', open);
            if (close == std::string::npos) break;
            const std::string name = word.substr(open + 1, close - open - 1);
            const bool identifier = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                                    std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
            if (identifier && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        }
    return names;
}

std::vector<std::string> program_at(const std::vector<std::string>& program, const std::string& knob, std::uint64_t value) {
    std::vector<std::string> words;
    const std::string placeholder = "{" + knob + "}", number = std::to_string(value);
    for (std::string word : program) {
        for (std::size_t at = word.find(placeholder); at != std::string::npos; at = word.find(placeholder, at + number.size()))
            word.replace(at, placeholder.size(), number);
        words.push_back(std::move(word));
    }
    return words;
}


// run.pickle at batch 8: run.bs8.pickle; at {seq} 2048: run.seq2048.pickle.
std::string batch_file_name(const std::string& file, const std::string& knob, std::uint64_t value) {
    return tagged_file_name(file, (knob == "batch" ? std::string("bs") : knob) + std::to_string(value));
}


bool MaxBatchSearchResults::confirmed() const {
    return !confirm_runs.empty() && std::all_of(confirm_runs.begin(), confirm_runs.end(), [](const MaxBatchConfirmRun& c) { return c.held; });
}

unsigned MaxBatchSearchResults::runs() const {
    return static_cast<unsigned>(std::count_if(recordings.begin(), recordings.end(), [](const MaxBatchRecording& rec) { return rec.recorded_here; }));
}

rs::SettingFacts MaxBatchSearchResults::facts(const std::string& setting, std::optional<std::uint64_t> model_answer) const {
    std::vector<const rs::BatchRun*> runs;
    for (const MaxBatchRecording& rec : recordings)
        if (rec.setting == setting) runs.push_back(&rec);
    return rs::setting_facts(runs, model_answer);
}

namespace {

void sort_recordings(MaxBatchSearchResults& x) {
    std::stable_sort(x.recordings.begin(), x.recordings.end(), [](const auto& a, const auto& b) { return a.batch < b.batch; });
}

// One recording file read whole, kept for every refit.
struct Loaded {
    rs::BatchRecording recording;
    std::optional<rs::RecordedAllocatorSettings> settings;
    std::uint64_t ooms = 0, requests = 0;
    std::optional<RecordingStats> stats;  // the statistics file beside it, read once
};

// What the request asks of the planner.
rs::MaxBatchPlanOptions plan_options(const MaxBatchRequest& m, const rs::CostModel& costs) {
    rs::MaxBatchPlanOptions o;
    if (!m.program.empty()) o.first_batches = m.record_batches;
    o.refine = m.refine;
    o.confirm = m.confirm;
    o.max_runs = m.max_runs;
    o.max_runs_given = m.max_runs_given;
    o.repeats = m.repeats;
    o.knob = m.knob;
    // Runs side by side where --jobs asks, or (auto) where the host allows:
    // read once here for the planner (which plans a check's repeats and
    // neighbours beside it); each step's runs are placed afresh.
    // A launcher's (torchrun's) ranks are not known before its first run:
    // one at a time until then.
    if (!m.program.empty())
        o.parallel = static_cast<unsigned>(
            plan_run_slots(run_slot_facts_here(m.settings.capacity.value_or(0), launches_ranks(m.program) ? 0 : 1, m.jobs)).slots.size());
    o.capacity = m.setup.capacity;
    o.search.limit = m.limit;
    o.search.step = m.multiple_of;
    o.search.headroom = m.headroom;
    o.search.replay.costs = &costs;
    o.search.replay.threads = allowed_cpu_count();
    o.search.replay.poll = [] { throw_if_interrupted(); };
    return o;
}

// The loop of max-batch: asks the planner (reuse_sim/max_batch_plan.hpp)
// for its next step, makes it (runs of the program, or the model fitted on
// recordings, the files read once), and gives it back what came of it; the
// results are the planner's state and the recordings, kept as it goes.
class MaxBatchSearch {
public:
    MaxBatchSearch(const MaxBatchRequest& m, const rs::CostModel& costs, MaxBatchResults& r, Session& session, std::string scratch)
        : m_(m), r_(r), x_(*r.search), session_(session), scratch_(std::move(scratch)), planner_(plan_options(m, costs)) {
        // The planner's state from the start (its budget), so that a search
        // that fails before its first step reports as much.
        static_cast<rs::MaxBatchState&>(x_) = planner_.state();
        if (!m_.program.empty() && (servers_ = RunForkServers::for_program(m_.program))) {
            if (m_.fork_server) {
                servers_->warm();  // its imports go on while the search sets out; runs wait for it
                x_.fork_server = servers_->state_text();
                if (show_runs(session_))
                    say(session_, "max-batch: importing " + m_.program[1] + "'s modules once; each run then forks from that process (--no-fork-server: fresh runs)");
            } else {
                servers_.reset();
                x_.fork_server = "off: --no-fork-server";
            }
        }
    }

    // --batch-trace: recordings made before, each read (an OOM recorded in
    // one is a fact like a run's), then one fit.
    void given() {
        for (const auto& [batch, file] : m_.traces) {
            MaxBatchRecording rec;
            rec.batch = batch;
            rec.file = file;
            rec.kept = true;
            x_.recordings.push_back(std::move(rec));
        }
        sort_recordings(x_);
        for (MaxBatchRecording& rec : x_.recordings) {
            const Loaded& l = load(rec.file);
            rec.ooms = l.ooms;
            rec.requests = l.requests;
            rec.outcome = rec.ooms > 0 ? rs::RunOutcome::out_of_memory : rs::RunOutcome::ran;
            planner_.given(rec.batch, rec.outcome);
        }
        run();
    }

    void run() {
        for (;;) {
            rs::PlanStep step;
            timed([&] { step = planner_.next(); });
            say_failures_bounding();
            switch (step.kind) {
            case rs::PlanStep::Kind::runs: make(step.runs); break;
            case rs::PlanStep::Kind::fit: fit(step.fit_on); break;
            case rs::PlanStep::Kind::note: say(session_, step.text); break;
            case rs::PlanStep::Kind::done: return;
            case rs::PlanStep::Kind::error:
                if (step.usage) throw UsageError(step.text);
                throw Error(step.text);
            case rs::PlanStep::Kind::run_failed: throw Error(failure_at(step.failed_at) + "; the model needs runs that complete");
            }
        }
    }

private:
    // Seconds since the search began.
    double since_start() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(); }

    // A call to the planner: its searches timed, its state the results'.
    template <typename Call>
    void timed(Call call) {
        const auto start = std::chrono::steady_clock::now();
        call();
        x_.search_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        static_cast<rs::MaxBatchState&>(x_) = planner_.state();
    }

    // The runs of one step: the search's side by side, as many at once as
    // the slots allow (each with its slot's GPUs), their outcomes given
    // back in the order planned; a run that fails otherwise than by an OOM
    // ends them (the planner then stops the search). --confirm's one at a
    // time, each after the last.
    void make(const std::vector<rs::PlannedRun>& runs) {
        std::vector<const rs::PlannedRun*> search_runs;
        for (const rs::PlannedRun& run : runs) {
            if (run.why == rs::RunReason::confirm) confirm(run);
            else search_runs.push_back(&run);
        }
        if (search_runs.empty()) return;
        throw_if_interrupted();
        const RunSlotPlan slots = slot_plan();
        std::vector<PreparedRun> prepared;
        std::vector<RecordedRunRequest> requests;
        for (const rs::PlannedRun* run : search_runs) {
            prepared.push_back(prepare_run(m_, *run, ++numbered_, scratch_, session_));
            requests.push_back(prepared.back().request);
        }
        std::vector<std::optional<ChildRun>> ended(prepared.size());
        bool interrupted = false;
        run_recorded_side_by_side(
            requests, slot_environments(slots),
            [&](std::size_t i, ChildRun run) {
                interrupted = interrupted || run.interrupted;
                prepared[i].made.rec.started_seconds = std::max(0.0, since_start() - run.wall_seconds);
                prepared[i].made.rec.forked = run.forked;
                ended[i] = std::move(run);
            },
            servers_.get());
        if (servers_) x_.fork_server = servers_->state_text();
        if (interrupted || interrupt_requested()) throw InterruptedError();
        for (std::size_t i = 0; i < prepared.size(); ++i) {
            finish_run(prepared[i], *ended[i], session_);
            SearchRun& made = prepared[i].made;
            const rs::BatchRun fact = planner_.ran(*search_runs[i], made.rec.outcome, made.rec.peak_reserved);
            if (!made.failure.empty()) {
                failures_.emplace_back(made.rec.batch, made.failure);
                continue;
            }
            made.rec.order = fact.order;
            add(std::move(made.rec));
        }
    }

    // Where this step's runs go: planned afresh each step (the GPUs' free
    // memory moves with other work), the GPUs a run takes known once one ran.
    RunSlotPlan slot_plan() {
        unsigned ranks = launches_ranks(m_.program) ? 0 : 1;
        for (const MaxBatchRecording& rec : x_.recordings)
            if (rec.recorded_here) ranks = std::max<unsigned>(1, static_cast<unsigned>(rec.ranks.size()));
        RunSlotPlan plan = plan_run_slots(run_slot_facts_here(m_.settings.capacity.value_or(0), ranks, m_.jobs));
        // The steps after this one are planned for as many (a launcher's
        // runs, one at a time until its ranks are known, may then spread).
        if (ranks > 0) planner_.set_parallel(static_cast<unsigned>(plan.slots.size()));
        if (plan.slots.size() > x_.jobs) {
            x_.jobs = static_cast<unsigned>(plan.slots.size());
            x_.jobs_limit = plan.limit;
        } else if (x_.jobs_limit.empty()) {
            x_.jobs_limit = plan.limit;
        }
        return plan;
    }

    static std::vector<std::vector<std::string>> slot_environments(const RunSlotPlan& plan) {
        std::vector<std::vector<std::string>> environments;
        for (const RunSlot& slot : plan.slots) environments.push_back(slot.environment);
        return environments;
    }

    // A recording the search made, in the results (ascending batch).
    void add(MaxBatchRecording rec) {
        x_.recordings.push_back(std::move(rec));
        const MaxBatchRecording& added = x_.recordings.back();
        // The GPU the program ran on, for --plot's title: read now, while
        // the scratch folder still holds the run's statistics.
        if (!x_.device_name && !added.file.empty()) x_.device_name = recorded_device_name(stats_file_name(added.file));
        say_run(session_, x_, m_, added);
        sort_recordings(x_);
    }

    // --confirm: one run, or the search's run at that batch and setting.
    void confirm(const rs::PlannedRun& run) {
        std::optional<MaxBatchConfirmRun> done = run.reuse ? reuse_run(x_, run.batch, run.setting, run.expect_oom) : std::nullopt;
        if (!done) {
            throw_if_interrupted();
            done = confirm_at(m_, run.batch, run.setting, run.expect_oom, scratch_, session_);
            if (done->note == "interrupted") {
                x_.confirm_runs.push_back(*done);
                x_.confirm_interrupted = true;
                throw InterruptedError();
            }
            say(session_, "--confirm: " + confirm_run_line(*done, m_.knob));
        }
        x_.confirm_runs.push_back(*done);
        planner_.ran(run, outcome_of(*done), done->real ? done->real->peak_reserved : 0);
    }

    // A file read once, whatever the refits.
    const Loaded& load(const std::string& file) {
        const auto found = loaded_.find(file);
        if (found != loaded_.end()) return found->second;
        std::unique_ptr<rs::EventSource> source = rs::open_trace(file, rs::TraceFormat::automatic, false, std::nullopt);
        const rs::LoadedTrace trace(*source, [] { throw_if_interrupted(); });
        for (const std::string& note : source->notes()) {
            std::string warning = file;
            warning += ": ";
            warning += note;
            r_.warnings.push_back(std::move(warning));
        }
        Loaded l;
        if (const rs::RecordedAllocatorSettings* recorded = source->allocator_settings()) l.settings = *recorded;
        l.recording.name = file;
        l.stats = read_recording_stats(stats_file_name(file));
        l.recording.events = trace.events();
        for (const rs::Event& e : l.recording.events) {
            if (e.kind == rs::EventKind::oom) ++l.ooms;
            if (e.kind == rs::EventKind::alloc) ++l.requests;
        }
        return loaded_.emplace(file, std::move(l)).first->second;
    }

    // The recordings the planner fits the model on, as the results hold them.
    std::vector<MaxBatchRecording*> recordings_of(const std::vector<rs::BatchRun>& fit_on) {
        std::vector<MaxBatchRecording*> kept;
        for (const rs::BatchRun& run : fit_on)
            for (MaxBatchRecording& rec : x_.recordings)
                if (rec.batch == run.batch && rec.order == run.order && rec.setting == run.setting) kept.push_back(&rec);
        return kept;
    }

    // The model of each rank (one for a single process) fitted on the
    // recordings the planner names (the two largest fit it; the others
    // check it), with the settings the program ran with: the largest
    // recording's, the one the trace at any batch is built from.
    void fit(const std::vector<rs::BatchRun>& fit_on) {
        const double start = since_start();
        fit_models_on(fit_on);
        x_.fit_seconds += since_start() - start;
    }

    void fit_models_on(const std::vector<rs::BatchRun>& fit_on) {
        const std::vector<MaxBatchRecording*> kept = recordings_of(fit_on);
        std::vector<std::string> batches;
        for (MaxBatchRecording* rec : kept) {
            batches.push_back(std::to_string(rec->batch));
            if (rec->ranks.empty()) {
                rec->requests = load(rec->file).requests;
                continue;
            }
            for (MaxBatchRecording::Rank& k : rec->ranks) k.requests = load(k.file).requests;
            rec->requests = rec->ranks.front().requests;
        }
        r_.input_description = "recordings at " + m_.knob + " " + join(batches, ", ");
        const MaxBatchRecording& largest = *kept.back();
        if (const Loaded& l = load(largest.ranks.empty() ? largest.file : largest.ranks.front().file); l.settings) r_.allocator_settings = *l.settings;
        r_.strategy_options = m_.setup.strategy_options;
        if (r_.allocator_settings) {
            const rs::RecordedAllocatorSettings recorded = *r_.allocator_settings;
            apply_recorded_settings(m_.setup, recorded, r_);
        }
        note_held_late(largest);
        rs::ModelFit model{fit_models(largest, kept), rs::grid_points(r_.strategy_options.torch, m_.grid.axes), r_.strategy_options,
                           timing_of(largest)};
        timed([&] { planner_.fitted(std::move(model)); });
    }

    // What the largest recording's runs held as late as NCCL may free it,
    // the most any rank held: the bound every run, and so the answer,
    // rests on.
    void note_held_late(const MaxBatchRecording& largest) {
        x_.held_late.clear();
        x_.held_late_bytes = 0;
        std::vector<std::string> files;
        if (largest.ranks.empty()) files.push_back(largest.file);
        for (const MaxBatchRecording::Rank& k : largest.ranks) files.push_back(k.file);
        for (const std::string& file : files) {
            const std::optional<RecordingStats>& stats = load(file).stats;
            if (!stats) continue;
            std::uint64_t bytes = 0;
            for (const RecordingStats::HeldLate& h : stats->held_late) {
                bytes += h.bytes;
                if (std::find(x_.held_late.begin(), x_.held_late.end(), h.what) == x_.held_late.end()) x_.held_late.push_back(h.what);
            }
            x_.held_late_bytes = std::max(x_.held_late_bytes, bytes);
        }
    }

    // What in the largest recording lets a run's outcome hang on timing:
    // ranks (their collectives race), several streams, frees that waited on
    // another stream's work (record_stream: the block comes back when the
    // other stream's event completes, as far as that stream got), an NCCL
    // process group (a collective's tensors stay allocated until its
    // watchdog thread sees the work complete: a DDP MLP under one rank on an
    // H200 ran out of memory 5 times in 36 with 256 MiB more allocated, its
    // gradients' size, and never when each step ended synchronized and
    // 0.5 s asleep; bench/ddp-variance.sh).
    std::vector<std::string> timing_of(const MaxBatchRecording& largest) {
        std::vector<std::string> timing;
        if (largest.ranks.size() > 1) timing.push_back(std::to_string(largest.ranks.size()) + " ranks");
        const std::string& file = largest.ranks.empty() ? largest.file : largest.ranks.front().file;
        const Loaded& l = load(file);
        if (l.stats)
            for (const std::string& backend : l.stats->process_groups)
                if (backend.find("nccl") != std::string::npos) {
                    timing.emplace_back("an NCCL process group (its watchdog frees a collective's tensors when it sees it done)");
                    break;
                }
        std::vector<std::uint64_t> streams;
        std::uint64_t late = 0;
        for (const rs::Event& e : l.recording.events) {
            if (e.kind == rs::EventKind::alloc && std::find(streams.begin(), streams.end(), e.stream) == streams.end()) streams.push_back(e.stream);
            if (e.kind == rs::EventKind::free && e.deferred) ++late;
        }
        if (streams.size() > 1) timing.push_back(std::to_string(streams.size()) + " streams");
        if (late > 0) timing.push_back(rs::group_digits(late) + " free" + (late > 1 ? "s" : "") + " waited on another stream's work");
        return timing;
    }

    // One model per rank (of the largest recording's ranks; one for a
    // single process), each on that rank's files of the recordings.
    std::vector<rs::RankModel> fit_models(const MaxBatchRecording& largest, const std::vector<MaxBatchRecording*>& kept) {
        std::vector<std::optional<unsigned>> ranks;
        if (largest.ranks.empty()) ranks.emplace_back();
        for (const MaxBatchRecording::Rank& k : largest.ranks) ranks.emplace_back(k.rank);
        std::vector<rs::RankModel> models;
        for (const std::optional<unsigned>& rank : ranks) {
            std::vector<rs::BatchRecording> recordings;
            for (const MaxBatchRecording* rec : kept) {
                const std::string* file = &rec->file;
                if (rank) {
                    file = nullptr;
                    for (const MaxBatchRecording::Rank& k : rec->ranks)
                        if (k.rank == *rank) file = &k.file;
                    if (file == nullptr) continue;
                }
                rs::BatchRecording copy = load(*file).recording;
                copy.batch = rec->batch;
                recordings.push_back(std::move(copy));
            }
            if (recordings.size() < 2)
                throw Error("max-batch: rank " + std::to_string(rank.value_or(0)) + " recorded at fewer than two batches that fit");
            models.push_back({rank, rs::BatchModel::fit(std::move(recordings))});
        }
        for (const rs::RankModel& m : models) refuse_unaligned(m);
        return models;
    }

    // Recordings of two different programs (or of one whose requests change
    // wholly with the batch) align in few requests: no model of the batch,
    // and an answer from them would be noise. Refused, not reported.
    static void refuse_unaligned(const rs::RankModel& m) {
        const rs::BatchModelChecks& c = m.model.checks();
        if (c.requests == 0 || 2 * c.aligned >= c.requests) return;
        throw UsageError("max-batch: the recordings do not align" + (m.rank ? " (rank " + std::to_string(*m.rank) + ")" : std::string()) +
                         ": only " + rs::group_digits(c.aligned) + " of the largest one's " + rs::group_digits(c.requests) +
                         " requests are found in every recording; are they of one program at several batches?");
    }

    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();  // the slots' first reading counted
    const MaxBatchRequest& m_;
    MaxBatchResults& r_;
    MaxBatchSearchResults& x_;
    Session& session_;
    std::string scratch_;
    rs::MaxBatchPlanner planner_;
    std::unique_ptr<RunForkServers> servers_;  // none: fresh processes only
    std::map<std::string, Loaded> loaded_;
    // The errors of the runs that failed otherwise than by an OOM, by
    // value: one stops the search, or bounds it (the planner weighs them);
    // how many of the bounds were told.
    std::vector<std::pair<std::uint64_t, std::string>> failures_;
    std::vector<std::uint64_t> bounds_told_;

    std::string failure_at(std::uint64_t batch) const {
        for (const auto& [at, error] : failures_)
            if (at == batch) return error;
        return "max-batch: the run at " + m_.knob + " " + std::to_string(batch) + " failed otherwise than by an OOM";
    }

    // A failure above every value that ran bounds the search: said once, with its error.
    void say_failures_bounding() {
        for (const std::uint64_t batch : x_.failed_above) {
            if (std::find(bounds_told_.begin(), bounds_told_.end(), batch) != bounds_told_.end()) continue;
            bounds_told_.push_back(batch);
            say(session_, failure_at(batch) + "; above every " + m_.knob + " that ran: the search stays below it");
        }
    }
    std::size_t numbered_ = 0;  // the search's runs started, each's files named by its number
};

}  // namespace

void max_batch_search(const MaxBatchRequest& q, const rs::CostModel& costs, MaxBatchResults& r, Session& session) {
    r.search.emplace();
    r.search->knob = q.knob;
    r.search->step = q.multiple_of;
    // The program's files live in a scratch folder unless -o FILE keeps
    // them; --batch-trace runs no program, and needs no folder (nor $TMPDIR).
    std::optional<process::TemporaryDirectory> scratch;
    if (!q.program.empty()) scratch.emplace("max-batch");
    MaxBatchSearch search(q, costs, r, session, scratch ? scratch->path() : std::string());
    if (q.program.empty())
        search.given();
    else
        search.run();
}

void execute_max_batch(const MaxBatchRequest& q, MaxBatchResults& r, Session& session) {
    const rs::CostTable table = load_costs(q.setup, r);
    const rs::CostModel costs(table);
    max_batch_search(q, costs, r, session);  // its own inputs: recordings at several batches
    if (q.plot) max_batch_plot_curves(costs, r);
    r.complete = true;
}

}  // namespace gpumem::cli
