// reuse-sim record and tune --confirm on the CPU: a real python3 runs the
// test programs of tests/fixtures/record/ against a stand-in torch package
// (tests/fixtures/record/standin/torch), so that the hook's injection, the
// chained sitecustomize, rank naming, signals, the exit status, the no-torch
// errors and --confirm's loop are tested without a GPU or PyTorch.
#include <doctest/doctest.h>

#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/record_plan.hpp"
#include "cli/width.hpp"
#include "base/text.hpp"
#include "cli/command.hpp"
#include "cli_harness.hpp"
#include "record_fixtures.hpp"
#include "reuse_sim/reuse_sim_tune.hpp"

namespace {

using namespace gpumem;
using gpumem::cli::wrap_words;
using nlohmann::json;
namespace rs = gpumem::reuse_sim;

using record_fixtures::exists;
using record_fixtures::has;
using record_fixtures::Scratch;
using record_fixtures::tests_dir;

const std::string kDir = record_fixtures::record_dir();
const std::string kProgram = kDir + "/program.py";
const std::string kSpawn = kDir + "/spawn.py";
const std::string kSnapshot = tests_dir() + "/fixtures/torch/fragmentation_oom.pickle";

// The stand-in torch and the environment's own sitecustomize on PYTHONPATH.
std::vector<std::string> standin_env(const Scratch& s, bool with_torch = true) {
    return {"PYTHONPATH=" + (with_torch ? kDir + "/standin:" : std::string()) + kDir + "/chained", "STANDIN_LOG=" + (s / "log"),
            "STANDIN_SNAPSHOT=" + kSnapshot, "RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
            "PMI_RANK", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "STANDIN_TORCH_VERSION", "STANDIN_ROLE", "STANDIN_STATS"};
}

RunResult record(const Scratch& s, const std::vector<std::string>& program, const std::vector<std::string>& extra_env = {},
                 const std::vector<std::string>& options = {}) {
    std::vector<std::string> args = {"reuse-sim", "record", "-o", s / "run.pickle"};
    args.insert(args.end(), options.begin(), options.end());
    args.emplace_back("--");
    args.emplace_back("python3");
    args.push_back(kProgram);
    args.insert(args.end(), program.begin(), program.end());
    std::vector<std::string> env = standin_env(s);
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    return run_gpumem(args, env);
}

}  // namespace

TEST_CASE("record plan: rank file names, statistics beside the snapshot, the wait status as a shell's") {
    CHECK(rank_file_name("run.pickle", "3") == "run.rank3.pickle");
    CHECK(rank_file_name("/a.b/run", "0") == "/a.b/run.rank0");
    CHECK(rank_file_name("/x/.hidden", "1") == "/x/.hidden.rank1");
    // ...and back, for --confirm's choice of the rank to compare.
    CHECK(rank_of_file_name("run.rank3.pickle") == 3u);
    CHECK(rank_of_file_name("/a.rank9/run.rank12") == 12u);
    CHECK(rank_of_file_name("/a.rank9/run.pickle") == std::nullopt);
    CHECK(rank_of_file_name("run.ranked.pickle") == std::nullopt);
    CHECK(rank_of_file_name(rank_file_name("/x/.hidden", "1")) == 1u);
    CHECK(rank_of_file_name("run.pickle") == std::nullopt);
    CHECK(rank_file_name("out/run.v2.pickle", "{rank}") == "out/run.v2.rank{rank}.pickle");
    CHECK(stats_file_name("run.pickle") == "run.stats.json");
    CHECK(stats_file_name("/d.d/run") == "/d.d/run.stats.json");
    CHECK(stats_file_name("run.rank2.pickle") == "run.rank2.stats.json");
}

TEST_CASE("record plan: several processes without ranks get FILE, then FILE.procN; --confirm reads N back") {
    CHECK(process_file_name("run.pickle", "2") == "run.proc2.pickle");
    CHECK(process_file_name("/a.b/run", "3") == "/a.b/run.proc3");
    CHECK(process_file_name(rank_file_name("run.pickle", "1"), "2") == "run.rank1.proc2.pickle");
    CHECK(process_of_file_name("run.proc2.pickle") == 2u);
    CHECK(process_of_file_name("run.rank1.proc12.pickle") == 12u);
    CHECK(rank_of_file_name("run.rank1.proc12.pickle") == 1u);
    CHECK(process_of_file_name("run.pickle") == std::nullopt);
    CHECK(process_of_file_name("/x.proc4/run.pickle") == std::nullopt);
    CHECK(process_of_file_name("run.process.pickle") == std::nullopt);
}

TEST_CASE("record plan: PYTORCH_ALLOC_CONF is read first by torch 2.9 and later, even empty; older torch reads only the old name") {
    const std::optional<std::string> none;
    CHECK(torch_reads_alloc_conf("2.9.0+cu128"));
    CHECK(torch_reads_alloc_conf("2.11.0"));
    CHECK(torch_reads_alloc_conf("3.0.0a0"));
    CHECK_FALSE(torch_reads_alloc_conf("2.8.0+cu126"));
    CHECK_FALSE(torch_reads_alloc_conf("1.13.1"));
    CHECK(torch_reads_alloc_conf(std::nullopt));  // not known: a torch new enough
    CHECK(torch_reads_alloc_conf("unknown"));
    const AllocConfRead both = read_alloc_conf(std::string("expandable_segments:True"), std::string("max_split_size_mb:128"), "2.11.0");
    CHECK(both.value == "expandable_segments:True");
    CHECK(both.variable == "PYTORCH_ALLOC_CONF");
    CHECK(both.ignored == "PYTORCH_CUDA_ALLOC_CONF");
    const AllocConfRead old = read_alloc_conf(std::string("expandable_segments:True"), std::string("max_split_size_mb:128"), "2.8.0");
    CHECK(old.value == "max_split_size_mb:128");
    CHECK(old.variable == "PYTORCH_CUDA_ALLOC_CONF");
    CHECK(old.ignored == "PYTORCH_ALLOC_CONF");
    const AllocConfRead empty_new = read_alloc_conf(std::string(""), std::string("max_split_size_mb:128"), "2.10.0");
    CHECK(empty_new.value == "");  // set, though empty: PyTorch's defaults, the old name unread
    CHECK(empty_new.variable == "PYTORCH_ALLOC_CONF");
    const AllocConfRead new_only_old_torch = read_alloc_conf(std::string("expandable_segments:True"), none, "2.4.1");
    CHECK_FALSE(new_only_old_torch.value);
    CHECK(new_only_old_torch.ignored == "PYTORCH_ALLOC_CONF");
    const AllocConfRead old_only = read_alloc_conf(none, std::string("backend:native"), "2.11.0");
    CHECK(old_only.value == "backend:native");
    CHECK(old_only.ignored.empty());
    CHECK_FALSE(read_alloc_conf(none, none, "2.11.0").value);
}

TEST_CASE("record plan: the cap in force is the last set for the device; the program's replaces gpumem's; changes are counted") {
    const MemoryFractionCall gpumem{0, 0.0125, 1ULL << 30, 80ULL << 30, true};
    const MemoryFractionCall half{0, 0.5, 40ULL << 30, 80ULL << 30, false};
    const MemoryFractionCall quarter{0, 0.25, 20ULL << 30, 80ULL << 30, false};
    const MemoryFractionCall other{1, 0.1, 8ULL << 30, 80ULL << 30, false};
    CHECK_FALSE(cap_in_force({}, 0));
    const std::optional<CapInForce> replaced = cap_in_force({gpumem, half}, 0);
    REQUIRE(replaced);
    CHECK(replaced->call.allowed_memory_maximum == 40ULL << 30);
    CHECK(replaced->replaced_gpumem);
    CHECK(replaced->gpumem_allowed == 1ULL << 30);
    CHECK(replaced->program_changes == 0);
    const std::optional<CapInForce> changed = cap_in_force({half, other, quarter, quarter}, 0);
    CHECK(changed->call.allowed_memory_maximum == 20ULL << 30);
    CHECK(changed->program_changes == 1);
    CHECK_FALSE(changed->replaced_gpumem);
    CHECK(cap_in_force({gpumem}, 0)->call.by_gpumem);
    CHECK(cap_in_force({other}, 0)->call.device == 1);  // none for the device: the last of all
    CHECK(exact_size_text(1ULL << 30) == "1GiB");
    CHECK(exact_size_text(300ULL << 20) == "300MiB");
    CHECK(exact_size_text(1000) == "1000");
    const std::string uncapped = fewer_ooms_message(34, 0, std::nullopt, std::nullopt, 900ULL << 20);
    CHECK(uncapped.rfind("the recording had 34 OOMs, the replay of its settings 0: ", 0) == 0);
    CHECK(has(uncapped, "a cap the recording did not capture"));
    CHECK(has(uncapped, "another process using the GPU"));
    CHECK(has(uncapped, "--capacity SIZE (at least the recorded peak reserved, 900MiB)"));
    CHECK(has(fewer_ooms_message(3, 1, 80ULL << 30, 1ULL << 30, 0), "pass --capacity 1GiB"));
}

