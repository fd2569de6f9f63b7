// reuse-sim's jobs as sub-commands (issue 45): each job's --help fits in 60
// lines and lists the options that job registers and no other; an option of
// another job is CLI11's unknown option there, a usage error of one line
// that names the jobs taking it; bare reuse-sim does what bare alloc-test
// does.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli_harness.hpp"

namespace {

using gpumem::cli::Command;
using gpumem::cli::CommandDefinition;

struct Job {
    const char* name;
    const CommandDefinition* definition;
};

const std::vector<Job>& jobs() {
    static const std::vector<Job> all = {{"replay", &gpumem::cli::kReuseSimReplayCommand},
                                         {"tune", &gpumem::cli::kReuseSimTuneCommand},
                                         {"record", &gpumem::cli::kReuseSimRecordCommand},
                                         {"max-batch", &gpumem::cli::kReuseSimMaxBatchCommand}};
    return all;
}

// The long options a job registers (--help included).
std::set<std::string> registered(const Job& job) {
    const std::unique_ptr<Command> command = job.definition->make();
    CLI::App sub;
    command->add_options(sub);
    std::set<std::string> names;
    for (const CLI::Option* opt : sub.get_options())
        for (const std::string& l : opt->get_lnames()) names.insert("--" + l);
    return names;
}

// Every long option any job registers.
std::set<std::string> every_option() {
    std::set<std::string> all;
    for (const Job& job : jobs()) {
        const std::set<std::string> own = registered(job);
        all.insert(own.begin(), own.end());
    }
    return all;
}

// The long options a help page lists in its option column ("  --name ..." or
// "  -o,--output ...") before the global options.
std::set<std::string> listed(const std::string& page) {
    std::set<std::string> names;
    const std::string own = page.substr(0, page.find("\nGlobal options:"));
    std::size_t at = 0;
    while ((at = own.find('\n', at)) != std::string::npos) {
        ++at;
        if (own.compare(at, 3, "  -") != 0) continue;
        std::size_t dash = own.find("--", at);
        const std::size_t end = own.find_first_of(" \n", at + 2);
        if (dash == std::string::npos || dash > end) continue;
        names.insert(own.substr(dash, own.find_first_of(" \n", dash) - dash));
    }
    return names;
}

int lines_of(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("reuse-sim jobs: each --help is at most 60 lines and lists exactly the options its job registers") {
    const std::set<std::string> all = every_option();
    for (const Job& job : jobs()) {
        const std::set<std::string> own = registered(job);
        for (const char* columns : {"COLUMNS=80", "COLUMNS=100", "COLUMNS=160"}) {
            const RunResult r = run_gpumem({"reuse-sim", job.name, "--help"}, {columns});
            CAPTURE(job.name);
            CAPTURE(columns);
            REQUIRE(r.status == 0);
            CHECK(lines_of(r.out) <= 60);
            CHECK(listed(r.out) == own);
            // No other job's option anywhere on the page.
            for (const std::string& option : all) {
                if (own.count(option)) continue;
                CAPTURE(option);
                CHECK_FALSE(has(r.out, option + " "));
                CHECK_FALSE(has(r.out, option + "\n"));
            }
        }
    }
    // The jobs differ: replay compares strategies, the others do not.
    CHECK(registered(jobs()[0]).count("--strategy") == 1);
    for (std::size_t i = 1; i < jobs().size(); ++i) CHECK(registered(jobs()[i]).count("--strategy") == 0);
}

TEST_CASE("reuse-sim jobs: an option of another job exits 2 with one line naming the jobs that take it") {
    struct Case {
        std::vector<std::string> args;
        const char* says;
    };
    const std::vector<Case> cases = {
        {{"reuse-sim", "replay", "--max-runs", "3"},
         "unknown option '--max-runs' for reuse-sim replay: it is an option of reuse-sim tune, reuse-sim max-batch"},
        {{"reuse-sim", "replay", "--sweep", "expandable_segments=true,false"},
         "unknown option '--sweep' for reuse-sim replay: it is an option of reuse-sim tune, reuse-sim max-batch"},
        {{"reuse-sim", "tune", "--strategy", "pool"}, "unknown option '--strategy' for reuse-sim tune: it is an option of reuse-sim replay"},
        {{"reuse-sim", "tune", "--execute"}, "unknown option '--execute' for reuse-sim tune: it is an option of reuse-sim replay"},
        {{"reuse-sim", "record", "-o", "r.pickle", "--trace", "t.csv", "--", "true"},
         "unknown option '--trace' for reuse-sim record: it is an option of reuse-sim replay, reuse-sim tune"},
        {{"reuse-sim", "max-batch", "--capacity", "1GiB", "--python-stacks", "--", "true", "{batch}"},
         "unknown option '--python-stacks' for reuse-sim max-batch: it is an option of reuse-sim record"},
        {{"reuse-sim", "max-batch", "--timeline", "t.csv"}, "unknown option '--timeline' for reuse-sim max-batch: it is an option of reuse-sim replay"},
    };
    for (const Case& c : cases) {
        const RunResult r = run_gpumem(c.args, {"CUDA_VISIBLE_DEVICES="});
        CAPTURE(c.says);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, c.says));
        CHECK(has(r.err, "(see gpumem reuse-sim " + c.args[1] + " --help)"));
    }
    // --json: one document, the error in it.
    std::vector<std::string> json_args = {"reuse-sim", "replay", "--json", "--max-runs", "3"};
    const RunResult j = run_gpumem(json_args);
    CHECK(j.status == 2);
    const nlohmann::json doc = nlohmann::json::parse(j.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["command"] == "reuse-sim replay");
    // An option no job takes is still offered the nearest name.
    CHECK(has(run_gpumem({"reuse-sim", "replay", "--stratgy", "pool"}).err, "did you mean '--strategy'?"));
}

