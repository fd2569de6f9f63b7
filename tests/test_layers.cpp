// The shape of the sources, held as tests: no header/source pair reaches back
// into a neighbour that includes it, and the terminal's width is measured in
// one place, every other reader taking it from the output options.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests_dir.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

fs::path root() { return fs::path(tests_dir()) / ".."; }

// Every C++ source and header under `folder` of the repository, by its path
// from the repository's root.
std::map<std::string, std::string> sources_under(const std::string& folder) {
    std::map<std::string, std::string> out;
    for (const auto& entry : fs::recursive_directory_iterator(root() / folder)) {
        const std::string ext = entry.path().extension().string();
        if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp" || ext == ".cu" || ext == ".cuh"))
            out[fs::relative(entry.path(), root()).string()] = read_text(entry.path());
    }
    return out;
}

// A header/source pair's name: its path without the extension
// ("subcommands/cli/output" for output.hpp and output.cpp).
std::string pair_of(const std::string& path) { return path.substr(0, path.rfind('.')); }

// The pair an #include "X" names: src/X, else subcommands/X (where "cli/..."
// and the commands' folders live); empty for a generated or outside header.
std::string included_pair(const std::string& include) {
    for (const char* base : {"src/", "subcommands/"})
        if (fs::exists(root() / (base + include))) return pair_of(base + include);
    return "";
}

// `text` without its // comments (a comment may name what the code must not do).
std::string without_comments(const std::string& text) {
    std::string out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out += line.substr(0, line.find("//")) + "\n";
    return out;
}

// Pair -> the pairs its files include.
std::map<std::string, std::set<std::string>> include_graph(const std::map<std::string, std::string>& files) {
    static const std::regex kInclude(R"re(^\s*#\s*include\s+"([^"]+)")re", std::regex::multiline);
    std::map<std::string, std::set<std::string>> graph;
    for (const auto& [path, text] : files) {
        const std::string from = pair_of(path);
        for (std::sregex_iterator it(text.begin(), text.end(), kInclude), end; it != end; ++it) {
            const std::string to = included_pair((*it)[1].str());
            if (!to.empty() && to != from) graph[from].insert(to);
        }
    }
    return graph;
}

}  // namespace

TEST_CASE("layers: no header/source pair of src/ or subcommands/cli reaches back into one that includes it") {
    std::map<std::string, std::string> files = sources_under("src");
    for (auto& [path, text] : sources_under("subcommands/cli")) files[path] = std::move(text);
    REQUIRE(files.size() > 60);
    const auto graph = include_graph(files);
    std::vector<std::string> back;
    for (const auto& [from, tos] : graph)
        for (const std::string& to : tos) {
            const auto reverse = graph.find(to);
            if (from < to && reverse != graph.end() && reverse->second.count(from) != 0) back.push_back(from + " <-> " + to);
        }
    std::string listed;
    for (const std::string& pair : back) listed += pair + "\n";
    CAPTURE(listed);
    CHECK(back.empty());
}

TEST_CASE("layers: the terminal's width is measured in terminal.cpp alone, and read from the output options") {
    std::map<std::string, std::string> files = sources_under("src");
    for (auto& [path, text] : sources_under("subcommands")) files[path] = std::move(text);
    std::vector<std::string> measuring, asking;
    for (const auto& [path, commented] : files) {
        if (path == "subcommands/cli/terminal.cpp" || path == "subcommands/cli/terminal.hpp") continue;
        const std::string text = without_comments(commented);
        for (const char* word : {"TIOCGWINSZ", "\"COLUMNS\"", "isatty(STDOUT_FILENO", "isatty(STDERR_FILENO"})
            if (text.find(word) != std::string::npos) measuring.push_back(path + ": " + word);
        // The one measurement's users: the options (OutputOptions::screen),
        // and app.cpp for what comes before them (help pages, the last error).
        if (text.find("terminal_screen()") != std::string::npos && path != "subcommands/cli/options.cpp" &&
            path != "subcommands/cli/app.cpp")
            asking.push_back(path);
    }
    std::string listed;
    for (const std::string& line : measuring) listed += line + "\n";
    for (const std::string& line : asking) listed += line + ": terminal_screen()\n";
    CAPTURE(listed);
    CHECK(measuring.empty());
    CHECK(asking.empty());
}

namespace {

struct Recipe {
    std::string title;
    std::size_t count = 0;            // "N files" in its title
    std::vector<std::string> files;   // its Files: line
};

// docs/developing.md's recipes ("**A check** (5 files)") with a Files: line.
std::vector<Recipe> recipes_with_files(const std::string& doc) {
    static const std::regex kCount(R"re(([0-9]+) files)re");
    static const std::regex kPath("`([^`]+)`");
    std::vector<Recipe> out;
    std::size_t at = doc.find("\n**A ");
    while (at != std::string::npos) {
        const std::size_t next = std::min(doc.find("\n**A ", at + 1), doc.find("\n### ", at + 1));
        const std::string body = doc.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
        Recipe recipe;
        recipe.title = body.substr(0, body.find('\n'));
        std::smatch count;
        const std::string heading = body.substr(0, body.find(':'));
        if (std::regex_search(heading, count, kCount)) recipe.count = std::stoul(count[1].str());
        const std::size_t files = body.find("\nFiles: ");
        if (files != std::string::npos) {
            const std::string line = body.substr(files, body.find(".\n", files) - files);
            for (std::sregex_iterator it(line.begin(), line.end(), kPath), end; it != end; ++it) recipe.files.push_back((*it)[1].str());
            out.push_back(recipe);
        }
        at = next;
    }
    return out;
}

}  // namespace

TEST_CASE("docs/developing.md: a reuse-sim job, a check and a picture each name the files they touch, as many as their titles say") {
    const std::vector<Recipe> recipes = recipes_with_files(read_text(root() / "docs/developing.md"));
    std::set<std::string> titles;
    for (const Recipe& r : recipes) {
        CAPTURE(r.title);
        titles.insert(r.title.substr(0, r.title.find("**", 2) + 2));
        CHECK(r.count > 0);
        CHECK(r.files.size() == r.count);
        CHECK(std::set<std::string>(r.files.begin(), r.files.end()).size() == r.files.size());
        for (const std::string& file : r.files) {
            CAPTURE(file);
            // NAME and JOB stand for the new command's or job's name: their folder exists.
            const std::size_t placeholder = std::min(file.find("NAME"), file.find("JOB"));
            const std::string existing = placeholder == std::string::npos ? file : file.substr(0, file.rfind('/', placeholder));
            CHECK(fs::exists(root() / existing));
        }
    }
    for (const char* title : {"**A reuse-sim job**", "**A check**", "**A device check**", "**A picture**"}) {
        CAPTURE(title);
        CHECK(titles.count(title) == 1);
    }
}