TEST_CASE("record plan: the user's PYTORCH_CUDA_ALLOC_CONF keys the grid does not set are kept, the grid's replaced") {
    const std::vector<std::string_view> grid = {"max_split_size_mb", "roundup_power2_divisions", "expandable_segments",
                                                "garbage_collection_threshold"};
    CHECK(alloc_conf_items("a:1, roundup_power2_divisions:[256:1,>:8],b:2") ==
          std::vector<std::string>{"a:1", "roundup_power2_divisions:[256:1,>:8]", "b:2"});
    const MergedAllocConf m = merge_alloc_conf("backend:native,expandable_segments:True,pinned_num_register_threads:4",
                                               "max_split_size_mb:128", grid);
    CHECK(m.conf == "backend:native,pinned_num_register_threads:4,max_split_size_mb:128");
    CHECK(m.kept == std::vector<std::string>{"backend:native", "pinned_num_register_threads:4"});
    CHECK(m.replaced == std::vector<std::string>{"expandable_segments:True"});
    // PyTorch's defaults as the setting: the user's grid keys go, the rest stay.
    CHECK(merge_alloc_conf("expandable_segments:True", "", grid).conf.empty());
    CHECK(merge_alloc_conf("", "expandable_segments:True", grid).conf == "expandable_segments:True");
}

TEST_CASE("record plan: the agreement rule, the loop's stop and the final answer") {
    const RunFigures fits{0, 100, 1, 5, 1, std::nullopt}, ooms{3, 100, 4, 9, 2, std::nullopt};
    CHECK(prediction_held(fits, fits));
    CHECK(prediction_held(ooms, RunFigures{1, 50, 0, 0, 0, std::nullopt}));
    CHECK_FALSE(prediction_held(fits, ooms));
    CHECK_FALSE(prediction_held(ooms, fits));
    // Allocator OOMs the program never saw (retried inside PyTorch): judged by what the program saw.
    const RunFigures retried{3, 100, 4, 9, 2, 0}, seen{3, 100, 4, 9, 2, 1};
    CHECK(judged_ooms(retried) == 0);
    CHECK(judged_ooms(ooms) == 3);
    CHECK(prediction_held(fits, retried));
    CHECK_FALSE(prediction_held(fits, seen));
    ConfirmRunOutcome missed{"max_split_size_mb:128", fits, ooms, false, "", 0};
    ConfirmRunOutcome held{"expandable_segments:True", fits, fits, true, "", 1};
    CHECK(confirm_converged(held));
    CHECK_FALSE(confirm_converged(missed));
    CHECK(confirm_converged(ConfirmRunOutcome{"", fits, retried, true, "", 0}));
    CHECK_FALSE(confirm_converged(ConfirmRunOutcome{"", fits, std::nullopt, false, "no snapshot written", 0}));
    ConfirmEnding converged{ConfirmStop::converged, 3, 1ULL << 30, 1, "expandable_segments:True", 900ULL << 20, ""};
    const std::vector<std::string> two = confirm_answer({missed, held}, converged);
    REQUIRE(two.size() == 3);
    CHECK(two[0].rfind("run 1: PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 (the best of the trace's tuning): predicted no OOM", 0) == 0);
    CHECK(has(two[0], "allocator OOMs: 3 (the OOMs the program saw are not known"));
    CHECK(has(two[1], "(chosen by the tuning of run 1's recording)"));
    CHECK(two[2] == "ran without an OOM: use PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (confirmed by real run 2)");
    // Each count by its kind.
    const std::vector<std::string> kinds = confirm_answer({ConfirmRunOutcome{"", fits, retried, true, "", 0}}, converged);
    CHECK(has(kinds[0], "real: OOMs the program saw: 0; allocator OOMs: 3 (retried inside PyTorch, e.g. cuDNN's workspace search)"));
    CHECK(kinds[1] == "ran without an OOM: use PyTorch's default settings (confirmed by real run 1)");
    // K spent: the nearest run and what would fit instead.
    ConfirmEnding spent = converged;
    spent.stop = ConfirmStop::runs_spent;
    ConfirmRunOutcome worse{"", fits, RunFigures{5, 200, 0, 0, 0, std::nullopt}, false, "", 1};
    const std::string no = confirm_answer({worse, missed}, spent).back();
    CHECK(no.rfind("no setting of the grid avoided the OOM in 2 real runs; the nearest was PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 "
                   "(run 2: 3 OOMs, peak reserved 100 B against the cap 1 GiB)",
                   0) == 0);
    CHECK(has(no, "what would fit instead: a cap of 900 MiB with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
    ConfirmEnding left = spent;
    left.stop = ConfirmStop::nothing_left;
    left.would_fit.reset();
    left.not_searched = "it ran out of memory at every capacity tried, up to 4 GiB";
    const std::string none = confirm_answer({missed}, left).back();
    CHECK(has(none, "no setting left untried that the tuning of run 1's recording says could fit"));
    CHECK(has(none, "the capacity that would fit is not known (it ran out of memory at every capacity tried"));
    ConfirmEnding cut_short = spent;
    cut_short.stop = ConfirmStop::interrupted;
    ConfirmRunOutcome cut{"", fits, std::nullopt, false, "interrupted", 1};
    CHECK(confirm_answer({missed, cut}, cut_short).back() == "not confirmed: interrupted during run 2 of at most 3 real runs; none ran without an OOM");
    CHECK(confirm_answer({}, cut_short).back() == "not confirmed: interrupted after 0 of at most 3 real runs; no run ended");
}

TEST_CASE("record plan: --confirm's recordings beside the trace, without its rank and process; standard input's in the current directory") {
    CHECK(confirm_file_name("run.pickle", 1) == "run.confirm1.pickle");
    CHECK(confirm_file_name("/d.d/run.pickle", 12) == "/d.d/run.confirm12.pickle");
    CHECK(confirm_file_name("/d/run", 2) == "/d/run.confirm2");
    CHECK(confirm_file_name("/d/train.rank1.pickle", 2) == "/d/train.confirm2.pickle");
    CHECK(confirm_file_name("/d/train.rank1.proc2.pickle", 1) == "/d/train.confirm1.pickle");
    CHECK(confirm_file_name("/d/rank1.v2.pickle", 1) == "/d/rank1.v2.confirm1.pickle");
    CHECK(confirm_file_name("-", 3) == "reuse-sim.confirm3.pickle");
    CHECK(stats_file_name(confirm_file_name("run.pickle", 1)) == "run.confirm1.stats.json");
}

// Issue 57: "-o run" wrote run, run.proc2 and one run.stats.json, the
// tag taken for an extension and stripped again for the statistics.
TEST_CASE("record plan: a name without an extension gets its tags at its end, and every file of a run its own statistics") {
    CHECK(process_file_name("run", "2") == "run.proc2");
    CHECK(stats_file_name("run.proc2") == "run.proc2.stats.json");
    CHECK(stats_file_name("run") == "run.stats.json");
    CHECK(process_file_name(rank_file_name("run", "1"), "2") == "run.rank1.proc2");
    CHECK(stats_file_name(rank_file_name("/a.b/run", "1")) == "/a.b/run.rank1.stats.json");
    CHECK(tagged_file_name(".run", "bs4") == ".run.bs4");
    CHECK(stats_file_name(".run.bs4") == ".run.bs4.stats.json");
    CHECK(stats_file_name(".run") == ".run.stats.json");
    // The hook's templates: the placeholder is a tag too.
    CHECK(stats_file_name(rank_file_name("run", "{rank}")) == "run.rank{rank}.stats.json");
    CHECK(stats_file_name(process_file_name("run", "{proc}")) == "run.proc{proc}.stats.json");
    // A real extension still takes the tag before it; a dotted part that is
    // no tag of gpumem's is an extension.
    CHECK(tagged_file_name("run.v2", "bs4") == "run.bs4.v2");
    CHECK(stats_file_name("run.bs") == "run.stats.json");
    // tune --trace run --confirm K: the runs' statistics are not the trace's.
    CHECK(confirm_file_name("/d/run", 2) == "/d/run.confirm2");
    CHECK(stats_file_name(confirm_file_name("/d/run", 2)) == "/d/run.confirm2.stats.json");
    CHECK(confirm_file_name("/d/run.rank1", 2) == "/d/run.confirm2");
    CHECK(confirm_file_name("/d/.run.proc3", 1) == "/d/.run.confirm1");
    // The man page's promise, for every form of -o: no two files of the
    // runs share a name, a snapshot's or its statistics'.
    for (const std::string file : {"run", ".run", "run.pickle", "/a.b/run", "/x/.run.pickle", "run.v2.pickle", "run.rank1"}) {
        CAPTURE(file);
        std::vector<std::string> snapshots;
        const auto with_ranks_and_processes = [&](const std::string& f) {
            snapshots.push_back(f);
            for (const char* proc : {"2", "3"}) snapshots.push_back(process_file_name(f, proc));
            for (const char* rank : {"0", "1"}) {
                snapshots.push_back(rank_file_name(f, rank));
                for (const char* proc : {"2", "3"}) snapshots.push_back(process_file_name(rank_file_name(f, rank), proc));
            }
        };
        with_ranks_and_processes(file);
        for (const std::uint64_t batch : {4, 8}) with_ranks_and_processes(tagged_file_name(file, "bs" + std::to_string(batch)));
        for (const std::size_t run : {1, 2}) with_ranks_and_processes(confirm_file_name(file, run));
        std::set<std::string> names;
        for (const std::string& snapshot : snapshots) {
            CAPTURE(snapshot);
            CHECK(names.insert(snapshot).second);
            CHECK(names.insert(stats_file_name(snapshot)).second);
        }
    }
}

TEST_CASE("record plan: the names a recording's files take, for --plot to stay clear of") {
    CHECK(recording_file_of("/d/kp.pickle", "kp.bs4.pickle"));
    CHECK(recording_file_of("/d/kp.pickle", "kp.bs4.stats.json"));
    CHECK(recording_file_of("/d/kp.pickle", "kp.bs42.rank1.proc2.pickle"));
    CHECK(recording_file_of("/d/kp.pickle", "kp.stats.json"));
    CHECK(recording_file_of("run.confirm1.pickle", "/e/run.confirm7.rank0.pickle"));
    CHECK(recording_file_of("run", "run.bs8"));
    CHECK(recording_file_of("run", "run.bs8.stats.json"));
    CHECK(recording_file_of(".run", ".run.bs8"));
    CHECK(recording_file_of("run.v2.pickle", "run.v2.bs8.stats.json"));
    CHECK_FALSE(recording_file_of("/d/kp.pickle", "kp.bs4.svg"));
    CHECK_FALSE(recording_file_of("/d/kp.pickle", "kp.svg"));
    CHECK_FALSE(recording_file_of("/d/kp.pickle", "kp2.bs4.pickle"));
    CHECK_FALSE(recording_file_of("run", "run.svg"));
    CHECK_FALSE(recording_file_of("run", "run.bs8.svg"));
    CHECK_FALSE(recording_file_of("run.v2.pickle", "run.bs8.pickle"));
}

TEST_CASE("record plan: prose wrapped at word boundaries, a long word whole, none at 0 columns") {
    CHECK(wrap_words("aaa bbb ccc", 7) == "aaa bbb\nccc");
    CHECK(wrap_words("aaa bbb ccc", 0) == "aaa bbb ccc");
    CHECK(wrap_words("garbage_collection_threshold:0.8 fits", 10) == "garbage_collection_threshold:0.8\nfits");
    CHECK(wrap_words("a\nbb cc", 4) == "a\nbb\ncc");
    // A number keeps its unit on its line ("peak live 352.38\n  MiB" was printed).
    CHECK(wrap_words("peak 352.38 MiB x", 11) == "peak\n352.38 MiB\nx");
    CHECK(wrap_words("fits (272 MiB), 3 s in all", 15) == "fits (272 MiB),\n3 s in all");
    CHECK(wrap_words("the MiB after a word", 7) == "the MiB\nafter a\nword");  // only after a number
    std::string words;
    for (int i = 0; i < 60; ++i) words += (i ? " " : "") + std::string("word") + std::to_string(i);
    for (const std::string& line : [&] {
             std::vector<std::string> lines;
             std::istringstream in(wrap_words(words, 100));
             for (std::string l; std::getline(in, l);) lines.push_back(l);
             return lines;
         }())
        CHECK(line.size() <= 100);
}

TEST_CASE("record: an unmodified program recorded through the hook; the chained sitecustomize runs; the cap applies; stdout passes through") {
    const Scratch s;
    const RunResult r = record(s, {"stdout"}, {}, {"--capacity", "1GiB", "--max-entries", "5000"});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.out == "the program's own output\n");  // the program's stdout only
    CHECK(has(r.err, "gpumem: recorded " + (s / "run.pickle")));
    REQUIRE(exists(s / "run.pickle"));
    REQUIRE(exists(s / "run.stats.json"));
    const std::string log = slurp(s / "log");
    INFO(log);
    CHECK(has(log, "chained sitecustomize ran"));
    // Recording on before CUDA's first use, max_entries passed, stacks off by default.
    CHECK(log.find("record_memory_history") < log.find("cuda init, recording on"));
    CHECK(has(log, "\"context\": null"));
    CHECK(has(log, "\"max_entries\": 5000"));
    CHECK(has(log, "set_per_process_memory_fraction 0.0125 0"));  // 1 GiB of the stand-in's 80 GiB
    std::ifstream in(s / "run.stats.json");
    const json stats = json::parse(in);
    CHECK(stats["kind"] == "gpumem-torch-recording");
    CHECK(stats["allocator"]["allowed_memory_maximum"] == 1ULL << 30);
    CHECK(stats["memory_stats"].contains("num_ooms"));
    // What was written is a snapshot gpumem replays.
    const RunResult replay = run_gpumem({"reuse-sim", "replay", "--trace", s / "run.pickle", "--strategy", "torch-caching", "--json"});
    CHECK(replay.status == 0);
    // No temporary file left beside it, and the hook's directory is gone.
    const RunResult listing = run_program("/bin/sh", {"-c", "ls '" + s.path + "'"});
    CHECK(listing.out == "log\nrun.pickle\nrun.stats.json\n");
}

TEST_CASE("record: --python-stacks asks for stacks; --memory-fraction is passed as given") {
    const Scratch s;
    const RunResult r = record(s, {"alloc"}, {}, {"--python-stacks", "--memory-fraction", "0.25"});
    CHECK(r.status == 0);
    const std::string log = slurp(s / "log");
    CHECK(has(log, "\"context\": \"all\""));
    CHECK(has(log, "set_per_process_memory_fraction 0.25 0"));
}

TEST_CASE("record: the program's exit status passes through, and an uncaught exception still writes the snapshot") {
    const Scratch s;
    const RunResult seven = record(s, {"exit", "7"});
    CHECK(seven.status == 7);
    CHECK(exists(s / "run.pickle"));
    ::unlink((s / "run.pickle").c_str());
    const RunResult raised = record(s, {"raise"});
    CHECK(raised.status == 1);
    CHECK(has(raised.err, "RuntimeError: CUDA out of memory (stand-in)"));  // the program's traceback, unchanged
    CHECK(has(unwrapped(raised.err), "ended by exception: RuntimeError"));
    CHECK(exists(s / "run.pickle"));
}

TEST_CASE("record: one file per rank under a launcher, named by rank") {
    const Scratch s;
    const RunResult r = record(s, {"alloc"}, {"RANK=1", "WORLD_SIZE=2"});
    CHECK(r.status == 0);
    CHECK(exists(s / "run.rank1.pickle"));
    CHECK(exists(s / "run.rank1.stats.json"));
    CHECK_FALSE(exists(s / "run.pickle"));
    CHECK(has(r.err, "rank 1"));
    const RunResult slurm = record(s, {"alloc"}, {"SLURM_PROCID=3", "SLURM_NTASKS=4"});
    CHECK(exists(s / "run.rank3.pickle"));
    // One process of one: the file itself.
    const RunResult single = record(s, {"alloc"}, {"SLURM_PROCID=0", "SLURM_NTASKS=1"});
    CHECK(exists(s / "run.pickle"));
}

TEST_CASE("record: SIGTERM and SIGINT sent to gpumem reach the program, which writes its snapshot and dies of the signal") {
    for (const int sig : {SIGTERM, SIGINT}) {
        CAPTURE(sig);
        const Scratch s;
        Started run = start_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "python3", kProgram, "sleep"}, standin_env(s), true);
        CHECK(run.read_line(20) == "ready");
        run.signal(sig);
        CHECK(run.wait_within(20) == 128 + sig);
        const RunResult r = run.wait();
        INFO(r.err);
        CHECK(exists(s / "run.pickle"));
        CHECK(exists(s / "run.stats.json"));
    }
}

