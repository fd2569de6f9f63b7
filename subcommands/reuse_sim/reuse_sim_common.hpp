// What gpumem reuse-sim's jobs share, and only that: the input one replay
// reads (replay, tune) and the cap and options every replay runs under
// (replay, tune, max-batch), held as members of each job's request; what a
// replay of the input found, the base of those jobs' results; and the
// helpers and report pieces built on them. Each job's own request, results,
// execute, report, plot and schema are in its header (reuse_sim_replay.hpp,
// reuse_sim_tune.hpp, reuse_sim_record.hpp, reuse_sim_max_batch.hpp); the
// option groups the jobs' options are built from are in reuse_sim_options.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/name_table.hpp"
#include "base/record_plan.hpp"
#include "cli/command.hpp"
#include "cli/plot.hpp"
#include "reuse_sim/cost_table.hpp"
#include "reuse_sim/record_run.hpp"
#include "reuse_sim/simulator.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tuner.hpp"
#include "reuse_sim/workloads.hpp"

namespace gpumem::cli {

// The input of replay and tune: the job's --trace, or a built-in workload.
struct ReuseSimInput {
    std::optional<std::string> trace;  // --trace: a path, or "-" for standard input; none: a workload
    reuse_sim::TraceFormat trace_format = reuse_sim::TraceFormat::automatic;
    std::optional<std::uint32_t> trace_device;  // --trace-device: a snapshot's device
    reuse_sim::WorkloadOptions workload;        // without --trace
    // The statistics `reuse-sim record` wrote beside the trace
    // (FILE.stats.json): the cap in force when the program ran, and torch's version.
    std::optional<RecordingStats> recording;
};

// What every replay runs under (replay, tune, max-batch): the strategies,
// their options, and the cap.
struct ReplaySetup {
    std::vector<const Named<reuse_sim::StrategySpec>*> strategies;  // rows of kStrategies, in the order given
    reuse_sim::StrategyOptions strategy_options;
    // The torch-caching settings given as flags: they override a snapshot's.
    struct {
        bool max_split_size = false, roundup_power2_divisions = false;
    } torch_flags;
    std::uint64_t sync_every = 0;  // 0: no extra synchronizations
    std::uint64_t capacity = reuse_sim::kUnlimited;
    bool capacity_from_recording = false;  // no --capacity or --memory-fraction: the recording's cap is the replay's
    std::optional<std::string> costs;      // --costs FILE; none: the built-in table
};

// The grid of torch-caching settings replayed (tune; max-batch's settings searched).
struct TuneGrid {
    std::vector<reuse_sim::SweepAxis> axes;  // the knobs varied, in kKnobs' order
    unsigned threads = 0;                    // lanes replayed at once; 0: one per usable core
    bool skip_equivalent = true;             // replay settings that provably replay alike once (tests compare)
    bool all_settings = false;               // --all-settings: the table shows every outcome and setting, not the best 10
};

// What a replay of the input found, filled as the job runs (a failure part
// way reports what was done): the base of replay's, tune's and max-batch's results.
struct ReplayedInput {
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
    std::optional<reuse_sim::ReplaySummary> summary;  // once the input was replayed
    bool complete = false;                            // everything ran (replay: --execute's checks passed)
};

// ---------------------------------------------------------------------------
// Execution helpers (reuse_sim_common.cpp)

// The cost table (--costs, else the built-in one); its gaps are warnings.
reuse_sim::CostTable load_costs(const ReplaySetup& setup, ReplayedInput& r);
// Whether a strategy replayed needs the input's largest request first (ring's size).
bool needs_largest_request(const ReplaySetup& setup);
// The input, opened once; `rereadable` (or a strategy that needs the
// largest request first): read again later, standard input and FIFOs then
// kept in a temporary file as they are read.
std::unique_ptr<reuse_sim::EventSource> open_input(const ReuseSimInput& input, const ReplaySetup& setup, bool rereadable);
// The input opened, described in `r`, and r's strategy options those of
// `setup` with a snapshot's allocator settings applied.
std::unique_ptr<reuse_sim::EventSource> open_replayed_input(const ReuseSimInput& input, const ReplaySetup& setup, bool rereadable,
                                                            ReplayedInput& r);
// A snapshot's allocator settings become torch-caching's, except where a
// flag set one.
void apply_recorded_settings(const ReplaySetup& setup, const reuse_sim::RecordedAllocatorSettings& recorded, ReplayedInput& r);
// What a snapshot's private pools and settings changes mean for the replay:
// r's settings_changes, replay_causes and warnings, once `source` was read.
// `tuned`: tune's settings replace the first phase's.
void note_allocator_facts(const ReuseSimInput& input, bool tuned, const reuse_sim::EventSource& source, ReplayedInput& r);
// The tuner's knobs: their keys in PYTORCH_CUDA_ALLOC_CONF are the grid's
// to set (tune --confirm's runs, max-batch's); the user's other keys are kept.
std::vector<std::string_view> alloc_conf_grid_keys();
// gpumem's own line on stderr among a program's (unless -q): within
// stderr's width, but an error, which stays one line.
void say_on_stderr(const Session& session, const std::string& line);

// ---------------------------------------------------------------------------
// Report pieces (reuse_sim_common_report.cpp)

// What the document of a replayed input is made of (replay's and tune's):
// `lanes` the strategies replayed (none for tune), `fewer_ooms` the job's
// fewer_ooms_text.
struct ReplayDocument {
    const ReuseSimInput& input;
    const ReplaySetup& setup;
    const ReplayedInput& r;
    const std::vector<reuse_sim::LaneResult>& lanes;
    std::optional<std::string> fewer_ooms;
    const reuse_sim::ReplaySummary& summary() const { return *r.summary; }
};
// The document's fields every replayed input has (input, events, ...,
// details, upstream), and their schema; a job adds its own after them.
Record replayed_input_fields(const ReplayDocument& d);
FieldSchemaSet replayed_input_schema();
// A job's schema: `fields` after replayed_input_schema()'s.
FieldSchemaSet with_replay_fields(const FieldSchemaSet& fields);

// `report` with the picture `draw()` makes, where --plot FILE asked for one
// and there is one to draw.
template <typename Draw>
Report with_picture(Report report, const std::optional<std::string>& file, Draw draw) {
    if (file)
        if (std::optional<Plot> plot = draw()) report.plot = plot_file(*file, *plot);
    return report;
}
// A report begun: the job's command and warnings, the request's first.
Report job_report(const std::string& command, const std::vector<std::string>& request_warnings, const std::vector<std::string>& warnings);
// "reuse-sim: INPUT: N events, ...": the line above the table.
std::string head_line(const ReuseSimInput& input, const ReplaySetup& setup, const ReplayedInput& r, Unit unit);
// The allocator settings of the snapshot and what the recording itself did,
// under the head line.
std::vector<std::string> recorded_lines(const ReplayedInput& r, Unit unit);
// A replay of the recorded settings that ran out of memory less often
// (`replayed_ooms`) than the recording did: one line, its likely causes
// and what to pass.
std::optional<std::string> fewer_ooms_text(const ReuseSimInput& input, const ReplaySetup& setup, const ReplayedInput& r,
                                           std::optional<std::uint64_t> replayed_ooms);

// ---------------------------------------------------------------------------
// Picture pieces (reuse_sim_plot.cpp)

constexpr std::size_t kPlotTimelinePoints = 1000;
// The file's name without its folder.
std::string base_name(const std::string& path);
// A torch setting as PYTORCH_CUDA_ALLOC_CONF writes it, or "PyTorch's defaults".
std::string plot_setting_name(const reuse_sim::TorchOptions& options);
// "cap 40 GiB", or "no cap".
std::string cap_text(std::uint64_t capacity);
// The lanes of `timeline` as lines, the live bytes, and crosses where requests were refused.
void add_timeline(Plot& plot, const reuse_sim::Timeline& timeline, const std::vector<std::string>& names);
// The cap as a rule, where there is one.
void add_cap(Plot& plot, std::uint64_t capacity);
// What a line and its band of `timeline` mean.
std::string band_note(const reuse_sim::Timeline& timeline, std::uint64_t events);
// " (recorded on GPU)", where the trace's statistics name it.
std::string recorded_on(const std::optional<std::string>& device);

}  // namespace gpumem::cli
