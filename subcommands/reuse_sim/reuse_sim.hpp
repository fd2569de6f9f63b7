// gpumem reuse-sim's checked request, its results and the pure report:
// reuse_sim.cpp registers the options and checks them, reuse_sim_run.cpp
// simulates (and with --execute replays on a GPU), reuse_sim_report.cpp
// builds the document. The CPU tests call the report with synthetic results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/device_id.hpp"
#include "base/device_spec.hpp"
#include "base/name_table.hpp"
#include "base/record_plan.hpp"
#include "cli/chart.hpp"
#include "cli/command.hpp"
#include "cli/plot.hpp"
#include "reuse_sim/batch_model.hpp"
#include "reuse_sim/cost_table.hpp"
#include "reuse_sim/max_batch_plan.hpp"
#include "reuse_sim/record_run.hpp"
#include "reuse_sim/simulator.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tune_replays.hpp"
#include "reuse_sim/tuner.hpp"
#include "reuse_sim/upstream.hpp"
#include "reuse_sim/workloads.hpp"

namespace gpumem::cli {

// What the report says of the input before it is read.
struct ReuseSimInput {
    std::optional<std::string> trace;  // --trace: a path, or "-" for standard input; none: a workload
    reuse_sim::TraceFormat trace_format = reuse_sim::TraceFormat::automatic;
    std::optional<std::uint32_t> trace_device;  // --trace-device: a snapshot's device
    reuse_sim::WorkloadOptions workload;  // without --trace
};

// --tune / --sweep: the grid of torch-caching settings to replay.
struct TuneRequest {
    std::vector<reuse_sim::SweepAxis> axes;  // the knobs varied, in kKnobs' order
    unsigned threads = 0;                    // lanes replayed at once; 0: one per usable core
    bool skip_equivalent = true;             // replay settings that provably replay alike once (tests compare)
    bool all_settings = false;               // --all-settings: the table shows every outcome and setting, not the best 10
};

// --record FILE -- CMD: the program run under the recording hook
// (reuse_sim_confirm.cpp), instead of a replay.
struct RecordRequest {
    RecordSettings settings;
    std::vector<std::string> command;
};

// tune --confirm --max-runs K -- CMD: after the ranking, real runs of the
// program, up to K (default 1): the best setting first, then, after a run in which the program
// saw an OOM, the best untried setting that fits in that run's own
// recording, until one runs without an OOM (reuse_sim_confirm.cpp).
struct ConfirmRequest {
    std::size_t candidates = 1;
    std::vector<std::string> command;
    RecordSettings settings;  // the cap of the real runs; each run's file is gpumem's own
    DeviceSpec device;        // checked before anything runs: no GPU, exit 3
};

// Where the program's batch goes in its words (-- python train.py --bs {batch}).
inline constexpr std::string_view kBatchPlaceholder = "{batch}";
// The program's words with every {batch} replaced by `batch`.
std::vector<std::string> program_at_batch(const std::vector<std::string>& program, std::uint64_t batch);
// --record FILE with --max-batch: where the recording at `batch` is kept,
// FILE with .bsN before its extension (run.pickle: run.bs8.pickle).
std::string batch_file_name(const std::string& file, std::uint64_t batch);

// --max-batch: the largest batch that fits, from recordings of one program
// at several batches (reuse_sim_max_batch.cpp).
struct MaxBatchRequest {
    // --batch-trace B=FILE, as given: recordings already made.
    std::vector<std::pair<std::uint64_t, std::string>> traces;
    // Or the end-to-end form: the program after --, its words holding
    // {batch}, recorded by gpumem at each of `record_batches`, then (unless
    // --no-refine) again near the first answer.
    std::vector<std::string> program;
    std::vector<std::uint64_t> record_batches;  // --record-batches; default 4,8
    bool refine = true;                         // off with --no-refine
    std::optional<std::string> keep;            // --record FILE: the recordings kept as FILE.bsN (else a scratch folder, removed)
    RecordSettings settings;                    // the cap of every real run
    bool confirm = false;                       // --confirm: real runs at the answer and the next batch
    std::uint64_t limit = 1u << 20;             // the largest batch searched
    // A batch fits when its modelled peak reserved stays at or below the
    // cap less this (--headroom; default 0: the replay of a recording is
    // exact to the byte, and the checks at the answer, not a margin, catch
    // what the model misses).
    std::uint64_t headroom = 0;
    // The most real runs of the program, every recording included (the
    // first ones, the refinement's, the checks, the bisection, the runs
    // below the answer, the best setting's); --confirm's runs come on top.
    unsigned max_runs = kDefaultMaxRuns;
    static constexpr unsigned kDefaultMaxRuns = 12;
};

// Everything the options say, checked (check() in reuse_sim.cpp).
struct ReuseSimRequest {
    // The job: "reuse-sim replay", "reuse-sim tune", "reuse-sim record" or
    // "reuse-sim max-batch" (the document's command).
    std::string command = "reuse-sim replay";
    ReuseSimInput input;
    std::vector<const Named<reuse_sim::StrategySpec>*> strategies;  // rows of kStrategies, in the order given
    reuse_sim::StrategyOptions strategy_options;
    // The torch-caching settings given as flags: they override a snapshot's.
    struct {
        bool max_split_size = false, roundup_power2_divisions = false;
    } torch_flags;
    std::uint64_t sync_every = 0;               // 0: no extra synchronizations
    std::uint64_t capacity = reuse_sim::kUnlimited;
    std::optional<std::string> costs;           // --costs FILE; none: the built-in table
    std::optional<std::string> timeline;        // --timeline FILE
    std::uint64_t timeline_points = 1000;
    std::optional<std::string> save_trace;      // --save-trace FILE
    bool chart = true;                          // table format without --no-chart
    LevelChartStyle chart_style;
    std::optional<DeviceSpec> execute_on;       // --execute: one device
    std::vector<std::string> warnings;          // options that tune no selected strategy
    std::optional<TuneRequest> tune;            // --tune, --sweep: the what-if tuner instead of the comparison
    std::optional<std::string> plot;            // --plot FILE.svg: checked writable, never an input
    std::optional<std::string> recorded_device;  // --plot: the GPU --trace was recorded on (its statistics)
    std::optional<RecordRequest> record;        // --record: run a program and record it, nothing else
    std::optional<ConfirmRequest> confirm;      // --confirm: real runs after --tune
    std::optional<MaxBatchRequest> max_batch;   // --max-batch: the largest batch instead of a replay
    // The statistics --record wrote beside the trace (FILE.stats.json): the
    // cap in force when the program ran, and torch's version.
    std::optional<RecordingStats> recording;
    bool capacity_from_recording = false;       // no --capacity or --memory-fraction: the recording's cap is the replay's