// coreutils' timeout sends its signal to gpumem, which passes it on, and
// then to the whole process group, the program in it: the program gets it
// twice, and the second must not cut its snapshot short.
TEST_CASE("record under timeout: the program gets the signal twice, writes its snapshot and dies of it; nothing left in $TMPDIR") {
    for (const int sig : {SIGTERM, SIGINT}) {
        CAPTURE(sig);
        const Scratch s;
        const std::string tmp = s / "tmp";
        REQUIRE(::mkdir(tmp.c_str(), 0700) == 0);
        std::vector<std::string> env = standin_env(s);
        env.push_back("TMPDIR=" + tmp);
        Started run = start_program("/usr/bin/timeout", {"60", gpumem_binary(), "reuse-sim", "record", "-o", s / "run.pickle", "--", "python3",
                                                         kProgram, "sleep"},
                                    env, true);
        CHECK(run.read_line(20) == "ready");
        run.signal(sig);  // timeout passes it on as it would its own: to gpumem, then to the group
        CHECK(run.wait_within(20) == 128 + sig);
        const RunResult r = run.wait();
        INFO(r.err);
        CHECK(exists(s / "run.pickle"));
        CHECK(exists(s / "run.stats.json"));
        std::size_t left = 0;
        for (const auto& entry : std::filesystem::directory_iterator(tmp)) left += entry.exists() ? 1 : 0;
        CHECK(left == 0);  // the hook's folder, gpumem-record-*, removed
    }
}

TEST_CASE("record: no torch, no CUDA: one clear line, and no file claiming to be a snapshot") {
    const Scratch s;
    const RunResult never = record(s, {"notorch"});
    CHECK(never.status == 1);
    CHECK(never.stderr_lines() == 1);
    CHECK(has(never.err, "the program never imported torch"));
    const RunResult cpu = record(s, {"cpu"});
    CHECK(cpu.status == 1);
    CHECK(cpu.stderr_lines() == 1);
    CHECK(has(cpu.err, "never used CUDA through torch"));
    // A python without torch: the program's own ImportError and status, and
    // gpumem's line (where python3 has a real torch, as on the GPU machine,
    // that part cannot be run).
    std::vector<std::string> env = standin_env(s, false);
    if (run_program("/usr/bin/env", {"python3", "-c", "import torch"}, {"PYTHONPATH"}).status == 0) return;
    const RunResult missing = run_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "python3", kProgram, "alloc"}, env);
    CHECK(missing.status == 1);
    CHECK(has(missing.err, "ModuleNotFoundError"));
    CHECK(has(missing.err, "gpumem: no snapshot written: the program's python has no torch"));
    CHECK_FALSE(exists(s / "run.pickle"));
    CHECK_FALSE(exists(s / "run.stats.json"));
    const RunResult absent = run_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "/nonexistent/program"}, env);
    CHECK(absent.status == 127);
}

