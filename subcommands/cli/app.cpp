// The whole command line: the table of commands, and the one way each runs:
// parse argv, check the global options and the command's own (pure, before
// any driver call), execute, report, render, write; every failure mapped to
// a documented exit status. main() is one call to run_gpumem; the
// command-line fuzz target calls it with RunMode::parse_only.
#include "cli/app.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "base/copy_plan.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/launcher.hpp"
#include "base/text.hpp"
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/help.hpp"
#include "core/cuda_devices.hpp"
#include "core/nvml.hpp"
#include "cli/lists.hpp"
#include "cli/terminal.hpp"
#include "version.hpp"

namespace gpumem::cli {
namespace {

// Every command, once. A command with modes has a row for the group (no
// `make`) and one per mode ("alloc-test latency").
const CommandEntry kCommands[] = {
    {"info", "Show device memory (NVML; creates no CUDA context)", &kInfoCommand},
    {"memset", "Fill device or host memory with 8/16/32-bit words; time and verify it", &kMemsetCommand},
    {"copy", "Measure copy bandwidth ({}) as nvbandwidth does, for any host memory kind", &kCopyCommand},
    {"alloc-test", "Allocation stress tests: latency, max, fill, churn, hold (see gpumem(1), ALLOC-TEST)", nullptr},
    {"alloc-test latency", "Allocation and free latency per API and size, and whether a free synchronizes the device",
     &kAllocLatencyCommand},
    {"alloc-test max", "Largest single cudaMalloc and the total obtainable in chunks", &kAllocMaxCommand},
    {"alloc-test fill", "Allocate SIZE or PCT% of free memory in chunks, write patterns and optionally verify them",
     &kAllocFillCommand},
    {"alloc-test churn", "Random allocate/free of sizes from --sizes, directly or through MixMemory", &kAllocChurnCommand},
    {"alloc-test hold",
     "Allocate SIZE or PCT% of free memory and hold it until --duration ends or a signal; prints a ready line once held",
     &kAllocHoldCommand},
    {"check",
     "Memory health verdict per GPU: NVML health, then allocation, fill and verify, memset, copy and p2p bandwidth against "
     "thresholds derived from the GPU's own figures; exit 7 when a check fails",
     &kCheckCommand},
    {"reuse-sim", "Simulate GPU allocators on a workload or a PyTorch recording: replay, tune, record, max-batch (see gpumem(1), REUSE-SIM)",
     nullptr},
    {"reuse-sim replay",
     "Replay an allocation trace or a built-in workload through reuse strategies (RMM's, PyTorch's, cudaMallocAsync and "
     "more: gpumem --list strategies) on a simulated device and compare them; no GPU needed unless --execute",
     &kReuseSimReplayCommand},
    {"reuse-sim tune",
     "Rank PYTORCH_CUDA_ALLOC_CONF settings by replaying a recording under each",
     &kReuseSimTuneCommand},
    {"reuse-sim record", "Run a PyTorch program unmodified and record its allocations (a snapshot and memory_stats)",
     &kReuseSimRecordCommand},
    {"reuse-sim max-batch",
     "The largest batch that fits under a memory cap, from recordings at small batches or the program itself, checked by real runs",
     &kReuseSimMaxBatchCommand},
    {"report",
     "Merge gpumem JSON documents (files, globs, stdin) from many hosts and ranks into one fleet table; flag failed "
     "checks and GPUs below their model's median; no GPU needed",
     &kReportCommand},
};

// A command's line for --help and --list commands: its summary, with "{}"
// replaced by the names of the table it lists (copy's directions), so that
// the summary cannot go stale when a row is added to that table.
std::string summary_of(const CommandEntry& e) {
    std::string summary(e.summary);
    const std::size_t slot = summary.find("{}");
    if (slot == std::string::npos) return summary;
    if (e.definition == &kCopyCommand) return summary.replace(slot, 2, kCopyDirections.names(", "));
    return summary;
}

std::string_view first_word(std::string_view name) { return name.substr(0, name.find(' ')); }
bool is_mode(const CommandEntry& e) { return e.name.find(' ') != std::string_view::npos; }
bool is_group(const CommandEntry& e) {
    return std::any_of(std::begin(kCommands), std::end(kCommands),
                       [&e](const CommandEntry& m) { return is_mode(m) && first_word(m.name) == e.name; });
}

// Options of gpumem itself that take a value, so that a scan of argv skips it.
bool takes_value(const std::string& a) { return a == "-d" || a == "--device" || a == "--format" || a == "--units"; }

// The one format the command line asks for (--json, --csv, --format F,
// --format=F), read from argv directly: errors found while parsing, before
// CLI11 has set anything, are written in it too. Formats that contradict
// each other (--json --csv) request none: their usage error's message alone
// is printed. A format that does not exist requests nothing (its own error
// says so).
std::optional<Format> requested_format(int argc, char** argv) {
    std::optional<Format> found;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        std::optional<std::string> name;
        if (a == "--json") name = "json";
        if (a == "--csv") name = "csv";
        if (a.rfind("--format=", 0) == 0) name = a.substr(9);
        if (a == "--format" && i + 1 < argc) name = argv[i + 1];
        const Named<FormatSpec>* row = name ? kFormats.find(*name) : nullptr;
        if (row == nullptr) continue;
        if (found && *found != row->value.format) return std::nullopt;
        found = row->value.format;
    }
    return found;
}

// --json: one document, also for a usage error.
bool json_requested(int argc, char** argv) { return requested_format(argc, argv) == Format::json; }

// The command row named on the command line (a mode when it has modes),
// found before CLI11 parses so that only its options need registering:
// registering every option of every command took over half of start-up.
const CommandEntry* invoked_entry(int argc, char** argv) {
    const CommandEntry* found = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (takes_value(a)) {
            ++i;
            continue;
        }
        if (a.empty() || a[0] == '-') continue;
        if (found == nullptr) {
            for (const CommandEntry& e : kCommands)
                if (!is_mode(e) && e.name == a) found = &e;
            if (found == nullptr || !is_group(*found)) return found;
            continue;
        }
        for (const CommandEntry& e : kCommands)
            if (is_mode(e) && first_word(e.name) == found->name && e.name.substr(found->name.size() + 1) == a) return &e;
        return found;
    }
    return found;
}