TEST_CASE("reuse-sim jobs: bare reuse-sim is alloc-test's shape: a usage error naming the jobs; --help lists them") {
    const RunResult bare = run_gpumem({"reuse-sim"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(bare.status == 2);
    CHECK(bare.out.empty());
    CHECK(bare.stderr_lines() == 1);
    CHECK(has(bare.err, "reuse-sim needs a job: record, replay, tune, max-batch"));
    const RunResult alloc = run_gpumem({"alloc-test"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(alloc.status == bare.status);
    CHECK(has(alloc.err, "alloc-test needs a mode: "));
    const RunResult json_bare = run_gpumem({"reuse-sim", "--json"});
    CHECK(json_bare.status == 2);
    CHECK(nlohmann::json::parse(json_bare.out)["ok"] == false);
    const RunResult typo = run_gpumem({"reuse-sim", "replya"});
    CHECK(typo.status == 2);
    CHECK(has(typo.err, "unknown reuse-sim job 'replya' (expected record, replay, tune, max-batch); did you mean 'replay'?"));
    const RunResult help = run_gpumem({"reuse-sim", "--help"}, {"COLUMNS=80"});
    CHECK(help.status == 0);
    CHECK(lines_of(help.out) <= 60);
    for (const Job& job : jobs()) CHECK(has(help.out, "\n  " + std::string(job.name) + " "));
    // The old flag forms are gone: a flag before any job is no job, and says which job it is now.
    CHECK(run_gpumem({"reuse-sim", "--tune"}).status == 2);
    CHECK(has(run_gpumem({"reuse-sim", "--max-batch"}).err, "gpumem reuse-sim max-batch"));
    // --list commands names each job as a mode of reuse-sim.
    const RunResult list = run_gpumem({"--list", "commands", "--format", "value"});
    for (const Job& job : jobs()) CHECK(has(list.out, "reuse-sim " + std::string(job.name) + "\t"));
}

TEST_CASE("reuse-sim jobs: old forms and natural guesses are pointed to the job that does them (issue 57)") {
    struct Case {
        std::vector<std::string> args;
        std::string says;
    };
    const std::vector<Case> cases = {
        // A job's option before any job: replay was reuse-sim's default once.
        {{"reuse-sim", "--trace", "x.pickle"},
         "reuse-sim needs a job before its options: --trace is an option of reuse-sim replay, reuse-sim tune: "
         "gpumem reuse-sim replay --trace x.pickle"},
        // The jobs' old flags.
        {{"reuse-sim", "--tune", "--trace", "x.pickle"}, "'--tune' is no option: tune is a job of reuse-sim: gpumem reuse-sim tune --trace x.pickle"},
        {{"reuse-sim", "--max-batch", "--capacity", "40GiB", "--", "python3", "t.py", "{batch}"},
         "'--max-batch' is no option: max-batch is a job of reuse-sim: gpumem reuse-sim max-batch --capacity 40GiB -- python3 t.py {batch}"},
        {{"reuse-sim", "--record", "r.pickle", "--", "python3", "x.py"},
         "'--record' is no option: record is a job of reuse-sim: gpumem reuse-sim record -o r.pickle -- python3 x.py"},
        // A job given as a command of its own.
        {{"tune", "--trace", "x.pickle"}, "unknown command 'tune': tune is a job of reuse-sim: gpumem reuse-sim tune --trace x.pickle"},
        {{"max-batch"}, "unknown command 'max-batch': max-batch is a job of reuse-sim: gpumem reuse-sim max-batch"},
        {{"record", "-o", "r.pickle", "--", "python3", "x.py"},
         "unknown command 'record': record is a job of reuse-sim: gpumem reuse-sim record -o r.pickle -- python3 x.py"},
        {{"replay", "--trace", "x.pickle"}, "unknown command 'replay': replay is a job of reuse-sim: gpumem reuse-sim replay --trace x.pickle"},
        {{"-q", "latency"}, "unknown command 'latency': latency is a mode of alloc-test: gpumem -q alloc-test latency"},
        // The recording as a bare word: it goes after --trace.
        {{"reuse-sim", "tune", "x.pickle"}, "unexpected argument 'x.pickle': reuse-sim tune reads its input with --trace FILE: "
                                             "gpumem reuse-sim tune --trace x.pickle"},
        {{"reuse-sim", "replay", "x.pickle", "--capacity", "1GiB"},
         "unexpected argument 'x.pickle': reuse-sim replay reads its input with --trace FILE: gpumem reuse-sim replay --trace x.pickle --capacity 1GiB"},
        // A mistyped job before --: the job, not the --, is what is wrong.
        {{"reuse-sim", "recrod", "-o", "r.pickle", "--", "python3", "x.py"},
         "unknown reuse-sim job 'recrod' (expected record, replay, tune, max-batch); did you mean 'record'?"},
        {{"reuse-sim", "recrod", "--", "python3", "x.py"}, "did you mean 'record'?"},
        {{"recrod", "--", "python3", "x.py"}, "unknown command 'recrod'"},
        // A name users guess for --trace; never --wide, 2 edits from 'file' but nothing like it.
        {{"reuse-sim", "tune", "--file", "x.pickle"}, "unknown option '--file'; did you mean '--trace'?"},
        {{"reuse-sim", "replay", "--snapshot", "x.pickle"}, "unknown option '--snapshot'; did you mean '--trace'?"},
    };
    for (const Case& c : cases) {
        const RunResult r = run_gpumem(c.args, {"CUDA_VISIBLE_DEVICES=", "COLUMNS=300"});
        CAPTURE(c.says);
        CAPTURE(r.err);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, c.says));
        CHECK_FALSE(has(r.err, "runs no program"));
        CHECK_FALSE(has(r.err, "--wide"));
    }
    // Where the word is a program, or --trace was given, it is the program given without --.
    CHECK(has(run_gpumem({"reuse-sim", "tune", "--trace", "x.pickle", "python3"}).err, "put the program after --"));
    CHECK(has(run_gpumem({"reuse-sim", "tune", "python3", "t.py"}).err, "put the program after --"));
    // Words after -- for no command at all are still refused as such.
    CHECK(has(run_gpumem({"--", "python3"}).err, "gpumem runs no program"));
    // --file near no option of info: no suggestion rather than a wrong one.
    const RunResult info = run_gpumem({"info", "--file", "x"});
    CHECK(info.status == 2);
    CHECK_FALSE(has(info.err, "did you mean"));
}

TEST_CASE("reuse-sim jobs: --confirm is a flag in tune and in max-batch; tune's count of real runs is --max-runs, as max-batch's") {
    const std::set<std::string> tune = registered(jobs()[1]), max_batch = registered(jobs()[3]);
    CHECK(tune.count("--confirm") == 1);
    CHECK(tune.count("--max-runs") == 1);
    CHECK(max_batch.count("--max-runs") == 1);
    for (const Job& job : {jobs()[1], jobs()[3]}) {
        const std::unique_ptr<Command> command = job.definition->make();
        CLI::App sub;
        command->add_options(sub);
        CAPTURE(job.name);
        REQUIRE(sub.get_option_no_throw("--confirm") != nullptr);
        CHECK(sub.get_option("--confirm")->get_expected_max() == 0);  // a flag
    }
    // The old count, and a count given to max-batch's flag, are told the form.
    struct Case {
        std::vector<std::string> args;
        std::string says;
    };
    const std::vector<Case> cases = {
        {{"reuse-sim", "tune", "--trace", "x.pickle", "--confirm", "3", "--", "python3", "t.py"},
         "'3' after --confirm: --confirm is a flag and takes no value (the most real runs: --confirm --max-runs 3)"},
        {{"reuse-sim", "max-batch", "--capacity", "1GiB", "--confirm", "3", "--", "python3", "t.py", "{batch}"},
         "'3' after --confirm: --confirm is a flag and takes no value (see gpumem reuse-sim max-batch --help)"},
        {{"reuse-sim", "tune", "--trace", "x.pickle", "--confirm=3", "--", "python3", "t.py"},
         "--confirm=3: --confirm is a flag and takes no value (the most real runs: --confirm --max-runs 3)"},
        {{"reuse-sim", "tune", "--workload", "inference", "--max-runs", "3"}, "--max-runs bounds --confirm's real runs: give --confirm"},
    };
    for (const Case& c : cases) {
        const RunResult r = run_gpumem(c.args, {"CUDA_VISIBLE_DEVICES=", "COLUMNS=300"});
        CAPTURE(c.says);
        CAPTURE(r.err);
        CHECK(r.status == 2);
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, c.says));
        CHECK_FALSE(has(r.err, "put the program after --"));
    }
}