namespace {

json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

// A replay of what --record wrote, torch-caching alone, as JSON.
json replay_json(const std::string& trace, const std::vector<std::string>& options = {}) {
    std::vector<std::string> args = {"reuse-sim", "replay", "--trace", trace, "--strategy", "torch-caching", "--json"};
    args.insert(args.end(), options.begin(), options.end());
    const RunResult r = run_gpumem(args);
    INFO(r.err);
    CHECK(r.status == 0);
    return json::parse(r.out);
}

}  // namespace

TEST_CASE("record: the program's own set_per_process_memory_fraction is recorded, and the replay uses the cap in force") {
    const Scratch s;
    // 0.0125 of the stand-in's 80 GiB: the 1 GiB the snapshot's 3 OOMs were recorded under.
    const RunResult r = record(s, {"fraction", "0.0125"});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK_FALSE(has(r.err, "replaced gpumem's cap"));  // gpumem set none
    const json stats = read_json(s / "run.stats.json");
    CHECK(stats["allocator"]["allowed_memory_maximum"] == 1ULL << 30);
    CHECK(stats["allocator"]["cap_set_by"] == "program");
    REQUIRE(stats["allocator"]["memory_fraction_calls"].size() == 1);
    CHECK(stats["allocator"]["memory_fraction_calls"][0]["fraction"] == 0.0125);
    CHECK(stats["allocator"]["memory_fraction_calls"][0]["device"] == 0);
    CHECK(stats["allocator"]["memory_fraction_calls"][0]["time_us"].is_number());
    // No --capacity: the replay runs under the recording's cap, and is exact.
    const json replay = replay_json(s / "run.pickle");
    CHECK(replay["capacity_bytes"] == 1ULL << 30);
    CHECK(replay["recorded_cap"]["set_by"] == "program");
    CHECK(replay["recorded_cap"]["used"] == true);
    CHECK(replay["strategies"][0]["ooms"] == 3);
    CHECK(replay["fewer_ooms_than_recorded"].is_null());
    // The program that changes its cap: the last one is used, and a warning says so.
    const RunResult twice = record(s, {"fraction", "0.5", "0.0125"});
    CHECK(twice.status == 0);
    const json changed = replay_json(s / "run.pickle");
    CHECK(changed["capacity_bytes"] == 1ULL << 30);
    CHECK(changed["recorded_cap"]["program_changes"] == 1);
    CHECK(has(changed["warnings"].dump(), "changed its own cap 1 time(s)"));
}

TEST_CASE("record: under --capacity, the program's own cap replaces gpumem's: recorded as in force, and said in one line") {
    const Scratch s;
    const RunResult r = record(s, {"fraction", "0.5"}, {}, {"--capacity", "1GiB"});
    INFO(r.err);
    CHECK(r.status == 0);
    const std::string log = slurp(s / "log");
    CHECK(log.find("set_per_process_memory_fraction 0.0125 0") < log.find("set_per_process_memory_fraction 0.5 None"));
    const json stats = read_json(s / "run.stats.json");
    CHECK(stats["allocator"]["allowed_memory_maximum"] == 40ULL << 30);  // the program's, in force
    CHECK(stats["allocator"]["cap_set_by"] == "program");
    REQUIRE(stats["allocator"]["memory_fraction_calls"].size() == 2);
    CHECK(stats["allocator"]["memory_fraction_calls"][0]["set_by"] == "gpumem");
    int lines = 0;
    for (std::size_t at = r.err.find("replaced gpumem's cap"); at != std::string::npos; at = r.err.find("replaced gpumem's cap", at + 1)) ++lines;
    CHECK(lines == 1);
    CHECK(has(unwrapped(r.err), "gpumem: the program replaced gpumem's cap (1GiB) with its own: set_per_process_memory_fraction(0.5) on device 0, 40GiB"));
}

TEST_CASE("replay: fewer OOMs than the recording had is said in one line, with the causes and what to pass; --json carries it") {
    const Scratch s;
    // Recorded under the program's own 1 GiB (3 OOMs); replayed under more.
    REQUIRE(record(s, {"fraction", "0.0125"}).status == 0);
    const json bigger = replay_json(s / "run.pickle", {"--capacity", "80GiB"});
    REQUIRE(bigger["fewer_ooms_than_recorded"].is_string());
    const std::string line = bigger["fewer_ooms_than_recorded"];
    CHECK(line.rfind("the recording had 3 OOMs, the replay of its settings 0: ", 0) == 0);
    CHECK(has(line, "pass --capacity 1GiB"));
    CHECK(has(bigger["warnings"].dump(), "the recording had 3 OOMs"));
    // A recording whose cap nobody recorded (the snapshot's OOMs, no cap in
    // its statistics): the uncapped replay has none; table mode says so on stderr.
    const Scratch t;
    REQUIRE(record(t, {"alloc"}).status == 0);
    const RunResult table = run_gpumem({"reuse-sim", "replay", "--trace", t / "run.pickle", "--strategy", "torch-caching"});
    CHECK(table.status == 0);
    CHECK(has(table.err, "the recording had 3 OOMs, the replay of its settings 0"));
    CHECK(has(table.err, "a cap the recording did not capture"));
    CHECK(has(table.err, "--capacity SIZE"));
    // --tune: judged by the recorded setting's row.
    const RunResult tune = run_gpumem({"reuse-sim", "tune", "--trace", t / "run.pickle", "--json"});
    CHECK(tune.status == 0);
    CHECK(json::parse(tune.out)["fewer_ooms_than_recorded"].is_string());
    // Replayed under the cap it ran under: nothing to say.
    const json capped = replay_json(t / "run.pickle", {"--capacity", "1GiB"});
    CHECK(capped["fewer_ooms_than_recorded"].is_null());
}

TEST_CASE("record: a parent and the child it spawns (multiprocessing, no launcher) write two files, both listed") {
    const Scratch s;
    std::vector<std::string> env = standin_env(s);
    const RunResult r = run_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "python3", kSpawn}, env);
    INFO(r.err);
    CHECK(r.status == 0);
    // The parent used CUDA first: FILE; the child: FILE.proc2.
    REQUIRE(exists(s / "run.pickle"));
    REQUIRE(exists(s / "run.proc2.pickle"));
    CHECK(exists(s / "run.stats.json"));
    CHECK(exists(s / "run.proc2.stats.json"));
    const json parent = read_json(s / "run.stats.json"), child = read_json(s / "run.proc2.stats.json");
    CHECK(parent["process"] == 1);
    CHECK(child["process"] == 2);
    CHECK(parent["pid"] != child["pid"]);
    CHECK(has(r.err, "gpumem: recorded " + (s / "run.pickle") + " ("));
    CHECK(has(r.err, "gpumem: recorded " + (s / "run.proc2.pickle") + " ("));
    CHECK(has(r.err, ", process 2, pid "));
    CHECK(has(unwrapped(r.err), "gpumem: 2 processes recorded: " + (s / "run.pickle") + ", " + (s / "run.proc2.pickle")));
    CHECK_FALSE(has(r.err, "more than one process"));
}

TEST_CASE("record: -o without an extension, or a hidden name: a parent and its child still write a file and statistics each") {
    for (const std::string name : {"run", ".run"}) {
        CAPTURE(name);
        const Scratch s;
        const RunResult r = run_gpumem({"reuse-sim", "record", "-o", s / name, "--", "python3", kSpawn}, standin_env(s));
        INFO(r.err);
        CHECK(r.status == 0);
        const std::string first = s / name, second = s / (std::string(name) + ".proc2");
        REQUIRE(exists(first));
        REQUIRE(exists(second));
        REQUIRE(exists(first + ".stats.json"));
        REQUIRE(exists(second + ".stats.json"));  // was the first's, replaced
        CHECK(read_json(first + ".stats.json")["process"] == 1);
        CHECK(read_json(second + ".stats.json")["process"] == 2);
        std::set<std::string> files;
        for (const auto& entry : std::filesystem::directory_iterator(s.path)) files.insert(entry.path().filename().string());
        const std::string n = name;
        CHECK(files == std::set<std::string>{"log", n, n + ".stats.json", n + ".proc2", n + ".proc2.stats.json"});
    }
}

