// The shell completions (completions/gpumem.bash, _gpumem, gpumem.fish)
// against `gpumem --help`, `gpumem SUB --help`, `gpumem SUB MODE --help` and
// `gpumem --list`: every long option is offered for its own command (or
// mode), no option is offered that --help does not list (hidden --debug-*
// test hooks, removed options), and the names (commands, modes, every fixed
// choice --help shows as {a,b,c}, the copy direction) come from gpumem's own
// tables through --list. bash and fish completions are run for real (fish's
// `complete -C`); zsh's are checked for syntax and for naming the right
// list. Where each file keeps what is read here is at the top of that file.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "tests_dir.hpp"

namespace {

std::string completions_dir() {
    return tests_dir() + "/../completions";
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> items;
    std::size_t start = 0;
    for (;;) {
        const std::size_t end = text.find(sep, start);
        items.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return items;
        start = end + 1;
    }
}

// What one --help lists.
struct Help {
    std::vector<std::string> options;                   // long options, with their dashes
    std::set<std::string> flags;                        // those of `options` that take no value
    std::map<std::string, std::string> descriptions;    // option -> its description, wrapped lines joined
    std::vector<std::string> subcommands;               // subcommands (alloc-test: modes)
    std::map<std::string, std::vector<std::string>> choices;  // option (or positional name) -> {a,b,c}
};

// CLI11's layout: a section title ("Options:", "Subcommands:") at column 0,
// entries indented by two spaces, wrapped descriptions indented further.
// The root page's "Global options:" are its own; a subcommand's page shows
// them too (they are offered for every command), so there they are skipped.
Help parse_help(const std::string& text, bool root) {
    Help help;
    std::string section;
    std::vector<std::string> described;  // the options of the entry being read
    for (const std::string& line : lines_of(text)) {
        if (line.empty()) continue;
        if (line[0] != ' ') {
            section = line;
            described.clear();
            continue;
        }
        if (line.size() < 3 || line[1] != ' ' || line[2] == ' ') {  // a wrapped description
            for (const std::string& option : described)
                help.descriptions[option] += " " + line.substr(line.find_first_not_of(' '));
            continue;
        }
        described.clear();
        // The entry's head: up to the description, two spaces on.
        const std::size_t description = line.find("  ", 2);
        const std::string head = line.substr(2, description == std::string::npos ? std::string::npos : description - 2);
        const std::string names = head.substr(0, head.find(' '));
        if (section == "Subcommands:") {
            help.subcommands.push_back(names);
        } else if (section == "Positionals:") {
            const std::size_t open = head.find(":{"), close = head.find('}');
            if (open != std::string::npos && close != std::string::npos && close > open)
                help.choices[names] = split(head.substr(open + 2, close - open - 2), ',');
        } else if ((section == "Options:" || (root && section == "Global options:")) && names[0] == '-') {
            const std::size_t open = head.find(":{"), close = head.find('}');
            for (const std::string& name : split(names, ',')) {
                if (name.rfind("--", 0) != 0) continue;  // -s: short names are not checked
                help.options.push_back(name);
                if (description != std::string::npos) {
                    const std::size_t from = line.find_first_not_of(' ', description);
                    help.descriptions[name] = from == std::string::npos ? "" : line.substr(from);
                }
                described.push_back(name);
                if (head.find(' ') == std::string::npos) help.flags.insert(name);  // "--confirm", not "--max-runs N"
                if (open != std::string::npos && close != std::string::npos && close > open)
                    help.choices[name] = split(head.substr(open + 2, close - open - 2), ',');
            }
        }
    }
    return help;
}

Help help_of(const std::vector<std::string>& words) {
    std::vector<std::string> args = words;
    args.push_back("--help");
    const RunResult r = run_gpumem(args);
    std::string command = "gpumem";
    for (const std::string& w : args) command += " " + w;
    INFO(command, ": ", r.err);
    REQUIRE(r.status == 0);
    return parse_help(r.out, words.empty());
}

bool is_word_char(char c, const std::string& extra) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || extra.find(c) != std::string::npos;
}