void setup_logging(const Globals& g) {
    auto logger = std::make_shared<spdlog::logger>("gpumem", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%n: %l: %v");
    spdlog::level::level_enum level = spdlog::level::warn;
    if (g.quiet) level = spdlog::level::err;
    if (g.verbosity == 1) level = spdlog::level::info;
    if (g.verbosity >= 2) level = spdlog::level::debug;
    logger->set_level(level);
    spdlog::set_default_logger(logger);
}

std::string version_text() {
    std::string text = std::string("gpumem ") + GPUMEM_VERSION + "\nCUDA runtime " + cuda_runtime_version_string() + " (static)\n";
    std::string why_not;
    if (auto nvml = Nvml::open(why_not)) {
        text += "NVIDIA driver " + nvml->driver_version() + " (CUDA " + format_cuda_version(nvml->cuda_driver_version()) + ")\n";
    } else if (const int v = cuda_driver_version_via_runtime(); v > 0) {
        text += "NVIDIA driver with CUDA " + format_cuda_version(v) + "\n";
    } else {
        text += "NVIDIA driver: not found\n";
    }
    return text;
}

// Every command's schema, keyed by name; with a name, that command's only (a
// group's name: each of its modes', keyed by name; a mode's whole name,
// "alloc-test max", as the keys say it: that mode's alone).
std::string schema_text(const std::string& name) {
    Json all = Json::object();
    for (const CommandEntry& e : kCommands)
        if (e.definition && (name.empty() || first_word(e.name) == name || e.name == name))
            all[std::string(e.name)] = schema_json(e.definition->schema());
    if (all.empty()) {
        std::vector<std::string_view> names;
        for (const CommandEntry& e : kCommands)
            if (!is_mode(e) || e.definition) names.push_back(e.name);
        throw UsageError("--schema: unknown command '" + name + "'" + did_you_mean(name, names));
    }
    if (all.size() == 1 && !name.empty()) return all.begin()->dump(2) + "\n";
    return all.dump(2) + "\n";
}

// The modes of a group ("alloc-test"): latency, max, fill...
std::vector<std::string> mode_names_of(std::string_view group) {
    std::vector<std::string> names;
    for (const CommandEntry& e : kCommands)
        if (is_mode(e) && first_word(e.name) == group) names.emplace_back(e.name.substr(group.size() + 1));
    return names;
}

// "unknown alloc-test mode 'hodl' (expected ...); did you mean 'hold'?"
std::string unknown_mode_text(std::string_view group, const std::string& word) {
    const std::vector<std::string> names = mode_names_of(group);
    std::string modes;
    for (const std::string& m : names) modes += (modes.empty() ? "" : ", ") + m;
    return "unknown " + std::string(group) + " mode '" + word + "' (expected " + modes + ")" + did_you_mean(word, names);
}

// The group's subcommand catches a missing or unknown mode itself, so that
// the message names the modes.
void setup_group(CLI::App& group, const CommandEntry& entry) {
    std::string modes;
    for (const std::string& m : mode_names_of(entry.name)) modes += (modes.empty() ? "" : ", ") + m;
    auto unknown = std::make_shared<std::string>();
    group.require_subcommand(0, 1);
    group.add_option("MODE", *unknown, modes + " (each has its own --help)");
    group.callback([&group, unknown, modes, name = std::string(entry.name)] {
        if (group.get_subcommands().empty()) {
            if (unknown->empty()) throw UsageError(name + " needs a mode: " + modes);
            throw UsageError(unknown_mode_text(name, *unknown));
        }
        if (!unknown->empty()) throw UsageError("unexpected argument '" + *unknown + "'");
    });
}

struct Parsed {
    GlobalOptions raw;
    bool version = false;
    std::optional<std::string> list;
    std::optional<std::string> schema;
};

void add_own_options(CLI::App& app, Parsed& p) {
    add_global_options(app, p.raw);
    app.add_flag("-V,--version", p.version, "Print the version, the CUDA runtime and the driver, then exit");
    app.add_option("--list", p.list, "Print the names a list holds (directions, strategies, fields...); without NAME, the lists")
        ->type_name("[NAME]")
        ->expected(0, 1);
    app.add_option("--schema", p.schema, "Print the JSON Schema of every command's --json document (or COMMAND's), then exit")
        ->type_name("[COMMAND]")
        ->expected(0, 1);
}

// A monitoring plugin's answer to a failure (a plugin format): a failed
// check is the report's own line and status; anything else (a usage error,
// no GPU, an interruption) leaves no verdict, the format's unknown status.
// A Nagios plugin reports a bad command line as UNKNOWN (exit 3), not as the
// CRITICAL that exit 2 would mean to Nagios; node-problem-detector reads any
// status but 0 and 1 as unknown, and shows the line as the condition's message.
int fail_as_plugin(const Error& error, const Report& report, Format format) {
    const bool check_failed = error.status() == ExitStatus::check_failed && report.plugin;
    Report plain = report;
    if (!check_failed) plain.plugin.reset();
    if (dynamic_cast<const OutputError*>(&error) == nullptr) {
        try {
            write_stdout(render_plugin_error(plain, error, format));
        } catch (const OutputError&) {
        }
    }
    return check_failed ? plain.plugin->status : format_spec(format).plugin_unknown;
}

int fail(const Error& error, const Report& report, const OutputOptions& output, bool json) {
    std::fprintf(stderr, "gpumem: error: %s\n", error_text(one_line(error.what())).c_str());
    if (!json && format_spec(output.format).plugin()) return fail_as_plugin(error, report, output.format);
    // stdout itself failed: no document can follow.
    const bool prometheus = !json && output.format == Format::prometheus;
    if ((json || prometheus) && dynamic_cast<const OutputError*>(&error) == nullptr) {
        try {
            if (prometheus) write_stdout(render_prometheus(report, static_cast<int>(error.status())));
            else render_json_error_to(report, error, output, write_stdout);
        } catch (const OutputError&) {
        }
    }
    return static_cast<int>(error.status());
}

// Stamps a report with who wrote it: the JSON "origin" record, and the same
// as labels on every sample of --format prometheus.
void stamp(Report& report, const Origin& origin) {
    report.origin = origin_record(origin);
    report.metric_labels.clear();
    for (const auto& [key, value] : origin_labels(origin)) report.metric_labels.emplace_back(std::string(key), value);
}

// Runs a Command through its contract. Results measured before a failure
// still go to stdout in text formats, and in the JSON error document.
int run_command(Command& command, const Globals& globals, RunMode mode, bool json) {
    command.check(globals);
    if (mode == RunMode::parse_only) return 0;  // everything before the first driver call has run
    install_interrupt_handlers();
    Session session(globals);
    try {
        command.execute(session);
    } catch (const Error& e) {
        Report partial = command.report(session.output());
        stamp(partial, globals.origin);
        for (const auto& w : partial.warnings) spdlog::warn("{}", warning_text(w));
        const bool json_out = json || session.output().format == Format::json;
        // Prometheus text is one exposition, and a Nagios or NPD plugin one
        // status line, written by fail() with the exit status: the partial results
        // written here too would repeat them.
        const bool one_document = json_out || format_spec(session.output().format).one_document;
        if (partial.plot && !partial.plot->nothing_drawn) {
            // What was measured before the failure, drawn; a failure to
            // write it is said, but the run's own error is the one reported.
            // Nothing measured: nothing written, the file left as it was.
            try {
                write_file_atomically(partial.plot->option, partial.plot->path, partial.plot->svg);
            } catch (const Error& plot_error) {
                spdlog::warn("{}", warning_text(plot_error.what()));
            }
        }
        // Bad input found while reading it (report's documents, no GPU
        // rows) is a usage error as any other: nothing on stdout.
        const bool usage_error = e.status() == ExitStatus::usage_error;
        if (!one_document && !usage_error && !session.final_written() && partial.has_rows() && dynamic_cast<const OutputError*>(&e) == nullptr)
            write_stdout(render(partial, session.output()));
        return fail(e, partial, session.output(), json_out);
    }
    Report report = command.report(session.output());
    stamp(report, globals.origin);
    for (const auto& w : report.warnings) spdlog::warn("{}", warning_text(w));
    if (report.plot && report.plot->nothing_drawn) {
        spdlog::warn("{}", warning_text(report.plot->option + " '" + report.plot->path + "': nothing to draw; not written"));
    } else if (report.plot) {
        try {
            write_file_atomically(report.plot->option, report.plot->path, report.plot->svg);
        } catch (const Error& e) {
            return fail(e, report, session.output(), json || session.output().format == Format::json);
        }
    }
    if (!session.final_written()) render_to(report, session.output(), write_stdout);
    // A plugin's exit status is its verdict (Nagios: 1 WARNING, 3 UNKNOWN;
    // NPD: 2 when a check could not run and none failed).
    if (format_spec(session.output().format).plugin() && report.plugin) return report.plugin->status;
    return session.exit_status();
}

// The CLI11 tree: every command's name and summary (for --help), and the
// options of the invoked one only. Returns the invoked Command, or null when
// none is named (--version, --list, --schema, or a usage error to come).
std::unique_ptr<Command> register_commands(CLI::App& app, const CommandEntry* invoked) {
    std::unique_ptr<Command> command;
    auto attach = [&](const CommandEntry& e, CLI::App& sub) {
        if (&e != invoked) return;
        command = e.definition->make();
        command->add_options(sub);
    };
    for (const CommandEntry& e : kCommands) {
        if (is_mode(e)) continue;
        CLI::App* sub = app.add_subcommand(std::string(e.name), summary_of(e));
        const bool full = invoked && first_word(invoked->name) == e.name;
        if (!full) continue;  // listed in --help; options only for the command invoked
        if (!is_group(e)) {
            attach(e, *sub);
            continue;
        }
        setup_group(*sub, e);
        for (const CommandEntry& m : kCommands)
            if (is_mode(m) && first_word(m.name) == e.name)
                attach(m, *sub->add_subcommand(std::string(m.name.substr(e.name.size() + 1)), summary_of(m)));
    }
    return command;
}

// This process's launcher and host, read before parsing so that every
// document, a parse error's too, carries its origin. A malformed launcher
// variable is held back until after --version (see dispatch).
struct Placement {
    LauncherInfo launcher;
    std::optional<std::string> error;  // a malformed launcher variable's UsageError
    std::string host;
};

Placement read_placement() {
    Placement p;
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0) p.host = name;  // else none: the rest still says where
    try {
        p.launcher = detect_launcher(process_environment());
    } catch (const UsageError& e) {
        p.error = e.what();
    }
    return p;
}