TEST_CASE("record: PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF are both recorded; the line names the one torch read") {
    const Scratch s;
    const std::vector<std::string> both = {"PYTORCH_ALLOC_CONF=expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128"};
    const RunResult r = record(s, {"alloc"}, both);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(has(unwrapped(r.err), "under PYTORCH_ALLOC_CONF=expandable_segments:True; PYTORCH_CUDA_ALLOC_CONF set too, not read)"));
    const json stats = read_json(s / "run.stats.json");
    CHECK(stats["allocator"]["PYTORCH_ALLOC_CONF"] == "expandable_segments:True");
    CHECK(stats["allocator"]["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:128");
    std::vector<std::string> old_torch = both;
    old_torch.emplace_back("STANDIN_TORCH_VERSION=2.8.0");
    const RunResult o = record(s, {"alloc"}, old_torch);
    CHECK(has(unwrapped(o.err), "under PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128; PYTORCH_ALLOC_CONF set too, not read)"));
}

TEST_CASE("record and confirm: usage errors exit 2 before anything runs") {
    const Scratch s;
    const std::string f = s / "run.pickle";
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"reuse-sim", "record", "-o", f},
             {"reuse-sim", "record", "-o", f, "--json", "--", "true"},
             {"reuse-sim", "record", "-o", f, "--trace", kSnapshot, "--", "true"},
             {"reuse-sim", "record", "-o", f, "--tune", "--", "true"},
             {"reuse-sim", "record", "-o", s.path, "--", "true"},
             {"reuse-sim", "record", "-o", "/nonexistent/dir/run.pickle", "--", "true"},
             {"reuse-sim", "replay", "--", "python3", "x.py"},
             {"reuse-sim", "replay", "--python-stacks", "--trace", kSnapshot},
             {"reuse-sim", "replay", "--trace", kSnapshot, "--confirm", "--", "true"},
             {"reuse-sim", "tune", "--trace", kSnapshot, "--confirm"},
             {"reuse-sim", "tune", "--confirm", "--", "true"},
             {"reuse-sim", "tune", "--trace", kSnapshot, "--confirm", "--max-runs", "0", "--", "true"},
             {"reuse-sim", "tune", "--trace", kSnapshot, "--max-runs", "2", "--", "true"},
             {"reuse-sim", "tune", "--trace", kSnapshot, "--confirm", "2", "--", "true"},
         }) {
        CAPTURE(args);
        const RunResult r = run_gpumem(args, {"CUDA_VISIBLE_DEVICES="});
        CHECK(r.status == 2);
        CHECK(r.stderr_lines() == 1);
        const bool json_asked = std::find(args.begin(), args.end(), "--json") != args.end();
        if (json_asked) CHECK(nlohmann::json::parse(r.out)["error"]["status"] == 2);
        else CHECK(r.out.empty());
    }
}

TEST_CASE("confirm: no GPU exits 3 before the program runs") {
    const Scratch s;
    std::vector<std::string> env = standin_env(s);
    env.emplace_back("CUDA_VISIBLE_DEVICES=");
    // The trace in a folder of its own: the runs' recordings would go beside it.
    const std::string trace = s / "run.pickle";
    REQUIRE(std::system(("cp '" + kSnapshot + "' '" + trace + "'").c_str()) == 0);
    const RunResult r = run_gpumem({"reuse-sim", "tune", "--trace", trace, "--capacity", "1GiB", "--confirm", "--max-runs", "2", "--json", "--",
                                    "python3", kProgram, "alloc"},
                                   env);
    CHECK(r.status == 3);
    CHECK_FALSE(exists(s / "log"));  // the program never ran
    CHECK(json::parse(r.out)["error"]["status"] == 3);
}

namespace {

// --confirm's loop in this process, driven by the stand-in: a tuner's
// ranking of two settings, the first predicted to fit; the trace (whose
// directory holds the runs' recordings) in a scratch folder. The tunings
// of the runs' recordings are real: the stand-in's snapshot
// (fragmentation_oom: expandable_segments:True peaks at 900 MiB, PyTorch's
// defaults at 1.12 GiB; 840 MiB live at most) under the runs' cap.
struct ConfirmCase {
    Scratch s;
    cli::TuneRequest q;
    cli::TuneResults r;
    bool quiet = true;  // false: gpumem's lines (and the program's) go to the file `stderr`
    ConfirmCase() {
        q.input.trace = s / "run.pickle";
        q.confirm = cli::ConfirmRequest{2, {"python3", kProgram, "alloc"}, {}, {}};
        q.confirm->settings.capacity = 1ULL << 30;
        q.setup.capacity = 1ULL << 30;
        q.grid.axes = rs::grid_axes({}, true, true);
        q.grid.threads = 2;
        q.setup.strategies = {&rs::kStrategies.row("torch-caching")};
        r.ranking = cli::TuneRanking{};
        rs::TuneRow best{}, recorded{};
        best.point.options.expandable_segments = true;
        best.outcome.peak_reserved = 900ULL << 20;
        recorded.point.recorded = true;
        recorded.outcome.ooms = 3;
        recorded.outcome.peak_reserved = 1010ULL << 20;
        r.ranking->rows = {best, recorded};
    }
    void run(const std::string& stats, const char* user_conf = nullptr, const char* variable = "PYTORCH_CUDA_ALLOC_CONF") {
        ::setenv("PYTHONPATH", (kDir + "/standin").c_str(), 1);
        ::setenv("STANDIN_SNAPSHOT", kSnapshot.c_str(), 1);
        ::setenv("STANDIN_STATS", stats.c_str(), 1);
        ::setenv("STANDIN_LOG", (s / "log").c_str(), 1);
        if (user_conf) ::setenv(variable, user_conf, 1);
        cli::Globals globals;
        globals.quiet = quiet;
        cli::Session session(globals);
        // Standard error into a file while the loop runs, then back.
        struct Redirect {
            int saved = -1;
            explicit Redirect(const std::optional<std::string>& file) {
                if (!file) return;
                std::fflush(stderr);
                saved = ::dup(2);
                const int fd = ::open(file->c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
                ::dup2(fd, 2);
                ::close(fd);
            }
            ~Redirect() {
                if (saved < 0) return;
                std::fflush(stderr);
                ::dup2(saved, 2);
                ::close(saved);
            }
        } redirect(quiet ? std::nullopt : std::optional<std::string>(s / "stderr"));
        struct Unset {
            ~Unset() {
                for (const char* name : {"PYTHONPATH", "STANDIN_SNAPSHOT", "STANDIN_STATS", "STANDIN_LOG", "PYTORCH_CUDA_ALLOC_CONF",
                                         "PYTORCH_ALLOC_CONF"})
                    ::unsetenv(name);
            }
        } unset;
        cli::confirm_tune(q, r, session);
    }
    std::vector<std::string> answer() const { return cli::confirm_answer_lines(r); }
};

}  // namespace

TEST_CASE("confirm: the best setting's real run has no OOM: converged at run 1, its recording kept beside the trace") {
    ConfirmCase c;
    c.run(R"({"expandable_segments:True": {"num_ooms": 0, "reserved_bytes.all.peak": 943718400, "num_alloc_retries": 1},
              "*": {"num_ooms": 3}})");
    REQUIRE(c.r.confirm);
    REQUIRE(c.r.confirm->runs.size() == 1);
    const cli::ConfirmRun& run = c.r.confirm->runs.front();
    CHECK(run.alloc_conf == "expandable_segments:True");
    REQUIRE(run.outcome.real);
    CHECK(run.outcome.real->peak_reserved == 943718400);
    CHECK(run.outcome.real->retries == 1);
    CHECK(run.outcome.held);
    CHECK(run.outcome.chosen_by == 0);
    CHECK(c.r.confirm->converged);
    CHECK(c.r.confirm->stop == ConfirmStop::converged);
    CHECK(c.r.confirm->tunings.empty());  // nothing to tune again
    CHECK(run.recording == c.s / "run.confirm1.pickle");
    CHECK(run.stats == c.s / "run.confirm1.stats.json");
    CHECK(exists(c.s / "run.confirm1.pickle"));
    CHECK(exists(c.s / "run.confirm1.stats.json"));
    CHECK(c.answer().back() == "ran without an OOM: use PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (confirmed by real run 1)");
}

TEST_CASE("confirm: without --capacity the real runs get the cap the recording ran under, as the replay does") {
    ConfirmCase c;
    // No --capacity: the replay's cap came from the recording's statistics.
    c.q.confirm->settings.capacity.reset();
    c.q.setup.capacity_from_recording = true;
    c.run(R"({"*": {"num_ooms": 0, "reserved_bytes.all.peak": 943718400}})");
    REQUIRE(c.r.confirm);
    REQUIRE(c.r.confirm->runs.size() == 1);
    // An uncapped run finds no OOM on the whole GPU and would confirm any setting.
    CHECK(has(slurp(c.s / "log"), "set_per_process_memory_fraction 0.0125 0"));  // 1 GiB of the stand-in's 80 GiB
    CHECK(c.r.confirm->cap == 1ULL << 30);
}

