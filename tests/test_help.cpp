// Help that helps: every help page and every --list fits a 100-column
// terminal (and a wider one too: help never passes 100 columns), a
// subcommand's page shows the global options in their own group, the
// exit-status table is on the top-level page only, and a usage error found
// while parsing points to the help of the command that was run, with the
// nearest name offered for a mistyped command, option or list.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/name_table.hpp"
#include "base/text.hpp"
#include "cli/commands.hpp"
#include "cli/lists.hpp"
#include "cli/output.hpp"
#include "cli_harness.hpp"
#include "tests_dir.hpp"

namespace {

std::vector<std::vector<std::string>> every_page() {
    std::vector<std::vector<std::string>> pages = {{}};
    for (const char* c : {"info", "memset", "copy", "alloc-test", "check", "reuse-sim", "report"}) pages.push_back({c});
    for (const char* m : {"latency", "max", "fill", "churn", "hold"}) pages.push_back({"alloc-test", m});
    for (const char* m : {"replay", "tune", "record", "max-batch"}) pages.push_back({"reuse-sim", m});
    return pages;
}

std::string joined(const std::vector<std::string>& words) {
    std::string text = "gpumem";
    for (const std::string& w : words) text += " " + w;
    return text;
}

// The longest line's length and the line itself.
std::pair<std::size_t, std::string> widest_line(const std::string& text) {
    std::pair<std::size_t, std::string> widest{0, ""};
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        if (end - start > widest.first) widest = {end - start, text.substr(start, end - start)};
        start = end + 1;
    }
    return widest;
}

}  // namespace

TEST_CASE("help: every page fits 100 columns, wrapped at words, on a 100-column terminal and a wider one") {
    for (const char* columns : {"COLUMNS=100", "COLUMNS=160"}) {
        for (std::vector<std::string> page : every_page()) {
            page.push_back("--help");
            const RunResult r = run_gpumem(page, {columns});
            INFO(joined(page), " with ", columns);
            REQUIRE(r.status == 0);
            const auto widest = widest_line(r.out);
            INFO("widest line: ", widest.second);
            CHECK(widest.first <= 100);
            // One line per option: no option's description runs to more than two lines.
            CHECK(r.out.find("Excludes:") == std::string::npos);
            CHECK(r.out.find("Needs:") == std::string::npos);
        }
    }
}

// What help shows of an option reads whole: its brackets closed where the
// description was cut short ("(- for standard input" lost its ")"), and one
// name for its value, not CLI11's type and validator side by side
// ("SIZE:SIZE", "TEXT:{quick,standard,long}").
TEST_CASE("help: descriptions cut short close their brackets, and a value has one name") {
    for (std::vector<std::string> page : every_page()) {
        page.push_back("--help");
        const RunResult r = run_gpumem(page, {"COLUMNS=100"});
        INFO(joined(page));
        REQUIRE(r.status == 0);
        // Option by option: the lines from one "  -" or "  --" to the next.
        std::vector<std::string> options;
        std::size_t start = 0;
        while (start < r.out.size()) {
            std::size_t end = r.out.find('\n', start);
            if (end == std::string::npos) end = r.out.size();
            const std::string line = r.out.substr(start, end - start);
            const bool continuation = line.rfind("    ", 0) == 0;
            if (!continuation) options.push_back(line.rfind("  -", 0) == 0 ? line : std::string());  // empty: not an option
            else if (!options.empty() && !options.back().empty()) options.back() += " " + line;
            start = end + 1;
        }
        for (const std::string& option : options) {
            if (option.empty()) continue;
            INFO(option);
            // "[offset, size)" is a half-open range: ( and [ close alike.
            int open = 0;
            for (char c : option) open += (c == '(' || c == '[') ? 1 : (c == ')' || c == ']') ? -1 : 0;
            CHECK(open == 0);
            CHECK(option.find("TEXT:") == std::string::npos);
            const std::string head = option.substr(0, option.find("  ", 2));
            // CLI11's bare TEXT where a validator names the value (SIZE, RANGE).
            CHECK((head + " ").find(" TEXT ") == std::string::npos);
            CHECK((head + " ").find(" TEXT=") == std::string::npos);
            const std::size_t colon = head.find(':');
            if (colon != std::string::npos && head.find('{') == std::string::npos) {
                const std::size_t word = head.rfind(' ', colon) + 1;
                CHECK(head.substr(word, colon - word) != head.substr(colon + 1, head.find(' ', colon) - colon - 1));
            }
        }
    }
}

