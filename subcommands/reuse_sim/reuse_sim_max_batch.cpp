// gpumem reuse-sim --max-batch: the largest batch that fits under a cap,
// from recordings of one program at several batches (reuse_sim/batch_model.hpp
// fits the model and searches). The end-to-end form records the program
// itself first, at small batches, through the recording hook
// (record_run.hpp), and with --confirm runs it at the answer and at the next
// batch, reading each run's torch.cuda.memory_stats() as --tune --confirm does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "reuse_sim/reuse_sim.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tune_replays.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// gpumem's own lines among the program's: few, and marked.
void say(const Session& session, const std::string& line) {
    if (!session.globals().quiet) std::fprintf(stderr, "gpumem: %s\n", line.c_str());
}

// The process whose memory_stats() answer for the program: rank 0, else
// the first that used CUDA (the recordings are of one process each).
const RecordedProcess* main_process(const std::vector<const RecordedProcess*>& recorded) {
    for (const RecordedProcess* p : recorded)
        if (p->rank.value_or(0) == 0 && p->order.value_or(1) == 1) return p;
    return recorded.empty() ? nullptr : recorded.front();
}

// The program's stdout goes to gpumem's stderr: gpumem's stdout holds the report.
ChildStyle program_style() {
    ChildStyle style;
    style.own_group = true;
    return style;
}

// A recording the end-to-end form made, numbered in the order it ran (every
// recording of that form is one of its runs).
void add_run(MaxBatchResults& x, MaxBatchRecording rec) {
    rec.order = static_cast<unsigned>(x.recordings.size() + 1);
    x.recordings.push_back(std::move(rec));
}

// The end-to-end form: one recording of the program at `batch`. A run that
// runs out of memory is no error: it says the answer is below `batch`.
MaxBatchRecording record_at(const MaxBatchRequest& m, std::uint64_t batch, const std::string& why, const std::string& scratch,
                            Session& session) {
    MaxBatchRecording rec;
    rec.batch = batch;
    rec.why = why;
    rec.recorded_here = true;
    rec.kept = m.keep.has_value();
    RecordSettings settings = m.settings;
    settings.file = m.keep ? batch_file_name(*m.keep, batch) : scratch + "/run" + batch_file_name("", batch) + ".pickle";
    const std::vector<std::string> command = program_at_batch(m.program, batch);
    say(session, "--max-batch: recording the program at batch " + std::to_string(batch) + " (" + why + "): " + join(command, " "));
    const ChildRun run = run_recorded(command, settings, program_style());
    rec.wall_seconds = run.wall_seconds;
    if (run.interrupted) throw InterruptedError();
    const RecordedProcess* p = main_process(run.recorded());
    const std::string at = "--max-batch: the run at batch " + std::to_string(batch);
    if (p == nullptr)
        throw Error(at + " recorded nothing: " + nothing_recorded_reason(run) + ", exit status " + std::to_string(run.exit_status));
    std::string note;
    const std::optional<RunFigures> figures = p->stats ? read_figures(*p->stats, note) : std::nullopt;
    if (figures && figures->ooms > 0) {
        rec.ooms = figures->ooms;
        rec.file = p->snapshot.value_or("");
        say(session, at + " ran out of memory (" + std::to_string(figures->ooms) + " OOMs under the cap): the answer is below it");
        return rec;
    }
    if (run.exit_status != 0)
        throw Error(at + " failed, exit status " + std::to_string(run.exit_status) +
                    ": the model needs runs that complete (its output is above)");
    rec.file = *p->snapshot;
    return rec;
}

