// gpumem reuse-sim --max-batch: the largest batch that fits under a cap,
// from recordings of one program at several batches (reuse_sim/batch_model.hpp
// fits the model and searches). The end-to-end form records the program
// itself first, at small batches, through the recording hook
// (record_run.hpp), and with --confirm runs it at the answer and at the next
// batch, reading each run's torch.cuda.memory_stats() as --tune --confirm does.
#include <unistd.h>

#include <algorithm>
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

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/terminal.hpp"
#include "reuse_sim/reuse_sim.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tune_replays.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// gpumem's own lines among the program's: few, and marked.
void say(const Session& session, const std::string& line) {
    if (!session.globals().quiet) std::fprintf(stderr, "gpumem: %s\n", stderr_text("gpumem: ", line).c_str());
}

// One line per real run (batch, why, what it did, seconds): on stderr
// unless -q, and not under --json when stderr is no terminal (a script
// reading the document wants nothing else there).
bool show_runs(const Session& session) {
    if (session.globals().quiet) return false;
    return session.output().format != Format::json || ::isatty(STDERR_FILENO) == 1;
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
        const std::size_t width = static_cast<std::size_t>(stderr_columns());
        std::fprintf(stderr, "gpumem: max-batch: the end of the program's output:\n");
        for (const std::string& line : lines)  // indented 2, cut before the last column
            std::fprintf(stderr, "  %s\n", fit_columns(line, width - 3).c_str());
    }
    if (shown) return moved ? "the end of its output is above; all of it in " + kept : "the end of its output is above";
    return moved ? "its output is in " + kept : "its output could not be kept in " + dir;
}

// Another setting of the grid goes to the program's torch under both names
// (whichever its version reads), the user's other keys kept.
ChildStyle program_style(const std::string& output_file, const std::string& alloc_conf = "", bool set_conf = false) {
    ChildStyle style;
    style.own_group = true;
    style.output_file = output_file;
    if (set_conf) {
        style.environment.push_back(std::string(kAllocConfVariable) + "=" + alloc_conf);
        style.environment.push_back(std::string(kCudaAllocConfVariable) + "=" + alloc_conf);
    }
    return style;
}