TEST_CASE("help: an 80-column terminal gets 80-column pages") {
    const RunResult r = run_gpumem({"copy", "--help"}, {"COLUMNS=80"});
    REQUIRE(r.status == 0);
    CHECK(widest_line(r.out).first <= 80);
}

TEST_CASE("help: every --list fits 100 columns") {
    const RunResult index = run_gpumem({"--list", "--json"});
    REQUIRE(index.status == 0);
    const nlohmann::json lists = nlohmann::json::parse(index.out);
    std::vector<std::string> names = {""};
    for (const auto& row : lists["lists"]) names.push_back(row["list"].get<std::string>());
    CHECK(names.size() > 10);
    for (const std::string& name : names) {
        std::vector<std::string> args = {"--list"};
        if (!name.empty()) args.push_back(name);
        const RunResult r = run_gpumem(args, {"COLUMNS=100"});
        INFO(joined(args));
        REQUIRE(r.status == 0);
        const auto widest = widest_line(r.out);
        INFO("widest line: ", widest.second);
        CHECK(widest.first <= 100);
    }
}

// The global options a page lists ("-d,--device", "--format"...), in
// either form of its "Global options:" group: a line per option, or their
// names only (a long page), up to the footer's blank line.
std::set<std::string> global_options_listed(const std::string& page) {
    std::set<std::string> names;
    const std::size_t group = page.find("\nGlobal options:\n");
    if (group == std::string::npos) return names;
    const std::size_t end = page.find("\n\n", group + 1);
    const std::string text = page.substr(group, end == std::string::npos ? std::string::npos : end - group);
    // Lines that start with an option ("  -d,--device SPEC  GPU(s)...", or
    // "  -d,--device SPEC, --format FMT, ..."): each of their items before
    // any bracket, its first word, split at its commas.
    for (std::string_view line : gpumem::split(text, '\n')) {
        if (line.rfind("  -", 0) != 0) continue;
        line = line.substr(0, line.find(" ("));
        for (std::size_t at = 0; at < line.size();) {
            std::size_t next = line.find(", ", at);
            if (next == std::string_view::npos) next = line.size();
            const std::string_view item = gpumem::trim(line.substr(at, next - at));
            for (std::string_view name : gpumem::split(item.substr(0, item.find(' ')), ','))
                if (name.rfind("--", 0) == 0) names.emplace(name);
            at = next + 2;
        }
    }
    return names;
}

