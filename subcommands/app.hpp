// The gpumem command line as a function, so that it can be driven by a
// fuzzer as well as by main().
#pragma once

namespace gpumem::cli {

enum class RunMode {
    full,        // parse, then run the subcommand
    parse_only,  // parse and validate everything a run checks before its first
                 // CUDA or NVML call, then return 0 without running (no
                 // driver calls, no files written, no signal handlers)
};

// Returns the process exit status (see errors.hpp). Never throws.
int run_gpumem(int argc, char** argv, RunMode mode = RunMode::full) noexcept;

}  // namespace gpumem::cli