// `word` occurs in `text` with no name character right before or after it.
bool has_word(const std::string& text, const std::string& word, const std::string& extra = "-") {
    for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
        const bool before_ok = at == 0 || !is_word_char(text[at - 1], extra);
        const std::size_t after = at + word.size();
        const bool after_ok = after >= text.size() || !is_word_char(text[after], extra);
        if (before_ok && after_ok) return true;
    }
    return false;
}

// The text between `start` and the next `end`; empty (and a failed check)
// when `start` is missing.
std::string block(const std::string& text, const std::string& start, const std::string& end, const std::string& file) {
    const std::size_t at = text.find(start);
    INFO(file, " has no ", start);
    CHECK(at != std::string::npos);
    if (at == std::string::npos) return "";
    const std::size_t from = at + start.size();
    const std::size_t to = text.find(end, from);
    return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

// The file without its comment lines; for fish only its `complete` lines.
std::string code_of(const std::string& text, bool fish) {
    std::string code;
    for (const std::string& line : lines_of(text)) {
        const std::size_t first = line.find_first_not_of(' ');
        if (first != std::string::npos && line[first] == '#') continue;
        if (fish && line.rfind("complete ", 0) != 0) continue;
        code += line + "\n";
    }
    return code;
}

// The long options a file offers: --NAME (bash, zsh) or -l NAME (fish).
std::set<std::string> offered_options(const std::string& code, bool fish) {
    std::set<std::string> names;
    const std::string marker = fish ? "-l " : "--";
    for (std::size_t at = code.find(marker); at != std::string::npos; at = code.find(marker, at + 1)) {
        if (at > 0 && is_word_char(code[at - 1], "-")) continue;
        std::size_t end = at + marker.size();
        if (end >= code.size() || !std::isalpha(static_cast<unsigned char>(code[end]))) continue;
        while (end < code.size() && is_word_char(code[end], "-")) ++end;
        names.insert("--" + code.substr(at + marker.size(), end - at - marker.size()));
    }
    return names;
}

struct Completions {
    std::string bash, zsh, fish;
};

Completions read_completions() {
    Completions c{slurp(completions_dir() + "/gpumem.bash"), slurp(completions_dir() + "/_gpumem"),
                  slurp(completions_dir() + "/gpumem.fish")};
    INFO("completions read from ", completions_dir());
    REQUIRE(!c.bash.empty());
    REQUIRE(!c.zsh.empty());
    REQUIRE(!c.fish.empty());
    return c;
}

// Where each file lists the options of a context ("" for the global ones,
// else the subcommand, or subcommand_mode, dashes as underscores).
std::string bash_options(const Completions& c, const std::string& ctx) {
    return ctx.empty() ? block(c.bash, "_gpumem_global_opts=\"", "\"", "gpumem.bash")
                       : block(c.bash, "_gpumem_opts_" + ctx + "=\"", "\"", "gpumem.bash");
}

std::string zsh_options(const Completions& c, const std::string& ctx) {
    return block(c.zsh, ctx.empty() ? "local -a global_opts=(" : "local -a opts_" + ctx + "=(", "\n  )", "_gpumem");
}

std::string ctx_name(std::string name) {
    for (char& ch : name)
        if (ch == '-') ch = '_';
    return name;
}

// `gpumem --list NAME`'s names.
std::vector<std::string> list_names(const std::string& list) {
    const RunResult r = run_gpumem({"--list", list, "--format", "value"});
    INFO("gpumem --list ", list, ": ", r.err);
    CHECK(r.status == 0);
    std::vector<std::string> names;
    for (const std::string& line : lines_of(r.out))
        if (!line.empty()) names.push_back(line.substr(0, line.find('\t')));
    return names;
}

// PATH with the gpumem under test first, as the completions call `gpumem`.
std::string path_with_gpumem() {
    const std::string bin = gpumem_binary();
    const char* path = std::getenv("PATH");
    return "PATH=" + bin.substr(0, bin.rfind('/')) + ":" + (path ? path : "/usr/bin:/bin");
}

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
}

