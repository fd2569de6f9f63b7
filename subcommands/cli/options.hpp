// The options every command shares, how they are checked, and helpers that
// register a command's own options with gpumem's strict parsers (CLI11 2.1
// turns "-1" and "2^64" into 2^64-1 for unsigned options and lets "nan" pass
// a range), its name tables (so --help shows the choices) and sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/device_spec.hpp"
#include "base/errors.hpp"
#include "base/launcher.hpp"
#include "base/name_table.hpp"
#include "base/sizes.hpp"
#include "cli/output.hpp"

namespace gpumem::cli {

// As CLI11 fills them.
struct GlobalOptions {
    std::optional<std::string> device;  // -d SPEC
    std::optional<std::string> format;  // --format
    bool json = false;
    bool csv = false;
    bool no_header = false;
    bool wide = false;  // --wide
    std::string units = "auto";
    int verbosity = 0;
    bool quiet = false;
};

// Checked, before any driver call.
struct Globals {
    OutputOptions output;
    std::optional<DeviceSpec> device;  // -d, parsed; nullopt when not given
    int verbosity = 0;
    bool quiet = false;
    LauncherInfo launcher;  // the launcher that started this process, if any
    Origin origin;          // stamped on every document (Report::origin)
};

void add_global_options(CLI::App& app, GlobalOptions& options);
// Pure: conflicting formats, bad units, a malformed -d, -d local without a
// launcher's local rank: UsageError. `launcher` is detect_launcher's answer
// and `host` gethostname's.
Globals check_globals(const GlobalOptions& options, const LauncherInfo& launcher, std::string host);

// The -d SPEC, or `fallback` ("0", "all") when none was given.
DeviceSpec device_spec_or(const Globals& globals, std::string_view fallback);
// -d naming exactly one device (default 0); `purpose` says why in the error.
DeviceSpec single_device_spec(const Globals& globals, std::string_view purpose);

// An unsigned integer option (decimal or 0x) within [min, max].
CLI::Option* add_unsigned_option(CLI::App& app, const std::string& names, std::uint64_t& target, const std::string& help,
                                 std::uint64_t min, std::uint64_t max);
CLI::Option* add_unsigned_option(CLI::App& app, const std::string& names, std::optional<std::uint64_t>& target,
                                 const std::string& help, std::uint64_t min, std::uint64_t max);
// A finite decimal option within [min, max].
CLI::Option* add_real_option(CLI::App& app, const std::string& names, double& target, const std::string& help, double min,
                             double max);
CLI::Option* add_real_option(CLI::App& app, const std::string& names, std::optional<double>& target,
                             const std::string& help, double min, double max);

// One helper per kind of value (base/quantities.hpp), so that every option of
// a kind takes the same forms. The type name in --help says the kind and, in
// brackets, what a bare number means: RATE[GB/s], TIME[s], FRACTION. A bad
// value fails while parsing, naming the option: "--sample-time '1x': ...".
// `target` is a double or an optional<double>; min and max are in the
// stored unit (GB/s, seconds, a fraction).
enum class ValueKind { rate_gbps, seconds, fraction };
double parse_value_of(ValueKind kind, const std::string& option, const std::string& text, double min, double max);
std::string value_type_name(ValueKind kind);

template <typename Target>
CLI::Option* add_value_option(CLI::App& app, const std::string& names, Target& target, const std::string& help, ValueKind kind,
                              double min, double max) {
    std::string option;
    for (std::size_t start = 0; start <= names.size();) {  // the longest name: "--loop" of "-l,--loop"
        const std::size_t comma = std::min(names.find(',', start), names.size());
        if (comma - start > option.size()) option = names.substr(start, comma - start);
        start = comma + 1;
    }
    return app
        .add_option_function<std::string>(
            names, [&target, option, kind, min, max](const std::string& text) { target = parse_value_of(kind, option, text, min, max); },
            help)
        ->type_name(value_type_name(kind));
}

// Validators for options kept as text and parsed by check(): bad values fail
// while parsing, with the parser's own message.
// Runs `parse(value)`; its UsageError is the message.
template <typename Parse>
CLI::Validator parsing_validator(Parse parse, std::string description) {
    return CLI::Validator(
        [parse](std::string& value) -> std::string {
            try {
                parse(value);
            } catch (const UsageError& e) {
                return e.what();
            }
            return {};
        },
        std::move(description));
}

CLI::Validator size_validator(bool allow_percent);
CLI::Validator range_validator();
// A name (or, with `list`, a comma list of names or `all`) from a table; the
// help shows the choices as {a,b,c}.
template <typename T>
CLI::Validator names_validator(const NameTable<T>& table, bool list = false) {
    std::string choices = "{";
    for (const Named<T>& row : table) choices += (choices.size() > 1 ? "," : "") + std::string(row.name);
    choices += list ? ",all}" : "}";
    return parsing_validator(
        [&table, list](const std::string& value) {
            if (list)
                table.parse_list(value);
            else
                table.parse(value);
        },
        choices);
}

// --plot FILE.svg: `help` says what the picture shows; the file itself is
// checked by check() (check_output_file, writer.hpp).
CLI::Option* add_plot_option(CLI::App& app, std::optional<std::string>& target, const std::string& help);

// True when stderr is a terminal and progress may be drawn (not with -q).
bool progress_enabled(const Globals& globals);

}  // namespace gpumem::cli
