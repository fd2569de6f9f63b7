// The man page against the binary: every key of every command's --json
// document (gpumem --schema, derived from the same column tables that build
// the documents) is documented, as *key*, in that command's section of
// man/gpumem.1.scd; the envelope keys (the origin's too) in OUTPUT FORMATS. Fails when a key is
// added or renamed without its documentation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "tests_dir.hpp"

using nlohmann::json;

namespace {

std::string man_page_source() { return tests_dir() + "/../man/gpumem.1.scd"; }

std::string man_page() { return slurp(man_page_source()); }

// The text of `# TITLE` up to the next top-level heading.
std::string section(const std::string& page, const std::string& title) {
    const std::size_t at = page.find("\n# " + title + "\n");
    if (at == std::string::npos) return "";
    const std::size_t end = page.find("\n# ", at + 3 + title.size());
    return page.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

// Every property name of an object schema and of the objects inside it.
void collect_keys(const json& schema, std::set<std::string>& keys) {
    if (schema.contains("properties"))
        for (const auto& [key, value] : schema["properties"].items()) {
            keys.insert(key);
            collect_keys(value, keys);
        }
    if (schema.contains("items")) collect_keys(schema["items"], keys);
}

}  // namespace

TEST_CASE("docs: every JSON key of every command is in its man page section") {
    const RunResult r = run_gpumem({"--schema"});
    REQUIRE(r.status == 0);
    const json schemas = json::parse(r.out);
    REQUIRE(schemas.is_object());
    CHECK(!schemas.empty());
    const std::string page = man_page();
    const std::set<std::string> envelope = {"schema_version", "tool", "version", "command", "ok", "warnings", "error", "status",
                                            "code", "message"};
    const std::string formats = section(page, "OUTPUT FORMATS");
    REQUIRE(!formats.empty());
    for (const std::string& key : envelope) {
        CAPTURE(key);
        CHECK(formats.find("*" + key + "*") != std::string::npos);
    }
    // The origin stamp is the same object in every document: documented once,
    // in OUTPUT FORMATS, not in each command's section.
    REQUIRE(schemas.begin() != schemas.end());
    std::set<std::string> origin_keys;
    collect_keys(schemas.begin()->at("properties").at("origin"), origin_keys);
    CHECK(origin_keys.count("host"));
    for (const std::string& key : origin_keys) {
        CAPTURE(key);
        CHECK(formats.find("*" + key + "*") != std::string::npos);
    }
    CHECK(formats.find("*origin*") != std::string::npos);
    for (const auto& item : schemas.items()) {
        const std::string command = item.key();  // clang 14 cannot capture a structured binding (CAPTURE is a lambda)
        json schema = item.value();
        schema["properties"].erase("origin");
        // "alloc-test fill" is documented in ALLOC-TEST.
        const std::string title = upper(command.substr(0, command.find(' ')));
        const std::string text = section(page, title);
        CAPTURE(command);
        REQUIRE(!text.empty());
        std::set<std::string> keys;
        collect_keys(schema, keys);
        for (const std::string& key : keys) {
            if (envelope.count(key)) continue;
            CAPTURE(key);
            CHECK(text.find("*" + key + "*") != std::string::npos);
        }
    }
}

TEST_CASE("docs: the schema is JSON Schema for one object per command, closed to undeclared keys") {
    const json schemas = json::parse(run_gpumem({"--schema"}).out);
    for (const auto& item : schemas.items()) {
        const std::string command = item.key();
        const json& schema = item.value();
        CAPTURE(command);
        CHECK(schema.at("type") == "object");
        CHECK(schema.at("additionalProperties") == false);
        CHECK(schema.at("title") == "gpumem " + command);
        CHECK(schema.at("properties").contains("ok"));
        // Every document may carry the origin stamp.
        CHECK(schema.at("properties").at("origin").at("required") == json::array({"host"}));
    }
}

namespace {

// scdoc and groff, as the page is built and as man renders it; where either
// is missing the rendering tests say so and check nothing.
bool man_renderer_installed() {
    if (run_program("/bin/sh", {"-c", "command -v scdoc && command -v groff"}).status == 0) return true;
    MESSAGE("scdoc or groff not installed: the man page is not rendered");
    return false;
}

// The man page through scdoc and groff for a terminal (-Tutf8), with
// `groff_options` (its line length -rLL, warnings, -P-cbou for plain text).
RunResult render_man_page(const std::string& groff_options) {
    return run_program("/bin/sh", {"-c", "scdoc < \"$1\" | groff -t -man -Tutf8 " + groff_options, "sh", man_page_source()});
}

}  // namespace

// troff warns where it cannot break a line (a word wider than its table
// column): the page then runs past the terminal's edge. Rendered as man
// renders it for terminals of 80, 100 and 120 columns (a line of 78 at 80),
// with every warning on; skipped where scdoc or groff is not installed.
TEST_CASE("docs: the man page renders without a troff warning at 80, 100 and 120 columns") {
    if (!man_renderer_installed()) return;
    for (const char* line_length : {"78n", "80n", "98n", "100n", "118n", "120n"}) {
        CAPTURE(line_length);
        const RunResult r = render_man_page(std::string("-rLL=") + line_length + " -ww -z");
        CHECK(r.status == 0);
        CHECK(r.err == "");
    }
}

// issue 45: at 80 columns 14 lines of the page ran past 100, its examples.
// As man renders it for a terminal of 80 and of 100 columns (MANWIDTH: a
// line length of 78 and 98), no line is wider than the terminal; code
// blocks (no fill) included.
TEST_CASE("docs: the man page at 80 and 100 columns has no line wider than the terminal") {
    if (!man_renderer_installed()) return;
    for (const std::size_t columns : {std::size_t{80}, std::size_t{100}}) {
        CAPTURE(columns);
        const RunResult r = render_man_page("-rLL=" + std::to_string(columns - 2) + "n -P-cbou");
        REQUIRE(r.status == 0);
        CHECK(r.out.size() > 10000);
        for (const std::string& line : lines_wider(r.out, columns)) {
            CAPTURE(line);
            CHECK(line_columns(line) <= columns);
        }
    }
}

namespace {

// The lines of `text`, each without trailing blanks.
std::vector<std::string> trimmed_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        std::string line = text.substr(at, end - at);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
        lines.push_back(std::move(line));
        at = end + 1;
    }
    return lines;
}

