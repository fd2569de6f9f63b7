// stdout as a Unix tool treats it (issue #13, item 6): a failed or short
// write is an error, exit 1 with one line; a reader that went away ends the
// run quietly, by SIGPIPE as coreutils do (128 + 13 to a shell). And every
// human answer within the terminal's width, 100 columns in a pipe (issue 45).
#include <doctest/doctest.h>

#include <csignal>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_harness.hpp"
#include "record_fixtures.hpp"

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

// issue 45 §2: on an 80- and a 100-column terminal the strategies table was
// 176 columns, --max-batch's answer 334, report's GPU table 175, --list
// checks 100 and the error of a bad --query 806. Every command gpumem runs
// without a GPU, as a person sees it on a terminal 80 and 100 columns wide
// (stderr there too: warnings) and in a pipe (100 columns at most). Errors
// stay one line: within 100 columns, wherever they go. The GPU commands'
// tables and text are rendered from fixtures at both widths in their own
// suites (test_info, test_alloc_report, test_copy, test_check).
namespace {

std::string fixture(const std::string& name) { return record_fixtures::tests_dir() + "/fixtures/" + name; }

// A human answer: the arguments ("{dir}" is a fresh folder of its own for
// each run), the environment's changes and the exit status it ends with.
struct Answer {
    Args args;
    std::vector<std::string> env;
    int status = 0;
    // It runs a program whose own stderr (a Python traceback) goes to
    // gpumem's: on a terminal stdout alone is looked at, in a pipe stderr's
    // lines of gpumem's own.
    bool runs_program = false;
    // A constructor, not an aggregate: g++ warns of every member a braced
    // list leaves to its default.
    Answer(Args a, std::vector<std::string> e = {}, int s = 0, bool program = false)
        : args(std::move(a)), env(std::move(e)), status(s), runs_program(program) {}
};

std::vector<std::string> words_of(const std::string& text, char separator) {
    std::vector<std::string> words;
    std::istringstream in(text);
    for (std::string word; std::getline(in, word, separator);)
        if (!word.empty()) words.push_back(word);
    return words;
}

// The first field of each line of `gpumem --list NAME --format value`.
std::vector<std::string> listed(const std::string& name) {
    Args args = {"--list"};
    if (!name.empty()) args.push_back(name);
    args.insert(args.end(), {"--format", "value"});
    const RunResult r = run_gpumem(args);
    REQUIRE(r.status == 0);
    std::vector<std::string> names;
    for (const std::string& line : words_of(r.out, '\n')) names.push_back(line.substr(0, line.find('\t')));
    return names;
}

// The stand-in torch first on PYTHONPATH, nothing of the caller's torch or launcher.
std::vector<std::string> standin_env(const std::string& dir) {
    const std::string record = record_fixtures::record_dir();
    return {"PYTHONPATH=" + record + "/standin", "STANDIN_LOG=" + dir + "/log", "STANDIN_STATS", "STANDIN_SNAPSHOT", "RANK",
            "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PYTORCH_CUDA_ALLOC_CONF",
            "PYTORCH_ALLOC_CONF", "STANDIN_TORCH_VERSION", "STANDIN_ROLE"};
}

std::vector<Answer> human_answers() {
    std::vector<Answer> answers = {{{"--help"}}, {{"--list"}}};
    for (const std::string& list : listed("")) answers.push_back({{"--list", list}});
    for (const std::string& command : listed("commands")) {
        Args args = words_of(command, ' ');
        args.emplace_back("--help");
        answers.push_back({args});
    }
    // reuse-sim: the strategies table of a built-in workload; a recorded
    // trace's replay (with its warnings); the tuner; the largest batch of a
    // program on the stand-in torch (recorded at small batches, then real
    // runs), as test_reuse_sim_max_batch.cpp runs it.
    answers.push_back({{"reuse-sim"}, {}, 2});  // bare: the jobs it has
    for (const char* job : {"replay", "record", "tune", "max-batch"}) answers.push_back({{"reuse-sim", job, "--help"}});
    answers.push_back({{"reuse-sim", "replay"}});
    answers.push_back({{"reuse-sim", "replay", "--trace", fixture("torch/fragmentation_oom.pickle")}});
    // A warning that starts with the trace's path, longer than what is left
    // after "gpumem: warning: " (issue 57: 97 columns at 80).
    answers.push_back({{"reuse-sim", "replay", "--trace", fixture("allocator_features/hook_graph_capture_oom_cap50.pickle"), "--strategy",
                        "torch-caching"}});
    answers.push_back({{"reuse-sim", "tune", "--trace", fixture("torch/memory_fraction.pickle"), "--capacity", "600MiB"}});
    answers.push_back({{"reuse-sim", "max-batch", "--capacity", "1GiB", "-o", "{dir}/run.pickle", "--record-batches", "2,4,8",
                        "--confirm", "--", "python3", record_fixtures::record_dir() + "/batch_program.py", "--bs", "{batch}"},
                       standin_env("{dir}"), 0, true});
    // report: the fleet of the fixtures, a failed check among them (exit 7).
    Args report = {"report"};
    for (const char* name : {"check-node1.json", "check-node2.json", "check-node4.json", "copy-node1.json", "info.jsonl", "error-ranks.jsonl"})
        report.push_back(fixture("report/") + name);
    answers.push_back({report, {}, 7});
    // The error that listed every info field.
    answers.push_back({{"info", "--query", "fre"}, {}, 2});
    return answers;
}

// `words` with every "{dir}" replaced by `dir`.
std::vector<std::string> in_folder(std::vector<std::string> words, const std::string& dir) {
    for (std::string& w : words)
        for (std::size_t at; (at = w.find("{dir}")) != std::string::npos;) w.replace(at, 5, dir);
    return words;
}

bool is_error(const std::string& line) { return line.rfind("gpumem: error: ", 0) == 0; }

}  // namespace

