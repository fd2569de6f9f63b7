// The option groups of gpumem reuse-sim's jobs, and the checks they share:
// each job's file (reuse_sim_replay.cpp, reuse_sim_tune.cpp,
// reuse_sim_record.cpp, reuse_sim_max_batch_check.cpp) builds its options
// from these groups and its own, and its check() from these checks and its
// own. Every check finds its usage errors before anything runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "reuse_sim/record_run.hpp"
#include "reuse_sim/reuse_sim_common.hpp"

namespace gpumem::cli {

// The option groups more than one job takes, each registered by one
// function on any job's sub-command: what a job does not register, CLI11
// refuses as an unknown option of that job.

// The input replayed: a built-in workload, or --trace (replay, tune).
struct InputOptions {
    std::optional<std::string> workload;
    std::uint64_t steps = 200;
    std::uint64_t seed = 1;
    double change_rate = 0.1;
    std::string batch = "1..32";
    std::uint64_t layers = 8;
    std::string sample_bytes = "768KiB";
    std::uint64_t max_detections = 100;
    std::string prompt = "32..512";
    std::string tokens = "16..256";
    std::uint64_t streams = 1;
    std::optional<std::string> trace;
    std::string trace_format = "auto";
    std::optional<std::uint64_t> trace_device;
};

// PyTorch's caching allocator settings given as flags (replay, tune,
// max-batch): they override a snapshot's.
struct TorchOptions {
    std::optional<std::string> max_split_size;
    std::optional<std::string> max_non_split_rounding;
    std::optional<std::string> roundup_power2_divisions;
};

// The device memory: --capacity, or --memory-fraction of --device-total
// (a real run's cap: --capacity or --memory-fraction alone).
struct CapOptions {
    std::optional<std::string> capacity;
    std::optional<double> memory_fraction;
    std::optional<std::string> device_total;
};

// The grid of torch-caching settings (tune, max-batch).
struct GridOptions {
    std::vector<std::string> sweeps;  // --sweep KNOB=V1,V2,..., repeatable
    bool full_grid = false;           // --full-grid: the default grid as well as --sweep's knobs
    bool all_settings = false;        // --all-settings: the whole ranking in the table
};

// A program run for real, given after -- (record, tune --confirm,
// max-batch): CLI11 never sees it (Command::program).
struct ProgramOptions {
    std::optional<std::uint64_t> max_entries;
    std::vector<std::string> program;
};

// "pool, binning: initial pool size": the help of a strategy option, led by
// the strategies it tunes.
std::string for_strategies(const char* option, const std::string& help);
void add_footer(CLI::App& sub, const std::string& before = "");
void add_input_options(CLI::App& sub, InputOptions& o);
// `lead`: the strategies they tune, in replay's help; tune and max-batch
// replay torch-caching alone.
void add_torch_options(CLI::App& sub, TorchOptions& o, bool lead);
// `replayed`: the memory of a replay, which --device-total may give
// (replay, tune, max-batch); else the cap of a real run (record).
void add_cap_options(CLI::App& sub, CapOptions& o, bool replayed);
void add_sync_every_option(CLI::App& sub, std::optional<std::uint64_t>& sync_every);
void add_costs_option(CLI::App& sub, std::optional<std::string>& costs);
// `tune`: the default grid is tune's own; max-batch's is the recorded
// setting and expandable segments.
void add_grid_options(CLI::App& sub, GridOptions& o, bool tune);
void add_max_entries_option(CLI::App& sub, ProgramOptions& o);
void add_program_option(CLI::App& sub, ProgramOptions& o, const std::string& help);

// A FILE option given as '' would otherwise mean "not given".
std::optional<std::string> checked_path(const std::optional<std::string>& path, const char* option);
// The job's --trace (checked to exist, not opened: a FIFO's open waits for
// its writer), or the workload and its parameters.
ReuseSimInput check_input(const InputOptions& o);
// The torch-caching settings given as flags: they override a snapshot's.
void check_torch_options(const TorchOptions& o, ReplaySetup& setup);
// A GPU's memory given as a bare number under 1 MiB: "did you mean 40GiB?".
std::vector<std::string> bare_capacity_warnings(const CapOptions& o);
// --capacity, or --memory-fraction of --device-total.
std::uint64_t check_capacity(const CapOptions& o);
// The statistics `record` wrote beside the trace, read into `input`; their
// cap becomes the replay's unless --capacity or --memory-fraction says
// otherwise. The warnings to add after the job's own.
std::vector<std::string> check_recording(const CapOptions& o, ReuseSimInput& input, ReplaySetup& setup);
// The grid of tune, or of max-batch given --sweep or --full-grid.
TuneGrid check_grid(const GridOptions& o, std::uint64_t capacity, bool tune);
// The files a program's command line names: each word, and what follows
// '=' in --opt=FILE, and the program itself as execvp finds it.
std::vector<std::string> named_paths(const std::vector<std::string>& program);
// A file a recording writes replaces only a regular file, and none the
// program runs from or is given.
void check_record_target(const std::string& path, const std::string& shown, const std::vector<std::string>& program,
                         const std::string& option);
// FILE as an absolute path, in a directory that exists, that the recording may write.
std::string check_record_file(const std::string& file, const std::vector<std::string>& program, const std::string& option = "--output");
// The cap of a real run: --capacity, or --memory-fraction as given.
RecordSettings check_real_run_cap(const CapOptions& o, const ProgramOptions& p);

// The recordings a job keeps beside --plot's picture: a file of theirs, and
// how their names go ("-o keeps the recordings as run.bsN.pickle").
struct KeptRecordings {
    std::string file;
    std::string how;
};
// --plot FILE.svg, checked before anything is read or run: a file the run
// may write, none of `inputs` (the trace, the cost table, the recordings,
// the program's own files), nor one `kept` recordings take.
std::optional<std::string> check_plot(const std::optional<std::string>& plot, const std::vector<std::string>& inputs,
                                      const std::optional<KeptRecordings>& kept);
// --plot: the GPU `trace` was recorded on, from its statistics.
std::optional<std::string> plot_recorded_device(const std::optional<std::string>& plot, const std::optional<std::string>& trace);

}  // namespace gpumem::cli
