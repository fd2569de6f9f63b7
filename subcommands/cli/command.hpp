// The contract every gpumem command follows, in four parts:
//   add_options  registers its options on its CLI11 subcommand;
//   check        pure: validates every option (-d syntax included) before any
//                driver or NVML call, and returns the checked request;
//   execute      runs it (driver calls allowed) and fills typed results as it
//                goes, so that a failure part way still reports what was done;
//   report       pure: results to the output layer's Report.
// app.cpp lists every command once (kCommands) and runs them all the same
// way: parse, check_globals, check, execute, report, render, write.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/lists.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/writer.hpp"

namespace gpumem::cli {

// What execute() may use besides its request: the checked global options
// and stdout, for the commands that stream (loops, a "ready" line).
class Session {
public:
    explicit Session(const Globals& globals) : globals_(globals), output_(globals.output) {}
    const Globals& globals() const noexcept { return globals_; }
    // The output options of what the command writes, and of the final (or
    // error) document that follows.
    const OutputOptions& output() const noexcept { return output_; }
    // stdout carries JSON Lines (a document per --loop sample, a "ready"
    // event): a document that follows, an error's included, is one line too.
    void json_lines() noexcept { output_.compact_json = true; }
    // Progress may be drawn on stderr (a terminal, and no -q).
    bool progress() const { return progress_enabled(globals_); }
    // Streams text to stdout now (write errors throw as write_stdout does).
    void write(std::string_view text) {
        write_stdout(text);
        wrote_ = true;
    }
    // Whether the command wrote to stdout itself.
    bool wrote() const noexcept { return wrote_; }
    // The command's stream was its whole output: no final document follows.
    void final_document_written() noexcept { final_written_ = true; }
    bool final_written() const noexcept { return final_written_; }
    // A command that runs another program and passes its exit status on
    // (reuse-sim record, as `time` does) sets it here; else 0.
    void set_exit_status(int status) noexcept { exit_status_ = status; }
    int exit_status() const noexcept { return exit_status_; }

private:
    const Globals& globals_;
    OutputOptions output_;
    bool wrote_ = false;
    bool final_written_ = false;
    int exit_status_ = 0;
};

class Command {
public:
    virtual ~Command() = default;
    virtual void add_options(CLI::App& sub) = 0;
    virtual void check(const Globals& globals) = 0;
    virtual void execute(Session& session) = 0;
    virtual Report report(const OutputOptions& output) const = 0;
    // Where the program given after `--` goes (reuse-sim record's), or
    // null for a command that runs none. app.cpp hands it everything after
    // the first `--` itself: CLI11 reads a `--` after a repeatable option as
    // the end of that option's values and parses the program's arguments as
    // gpumem's own.
    virtual std::vector<std::string>* program() { return nullptr; }
};

// Options with a `program` member take a program after `--`.
template <typename Options, typename = void>
struct TakesProgram : std::false_type {};
template <typename Options>
struct TakesProgram<Options, std::void_t<decltype(std::declval<Options&>().program)>> : std::true_type {};

// A command written as four free functions over its own three types:
// Options (what CLI11 fills), Request (what check makes of them) and
// Results (what execute measures).
template <typename Options, typename Request, typename Results>
struct CommandFunctions {
    void (*add_options)(CLI::App& sub, Options& options);
    Request (*check)(const Options& options, const Globals& globals);
    void (*execute)(const Request& request, Results& results, Session& session);
    Report (*report)(const Request& request, const Results& results, const OutputOptions& output);
};

template <typename Options, typename Request, typename Results>
class FunctionCommand final : public Command {
public:
    explicit FunctionCommand(const CommandFunctions<Options, Request, Results>& f) : f_(f) {}
    void add_options(CLI::App& sub) override { f_.add_options(sub, options_); }
    void check(const Globals& globals) override { request_ = std::make_unique<Request>(f_.check(options_, globals)); }
    void execute(Session& session) override { f_.execute(*request_, results_, session); }
    Report report(const OutputOptions& output) const override {
        // A usage error found by check leaves no request: nothing to report.
        return request_ ? f_.report(*request_, results_, output) : Report{};
    }
    std::vector<std::string>* program() override {
        if constexpr (TakesProgram<Options>::value) return &options_.program;
        return nullptr;
    }

private:
    CommandFunctions<Options, Request, Results> f_;
    Options options_;
    std::unique_ptr<Request> request_;
    Results results_;
};

template <typename Options, typename Request, typename Results>
std::unique_ptr<Command> make_command(const CommandFunctions<Options, Request, Results>& functions) {
    return std::make_unique<FunctionCommand<Options, Request, Results>>(functions);
}

// One row of the command table (app.cpp). A mode of a command (alloc-test
// latency) is a row whose name has two words; the first word's own row has
// no `make` and stands for the group.
// What the command table needs of a command, defined once in its file.
struct CommandDefinition {
    std::unique_ptr<Command> (*make)();
    DocumentSchema (*schema)();  // the JSON document's keys, for --schema
    // The lists of names its options take (gpumem --list NAME), in the order
    // --list shows them; a list two commands take is the first one's.
    ListRows lists{};
    // The formats it offers beyond those every command takes (FormatSpec::
    // every_command), whose part of the Report its report() fills:
    // Report::metrics for prometheus, Report::plugin for a plugin's format.
    Formats formats{};
    // The global options it refuses, each as the one-line error that says
    // why (null: it takes them). app.cpp refuses them before check(), and
    // its --help leaves them out (one table for both).
    const char* refuses_device = nullptr;  // -d/--device
    const char* refuses_format = nullptr;  // --format, --json, --csv: any but the table
};

struct CommandEntry {
    std::string_view name;     // "copy", "alloc-test", "alloc-test latency"
    std::string_view summary;  // one line for --help
    const CommandDefinition* definition = nullptr;  // null: a group of modes
    std::string_view mode_noun = "mode";            // a group's word for its modes: reuse-sim's are jobs
};

}  // namespace gpumem::cli
