// TEMPORARY (issue #13): the run context of commands not yet converted to
// the Command contract (command.hpp). Each conversion removes its command
// from here; the file goes once none is left.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/device_spec.hpp"
#include "options.hpp"
#include "output.hpp"
#include "writer.hpp"

namespace gpumem::cli {

struct LegacyGlobals {
    std::string device;         // the -d SPEC as given
    bool device_given = false;  // -d was given
    std::optional<DeviceSpec> device_spec;  // -d as checked (-d local holds the launcher's local rank)
    bool quiet = false;
};

struct Context {
    LegacyGlobals globals;
    OutputOptions output;
    Report report;
    std::function<void()> run;  // set by the chosen subcommand's callback
    bool printed = false;       // the subcommand already wrote its results (loops)
};

struct LegacyContext {
    Context ctx;
};

DeviceSpec chosen_device_spec(const LegacyGlobals& globals, const char* fallback);
std::vector<DeviceIdentity> resolve_cuda_devices(const LegacyGlobals& globals, const char* fallback);
bool progress_enabled(const LegacyGlobals& globals);

// Registers a not yet converted command on its subcommand `sub`.
void setup_legacy(const std::string& name, CLI::App& app, CLI::App& sub, LegacyContext& legacy, bool full);
int run_legacy(LegacyContext& legacy, const Globals& globals, bool parse_only, bool json);


}  // namespace gpumem::cli
