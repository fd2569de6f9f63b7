#include "common.hpp"

#include <unistd.h>

#include <cstdio>

#include "core/cuda_devices.hpp"
#include "base/errors.hpp"
#include "base/sizes.hpp"

namespace gpumem::cli {

void setup_global_options(CLI::App& app, GlobalOptions& g) {
    app.add_option("-d,--device", g.device,
                   "GPU(s): CUDA index as CUDA programs here see it, UUID or prefix (GPU-...), PCI bus id, comma list, or all")
        ->type_name("SPEC")
        ->each([&g](const std::string&) { g.device_given = true; });
    app.add_option("--format", g.format, "Output format: table, json, csv or value")
        ->type_name("FMT")
        ->check(CLI::IsMember({"table", "json", "csv", "value"}))
        ->each([&g](const std::string&) { g.format_given = true; });
    app.add_flag("--json", g.json, "Same as --format json: one JSON document on stdout");
    app.add_flag("--csv", g.csv, "Same as --format csv");
    app.add_flag("--no-header", g.no_header, "Omit the header line of table and CSV output");
    app.add_option("--units", g.units, "Units for sizes and bandwidths: auto, B, KiB, MiB, GiB, KB, MB, GB")
        ->type_name("UNIT")
        ->check(CLI::IsMember({"auto", "B", "KiB", "MiB", "GiB", "TiB", "KB", "kB", "MB", "GB", "TB"}));
    app.add_flag("-v,--verbose", g.verbosity, "More log output on stderr (-vv for debug)");
    app.add_flag("-q,--quiet", g.quiet, "Only errors on stderr; no progress");
}

OutputOptions resolve_output_options(const GlobalOptions& g) {
    OutputOptions o;
    if (g.json && g.csv) throw UsageError("--json and --csv cannot be combined");
    // --json --format csv used to give JSON silently; a script that says two
    // different things is told so instead.
    if (g.format_given && g.json && g.format != "json")
        throw UsageError("--json and --format " + g.format + " cannot be combined");
    if (g.format_given && g.csv && g.format != "csv")
        throw UsageError("--csv and --format " + g.format + " cannot be combined");
    if (g.quiet && g.verbosity > 0) throw UsageError("--quiet and --verbose cannot be combined");
    o.format = parse_format(g.format);
    if (g.json) o.format = Format::json;
    if (g.csv) o.format = Format::csv;
    o.unit = parse_unit(g.units);
    o.header = !g.no_header;
    return o;
}

DeviceSpec chosen_device_spec(const GlobalOptions& g, const char* fallback) {
    return parse_device_spec(g.device_given ? g.device : std::string(fallback));
}

std::vector<DeviceIdentity> resolve_cuda_devices(const GlobalOptions& g, const char* fallback) {
    const DeviceSpec spec = chosen_device_spec(g, fallback);
    const std::vector<DeviceIdentity> visible = cuda_visible_devices();
    std::vector<DeviceIdentity> chosen;
    for (std::size_t i : resolve_device_spec(spec, visible)) chosen.push_back(visible[i]);
    return chosen;
}

void write_stdout(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

bool progress_enabled(const GlobalOptions& g) { return !g.quiet && isatty(STDERR_FILENO) == 1; }

CLI::Validator size_validator(bool allow_percent) {
    return CLI::Validator(
        [allow_percent](std::string& value) -> std::string {
            try {
                parse_size_spec(value, SizeParseOptions{false, allow_percent});
            } catch (const UsageError& e) {
                return e.what();
            }
            return {};
        },
        allow_percent ? "SIZE|PCT%" : "SIZE");
}

CLI::Validator range_validator() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            try {
                parse_size_range(value);
            } catch (const UsageError& e) {
                return e.what();
            }
            return {};
        },
        "RANGE");
}

}  // namespace gpumem::cli