// What bash completes after `gpumem WORDS...` and one more (empty, or the
// last of `words` when it ends with a partial word such as "naive,").
// `partial`: the word being completed is the last of `words` in any case.
std::set<std::string> bash_complete(std::vector<std::string> words, bool partial = false) {
    partial = partial || (!words.empty() && words.back().find(',') != std::string::npos);
    if (!partial) words.push_back("");
    std::string array = "gpumem";
    for (const std::string& w : words) array += " " + shell_quote(w);
    const std::string script = "source " + shell_quote(completions_dir() + "/gpumem.bash") + "; COMP_WORDS=(" + array +
                               "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gpumem; printf '%s\\n' \"${COMPREPLY[@]}\"";
    const RunResult r = run_program("/bin/bash", {"--norc", "-c", script}, {path_with_gpumem()});
    INFO("bash: ", r.err);
    CHECK(r.status == 0);
    std::set<std::string> out;
    for (const std::string& line : lines_of(r.out))
        if (!line.empty()) out.insert(line);
    return out;
}

bool have_fish() {
    static const bool found = run_program("/usr/bin/env", {"fish", "-c", "true"}).status == 0;
    if (!found) MESSAGE("fish not installed: fish completions not run");
    return found;
}

// What fish's `complete -C` offers (names without descriptions).
// `partial`: the word being completed is the last of `words` in any case.
std::set<std::string> fish_complete(std::vector<std::string> words, bool partial = false) {
    partial = partial || (!words.empty() && words.back().find(',') != std::string::npos);
    std::string line = "gpumem";
    for (const std::string& w : words) line += " " + w;
    if (!partial) line += " ";
    const std::string script = "source " + shell_quote(completions_dir() + "/gpumem.fish") + "; complete -C " + shell_quote(line);
    const RunResult r = run_program("/usr/bin/env", {"fish", "-c", script}, {path_with_gpumem()});
    INFO("fish: ", r.err);
    CHECK(r.status == 0);
    std::set<std::string> out;
    for (const std::string& l : lines_of(r.out))
        if (!l.empty()) out.insert(l.substr(0, l.find('\t')));
    return out;
}

// The list zsh's spec for `option` completes from (_gpumem_names LIST or
// _gpumem_name_list LIST [all]).
std::string zsh_list_of(const std::string& zsh, const std::string& option) {
    for (const std::string& line : lines_of(zsh)) {
        if (line.find(option + "=") == std::string::npos && line.find(option + "+") == std::string::npos) continue;
        for (const std::string call : {"_gpumem_names ", "_gpumem_name_list "}) {
            const std::size_t at = line.find(call);
            if (at == std::string::npos) continue;
            const std::string rest = line.substr(at + call.size());
            return rest.substr(0, rest.find_first_of("' "));
        }
    }
    return "";
}

// Every --help of gpumem: "" for gpumem --help, "info", "alloc-test latency"...
std::map<std::string, Help> all_helps() {
    std::map<std::string, Help> helps;
    helps[""] = help_of({});
    for (const std::string& sub : helps[""].subcommands) {
        helps[sub] = help_of({sub});
        for (const std::string& mode : helps[sub].subcommands) helps[sub + " " + mode] = help_of({sub, mode});
    }
    return helps;
}

std::string ctx_of(const std::string& command) {
    const std::size_t space = command.find(' ');
    return space == std::string::npos ? ctx_name(command)
                                      : ctx_name(command.substr(0, space)) + "_" + ctx_name(command.substr(space + 1));
}

}  // namespace

TEST_CASE("completions: --help parses into subcommands, modes and options") {
    const auto helps = all_helps();
    const Help& root = helps.at("");
    CHECK(root.subcommands.size() >= 5);
    CHECK(std::find(root.options.begin(), root.options.end(), "--device") != root.options.end());
    CHECK(std::find(root.options.begin(), root.options.end(), "--version") != root.options.end());
    REQUIRE(helps.count("copy"));
    const Help& copy = helps.at("copy");
    CHECK(std::find(copy.options.begin(), copy.options.end(), "--host-memory") != copy.options.end());
    CHECK(std::find(copy.options.begin(), copy.options.end(), "--size") != copy.options.end());
    CHECK(root.choices.at("--format") == std::vector<std::string>{"table", "json", "csv", "value", "prometheus", "nagios", "npd"});
    REQUIRE(helps.count("alloc-test latency"));
    const Help& latency = helps.at("alloc-test latency");
    CHECK(std::find(latency.options.begin(), latency.options.end(), "--save-costs") != latency.options.end());
}