// CLI11 puts an option's name before its validator's message ("--xid-since:
// ..."); gpumem's parsers name the option themselves where they are also
// called without CLI11 ("--xid-since 'yesterday': expected ..."), so the
// name is said once.
std::string parse_error_text(const std::string& what) {
    const std::size_t colon = what.find(": ");
    if (colon == std::string::npos || what.rfind("--", 0) != 0) return what;
    const std::string name = what.substr(0, colon);
    std::string message = what.substr(colon + 2);
    if (message.rfind(name + " ", 0) == 0 || message.rfind(name + ":", 0) == 0) return message;
    return what;
}

// The help page of the command that was run, for a usage error found while
// parsing: " (see gpumem check --help)".
// None where the message already says where its names are (gpumem --list).
std::string help_pointer(const CommandEntry* invoked, std::string_view message = {}) {
    if (suggests_names(message)) return {};
    return " (see gpumem " + (invoked ? std::string(invoked->name) + " " : std::string()) + "--help)";
}

// Every spelling of the options `app` and its parents take: --level, -d.
std::vector<std::string> option_spellings(const CLI::App* app) {
    std::vector<std::string> names;
    for (; app != nullptr; app = app->get_parent())
        for (const CLI::Option* opt : app->get_options()) {
            for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
            for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
        }
    return names;
}

