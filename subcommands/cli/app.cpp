// The whole command line: the table of commands, and the one way each runs:
// parse argv, check the global options and the command's own (pure, before
// any driver call), execute, report, render, write; every failure mapped to
// a documented exit status. main() is one call to run_gpumem; the
// command-line fuzz target calls it with RunMode::parse_only.
#include "cli/app.hpp"

#include <sys/stat.h>
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
#include "core/log.hpp"

#include "base/copy_plan.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/launcher.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/help.hpp"
#include "core/cuda_devices.hpp"
#include "core/nvml.hpp"
#include "cli/lists.hpp"
#include "process/child.hpp"
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
    {"reuse-sim",
     "PyTorch out of memory? Record the run, replay it, tune PYTORCH_ALLOC_CONF, find the largest batch size that fits: "
     "record, replay, tune, max-batch (see gpumem(1), REUSE-SIM)",
     nullptr, "job"},
    // reuse-sim's jobs in the order a user takes them.
    {"reuse-sim record", "Run a PyTorch program unmodified and record its allocations (a snapshot and memory_stats)",
     &kReuseSimRecordCommand},
    {"reuse-sim replay",
     "Replay an allocation trace or a built-in workload through reuse strategies (RMM's, PyTorch's, cudaMallocAsync and "
     "more: gpumem --list strategies) on a simulated device and compare them; no GPU needed unless --execute",
     &kReuseSimReplayCommand},
    {"reuse-sim tune",
     "Rank PyTorch allocator settings (PYTORCH_ALLOC_CONF) by replaying a recording under each: the one that avoids the OOM",
     &kReuseSimTuneCommand},
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
    log::Level lowest = log::Level::warn;
    if (g.quiet) lowest = log::Level::error;
    if (g.verbosity == 1) lowest = log::Level::info;
    if (g.verbosity >= 2) lowest = log::Level::debug;
    log::set_threshold(lowest);
    // A warning is prose for the user: within stderr's width, as the run
    // measured it once. Debug and info lines are for logs: one line each.
    log::set_layout([screen = g.output.screen](log::Level level, std::string_view prefix, std::string_view message) {
        return level == log::Level::warn ? stderr_text(prefix, message, screen) : std::string(message);
    });
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

// The row of the group `name` ("reuse-sim"), or null.
const CommandEntry* group_named(std::string_view name) {
    for (const CommandEntry& e : kCommands)
        if (!is_mode(e) && e.name == name && is_group(e)) return &e;
    return nullptr;
}

// What a group calls its modes: "mode", reuse-sim's "job".
std::string mode_noun_of(std::string_view group) {
    const CommandEntry* row = group_named(group);
    return std::string(row != nullptr ? row->mode_noun : "mode");
}

// "unknown alloc-test mode 'hodl' (expected ...); did you mean 'hold'?"
std::string unknown_mode_text(std::string_view group, const std::string& word) {
    const std::vector<std::string> names = mode_names_of(group);
    std::string modes;
    for (const std::string& m : names) modes += (modes.empty() ? "" : ", ") + m;
    return "unknown " + std::string(group) + " " + mode_noun_of(group) + " '" + word + "' (expected " + modes + ")" +
           did_you_mean(word, names);
}

// A word left over after a mode's options, which its group took for its
// MODE ("reuse-sim replay x.pickle"): thrown by the group's callback, and
// worded where the whole command line is known (run_command_line).
class LeftOverWord : public UsageError {
public:
    explicit LeftOverWord(const std::string& word) : UsageError("unexpected argument '" + word + "'"), word_(word) {}
    const std::string& word() const noexcept { return word_; }

private:
    std::string word_;
};

