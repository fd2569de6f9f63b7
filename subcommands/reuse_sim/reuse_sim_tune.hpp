// gpumem reuse-sim tune: torch-caching replayed under a grid of settings,
// each a lane of one replay, ranked, and the smallest capacity the best fits
// in; with --confirm, real runs of the program under the best settings. Its
// options, check() and execute() are in reuse_sim_tune.cpp, the grid's
// replays in reuse_sim_tune_replays.cpp, --confirm's runs in
// reuse_sim_tune_confirm.cpp, the report, its schema and the picture in
// reuse_sim_tune_report.cpp. The CPU tests call the report with synthetic results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/device_spec.hpp"
#include "base/record_plan.hpp"
#include "reuse_sim/record_run.hpp"
#include "reuse_sim/reuse_sim_common.hpp"
#include "reuse_sim/tune_replays.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::cli {

// tune --confirm --max-runs K -- CMD: after the ranking, real runs of the
// program, up to K (default 1): the best setting first, then, after a run in
// which the program saw an OOM, the best untried setting that fits in that
// run's own recording, until one runs without an OOM (reuse_sim_tune_confirm.cpp).
struct ConfirmRequest {
    std::size_t candidates = 1;
    std::vector<std::string> command;
    RecordSettings settings;  // the cap of the real runs; each run's file is gpumem's own
    DeviceSpec device;        // checked before anything runs: no GPU, exit 3
};

struct TuneRequest {
    ReuseSimInput input;
    ReplaySetup setup;                  // torch-caching alone
    std::vector<std::string> warnings;  // a bare capacity, the recording's cap
    TuneGrid grid;
    std::optional<ConfirmRequest> confirm;       // --confirm: real runs after the ranking
    std::optional<std::string> plot;             // --plot FILE.svg: checked writable, never an input
    std::optional<std::string> recorded_device;  // --plot: the GPU the trace was recorded on (its statistics)
};

// The smallest capacity one setting fits in (a row of the ranking).
struct FitCapacity {
    std::size_t row = 0;  // its index in TuneRanking::rows
    reuse_sim::CapacitySearch search;
};

// The tuner's replays: every grid point, ranked, and the capacity search.
struct TuneRanking {
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
// The most settings --plot draws.
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
    TuneRanking tune;
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

struct TuneResults : ReplayedInput {
    std::optional<TuneRanking> ranking;     // once the grid was replayed
    std::optional<ConfirmResults> confirm;  // --confirm, as each real run ends
};

void execute_tune(const TuneRequest& q, TuneResults& r, Session& session);
// The grid replayed from `source`, ranked, and the capacity search
// (reuse_sim_tune_replays.cpp). `progress_columns`: a progress line on
// stderr within that width (a terminal, without -q); none: no line.
void tune_replays(const TuneRequest& q, reuse_sim::EventSource& source, const reuse_sim::CostModel& costs, TuneResults& r,
                  std::optional<std::size_t> progress_columns = std::nullopt);
// --plot: the best settings replayed again with a timeline (reuse_sim_tune_replays.cpp).
void tune_plot_timeline(const TuneRequest& q, const reuse_sim::LoadedTrace& trace, const reuse_sim::LaneReplayOptions& options,
                        const reuse_sim::CostModel& costs, TuneRanking& tune);
// --confirm's tuning of a real run's recording: `trace` read as the job's
// --trace is, replayed under q's grid and `capacity`, and the capacity
// search; the tuner's warnings of it are dropped.
TuneRanking tune_recording(const TuneRequest& q, const std::string& trace, std::uint64_t capacity);
// --confirm (reuse_sim_tune_confirm.cpp): the real runs after the ranking.
void confirm_tune(const TuneRequest& q, TuneResults& r, Session& session);
// The answer of --confirm, a few lines (record_plan's confirm_answer).
std::vector<std::string> confirm_answer_lines(const TuneResults& r);
std::string confirm_answer_text(const TuneResults& r);

Report tune_report(const TuneRequest& q, const TuneResults& r, const OutputOptions& output);
// The picture of the best settings' replays; none before they were replayed.
std::optional<Plot> tune_plot(const TuneRequest& q, const TuneResults& r);
// The document's keys (the job's CommandDefinition::schema).
DocumentSchema tune_document_schema();

}  // namespace gpumem::cli