// The CLI11 subcommand named `name` of `parent`, or null.
const CLI::App* child_named(const CLI::App& parent, std::string_view name) {
    const auto found = parent.get_subcommands([name](const CLI::App* sub) { return sub->get_name() == name; });
    return found.empty() ? nullptr : found.front();
}

// The CLI11 subcommand of the command row that was run (a mode's, for a mode).
const CLI::App* invoked_app(const CLI::App& app, const CommandEntry* invoked) {
    if (invoked == nullptr) return &app;
    const CLI::App* sub = child_named(app, first_word(invoked->name));
    if (sub != nullptr && is_mode(*invoked)) sub = child_named(*sub, invoked->name.substr(invoked->name.find(' ') + 1));
    return sub != nullptr ? sub : &app;
}

// The value a positional option of `sub` took (a group's MODE, reuse-sim's
// program), or "".
std::string positional_value(const CLI::App& sub, const std::string& name) {
    for (const CLI::Option* opt : sub.get_options())
        if (opt->get_lnames().empty() && opt->get_snames().empty() && opt->get_name() == name && !opt->results().empty())
            return opt->results().front();
    return {};
}

// The index of `word` in `args` from `from` on, or args.size().
std::size_t index_of(const std::vector<std::string>& args, const std::string& word, std::size_t from) {
    for (std::size_t i = from; i < args.size(); ++i)
        if (args[i] == word) return i;
    return args.size();
}

