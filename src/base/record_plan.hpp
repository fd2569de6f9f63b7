// reuse-sim --record and --confirm, the parts that are pure logic: where
// each rank's snapshot goes, how the user's PYTORCH_CUDA_ALLOC_CONF and a
// tuned setting combine, an exit status from a wait status, and whether a
// real run held to its prediction. The process spawning, the signals and
// the Python hook are the CLI layer's (subcommands/reuse_sim/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpumem {

// The one rule for the names of the files a recording writes: FILE with
// gpumem's tag (".rankN", ".procN", ".bsN", ".confirmN") before its
// extension, "run.pickle", "bs4" -> "run.bs4.pickle"; a name without one
// gets the tag at its end, "run" -> "run.bs4". A dot in a directory, a
// leading dot (".run": a hidden file's name) and a tag already there are
// no extension: "run.proc2" tagged "rank1" is "run.proc2.rank1", and its
// statistics (stats_file_name) "run.proc2.rank1.stats.json", so that no
// two files of a run share their statistics. "{rank}" and "{proc}" stand
// for N in the names handed to the recording hook.
std::string tagged_file_name(std::string_view file, std::string_view tag);
// "run.pickle", rank 3 -> "run.rank3.pickle"; "run" -> "run.rank3".
std::string rank_file_name(std::string_view file, std::string_view rank);
// The rank rank_file_name put in a file's own name ("run.rank3.pickle" -> 3),
// if any: --confirm compares a multi-rank run's figures with the rank the
// trace was recorded from.
std::optional<unsigned> rank_of_file_name(std::string_view file);
// torch.cuda.memory_stats() beside a snapshot: "run.pickle" -> "run.stats.json",
// "run" -> "run.stats.json", "run.proc2" -> "run.proc2.stats.json".
std::string stats_file_name(std::string_view snapshot);
// Several processes of one run, no launcher (or several of one rank): the
// first that initializes CUDA writes the file itself, the N-th (N >= 2) the
// file with ".procN" before its extension ("run.pickle", 2 ->
// "run.proc2.pickle"; "run.rank1.pickle" -> "run.rank1.proc2.pickle"), so
// that no two processes write the same file.
std::string process_file_name(std::string_view file, std::string_view order);
// The order process_file_name put in a file's own name; none: 1, the first.
std::optional<unsigned> process_of_file_name(std::string_view file);
// Where --confirm keeps its N-th real run's recording: beside the trace,
// ".confirmN" before its extension, the trace's own ".rankN" and ".procN"
// left out (each run names its ranks and processes anew): "run.pickle", 2 ->
// "run.confirm2.pickle"; "run.rank1.pickle" -> "run.confirm2.pickle". A
// trace read from standard input ("-") has no place: the current
// directory's "reuse-sim.confirmN.pickle".
std::string confirm_file_name(std::string_view trace, std::size_t run);
// Whether `candidate` is a name that recordings to `file` take, in the same
// folder (the caller compares folders): FILE's own name with any of the
// tags above before its extension ("run.pickle": "run.bs8.pickle",
// "run.confirm1.rank0.pickle"), or the statistics of one
// ("run.bs8.stats.json"). --plot must not name one: the picture would
// replace a recording the run keeps, or the recording the picture.
bool recording_file_of(std::string_view file, std::string_view candidate);

// PYTORCH_ALLOC_CONF (read first by torch 2.9 and later, even when empty)
// and PYTORCH_CUDA_ALLOC_CONF (the old name, the only one older torch
// reads): which of them the program's torch reads. The one place gpumem
// decides it; the hook records both values and torch's version.
inline constexpr std::string_view kAllocConfVariable = "PYTORCH_ALLOC_CONF";
inline constexpr std::string_view kCudaAllocConfVariable = "PYTORCH_CUDA_ALLOC_CONF";
// Whether that torch reads PYTORCH_ALLOC_CONF first: 2.9 and later, and a
// version not known or not read (a torch new enough to be asked about).
bool torch_reads_alloc_conf(std::optional<std::string_view> torch_version) noexcept;
struct AllocConfRead {
    std::optional<std::string> value;  // what torch reads; none: neither variable is set (its defaults)
    std::string variable;              // the variable it comes from (empty when none)
    std::string ignored;               // the other variable, set too, that torch does not read (empty: none)
};
AllocConfRead read_alloc_conf(const std::optional<std::string>& alloc_conf, const std::optional<std::string>& cuda_alloc_conf,
                              std::optional<std::string_view> torch_version);

// torch.cuda.set_per_process_memory_fraction calls of one process, as the
// hook records them, in the order made: gpumem's own cap (--capacity,
// --memory-fraction) and the program's.
struct MemoryFractionCall {
    std::uint32_t device = 0;
    double fraction = 1.0;
    std::uint64_t allowed_memory_maximum = 0;  // as PyTorch computes it: fraction * total, rounded down
    std::uint64_t device_total = 0;
    bool by_gpumem = false;
};
// The cap in force at the end of the run on `device`: the last call made
// for it (none for it: the last call of all).
struct CapInForce {
    MemoryFractionCall call;
    bool replaced_gpumem = false;          // the program's call came after gpumem's cap and replaced it
    std::uint64_t gpumem_allowed = 0;      // gpumem's cap, when it set one
    std::size_t program_changes = 0;       // the program's calls beyond its first that changed the cap
};
std::optional<CapInForce> cap_in_force(const std::vector<MemoryFractionCall>& calls, std::uint32_t device);