TEST_CASE("completions: --list commands is the command table --help shows") {
    std::set<std::string> listed, shown;
    for (const std::string& name : list_names("commands")) listed.insert(name);
    for (const auto& [command, help] : all_helps())
        for (const std::string& name : help.subcommands) shown.insert(command.empty() ? name : command + " " + name);
    CHECK(listed == shown);
    CHECK(listed.size() >= 10);
}

TEST_CASE("completions: bash and fish offer every command and mode, from gpumem --list") {
    const auto helps = all_helps();
    for (const auto& entry : helps) {
        const std::string& command = entry.first;  // clang 14 cannot capture a structured binding (INFO is a lambda)
        const Help& help = entry.second;
        if (help.subcommands.empty()) continue;
        std::vector<std::string> words;
        if (!command.empty()) words.push_back(command);
        const std::string label = "gpumem " + command + " <TAB>";
        INFO(label);
        const std::set<std::string> expected(help.subcommands.begin(), help.subcommands.end());
        CHECK(bash_complete(words) == expected);
        if (have_fish()) CHECK(fish_complete(words) == expected);
    }
    const Completions c = read_completions();
    CHECK(c.zsh.find("--list commands") != std::string::npos);
}

TEST_CASE("completions: every option is offered for its subcommand") {
    const Completions c = read_completions();
    const auto helps = all_helps();
    const Help& root = helps.at("");
    for (const auto& [command, help] : helps) {
        std::vector<std::string> own;
        for (const std::string& option : help.options)
            if (command.empty() ||
                std::find(root.options.begin(), root.options.end(), option) == root.options.end())
                own.push_back(option);  // a subcommand's --help also lists --help
        if (own.empty()) continue;
        const std::string ctx = ctx_of(command);
        const std::string bash = bash_options(c, ctx), zsh = zsh_options(c, ctx);
        for (const std::string& option : own) {
            const std::string label = "gpumem " + (command.empty() ? "" : command + " ") + option;
            INFO(label);
            CHECK(has_word(bash, option));
            CHECK(has_word(zsh, option));
        }
    }
}

// fish run for real (its file defines the option groups reuse-sim's jobs
// share once, in loops): after `gpumem COMMAND --` it offers the command's
// own options and the global ones, and no other command's.
TEST_CASE("completions: fish offers each command's options and no other's") {
    if (!have_fish()) return;
    const auto helps = all_helps();
    const std::vector<std::string>& global = helps.at("").options;
    for (const auto& [command, help] : helps) {
        std::vector<std::string> words;
        for (std::size_t at = 0; !command.empty() && at <= command.size();) {
            const std::size_t space = std::min(command.find(' ', at), command.size());
            words.push_back(command.substr(at, space - at));
            at = space + 1;
        }
        words.push_back("--");
        const std::set<std::string> offered = fish_complete(words, true);
        const std::string label = "gpumem " + command + " --<TAB>";
        INFO(label);
        for (const std::string& option : help.options) {
            INFO("not offered: ", option);
            CHECK(offered.count(option) == 1);
        }
        for (const std::string& option : offered) {
            INFO("offered, not in its --help: ", option);
            CHECK((std::find(help.options.begin(), help.options.end(), option) != help.options.end() ||
                   std::find(global.begin(), global.end(), option) != global.end()));
        }
    }
}