// The other modes of the invoked mode's group that take option `name`
// ("reuse-sim max-batch" for reuse-sim replay's --max-runs), comma
// separated; empty when none does or no mode was invoked. Only the invoked
// mode's options are registered: the others are made here, for the message.
std::string sibling_modes_taking(const CommandEntry* invoked, const std::string& name) {
    if (invoked == nullptr || !is_mode(*invoked)) return {};
    std::string owners;
    for (const CommandEntry& e : kCommands) {
        if (&e == invoked || !is_mode(e) || first_word(e.name) != first_word(invoked->name) || !e.definition) continue;
        CLI::App scratch;
        const std::unique_ptr<Command> command = e.definition->make();
        command->add_options(scratch);
        if (scratch.get_option_no_throw(name) != nullptr) owners += (owners.empty() ? "" : ", ") + std::string(e.name);
    }
    return owners;
}

// CLI11's "The following argument was not expected: inof" in gpumem's words,
// with the nearest name offered: "unknown command 'inof'; did you mean
// 'info'?", "unknown option '--levle'; did you mean '--level'?".
std::string extras_text(const CLI::ExtrasError& e, const CLI::App& app, const CommandEntry* invoked, const std::vector<std::string>& args) {
    std::string what = e.what();
    const std::size_t colon = what.find(": ");
    if (colon == std::string::npos) return what;
    // The first unknown option, else the first word: "--levle" of "quick --levle".
    std::string word;
    for (std::string_view w : split(std::string_view(what).substr(colon + 2), ' '))
        if (word.empty() || (word[0] != '-' && !w.empty() && w[0] == '-')) word = std::string(w);
    // A mistyped mode with its arguments after it ("alloc-test hodl 1GiB"):
    // the group took the mode as its MODE, the arguments are the extras.
    if (invoked != nullptr && is_group(*invoked))
        if (const std::string mode = positional_value(*invoked_app(app, invoked), "MODE"); !mode.empty())
            return unknown_mode_text(invoked->name, mode);
    if (!word.empty() && word[0] == '-') {
        const std::string name = word.substr(0, word.find('='));
        // A program given without -- before it (reuse-sim record -o F python3
        // -c ...): its options are not gpumem's, and no near name helps.
        const std::string program = invoked != nullptr ? positional_value(*invoked_app(app, invoked), "command") : "";
        if (!program.empty() && index_of(args, program, 1) < index_of(args, word, 1))
            return "unknown option '" + name + "' after the program '" + program + "': put the program after -- (gpumem " +
                   std::string(invoked->name) + " ... -- " + program + " ...)";
        if (const std::string owners = sibling_modes_taking(invoked, name); !owners.empty())
            return "unknown option '" + name + "' for " + std::string(invoked->name) + ": it is an option of " + owners;
        return "unknown option '" + name + "'" + did_you_mean(name, option_spellings(invoked_app(app, invoked)));
    }
    if (invoked != nullptr) return "unexpected argument '" + word + "'";
    std::vector<std::string_view> names;
    for (const CommandEntry& c : kCommands)
        if (!is_mode(c)) names.push_back(c.name);
    return "unknown command '" + word + "'" + did_you_mean(word, names);
}