// A size as an option takes it back exactly: "1GiB", "300MiB", else bytes.
std::string exact_size_text(std::uint64_t bytes);
// A size in a sentence, in the units the rest of a report uses, exact where
// it is not a whole number of MiB: "64GiB", "69.9 GiB (75054940160 bytes)".
std::string size_in_words(std::uint64_t bytes);
// The one line for a replay of the recorded settings with fewer OOMs than
// the recording had: its likely causes and what to pass. `replay_capacity`
// none: no cap; `recorded_cap`: the cap the recording's statistics name;
// `causes`: what the input itself says the replay places otherwise than
// the program did (private pools, settings changed as it ran), named first.
// A cap the recording did not capture is offered only where its statistics
// name none.
std::string fewer_ooms_message(std::uint64_t recorded_ooms, std::uint64_t replay_ooms, std::optional<std::uint64_t> replay_capacity,
                               std::optional<std::uint64_t> recorded_cap, std::uint64_t recorded_peak_reserved,
                               const std::vector<std::string>& causes = {});

// PYTORCH_CUDA_ALLOC_CONF's "key:value" items, split at the commas outside
// brackets (roundup_power2_divisions' list form has commas of its own).
std::vector<std::string> alloc_conf_items(std::string_view conf);
// The key of one item ("max_split_size_mb:128" -> "max_split_size_mb").
std::string_view alloc_conf_key(std::string_view item);

// A tuned setting for a real run: the user's own items whose keys are not
// among `grid_keys` (the keys the tuner decides, even where its setting
// leaves one at PyTorch's default) kept first, then the setting's.
struct MergedAllocConf {
    std::string conf;                 // what the run gets
    std::vector<std::string> kept;    // the user's items kept
    std::vector<std::string> replaced;  // the user's items the setting decides
};
MergedAllocConf merge_alloc_conf(std::string_view user, std::string_view setting, const std::vector<std::string_view>& grid_keys);

// What the tuner predicted for a setting, and what a real run of the
// program under it measured (torch.cuda.memory_stats()).
struct RunFigures {
    // ooms: the allocator's (memory_stats' num_ooms), which counts requests
    // PyTorch refused and retried smaller itself (cuDNN's workspace search)
    // as well as those the program saw.
    std::uint64_t ooms = 0, peak_reserved = 0, retries = 0, device_allocs = 0, device_frees = 0;
    // torch.cuda.OutOfMemoryError exceptions that reached the program's
    // Python code, each counted once (the hook, Python 3.12 and later);
    // none: not known (an older Python, or a prediction).
    std::optional<std::uint64_t> program_ooms;
};
// The OOMs a run is judged by: those the program saw when known, else the
// allocator's.
std::uint64_t judged_ooms(const RunFigures& figures) noexcept;
// The agreement rule: a prediction holds when the real run agrees on
// whether the program runs out of memory (no OOM predicted and none
// measured, or OOMs predicted and some measured; judged_ooms). The counts
// themselves may differ: a program that catches an OOM changes course.
bool prediction_held(const RunFigures& predicted, const RunFigures& real) noexcept;

// --confirm's loop: run 1 under the tuner's best setting; a run in which
// the program saw an OOM is followed by a tuning of that run's own
// recording and a run under its best untried setting that fits there; it
// stops at the first run without an OOM (converged), after K runs, or when
// nothing untried could fit.
struct ConfirmRunOutcome {
    std::string setting;              // PYTORCH_CUDA_ALLOC_CONF of the tuned setting (empty: PyTorch's defaults)
    RunFigures predicted;
    std::optional<RunFigures> real;   // none: the run wrote no statistics
    bool held = false;
    std::string note;                 // why there are no real figures, when none
    std::size_t chosen_by = 0;        // the tuning that chose it: 0 the trace's, N run N's recording
};
// The run ran without an OOM: the loop has converged.
bool confirm_converged(const ConfirmRunOutcome& run) noexcept;

// Why the loop ended.
enum class ConfirmStop {
    converged,     // a run without an OOM
    runs_spent,    // K runs, each with an OOM
    nothing_left,  // every setting that the latest tuning says fits was tried (or none fits)
    interrupted,   // Ctrl-C
};
// What the answer says beyond the runs: how it ended, the runs' cap, and
// what would fit instead, from the last tuning (its best setting and the
// smallest capacity it fits in; not_searched: why that is not known).
struct ConfirmEnding {
    ConfirmStop stop = ConfirmStop::converged;
    std::size_t candidates = 0;                // K
    std::optional<std::uint64_t> cap;          // the runs' cap, when known
    std::size_t last_tuning = 0;               // 0: the trace's, N: run N's recording
    std::string best_setting;                  // that tuning's best
    std::optional<std::uint64_t> would_fit;    // its smallest capacity
    std::string not_searched;
};
// The answer, a few lines: each run (its setting, which tuning chose it,
// predicted and real OOMs by kind, peak), then the final word.
std::vector<std::string> confirm_answer(const std::vector<ConfirmRunOutcome>& runs, const ConfirmEnding& ending);

}  // namespace gpumem
