// What every subcommand shares: the global options, the run context, device
// selection and the hand-off to the output layer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/device_spec.hpp"
#include "output.hpp"

namespace gpumem::cli {

struct GlobalOptions {
    std::string device;  // the -d SPEC as given
    bool device_given = false;  // -d was given (possibly empty, which is an error)
    std::string format = "table";
    bool format_given = false;  // --format was given (so that --json/--csv may not contradict it)
    bool json = false;
    bool csv = false;
    bool no_header = false;
    std::string units = "auto";
    int verbosity = 0;
    bool quiet = false;
};

// State of one gpumem invocation. The report is kept here so that main can
// still print what was measured, and a JSON error document, when a run fails.
struct Context {
    GlobalOptions globals;
    OutputOptions output;
    Report report;
    std::function<void()> run;  // set by the chosen subcommand's callback
    bool printed = false;       // the subcommand already wrote its results (loops)
};

void setup_global_options(CLI::App& app, GlobalOptions& globals);
// Validates the global options after parsing; throws UsageError.
OutputOptions resolve_output_options(const GlobalOptions& globals);
// The -d SPEC, or `fallback` when none was given.
DeviceSpec chosen_device_spec(const GlobalOptions& globals, const char* fallback);

// Devices a GPU subcommand runs on: the -d SPEC (default `fallback`) parsed
// first, so bad specs fail with exit 2 before the driver is touched, then
// resolved against the devices the CUDA runtime sees (exit 3 when none).
std::vector<DeviceIdentity> resolve_cuda_devices(const GlobalOptions& globals, const char* fallback);

// Writes a rendered report to stdout and flushes.
void write_stdout(const std::string& text);

// True when stderr is a terminal and progress may be drawn.
bool progress_enabled(const GlobalOptions& globals);

// Validator for SIZE arguments, so that bad sizes fail at parse time.
CLI::Validator size_validator(bool allow_percent);
CLI::Validator range_validator();

// Subcommand registration, one per file. With full = false only the name and
// description are registered (enough for `gpumem --help`): registering every
// option of every subcommand took over half of gpumem's own start-up.
void setup_info(CLI::App& app, Context& ctx, bool full);
void setup_memset(CLI::App& app, Context& ctx, bool full);
void setup_copy(CLI::App& app, Context& ctx, bool full);
void setup_reuse_sim(CLI::App& app, Context& ctx, bool full);
void setup_alloc_test(CLI::App& app, Context& ctx, bool full);

}  // namespace gpumem::cli