// CLI11's "--strategy: At Most 1 required but received 2" (an option of one
// value given twice) in words: which option, and that it takes one; a list
// option's values go in that one, separated by commas.
std::optional<std::string> repeated_option_text(const CLI::ParseError& e, const CLI::App& app, const CommandEntry* invoked) {
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) == nullptr) return std::nullopt;
    const std::string what = e.what();
    constexpr std::string_view kMarker = ": At Most 1 required but received ";
    const std::size_t at = what.find(kMarker);
    if (at == std::string::npos) return std::nullopt;
    const std::string name = what.substr(0, at);
    const std::string times = what.substr(at + kMarker.size());
    std::string text = name + " given " + times + " times: give it once";
    const CLI::Option* option = invoked_app(app, invoked)->get_option_no_throw(name);
    if (option != nullptr && option->get_type_name().rfind("LIST", 0) == 0) text += " (a list is one value: " + name + " A,B)";
    return text;
}

std::string parse_failure_text(const CLI::ParseError& e, const CLI::App& app, const CommandEntry* invoked,
                               const std::vector<std::string>& args) {
    if (const auto* extras = dynamic_cast<const CLI::ExtrasError*>(&e)) return extras_text(*extras, app, invoked, args) + help_pointer(invoked);
    if (const std::optional<std::string> repeated = repeated_option_text(e, app, invoked)) return *repeated + help_pointer(invoked);
    const std::string text = parse_error_text(e.what());
    return text + help_pointer(invoked, text);
}

// `--list NAME` and `--schema NAME`: the word after them is their value even
// where it also names a command (`--list check`, `--schema report`), so one
// rule holds for every list name.
std::vector<std::string> joined_values(int argc, char** argv) {
    std::vector<std::string> args(argv, argv + argc);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const bool takes = args[i] == "--list" || args[i] == "--schema";
        if (takes && i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] != '-') {
            out.push_back(args[i] + "=" + args[i + 1]);
            ++i;
        } else {
            out.push_back(args[i]);
        }
    }
    return out;
}

// After parsing: the global options, then --version, --list, --schema or
// the command. `error_output` gets the format error documents use.
// A format not every command takes exists only for the commands whose
// definition names it (CommandDefinition::formats).
void check_format_offered(const Parsed& parsed, const CommandEntry* invoked, const Globals& globals) {
    const Format format = globals.output.format;
    if (format_spec(format).every_command) return;
    const std::string asked = "--format " + std::string(format_name(format));
    // --schema and --list are no command's report: their own forms only.
    if (parsed.schema) throw UsageError("--schema prints JSON Schema, as JSON only: it takes no " + asked);
    if (parsed.list) throw UsageError("--list prints names as a table, CSV or JSON: it takes no " + asked);
    if (invoked && invoked->definition && invoked->definition->formats.has(format)) return;
    std::string names;
    for (const CommandEntry& e : kCommands)
        if (e.definition && e.definition->formats.has(format)) names += (names.empty() ? "" : ", ") + std::string(e.name);
    throw UsageError(asked + " is offered by " + names + " only");
}