TEST_CASE("confirm: a departure is tuned again from that run's own recording, which picks another setting; that one converges") {
    ConfirmCase c;
    c.q.confirm->candidates = 3;
    c.quiet = false;
    // The best setting: the program saw OOMs; any other runs without one.
    c.run(R"({"expandable_segments:True": {"num_ooms": 2, "reserved_bytes.all.peak": 1073741824}, "*": {"num_ooms": 0}})");
    const cli::ConfirmResults& confirm = *c.r.confirm;
    REQUIRE(confirm.runs.size() == 2);
    CHECK(confirm.runs[0].outcome.setting == "expandable_segments:True");
    CHECK_FALSE(confirm.runs[0].outcome.held);
    // The trace's tuning had nothing else that fits: the second setting is the new recording's.
    REQUIRE(confirm.tunings.size() == 1);
    const cli::ConfirmTuning& tuning = confirm.tunings[0];
    CHECK(tuning.run == 1);
    CHECK(tuning.capacity >= (1ULL << 30));  // the runs' cap, as the hook set it (a fraction of the stand-in's 80 GiB)
    CHECK(tuning.capacity < (1ULL << 30) + (1ULL << 20));
    CHECK(tuning.tune.rows.size() > 2);  // the grid, replayed from run 1's recording
    const cli::ConfirmRun& second = confirm.runs[1];
    CHECK(second.outcome.chosen_by == 1);
    CHECK(second.outcome.setting != "expandable_segments:True");
    REQUIRE(second.rank >= 1);
    const rs::TuneRow& row = tuning.tune.rows[second.rank - 1];
    CHECK(rs::alloc_conf(row.point.options) == second.outcome.setting);
    CHECK(row.outcome.ooms == 0);
    // Every setting ranked before it was tried or runs out of memory in the new recording.
    for (std::size_t i = 0; i + 1 < second.rank; ++i)
        CHECK((tuning.tune.rows[i].outcome.ooms > 0 || rs::alloc_conf(tuning.tune.rows[i].point.options) == "expandable_segments:True"));
    CHECK(confirm.converged);
    CHECK(confirm.stop == ConfirmStop::converged);
    CHECK(exists(c.s / "run.confirm1.pickle"));
    CHECK(exists(c.s / "run.confirm2.pickle"));
    CHECK(exists(c.s / "run.confirm2.stats.json"));
    const std::vector<std::string> answer = c.answer();
    REQUIRE(answer.size() == 3);
    CHECK(has(answer[1], "(chosen by the tuning of run 1's recording)"));
    CHECK(answer[2] == "ran without an OOM: use PYTORCH_CUDA_ALLOC_CONF=" + second.outcome.setting + " (confirmed by real run 2)");
    // Which run is going, and how long the last took, before each.
    const std::string err = slurp(c.s / "stderr");
    CHECK(has(unwrapped(err), "gpumem: --confirm: run 1 of at most 3 (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, rank 1 of the trace's tuning); recorded in " +
                       (c.s / "run.confirm1.pickle")));
    CHECK(has(unwrapped(err), "gpumem: --confirm: run 2 of at most 3 (PYTORCH_CUDA_ALLOC_CONF=" + second.outcome.setting + ", rank " +
                       std::to_string(second.rank) + " of the tuning of run 1's recording), the last took "));
    CHECK(has(unwrapped(err), "gpumem: --confirm: tuning run 1's recording (" + (c.s / "run.confirm1.pickle") + ") under the cap "));
}

TEST_CASE("confirm: K runs spent, each with an OOM: the nearest, and what would fit from the last recording") {
    ConfirmCase c;
    c.run(R"({"*": {"num_ooms": 2, "reserved_bytes.all.peak": 1073741824}})");
    const cli::ConfirmResults& confirm = *c.r.confirm;
    REQUIRE(confirm.runs.size() == 2);
    CHECK_FALSE(confirm.converged);
    CHECK(confirm.stop == ConfirmStop::runs_spent);
    CHECK(confirm.tunings.size() == 2);  // the last run's recording too: it says what would fit
    CHECK(confirm.runs[1].outcome.chosen_by == 1);
    REQUIRE(confirm.cap);
    const std::string last = c.answer().back();
    CHECK(last.rfind("no setting of the grid avoided the OOM in 2 real runs; the nearest was PYTORCH_CUDA_ALLOC_CONF=", 0) == 0);
    CHECK(has(last, "against the cap 1 GiB"));
    // fragmentation_oom's best, expandable_segments:True, fits from 900 MiB.
    CHECK(has(last, "what would fit instead: a cap of 900 MiB with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
    CHECK(has(last, "by the tuning of run 2's recording"));
}

TEST_CASE("confirm: nothing left that the latest recording says could fit: the loop stops before K") {
    ConfirmCase c;
    c.q.confirm->candidates = 2;
    c.q.confirm->settings.capacity = 850ULL << 20;  // above the peak live (840 MiB), below every setting's peak reserved
    c.run(R"({"*": {"num_ooms": 2, "reserved_bytes.all.peak": 891289600}})");
    const cli::ConfirmResults& confirm = *c.r.confirm;
    REQUIRE(confirm.runs.size() == 1);
    CHECK(confirm.stop == ConfirmStop::nothing_left);
    REQUIRE(confirm.tunings.size() == 1);
    CHECK_FALSE(confirm.tunings[0].tune.rows.front().outcome.ooms == 0);
    const std::string last = c.answer().back();
    CHECK(has(last, "no setting of the grid avoided the OOM in 1 real run (no setting left untried that the tuning of run 1's recording says could fit)"));
    CHECK(has(last, "what would fit instead: a cap of 900 MiB"));
    CHECK_FALSE(exists(c.s / "run.confirm2.pickle"));
}

namespace {

// A Python of 3.12 or later, where the hook counts the OOMs the program saw
// (sys.monitoring); none here: that part of the test is skipped.
std::optional<std::string> python_with_monitoring() {
    for (const char* candidate : {"python3", "python3.12", "python3.13", "python3.14"})
        if (run_program("/usr/bin/env", {candidate, "-c", "import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)"}).status == 0)
            return std::string(candidate);
    return std::nullopt;
}

}  // namespace

TEST_CASE("confirm: OOMs the program saw against the allocator's; each kind said; an older Python's count unknown") {
    // The allocator counts 5 (most retried inside PyTorch: the stand-in raises none of them); the program raises and catches 2.
    const std::string stats = R"({"*": {"num_ooms": 5, "seen": 0, "reserved_bytes.all.peak": 943718400}})";
    {
        ConfirmCase c;  // python3 of this machine: judged by the allocator's count when it cannot count
        c.q.confirm->candidates = 1;
        c.q.confirm->command = {"python3", kProgram, "oom", "2"};
        c.run(stats);
        REQUIRE(c.r.confirm->runs.size() == 1);
        REQUIRE(c.r.confirm->runs[0].outcome.real);
        const json written = read_json(c.s / "run.confirm1.stats.json");
        REQUIRE(written.contains("program_ooms"));
        const std::optional<std::uint64_t> seen = c.r.confirm->runs[0].outcome.real->program_ooms;
        if (seen) {
            CHECK(*seen == 2);
            CHECK(written["program_ooms"] == 2);
        } else {
            CHECK(written["program_ooms"].is_null());
            CHECK(has(c.answer().front(), "allocator OOMs: 5 (the OOMs the program saw are not known"));
        }
        CHECK_FALSE(c.r.confirm->converged);
    }
    const std::optional<std::string> python = python_with_monitoring();
    if (!python) {
        MESSAGE("no Python 3.12 or later here: the count of OOMs the program saw is not tested");
        return;
    }
    ConfirmCase c;
    c.q.confirm->command = {*python, kProgram, "oom", "0"};
    c.run(stats);
    // 5 allocator OOMs, none seen by the program: it ran without an OOM.
    REQUIRE(c.r.confirm->runs.size() == 1);
    REQUIRE(c.r.confirm->runs[0].outcome.real);
    CHECK(c.r.confirm->runs[0].outcome.real->program_ooms == std::optional<std::uint64_t>(0));
    CHECK(c.r.confirm->converged);
    CHECK(has(c.answer().front(), "real: OOMs the program saw: 0; allocator OOMs: 5 (retried inside PyTorch"));
    ConfirmCase seen;
    seen.q.confirm->candidates = 1;
    seen.q.confirm->command = {*python, kProgram, "oom", "2"};
    seen.run(stats);
    REQUIRE(seen.r.confirm->runs[0].outcome.real);
    CHECK(seen.r.confirm->runs[0].outcome.real->program_ooms == std::optional<std::uint64_t>(2));  // each once, through two frames
    CHECK_FALSE(seen.r.confirm->converged);
    CHECK(has(seen.answer().front(), "real: OOMs the program saw: 2; allocator OOMs: 5 (3 retried inside PyTorch"));
}

TEST_CASE("confirm: Ctrl-C during run 2 keeps run 1, its figures, its recording and the answer so far") {
    ConfirmCase c;
    c.q.confirm->candidates = 3;
    // Run 1 (expandable_segments:True) ends with OOMs; run 2, under another setting, waits for the signal.
    c.q.confirm->command = {"python3", kProgram, "sleep_unless", "expandable_segments:True"};
    install_interrupt_handlers();
    const pthread_t main_thread = ::pthread_self();
    std::thread interrupter([&] {
        // The stand-in logs each CUDA initialization: the second is run 2's.
        for (int i = 0; i < 600; ++i) {
            const std::string log = slurp(c.s / "log");
            std::size_t inits = 0;
            for (std::size_t at = log.find("cuda init"); at != std::string::npos; at = log.find("cuda init", at + 1)) ++inits;
            if (inits >= 2) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ::pthread_kill(main_thread, SIGINT);
    });
    bool interrupted = false;
    try {
        c.run(R"({"expandable_segments:True": {"num_ooms": 2, "reserved_bytes.all.peak": 1073741824}, "*": {"num_ooms": 0}})");
    } catch (const InterruptedError&) {
        interrupted = true;
    }
    interrupter.join();
    request_interrupt_for_testing(0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    CHECK(interrupted);
    const cli::ConfirmResults& confirm = *c.r.confirm;
    REQUIRE(confirm.runs.size() == 2);
    CHECK(confirm.interrupted);
    CHECK(confirm.stop == ConfirmStop::interrupted);
    REQUIRE(confirm.runs[0].outcome.real);
    CHECK(confirm.runs[0].outcome.real->ooms == 2);
    CHECK(confirm.runs[1].outcome.note == "interrupted");
    CHECK(exists(c.s / "run.confirm1.pickle"));
    const std::vector<std::string> answer = c.answer();
    REQUIRE(answer.size() == 3);
    CHECK(answer[0].rfind("run 1: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", 0) == 0);
    CHECK(has(answer[0], "allocator OOMs: 2"));
    CHECK(answer[2] == "not confirmed: interrupted during run 2 of at most 3 real runs; none ran without an OOM");
}

TEST_CASE("confirm: of a program with several ranks, the rank the trace was recorded from is compared") {
    ConfirmCase c;
    // Two ranks at once, as torchrun starts them; rank 0 runs out of memory
    // under every setting, rank 1 fits as predicted.
    const std::string program = "python3 '" + std::string(kProgram) + "' alloc";
    c.q.confirm->command = {"sh", "-c", "RANK=0 WORLD_SIZE=2 " + program + " & RANK=1 WORLD_SIZE=2 " + program + "; wait"};
    const std::string stats = R"({"rank0": {"*": {"num_ooms": 2, "reserved_bytes.all.peak": 1073741824}},
        "rank1": {"*": {"num_ooms": 0, "reserved_bytes.all.peak": 943718400}}})";
    c.q.input.trace = c.s / "train.rank1.pickle";  // as --record names rank 1's file
    c.run(stats);
    REQUIRE(c.r.confirm->runs.size() == 1);
    CHECK(c.r.confirm->runs[0].process_rank == 1u);
    REQUIRE(c.r.confirm->runs[0].outcome.real);
    CHECK(c.r.confirm->runs[0].outcome.real->peak_reserved == 943718400);
    CHECK(c.r.confirm->runs[0].outcome.held);
    // A trace that names no rank answers for rank 0.
    c.q.input.trace = c.s / "train.pickle";
    c.r.confirm.reset();
    c.run(stats);
    REQUIRE_FALSE(c.r.confirm->runs.empty());
    CHECK(c.r.confirm->runs[0].process_rank == 0u);
    CHECK_FALSE(c.r.confirm->runs[0].outcome.held);
    // A rank the run did not have: no figures, and the note says why.
    c.q.input.trace = c.s / "train.rank5.pickle";
    c.r.confirm.reset();
    c.run(stats);
    REQUIRE_FALSE(c.r.confirm->runs.empty());
    CHECK_FALSE(c.r.confirm->runs[0].outcome.real);
    CHECK(has(c.r.confirm->runs[0].outcome.note, "rank 5"));
}

TEST_CASE("confirm: the user's own PYTORCH_CUDA_ALLOC_CONF keys are kept and stated; the grid's are replaced") {
    ConfirmCase c;
    c.run(R"({"backend:native,expandable_segments:True": {"num_ooms": 0}, "*": {"num_ooms": 5}})",
          "backend:native,expandable_segments:False");
    REQUIRE(c.r.confirm->runs.size() == 1);
    CHECK(c.r.confirm->runs[0].alloc_conf == "backend:native,expandable_segments:True");
    CHECK(c.r.confirm->runs[0].outcome.held);
    CHECK(c.r.confirm->merged.kept == std::vector<std::string>{"backend:native"});
    CHECK(c.r.confirm->merged.replaced == std::vector<std::string>{"expandable_segments:False"});
    CHECK(c.r.confirm->user_alloc_conf == "backend:native,expandable_segments:False");
}

TEST_CASE("confirm: the user's PYTORCH_ALLOC_CONF is read as torch reads it, and the run gets the setting under both names") {
    ConfirmCase c;
    // The stand-in (torch 2.11) reads PYTORCH_ALLOC_CONF: the figures of the merged setting come back only if gpumem set it.
    c.run(R"({"backend:native,expandable_segments:True": {"num_ooms": 0}, "*": {"num_ooms": 5}})", "backend:native,expandable_segments:False",
          "PYTORCH_ALLOC_CONF");
    REQUIRE(c.r.confirm->runs.size() == 1);
    CHECK(c.r.confirm->user_alloc_conf == "backend:native,expandable_segments:False");
    CHECK(c.r.confirm->user_alloc_conf_variable == "PYTORCH_ALLOC_CONF");
    CHECK(c.r.confirm->merged.kept == std::vector<std::string>{"backend:native"});
    CHECK(c.r.confirm->runs[0].alloc_conf == "backend:native,expandable_segments:True");
    CHECK(c.r.confirm->runs[0].outcome.held);
    // An older torch (known from the recording's statistics) reads the old name only.
    c.r.confirm.reset();
    c.q.input.recording = cli::RecordingStats{"run.stats.json", std::string("2.8.0"), std::nullopt, std::nullopt, {}, std::nullopt, false, {}, {}, {}};
    ::setenv("PYTORCH_ALLOC_CONF", "expandable_segments:False", 1);
    c.run(R"({"*": {"num_ooms": 0}})", "backend:native", "PYTORCH_CUDA_ALLOC_CONF");
    CHECK(c.r.confirm->user_alloc_conf == "backend:native");
    CHECK(c.r.confirm->user_alloc_conf_variable == "PYTORCH_CUDA_ALLOC_CONF");
}

TEST_CASE("confirm: of a parent and its child (no launcher), the process the trace was recorded from is compared") {
    ConfirmCase c;
    c.q.confirm->command = {"python3", kSpawn};
    const std::string stats = R"({"rolechild": {"*": {"num_ooms": 0, "reserved_bytes.all.peak": 943718400}},
        "*": {"num_ooms": 2, "reserved_bytes.all.peak": 1073741824}})";
    c.q.input.trace = c.s / "run.proc2.pickle";  // as --record names the second process's file
    c.run(stats);
    REQUIRE(c.r.confirm->runs.size() == 1);
    const cli::ConfirmRun& child = c.r.confirm->runs[0];
    CHECK(child.process_order == 2u);
    CHECK(child.process_pid.value_or(0) > 0);
    REQUIRE(child.outcome.real);
    CHECK(child.outcome.real->peak_reserved == 943718400);
    CHECK(child.outcome.held);
    // The plain name: the parent, the first to use CUDA.
    c.q.input.trace = c.s / "run.pickle";
    c.r.confirm.reset();
    c.run(stats);
    REQUIRE_FALSE(c.r.confirm->runs.empty());
    CHECK(c.r.confirm->runs[0].process_order == 1u);
    CHECK_FALSE(c.r.confirm->runs[0].outcome.held);
    // A process the run did not have.
    c.q.input.trace = c.s / "run.proc3.pickle";
    c.r.confirm.reset();
    c.run(stats);
    REQUIRE_FALSE(c.r.confirm->runs.empty());
    CHECK_FALSE(c.r.confirm->runs[0].outcome.real);
    CHECK(has(c.r.confirm->runs[0].outcome.note, "process 3"));
}