TEST_CASE("output: every human answer within the terminal's width, 80 and 100 columns, and 100 in a pipe") {
    for (const Answer& answer : human_answers()) {
        CAPTURE(joined(answer.args));
        for (const int columns : {80, 100, 0}) {  // 0: a pipe
            CAPTURE(columns);
            const record_fixtures::Scratch dir("widths");
            const Args args = in_folder(answer.args, dir.path);
            const std::vector<std::string> env = in_folder(answer.env, dir.path);
            const RunResult r = columns == 0 ? run_gpumem(args, env) : run_on_terminal(args, columns, env, !answer.runs_program);
            CHECK(r.status == answer.status);
            std::string shown = r.out;
            for (const std::string& line : words_of(r.err, '\n'))
                if (!answer.runs_program || line.rfind("gpumem: ", 0) == 0) shown += line + "\n";
            CHECK_FALSE(shown.empty());
            const std::size_t width = columns == 0 ? 100 : static_cast<std::size_t>(columns);
            for (const std::string& line : lines_wider(shown, width, false)) {
                CAPTURE(line);
                // On a terminal nothing is wider, an error included (wrapped
                // there); in a pipe an error stays one line, which scripts
                // read, within the pipe's 100 columns.
                CHECK(columns == 0);
                CHECK(is_error(line));
                CHECK(line_columns(line) <= 100);
            }
        }
    }
}

TEST_CASE("output: a table too wide for the terminal leaves out its least useful columns and says which; --wide keeps them") {
    const RunResult narrow = run_on_terminal({"reuse-sim", "replay"}, 80);
    REQUIRE(narrow.status == 0);
    CHECK(lines_wider(narrow.out, 80).empty());
    CHECK(narrow.out.find("strategy ") != std::string::npos);
    CHECK(narrow.out.find("peak reserved") != std::string::npos);  // the most useful stay
    const std::size_t header = narrow.out.find("\nstrategy ");
    REQUIRE(header != std::string::npos);
    const std::string header_line = narrow.out.substr(header + 1, narrow.out.find('\n', header + 1) - header - 1);
    CHECK(header_line.find("peak live") == std::string::npos);
    CHECK(header_line.find("requests") == std::string::npos);
    CHECK(narrow.out.find("(requests, peak live, ") != std::string::npos);  // named under the table
    CHECK(narrow.out.find("--wide or --json shows them)") != std::string::npos);
    const RunResult wide = run_on_terminal({"reuse-sim", "replay", "--wide"}, 80);
    REQUIRE(wide.status == 0);
    CHECK(wide.out.find("  peak live  ") != std::string::npos);
    CHECK(wide.out.find("slack at peak") != std::string::npos);
    CHECK(wide.out.find("left out") == std::string::npos);
    CHECK_FALSE(lines_wider(wide.out, 100).empty());  // as wide as it gets
    // JSON carries every column at any width.
    const RunResult json = run_gpumem({"reuse-sim", "replay", "--json"}, {"COLUMNS=40"});
    REQUIRE(json.status == 0);
    CHECK(json.out.find("\"peak_live\"") != std::string::npos);
    CHECK(json.out.find("\"slack_at_peak\"") != std::string::npos);
}

TEST_CASE("output: an error naming a long list of names gives the nearest few and the list that holds them all") {
    const RunResult r = run_gpumem({"info", "--query", "fre"});
    CHECK(r.status == 2);
    CHECK(r.err == "gpumem: error: --query: unknown info field 'fre' (nearest: free, bar1_free; gpumem --list fields)\n");
    const RunResult s = run_gpumem({"reuse-sim", "replay", "--strategy", "torch-cachng"});
    CHECK(s.status == 2);
    CHECK(s.err.rfind("gpumem: error: --strategy: unknown strategy 'torch-cachng' (nearest: torch-caching", 0) == 0);
    CHECK(s.err.find("; gpumem --list strategies)") != std::string::npos);
    // A short list is still spelt out.
    const RunResult d = run_gpumem({"copy", "h2x"});
    CHECK(d.status == 2);
    CHECK(d.err.find("(expected h2d, d2h, d2d, h2h, bidir, p2p or p2p-bidir)") != std::string::npos);
}