    // Points the replay keeps: for --timeline and the chart (0: none).
    std::size_t replay_timeline_points() const;
};

// The upstream API calls that must agree between a strategy's simulated and
// real (--execute) replays.
struct ApiCall {
    const char* name;  // the key in the document's execute.runs[].calls
    std::uint64_t reuse_sim::UpstreamCounters::*count;
};
inline constexpr ApiCall kApiCalls[] = {
    {"cudaMalloc", &reuse_sim::UpstreamCounters::device_allocs},
    {"cudaFree", &reuse_sim::UpstreamCounters::device_frees},
    {"cudaMallocAsync", &reuse_sim::UpstreamCounters::async_allocs},
    {"cudaFreeAsync", &reuse_sim::UpstreamCounters::async_frees},
    {"cudaMemset", &reuse_sim::UpstreamCounters::fills},
    {"cudaDeviceSynchronize", &reuse_sim::UpstreamCounters::synchronizations},
};

// One strategy replayed for real (--execute), beside its simulation.
struct ExecuteRun {
    reuse_sim::LaneResult simulated, measured;
    double wall_seconds = 0;
    bool counts_agree = false;  // the same upstream calls and OOMs
};

struct ExecuteResults {
    DeviceId device;
    std::string device_name;
    std::uint64_t free_bytes_before = 0;
    std::optional<std::uint64_t> free_bytes_after;  // once every run is done
    std::vector<ExecuteRun> runs;                    // one per strategy, as each finishes