TEST_CASE("completions: every fixed choice is offered, from the list gpumem parses it with") {
    const Completions c = read_completions();
    int checked = 0;
    for (const auto& entry : all_helps()) {
        const std::string& command = entry.first;
        for (const auto& choice : entry.second.choices) {
            const std::string& option = choice.first;
            const std::vector<std::string>& values = choice.second;
            std::vector<std::string> words;
            if (!command.empty()) {
                const std::size_t space = command.find(' ');
                words.push_back(command.substr(0, space));
                if (space != std::string::npos) words.push_back(command.substr(space + 1));
            }
            const bool positional = option[0] != '-';
            if (!positional) words.push_back(option);
            const std::string label = "gpumem " + command + " " + option + " <TAB>";
            INFO(label);
            std::set<std::string> expected(values.begin(), values.end());
            expected.erase("all");  // offered where lists take it; checked below
            std::set<std::string> bash = bash_complete(words);
            bash.erase("all");
            CHECK(bash == expected);
            if (have_fish()) {
                std::set<std::string> fish = fish_complete(words);
                fish.erase("all");
                CHECK(fish == expected);
            }
            // zsh names the list whose names these are.
            const std::string list = positional ? "directions" : zsh_list_of(c.zsh, option);
            CHECK_FALSE(list.empty());
            if (!list.empty()) {
                const std::vector<std::string> names = list_names(list);
                CHECK(std::set<std::string>(names.begin(), names.end()) == expected);
            }
            ++checked;
        }
    }
    // Choices too many for a 100-column help line (info --query, reuse-sim
    // --strategy...) are not printed there, and reuse-sim --growth takes any
    // size or xF besides its names, so fewer options are checked here.
    CHECK(checked >= 11);
}

// After a flag the next word is an option again; after an option that takes
// a value it is that value. An option that takes a value in one command and
// is a flag in another (reuse-sim tune --confirm K, max-batch --confirm)
// goes by the command it is in: max-batch's --confirm followed by "--" was
// completed as tune's value, that is, not at all.
TEST_CASE("completions: bash offers options after each command's flags, and none after an option that takes a value") {
    for (const auto& [command, help] : all_helps()) {
        if (command.empty()) continue;
        std::vector<std::string> words;
        for (std::size_t at = 0; at <= command.size();) {
            const std::size_t space = std::min(command.find(' ', at), command.size());
            words.push_back(command.substr(at, space - at));
            at = space + 1;
        }
        for (const std::string& option : help.options) {
            if (option == "--help" || option == "--version") continue;
            std::vector<std::string> line = words;
            line.push_back(option);
            line.push_back("--");
            const std::string label = "gpumem " + command + " " + option + " --<TAB>";
            INFO(label);
            const std::set<std::string> offered = bash_complete(line, true);
            if (help.flags.count(option) == 1)
                CHECK(offered.count("--help") == 1);
            else
                CHECK(offered.count("--help") == 0);
        }
    }
}

// A default a completion's description states is the one --help states for
// that option (a copied "(default 10)" outlived --max-runs' default of 12).
TEST_CASE("completions: every default a description states is the one --help states") {
    const Completions c = read_completions();
    std::map<std::string, std::vector<std::string>> helped;  // option -> its descriptions in every --help
    for (const auto& [command, help] : all_helps())
        for (const auto& [option, description] : help.descriptions) helped[option].push_back(description);
    std::size_t stated = 0;
    for (const std::string* text : {&c.bash, &c.zsh, &c.fish})
        for (const std::string& line : lines_of(*text)) {
            const std::size_t at = line.find("(default ");
            if (at == std::string::npos) continue;
            const std::string fact = line.substr(at, line.find(')', at) + 1 - at);
            // The option: fish's -l NAME, zsh's '--NAME=[' or '--NAME['.
            std::string option;
            if (const std::size_t l = line.find(" -l "); l != std::string::npos)
                option = "--" + line.substr(l + 4, line.find(' ', l + 4) - l - 4);
            else if (const std::size_t dashes = line.find("'--"); dashes != std::string::npos)
                option = line.substr(dashes + 1, line.find_first_of("=[", dashes) - dashes - 1);
            INFO(line);
            REQUIRE(!option.empty());
            ++stated;
            bool found = false;
            for (const std::string& description : helped[option]) found = found || description.find(fact) != std::string::npos;
            INFO(option, " says ", fact, " in a completion; not in its --help");
            CHECK(found);
        }
    CHECK(stated >= 2);
}

