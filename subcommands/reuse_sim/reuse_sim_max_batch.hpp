// gpumem reuse-sim max-batch: the largest batch that fits, from recordings
// of one program at several batches (--batch-trace, or the program after --
// recorded by gpumem). Its options and check() are in
// reuse_sim_max_batch_check.cpp, execute() in reuse_sim_max_batch.cpp, the
// report, its schema and the picture in reuse_sim_max_batch_report.cpp.
// The CPU tests call the report with synthetic results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/record_plan.hpp"
#include "reuse_sim/batch_model.hpp"
#include "reuse_sim/max_batch_plan.hpp"
#include "reuse_sim/record_run.hpp"
#include "reuse_sim/reuse_sim_common.hpp"

namespace gpumem::cli {

// Where the program's batch goes in its words (-- python train.py --bs {batch}).
inline constexpr std::string_view kBatchPlaceholder = "{batch}";
// The knob searched: the one name in braces in the program's words
// ({batch}, {seq}, any {NAME}: a letter or _, then letters, digits, _).
// Its names, distinct, in the order they first appear.
std::vector<std::string> knob_placeholders(const std::vector<std::string>& program);
// The program's words with every {knob} replaced by `value`.
std::vector<std::string> program_at(const std::vector<std::string>& program, const std::string& knob, std::uint64_t value);
inline std::vector<std::string> program_at_batch(const std::vector<std::string>& program, std::uint64_t batch) {
    return program_at(program, "batch", batch);
}
using reuse_sim::knob_superlative;
using reuse_sim::knob_values;
// max-batch -o FILE: where the recording at a value of the knob is kept,
// FILE with .bsN (a batch) or .NAMEN (another knob) before its extension
// (run.pickle: run.bs8.pickle, run.seq2048.pickle).
std::string batch_file_name(const std::string& file, const std::string& knob, std::uint64_t value);

struct MaxBatchRequest {
    ReplaySetup setup;                  // torch-caching alone, under the cap every batch must fit in
    std::vector<std::string> warnings;  // a bare capacity
    // The settings searched: --sweep or --full-grid, else the recorded
    // setting and expandable segments.
    TuneGrid grid;
    // --batch-trace B=FILE, as given: recordings already made.
    std::vector<std::pair<std::uint64_t, std::string>> traces;
    // Or the end-to-end form: the program after --, its words holding
    // {batch}, recorded by gpumem at each of `record_batches`, then (unless
    // --no-refine) again near the first answer.
    std::vector<std::string> program;
    // The knob its {NAME} names: "batch", "seq", ...; the search is of its
    // values (the keys and words below say batch for any knob).
    std::string knob = "batch";
    std::vector<std::uint64_t> record_batches;  // --record-batches; default 4,8 (another knob: 128,256)
    bool refine = true;                         // off with --no-refine
    std::optional<std::string> keep;            // -o FILE: the recordings kept as FILE.bsN (else a scratch folder, removed)
    RecordSettings settings;                    // the cap of every real run
    bool confirm = false;                       // --confirm: real runs at the answer and the next batch
    std::uint64_t limit = 1u << 20;             // the largest batch searched
    std::uint64_t multiple_of = 1;              // --multiple-of N: only multiples of N are searched and run
    // A batch fits when its modelled peak reserved stays at or below the
    // cap less this (--headroom; default 0: the replay of a recording is
    // exact to the byte, and the checks at the answer, not a margin, catch
    // what the model misses).
    std::uint64_t headroom = 0;
    // The most real runs of the program, every recording included (the
    // first ones, the refinement's, the checks, the bisection, the runs
    // below the answer, the best setting's); --confirm's runs come on top.
    unsigned max_runs = kDefaultMaxRuns;
    bool max_runs_given = false;  // --max-runs: the ladder's runs count against it
    static constexpr unsigned kDefaultMaxRuns = 16;
    // --jobs N: runs at once; none: auto (as the GPUs' free memory, their
    // count and the cores allow: base/run_slots.hpp).
    std::optional<unsigned> jobs;
    // --repeats N: the runs an answer needs, all without an OOM; 0: the
    // planner's (two; three where the recordings show timing matters).
    unsigned repeats = 0;
    std::optional<std::string> plot;  // --plot FILE.svg: checked writable, never an input
    // Runs of `python SCRIPT ...` fork from a process that imported the
    // script's modules once (record_run.hpp's RunForkServers); off with
    // --no-fork-server.
    bool fork_server = true;
};

// One recording of the program, at its batch: the planner's fact (batch,
// setting, why, outcome, order) and where it is.
struct MaxBatchRecording : reuse_sim::BatchRun {
    std::string file;
    bool kept = false;           // the file stays (--batch-trace, or -o FILE)
    double wall_seconds = 0;     // the run that recorded it
    // When that run started, in seconds since the search did: where a
    // search's wall time goes (runs side by side, one step after another).
    double started_seconds = 0;
    int exit_status = 0;         // the program's (the run that recorded it)
    bool forked = false;         // that run was forked from the fork server, not started fresh
    std::uint64_t requests = 0;  // allocations in it
    // The program ran out of memory there for real: a fact (the answer is
    // below this batch), left out of the model; how many times.
    std::uint64_t ooms = 0;
    // A program of several ranks (torchrun): each rank's file, and the
    // ranks that ran out of memory. Empty for one process (`file`).
    struct Rank {
        unsigned rank = 0;
        std::string file;
        std::uint64_t ooms = 0;
        std::uint64_t requests = 0;
    };
    std::vector<Rank> ranks;
};

// The answer for one setting of the grid (the planner's row).
using MaxBatchSetting = reuse_sim::MaxBatchSetting;

// max-batch --confirm: one real run, at the answer or at the next batch.
struct MaxBatchConfirmRun {
    std::uint64_t batch = 0;
    std::string setting;      // as MaxBatchRecording::setting: empty, the recorded one
    bool reused = false;      // the search ran this batch under this setting already: its run, not a new one
    bool expect_oom = false;  // the next batch: the model says it runs out of memory
    int exit_status = 0;
    double wall_seconds = 0;
    std::optional<RunFigures> real;  // its memory_stats(), where it wrote them
    bool held = false;               // no OOM at the answer, an OOM at the next batch
    std::string note;                // why there are no figures
};

// The planner's state (the settings ranked, the model, how the search
// ended) and what the job adds: the recordings' files, the confirm runs.
struct MaxBatchSearchResults : reuse_sim::MaxBatchState {
    std::vector<MaxBatchRecording> recordings;  // ascending batch
    double search_seconds = 0;
    double fit_seconds = 0;  // reading the recordings and fitting the model, every fit
    std::string knob = "batch";  // the request's, for the words of the report
    std::uint64_t step = 1;      // --multiple-of: the next value is the answer plus this
    // The most runs that went at once (--jobs), and what held it there
    // ("the GPU's free memory", "the host's cores", "--jobs 1").
    unsigned jobs = 1;
    std::string jobs_limit;
    // Where the fork server stood at the end ("ready after 14.2 s", "unfit:
    // why", "off: --no-fork-server"); empty where the program is not
    // `python SCRIPT ...`.
    std::string fork_server;
    // What the runs held as late as NCCL may free it (RecordSettings::
    // hold_late), as the largest recording's tightest rank held it: the
    // answer's bound. Empty: nothing held (no DDP over NCCL).
    std::vector<std::string> held_late;  // "ddp_first_buckets"
    std::uint64_t held_late_bytes = 0;
    std::vector<MaxBatchConfirmRun> confirm_runs;  // --confirm, as each ends
    bool confirm_interrupted = false;