TEST_CASE("record: FILE and its statistics are new or regular files, never a device, FIFO, folder, /proc or the program's own") {
    const Scratch s;
    const std::vector<std::string> env = standin_env(s);
    auto refused = [&](const std::vector<std::string>& args, const std::string& named) {
        CAPTURE(args);
        const RunResult r = run_gpumem(args, env);
        CHECK(r.status == 2);
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, named));
        CHECK_FALSE(exists(s / "log"));  // the stand-in torch logs every run: the program never started
    };
    // Root's rename turned /dev/null into a regular file. The device node
    // tried is a copy of /dev/null made here, so that a binary with the old
    // fault, run as root, breaks nothing of the machine's; a user who may
    // not make one tries /dev/null itself, which it cannot replace anyway.
    std::string device = s / "null";
    if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
        REQUIRE(::geteuid() != 0);
        device = "/dev/null";
    }
    refused({"reuse-sim", "record", "-o", device, "--", "python3", kProgram, "alloc"}, device + ": a character device");
    struct stat device_st {};
    REQUIRE(::stat(device.c_str(), &device_st) == 0);
    CHECK(S_ISCHR(device_st.st_mode));
    REQUIRE(::mkfifo((s / "fifo.pickle").c_str(), 0600) == 0);
    refused({"reuse-sim", "record", "-o", s / "fifo.pickle", "--", "python3", kProgram, "alloc"}, "a FIFO");
    // The statistics' name a folder: refused before the run, not "no snapshot written" after it.
    REQUIRE(::mkdir((s / "run.stats.json").c_str(), 0700) == 0);
    refused({"reuse-sim", "record", "-o", s / "run.pickle", "--", "python3", kProgram, "alloc"}, "run.stats.json: a directory");
    // The program's own script, or a file given to it, is never replaced.
    const std::string script = s / "prog.py";
    REQUIRE(std::system(("cp '" + kProgram + "' '" + script + "'").c_str()) == 0);
    refused({"reuse-sim", "record", "-o", script, "--", "python3", script, "alloc"}, "the program's own file");
    CHECK(slurp(script) == slurp(kProgram));
    std::ofstream(s / "data.bin") << "data";
    refused({"reuse-sim", "record", "-o", s / "data.bin", "--", "python3", kProgram, "alloc", "--input=" + (s / "data.bin")},
            "the program's own file");
    CHECK(slurp(s / "data.bin") == "data");
    // /proc takes no new file: refused before the program runs, not after.
    refused({"reuse-sim", "record", "-o", "/proc/gpumem-record.pickle", "--", "python3", kProgram, "alloc"}, "/proc");
    // A regular file is replaced, as before.
    std::ofstream(s / "old.pickle") << "old";
    const RunResult ok = run_gpumem({"reuse-sim", "record", "-o", s / "old.pickle", "--", "python3", kProgram, "alloc"}, env);
    CHECK(ok.status == 0);
    CHECK(slurp(s / "old.pickle") != "old");
}