TEST_CASE("help: a command's page shows the global options it takes, in their own group, and the formats it offers; those it refuses are refused (issue 57)") {
    // The globals every command takes; -d and the formats as its row says.
    const std::set<std::string> always = {"--no-header", "--wide", "--units", "--verbose", "--quiet"};
    int checked = 0;
    for (const gpumem::cli::CommandEntry* row : gpumem::cli::command_rows()) {
        if (row->definition == nullptr) continue;
        const gpumem::cli::CommandDefinition& d = *row->definition;
        std::vector<std::string> page;
        for (std::string_view word : gpumem::split(row->name, ' ')) page.emplace_back(word);
        INFO(row->name);
        std::vector<std::string> help = page;
        help.push_back("--help");
        const RunResult r = run_gpumem(help, {"COLUMNS=100"});
        REQUIRE(r.status == 0);
        CHECK(r.out.find("Exit status") == std::string::npos);
        const std::set<std::string> listed = global_options_listed(r.out);
        CAPTURE(r.out);
        for (const std::string& option : always) CHECK(listed.count(option) == 1);
        CHECK(listed.count("--device") == (d.refuses_device ? 0 : 1));
        for (const char* format : {"--format", "--json", "--csv"}) CHECK(listed.count(format) == (d.refuses_format ? 0 : 1));
        // --format's choices, where the page has room for them: this command's own.
        const std::vector<std::string> offered = gpumem::cli::offered_formats(*row);
        const std::size_t choices = r.out.find("--format FMT:{");
        if (!d.refuses_format && choices != std::string::npos) {
            const std::size_t open = r.out.find('{', choices), close = r.out.find('}', open);
            CHECK(r.out.substr(open + 1, close - open - 1) == gpumem::join(offered, ","));
        }
        for (const gpumem::Named<gpumem::cli::FormatSpec>& format : gpumem::cli::kFormats) {
            const bool offers = std::find(offered.begin(), offered.end(), std::string(format.name)) != offered.end();
            CAPTURE(format.name);
            const bool expected = d.refuses_format ? format.value.format == gpumem::cli::Format::table
                                                   : format.value.every_command || d.formats.has(format.value.format);
            CHECK(offers == expected);
            // Not on the page unless offered (the long form names no choices).
            if (!offers && choices != std::string::npos)
                CHECK(r.out.find(std::string(format.name), choices) > r.out.find('}', choices));
        }
        // What the page leaves out, the command refuses: exit 2, the row's own line.
        std::vector<std::string> base = page;
        if (row->name == "reuse-sim record") base.insert(base.end(), {"-o", "/tmp/gpumem-help-refusal.pickle"});
        std::vector<std::string> tail;
        if (row->name == "reuse-sim record" || row->name == "reuse-sim max-batch") tail = {"--", "true", "{batch}"};
        // Each refused option given: exit 2, the row's line for it.
        const auto refused = [&](const std::vector<std::string>& given, const char* why) {
            std::vector<std::string> args = base;
            args.insert(args.end(), given.begin(), given.end());
            args.insert(args.end(), tail.begin(), tail.end());
            const RunResult r = run_gpumem(args, {"CUDA_VISIBLE_DEVICES=", "COLUMNS=300"});
            CAPTURE(r.err);
            CHECK(r.status == 2);
            CHECK(r.err.find(why) != std::string::npos);
            ++checked;
        };
        if (d.refuses_device) refused({"-d", "0"}, d.refuses_device);
        if (d.refuses_format)
            for (const char* format : {"--json", "--csv"}) refused({format}, d.refuses_format);
    }
    CHECK(checked >= 6);  // report's, tune's, record's and max-batch's -d; record's formats
    // gpumem --help, no command: every global option and every format.
    const RunResult top = run_gpumem({"--help"}, {"COLUMNS=100"});
    CHECK(top.out.find("Exit status") != std::string::npos);
    CHECK(top.out.find("Global options:") != std::string::npos);
    for (const gpumem::Named<gpumem::cli::FormatSpec>& format : gpumem::cli::kFormats) CHECK(top.out.find(std::string(format.name)) != std::string::npos);
    // The two pages.
    const RunResult memset = run_gpumem({"memset", "--help"}, {"COLUMNS=100"});
    CHECK(memset.out.find("nagios") == std::string::npos);
    const RunResult report = run_gpumem({"report", "--help"}, {"COLUMNS=100"});
    CHECK(global_options_listed(report.out).count("--device") == 0);
}

TEST_CASE("help: alloc-test hold and fill name TOTAL once; both spellings at once is gpumem's own error") {
    for (const char* mode : {"hold", "fill"}) {
        const RunResult r = run_gpumem({"alloc-test", mode, "--help"});
        INFO(mode, "\n", r.out);
        CHECK(r.out.find("--total") == std::string::npos);
        CHECK(r.out.find("total") != std::string::npos);
        const RunResult both = run_gpumem({"alloc-test", mode, "1GiB", "--total", "2GiB"});
        CHECK(both.status == 2);
        CHECK(both.err.find("TOTAL given twice") != std::string::npos);
        CHECK(both.err.find("At Most") == std::string::npos);
    }
}

TEST_CASE("help: a parse error points to the help of the command that was run") {
    struct Case {
        std::vector<std::string> args;
        std::string pointer;
    };
    const Case cases[] = {
        {{"check", "--levle", "fast"}, "(see gpumem check --help)"},
        {{"alloc-test", "hold", "--chunk", "x"}, "(see gpumem alloc-test hold --help)"},
        {{"copy", "h2d", "--sample-time", "fast"}, "(see gpumem copy --help)"},
        {{"--bogus"}, "(see gpumem --help)"},
        // Every duration option, with its name and its command's page.
        {{"alloc-test", "churn", "--duration", "1m30x"}, "--duration '1m30x': invalid duration"},
        {{"alloc-test", "churn", "--duration", "1m30x"}, "(see gpumem alloc-test churn --help)"},
        {{"alloc-test", "hold", "1GiB", "--duration", "soon"}, "(see gpumem alloc-test hold --help)"},
        {{"memset", "--lock-timeout", "5x"}, "--lock-timeout '5x'"},
        {{"memset", "--lock-timeout", "5x"}, "(see gpumem memset --help)"},
        {{"check", "--xid-since", "2026-02-30T05:00:00"}, "(see gpumem check --help)"},
    };
    for (const Case& c : cases) {
        const RunResult r = run_gpumem(c.args);
        INFO(joined(c.args), ": ", r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find(c.pointer) != std::string::npos);
        CHECK(r.out.empty());
    }
}