    // Strategies whose real device refused requests the simulated one
    // granted (the GPU had less free memory than the replay needs; their
    // call counts then differ too, but the cause is memory, not the model),
    // and those whose counts differ otherwise.
    std::vector<std::string> out_of_memory() const;
    std::vector<std::string> mismatched() const;
    // Requests the GPU refused that the simulated device granted.
    std::uint64_t refused() const;
    bool verified() const { return free_bytes_after && out_of_memory().empty() && mismatched().empty(); }
};

// The smallest capacity one setting fits in (a row of the ranking).
struct FitCapacity {
    std::size_t row = 0;  // its index in TuneResults::rows
    reuse_sim::CapacitySearch search;
};

// The tuner's replays: every grid point, ranked, and the capacity search.
struct TuneResults {
    std::uint64_t grid_points = 0;          // settings replayed (the grid, and the baseline when not in it)
    std::uint64_t lanes_replayed = 0;       // replays of the grid: settings that replay alike count once
    std::vector<reuse_sim::TuneRow> rows;   // ranked (reuse_sim::rank_rows)
    reuse_sim::CapacitySearch search;       // for the best setting
    // A recording without an OOM (its recorded setting's replay has none):
    // the cap each of the top settings (of distinct outcomes, up to
    // kFitCapacitySettings) would need, so "would it fit in 40 GB?" has a
    // number. The first is the best setting's `search`.
    std::vector<FitCapacity> fit_capacities;
    // --plot: the settings drawn (indices into `rows`: the best of distinct
    // outcomes and the recorded one), replayed again with a timeline whose
    // lanes are theirs, in that order.
    std::vector<std::size_t> plotted_rows;
    std::optional<reuse_sim::Timeline> plotted;
};
inline constexpr std::size_t kFitCapacitySettings = 3;
// The most settings --plot draws of --tune or --sweep.
inline constexpr std::size_t kPlottedSettings = 5;

// One real run of --confirm.
struct ConfirmRun {
    ConfirmRunOutcome outcome;  // the tuned setting, predicted and real figures, held, the tuning that chose it
    std::string alloc_conf;     // what the run got: the user's kept items and the setting
    std::size_t rank = 0;       // the setting's rank in the table of the tuning that chose it
    // The run's recording, kept (confirm_file_name), and its statistics:
    // the compared process's files; none when it wrote none.
    std::optional<std::string> recording, stats;
    double wall_seconds = 0;
    int exit_status = 0;        // the program's, as a shell reports it
    // The program's rank whose memory_stats() were compared, when it ran
    // several: the rank the trace was recorded from (its file name's
    // ".rankN"), else rank 0.
    std::optional<unsigned> process_rank;
    // Of several processes (no launcher, or several of one rank): the
    // compared one's place (its trace's .procN, else 1) and its pid.
    std::optional<unsigned> process_order;
    std::optional<long> process_pid;
};

// A tuning of a real run's recording (the same grid, the runs' cap).
struct ConfirmTuning {
    std::size_t run = 0;         // the run whose recording it replayed
    std::uint64_t capacity = 0;  // reuse_sim::kUnlimited: none
    TuneResults tune;
};

struct ConfirmResults {
    std::size_t candidates = 0;
    std::optional<std::uint64_t> cap;  // the real runs' cap (their recordings' cap in force), when known
    ConfirmStop stop = ConfirmStop::converged;
    bool converged = false;            // the last run ran without an OOM
    std::vector<ConfirmTuning> tunings;  // of each run whose program saw an OOM, in order
    std::optional<std::string> user_alloc_conf;  // the user's allocator settings, as the program's torch reads them
    std::optional<std::string> user_alloc_conf_variable;  // the variable they come from: PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF
    MergedAllocConf merged;                      // its items kept and replaced (conf: of the first run)
    std::vector<ConfirmRun> runs;
    bool interrupted = false;
};

// --max-batch: one recording of the program, at its batch: the planner's
// fact (batch, setting, why, outcome, order) and where it is.
struct MaxBatchRecording : reuse_sim::BatchRun {
    std::string file;
    bool kept = false;           // the file stays (--batch-trace, or --record FILE)
    double wall_seconds = 0;     // the run that recorded it
    int exit_status = 0;         // the program's (the run that recorded it)
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

// --max-batch: the answer for one setting of the grid (the planner's row).
using MaxBatchSetting = reuse_sim::MaxBatchSetting;

// --max-batch --confirm: one real run, at the answer or at the next batch.
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
// ended) and what the command adds: the recordings' files, the confirm runs.
struct MaxBatchResults : reuse_sim::MaxBatchState {
    std::vector<MaxBatchRecording> recordings;  // ascending batch
    double search_seconds = 0;
    std::vector<MaxBatchConfirmRun> confirm_runs;  // --confirm, as each ends
    bool confirm_interrupted = false;