// The group's subcommand catches a missing or unknown mode itself, so that
// the message names the modes.
void setup_group(CLI::App& group, const CommandEntry& entry) {
    std::string modes;
    for (const std::string& m : mode_names_of(entry.name)) modes += (modes.empty() ? "" : ", ") + m;
    auto unknown = std::make_shared<std::string>();
    group.require_subcommand(0, 1);
    group.add_option("MODE", *unknown, modes + " (each has its own --help)");
    group.callback([&group, unknown, modes, name = std::string(entry.name), noun = std::string(entry.mode_noun)] {
        if (group.get_subcommands().empty()) {
            if (unknown->empty()) throw UsageError(name + " needs a " + noun + ": " + modes);
            throw UsageError(unknown_mode_text(name, *unknown));
        }
        if (!unknown->empty()) throw LeftOverWord(*unknown);
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
    // The run's screen, not `output`'s: a usage error comes before the
    // options that carry it are made.
    std::fprintf(stderr, "gpumem: error: %s\n", error_text(one_line(error.what()), terminal_screen()).c_str());
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
        for (const auto& w : partial.warnings) log::warn("{}", w);
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
                log::warn("{}", plot_error.what());
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
    // A picture with nothing to draw is not written (an existing file is
    // left as it was), and says so among the warnings.
    const bool plot_empty = report.plot && report.plot->nothing_drawn;
    const auto warn = [&report, plot_empty] {
        for (const auto& w : report.warnings) log::warn("{}", w);
        if (plot_empty)
            log::warn("{}", report.plot->option + " '" + report.plot->path + "': nothing to draw; not written");
    };
    if (report.plot && !plot_empty) {
        try {
            write_file_atomically(report.plot->option, report.plot->path, report.plot->svg);
        } catch (const Error& e) {
            warn();
            return fail(e, report, session.output(), json || session.output().format == Format::json);
        }
    }
    // The answer first, then what qualifies it: on a terminal, warnings
    // printed before a report pushed its first lines (tune's answer) out of
    // sight.
    if (!session.final_written()) render_to(report, session.output(), write_stdout);
    warn();
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

// The formats `e` offers: those every command takes and its own
// (CommandDefinition::formats), the table alone where it refuses the rest.
std::vector<std::string> formats_offered(const CommandEntry& e) {
    std::vector<std::string> names;
    for (const Named<FormatSpec>& row : kFormats) {
        const bool offered = row.value.every_command || (e.definition && e.definition->formats.has(row.value.format));
        const bool refused = e.definition && e.definition->refuses_format && row.value.format != Format::table;
        if (offered && !refused) names.emplace_back(row.name);
    }
    return names;
}

// The global options as the invoked command's --help shows them: those it
// refuses left out (an empty group hides an option), and --format's
// choices its own. gpumem --help, with no command, shows every one.
void show_globals_taken(CLI::App& app, const CommandEntry* invoked) {
    if (invoked == nullptr || invoked->definition == nullptr) return;
    const CommandDefinition& d = *invoked->definition;
    const auto hide = [&app](const char* name) {
        if (CLI::Option* option = app.get_option_no_throw(name)) option->group("");
    };
    if (d.refuses_device) hide("--device");
    if (d.refuses_format) {
        for (const char* name : {"--format", "--json", "--csv"}) hide(name);
        return;
    }
    const std::vector<std::string> names = formats_offered(*invoked);
    CLI::Option* format = app.get_option("--format");
    format->description("Output format: " + join(names, ", "));
    format->get_validator()->description("{" + join(names, ",") + "}");
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

// Whether mode row `e` registers option `name`. Only the invoked mode's
// options are registered: the others are made here, for a message.
bool mode_takes(const CommandEntry& e, const std::string& name) {
    if (!e.definition) return false;
    CLI::App scratch;
    const std::unique_ptr<Command> command = e.definition->make();
    command->add_options(scratch);
    return scratch.get_option_no_throw(name) != nullptr;
}

// The modes of `group` but `except` that take option `name`, in the table's
// order ("reuse-sim replay", "reuse-sim tune" for --trace).
std::vector<const CommandEntry*> modes_taking(std::string_view group, const std::string& name, const CommandEntry* except = nullptr) {
    std::vector<const CommandEntry*> owners;
    for (const CommandEntry& e : kCommands)
        if (&e != except && is_mode(e) && first_word(e.name) == group && mode_takes(e, name)) owners.push_back(&e);
    return owners;
}

std::string names_of(const std::vector<const CommandEntry*>& rows) {
    std::string names;
    for (const CommandEntry* e : rows) names += (names.empty() ? "" : ", ") + std::string(e->name);
    return names;
}

// The other modes of the invoked mode's group that take option `name`
// ("reuse-sim max-batch" for reuse-sim replay's --max-runs), comma
// separated; empty when none does or no mode was invoked.
std::string sibling_modes_taking(const CommandEntry* invoked, const std::string& name) {
    if (invoked == nullptr || !is_mode(*invoked)) return {};
    return names_of(modes_taking(first_word(invoked->name), name, invoked));
}

// The command line `words` (argv after "gpumem", before any --) and
// `program` (after it) make, as a user types it: for a message that shows
// the line meant.
std::string command_line(const std::vector<std::string>& words, const std::vector<std::string>& program) {
    std::string line = "gpumem";
    for (const std::string& w : words) line += " " + w;
    if (!program.empty()) line += " --";
    for (const std::string& w : program) line += " " + w;
    return line;
}

// The index in `args` of the first word that is neither an option nor a
// global option's value (the command's name), or 0.
std::size_t first_word_at(const std::vector<std::string>& args) {
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (takes_value(args[i])) {
            ++i;
            continue;
        }
        if (!args[i].empty() && args[i][0] != '-') return i;
    }
    return 0;
}

// A mode's name given as a command ("gpumem tune --trace x"): "unknown
// command 'tune': tune is a job of reuse-sim: gpumem reuse-sim tune ...".
std::optional<std::string> mode_as_command_text(const std::vector<std::string>& args, const std::vector<std::string>& program) {
    const std::size_t at = first_word_at(args);
    if (at == 0) return std::nullopt;
    for (const CommandEntry& e : kCommands) {
        if (!is_mode(e) || e.name.substr(e.name.find(' ') + 1) != args[at]) continue;
        const std::string group(first_word(e.name));
        std::vector<std::string> words(args.begin() + 1, args.end());
        words[at - 1] = std::string(e.name);
        return "unknown command '" + args[at] + "': " + args[at] + " is a " + mode_noun_of(group) + " of " + group + ": " +
               command_line(words, program);
    }
    return std::nullopt;
}

// A group's mode given as an option: reuse-sim's flags before its jobs
// ("reuse-sim --tune ...", "reuse-sim --record FILE -- CMD"), each now a
// word after reuse-sim. --record FILE named the file the job writes: its -o.
std::optional<std::string> mode_as_option_text(const std::vector<std::string>& args, const std::vector<std::string>& program,
                                               const CommandEntry& group, std::size_t group_at) {
    const std::string name(group.name);
    for (std::size_t i = group_at + 1; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.rfind("--", 0) != 0) continue;
        const std::size_t eq = a.find('=');
        for (const std::string& mode : mode_names_of(name)) {
            if (a.substr(0, eq) != "--" + mode) continue;
            std::string mode_name = name;  // "reuse-sim tune"
            mode_name.append(1, ' ').append(mode);
            const CommandEntry* row = nullptr;
            for (const CommandEntry& e : kCommands)
                if (is_mode(e) && e.name == mode_name) row = &e;
            std::vector<std::string> words(args.begin() + 1, args.end());
            const std::size_t k = i - 1;  // the flag's index in `words`
            std::optional<std::string> value;
            std::size_t taken = 1;
            if (eq != std::string::npos) {
                value = a.substr(eq + 1);
            } else if (k + 1 < words.size() && !words[k + 1].empty() && words[k + 1][0] != '-' && row && mode_takes(*row, "--output")) {
                value = words[k + 1];
                taken = 2;
            }
            words.erase(words.begin() + static_cast<std::ptrdiff_t>(k), words.begin() + static_cast<std::ptrdiff_t>(k + taken));
            std::vector<std::string> inserted = {mode};
            if (value && row && mode_takes(*row, "--output")) inserted.insert(inserted.end(), {"-o", *value});
            words.insert(words.begin() + static_cast<std::ptrdiff_t>(group_at), inserted.begin(), inserted.end());
            std::string text = "'" + a.substr(0, eq);
            text += "' is no option: ";
            text += mode;
            text += " is a ";
            text += group.mode_noun;
            text += " of ";
            text += name;
            text += ": ";
            text += command_line(words, program);
            return text;
        }
    }
    return std::nullopt;
}

// A mode's option given before any mode ("reuse-sim --trace x.pickle", as
// reuse-sim read it when replay was no word of its own): the modes that
// take it, and the line with the first of them.
std::optional<std::string> option_before_mode_text(const std::vector<std::string>& args, const std::vector<std::string>& program,
                                                   const CommandEntry& group, std::size_t group_at) {
    // Only where no word follows the group's name before its options: a
    // word there is a mistyped mode, which its own message names.
    if (group_at + 1 >= args.size() || args[group_at + 1].empty() || args[group_at + 1][0] != '-') return std::nullopt;
    for (std::size_t i = group_at + 1; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.size() < 2 || a[0] != '-') continue;
        const std::string option = a.substr(0, a.find('='));
        if (option == "-h" || option == "--help") return std::nullopt;  // the group's own: its page lists the modes
        const std::vector<const CommandEntry*> owners = modes_taking(group.name, option);
        if (owners.empty()) continue;
        std::vector<std::string> words(args.begin() + 1, args.end());
        words.insert(words.begin() + static_cast<std::ptrdiff_t>(group_at), std::string(owners.front()->name.substr(group.name.size() + 1)));
        return std::string(group.name) + " needs a " + std::string(group.mode_noun) + " before its options: " + option +
               " is an option of " + names_of(owners) + ": " + command_line(words, program);
    }
    return std::nullopt;
}

// Words that name the right thing in the wrong place, each pointed to the
// command line that does what they meant: a mode given as a command
// ("gpumem tune"), as an option ("reuse-sim --tune"), or a mode's option
// before any mode ("reuse-sim --trace x.pickle"). Checked before parsing:
// CLI11 would take the words for something else (an unknown command, a
// mode named 'x.pickle', a program after -- that nothing runs).
std::optional<std::string> misplaced_words_text(const std::vector<std::string>& args, const std::vector<std::string>& program,
                                                const CommandEntry* invoked) {
    if (invoked == nullptr) return mode_as_command_text(args, program);
    if (is_mode(*invoked) || !is_group(*invoked)) return std::nullopt;
    const std::size_t group_at = first_word_at(args);
    if (group_at == 0) return std::nullopt;
    if (std::optional<std::string> text = mode_as_option_text(args, program, *invoked, group_at)) return text;
    return option_before_mode_text(args, program, *invoked, group_at);
}

// A size written with a space before its unit ("--capacity 40 GB"): the
// option took "40", and "GB" was left over as a word of its own.
std::optional<std::string> spaced_unit_text(const CLI::App& sub, const std::vector<std::string>& args, const std::string& word) {
    if (!is_size_suffix(word)) return std::nullopt;
    const auto is_number = [](std::string_view text) {
        return !text.empty() && text.find_first_not_of("0123456789.") == std::string_view::npos;
    };
    const auto takes_size = [&sub](const std::string& name) {
        const CLI::Option* option = sub.get_option_no_throw(name);
        return option != nullptr && option->get_type_name().find("SIZE") != std::string::npos;
    };
    for (std::size_t i = 2; i < args.size(); ++i) {
        if (args[i] != word) continue;
        const std::string& before = args[i - 1];
        const std::size_t eq = before.find('=');
        std::string given;  // "--capacity 40" or "--capacity=40"
        if (eq != std::string::npos && takes_size(before.substr(0, eq)) && is_number(std::string_view(before).substr(eq + 1))) {
            given = before;
        } else if (is_number(before) && takes_size(args[i - 2])) {
            given = args[i - 2];
            given.append(1, ' ').append(before);
        }
        if (given.empty()) continue;
        std::string text = "'" + word;
        text += "' after '";
        text += given;
        text += "': a size takes its unit with no space: write ";
        text += given;
        text += word;
        return text;
    }
    return std::nullopt;
}

// "--confirm is a flag and takes no value", and where the flag took a
// count once (tune's --confirm K), where the count went.
std::string flag_takes_no_value(const CommandEntry* invoked, const std::string& flag, const std::string& value) {
    std::string text = flag + " is a flag and takes no value";
    if (invoked != nullptr && invoked->name == "reuse-sim tune" && flag == "--confirm" && !value.empty() &&
        value.find_first_not_of("0123456789") == std::string::npos)
        text += " (the most real runs: --confirm --max-runs " + value + ")";
    return text;
}

// A value given to a flag ("max-batch --confirm 3"): CLI11 left it over
// as a word of its own (the program's first, for a job that runs one).
std::optional<std::string> flag_value_text(const CLI::App& sub, const CommandEntry* invoked, const std::vector<std::string>& args,
                                           const std::string& word) {
    for (std::size_t i = 2; i < args.size(); ++i) {
        if (args[i] != word || args[i - 1].rfind('-', 0) != 0) continue;
        const CLI::Option* flag = sub.get_option_no_throw(args[i - 1]);
        if (flag == nullptr || flag->get_expected_max() != 0) continue;
        return "'" + word + "' after " + args[i - 1] + ": " + flag_takes_no_value(invoked, args[i - 1], word);
    }
    return std::nullopt;
}

// A count given to a flag with '=' ("--confirm=3"), which CLI11 reads as
// the flag set: refused as the word after it is. 0 and 1, true and false
// stay CLI11's way of setting a flag off or on.
void refuse_flag_counts(const CLI::App& sub, const CommandEntry* invoked, const std::vector<std::string>& args) {
    for (const std::string& a : args) {
        const std::size_t eq = a.find('=');
        if (a.rfind("--", 0) != 0 || eq == std::string::npos) continue;
        const std::string name = a.substr(0, eq), value = a.substr(eq + 1);
        const CLI::Option* flag = sub.get_option_no_throw(name);
        if (flag == nullptr || flag->get_expected_max() != 0 || value.empty() || value == "0" || value == "1" ||
            value.find_first_not_of("0123456789") != std::string::npos)
            continue;
        throw UsageError(a + ": " + flag_takes_no_value(invoked, name, value));
    }
}

// Whether `word` runs as a program: an executable file, by its path or on PATH.
bool names_program(const std::string& word) {
    std::vector<std::string> candidates = process::path_candidates(word);
    if (word.find('/') != std::string::npos) candidates.push_back(word);
    return std::any_of(candidates.begin(), candidates.end(), [](const std::string& path) {
        struct stat st {};
        return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
    });
}

// A job that reads --trace given its input as a bare word ("reuse-sim tune
// x.pickle", "replay x.pickle"): the word is the trace, where --trace was
// not given and the word is no program.
std::optional<std::string> bare_trace_text(const CLI::App& sub, const CommandEntry* invoked, const std::string& word,
                                           const std::vector<std::string>& args, const std::vector<std::string>& program) {
    const CLI::Option* trace = sub.get_option_no_throw("--trace");
    if (invoked == nullptr || trace == nullptr || trace->count() > 0 || word.empty() || word[0] == '-' || names_program(word))
        return std::nullopt;
    std::vector<std::string> words(args.begin() + 1, args.end());
    const auto at = std::find(words.begin(), words.end(), word);
    if (at == words.end()) return std::nullopt;
    words.insert(at, "--trace");
    return "unexpected argument '" + word + "': " + std::string(invoked->name) + " reads its input with --trace FILE: " +
           command_line(words, program);
}

// A word the parse left over, where the words before it say what it was
// meant to be: a size's unit, a flag's value, the input of a job that reads
// --trace.
std::optional<std::string> leftover_word_text(const CLI::App& app, const CommandEntry* invoked, const std::string& word,
                                              const std::vector<std::string>& args, const std::vector<std::string>& program) {
    const CLI::App& sub = *invoked_app(app, invoked);
    if (std::optional<std::string> unit = spaced_unit_text(sub, args, word)) return unit;
    if (std::optional<std::string> value = flag_value_text(sub, invoked, args, word)) return value;
    return bare_trace_text(sub, invoked, word, args, program);
}

// Options users guess for one gpumem names otherwise, too far from it by
// spelling to be offered as a typo ('--file' is 2 edits from '--wide', 4
// from '--trace'): offered where the command takes the option.
struct OptionGuess {
    const char* guess;
    const char* option;
};
constexpr OptionGuess kOptionGuesses[] = {
    {"--file", "--trace"},       {"--input", "--trace"}, {"--snapshot", "--trace"}, {"--pickle", "--trace"},
    {"--recording", "--trace"},  {"--cap", "--capacity"}, {"--limit", "--capacity"}, {"--memory", "--capacity"},
    {"--out", "--output"},
};

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
        const std::vector<std::string> spellings = option_spellings(invoked_app(app, invoked));
        for (const OptionGuess& guess : kOptionGuesses)
            if (name == guess.guess && std::find(spellings.begin(), spellings.end(), guess.option) != spellings.end())
                return "unknown option '" + name + "'; did you mean '" + guess.option + "'?";
        return "unknown option '" + name + "'" + did_you_mean(name, spellings);
    }
    if (invoked != nullptr) {
        if (std::optional<std::string> text = leftover_word_text(app, invoked, word, args, {})) return *text;
        return "unexpected argument '" + word + "'";
    }
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

