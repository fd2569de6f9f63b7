// reuse-sim record, tune --confirm and max-batch: a program run with gpumem's Python hook
// on its PYTHONPATH, which records every PyTorch process it starts (see
// record_hook.py). The hook's source travels inside the binary: at run time
// it is written to a private temporary directory (mode 0700), removed when
// the run ends, so a bare build, an installed package and a copied binary
// all work without finding a data directory. This is I/O (a child process,
// files) and so lives in the CLI layer, the running of the program in
// process/child.hpp; the pure parts (file names,
// the agreement rule) are base/record_plan.hpp's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/record_plan.hpp"
#include "process/child.hpp"
#include "reuse_sim/snapshot_reader.hpp"

namespace gpumem::cli {

// What the hook records, and the cap the real run gets.
struct RecordSettings {
    std::string file;  // the snapshot of one process (an absolute path); ranks get rank_file_name(file, N)
    std::optional<std::uint64_t> max_entries;  // _record_memory_history(max_entries=N); none: PyTorch's (unbounded)
    bool python_stacks = false;                // context="all", stacks="python"
    std::optional<std::uint64_t> capacity;     // set_per_process_memory_fraction(capacity / total)
    std::optional<double> memory_fraction;     // set_per_process_memory_fraction(F)
    // What NCCL may free late held as late as it may be (the hook's
    // _hold_late_frees: DDP's first buckets through the second step), so
    // that a run stands for the worst case: max-batch's runs.
    bool hold_late = false;
};

// What one process of the program said through the hook.
struct RecordedProcess {
    long pid = 0;
    std::optional<unsigned> rank;
    bool torch_imported = false;
    std::optional<bool> torch_found;  // when not imported: whether its python has torch at all
    bool cuda_used = false;
    std::string why;                    // "exit", "exception: OutOfMemoryError", "SIGTERM"
    std::optional<std::string> snapshot, stats;  // the files it wrote
    std::uint64_t events = 0;
    std::string note, error;
    std::optional<unsigned> order;  // its place among the processes (of its rank) that used CUDA: 1, or N of FILE.procN
    std::optional<std::string> torch_version;
    std::optional<std::string> alloc_conf, cuda_alloc_conf;  // PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF as set in it
    std::vector<MemoryFractionCall> fraction_calls;          // gpumem's cap and the program's own, in order
};

// A program's run under the hook: how it ended (process::ChildExit), and
// what its processes said.
struct ChildRun : process::ChildExit {
    std::vector<RecordedProcess> processes;  // by pid
    // How it started: forked from a fork server (RunForkServers), or fresh,
    // with why where a server was asked: "fresh: it was still importing".
    bool forked = false;
    std::string fresh_why;
    // The processes that wrote a snapshot.
    std::vector<const RecordedProcess*> recorded() const;
};

// Runs `command` (argv, searched on PATH) under the hook and waits for it,
// as `options` say (its environment is added to the hook's).
// Throws Error when it cannot be started (exit status 127 or 126 is the
// program's, as a shell's, when exec fails: reported, not thrown).
ChildRun run_recorded(const std::vector<std::string>& command, const RecordSettings& settings, const process::ChildOptions& options);

// The fork servers of a search that runs one Python program many times
// (process/fork_server.hpp, fork_server.py): runs of `python SCRIPT ...`
// fork from a process that imported the script's modules once, instead of
// paying the imports again. One server for each allocator setting the runs
// ask for (PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF), since PyTorch may
// read them once loaded; each started on the first run that asks for it,
// and runs wait while their server imports (fresh where it is unfit).
class RunForkServers {
public:
    // None where the program is not `python SCRIPT ...` (a python of any
    // version, then a file): nothing to import ahead.
    static std::unique_ptr<RunForkServers> for_program(const std::vector<std::string>& command);
    ~RunForkServers();
    RunForkServers(const RunForkServers&) = delete;
    RunForkServers& operator=(const RunForkServers&) = delete;