TEST_CASE("completions: comma lists offer all first, then the rest of the names") {
    CHECK(bash_complete({"reuse-sim", "replay", "--strategy"}).count("all") == 1);
    const std::set<std::string> after = bash_complete({"reuse-sim", "replay", "--strategy", "naive,"});
    CHECK(after.count("naive,pool") == 1);
    CHECK(after.count("naive,naive") == 0);
    CHECK(after.count("naive,all") == 0);
    CHECK(bash_complete({"info", "--query", "used,"}).count("used,free") == 1);
    if (have_fish()) CHECK(fish_complete({"reuse-sim", "replay", "--strategy", "naive,"}).count("naive,pool") == 1);
}

TEST_CASE("completions: a name's description is the list's second column only, in zsh and fish") {
    // --list checks carries levels, threshold, remediation and source after
    // the description; a shell shows the description alone, without tabs.
    const std::string expected = "alloc.max[the largest single cudaMalloc against the free memory]";
    if (run_program("/usr/bin/env", {"zsh", "-c", "true"}).status == 0) {
        const std::string script = "eval \"$(sed -n '/^_gpumem_rows()/,/^}/p' " + shell_quote(completions_dir() + "/_gpumem") +
                                   ")\"; _gpumem_command=gpumem; reply=(); _gpumem_rows checks; print -l -- $reply";
        const RunResult r = run_program("/usr/bin/env", {"zsh", "-c", script}, {path_with_gpumem()});
        INFO("zsh: ", r.err);
        CHECK(r.status == 0);
        const std::vector<std::string> rows = lines_of(r.out);
        CHECK(rows.size() >= 20);
        CHECK(std::find(rows.begin(), rows.end(), expected) != rows.end());
        for (const std::string& row : rows) CHECK(row.find('\t') == std::string::npos);
    }
    if (have_fish()) {
        const std::string script = "source " + shell_quote(completions_dir() + "/gpumem.fish") + "; complete -C 'gpumem check --threshold '";
        const RunResult r = run_program("/usr/bin/env", {"fish", "-c", script}, {path_with_gpumem()});
        INFO("fish: ", r.err);
        const std::vector<std::string> rows = lines_of(r.out);
        CHECK(rows.size() >= 20);
        CHECK(std::find(rows.begin(), rows.end(), "alloc.max\tthe largest single cudaMalloc against the free memory") != rows.end());
        for (const std::string& row : rows) CHECK(std::count(row.begin(), row.end(), '\t') <= 1);
    }
}

TEST_CASE("completions: the zsh file parses") {
    if (run_program("/usr/bin/env", {"zsh", "-c", "true"}).status != 0) {
        MESSAGE("zsh not installed: syntax not checked");
        return;
    }
    const RunResult r = run_program("/usr/bin/env", {"zsh", "-n", completions_dir() + "/_gpumem"});
    INFO(r.err);
    CHECK(r.status == 0);
}

TEST_CASE("completions: no option that --help does not list") {
    const Completions c = read_completions();
    std::set<std::string> listed;
    for (const auto& [command, help] : all_helps()) listed.insert(help.options.begin(), help.options.end());
    const std::pair<std::string, const std::string*> files[] = {{"gpumem.bash", &c.bash}, {"_gpumem", &c.zsh},
                                                                      {"gpumem.fish", &c.fish}};
    for (const auto& [file, text] : files) {
        const bool fish = file == "gpumem.fish";
        const std::set<std::string> offered = offered_options(code_of(*text, fish), fish);
        CHECK(offered.size() > 50);
        for (const std::string& option : offered) {
            const std::string label = file + " offers " + option;
            INFO(label);
            CHECK(listed.count(option) == 1);
        }
        const std::string file_name = file;  // clang 14 cannot capture a structured binding (INFO is a lambda)
        INFO(file_name);
        CHECK(text->find("debug-") == std::string::npos);
    }
}