int dispatch(const Parsed& parsed, const CommandEntry* invoked, Command* command, RunMode mode, bool json,
             const Placement& placement, OutputOptions& error_output) {
    if (parsed.version) {
        if (mode == RunMode::full) write_stdout(version_text());  // version_text asks the driver
        return 0;
    }
    // The launcher's variables are checked for every command: a document
    // stamped with a wrong rank would mislead a fleet's report.
    if (placement.error) throw UsageError(*placement.error);
    const Globals globals = check_globals(parsed.raw, placement.launcher, placement.host);
    check_format_offered(parsed, invoked, globals);
    error_output = globals.output;
    setup_logging(globals);
    if (parsed.list) {
        Report list = list_report(*parsed.list, globals.output.format);
        stamp(list, globals.origin);  // who listed, as every document says
        write_stdout(render(list, globals.output));
        return 0;
    }
    if (parsed.schema) {
        write_stdout(schema_text(*parsed.schema));
        return 0;
    }
    if (!command) {
        std::string names;
        for (const CommandEntry& e : kCommands)
            if (!is_mode(e)) names += (names.empty() ? "" : ", ") + std::string(e.name);
        throw UsageError("a command is required: " + names + " (see gpumem --help)");
    }
    return run_command(*command, globals, mode, json);
}

// argv cut at its first `--`: gpumem's own words before it, and the program
// after it (reuse-sim record's), which neither CLI11 nor any scan of
// gpumem's options (--json, the command's name) may read.
struct SplitArgs {
    int argc = 0;                      // the words before `--`
    bool dashes = false;               // a `--` was given
    std::vector<std::string> program;  // the words after it
};

SplitArgs split_at_dashes(int argc, char** argv) {
    SplitArgs split{argc, false, {}};
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) {
            split.argc = i;
            split.dashes = true;
            split.program.assign(argv + i + 1, argv + argc);
            break;
        }
    return split;
}

// The program after `--` goes to the command that runs one; words after
// `--` for any other command are a usage error, never gpumem's options.
// Words after `--` for a command that runs no program: refused before
// CLI11 parses, whose complaint would be about what they left out
// ("direction is required" for `copy -- h2d`).
void refuse_words_after_dashes(const SplitArgs& split, Command* command, const CommandEntry* invoked) {
    if (!split.dashes || split.program.empty() || (command && command->program())) return;
    const std::string who = invoked ? "gpumem " + std::string(invoked->name) : std::string("gpumem");
    std::string words;
    for (const std::string& w : split.program) words += " " + w;
    throw UsageError("unexpected argument '" + split.program.front() + "' after --: " + who +
                     " runs no program; leave out the -- (" + who + " ..." + words + ")");
}

void hand_over_program(const SplitArgs& split, Command* command, const CommandEntry* invoked) {
    std::vector<std::string>* program = command ? command->program() : nullptr;
    if (program && !program->empty())  // CLI11 gave the positional words before any `--`
        throw UsageError("put the program after --: gpumem " + std::string(invoked->name) + " ... -- " + program->front() + " ...");
    if (!split.dashes || split.program.empty()) return;
    refuse_words_after_dashes(split, command, invoked);
    *program = split.program;
}

