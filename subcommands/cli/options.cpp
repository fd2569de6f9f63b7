#include "cli/options.hpp"

#include <unistd.h>

#include <cmath>
#include <limits>
#include <utility>

#include "base/errors.hpp"
#include "base/quantities.hpp"
#include "base/text.hpp"
#include "cli/help.hpp"
#include "cli/terminal.hpp"

namespace gpumem::cli {

void add_global_options(CLI::App& app, GlobalOptions& options) {
    GlobalOptions& g = options;
    app.add_option("-d,--device", g.device,
                   "GPU(s): CUDA index as CUDA programs here see it, UUID or prefix (GPU-...), PCI bus id, comma list, all, "
                   "or local (the launcher's local rank's GPU: srun, mpirun, torchrun)")
        ->type_name("SPEC");
    app.add_option("--format", g.format, "Output format: " + kFormats.names())->type_name("FMT")->check(names_validator(kFormats));
    app.add_flag("--json", g.json, "Same as --format json: one JSON document on stdout");
    app.add_flag("--csv", g.csv, "Same as --format csv");
    app.add_flag("--no-header", g.no_header, "Omit the header line of table and CSV output");
    app.add_flag("--wide", g.wide,
                 "Tables with every column, however wide (else a table keeps within the terminal's width, 100 columns in a "
                 "pipe, leaving out its least useful columns or turning into records)");
    app.add_option("--units", g.units, "Units for sizes and bandwidths (any case): " + kUnits.names())
        ->type_name("UNIT")
        ->check(parsing_validator([](const std::string& value) { parse_unit(value); }, "{" + join([] {
                   std::vector<std::string> names;
                   for (const Named<Unit>& row : kUnits) names.emplace_back(row.name);
                   return names;
               }(), ",") + "}"));
    app.add_flag("-v,--verbose", g.verbosity, "More log output on stderr (-vv for debug)");
    app.add_flag("-q,--quiet", g.quiet, "Only errors on stderr; no progress");
    // A subcommand's --help lists them in this group (cli/help.hpp).
    for (CLI::Option* opt : app.get_options())
        if (opt->get_group() == "Options" && opt != app.get_help_ptr()) opt->group(kGlobalGroup);
}

Globals check_globals(const GlobalOptions& options, const LauncherInfo& launcher, std::string host) {
    const GlobalOptions& g = options;
    Globals out;
    if (g.json && g.csv) throw UsageError("--json and --csv cannot be combined");
    // --json --format csv used to give JSON silently; a script that says two
    // different things is told so instead.
    if (g.format && g.json && *g.format != "json") throw UsageError("--json and --format " + *g.format + " cannot be combined");
    if (g.format && g.csv && *g.format != "csv") throw UsageError("--csv and --format " + *g.format + " cannot be combined");
    if (g.quiet && g.verbosity > 0) throw UsageError("--quiet and --verbose cannot be combined");
    out.output.format = g.format ? kFormats.parse(*g.format).format : Format::table;
    if (g.json) out.output.format = Format::json;
    if (g.csv) out.output.format = Format::csv;
    out.output.unit = parse_unit(g.units);
    out.output.header = !g.no_header;
    // The terminals, measured once: a terminal's width, else 100 (a pipe, a
    // file); every human line keeps within it.
    out.output.screen = terminal_screen();
    out.output.columns = out.output.screen.stdout_columns;
    out.output.wide = g.wide;
    if (g.device) out.device = parse_device_spec(*g.device, launcher);
    out.verbosity = g.verbosity;
    out.quiet = g.quiet;
    out.launcher = launcher;
    out.origin = make_origin(std::move(host), launcher);
    return out;
}

DeviceSpec device_spec_or(const Globals& globals, std::string_view fallback) {
    return globals.device ? *globals.device : parse_device_spec(fallback);
}

DeviceSpec single_device_spec(const Globals& globals, std::string_view purpose) {
    DeviceSpec spec = device_spec_or(globals, "0");
    if (!names_one_device(spec))
        throw UsageError(std::string(purpose) + " runs on one device: give -d with a single GPU (not '" + spec.text + "')");
    return spec;
}

namespace {

std::string first_name(const std::string& names) {
    // "-n,--iterations" -> "--iterations" (the long name, as users write it in messages)
    std::string_view best;
    for (std::string_view name : split(names, ','))
        if (best.empty() || name.size() > best.size()) best = name;
    return std::string(best);
}

std::uint64_t unsigned_in(const std::string& text, const std::string& option, std::uint64_t min, std::uint64_t max) {
    std::uint64_t v = 0;
    try {
        v = parse_unsigned(text, std::numeric_limits<std::uint64_t>::max());
    } catch (const UsageError& e) {
        // A negative count is below the least value: say which that is.
        if (trim(text).rfind('-', 0) == 0)
            throw UsageError(option + " " + text + " is below the least value, " + std::to_string(min) + " (it takes " +
                             std::to_string(min) + " to " + std::to_string(max) + ")");
        throw UsageError(option + ": " + e.what() + "; it takes " + std::to_string(min) + " to " + std::to_string(max));
    }
    if (v < min || v > max)
        throw UsageError(option + " " + text + " is out of range (" + std::to_string(min) + " to " + std::to_string(max) + ")");
    return v;
}

double real_in(const std::string& text, const std::string& option, double min, double max) {
    double v = 0;
    try {
        v = parse_real(text);
    } catch (const UsageError& e) {
        throw UsageError(option + ": " + e.what());
    }
    if (v < min || v > max)
        throw UsageError(option + " " + text + " is out of range (" + format_decimal(min, 6) + " to " + format_decimal(max, 6) + ")");
    return v;
}

}  // namespace

CLI::Option* add_unsigned_option(CLI::App& app, const std::string& names, std::uint64_t& target, const std::string& help,
                                 std::uint64_t min, std::uint64_t max) {
    const std::string option = first_name(names);
    return app
        .add_option_function<std::string>(
            names, [&target, option, min, max](const std::string& text) { target = unsigned_in(text, option, min, max); }, help)
        ->type_name("N");
}

CLI::Option* add_unsigned_option(CLI::App& app, const std::string& names, std::optional<std::uint64_t>& target,
                                 const std::string& help, std::uint64_t min, std::uint64_t max) {
    const std::string option = first_name(names);
    return app
        .add_option_function<std::string>(
            names, [&target, option, min, max](const std::string& text) { target = unsigned_in(text, option, min, max); }, help)
        ->type_name("N");
}

CLI::Option* add_real_option(CLI::App& app, const std::string& names, double& target, const std::string& help, double min,
                             double max) {
    const std::string option = first_name(names);
    return app
        .add_option_function<std::string>(
            names, [&target, option, min, max](const std::string& text) { target = real_in(text, option, min, max); }, help)
        ->type_name("X");
}

CLI::Option* add_real_option(CLI::App& app, const std::string& names, std::optional<double>& target, const std::string& help,
                             double min, double max) {
    const std::string option = first_name(names);
    return app
        .add_option_function<std::string>(
            names, [&target, option, min, max](const std::string& text) { target = real_in(text, option, min, max); }, help)
        ->type_name("X");
}

std::string value_type_name(ValueKind kind) {
    switch (kind) {
        case ValueKind::rate_gbps: return "RATE[GB/s]";
        case ValueKind::seconds: return "TIME[s]";
        case ValueKind::fraction: return "FRACTION";
    }
    return "X";
}

double parse_value_of(ValueKind kind, const std::string& option, const std::string& text, double min, double max) {
    double v = 0;
    std::string unit;
    try {
        switch (kind) {
            case ValueKind::rate_gbps: v = parse_rate(text, 1e9) / 1e9, unit = " GB/s"; break;
            case ValueKind::seconds: v = parse_duration(text, 1.0, min <= 0), unit = " s"; break;  // min 0: 0 means no wait
            case ValueKind::fraction: v = parse_fraction(text); break;
        }
    } catch (const UsageError& e) {
        throw UsageError(option + " '" + text + "': " + e.what());
    }
    if (v < min || v > max)
        throw UsageError(option + " '" + text + "' is out of range (" + format_decimal(min, 6) + unit + " to " + format_decimal(max, 6) +
                         unit + ")");
    return v;
}

CLI::Validator size_validator(bool allow_percent) {
    return parsing_validator([allow_percent](const std::string& value) { parse_size_spec(value, SizeParseOptions{false, allow_percent}); },
                             allow_percent ? "SIZE|PCT%" : "SIZE");
}

CLI::Validator range_validator() {
    return parsing_validator([](const std::string& value) { parse_size_range(value); }, "RANGE");
}

CLI::Option* add_plot_option(CLI::App& app, std::optional<std::string>& target, const std::string& help) {
    return app.add_option("--plot", target, help)->type_name("FILE.svg");
}

bool progress_enabled(const Globals& g) { return !g.quiet && g.output.screen.stderr_terminal; }

}  // namespace gpumem::cli
