// The examples of README.md and docs/*.md that need no GPU, run as written:
// a fenced block marked with the line `<!-- example: no GPU -->` before its
// "```console" holds commands ("$ gpumem ...") each followed by the stdout it
// shows. Each command runs in the repository root under /bin/sh with the
// built gpumem first on PATH, and its stdout must be what the page shows, so
// that a change of output or a renamed option fails here until the page is
// updated.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "tests_dir.hpp"

namespace {

constexpr const char* kMarker = "<!-- example: no GPU -->";

std::string repository_root() {
    return tests_dir() + "/..";
}

struct Example {
    std::string page, command, expected;
};

// The marked blocks of one page, as command and expected stdout.
std::vector<Example> examples_of(const std::string& page, const std::string& text) {
    std::vector<Example> examples;
    for (std::size_t at = text.find(kMarker); at != std::string::npos; at = text.find(kMarker, at + 1)) {
        const std::size_t open = text.find("```console\n", at);
        const std::size_t body = open == std::string::npos ? open : open + 11;
        const std::size_t close = body == std::string::npos ? body : text.find("\n```", body - 1);
        INFO(page, ": a marked example has no ```console block after it");
        REQUIRE(close != std::string::npos);
        std::size_t line_start = body;
        while (line_start < close + 1) {
            std::size_t end = text.find('\n', line_start);
            if (end == std::string::npos || end > close) end = close;
            const std::string line = text.substr(line_start, end - line_start);
            if (line.rfind("$ ", 0) == 0) {
                examples.push_back({page, line.substr(2), ""});
            } else if (!examples.empty() && line_start < close) {
                examples.back().expected += line + "\n";
            }
            line_start = end + 1;
        }
    }
    return examples;
}

std::string directory_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

}  // namespace

TEST_CASE("readme: every marked example needs no GPU and prints what the page shows") {
    const std::string root = repository_root();
    std::vector<Example> all;
    for (const char* page : {"README.md", "docs/check.md", "docs/reuse-sim.md", "docs/developing.md", "docs/testing.md"})
        for (Example& e : examples_of(page, slurp(root + "/" + page))) all.push_back(std::move(e));
    // The README shows at least its own few.
    int in_readme = 0;
    for (const Example& e : all) in_readme += e.page == "README.md";
    CHECK(in_readme >= 3);
    const std::string path = "PATH=" + directory_of(gpumem_binary()) + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    for (const Example& e : all) {
        const RunResult r = run_program("/bin/sh", {"-c", "cd '" + root + "' && " + e.command}, {path, "COLUMNS=100", "NO_COLOR=1"});
        INFO(e.page, ": $ ", e.command, "\nstderr: ", r.err);
        CHECK(r.out == e.expected);
    }
}

// The README is the overview a newcomer reads first (issue 30 §5, issue 34
// §10: at most 300 lines, no slack); figures, the developer guide and testing
// notes live in docs/. A section that grows past this belongs there.
TEST_CASE("readme: stays an overview of at most 300 lines") {
    const std::string text = slurp(repository_root() + "/README.md");
    int lines = 0;
    for (char c : text) lines += c == '\n';
    INFO("README.md has ", lines, " lines; move the detail into docs/");
    CHECK(lines <= 300);
}

namespace {

// The names `gpumem --list NAME` prints, one a line (its first column).
std::vector<std::string> listed(const std::string& list) {
    const RunResult r = run_gpumem({"--list", list, "--format", "value"});
    REQUIRE(r.status == 0);
    std::vector<std::string> names;
    for (std::size_t at = 0; at < r.out.size();) {
        const std::size_t end = r.out.find('\n', at);
        const std::string line = r.out.substr(at, end - at);
        names.push_back(line.substr(0, line.find('\t')));
        at = end == std::string::npos ? r.out.size() : end + 1;
    }
    return names;
}

}  // namespace

TEST_CASE("readme: names every unit and copy direction, one form of heading, a package path apt takes as written") {
    const std::string text = slurp(repository_root() + "/README.md");
    const std::size_t units = text.find("`--units ");
    REQUIRE(units != std::string::npos);
    const std::string units_line = text.substr(units, text.find('`', units + 1) - units) + "|";
    for (const std::string& unit : listed("units")) {
        CAPTURE(unit);
        CHECK(units_line.find(unit == "auto" ? " auto|" : "|" + unit + "|") != std::string::npos);
    }
    const std::size_t directions = text.find("Directions: ");
    REQUIRE(directions != std::string::npos);
    const std::string directions_text = text.substr(directions, text.find("\n\n", directions) - directions);
    for (const std::string& direction : listed("directions")) {
        CAPTURE(direction);
        CHECK(directions_text.find("`" + direction + "`") != std::string::npos);
    }
    // Every command's heading under Subcommands reads "### gpumem NAME".
    const std::size_t subcommands = text.find("\n## Subcommands\n");
    REQUIRE(subcommands != std::string::npos);
    const std::size_t next = text.find("\n## ", subcommands + 1);
    for (std::size_t at = text.find("\n### ", subcommands); at != std::string::npos && at < next; at = text.find("\n### ", at + 1)) {
        const std::string heading = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
        CAPTURE(heading);
        CHECK(heading.rfind("### gpumem ", 0) == 0);
    }
    CHECK(text.find("./../") == std::string::npos);
}

TEST_CASE("readme: its first paragraphs say what reuse-sim answers for PyTorch; the README, man page and docs list the jobs in the order a user takes them (issue 57)") {
    const std::string readme = slurp(repository_root() + "/README.md");
    const std::string opening = readme.substr(0, readme.find("## "));
    for (const char* words : {"PyTorch", "out-of-memory", "batch size", "reuse-sim"}) {
        CAPTURE(words);
        CHECK(opening.find(words) != std::string::npos);
    }
    // Each text: where each job is first named, in order.
    const std::string man = slurp(repository_root() + "/man/gpumem.1.scd");
    const std::string reuse_sim = man.substr(man.find("# REUSE-SIM"));
    const std::string docs = slurp(repository_root() + "/docs/reuse-sim.md");
    const std::vector<std::pair<std::string, std::string>> texts = {
        {"README", readme.substr(readme.find("### gpumem reuse-sim"))}, {"man page", reuse_sim}, {"docs/reuse-sim.md", docs}};
    // Not a structured binding: clang (C++17) refuses one inside CAPTURE's lambda.
    for (const auto& named : texts) {
        const std::string& name = named.first;
        const std::string& text = named.second;
        CAPTURE(name);
        std::size_t at = 0;
        for (const char* job : {"reuse-sim record", "reuse-sim replay", "reuse-sim tune", "reuse-sim max-batch"}) {
            const std::size_t found = std::min(text.find(job), text.find(std::string("*gpumem ") + job));
            CAPTURE(job);
            CHECK(found != std::string::npos);
            CHECK(found >= at);
            at = found;
        }
    }
}