    // Starts the server for our own environment's settings now, so that its
    // imports go on beside whatever runs first.
    void warm();
    // Whether a run with these variables (NAME=VALUE, over ours) waits for
    // its server, still importing: a fresh run would spend as long
    // importing, beside it. Starts that server where none is yet.
    bool importing_for(const std::vector<std::string>& variables);
    // A run forked from the server of its environment's settings, where it
    // is ready; else none, and `why`.
    std::optional<process::RunningChild> start(const std::vector<std::string>& command, const std::vector<std::string>& environment,
                                               const std::string& output_file, const std::string& preload, std::string& why);
    // Where the servers stand, for the report: "ready after 14.2 s",
    // "unfit: its imports started a Python thread (...)", "importing".
    std::string state_text();

private:
    explicit RunForkServers(std::vector<std::string> command);
    struct Server;
    Server& server_for(const std::vector<std::string>& environment);
    std::vector<std::string> command_;
    std::vector<std::unique_ptr<Server>> servers_;
};

// One run of run_recorded_side_by_side (its options' own_group is taken as set).
struct RecordedRunRequest {
    std::vector<std::string> command;
    RecordSettings settings;
    process::ChildOptions options;
};
// Runs them side by side, one a slot (each slot's NAME=VALUE added to the
// environment of the run it holds: its GPUs), started in the order given,
// each under the hook as run_recorded's; `ended(index, run)` as each ends,
// in the order they end. An interruption (base/interrupt.hpp) stops every
// run still going (each reported, interrupted) and starts no more.
// With `servers`, each run forks from one where it can (ChildRun::forked).
void run_recorded_side_by_side(const std::vector<RecordedRunRequest>& runs, const std::vector<std::vector<std::string>>& slots,
                               const std::function<void(std::size_t, ChildRun)>& ended, RunForkServers* servers = nullptr);

// What the statistics file beside a snapshot that record wrote says of
// the run: torch's version and the cap in force (gpumem's or the
// program's own set_per_process_memory_fraction). None: no such file, or
// not one of record's (the test fixtures' are their own kind).
struct RecordingStats {
    std::string path;
    std::optional<std::string> torch_version;
    std::optional<CapInForce> cap;
    // The settings the process started with (the variable its torch read),
    // and the calls that change how the allocator serves requests, each at
    // its place in the history (recorded: a hook of schema 3 or later).
    std::optional<std::string> start_conf;
    reuse_sim::RecordedCalls calls;
    std::optional<std::uint64_t> device_total;  // the device's memory (schema 3)
    bool ran_out_of_memory = false;             // memory_stats' num_ooms above 0
    // What the hook could not follow (its "hook_errors": a wrapper it could
    // not put in place, a call it could not note), one line each.
    std::vector<std::string> hook_errors;
    // The backends of the process groups the program initialized ("nccl").
    std::vector<std::string> process_groups;
    // What the run held as late as NCCL may free it (RecordSettings::hold_late).
    struct HeldLate {
        std::string what;  // "ddp_first_buckets"
        std::uint64_t bytes = 0;
    };
    std::vector<HeldLate> held_late;
};
std::optional<RecordingStats> read_recording_stats(const std::string& path);
// The GPU a recording ran on ("NVIDIA H200"), as its statistics file (a
// recording's of record or a tests/fixtures/torch fixture's) names it; none
// where the file is missing or does not say.
std::optional<std::string> recorded_device_name(const std::string& stats_path);
std::vector<MemoryFractionCall> fraction_calls_of(const nlohmann::json& list);

// A real run's figures from the statistics file the hook wrote; none (and
// `note` says why) where it holds no memory_stats.
std::optional<RunFigures> read_figures(const std::string& stats_path, std::string& note);

// One clear line for a run that recorded nothing: python without torch, a
// program that never imported torch or never used CUDA through it.
std::string nothing_recorded_reason(const ChildRun& run);

}  // namespace gpumem::cli