TEST_CASE("help: a mistyped command, option, mode or list name gets the nearest one offered") {
    struct Case {
        std::vector<std::string> args;
        std::string message;
    };
    const Case cases[] = {
        {{"inof"}, "unknown command 'inof'; did you mean 'info'?"},
        {{"reuse-sm"}, "did you mean 'reuse-sim'?"},
        {{"check", "--levle", "quick"}, "unknown option '--levle'; did you mean '--level'?"},
        {{"info", "--jsno"}, "did you mean '--json'?"},
        {{"copy", "h2d", "--sample-tme=10ms"}, "did you mean '--sample-time'?"},
        {{"alloc-test", "hodl"}, "did you mean 'hold'?"},
        // A long list of names: the nearest few, then where they all are.
        {{"--list", "strategis"}, "(nearest: strategies, targets; gpumem --list)"},
        {{"--schema", "reprot"}, "did you mean 'report'?"},
        {{"copy", "h2x"}, "did you mean 'h2d'?"},
        {{"copy", "h2d", "--host-memory", "pinnd"}, "--host-memory"},
        {{"copy", "h2d", "--host-memory", "pinnd"}, "(nearest: pinned, mapped; gpumem --list host-memory)"},
        {{"check", "--threshold", "copy.h2x=40"}, "(nearest: copy.h2d, copy.d2d; gpumem --list checks)"},
        {{"check", "--thresholds", "copy.h2d=45GB/s"}, "--thresholds 'copy.h2d=45GB/s': No such file or directory; did you mean --threshold"},
        {{"reuse-sim", "replay", "--strategy", "torch-cachng"}, "(nearest: torch-caching; gpumem --list strategies)"},
        {{"reuse-sim", "replay", "--workload", "llm-decod"}, "did you mean 'llm-decode'?"},
        {{"reuse-sim", "tune", "--sweep", "max_splt_size=128"}, "(nearest: max_split_size; gpumem --list knobs)"},
        {{"info", "--query", "fre"}, "(nearest: free, bar1_free; gpumem --list fields)"},
        {{"--units", "gbi", "info"}, "--units"},
        {{"--format", "jsn", "info"}, "did you mean 'json'?"},
        // A mistyped mode with its arguments after it.
        {{"alloc-test", "hodl", "1GiB"}, "unknown alloc-test mode 'hodl'"},
        {{"alloc-test", "hodl", "1GiB"}, "did you mean 'hold'?"},
        {{"alloc-test", "fil", "50%"}, "did you mean 'fill'?"},
        // --query's nvidia-smi names as well as its keys.
        {{"info", "--query", "memory.fre"}, "did you mean 'memory.free'?"},
        {{"info", "--query", "name,memory.totl"}, "did you mean 'memory.total'?"},
        // A program given without -- before it: its options are not gpumem's.
        {{"reuse-sim", "record", "-o", "f.pickle", "python3", "-c", "pass"}, "unknown option '-c' after the program 'python3': put the program after --"},
        {{"reuse-sim", "record", "-o", "f.pickle", "./train.py", "--epochs", "3"}, "put the program after --"},
    };
    for (const Case& c : cases) {
        const RunResult r = run_gpumem(c.args);
        INFO(joined(c.args), ": ", r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find(c.message) != std::string::npos);
    }
}

