// `--` ends gpumem's options everywhere, whatever option precedes it: CLI11
// alone reads a `--` after a repeatable option as the end of that option's
// values and parses the words after it as gpumem's own (`--sweep K=V --
// python3 -c pass` failed with "unknown option '-c'", and `-- --json` made
// the program's argument gpumem's --json). Every multi-value option of every
// command is tried with `-- --json` after it.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli_harness.hpp"

namespace {

using namespace gpumem::cli;

struct Named {
    std::vector<std::string> words;  // the command as typed: {"alloc-test", "fill"}
    const CommandDefinition* definition;
};

const std::vector<Named>& every_command() {
    static const std::vector<Named> commands = {
        {{"info"}, &kInfoCommand},
        {{"memset"}, &kMemsetCommand},
        {{"copy"}, &kCopyCommand},
        {{"alloc-test", "latency"}, &kAllocLatencyCommand},
        {{"alloc-test", "max"}, &kAllocMaxCommand},
        {{"alloc-test", "fill"}, &kAllocFillCommand},
        {{"alloc-test", "churn"}, &kAllocChurnCommand},
        {{"alloc-test", "hold"}, &kAllocHoldCommand},
        {{"check"}, &kCheckCommand},
        {{"reuse-sim", "replay"}, &kReuseSimReplayCommand},
        {{"reuse-sim", "tune"}, &kReuseSimTuneCommand},
        {{"reuse-sim", "record"}, &kReuseSimRecordCommand},
        {{"reuse-sim", "max-batch"}, &kReuseSimMaxBatchCommand},
        {{"report"}, &kReportCommand},
    };
    return commands;
}

// A value each multi-value option takes as valid, where "1" would not be.
std::string value_for(const std::string& option) {
    static const std::map<std::string, std::string> values = {
        {"--sweep", "expandable_segments=True,False"}, {"--threshold", "copy.h2d=45"}, {"--query", "free"},
        {"--api", "device"}, {"--pattern", "zeros"},
    };
    const auto it = values.find(option);
    return it == values.end() ? "1" : it->second;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("--: every multi-value option of every command, followed by -- --json, leaves --json to the program") {
    std::vector<std::string> tried;
    for (const Named& c : every_command()) {
        std::unique_ptr<Command> command = c.definition->make();
        CLI::App sub;
        command->add_options(sub);
        const bool takes_program = command->program() != nullptr;
        for (const CLI::Option* opt : sub.get_options()) {
            if (opt->get_positional() || opt->get_name().rfind("--", 0) != 0) continue;
            if (opt->get_items_expected_max() <= 1 && opt->get_expected_max() <= 1) continue;
            std::vector<std::string> args = c.words;
            args.push_back(opt->get_name());
            args.push_back(value_for(opt->get_name()));
            args.emplace_back("--");
            args.emplace_back("--json");
            std::string typed;
            for (const std::string& a : args) typed += " " + a;
            CAPTURE(typed);
            const RunResult r = run_gpumem(args, {"CUDA_VISIBLE_DEVICES="});
            CAPTURE(r.err);
            tried.push_back(opt->get_name());
            // --json after -- is never gpumem's: no JSON document on stdout.
            CHECK(r.out.empty());
            CHECK(r.status == 2);
            CHECK(r.stderr_lines() == 1);
            CHECK_FALSE(has(r.err, "unknown option"));
            if (!takes_program) CHECK(has(r.err, "unexpected argument '--json' after --"));
        }
    }
    // Repeatable options of several commands: alloc-test's --api and --pattern, check's --threshold, reuse-sim's --sweep.
    for (const char* expected : {"--api", "--pattern", "--threshold", "--sweep"})
        CHECK(std::find(tried.begin(), tried.end(), expected) != tried.end());
}

TEST_CASE("--: the documented forms run the program's words as its own") {
    // --sweep, then the program with options of its own: reuse-sim reaches
    // its own checks (--sweep needs --trace), never "unknown option '-c'".
    const RunResult sweep =
        run_gpumem({"reuse-sim", "tune", "--sweep", "expandable_segments=True,False", "--", "python3", "-c", "pass"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(sweep.status == 2);
    CHECK_FALSE(has(sweep.err, "unknown option"));
    CHECK(sweep.out.empty());
    // check's repeatable --threshold, then -- --json: a usage error, not a JSON document.
    const RunResult threshold = run_gpumem({"check", "--threshold", "copy.h2d=45", "--", "--json"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(threshold.status == 2);
    CHECK(threshold.out.empty());
    CHECK(has(threshold.err, "after --: gpumem check runs no program"));
    // -q after -- is the program's: gpumem's own error line still shows.
    const RunResult quiet = run_gpumem({"info", "--", "-q"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(quiet.status == 2);
    CHECK(quiet.stderr_lines() == 1);
    // A lone trailing -- is harmless: info goes on to look for a driver (3 here, 0 with one).
    const RunResult trailing = run_gpumem({"info", "--format", "value", "--query", "free", "--"}, {});
    CHECK(trailing.status != 2);
}

TEST_CASE("--: a program given without -- is told where it goes") {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"reuse-sim", "record", "-o", "/tmp/gpumem-dashes.pickle", "python3", "-c", "pass"},
             {"reuse-sim", "record", "-o", "/tmp/gpumem-dashes.pickle", "python3", "prog.py"},
         }) {
        CAPTURE(args);
        const RunResult r = run_gpumem(args, {"CUDA_VISIBLE_DEVICES="});
        CHECK(r.status == 2);
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, "put the program after --"));
        CHECK_FALSE(has(r.err, "did you mean '-h'"));
    }
}