    // The real runs of a setting ("" for the recorded one), as facts.
    reuse_sim::SettingFacts facts(const std::string& setting, std::optional<std::uint64_t> model_answer) const;
    reuse_sim::SettingFacts facts_of(const MaxBatchSetting& s) const { return facts(s.key(), s.answer.largest); }
    // The real runs gpumem made for the search (--confirm's not counted).
    unsigned runs() const;
    // --plot: the modelled peak reserved with no cap at some batches, for
    // the recorded setting and the best (max_batch_plot_curves).
    struct Curve {
        std::size_t setting = 0;  // index into `settings`
        std::vector<std::pair<std::uint64_t, std::uint64_t>> peaks;  // batch, peak reserved; ascending batch
    };
    std::vector<Curve> curves;
    std::optional<std::string> device_name;  // --plot: the GPU the recordings ran on (their statistics)

    // --confirm: every real run said what the model said.
    bool confirmed() const;
};

struct MaxBatchResults : ReplayedInput {
    std::optional<MaxBatchSearchResults> search;  // once the search began
};

void execute_max_batch(const MaxBatchRequest& q, MaxBatchResults& r, Session& session);
// Records the program where asked, fits the model, searches every setting,
// and with --confirm runs the program at the answer and the next batch
// (reuse_sim_max_batch.cpp).
void max_batch_search(const MaxBatchRequest& q, const reuse_sim::CostModel& costs, MaxBatchResults& r, Session& session);
// --plot: the modelled peak reserved of the recorded and the best setting
// at batches around the answer, from the model kept in the results.
void max_batch_plot_curves(const reuse_sim::CostModel& costs, MaxBatchResults& r);

// The answer first, then its lines.
std::string max_batch_answer_text(const MaxBatchRequest& q, const MaxBatchResults& r, Unit unit);
Report max_batch_report(const MaxBatchRequest& q, const MaxBatchResults& r, const OutputOptions& output);
// The picture: peak reserved against the batch, the real runs, the answer;
// none without the curves.
std::optional<Plot> max_batch_plot(const MaxBatchRequest& q, const MaxBatchResults& r);
// The document's keys (the job's CommandDefinition::schema).
DocumentSchema max_batch_document_schema();

}  // namespace gpumem::cli