TEST_CASE("reuse-sim jobs: the PyTorch way in: gpumem --help says it, the jobs come in the order a user takes them, tune's --trace first (issue 57)") {
    const RunResult top = run_gpumem({"--help"}, {"COLUMNS=100"});
    REQUIRE(top.status == 0);
    const std::string description = top.out.substr(0, top.out.find("Usage:"));
    for (const char* words : {"PyTorch", "out-of-memory", "batch size"}) CHECK(has(unwrapped(description), words));
    // The jobs in the order a user takes them: on reuse-sim's page, its summary, the bare usage error.
    const std::vector<std::string> order = {"record", "replay", "tune", "max-batch"};
    const RunResult page = run_gpumem({"reuse-sim", "--help"}, {"COLUMNS=100"});
    std::size_t at = page.out.find("Subcommands:");
    REQUIRE(at != std::string::npos);
    for (const std::string& job : order) {
        const std::size_t next = page.out.find("\n  " + job + " ", at);
        CAPTURE(job);
        CHECK(next != std::string::npos);
        at = next;
    }
    CHECK(has(unwrapped(top.out), "record, replay, tune, max-batch"));
    CHECK(has(run_gpumem({"reuse-sim"}).err, "needs a job: record, replay, tune, max-batch"));
    // tune's page: the recording (--trace) before the built-in workload's options.
    const RunResult tune = run_gpumem({"reuse-sim", "tune", "--help"}, {"COLUMNS=100"});
    REQUIRE(has(tune.out, "\n  --trace "));
    CHECK(tune.out.find("\n  --trace ") < tune.out.find("\n  --workload "));
    CHECK(tune.out.find("\n  --trace ") < tune.out.find("\n  --steps "));
}