// A code block of the scd source, as its reader must see it rendered:
// scdoc reads `\\` as one backslash and a lone `\` as an escape of the
// next character (the backslash then never reaches the page).
struct CodeBlock {
    std::size_t line = 0;            // of the scd source, where it opens
    std::vector<std::string> lines;  // as the page must show them
    std::vector<std::string> lone_backslashes;
};

std::vector<CodeBlock> code_blocks(const std::string& page) {
    std::vector<CodeBlock> blocks;
    const std::vector<std::string> lines = trimmed_lines(page);
    bool inside = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& l = lines[i];
        const std::size_t first = l.find_first_not_of(" \t");
        if (first != std::string::npos && l.compare(first, 3, "```") == 0) {
            inside = !inside;
            if (inside) blocks.push_back({i + 1, {}, {}});
            continue;
        }
        if (!inside) continue;
        std::string shown;
        for (std::size_t c = 0; c < l.size(); ++c) {
            if (l[c] != '\\') {
                shown += l[c];
            } else if (c + 1 < l.size() && l[c + 1] == '\\') {
                shown += '\\';
                ++c;
            } else {
                blocks.back().lone_backslashes.push_back(l);
                shown += '\\';  // what the source means; the page will lack it
            }
        }
        blocks.back().lines.push_back(shown);
    }
    return blocks;
}

// Whether `rendered` holds `block` line for line at one indentation.
bool rendered_whole(const std::vector<std::string>& rendered, const CodeBlock& block) {
    std::size_t lead = 0;
    while (lead < block.lines.size() && block.lines[lead].empty()) ++lead;
    if (lead == block.lines.size()) return true;
    const std::string& first = block.lines[lead];
    for (std::size_t r = 0; r < rendered.size(); ++r) {
        const std::string& line = rendered[r];
        if (line.size() < first.size() || line.compare(line.size() - first.size(), first.size(), first) != 0) continue;
        const std::string indent = line.substr(0, line.size() - first.size());
        if (indent.find_first_not_of(' ') != std::string::npos || r < lead) continue;
        bool all = true;
        for (std::size_t k = lead; k < block.lines.size() && all; ++k) {
            const std::size_t at = r - lead + k;
            const std::string want = block.lines[k].empty() ? "" : indent + block.lines[k];
            all = at < rendered.size() && rendered[at] == want;
        }
        if (all) return true;
    }
    return false;
}

}  // namespace

// A pasted example must run: every code block renders byte for byte as its
// source means it (issue 48: `IFS=$'\t'` rendered as `IFS=$'t'`, and the `\`
// that continues a line was dropped, with no word from groff).
TEST_CASE("docs: every code block of the man page renders as its source, backslashes included") {
    if (!man_renderer_installed()) return;
    // Wide enough that no line of a block is cut; no bold or underline.
    const RunResult r = render_man_page("-rLL=300n -P-cbou");
    REQUIRE(r.status == 0);
    const std::vector<std::string> rendered = trimmed_lines(r.out);
    const std::vector<CodeBlock> blocks = code_blocks(man_page());
    CHECK(blocks.size() >= 10);
    std::size_t with_backslash = 0;
    for (const CodeBlock& block : blocks) {
        CAPTURE(block.line);
        for (const std::string& line : block.lone_backslashes) {
            INFO("a lone backslash (write \\\\ in the scd): " << line);
            CHECK(false);
        }
        for (const std::string& line : block.lines) with_backslash += line.find('\\') != std::string::npos;
        CHECK(rendered_whole(rendered, block));
    }
    CHECK(with_backslash >= 3);  // the drain loop's $'\t', the prolog's $'\n' and its continued line
}

