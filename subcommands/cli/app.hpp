// The gpumem command line as a function, so that it can be driven by a
// fuzzer as well as by main().
#pragma once

#include <csignal>

namespace gpumem::cli {

enum class RunMode {
    full,        // parse, then run the command
    parse_only,  // parse and check everything a run checks before its first
                 // CUDA or NVML call, then return 0 without running (no
                 // driver calls, no files written, no signal handlers)
};

// What run_gpumem returns when stdout's reader went away: main() then ends
// by SIGPIPE, as coreutils do, which shells report as 128 + 13.
inline constexpr int kClosedPipeStatus = 128 + SIGPIPE;

// Returns the process exit status (see errors.hpp). Never throws.
int run_gpumem(int argc, char** argv, RunMode mode = RunMode::full) noexcept;

}  // namespace gpumem::cli