// The recording read whole, with its batch.
rs::BatchRecording read_recording(const MaxBatchRecording& rec, ReuseSimResults& r, bool largest) {
    std::unique_ptr<rs::EventSource> source = rs::open_trace(rec.file, rs::TraceFormat::automatic, false, std::nullopt);
    const rs::LoadedTrace trace(*source, [] { throw_if_interrupted(); });
    // (Read again after the refinement: each note once.)
    for (std::string& note : source->notes())
        if (std::find(r.warnings.begin(), r.warnings.end(), rec.file + ": " + note) == r.warnings.end()) r.warnings.push_back(rec.file + ": " + note);
    // The settings the program ran with: the largest recording's, the one
    // the trace at any batch is built from.
    if (largest)
        if (const rs::RecordedAllocatorSettings* recorded = source->allocator_settings()) r.allocator_settings = *recorded;
    return {rec.batch, rec.file, trace.events()};
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

// --confirm: one real run at `batch` under the cap, its OOMs read back.
MaxBatchConfirmRun confirm_at(const MaxBatchRequest& m, std::uint64_t batch, bool expect_oom, const std::string& scratch, Session& session) {
    MaxBatchConfirmRun run;
    run.batch = batch;
    run.expect_oom = expect_oom;
    RecordSettings settings = m.settings;
    settings.file = scratch + "/confirm" + batch_file_name("", batch) + ".pickle";
    const std::vector<std::string> command = program_at_batch(m.program, batch);
    say(session, "--confirm: real run at batch " + std::to_string(batch) + (expect_oom ? " (an OOM expected)" : " (no OOM expected)") +
                     ": " + join(command, " "));
    const ChildRun child = run_recorded(command, settings, program_style());
    run.exit_status = child.exit_status;
    run.wall_seconds = child.wall_seconds;
    if (child.interrupted) {
        run.note = "interrupted";
        return run;
    }
    const RecordedProcess* p = main_process(child.recorded());
    if (p == nullptr || !p->stats) {
        run.note = nothing_recorded_reason(child) + ", exit status " + std::to_string(child.exit_status);
        return run;
    }
    run.real = read_figures(*p->stats, run.note);
    if (run.real) run.held = expect_oom ? run.real->ooms > 0 : run.real->ooms == 0 && child.exit_status == 0;
    return run;
}

// --confirm's runs below an answer that ran out of memory for real.
constexpr int kConfirmStepsDown = 3;

std::string confirm_run_line(const MaxBatchConfirmRun& run) {
    if (!run.real) return "batch " + std::to_string(run.batch) + ": no figures: " + run.note;
    return "batch " + std::to_string(run.batch) + ": " + std::to_string(run.real->ooms) + " OOMs, peak reserved " +
           rs::group_digits(run.real->peak_reserved) + " B, exit status " + std::to_string(run.exit_status) + "; " +
           (run.held ? "as predicted" : "NOT as predicted");
}

void confirm_max_batch(const MaxBatchRequest& m, MaxBatchResults& x, const std::string& scratch, Session& session) {
    const MaxBatchSetting* recorded = x.recorded();
    if (recorded == nullptr) return;
    const rs::MaxBatchAnswer& a = recorded->answer;
    const auto run = [&](std::uint64_t batch, bool expect_oom) -> const MaxBatchConfirmRun& {
        throw_if_interrupted();
        x.confirm_runs.push_back(confirm_at(m, batch, expect_oom, scratch, session));
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
        if (!a.reached_limit) (void)run(1, true);
        return;
    }
    // At the answer; where it runs out of memory for real, one batch lower
    // at a time (3 more runs at most) until a run fits.
    std::uint64_t batch = *a.largest;
    for (int steps = 0;; ++steps) {
        const MaxBatchConfirmRun& c = run(batch, false);
        if (fitted(c)) {
            x.confirmed_batch = batch;
            break;
        }
        if (!ran_out(c) || steps == kConfirmStepsDown || batch == 1) return;
        --batch;
    }
    // The next batch, where the model says it runs out of memory: only
    // after the answer itself fitted.
    if (batch == *a.largest && !a.reached_limit && fitted(run(batch + 1, true))) x.confirmed_batch = batch + 1;
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

std::string batch_file_name(const std::string& file, std::uint64_t batch) {
    const std::string tag = ".bs" + std::to_string(batch);
    const std::size_t slash = file.rfind('/');
    const std::size_t dot = file.rfind('.');
    const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
    if (dot == std::string::npos || dot <= name) return file + tag;  // no extension (a leading dot is the name's)
    return file.substr(0, dot) + tag + file.substr(dot);
}

const MaxBatchSetting* MaxBatchResults::recorded() const {
    for (const MaxBatchSetting& s : settings)
        if (s.point.recorded) return &s;
    return nullptr;
}

bool MaxBatchResults::confirmed() const {
    return !confirm_runs.empty() && std::all_of(confirm_runs.begin(), confirm_runs.end(), [](const MaxBatchConfirmRun& c) { return c.held; });
}

namespace {

std::uint64_t smallest_oom(const MaxBatchResults& x) {
    std::uint64_t oom = 0;
    for (const MaxBatchRecording& rec : x.recordings)
        if (rec.ran_out_of_memory() && (oom == 0 || rec.batch < oom)) oom = rec.batch;
    return oom;
}

std::vector<const MaxBatchRecording*> usable(const MaxBatchResults& x) {
    std::vector<const MaxBatchRecording*> kept;
    for (const MaxBatchRecording& rec : x.recordings)
        if (!rec.ran_out_of_memory()) kept.push_back(&rec);
    return kept;
}

bool recorded_at(const MaxBatchResults& x, std::uint64_t batch) {
    return std::any_of(x.recordings.begin(), x.recordings.end(), [&](const MaxBatchRecording& rec) { return rec.batch == batch; });
}

void sort_recordings(MaxBatchResults& x) {
    std::stable_sort(x.recordings.begin(), x.recordings.end(), [](const auto& a, const auto& b) { return a.batch < b.batch; });
}

// The first recordings, at --record-batches: where fewer than two run
// without an OOM, every batch halved (down to 1,2) and recorded again.
void record_first(const MaxBatchRequest& m, MaxBatchResults& x, const std::string& scratch, Session& session) {
    std::vector<std::uint64_t> batches = m.record_batches;
    for (;;) {
        for (const std::uint64_t batch : batches) {
            throw_if_interrupted();
            if (!recorded_at(x, batch)) add_run(x, record_at(m, batch, kRecordingWhy.first, scratch, session));
        }
        sort_recordings(x);
        if (usable(x).size() >= 2) return;
        if (batches.back() <= 2) {
            std::vector<std::string> oom;
            for (const MaxBatchRecording& rec : x.recordings)
                if (rec.ran_out_of_memory()) oom.push_back(std::to_string(rec.batch));
            throw Error("--max-batch: the program ran out of memory under the cap at batch " + join(oom, ", ") +
                        " (halved down to 1,2): the model needs runs at two batches that fit");
        }
        std::vector<std::uint64_t> halved;
        for (const std::uint64_t batch : batches)
            if (halved.empty() || halved.back() != std::max<std::uint64_t>(1, batch / 2)) halved.push_back(std::max<std::uint64_t>(1, batch / 2));
        if (halved.size() < 2) halved = {1, 2};
        say(session, "--max-batch: fewer than two recordings ran without an OOM: recording at half the batches");
        batches = std::move(halved);
    }
}

// The model fitted on the recordings that ran without an OOM (the two
// largest; the others check it), searched for every setting, every answer
// below the smallest batch that ran out of memory for real.
void fit_and_search(const ReuseSimRequest& q, const rs::CostModel& costs, ReuseSimResults& r, MaxBatchResults& x) {
    const MaxBatchRequest& m = *q.max_batch;
    std::vector<rs::BatchRecording> recordings;
    const MaxBatchRecording* largest = usable(x).back();  // its settings are the program's
    for (MaxBatchRecording& rec : x.recordings) {
        if (rec.ran_out_of_memory()) continue;
        rs::BatchRecording read = read_recording(rec, r, &rec == largest);
        const auto count = [&](rs::EventKind kind) {
            return static_cast<std::uint64_t>(
                std::count_if(read.events.begin(), read.events.end(), [&](const rs::Event& e) { return e.kind == kind; }));
        };
        // A given recording the allocator refused requests in (PyTorch's
        // snapshot records each refusal): the program ran out of memory
        // there, a fact like the end-to-end form's, not a run to model.
        if (!rec.recorded_here) rec.ooms = count(rs::EventKind::oom);
        if (rec.ran_out_of_memory()) continue;
        rec.requests = count(rs::EventKind::alloc);
        recordings.push_back(std::move(read));
    }
    const std::vector<const MaxBatchRecording*> kept = usable(x);
    r.input_description = "recordings at batch " + [&] {
        std::vector<std::string> batches;
        batches.reserve(kept.size());
        for (const MaxBatchRecording* rec : kept) batches.push_back(std::to_string(rec->batch));
        return join(batches, ", ");
    }();
    r.strategy_options = q.strategy_options;
    if (r.allocator_settings) {
        const rs::RecordedAllocatorSettings recorded = *r.allocator_settings;
        apply_recorded_settings(q, recorded, r);
    }

    const rs::BatchModel model = rs::BatchModel::fit(std::move(recordings));
    x.checks = model.checks();
    x.model = model;
    const std::vector<rs::GridPoint> points = rs::grid_points(r.strategy_options.torch, q.tune->axes);
    std::vector<rs::TorchLane> lanes;
    lanes.reserve(points.size());
    for (const rs::GridPoint& p : points) lanes.push_back({p.options, q.capacity});
    rs::MaxBatchOptions options;
    options.limit = m.limit;
    options.headroom = m.headroom;
    if (const std::uint64_t oom = smallest_oom(x); oom != 0) {
        x.oom_batch = oom;
        options.limit = std::min(options.limit, oom - 1);
    }
    // The end-to-end form's runs ran under the recorded setting and the
    // cap: the largest that fitted is a fact for that setting's answer. (A
    // given recording may have run under another cap: no fact.)
    std::uint64_t ran = 0;
    for (const MaxBatchRecording& rec : x.recordings)
        if (rec.recorded_here && !rec.ran_out_of_memory()) ran = std::max(ran, rec.batch);
    options.ran.assign(points.size(), 0);
    for (std::size_t i = 0; i < points.size(); ++i)
        if (points[i].recorded) options.ran[i] = ran;
    options.replay.base = r.strategy_options;
    options.replay.costs = &costs;
    options.replay.threads = rs::usable_cores();
    options.replay.poll = [] { throw_if_interrupted(); };
    const auto start = std::chrono::steady_clock::now();
    const std::vector<rs::MaxBatchAnswer> answers = rs::search_max_batch(model, lanes, options);
    x.search_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    x.settings.clear();
    for (std::size_t i = 0; i < points.size() && i < answers.size(); ++i) x.settings.push_back({points[i], answers[i]});
    rank_settings(x.settings);
}

// The batches near the first answer `a1` worth recording: 1/2 and 3/4 of
// it, above every batch recorded; none where a1 is within twice the
// largest recorded batch (the extrapolation is short already).
std::vector<std::uint64_t> refinement_batches(std::uint64_t a1, const MaxBatchResults& x) {
    std::uint64_t largest = 0;
    for (const MaxBatchRecording& rec : x.recordings) largest = std::max(largest, rec.batch);
    std::vector<std::uint64_t> batches;
    if (a1 <= 2 * largest) return batches;
    for (const std::uint64_t batch : {(a1 + 1) / 2, (3 * a1 + 2) / 4})
        if (batch > largest && (batches.empty() || batches.back() != batch)) batches.push_back(batch);
    return batches;
}

// Checks: a real run at the model's answer, the model refitted on it, while
// the answer is a batch no real run has tried. A run that fits makes the
// next extrapolation one of a batch or two; one that runs out of memory
// clips the answer below it (the model missed a library's choice at the
// edge: cuDNN's workspace that no longer fits, a cached block the
// allocator must split). Where the answer ran and the model does not hold,
// a hopeful answer a few batches above it is the model's own doubt: a run
// there settles it. Each check that fits moves the answer onto a batch that
// ran: then it is a fact, not the model's.
struct Check {
    std::uint64_t batch;
    const char* why;  // kRecordingWhy.at_answer or .at_hopeful
};

std::optional<Check> next_check(const MaxBatchResults& x) {
    const MaxBatchSetting* recorded = x.recorded();
    if (recorded == nullptr || !recorded->answer.largest) return std::nullopt;
    const rs::MaxBatchAnswer& a = recorded->answer;
    const std::uint64_t answer = *a.largest;
    // Every batch searched fits: no answer to check (but one clipped below
    // a check that ran out of memory is).
    if (a.reached_limit && !(x.oom_batch && answer + 1 == *x.oom_batch)) return std::nullopt;
    // Below a batch that ran (a replay that is not monotone in the batch):
    // nothing a run there would settle.
    for (const MaxBatchRecording& rec : x.recordings)
        if (rec.batch > answer && !rec.ran_out_of_memory()) return std::nullopt;
    if (!recorded_at(x, answer)) return Check{answer, kRecordingWhy.at_answer};
    // A narrow range only (a few batches: doubt about the last requests); a
    // wide one means the hopeful trace leaves out much of the program (a
    // detection model's thousands of data-dependent requests: 29 to 267),
    // no answer a run would bear out. And until a hopeful check runs out of
    // memory: the hopeful trace is then refuted at the edge, and each batch
    // below it would cost a run (ViT-S under 5 GiB: 77 ran, 80, 79 and 78
    // ran out of memory).
    const bool refuted = std::any_of(x.recordings.begin(), x.recordings.end(), [](const MaxBatchRecording& rec) {
        return rec.why == kRecordingWhy.at_hopeful && rec.ran_out_of_memory();
    });
    if (!x.model_holds() && !refuted && a.largest_hopeful && *a.largest_hopeful > answer && !recorded_at(x, *a.largest_hopeful) &&
        *a.largest_hopeful - answer <= std::max<std::uint64_t>(2, answer / 16))
        return Check{*a.largest_hopeful, kRecordingWhy.at_hopeful};
    return std::nullopt;
}

void check_answer(const ReuseSimRequest& q, const rs::CostModel& costs, ReuseSimResults& r, MaxBatchResults& x, const std::string& scratch,
                  Session& session) {
    const MaxBatchRequest& m = *q.max_batch;
    for (unsigned k = 0; k < m.checks; ++k) {
        const std::optional<Check> check = next_check(x);
        if (!check) return;
        throw_if_interrupted();
        add_run(x, record_at(m, check->batch, check->why, scratch, session));
        sort_recordings(x);
        fit_and_search(q, costs, r, x);
    }
}

}  // namespace

void max_batch_reuse_sim(const ReuseSimRequest& q, const rs::CostModel& costs, ReuseSimResults& r, Session& session) {
    const MaxBatchRequest& m = *q.max_batch;
    MaxBatchResults& x = r.max_batch.emplace();
    // The program's files live in a scratch folder unless --record keeps them.
    const ScratchDirectory scratch("max-batch");
    if (m.program.empty()) {
        for (const auto& [batch, file] : m.traces) x.recordings.push_back({batch, file, false, true, 0, 0, kRecordingWhy.given, 0});
        sort_recordings(x);
        fit_and_search(q, costs, r, x);
    } else {
        record_first(m, x, scratch.path(), session);
        fit_and_search(q, costs, r, x);
        // Refinement: the first recordings are small batches, where
        // libraries pick other kernels and workspaces, and extrapolating
        // 50-200x magnifies every error: record again near the answer.
        const MaxBatchSetting* recorded = x.recorded();
        if (m.refine && recorded != nullptr && recorded->answer.largest && !recorded->answer.reached_limit) {
            const std::uint64_t a1 = *recorded->answer.largest;
            const std::vector<std::uint64_t> batches = refinement_batches(a1, x);
            if (!batches.empty()) {
                x.first_answer = a1;
                for (const std::uint64_t batch : batches) {
                    throw_if_interrupted();
                    add_run(x, record_at(m, batch, kRecordingWhy.near_answer, scratch.path(), session));
                }
                sort_recordings(x);
                fit_and_search(q, costs, r, x);
            }
        }
        if (m.refine) check_answer(q, costs, r, x, scratch.path(), session);
    }
    if (m.confirm) confirm_max_batch(m, x, scratch.path(), session);
}

}  // namespace gpumem::cli