// The global options the invoked command refuses (its definition's
// refuses_device, refuses_format: the table its --help is made from too),
// refused before its check() reads the rest.
void check_refused_globals(const GlobalOptions& raw, const Globals& globals, const CommandEntry* invoked) {
    if (invoked == nullptr || invoked->definition == nullptr) return;
    const CommandDefinition& d = *invoked->definition;
    if (d.refuses_device != nullptr && raw.device) throw UsageError(d.refuses_device);
    if (d.refuses_format != nullptr && globals.output.format != Format::table) throw UsageError(d.refuses_format);
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
    check_refused_globals(parsed.raw, globals, invoked);
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

void hand_over_program(const SplitArgs& split, Command* command, const CommandEntry* invoked, const CLI::App& app,
                       const std::vector<std::string>& args) {
    std::vector<std::string>* program = command ? command->program() : nullptr;
    if (program && !program->empty()) {  // CLI11 gave the positional words before any `--`
        if (std::optional<std::string> text = leftover_word_text(app, invoked, program->front(), args, split.program)) throw UsageError(*text);
        throw UsageError("put the program after --: gpumem " + std::string(invoked->name) + " ... -- " + program->front() + " ...");
    }
    if (!split.dashes || split.program.empty()) return;
    refuse_words_after_dashes(split, command, invoked);
    *program = split.program;
}

// The top-level page's footer and the parser's settings.
void set_up_top_level(CLI::App& app) {
    // The exit-status table is on this page only (and in the man page).
    app.footer("Exit status: 0 ok, 1 runtime/CUDA error, 2 usage error, 3 no usable GPU or driver, "
               "4 verification failed, 5 out of memory, 6 below --expect-min, 7 a check failed, 130 interrupted; "
               "with check --format nagios: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (usage errors included); "
               "with check --format npd: 0 pass or warn, 1 fail, 2 unknown (no driver and usage errors included); "
               "killed by SIGPIPE (141) when stdout's reader goes away.\n"
               "A unit in brackets (RATE[GB/s], TIME[s]) is what a bare number means; RATE, TIME, SIZE and FRACTION take "
               "the same forms in every option (50GB/s, 10ms, 4GiB, 10% or 0.1). Details of every option: gpumem(1).");
    app.formatter(std::make_shared<HelpFormatter>(terminal_screen().stdout_columns));
    app.fallthrough();
    app.require_subcommand(0, 1);
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
    CLI::App app{"gpumem: GPU memory from the command line: query, allocate, fill, copy and check it. For PyTorch's "
                 "out-of-memory errors, reuse-sim records a run and answers what fits: the allocator setting, the batch size.",
                 "gpumem"};
    set_up_top_level(app);
    Parsed parsed;
    add_own_options(app, parsed);
    const CommandEntry* invoked = invoked_entry(argc, argv);
    // info's cost is NVML's start-up (~10 ms): begin it now, beside parsing.
    if (invoked && invoked->name == "info" && mode == RunMode::full) Nvml::start_opening();
    std::unique_ptr<Command> command = register_commands(app, invoked);
    show_globals_taken(app, invoked);

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
        if (std::optional<std::string> misplaced = misplaced_words_text(args, split.program, invoked)) throw UsageError(*misplaced);
        // Words after -- that no command runs: refused before parsing where
        // a command was named (its complaint would be what they left out),
        // after it where none was (the unknown command or missing mode is
        // the error: "reuse-sim recrod ... -- CMD").
        if (command) refuse_words_after_dashes(split, command.get(), invoked);
        app.parse(argc, argv);
        refuse_flag_counts(*invoked_app(app, invoked), invoked, args);
        hand_over_program(split, command.get(), invoked, app, args);
    } catch (const CLI::CallForHelp&) {
        write_stdout(app.help());
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        write_stdout(app.help("", CLI::AppFormatMode::All));
        return 0;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return 0;
        return fail(UsageError(parse_failure_text(e, app, invoked, args)), empty, error_output, json);
    } catch (const LeftOverWord& e) {
        const std::string text = leftover_word_text(app, invoked, e.word(), args, split.program).value_or(e.what());
        return fail(UsageError(text + help_pointer(invoked, text)), empty, error_output, json);
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

std::vector<const CommandEntry*> command_rows() {
    std::vector<const CommandEntry*> rows;
    for (const CommandEntry& e : kCommands) rows.push_back(&e);
    return rows;
}

std::vector<std::string> offered_formats(const CommandEntry& e) { return formats_offered(e); }

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
        std::fprintf(stderr, "gpumem: error: %s\n", error_text(one_line(e.what()), terminal_screen()).c_str());
        return static_cast<int>(e.status());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpumem: error: internal error: %s\n", e.what());
    } catch (...) {
        std::fputs("gpumem: error: internal error: unknown exception\n", stderr);
    }
    return static_cast<int>(ExitStatus::runtime_error);
}

}  // namespace gpumem::cli