// A recording the end-to-end form made, numbered in the order it ran (every
// recording of that form is one of its runs).
void add_run(MaxBatchResults& x, MaxBatchRecording rec) {
    rec.order = static_cast<unsigned>(x.recordings.size() + 1);
    x.recordings.push_back(std::move(rec));
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

// The end-to-end form: one recording of the program at `batch`, under the
// recorded setting (`setting` empty) or another of the grid. A run that
// runs out of memory (on any rank) is no error: it says the answer is
// below `batch`. A program of several ranks (torchrun) leaves a file per rank.
MaxBatchRecording record_at(const MaxBatchRequest& m, const MaxBatchResults& x, std::uint64_t batch, const std::string& why,
                            const std::string& setting, const std::string& scratch, Session& session) {
    MaxBatchRecording rec;
    rec.batch = batch;
    rec.why = why;
    rec.recorded_here = true;
    rec.setting = setting;
    rec.kept = m.keep.has_value() && setting.empty();
    RecordSettings settings = m.settings;
    const std::string own = setting.empty() ? "" : ".run" + std::to_string(x.recordings.size() + 1);
    settings.file = rec.kept ? batch_file_name(*m.keep, batch) : scratch + "/run" + own + batch_file_name("", batch) + ".pickle";
    const std::vector<std::string> command = program_at_batch(m.program, batch);
    if (session.globals().verbosity > 0 && show_runs(session))
        say(session, "max-batch: running " + join(command, " ") + (setting.empty() ? "" : " under " + setting));
    const std::string log = run_log(session, scratch, "run" + std::to_string(x.recordings.size() + 1));
    const ChildRun run = run_recorded(
        command, settings,
        program_style(log, setting.empty() ? "" : merge_alloc_conf(user_alloc_conf(), setting, alloc_conf_grid_keys()).conf, !setting.empty()));
    rec.wall_seconds = run.wall_seconds;
    rec.exit_status = run.exit_status;
    if (run.interrupted) throw InterruptedError();
    const std::string at = "max-batch: the run at batch " + std::to_string(batch);
    // Each rank's first process (a rank's later processes, and the
    // children of a process without a launcher, are its helpers).
    std::vector<const RecordedProcess*> processes;
    for (const RecordedProcess* p : run.recorded())
        if (p->order.value_or(1) == 1 && std::none_of(processes.begin(), processes.end(), [&](const RecordedProcess* q) { return q->rank == p->rank; }))
            processes.push_back(p);
    if (processes.empty())
        throw Error(at + " recorded nothing: " + nothing_recorded_reason(run) + ", exit status " + std::to_string(run.exit_status) +
                    (run.start_error ? "" : " (" + failed_run_output(session, log) + ")"));
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
    if (rec.ran_out_of_memory()) return rec;
    if (run.exit_status != 0)
        throw Error(at + " failed, exit status " + std::to_string(run.exit_status) + ": the model needs runs that complete (" +
                    failed_run_output(session, log) + ")");
    return rec;
}

// The line a real run leaves on stderr.
void say_run(const Session& session, const MaxBatchResults& x, const MaxBatchRequest& m, const MaxBatchRecording& rec) {
    if (!show_runs(session)) return;
    std::string what = rec.ran_out_of_memory() ? "ran out of memory" : "ran without an OOM";
    std::vector<std::string> out;
    for (const MaxBatchRecording::Rank& k : rec.ranks)
        if (k.ooms > 0) out.push_back(std::to_string(k.rank));
    if (!out.empty()) what += " on rank " + join(out, ", ");
    say(session, "max-batch: run " + std::to_string(x.runs()) + " of " + std::to_string(m.max_runs) + " at most: batch " +
                     std::to_string(rec.batch) + " (" + rec.why + (rec.setting.empty() ? "" : ", under " + rec.setting) + "): " + what + ", " +
                     format_decimal(rec.wall_seconds, 1) + " s");
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

// The setting a row's real runs are under: "" for the recorded one.
std::string setting_key(const MaxBatchSetting& s) { return s.point.recorded ? std::string() : rs::alloc_conf(s.point.options); }

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
    const std::vector<std::string> command = program_at_batch(m.program, batch);
    say(session, "--confirm: real run at batch " + std::to_string(batch) + (setting.empty() ? "" : " under " + setting) +
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
std::optional<MaxBatchConfirmRun> reuse_run(const MaxBatchResults& x, std::uint64_t batch, const std::string& setting, bool expect_oom) {
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

// --confirm's runs below an answer that ran out of memory for real.
constexpr int kConfirmStepsDown = 3;

std::string confirm_run_line(const MaxBatchConfirmRun& run) {
    if (!run.real) return "batch " + std::to_string(run.batch) + ": no figures: " + run.note;
    return "batch " + std::to_string(run.batch) + (run.setting.empty() ? "" : " under " + run.setting) + ": " + std::to_string(run.real->ooms) +
           " OOMs, peak reserved " + rs::group_digits(run.real->peak_reserved) + " B, exit status " + std::to_string(run.exit_status) + "; " +
           (run.held ? "as predicted" : "NOT as predicted");
}

// --confirm for one row: its answer and the next batch, each run unless the
// search ran it already under that setting.
void confirm_setting(const MaxBatchRequest& m, MaxBatchResults& x, const MaxBatchSetting& s, bool recorded_row, const std::string& scratch,
                     Session& session) {
    const std::string setting = setting_key(s);
    const rs::MaxBatchAnswer& a = s.answer;
    const auto run = [&](std::uint64_t batch, bool expect_oom) -> const MaxBatchConfirmRun& {
        if (std::optional<MaxBatchConfirmRun> done = reuse_run(x, batch, setting, expect_oom)) {
            x.confirm_runs.push_back(*done);
            return x.confirm_runs.back();
        }
        throw_if_interrupted();
        x.confirm_runs.push_back(confirm_at(m, batch, setting, expect_oom, scratch, session));
        if (x.confirm_runs.back().note == "interrupted") {
            x.confirm_interrupted = true;
            throw InterruptedError();
        }
        say(session, "--confirm: " + confirm_run_line(x.confirm_runs.back()));
        return x.confirm_runs.back();
    };
    const auto fitted = [](const MaxBatchConfirmRun& c) { return c.real && c.real->ooms == 0 && c.exit_status == 0; };
    const auto ran_out = [](const MaxBatchConfirmRun& c) { return c.real && c.real->ooms > 0; };
    if (!a.largest) {
        if (!a.reached_limit && recorded_row) (void)run(1, true);
        return;
    }
    // At the answer; where it runs out of memory for real, one batch lower
    // at a time (3 more runs at most) until a run fits.
    std::uint64_t batch = *a.largest;
    for (int steps = 0;; ++steps) {
        const MaxBatchConfirmRun& c = run(batch, false);
        if (fitted(c)) {
            if (recorded_row) x.confirmed_batch = batch;
            break;
        }
        if (!ran_out(c) || steps == kConfirmStepsDown || batch == 1) return;
        --batch;
    }
    // The next batch, where the model says it runs out of memory: only
    // after the answer itself fitted.
    if (batch == *a.largest && !a.reached_limit && fitted(run(batch + 1, true)) && recorded_row) x.confirmed_batch = batch + 1;
}

void confirm_max_batch(const MaxBatchRequest& m, MaxBatchResults& x, const std::string& scratch, Session& session) {
    const MaxBatchSetting* recorded = x.recorded();
    if (recorded == nullptr) return;
    const MaxBatchSetting recorded_row = *recorded;
    confirm_setting(m, x, recorded_row, true, scratch, session);
    // The best setting too, where it answers more than the recorded one.
    const MaxBatchSetting* best = x.best();
    if (best != nullptr && best != recorded && best->answer.largest.value_or(0) > recorded_row.answer.largest.value_or(0)) {
        const MaxBatchSetting best_row = *best;
        confirm_setting(m, x, best_row, false, scratch, session);
    }
}

}  // namespace

std::vector<std::string> program_at_batch(const std::vector<std::string>& program, std::uint64_t batch) {
    std::vector<std::string> words;
    const std::string number = std::to_string(batch);
    for (std::string word : program) {
        for (std::size_t at = word.find(kBatchPlaceholder); at != std::string::npos; at = word.find(kBatchPlaceholder, at + number.size()))
            word.replace(at, kBatchPlaceholder.size(), number);
        words.push_back(std::move(word));
    }
    return words;
}

std::string batch_file_name(const std::string& file, std::uint64_t batch) { return tagged_file_name(file, "bs" + std::to_string(batch)); }

const MaxBatchSetting* MaxBatchResults::recorded() const {
    for (const MaxBatchSetting& s : settings)
        if (s.point.recorded) return &s;
    return nullptr;
}

bool MaxBatchResults::confirmed() const {
    return !confirm_runs.empty() && std::all_of(confirm_runs.begin(), confirm_runs.end(), [](const MaxBatchConfirmRun& c) { return c.held; });
}

unsigned MaxBatchResults::runs() const {
    return static_cast<unsigned>(std::count_if(recordings.begin(), recordings.end(), [](const MaxBatchRecording& rec) { return rec.recorded_here; }));
}

MaxBatchFacts MaxBatchResults::facts(const std::string& setting, std::optional<std::uint64_t> model_answer) const {
    MaxBatchFacts f;
    // A given recording that ran may have run under another cap: no fact
    // that it fits; one the allocator refused requests in is an OOM.
    for (const MaxBatchRecording& rec : recordings)
        if (rec.setting == setting && rec.recorded_here) {
            f.any_run = true;
            if (!rec.ran_out_of_memory()) f.ran = std::max(f.ran, rec.batch);
        }
    for (const MaxBatchRecording& rec : recordings)
        if (rec.setting == setting && rec.ran_out_of_memory()) {
            if (rec.batch > f.ran && (f.ran_out == 0 || rec.batch < f.ran_out)) f.ran_out = rec.batch;
            if (rec.batch < f.ran) f.oom_below.push_back(rec.batch);
        }
    std::sort(f.oom_below.begin(), f.oom_below.end());
    f.answer_ran = f.ran != 0 && model_answer && *model_answer == f.ran;
    f.all_below_ran = f.oom_below.empty() ? f.ran : f.oom_below.front() - 1;
    if (!f.oom_below.empty())
        for (const MaxBatchRecording& rec : recordings)
            if (rec.setting == setting && rec.recorded_here && !rec.ran_out_of_memory() && rec.batch < f.oom_below.front())
                f.ran_below_oom = std::max(f.ran_below_oom, rec.batch);
    return f;
}

MaxBatchFacts MaxBatchResults::facts_of(const MaxBatchSetting& s) const { return facts(setting_key(s), s.answer.largest); }

namespace {

bool recorded_at(const MaxBatchResults& x, std::uint64_t batch, const std::string& setting = "") {
    return std::any_of(x.recordings.begin(), x.recordings.end(), [&](const MaxBatchRecording& rec) { return rec.batch == batch && rec.setting == setting; });
}

void sort_recordings(MaxBatchResults& x) {
    std::stable_sort(x.recordings.begin(), x.recordings.end(), [](const auto& a, const auto& b) { return a.batch < b.batch; });
}

// The model's recordings: the recorded setting's runs that ran out of
// memory on no rank.
std::vector<const MaxBatchRecording*> usable(const MaxBatchResults& x) {
    std::vector<const MaxBatchRecording*> kept;
    for (const MaxBatchRecording& rec : x.recordings)
        if (!rec.ran_out_of_memory() && rec.setting.empty()) kept.push_back(&rec);
    return kept;
}

// One recording file read whole, kept for every refit.
struct Loaded {
    rs::BatchRecording recording;
    std::optional<rs::RecordedAllocatorSettings> settings;
    std::uint64_t ooms = 0, requests = 0;
};

// The search of the end-to-end form (and the --batch-trace form's one fit):
// the request, the results filled as it goes, the recordings read once.
class MaxBatchSearch {
public:
    MaxBatchSearch(const ReuseSimRequest& q, const rs::CostModel& costs, ReuseSimResults& r, Session& session, std::string scratch)
        : q_(q), m_(*q.max_batch), costs_(costs), r_(r), x_(*r.max_batch), session_(session), scratch_(std::move(scratch)) {}

    void given() {
        for (const auto& [batch, file] : m_.traces) {
            MaxBatchRecording rec;
            rec.batch = batch;
            rec.file = file;
            rec.kept = true;
            rec.why = kRecordingWhy.given;
            x_.recordings.push_back(std::move(rec));
        }
        sort_recordings(x_);
        fit_and_search();
    }

    void end_to_end() {
        record_first();
        fit_and_search();
        if (m_.refine) refine();
        x_.checks_off = !m_.refine;
        if (m_.refine) {
            check_setting();
            below_answer();
            best_setting();
        }
        if (m_.confirm) confirm_max_batch(m_, x_, scratch_, session_);
    }

private:
    bool can_run() const { return x_.runs() < m_.max_runs; }

    const MaxBatchRecording& run(std::uint64_t batch, const char* why, const std::string& setting = "") {
        throw_if_interrupted();
        add_run(x_, record_at(m_, x_, batch, why, setting, scratch_, session_));
        const MaxBatchRecording& rec = x_.recordings.back();
        // The GPU the program ran on, for --plot's title: read now, while
        // the scratch folder still holds the run's statistics.
        if (!x_.device_name && !rec.file.empty()) x_.device_name = recorded_device_name(stats_file_name(rec.file));
        say_run(session_, x_, m_, rec);
        const unsigned order = rec.order;
        sort_recordings(x_);
        for (const MaxBatchRecording& r : x_.recordings)
            if (r.order == order) return r;
        return x_.recordings.back();
    }

    // The first recordings, at --record-batches: where fewer than two run
    // without an OOM, every batch halved (down to 1,2) and recorded again.
    void record_first() {
        std::vector<std::uint64_t> batches = m_.record_batches;
        for (;;) {
            for (const std::uint64_t batch : batches) {
                if (recorded_at(x_, batch)) continue;
                if (!can_run())
                    throw Error("max-batch: the run budget (--max-runs " + std::to_string(m_.max_runs) +
                                ") was spent before two recordings ran without an OOM");
                (void)run(batch, kRecordingWhy.first);
            }
            if (usable(x_).size() >= 2) return;
            if (batches.back() <= 2) {
                std::vector<std::string> oom;
                for (const MaxBatchRecording& rec : x_.recordings)
                    if (rec.ran_out_of_memory()) oom.push_back(std::to_string(rec.batch));
                throw Error("max-batch: the program ran out of memory under the cap at batch " + join(oom, ", ") +
                            " (halved down to 1,2): the model needs runs at two batches that fit");
            }
            std::vector<std::uint64_t> halved;
            for (const std::uint64_t batch : batches)
                if (halved.empty() || halved.back() != std::max<std::uint64_t>(1, batch / 2)) halved.push_back(std::max<std::uint64_t>(1, batch / 2));
            if (halved.size() < 2) halved = {1, 2};
            say(session_, "max-batch: fewer than two recordings ran without an OOM: recording at half the batches");
            batches = std::move(halved);
        }
    }

    // Refinement: the first recordings are small batches, where libraries
    // pick other kernels and workspaces, and extrapolating 50-200x
    // magnifies every error: record again near the answer, at 1/2 and 3/4
    // of it, above every batch recorded; none where the first answer is
    // within twice the largest recorded batch (the extrapolation is short).
    void refine() {
        const MaxBatchSetting* recorded = x_.recorded();
        if (recorded == nullptr || !recorded->answer.largest || recorded->answer.reached_limit) return;
        const std::uint64_t a1 = *recorded->answer.largest;
        std::uint64_t largest = 0;
        for (const MaxBatchRecording& rec : x_.recordings) largest = std::max(largest, rec.batch);
        if (a1 <= 2 * largest) return;
        std::vector<std::uint64_t> batches;
        for (const std::uint64_t batch : {(a1 + 1) / 2, (3 * a1 + 2) / 4})
            if (batch > largest && (batches.empty() || batches.back() != batch)) batches.push_back(batch);
        if (batches.empty()) return;
        x_.first_answer = a1;
        for (const std::uint64_t batch : batches) {
            if (!can_run()) {
                x_.budget_spent = true;
                break;
            }
            (void)run(batch, kRecordingWhy.near_answer);
        }
        fit_and_search();
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
        l.recording.events = trace.events();
        for (const rs::Event& e : l.recording.events) {
            if (e.kind == rs::EventKind::oom) ++l.ooms;
            if (e.kind == rs::EventKind::alloc) ++l.requests;
        }
        return loaded_.emplace(file, std::move(l)).first->second;
    }

    // The model of each rank (one for a single process) fitted on the
    // usable recordings (the two largest; the others check it), searched
    // for every setting, each setting's answers below its real runs' OOMs
    // and at least its largest batch that ran; the answer of a setting is
    // its tightest rank's.
    void fit_and_search() {
        // A given recording the allocator refused requests in (PyTorch's
        // snapshot records each refusal): the program ran out of memory
        // there, a fact like the end-to-end form's, not a run to model.
        for (MaxBatchRecording& rec : x_.recordings) {
            if (rec.ran_out_of_memory() || !rec.setting.empty()) continue;
            if (rec.ranks.empty()) {
                const Loaded& l = load(rec.file);
                if (!rec.recorded_here) rec.ooms = l.ooms;
                rec.requests = l.requests;
            } else {
                for (MaxBatchRecording::Rank& k : rec.ranks) k.requests = load(k.file).requests;
                rec.requests = rec.ranks.front().requests;
            }
        }
        const std::vector<const MaxBatchRecording*> kept = usable(x_);
        if (kept.size() < 2) throw UsageError("max-batch: fewer than two recordings ran without an OOM: the model needs two batches that fit");
        std::vector<std::string> batches;
        batches.reserve(kept.size());
        for (const MaxBatchRecording* rec : kept) batches.push_back(std::to_string(rec->batch));
        r_.input_description = "recordings at batch " + join(batches, ", ");
        // The settings the program ran with: the largest recording's, the
        // one the trace at any batch is built from.
        const MaxBatchRecording& largest = *kept.back();
        if (const Loaded& l = load(largest.ranks.empty() ? largest.file : largest.ranks.front().file); l.settings) r_.allocator_settings = *l.settings;
        r_.strategy_options = q_.strategy_options;
        if (r_.allocator_settings) {
            const rs::RecordedAllocatorSettings recorded = *r_.allocator_settings;
            apply_recorded_settings(q_, recorded, r_);
        }

        fit_models(largest, kept);
        search();
    }

    // One model per rank (of the largest recording's ranks; one for a
    // single process), each on that rank's files of the usable runs.
    void fit_models(const MaxBatchRecording& largest, const std::vector<const MaxBatchRecording*>& kept) {
        std::vector<std::optional<unsigned>> ranks;
        x_.ranks.clear();
        if (largest.ranks.empty()) ranks.emplace_back();
        for (const MaxBatchRecording::Rank& k : largest.ranks) {
            ranks.emplace_back(k.rank);
            x_.ranks.push_back(k.rank);
        }
        models_.clear();
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
            models_.push_back({rank, rs::BatchModel::fit(std::move(recordings))});
        }
        refuse_unaligned();
    }

    // Every setting searched on every rank's model; a setting's answer is
    // its tightest rank's.
    void search() {
        points_ = rs::grid_points(r_.strategy_options.torch, q_.tune->axes);
        lanes_.clear();
        lanes_.reserve(points_.size());
        for (const rs::GridPoint& p : points_) lanes_.push_back({p.options, q_.capacity});
        options_ = rs::MaxBatchOptions{};
        options_.limit = m_.limit;
        options_.headroom = m_.headroom;
        // The real runs of each setting: the largest that fitted is a fact
        // (whatever its modelled trace replays to), the smallest above it
        // that ran out of memory its limit.
        options_.ran.assign(points_.size(), 0);
        options_.ran_out.assign(points_.size(), 0);
        for (std::size_t i = 0; i < points_.size(); ++i) {
            const MaxBatchFacts f = x_.facts(points_[i].recorded ? "" : rs::alloc_conf(points_[i].options), std::nullopt);
            options_.ran[i] = f.ran;
            options_.ran_out[i] = f.ran_out;
            if (points_[i].recorded) x_.oom_batch = f.ran_out != 0 ? std::optional<std::uint64_t>(f.ran_out) : std::nullopt;
        }
        options_.replay.base = r_.strategy_options;
        options_.replay.costs = &costs_;
        options_.replay.threads = rs::usable_cores();
        options_.replay.poll = [] { throw_if_interrupted(); };
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::vector<rs::MaxBatchAnswer>> per_rank;
        per_rank.reserve(models_.size());
        for (const auto& [rank, model] : models_) per_rank.push_back(rs::search_max_batch(model, lanes_, options_));
        x_.search_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        x_.settings.clear();
        for (std::size_t i = 0; i < points_.size(); ++i) {
            // Every rank must fit: the smallest answer is the program's.
            std::size_t tight = 0;
            for (std::size_t k = 1; k < models_.size(); ++k)
                if (per_rank[k][i].largest.value_or(0) < per_rank[tight][i].largest.value_or(0)) tight = k;
            MaxBatchSetting s{points_[i], per_rank[tight][i], models_[tight].first};
            for (std::size_t k = 0; k < models_.size(); ++k) {
                if (k == tight) continue;
                s.answer.replays += per_rank[k][i].replays;
                const std::optional<std::uint64_t>& h = per_rank[k][i].largest_hopeful;
                if (h && s.answer.largest_hopeful && *h < *s.answer.largest_hopeful) s.answer.largest_hopeful = h;
            }
            if (models_.size() == 1) s.tightest_rank = std::nullopt;
            x_.settings.push_back(s);
        }
        rank_settings(x_.settings);
        const MaxBatchSetting* recorded = x_.recorded();
        std::size_t tight = 0;
        for (std::size_t k = 0; k < models_.size(); ++k)
            if (recorded != nullptr && recorded->tightest_rank == models_[k].first) tight = k;
        x_.checks = models_[tight].second.checks();
        x_.model = models_[tight].second;  // --plot draws the tightest rank's peaks
    }

    // Recordings of two different programs (or of one whose requests change
    // wholly with the batch) align in few requests: no model of the batch,
    // and an answer from them would be noise. Refused, not reported.
    void refuse_unaligned() const {
        for (const auto& [rank, model] : models_) {
            const rs::BatchModelChecks& c = model.checks();
            if (c.requests == 0 || 2 * c.aligned >= c.requests) continue;
            throw UsageError("max-batch: the recordings do not align" + (rank ? " (rank " + std::to_string(*rank) + ")" : std::string()) +
                             ": only " + rs::group_digits(c.aligned) + " of the largest one's " + rs::group_digits(c.requests) +
                             " requests are found in every recording; are they of one program at several batches?");
        }
    }

    const MaxBatchSetting* row_of(const std::string& setting) const {
        for (const MaxBatchSetting& s : x_.settings)
            if (setting_key(s) == setting) return &s;
        return nullptr;
    }

    struct Step {
        std::uint64_t batch;
        const char* why;
    };

    // The next real run for a setting's answer, none when it is settled:
    // its model's answer while no run has tried it; between the largest
    // batch that ran and the smallest above it that ran out of memory, the
    // midpoint wherever the model's answer there is no guess of its own
    // (clipped at the OOM: the model missed what ran out, a library's
    // workspace, a cached block split) or its last guess ran out of memory;
    // once the answer ran, the hopeful answer a few batches above where
    // the model does not hold (recorded setting). `floor`: a batch believed
    // to fit, where the setting has no run that fitted yet.
    std::optional<Step> next_step(const std::string& setting, std::uint64_t floor) const {
        const MaxBatchSetting* s = row_of(setting);
        if (s == nullptr || !s->answer.largest) return std::nullopt;
        const rs::MaxBatchAnswer& a = s->answer;
        const std::uint64_t answer = *a.largest;
        const MaxBatchFacts f = x_.facts(setting, answer);
        const std::uint64_t lo = f.ran, hi = f.ran_out;
        if (hi != 0 && hi == lo + 1) return std::nullopt;  // settled: a run and the next batch's OOM
        if (answer > lo) {
            // Every batch searched fits: no edge to check.
            if (a.reached_limit && hi == 0) return std::nullopt;
            const bool clipped = hi != 0 && a.reached_limit && answer + 1 == hi;
            const MaxBatchRecording* last = nullptr;
            for (const MaxBatchRecording& rec : x_.recordings)
                if (rec.recorded_here && rec.setting == setting && (last == nullptr || rec.order > last->order)) last = &rec;
            const bool refuted = last != nullptr && last->why == kRecordingWhy.at_answer && last->ran_out_of_memory();
            if (hi != 0 && (clipped || refuted)) {
                std::uint64_t low = lo;
                if (low == 0 && floor > 0 && floor < hi) {
                    if (hi - floor == 1) return Step{floor, kRecordingWhy.bisection};
                    low = floor;
                }
                const std::uint64_t middle = low + (hi - low) / 2;
                if (middle == 0) return std::nullopt;
                return Step{middle, kRecordingWhy.bisection};
            }
            return Step{answer, kRecordingWhy.at_answer};
        }
        if (!setting.empty() || answer != lo) return std::nullopt;
        // A narrow range only (a few batches: doubt about the last requests); a
        // wide one means the hopeful trace leaves out much of the program (a
        // detection model's thousands of data-dependent requests: 29 to 267),
        // no answer a run would bear out. And until a hopeful check runs out of
        // memory: the hopeful trace is then refuted at the edge.
        const bool refuted = std::any_of(x_.recordings.begin(), x_.recordings.end(), [](const MaxBatchRecording& rec) {
            return rec.why == kRecordingWhy.at_hopeful && rec.ran_out_of_memory();
        });
        if (!x_.model_holds() && !refuted && a.largest_hopeful && *a.largest_hopeful > answer &&
            *a.largest_hopeful - answer <= std::max<std::uint64_t>(2, answer / 16)) {
            // Below a batch that ran out of memory, no further than the
            // midpoint: a run there narrows the range whatever it says.
            const std::uint64_t hopeful = hi != 0 ? std::min(*a.largest_hopeful, lo + (hi - lo) / 2) : *a.largest_hopeful;
            if (hopeful > answer && !recorded_at(x_, hopeful, setting)) return Step{hopeful, kRecordingWhy.at_hopeful};
        }
        return std::nullopt;
    }

    // Real runs for a setting until its answer is a batch that ran (and the
    // next batch ran out of memory, where the search came from above), or
    // the budget is spent.
    void check_setting(const std::string& setting = "", std::uint64_t floor = 0) {
        while (const std::optional<Step> step = next_step(setting, floor)) {
            if (!can_run()) {
                x_.budget_spent = true;
                return;
            }
            (void)run(step->batch, step->why, setting);
            fit_and_search();
        }
    }

    // Memory that is not monotone in the batch: a batch below one that ran
    // may run out (a cached block split otherwise, a kernel or workspace
    // chosen by the batch: a Llama prefill ran at 150, 153 and 154 but not
    // at 148 or 152). Run the batches 1, 2 and 4 below the answer
    // (kBelowOffsets: spread out, so that an OOM a few batches down is
    // found for the same runs as the next ones), each only where the model
    // says it is near the cap -- an OOM or a retry in the modelled replay,
    // a peak within 1/kNearCapDivisor of the cap, or the cautious and
    // hopeful traces disagreeing -- or once one below the answer ran out of
    // memory. A batch well inside the cap ends them: those below it are
    // further inside.
    void below_answer() {
        const MaxBatchSetting* recorded = x_.recorded();
        if (recorded == nullptr || !recorded->answer.largest) return;
        const std::uint64_t answer = *recorded->answer.largest;
        if (!x_.facts_of(*recorded).answer_ran || answer <= 1) return;
        const rs::TorchLane* lane = nullptr;
        for (std::size_t i = 0; i < points_.size(); ++i)
            if (points_[i].recorded) lane = &lanes_[i];
        if (lane == nullptr) return;
        const std::uint64_t margin = q_.capacity / kNearCapDivisor;
        for (const std::uint64_t offset : kBelowOffsets) {
            if (offset >= answer) return;
            const std::uint64_t batch = answer - offset;
            if (recorded_at(x_, batch)) continue;
            bool near = false;
            for (const auto& [rank, model] : models_) {
                const std::vector<rs::BatchReplay> cautious = rs::replay_batches(model, *lane, {batch}, false, options_);
                const rs::BatchReplay& c = cautious.front();
                near = near || !c.no_oom || c.retries > 0 || c.peak_reserved + margin >= q_.capacity;
                if (!model.checks().holds()) near = near || !rs::replay_batches(model, *lane, {batch}, true, options_).front().no_oom;
            }
            if (!near && x_.facts_of(*recorded).oom_below.empty()) return;
            if (!can_run()) {
                x_.budget_spent = true;
                x_.below_cut = true;
                return;
            }
            (void)run(batch, kRecordingWhy.below_answer);
        }
    }

    // The best setting's answer run for real under that setting (after the
    // recorded one's): its checks as the recorded setting's, the recorded
    // answer the floor of its bisection. Then whichever setting ranks best.
    // Where the model does not hold, the settings' answers share its error:
    // once one setting's run at a batch ran out of memory, another whose
    // answer is no larger is not run (a DDP program under 4 GiB spent 3 of
    // its 10 runs on 3 settings at 46, each an OOM); it stays "model only".
    void best_setting() {
        std::uint64_t refuted = 0;  // the smallest batch a setting's run here ran out of memory at
        for (std::size_t round = 0; round < x_.settings.size(); ++round) {
            const MaxBatchSetting* recorded = x_.recorded();
            const MaxBatchSetting* best = x_.best();
            if (recorded == nullptr || best == nullptr || best == recorded) return;
            if (best->answer.largest.value_or(0) <= recorded->answer.largest.value_or(0)) return;
            if (refuted != 0 && !x_.model_holds() && best->answer.largest.value_or(0) <= refuted) return;
            const std::string setting = setting_key(*best);
            const std::uint64_t floor = x_.facts_of(*recorded).ran;
            if (!next_step(setting, floor)) return;  // settled
            check_setting(setting, floor);
            if (x_.budget_spent) return;
            for (const MaxBatchRecording& rec : x_.recordings)
                if (rec.setting == setting && rec.ran_out_of_memory() && (refuted == 0 || rec.batch < refuted)) refuted = rec.batch;
        }
    }

    static constexpr std::uint64_t kBelowOffsets[] = {1, 2, 4};
    static constexpr std::uint64_t kNearCapDivisor = 100;  // 1 % of the cap

    const ReuseSimRequest& q_;
    const MaxBatchRequest& m_;
    const rs::CostModel& costs_;
    ReuseSimResults& r_;
    MaxBatchResults& x_;
    Session& session_;
    std::string scratch_;
    std::map<std::string, Loaded> loaded_;
    std::vector<std::pair<std::optional<unsigned>, rs::BatchModel>> models_;
    std::vector<rs::GridPoint> points_;
    std::vector<rs::TorchLane> lanes_;
    rs::MaxBatchOptions options_;
};

}  // namespace

void max_batch_reuse_sim(const ReuseSimRequest& q, const rs::CostModel& costs, ReuseSimResults& r, Session& session) {
    r.max_batch.emplace();
    // The program's files live in a scratch folder unless --record keeps
    // them; --batch-trace runs no program, and needs no folder (nor $TMPDIR).
    std::optional<ScratchDirectory> scratch;
    if (!q.max_batch->program.empty()) scratch.emplace("max-batch");
    MaxBatchSearch search(q, costs, r, session, scratch ? scratch->path() : std::string());
    if (q.max_batch->program.empty())
        search.given();
    else
        search.end_to_end();
}

}  // namespace gpumem::cli
