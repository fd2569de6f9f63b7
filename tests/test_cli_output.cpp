// stdout as a Unix tool treats it (issue #13, item 6): a failed or short
// write is an error, exit 1 with one line; a reader that went away ends the
// run quietly, by SIGPIPE as coreutils do (128 + 13 to a shell).
#include <doctest/doctest.h>

#include <csignal>
#include <string>
#include <vector>

#include "cli_harness.hpp"

namespace {

using Args = std::vector<std::string>;

// Commands that print on any machine (no GPU needed), and a GPU command's
// --help: each writes to stdout.
const std::vector<Args>& printing_commands() {
    static const std::vector<Args> commands = {
        {"--help"},         {"info", "--help"},         {"alloc-test", "fill", "--help"},
        {"--list"},         {"--list", "units", "--json"}, {"--schema"},
        {"reuse-sim", "replay"},      {"reuse-sim", "replay", "--json"},     {"reuse-sim", "replay", "--csv", "--strategy", "naive"},
        {"reuse-sim", "replay", "--format", "value"},
    };
    return commands;
}

std::string joined(const Args& args) {
    std::string s = "gpumem";
    for (const auto& a : args) s += " " + a;
    return s;
}

}  // namespace

TEST_CASE("output: a full disk is an error: exit 1 and one line naming it") {
    for (const Args& args : printing_commands()) {
        CAPTURE(joined(args));
        const RunResult r = run_gpumem_to(StdoutTo::to("/dev/full"), args);
        CAPTURE(r.err);
        CHECK(r.status == 1);
        CHECK(r.err == "gpumem: error: writing output: No space left on device\n");
    }
}

TEST_CASE("output: a closed pipe ends the run quietly, by SIGPIPE") {
    for (const Args& args : printing_commands()) {
        CAPTURE(joined(args));
        const RunResult r = run_gpumem_to(StdoutTo::closed_pipe(), args);
        CAPTURE(r.err);
        CHECK(r.status == 128 + SIGPIPE);
        CHECK(r.err.empty());
    }
}

TEST_CASE("output: a usage error's JSON document to a full disk: the usage error still decides the status") {
    // The error line is printed first; the document then cannot be written.
    const RunResult r = run_gpumem_to(StdoutTo::to("/dev/full"), {"reuse-sim", "replay", "--strategy", "nope", "--json"});
    CHECK(r.status == 2);
    CHECK(r.err.rfind("gpumem: error: --strategy: unknown strategy", 0) == 0);
}