TEST_CASE("help: no suggestion where none is near enough to mean anything") {
    // A one-letter option is one edit from every other one-letter option:
    // '-h' is not what '-x' meant.
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"info", "-x"}, {"check", "-l", "quick"}, {"copy", "h2d", "-z"}, {"alloc-test", "max", "-k"}}) {
        const RunResult r = run_gpumem(args);
        INFO(joined(args), ": ", r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find("unknown option '" + args[args.size() - (args[0] == "check" ? 2 : 1)] + "'") != std::string::npos);
        CHECK(r.err.find("did you mean") == std::string::npos);
    }
    CHECK(gpumem::closest_name("-x", std::vector<std::string_view>{"-h", "-d", "-q"}).empty());
    CHECK(gpumem::closest_name("se", std::vector<std::string_view>{"ce", "sm"}).empty());
    // An option before the program is still gpumem's own, with its suggestion.
    const RunResult before = run_gpumem({"reuse-sim", "max-batch", "--ouput", "f.pickle", "--", "python3"});
    CHECK(before.err.find("did you mean '--output'?") != std::string::npos);
}

TEST_CASE("help: --list takes a list's name in the singular or the plural, one rule for every list") {
    for (const auto& names : std::vector<std::pair<std::string, std::string>>{
             {"check", "checks"}, {"strategy", "strategies"}, {"direction", "directions"}, {"command", "commands"}, {"knob", "knobs"}}) {
        const std::string& singular = names.first;
        const RunResult a = run_gpumem({"--list", singular, "--json"});
        const RunResult b = run_gpumem({"--list", names.second, "--json"});
        INFO(singular, ": ", a.err);
        CHECK(a.status == 0);
        CHECK(b.status == 0);
        CHECK(a.out == b.out);
        // The list's names, not the index of lists.
        CHECK(a.out.find("\"lists\"") == std::string::npos);
    }
}

TEST_CASE("help: --schema COMMAND prints that command's schema only") {
    const RunResult all = run_gpumem({"--schema"});
    const RunResult report = run_gpumem({"--schema", "report"});
    REQUIRE(all.status == 0);
    REQUIRE(report.status == 0);
    const nlohmann::json every = nlohmann::json::parse(all.out);
    const nlohmann::json one = nlohmann::json::parse(report.out);
    CHECK(one == every["report"]);
    CHECK(report.out.size() * 3 < all.out.size());
    const nlohmann::json modes = nlohmann::json::parse(run_gpumem({"--schema", "alloc-test"}).out);
    CHECK(modes.contains("alloc-test hold"));
    CHECK(modes.size() == 5);
    // A mode by its whole name, as the keys say it: that mode's schema alone.
    for (const char* mode : {"alloc-test max", "reuse-sim max-batch"}) {
        CAPTURE(mode);
        const RunResult one_mode = run_gpumem({"--schema", mode});
        CHECK(one_mode.status == 0);
        CHECK(nlohmann::json::parse(one_mode.out) == every[mode]);
    }
    CHECK(run_gpumem({"--schema", "alloc-test maxx"}).status == 2);
}

// The shared layer (subcommands/cli) knows no command: each command hands
// its lists in (CommandDefinition::lists), with a table of its own where
// the list has more columns, and no file of cli/ includes a command's folder.
TEST_CASE("--list: each command hands its lists in; the shared layer includes no command's header") {
    const std::filesystem::path subcommands = std::filesystem::path(tests_dir()) / ".." / "subcommands";
    // A command folder named as a library of src/ (reuse_sim) cannot be told
    // from it by its include path, and is left out.
    std::vector<std::string> commands;
    for (const auto& entry : std::filesystem::directory_iterator(subcommands)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_directory() && name != "cli" && !std::filesystem::exists(subcommands / ".." / "src" / name)) commands.push_back(name);
    }
    REQUIRE(commands.size() >= 6);
    for (const auto& entry : std::filesystem::directory_iterator(subcommands / "cli")) {
        const std::string text = slurp(entry.path().string());
        for (const std::string& command : commands) {
            CAPTURE(entry.path().filename().string());
            CHECK(text.find("#include \"" + command + "/") == std::string::npos);
        }
    }
    std::set<std::string_view> names;
    std::set<std::string_view> with_table;
    for (const gpumem::cli::ListEntry& e : gpumem::cli::name_lists()) {
        CAPTURE(e.name);
        CHECK(names.insert(e.name).second);  // one list per name
        CHECK(static_cast<bool>(e.view));
        if (e.table) with_table.insert(e.name);
    }
    CHECK(names.size() == 22);
    CHECK(with_table == std::set<std::string_view>{"checks", "xids"});
}
