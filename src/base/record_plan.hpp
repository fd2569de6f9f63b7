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

// "run.pickle", rank 3 -> "run.rank3.pickle"; "run" -> "run.rank3". The
// rank goes before the last extension of the file's own name (a dot in a
// directory, or a leading dot, is no extension).
std::string rank_file_name(std::string_view file, std::string_view rank);
// The rank rank_file_name put in a file's own name ("run.rank3.pickle" -> 3),
// if any: --confirm compares a multi-rank run's figures with the rank the
// trace was recorded from.
std::optional<unsigned> rank_of_file_name(std::string_view file);
// torch.cuda.memory_stats() beside a snapshot: "run.pickle" -> "run.stats.json".
std::string stats_file_name(std::string_view snapshot);

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

// A waitpid() status as a shell reports it: the exit code, or 128 + the
// signal that killed the process.
int shell_exit_status(int wait_status) noexcept;

// What the tuner predicted for a setting, and what a real run of the
// program under it measured (torch.cuda.memory_stats()).
struct RunFigures {
    std::uint64_t ooms = 0, peak_reserved = 0, retries = 0, device_allocs = 0, device_frees = 0;
};
// The agreement rule: a prediction holds when the real run agrees on
// whether the program runs out of memory (no OOM predicted and none
// measured, or OOMs predicted and some measured). The counts themselves
// may differ: a program that catches an OOM changes course.
bool prediction_held(const RunFigures& predicted, const RunFigures& real) noexcept;

// --confirm's loop: K candidates, best first; a run that held ends it.
struct ConfirmRunOutcome {
    std::string setting;              // PYTORCH_CUDA_ALLOC_CONF of the tuned setting (empty: PyTorch's defaults)
    RunFigures predicted;
    std::optional<RunFigures> real;   // none: the run wrote no statistics
    bool held = false;
    std::string note;                 // why there are no real figures, when none
};
bool confirm_should_stop(const ConfirmRunOutcome& run) noexcept;
// The final answer: "confirmed by a real run: ..." or what happened instead.
// `candidates`: how many runs were allowed; `interrupted`: Ctrl-C stopped it.
std::string confirm_answer(const std::vector<ConfirmRunOutcome>& runs, std::size_t candidates, bool interrupted);


}  // namespace gpumem