int run_command_line(int original_argc, char** original_argv, RunMode mode) {
    const SplitArgs split = split_at_dashes(original_argc, original_argv);
    std::vector<std::string> args = joined_values(split.argc, original_argv);
    std::vector<char*> arg_pointers;
    arg_pointers.reserve(args.size() + 1);
    for (std::string& a : args) arg_pointers.push_back(a.data());
    arg_pointers.push_back(nullptr);
    const int argc = static_cast<int>(args.size());
    char** argv = arg_pointers.data();
    CLI::App app{"gpumem: GPU memory operations from the command line: query, allocate, fill, copy, and simulate reuse.",
                 "gpumem"};
    // The exit-status table is on this page only (and in the man page).
    app.footer("Exit status: 0 ok, 1 runtime/CUDA error, 2 usage error, 3 no usable GPU or driver, "
               "4 verification failed, 5 out of memory, 6 below --expect-min, 7 a check failed, 130 interrupted; "
               "with check --format nagios: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (usage errors included); "
               "with check --format npd: 0 pass or warn, 1 fail, 2 unknown (no driver and usage errors included); "
               "killed by SIGPIPE (141) when stdout's reader goes away.\n"
               "A unit in brackets (RATE[GB/s], TIME[s]) is what a bare number means; RATE, TIME, SIZE and FRACTION take "
               "the same forms in every option (50GB/s, 10ms, 4GiB, 10% or 0.1). Details of every option: gpumem(1).");
    app.formatter(std::make_shared<HelpFormatter>());
    app.fallthrough();
    app.require_subcommand(0, 1);
    Parsed parsed;
    add_own_options(app, parsed);
    const CommandEntry* invoked = invoked_entry(argc, argv);
    // info's cost is NVML's start-up (~10 ms): begin it now, beside parsing.
    if (invoked && invoked->name == "info" && mode == RunMode::full) Nvml::start_opening();
    std::unique_ptr<Command> command = register_commands(app, invoked);

    const bool json = json_requested(argc, argv);
    const Placement placement = read_placement();
    Report empty;
    empty.command = invoked ? std::string(invoked->name) : "";
    stamp(empty, make_origin(placement.host, placement.launcher));
    OutputOptions error_output;
    if (json) error_output.format = Format::json;
    // A plugin's UNKNOWN line is for the commands that are plugins: --format
    // nagios on memset is a usage error like any format it does not offer.
    const std::optional<Format> requested = requested_format(argc, argv);
    if (requested && format_spec(*requested).plugin() && invoked && invoked->definition &&
        invoked->definition->formats.has(*requested))
        error_output.format = *requested;
    try {
        refuse_words_after_dashes(split, command.get(), invoked);
        app.parse(argc, argv);
        hand_over_program(split, command.get(), invoked);
    } catch (const CLI::CallForHelp&) {
        write_stdout(app.help());
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        write_stdout(app.help("", CLI::AppFormatMode::All));
        return 0;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return 0;
        return fail(UsageError(parse_failure_text(e, app, invoked, args)), empty, error_output, json);
    } catch (const UsageError& e) {  // thrown by option callbacks that validate values and combinations
        return fail(UsageError(e.what() + help_pointer(invoked, e.what())), empty, error_output, json);
    } catch (const Error& e) {
        return fail(e, empty, error_output, json);
    }
    // An error document of --list or --schema says which it was.
    if (!invoked && parsed.list) empty.command = "list";
    if (!invoked && parsed.schema) empty.command = "schema";
    try {
        return dispatch(parsed, invoked, command.get(), mode, json, placement, error_output);
    } catch (const Error& e) {
        return fail(e, empty, error_output, json || error_output.format == Format::json);
    } catch (const CLI::ParseError& e) {
        return fail(UsageError(e.what()), empty, error_output, json);
    } catch (const std::bad_alloc&) {
        return fail(Error("out of host memory"), empty, error_output, json);
    } catch (const std::exception& e) {
        return fail(Error(std::string("internal error: ") + e.what()), empty, error_output, json);
    }
}

}  // namespace

std::vector<ListEntry> command_lists() {
    std::vector<ListEntry> lists;
    for (const CommandEntry& e : kCommands)
        if (e.definition) lists.insert(lists.end(), e.definition->lists.begin(), e.definition->lists.end());
    return lists;
}

NameListView command_list() {
    // The view holds string_views: the summaries stay, once made.
    static const std::vector<std::string> summaries = [] {
        std::vector<std::string> lines;
        for (const CommandEntry& e : kCommands) lines.push_back(summary_of(e));
        return lines;
    }();
    NameListView view{"command", {}};
    for (std::size_t i = 0; i < std::size(kCommands); ++i) view.rows.emplace_back(kCommands[i].name, summaries[i]);
    return view;
}

// Last resort: an exception that escapes run_command_line (from option
// registration, from a parse callback that throws something other than
// gpumem::Error or CLI11's errors, or from printing an error) would otherwise
// reach std::terminate and abort with a core dump instead of a documented status.
int run_gpumem(int argc, char** argv, RunMode mode) noexcept {
    if (mode == RunMode::full) ignore_sigpipe();
    try {
        return run_command_line(argc, argv, mode);
    } catch (const StdoutClosed&) {
        return kClosedPipeStatus;
    } catch (const Error& e) {  // writing --help or an error document failed
        std::fprintf(stderr, "gpumem: error: %s\n", error_text(one_line(e.what())).c_str());
        return static_cast<int>(e.status());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpumem: error: internal error: %s\n", e.what());
    } catch (...) {
        std::fputs("gpumem: error: internal error: unknown exception\n", stderr);
    }
    return static_cast<int>(ExitStatus::runtime_error);
}

}  // namespace gpumem::cli