    // The real runs of a setting ("" for the recorded one), as facts.
    reuse_sim::SettingFacts facts(const std::string& setting, std::optional<std::uint64_t> model_answer) const;
    reuse_sim::SettingFacts facts_of(const MaxBatchSetting& s) const { return facts(s.key(), s.answer.largest); }
    // The real runs gpumem made for the search (--confirm's not counted).
    unsigned runs() const;
    // --plot: the modelled peak reserved with no cap at some batches, for
    // the recorded setting and the best (reuse_sim_plot.cpp).
    struct Curve {
        std::size_t setting = 0;  // index into `settings`
        std::vector<std::pair<std::uint64_t, std::uint64_t>> peaks;  // batch, peak reserved; ascending batch
    };
    std::vector<Curve> curves;
    std::optional<std::string> device_name;  // --plot: the GPU the recordings ran on (their statistics)

    // --confirm: every real run said what the model said.
    bool confirmed() const;
};

// Filled as the run goes: a failure part way reports what was done.
struct ReuseSimResults {
    std::vector<std::string> warnings;  // the cost table's gaps, trace lines not replayed
    std::string cost_device, cost_source;
    std::string input_description, input_format;
    reuse_sim::StrategyOptions strategy_options;  // as used: ring's size from the pre-pass, a snapshot's settings
    // The allocator settings the input recorded (a PyTorch snapshot), and
    // the names of those a flag overrode.
    std::optional<reuse_sim::RecordedAllocatorSettings> allocator_settings;
    std::vector<std::string> overridden_settings;
    // The settings the program changed as it ran (the recording hook's
    // _set_allocator_settings calls): the ordinal of each change's event and
    // its text, replayed from there on.
    std::vector<std::pair<std::uint64_t, std::string>> settings_changes;
    // What the input says the replay serves otherwise than PyTorch did
    // (private pools placed without the hook's record of their contexts,
    // settings changed at places it does not know), for the warnings.
    std::vector<std::string> replay_causes;
    std::optional<reuse_sim::ReplaySummary> summary;  // once the simulation has run
    std::vector<reuse_sim::LaneResult> lanes;         // one per strategy, in the request's order
    std::optional<reuse_sim::Timeline> timeline;
    std::optional<ExecuteResults> execute;
    std::optional<TuneResults> tune;                  // --tune, --sweep
    std::optional<ConfirmResults> confirm;            // --confirm, as each real run ends
    std::optional<ChildRun> record;                   // --record
    std::optional<MaxBatchResults> max_batch;         // --max-batch
    bool complete = false;  // everything ran, --execute's checks passed
};

void execute_reuse_sim(const ReuseSimRequest& q, ReuseSimResults& r, Session& session);
// --tune, --sweep (reuse_sim_tune.cpp): the grid replayed from `source`, ranked, and the capacity search.
// `progress_columns`: a progress line on stderr within that width (a
// terminal, without -q); none: no line.
void tune_reuse_sim(const ReuseSimRequest& q, reuse_sim::EventSource& source, const reuse_sim::CostModel& costs, ReuseSimResults& r,
                    std::optional<std::size_t> progress_columns = std::nullopt);
// --record (reuse_sim_confirm.cpp): runs the program, says what it wrote on
// stderr, and passes its exit status on through the session.
void record_reuse_sim(const ReuseSimRequest& q, ReuseSimResults& r, Session& session);
// --confirm (reuse_sim_confirm.cpp): the real runs after --tune's ranking.
void confirm_reuse_sim(const ReuseSimRequest& q, ReuseSimResults& r, Session& session);
// --confirm's tuning of a real run's recording (reuse_sim_run.cpp): `trace`
// read as --trace is, replayed under q's grid and `capacity` as --tune
// does, and the capacity search; the tuner's warnings of it are dropped.
TuneResults tune_recording(const ReuseSimRequest& q, const std::string& trace, std::uint64_t capacity);
// The answer of --confirm, a few lines (record_plan's confirm_answer).
std::vector<std::string> confirm_answer_lines(const ReuseSimResults& r);
// The tuner's knobs: their keys in PYTORCH_CUDA_ALLOC_CONF are the grid's
// to set; the user's other keys are kept (reuse_sim_confirm.cpp).
std::vector<std::string_view> alloc_conf_grid_keys();
// --max-batch (reuse_sim_max_batch.cpp): records the program where asked,
// fits the model, searches every setting, and with --confirm runs the
// program at the answer and the next batch.
void max_batch_reuse_sim(const ReuseSimRequest& q, const reuse_sim::CostModel& costs, ReuseSimResults& r, Session& session);
// What a snapshot's private pools and settings changes mean for the replay
// (reuse_sim_run.cpp): r's settings_changes, replay_causes and warnings,
// once `source` was read.
void note_allocator_facts(const ReuseSimRequest& q, const reuse_sim::EventSource& source, ReuseSimResults& r);
// A snapshot's allocator settings become torch-caching's, except where a
// flag set one (reuse_sim_run.cpp).
void apply_recorded_settings(const ReuseSimRequest& q, const reuse_sim::RecordedAllocatorSettings& recorded, ReuseSimResults& r);
// --max-batch's answer first, then its lines (reuse_sim_max_batch_report.cpp).
std::string max_batch_answer_text(const ReuseSimRequest& q, const ReuseSimResults& r, Unit unit);
Report max_batch_report(const ReuseSimRequest& q, const ReuseSimResults& r, const OutputOptions& output, Report report);
// The document's "max_batch" and its table's schema.
Cell max_batch_cell(const ReuseSimRequest& q, const ReuseSimResults& r);
const FieldSchemaSet& max_batch_document_schema();
FieldSchemaSet max_batch_table_schema();
std::string confirm_answer_text(const ReuseSimResults& r);
Report reuse_sim_report(const ReuseSimRequest& q, const ReuseSimResults& r, const OutputOptions& output);

// --plot (reuse_sim_plot.cpp): with --max-batch, the modelled peak reserved
// of the recorded and the best setting at batches around the answer, from
// the model kept in the results; with --tune or --sweep, the best settings
// replayed again with a timeline.
void max_batch_plot_curves(const reuse_sim::CostModel& costs, ReuseSimResults& r);
void tune_plot_timeline(const ReuseSimRequest& q, const reuse_sim::LoadedTrace& trace, const reuse_sim::LaneReplayOptions& options,
                        const reuse_sim::CostModel& costs, TuneResults& tune);
// The picture of a replay, a tuning or --max-batch's answer; none before
// anything was replayed.
std::optional<Plot> reuse_sim_plot(const ReuseSimRequest& q, const ReuseSimResults& r);

// The document's keys (each job's CommandDefinition::schema), titled by the job.
DocumentSchema reuse_sim_document_schema(const std::string& command = "reuse-sim replay");

}  // namespace gpumem::cli