TEST_CASE("confirm: each run's recording is new or replaces a regular file, beside the trace or, for standard input, here") {
    const Scratch s;
    const std::string trace = s / "run.pickle";
    REQUIRE(std::system(("cp '" + kSnapshot + "' '" + trace + "'").c_str()) == 0);
    const std::vector<std::string> env = standin_env(s);
    const auto confirm = [&](const std::string& input) {
        return run_gpumem({"reuse-sim", "tune", "--trace", input, "--capacity", "1GiB", "--confirm", "--max-runs", "3", "--json", "--", "python3",
                           kProgram, "alloc"},
                          env);
    };
    // Run 2's statistics would go where a folder is: refused before anything runs.
    REQUIRE(::mkdir((s / "run.confirm2.stats.json").c_str(), 0700) == 0);
    const RunResult folder = confirm(trace);
    CHECK(folder.status == 2);
    CHECK(folder.stderr_lines() == 1);
    CHECK(has(folder.err, "--confirm " + (s / "run.confirm2.stats.json") + ": a directory; --confirm writes a new file or replaces a regular one"));
    CHECK(json::parse(folder.out)["error"]["status"] == 2);
    CHECK_FALSE(exists(s / "log"));
    ::rmdir((s / "run.confirm2.stats.json").c_str());
    REQUIRE(::mkfifo((s / "run.confirm3.pickle").c_str(), 0600) == 0);
    CHECK(confirm(trace).status == 2);
    ::unlink((s / "run.confirm3.pickle").c_str());
    // A regular file is replaced: past the check (no GPU here: exit 3).
    std::ofstream(s / "run.confirm1.pickle") << "old";
    std::vector<std::string> no_gpu = env;
    no_gpu.emplace_back("CUDA_VISIBLE_DEVICES=");
    CHECK(run_gpumem({"reuse-sim", "tune", "--trace", trace, "--capacity", "1GiB", "--confirm", "--max-runs", "3", "--", "python3", kProgram, "alloc"},
                     no_gpu)
              .status == 3);
    // Standard input's runs go in the current directory, as reuse-sim.confirmN.pickle.
    const std::string here = run_program("/bin/pwd", {}).out;
    REQUIRE(::chdir(s.path.c_str()) == 0);
    REQUIRE(::mkdir("reuse-sim.confirm1.pickle", 0700) == 0);
    const RunResult stdin_run = run_program("/bin/sh", {"-c", "'" + gpumem_binary() + "' reuse-sim tune --trace - --capacity 1GiB --confirm -- python3 '" +
                                                                 kProgram + "' alloc < '" + trace + "'"});
    REQUIRE(::chdir(here.substr(0, here.find('\n')).c_str()) == 0);
    CHECK(stdin_run.status == 2);
    CHECK(has(stdin_run.err, "--confirm reuse-sim.confirm1.pickle: a directory"));
}

TEST_CASE("record: the replay's options are unknown to reuse-sim record, each named with the jobs that take it") {
    const Scratch s;
    for (const std::vector<std::string>& given : std::vector<std::vector<std::string>>{
             {"--steps", "10"}, {"--seed", "3"}, {"--trace-format", "rmm"}, {"--trace-device", "0"},
             {"--timeline-points", "50"}, {"--strategy", "pool"}, {"--max-split-size", "1MiB"}}) {
        std::vector<std::string> args = {"reuse-sim", "record", "-o", s / "run.pickle"};
        args.insert(args.end(), given.begin(), given.end());
        args.insert(args.end(), {"--", "python3", kProgram, "alloc"});
        CAPTURE(args);
        const RunResult r = run_gpumem(args, standin_env(s));
        CHECK(r.status == 2);
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, "unknown option '" + given.front() + "' for reuse-sim record: it is an option of reuse-sim replay"));
        CHECK_FALSE(exists(s / "run.pickle"));
    }
}

TEST_CASE("record: one line with the true reason: a program that cannot start, one killed by SIGKILL") {
    const Scratch s;
    const RunResult absent = run_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "/nonexistent/program"}, standin_env(s));
    CHECK(absent.status == 127);
    CHECK(absent.stderr_lines() == 1);
    CHECK(has(absent.err, "cannot run /nonexistent/program: No such file or directory"));
    // A Python program killed by SIGKILL is not "not Python".
    Started run = start_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "python3", kProgram, "sleep"}, standin_env(s), true);
    REQUIRE(run.read_line(20) == "ready");
    CHECK(std::system(("pkill -KILL -P " + std::to_string(run.pid())).c_str()) == 0);
    CHECK(run.wait_within(20) == 128 + SIGKILL);
    const RunResult killed = run.wait();
    CHECK(gpumem_lines(killed.err) == 1);  // wrapped within 100 columns
    CHECK(has(unwrapped(killed.err), "killed by signal 9"));
    CHECK_FALSE(has(killed.err, "not Python"));
}

TEST_CASE("record: a snapshot and its statistics are written together or not at all, and no temporary is left") {
    const Scratch s;
    // The statistics cannot be written (their name becomes a folder while the program runs).
    const std::string stats = s / "run.stats.json";
    Started run = start_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "python3", kProgram, "sleep"}, standin_env(s), true);
    REQUIRE(run.read_line(20) == "ready");
    REQUIRE(::mkdir(stats.c_str(), 0700) == 0);
    run.signal(SIGTERM);
    run.wait_within(20);
    const RunResult r = run.wait();
    INFO(r.err);
    CHECK(has(r.err, "no snapshot written"));
    CHECK_FALSE(exists(s / "run.pickle"));  // the message is true: nothing was written
    const std::string listing = run_program("/bin/ls", {"-a", s.path}).out;
    CHECK_FALSE(has(listing, ".tmp-"));
}

TEST_CASE("record: the program's _set_allocator_settings is recorded at its place in the history, and replayed from there") {
    const Scratch s;
    const RunResult r = record(s, {"settings", "expandable_segments:True"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(slurp(s / "log"), "set_allocator_settings expandable_segments:True"));  // done as the program asked
    const json stats = read_json(s / "run.stats.json");
    CHECK(stats["schema_version"] == 3);
    REQUIRE(stats["allocator"]["allocator_calls"].size() == 1);
    const json& call = stats["allocator"]["allocator_calls"][0];
    CHECK(call["call"] == "set_allocator_settings");
    CHECK(call["settings"] == "expandable_segments:True");
    CHECK(call["position"] == 2);  // after the first tensor's alloc and free
    const json replay = replay_json(s / "run.pickle");
    REQUIRE(replay["allocator_settings"]["changes"].size() == 1);
    CHECK(replay["allocator_settings"]["changes"][0]["event"] == 3);
    CHECK(replay["allocator_settings"]["expandable_segments"] == false);  // as the process started
}

TEST_CASE("record: each CUDA graph capture is recorded with its pool, though the graph names its pool only after the capture") {
    // torch 2.11's CUDAGraph.pool() raises until a capture has ended: the
    // hook once asked at capture_begin, lost every capture without a word,
    // and the replay then retried during a capture where PyTorch does not.
    const Scratch s;
    const RunResult r = run_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "python3", kDir + "/graph_program.py"}, standin_env(s));
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json stats = read_json(s / "run.stats.json");
    CHECK(stats["allocator"]["hook_errors"] == json::array());
    const json& calls = stats["allocator"]["allocator_calls"];
    REQUIRE(calls.size() == 6);
    // A capture without a pool makes (N, 0), N counting from 1; a capture
    // given another graph's pool shares it.
    const std::pair<const char*, json> expected[] = {
        {"capture_begin", json::array({1, 0})}, {"capture_end", json::array({1, 0})}, {"capture_begin", json::array({1, 0})},
        {"capture_end", json::array({1, 0})},   {"capture_begin", json::array({2, 0})}, {"capture_end", json::array({2, 0})},
    };
    for (std::size_t i = 0; i < calls.size(); ++i) {
        CAPTURE(i);
        CHECK(calls[i]["call"] == expected[i].first);
        CHECK(calls[i]["pool"] == expected[i].second);
    }
    CHECK(calls[0]["stream"] == 7);
}

TEST_CASE("replay: what the recording hook could not follow is named as the cause, not guessed") {
    const Scratch s;
    const RunResult r = run_gpumem({"reuse-sim", "record", "-o", s / "run.pickle", "--", "python3", kDir + "/graph_program.py"}, standin_env(s));
    REQUIRE(r.status == 0);
    // The statistics as a hook that failed at a wrapper writes them.
    json stats = read_json(s / "run.stats.json");
    stats["allocator"]["hook_errors"] = json::array({"capture_begin: the graph's pool: RuntimeError: no pool yet", "another"});
    std::ofstream(s / "run.stats.json") << stats.dump();
    const json replay = replay_json(s / "run.pickle");
    const std::string warnings = replay["warnings"].dump();
    CHECK(has(warnings, "the recording hook could not follow some of the program's allocator calls (capture_begin: the graph's pool: "
                        "RuntimeError: no pool yet; 1 more in the recording's hook_errors)"));
    CHECK_FALSE(has(warnings, "a cap the recording did not capture"));
}