namespace {

// "max-batch" -> "MaxBatch": the prefix of a job's Request and Results.
std::string camel(const std::string& job) {
    std::string out;
    bool up = true;
    for (char c : job) {
        if (c == '-') {
            up = true;
            continue;
        }
        out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
        up = false;
    }
    return out;
}

// Whether `source` names `word` as a whole identifier.
bool names(const std::string& source, const std::string& word) {
    const auto part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (std::size_t at = source.find(word); at != std::string::npos; at = source.find(word, at + 1))
        if ((at == 0 || !part(source[at - 1])) && (at + word.size() == source.size() || !part(source[at + word.size()]))) return true;
    return false;
}

// The recipe's paragraph, from its bold title to the next one.
std::string recipe(const std::string& guide, const std::string& title) {
    const std::size_t at = guide.find("**" + title + "**");
    if (at == std::string::npos) return "";
    return guide.substr(at, guide.find("\n\n**", at) - at);
}

}  // namespace

// docs/developing.md's recipe "A reuse-sim job" says how many files a new
// job touches; its numbered items are those files, and none of them is a
// file the jobs share. That holds only while each job is a module of its
// own: its Request and Results (reuse_sim_JOB.hpp) named in its own files
// (reuse_sim_JOB*.cpp) and nowhere else in the sources, and no shared file
// (reuse_sim_common, reuse_sim_options, reuse_sim_plot) including a job's
// header. A job's logic moved back into a shared file fails here.
TEST_CASE("docs: the recipe for a reuse-sim job counts its files, and each job's types live in its own files alone") {
    const std::filesystem::path root = std::filesystem::path(tests_dir()) / "..";
    const std::string text = recipe(slurp((root / "docs/developing.md").string()), "A reuse-sim job");
    REQUIRE(!text.empty());
    const std::size_t files = text.find(" files");
    REQUIRE(files != std::string::npos);
    std::size_t digits = files;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(text[digits - 1]))) --digits;
    REQUIRE(digits < files);
    const int claimed = std::stoi(text.substr(digits, files - digits));
    int items = 0;
    for (std::size_t line = text.find('\n'); line != std::string::npos; line = text.find('\n', line + 1)) {
        std::size_t end = line + 1;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
        if (end == line + 1 || text.compare(end, 2, ". ") != 0) continue;
        ++items;
        CHECK(std::stoi(text.substr(line + 1, end - line - 1)) == items);  // numbered in order, one file each
    }
    CHECK(items == claimed);
    // Each file it names outside the job's own exists.
    for (std::size_t tick = text.find('`'); tick != std::string::npos; tick = text.find('`', tick + 1)) {
        const std::size_t close = text.find('`', tick + 1);
        REQUIRE(close != std::string::npos);
        const std::string name = text.substr(tick + 1, close - tick - 1);
        tick = close;
        if (name.find('/') == std::string::npos || name.find_first_of(" *") != std::string::npos || name.find("JOB") != std::string::npos) continue;
        CAPTURE(name);
        CHECK(std::filesystem::exists(root / name));
    }

    std::vector<std::pair<std::string, std::string>> sources;  // path, text
    for (const char* folder : {"src", "subcommands"})
        for (const auto& entry : std::filesystem::recursive_directory_iterator(root / folder)) {
            const std::string ext = entry.path().extension().string();
            if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
            sources.emplace_back(std::filesystem::relative(entry.path(), root).string(), slurp(entry.path().string()));
        }
    std::vector<std::string> jobs;
    std::istringstream commands(run_gpumem({"--list", "commands", "--format", "value"}).out);
    for (std::string line; std::getline(commands, line);)
        if (line.rfind("reuse-sim ", 0) == 0) jobs.push_back(line.substr(10, line.find('\t') - 10));
    REQUIRE(jobs.size() >= 4);
    const std::string folder = "subcommands/reuse_sim/";
    const auto own_prefix = [&](const std::string& job) {
        std::string id = job;
        std::replace(id.begin(), id.end(), '-', '_');
        return folder + "reuse_sim_" + id;
    };
    for (const std::string& job : jobs) {
        CAPTURE(job);
        const std::string prefix = own_prefix(job);
        const auto header = std::find_if(sources.begin(), sources.end(), [&](const auto& s) { return s.first == prefix + ".hpp"; });
        REQUIRE(header != sources.end());
        for (const std::string& type : {camel(job) + "Request", camel(job) + "Results"}) {
            CAPTURE(type);
            CHECK(header->second.find("struct " + type + " ") != std::string::npos);
            for (const auto& file : sources) {  // no structured binding: clang 14 cannot capture one in CAPTURE's lambda
                const std::string& path = file.first;
                if (path.rfind(prefix, 0) == 0) continue;
                CAPTURE(path);
                CHECK_FALSE(names(file.second, type));
            }
        }
    }
    // The shared files include no job's header.
    for (const auto& file : sources) {
        const std::string& path = file.first;
        if (path.rfind(folder + "reuse_sim_", 0) != 0) continue;
        if (std::any_of(jobs.begin(), jobs.end(), [&](const std::string& job) { return path.rfind(own_prefix(job), 0) == 0; })) continue;
        CAPTURE(path);
        for (const std::string& job : jobs)
            CHECK(file.second.find("#include \"" + own_prefix(job).substr(12) + ".hpp\"") == std::string::npos);
    }
}
