// `gpumem reuse-sim` from the command line: runs without a GPU or driver,
// one JSON document, exit statuses and one-line errors.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "tests_dir.hpp"

namespace {

struct TraceFile {
    std::string path;
    explicit TraceFile(const std::string& text, const std::string& suffix = ".csv") {
        char name[] = "/tmp/gpumem-cli-trace-XXXXXX";
        const int fd = mkstemp(name);
        close(fd);
        path = std::string(name) + suffix;
        std::rename(name, path.c_str());
        std::ofstream(path) << text;
    }
    ~TraceFile() { std::remove(path.c_str()); }
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Text without its spaces and newlines: a setting wrapped in a record, read back.
std::string without_spaces(std::string text) {
    text.erase(std::remove_if(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\n'; }), text.end());
    return text;
}

// Prose wrapped at words (within the terminal, or 100 columns in a pipe), read as one line.
std::string flat(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\n') {
            out += text[i];
            continue;
        }
        out += ' ';  // a wrapped line's indent goes with its newline
        while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
    }
    return out;
}

constexpr const char* kTrace = "action,id,size,stream,tag\nalloc,1,4096,0,a\nalloc,2,8192,0,b\nfree,1,,,\nfree,2,,,\n";

// A FIFO in a temporary folder, removed with it.
struct Fifo {
    std::string dir, path;
    Fifo() {
        char tmpl[] = "/tmp/gpumem-fifo-XXXXXX";
        dir = mkdtemp(tmpl);
        path = dir + "/trace.fifo";
        if (mkfifo(path.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
    }
    ~Fifo() {
        unlink(path.c_str());
        rmdir(dir.c_str());
    }
};

// Writes `text` into the FIFO after `delay` seconds, from a thread: the
// writer comes late. It gives up after `patience` seconds without a reader
// (a non-blocking open fails with ENXIO until one comes), so a test whose
// gpumem never opens the FIFO still ends.
class LateWriter {
public:
    LateWriter(const std::string& path, std::string text, double delay, double patience = 10)
        : thread_([path, text = std::move(text), delay, patience, this] {
              std::this_thread::sleep_for(std::chrono::duration<double>(delay));
              const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(patience);
              int fd = -1;
              while ((fd = open(path.c_str(), O_WRONLY | O_NONBLOCK)) < 0 && errno == ENXIO && std::chrono::steady_clock::now() < deadline)
                  std::this_thread::sleep_for(std::chrono::milliseconds(10));
              if (fd < 0) return;
              fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
              written_ = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
              close(fd);
          }) {}
    ~LateWriter() {
        if (thread_.joinable()) thread_.join();
    }
    bool written() {
        if (thread_.joinable()) thread_.join();
        return written_;
    }

private:
    bool written_ = false;
    std::thread thread_;
};

}  // namespace

TEST_CASE("cli reuse-sim: no arguments compares every strategy, without a GPU") {
    // No device is visible: plain reuse-sim must not need one.
    const auto r = run_gpumem({"reuse-sim", "replay"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    for (const char* name : {"naive", "grow-only", "shape-persistent", "ring", "pool", "binning", "torch-caching", "async-pool"})
        CHECK(has(r.out, name));
    CHECK(has(r.out, "*"));  // best values marked
    CHECK(has(r.out, "Reserved bytes over events"));
}

TEST_CASE("cli reuse-sim: --json is one document with numbers as numbers") {
    const auto r = run_gpumem({"reuse-sim", "replay", "--json", "--workload", "training", "--steps", "5", "--no-chart"});
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["command"] == "reuse-sim replay");
    CHECK(doc["ok"] == true);
    REQUIRE(doc["strategies"].size() == 8);
    for (const auto& row : doc["strategies"]) {
        CHECK(row["requests"].is_number_unsigned());
        CHECK(row["peak_reserved"].is_number_unsigned());
        CHECK(row["hit_rate"].is_number());
    }
    CHECK(doc["events"].get<std::uint64_t>() > 0);
    CHECK(doc["details"]["torch-caching"].contains("num_device_alloc"));
}

TEST_CASE("cli reuse-sim: a trace file, --csv and --timeline") {
    TraceFile trace("action,id,size,stream,tag\nalloc,1,4096,0,a\nalloc,2,8192,0,b\nfree,1,,,\nfree,2,,,\nalloc,3,4096,0,a\nfree,3,,,\n");
    TraceFile timeline("", ".timeline.csv");
    const auto r = run_gpumem({"reuse-sim", "replay", "--trace", trace.path, "--strategy", "naive,grow-only", "--csv", "--timeline", timeline.path});
    REQUIRE(r.status == 0);
    CHECK(r.out.rfind("strategy,requests,upstream_allocs,", 0) == 0);
    CHECK(has(r.out, "\nnaive,3,3,3,"));
    CHECK(has(r.out, "\ngrow-only,3,2,0,"));
    std::ifstream in(timeline.path);
    std::string header;
    std::getline(in, header);
    CHECK(header == "event,live_bytes,naive,grow-only");
}

TEST_CASE("cli reuse-sim: a malformed trace exits 2 with one line on stderr naming file and line") {
    TraceFile trace("action,id,size,stream,tag\nalloc,1,4096,0,\nalloc,2,lots,0,\n");
    const auto r = run_gpumem({"reuse-sim", "replay", "--trace", trace.path});
    CHECK(r.status == 2);
    CHECK(r.stderr_lines() == 1);
    CHECK(has(r.err, trace.path + ":3: size"));
    CHECK(r.out.empty());
    const auto j = run_gpumem({"reuse-sim", "replay", "--trace", trace.path, "--json"});
    CHECK(j.status == 2);
    const auto doc = nlohmann::json::parse(j.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"] == "usage_error");
}

TEST_CASE("cli reuse-sim: usage errors") {
    CHECK(run_gpumem({"reuse-sim", "replay", "--strategy", "nope"}).status == 2);
    CHECK(run_gpumem({"reuse-sim", "replay", "--trace", "/nonexistent.csv"}).status == 2);
    CHECK(run_gpumem({"reuse-sim", "replay", "--trace", "x.csv", "--workload", "training"}).status == 2);
    CHECK(run_gpumem({"reuse-sim", "replay", "--capacity", "lots"}).status == 2);
    CHECK(run_gpumem({"reuse-sim", "replay", "--max-split-size", "1MiB"}).status == 2);  // PyTorch needs >= 20 MiB
    const auto d = run_gpumem({"reuse-sim", "replay", "-d", "0"});
    CHECK(d.status == 2);  // -d only means something with --execute
    CHECK(d.stderr_lines() == 1);
    TraceFile costs("{\"kind\": \"gpumem-cost-table\"}", ".json");
    const auto c = run_gpumem({"reuse-sim", "replay", "--costs", costs.path});
    CHECK(c.status == 2);
    CHECK(has(c.err, costs.path));
}

TEST_CASE("cli reuse-sim: --capacity makes strategies run out of memory, not the command") {
    const auto r = run_gpumem({"reuse-sim", "replay", "--json", "--capacity", "64MiB", "--workload", "training", "--steps", "3", "--no-chart"});
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    std::uint64_t ooms = 0;
    for (const auto& row : doc["strategies"]) ooms += row["ooms"].get<std::uint64_t>();
    CHECK(ooms > 0);
}

TEST_CASE("cli reuse-sim: --execute without a usable GPU exits 3") {
    const auto r = run_gpumem({"reuse-sim", "replay", "--execute", "--strategy", "naive", "--steps", "2"}, {"CUDA_VISIBLE_DEVICES="});
    CHECK(r.status == 3);
    CHECK(r.stderr_lines() == 1);
}

TEST_CASE("cli reuse-sim: a FIFO fed late is read once, with every strategy (ring's first pass included)") {
    Fifo fifo;
    LateWriter writer(fifo.path, kTrace, 0.3);
    Started run = start_gpumem({"reuse-sim", "replay", "--trace", fifo.path, "--json"});
    const int status = run.wait_within(20);
    CHECK(writer.written());
    CHECK(status == 0);
    const RunResult r = run.wait();
    INFO(r.err);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["events"] == 4);
    CHECK(doc["input"]["format"] == "gpumem");  // detected from the header it read once
    CHECK(doc["options"]["ring_size"] == 8192);  // the first pass read the copy
    CHECK(doc["strategies"].size() == 8);
}

TEST_CASE("cli reuse-sim: a FIFO with --save-trace and a strategy that needs no first pass") {
    Fifo fifo;
    TraceFile saved("", ".saved.csv");
    LateWriter writer(fifo.path, kTrace, 0.2);
    Started run = start_gpumem({"reuse-sim", "replay", "--trace", fifo.path, "--strategy", "naive,pool", "--save-trace", saved.path, "--csv"});
    CHECK(run.wait_within(20) == 0);
    CHECK(writer.written());
    std::ifstream in(saved.path);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(has(all, "alloc,2,8192,0,b\n"));
}

TEST_CASE("cli reuse-sim: standard input fed late, the format found by its header") {
    TraceFile trace(kTrace);
    const RunResult r = run_program("/bin/sh", {"-c", "(sleep 0.3; cat '" + trace.path + "') | \"$0\" reuse-sim replay --trace - --json", gpumem_binary()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["events"] == 4);
    CHECK(doc["input"]["description"] == "<stdin> (gpumem CSV)");
    CHECK(doc["options"]["ring_size"] == 8192);
}

TEST_CASE("cli reuse-sim: Ctrl-C while waiting for a FIFO's writer exits 130") {
    Fifo fifo;
    Started run = start_gpumem({"reuse-sim", "replay", "--trace", fifo.path});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    REQUIRE(run.running());  // blocked in open(), waiting for a writer
    run.signal(SIGINT);
    CHECK(run.wait_within(10) == 130);
    const RunResult r = run.wait();
    CHECK(r.stderr_lines() == 1);
    CHECK(has(r.err, "interrupted"));
    CHECK(r.out.empty());
}

TEST_CASE("cli reuse-sim: Ctrl-C while a FIFO's writer has not finished exits 130") {
    Fifo fifo;
    Started run = start_gpumem({"reuse-sim", "replay", "--trace", fifo.path, "--strategy", "naive"});
    const int fd = open(fifo.path.c_str(), O_WRONLY);  // gpumem has opened it: the header, then nothing more
    REQUIRE(fd >= 0);
    CHECK(write(fd, "action,id,size,stream,tag\n", 26) == 26);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    run.signal(SIGINT);
    CHECK(run.wait_within(10) == 130);
    close(fd);
}

TEST_CASE("cli reuse-sim: Ctrl-C stops --tune's replays on every thread and exits 130") {
    // 86 M events: seconds of reading into memory even on the 16 cores of
    // the GPU machine (100000 steps ended within 1.5 s there), then the
    // lanes on every core. Interrupted early, it holds well under 1 GB.
    for (const int after_ms : {200, 1500}) {
        CAPTURE(after_ms);
        Started run = start_gpumem({"reuse-sim", "tune", "--workload", "dynamic", "--steps", "1000000", "--capacity", "1GiB"});
        std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
        REQUIRE(run.running());
        run.signal(SIGINT);
        CHECK(run.wait_within(10) == 130);
        const RunResult r = run.wait();
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, "interrupted"));
        CHECK(r.out.empty());
    }
}

TEST_CASE("cli reuse-sim: output files are checked before the simulation starts") {
    // A simulation of hours: the bad path must end the run at once.
    for (const char* option : {"--timeline", "--save-trace"}) {
        CAPTURE(option);
        Started run = start_gpumem({"reuse-sim", "replay", "--steps", "100000000", option, "/nonexistent/dir/t.csv"});
        CHECK(run.wait_within(10) == 2);
        const RunResult r = run.wait();
        CHECK(r.stderr_lines() == 1);
        CHECK(has(r.err, "/nonexistent/dir/t.csv"));
        // --timeline names itself and gives the system's reason.
        if (std::string(option) == "--timeline") CHECK(has(r.err, "--timeline '/nonexistent/dir/t.csv': No such file or directory"));
    }
}

// A pickle that would run code (os.system, the way a hostile snapshot does
// it) is refused, in either format detection, and the command never runs.
TEST_CASE("reuse-sim: a snapshot that would run code is refused, not run") {
    char dir_name[] = "/tmp/gpumem-hostile-XXXXXX";
    const std::string dir = mkdtemp(dir_name);
    const std::string marker = dir + "/ran";
    // pickle.dumps of an object whose __reduce__ returns (os.system, ("touch MARKER",)), protocol 2 and 0.
    const std::string command = "touch " + marker;
    std::string binary = std::string("\x80\x02") + "cposix\nsystem\n" + std::string("q\0X", 3);
    const std::uint32_t n = static_cast<std::uint32_t>(command.size());
    binary += std::string{static_cast<char>(n & 0xff), static_cast<char>(n >> 8), '\0', '\0'} + command + "q\x01\x85q\x02Rq\x03.";
    const TraceFile hostile(binary, ".pickle");
    const TraceFile text("cposix\nsystem\np0\n(V" + command + "\np1\ntp2\nRp3\n.", ".pickle");
    for (const auto& args : {std::vector<std::string>{"reuse-sim", "replay", "--trace", hostile.path},
                             std::vector<std::string>{"reuse-sim", "replay", "--trace", text.path, "--trace-format", "snapshot"}}) {
        const RunResult r = run_gpumem(args);
        CAPTURE(r.err);
        CHECK(r.status == 2);
        // Protocol 0 is refused by its first bytes, before the unpickler.
        CHECK((has(r.err, "refusing opcode GLOBAL (0x63): it would import or call code") ||
               (args.back() == "snapshot" && has(r.err, "not a PyTorch snapshot: a pickle of protocol 2 to 5"))));
        CHECK(r.out.empty());
    }
    CHECK(access(marker.c_str(), F_OK) != 0);
    rmdir(dir.c_str());
}

TEST_CASE("reuse-sim: a snapshot's allocator settings apply, flags override them, --memory-fraction sets the capacity") {
    const std::string snapshot = tests_dir() + "/fixtures/snapshots/small_p4.pickle";
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--trace", snapshot, "--strategy", "torch-caching", "--json"});
    REQUIRE(r.status == 0);
    const nlohmann::json d = nlohmann::json::parse(r.out);
    CHECK(d["input"]["format"] == "snapshot");
    CHECK(d["options"]["max_split_size"] == 64ULL << 20);
    CHECK(d["options"]["roundup_power2_divisions"][0] == 4);
    CHECK(d["allocator_settings"]["max_split_size"] == 64ULL << 20);
    CHECK(d["allocator_settings"]["overridden"].empty());
    CHECK(d["recorded"]["device_allocs"] == 3);
    CHECK(d["recorded"]["device_frees"] == 2);
    CHECK(d["recorded"]["ooms"] == 1);
    CHECK(d["empty_cache_points"] == 1);
    CHECK(d["oom_events"] == 1);
    const RunResult o = run_gpumem({"reuse-sim", "replay", "--trace", snapshot, "--strategy", "torch-caching", "--json", "--max-split-size", "128MiB",
                                    "--memory-fraction", "0.5", "--device-total", "1GiB"});
    REQUIRE(o.status == 0);
    const nlohmann::json od = nlohmann::json::parse(o.out);
    CHECK(od["options"]["max_split_size"] == 128ULL << 20);
    CHECK(od["options"]["roundup_power2_divisions"][0] == 4);
    CHECK(od["allocator_settings"]["overridden"] == nlohmann::json::array({"max_split_size"}));
    CHECK(od["capacity_bytes"] == 512ULL << 20);
    // Text mode prints the settings under the head line.
    const RunResult t = run_gpumem({"reuse-sim", "replay", "--trace", snapshot, "--strategy", "naive", "--no-chart"});
    CHECK(has(t.out, "allocator settings of the snapshot: max_split_size 64 MiB"));
    // A CSV trace has neither.
    const TraceFile csv(kTrace);
    const nlohmann::json c = nlohmann::json::parse(run_gpumem({"reuse-sim", "replay", "--trace", csv.path, "--json"}).out);
    CHECK(c["allocator_settings"].is_null());
    CHECK(c["recorded"].is_null());
}

namespace {

std::string fixture(const std::string& name) {
    return tests_dir() + "/fixtures/" + name;
}

}  // namespace

TEST_CASE("cli reuse-sim tune: a recorded workload under a cap that bites, ranked, answered, the smallest capacity searched") {
    const RunResult r =
        run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/memory_fraction.pickle"), "--capacity", "600MiB", "--json"});
    REQUIRE(r.status == 0);
    const nlohmann::json d = nlohmann::json::parse(r.out);
    CHECK_FALSE(d.contains("strategies"));
    const nlohmann::json& rows = d["settings"];
    REQUIRE(rows.size() == 36);  // --tune's grid under a cap; the defaults are one of its points
    CHECK(d["tune"]["grid_points"] == 36);
    int recorded = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CHECK(rows[i]["rank"] == i + 1);
        recorded += rows[i]["recorded"].get<bool>();
        if (i > 0 && rows[i - 1]["ooms"] == 0) CHECK((rows[i]["ooms"] > 0 || rows[i]["peak_reserved"] >= rows[i - 1]["peak_reserved"]));
        CHECK(rows[i]["first_oom_event"].is_null() == (rows[i]["ooms"] == 0));
    }
    CHECK(recorded == 1);
    // The recorded setting's lane is the comparison's torch-caching row, figure for figure.
    const RunResult plain = run_gpumem(
        {"reuse-sim", "replay", "--trace", fixture("torch/memory_fraction.pickle"), "--strategy", "torch-caching", "--capacity", "600MiB", "--json"});
    REQUIRE(plain.status == 0);
    const nlohmann::json torch = nlohmann::json::parse(plain.out)["strategies"][0];
    for (const nlohmann::json& row : rows) {
        if (row["recorded"] != true) continue;
        for (const char* key : {"peak_reserved", "ooms", "retries", "upstream_allocs", "upstream_frees"}) CHECK(row[key] == torch[key]);
    }
    const nlohmann::json& t = d["tune"];
    CHECK(t["recorded_fits"] == false);  // 6 OOMs at 600 MiB
    REQUIRE(t["recorded_first_oom_event"].is_number());
    REQUIRE(t["smallest_capacity_bytes"].is_number());
    CHECK(t["smallest_capacity_bytes"] >= d["peak_live_bytes"]);
    CHECK(t["capacity_search_replays"] > 0);
    CHECK(has(t["answer"].get<std::string>(), "as recorded it fails at event " + t["recorded_first_oom_event"].dump()));
    const RunResult text = run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/memory_fraction.pickle"), "--capacity", "600MiB"});
    REQUIRE(text.status == 0);
    CHECK(has(text.out, "PYTORCH_CUDA_ALLOC_CONF"));
    CHECK(has(text.out, "recorded: (PyTorch's defaults)"));
    CHECK(has(flat(text.out), "the smallest capacity the best setting fits in is about"));
    // --memory-fraction is a cap too: the GC threshold joins the grid; without a cap it does not.
    const RunResult fraction = run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/memory_fraction.pickle"), "--memory-fraction",
                                           "0.5", "--device-total", "1300MiB", "--json"});
    REQUIRE(fraction.status == 0);
    const nlohmann::json fd = nlohmann::json::parse(fraction.out);
    CHECK(fd["capacity_bytes"] == 650ULL << 20);
    CHECK(fd["tune"]["grid_points"] == 36);
    const RunResult uncapped = run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/memory_fraction.pickle"), "--json"});
    REQUIRE(uncapped.status == 0);
    CHECK(nlohmann::json::parse(uncapped.out)["tune"]["grid_points"] == 18);
}

TEST_CASE("cli reuse-sim tune: a recording without an OOM says the cap each of the top 3 settings needs; one with OOMs does not") {
    const RunResult r = run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/cnn_inference.pickle"), "--json"});
    REQUIRE(r.status == 0);
    const nlohmann::json d = nlohmann::json::parse(r.out);
    const nlohmann::json& fits = d["tune"]["fit_capacities"];
    REQUIRE(fits.size() == 3);
    CHECK(fits[0]["rank"] == 1);
    CHECK(fits[0]["smallest_capacity_bytes"] == d["tune"]["smallest_capacity_bytes"]);
    for (std::size_t i = 0; i < fits.size(); ++i) {
        CAPTURE(i);
        REQUIRE(fits[i]["smallest_capacity_bytes"].is_number());
        CHECK(fits[i]["smallest_capacity_bytes"] >= d["peak_live_bytes"]);
        const nlohmann::json& row = d["settings"][fits[i]["rank"].get<std::size_t>() - 1];
        CHECK(row["alloc_conf"] == fits[i]["alloc_conf"]);
        if (i > 0) CHECK(row["peak_reserved"] != d["settings"][fits[i - 1]["rank"].get<std::size_t>() - 1]["peak_reserved"]);
    }
    const RunResult text = run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/cnn_inference.pickle")});
    CHECK(has(flat(text.out), "The recording has no OOM; the smallest cap each of the top settings runs in without one: "));
    const RunResult ooms = run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/fragmentation_oom.pickle"), "--json"});
    REQUIRE(ooms.status == 0);
    CHECK(nlohmann::json::parse(ooms.out)["tune"]["fit_capacities"].empty());
}

TEST_CASE("cli reuse-sim tune --sweep: a snapshot's own setting is the recorded row; a FIFO is read once and spooled for the search") {
    const RunResult r = run_gpumem({"reuse-sim", "tune", "--trace", fixture("snapshots/small_p4.pickle"), "--sweep", "max_split_size=none,64",
                                    "--sweep", "roundup_power2_divisions=none,4", "--json"});
    REQUIRE(r.status == 0);
    const nlohmann::json d = nlohmann::json::parse(r.out);
    REQUIRE(d["settings"].size() == 5);  // the recorded divisions (4 below 2 MiB only) are not in the grid: added
    CHECK(d["tune"]["grid_points"] == 5);
    int recorded = 0;
    for (const nlohmann::json& row : d["settings"])
        if (row["recorded"] == true) {
            ++recorded;
            CHECK(row["alloc_conf"] == "max_split_size_mb:64,roundup_power2_divisions:[1:4,2:0,>:0]");
        }
    CHECK(recorded == 1);
    const RunResult text = run_gpumem({"reuse-sim", "tune", "--trace", fixture("snapshots/small_p4.pickle"), "--sweep", "expandable_segments=true"});
    CHECK(has(text.out, "recorded: max_split_size_mb:64"));
    const Fifo fifo;
    LateWriter writer(fifo.path, kTrace, 0.2);
    const RunResult f = run_gpumem({"reuse-sim", "tune", "--trace", fifo.path, "--sweep", "max_split_size=none,64", "--capacity", "1GiB", "--json"});
    CHECK(writer.written());
    REQUIRE(f.status == 0);
    const nlohmann::json fd = nlohmann::json::parse(f.out);
    CHECK(fd["settings"].size() == 2);
    CHECK(fd["tune"]["smallest_capacity_bytes"].is_number());
}

// Programs that caught their OOMs (tools/record_torch_workloads.py oom_*, on an
// H100 under a memory fraction), tuned under the cap they ran with: the
// answer says how many recorded OOMs the best setting turns into successes,
// and that the program's course after them is not in the recording.
TEST_CASE("cli reuse-sim tune on recorded OOMs: the requests each setting grants, and what the answer covers") {
    SUBCASE("oom_skip_batch: the best setting grants the one recorded OOM (the real rerun then failed later in the step)") {
        const RunResult r = run_gpumem(
            {"reuse-sim", "tune", "--trace", fixture("torch/oom_skip_batch.pickle"), "--capacity", "962592768", "--json"});
        REQUIRE(r.status == 0);
        const nlohmann::json d = nlohmann::json::parse(r.out);
        CHECK(d["oom_events"] == 1);
        for (const nlohmann::json& row : d["settings"]) {
            CAPTURE(row["alloc_conf"]);
            CHECK(row["granted_recorded_ooms"] <= 1);
            // No OOM: it granted the recorded one; the recorded setting grants none.
            if (row["ooms"] == 0) CHECK(row["granted_recorded_ooms"] == 1);
            if (row["recorded"] == true) CHECK(row["granted_recorded_ooms"] == 0);
        }
        const nlohmann::json& t = d["tune"];
        CHECK(t["best_fits"] == true);
        CHECK(t["recorded_fits"] == false);
        CHECK(t["recorded_oom_events"] == 1);
        CHECK(t["best_granted_recorded_ooms"] == 1);
        CHECK(t["best_changes_course"] == true);
        const std::string answer = t["answer"];
        CHECK(has(answer, "; the best setting grants the request that ran out of memory as recorded, after which the program "
                          "may ask for memory the recording never saw"));
        const RunResult text = run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/oom_skip_batch.pickle"), "--capacity", "962592768"});
        CHECK(has(flat(text.out), "the recording never saw"));
    }
    SUBCASE("oom_halve_batch: 10 OOMs as recorded; the best grants some of them and fails the others") {
        const RunResult r = run_gpumem(
            {"reuse-sim", "tune", "--trace", fixture("torch/oom_halve_batch.pickle"), "--capacity", "1356857344", "--json"});
        REQUIRE(r.status == 0);
        const nlohmann::json d = nlohmann::json::parse(r.out);
        const nlohmann::json& t = d["tune"];
        CHECK(t["recorded_oom_events"] == 10);
        CHECK(t["best_fits"] == false);
        const std::uint64_t granted = t["best_granted_recorded_ooms"];
        CHECK(granted > 0);
        CHECK(granted < 10);
        CHECK(d["settings"][0]["ooms"] >= 10 - granted);  // the recorded OOMs it refuses are OOMs of its own
        CHECK(has(t["answer"].get<std::string>(), "the best setting grants " + std::to_string(granted) + " of the 10 requests that ran out of memory as recorded"));
    }
    SUBCASE("no recorded OOM: nothing granted, nothing said") {
        const RunResult r =
            run_gpumem({"reuse-sim", "tune", "--trace", fixture("torch/memory_fraction.pickle"), "--capacity", "600MiB", "--json"});
        REQUIRE(r.status == 0);
        const nlohmann::json t = nlohmann::json::parse(r.out)["tune"];
        CHECK(t["recorded_oom_events"] == 0);
        CHECK(t["best_granted_recorded_ooms"] == 0);
        CHECK(t["best_changes_course"] == false);
        CHECK_FALSE(has(t["answer"].get<std::string>(), "never saw"));
    }
}

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The rows of the tune table, each as its figures without the # column: a
// line that starts with the rank(s) and goes on with figures (a size
// first), or on a narrow terminal a record: the rank(s) alone on a line,
// then "header: value" lines up to the setting's.
std::vector<std::string> tune_table_rows(const std::string& text) {
    static const std::regex row(R"(^ *[0-9][0-9,\-]* +([0-9.]+ [KMGT]?i?B .*)$)");
    static const std::regex record(R"(^[0-9][0-9,\-]*$)");
    std::vector<std::string> rows;
    bool in_record = false;
    std::smatch m;
    for (const std::string& line : lines_of(text)) {
        if (std::regex_match(line, m, row)) {
            rows.push_back(m[1]);
        } else if (std::regex_match(line, record)) {
            rows.emplace_back();
            in_record = true;
        } else if (in_record) {
            if (line.find("PYTORCH_CUDA_ALLOC_CONF:") != std::string::npos) in_record = false;
            else rows.back() += line;
        }
    }
    return rows;
}

// The number of different outcomes among the document's settings.
std::size_t outcomes_of(const nlohmann::json& settings) {
    std::set<std::string> outcomes;
    for (const nlohmann::json& s : settings) {
        nlohmann::json o = s;
        for (const char* key : {"rank", "alloc_conf", "recorded", "settings"}) o.erase(key);
        outcomes.insert(o.dump());
    }
    return outcomes.size();
}

}  // namespace

// issue 34 §10: on a 100-column terminal the table was 120 columns wide,
// its header line 225, 36 rows many of them alike, and the answer came last.
TEST_CASE("cli reuse-sim tune on a terminal: the answer first, a row per outcome, the best 10, every line within the width") {
    const std::vector<std::string> tune = {"reuse-sim", "tune", "--trace", fixture("torch/memory_fraction.pickle"), "--capacity", "600MiB"};
    std::vector<std::string> json_args = tune;
    json_args.push_back("--json");
    const RunResult j = run_gpumem(json_args);
    REQUIRE(j.status == 0);
    const nlohmann::json d = nlohmann::json::parse(j.out);
    REQUIRE(d["settings"].size() == 36);  // JSON keeps every setting
    const std::size_t outcomes = outcomes_of(d["settings"]);
    REQUIRE(outcomes > 10);  // the fixture has more outcomes than the table shows by default
    REQUIRE(outcomes < 36);  // and settings alike
    std::vector<std::string> all_args = tune;
    all_args.push_back("--all-settings");
    for (const int width : {0, 60, 80, 100, 120}) {  // 0: a pipe; 60: too narrow for the figures, records
        CAPTURE(width);
        const std::size_t limit = width == 0 ? 100 : static_cast<std::size_t>(width);
        for (const bool all : {false, true}) {
            CAPTURE(all);
            const std::vector<std::string>& args = all ? all_args : tune;
            const RunResult r = width == 0 ? run_gpumem(args) : run_on_terminal(args, width);
            REQUIRE(r.status == 0);
            INFO(r.out);
            for (const std::string& line : lines_of(r.out)) {
                CAPTURE(line);
                // Only a word longer than the line may stand out: the
                // fixture's path, at 60 columns, alone on its (indented)
                // line; how long it is depends on where the checkout is.
                const std::size_t first = line.find_first_not_of(' ');
                CHECK((line.size() <= limit || line.find(' ', first == std::string::npos ? 0 : first) == std::string::npos));
            }
            // The answer comes before the table.
            const std::size_t answer = flat(r.out).find("this trace fits in");
            const std::size_t table = r.out.find("first OOM");  // the table's header, or its first record
            REQUIRE(answer != std::string::npos);
            REQUIRE(table != std::string::npos);
            CHECK(answer < table);
            // A row per outcome: no two rows alike; the best 10, or every one.
            const std::vector<std::string> rows = tune_table_rows(r.out);
            CHECK(std::set<std::string>(rows.begin(), rows.end()).size() == rows.size());
            CHECK(rows.size() == (all ? outcomes : 10));
            CHECK(has(flat(r.out), all ? "a row per outcome (" + std::to_string(outcomes) + "):"
                                       : "a row per outcome, the best 10 of " + std::to_string(outcomes) + " (--all-settings"));
            CHECK(has(r.out, "\n1-4\n    peak reserved: ") == (width == 60));
            // Every setting is named with --all-settings (those short enough
            // for one line whole: the table's 100 columns at most, less 6).
            if (all)
                for (const nlohmann::json& s : d["settings"]) {
                    const std::string conf = s["alloc_conf"].get<std::string>();
                    const std::string shown = s["recorded"] == true ? "recorded: " + (conf.empty() ? "(PyTorch's defaults)" : conf) : conf;
                    if (shown.size() + 6 > std::min<std::size_t>(limit, 100)) continue;
                    // A line of its own under the row; in a record, a part of the field's lines.
                    if (width == 60) CHECK(has(without_spaces(r.out), without_spaces(shown)));
                    else CHECK(has(r.out, "\n    " + shown + "\n"));
                }
        }
    }
    // --all-settings changes the table only: the document and CSV hold every setting either way.
    std::vector<std::string> all_json = all_args;
    all_json.push_back("--json");
    const RunResult aj = run_gpumem(all_json);
    REQUIRE(aj.status == 0);
    CHECK(nlohmann::json::parse(aj.out)["settings"] == d["settings"]);
    std::vector<std::string> csv_args = tune;
    csv_args.push_back("--csv");
    const RunResult csv = run_gpumem(csv_args);
    REQUIRE(csv.status == 0);
    CHECK(lines_of(csv.out).size() == 37);  // the header and every setting
}

namespace {

// A folder of one case's files, removed after.
struct PlotFolder {
    std::string path;
    PlotFolder() {
        char name[] = "/tmp/gpumem-plot-cli-XXXXXX";
        path = ::mkdtemp(name) ? name : "";
    }
    ~PlotFolder() {
        if (!path.empty()) (void)!std::system(("rm -rf '" + path + "'").c_str());
    }
    PlotFolder(const PlotFolder&) = delete;
    PlotFolder& operator=(const PlotFolder&) = delete;
    std::string operator/(const std::string& name) const { return path + "/" + name; }
};

bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

// Issue 57: --plot out.png wrote SVG under that name, silently.
TEST_CASE("cli --plot: one rule for every command that offers it: FILE.svg; another extension, or none, is refused naming .svg") {
    const PlotFolder d;
    const std::string trace = tests_dir() + "/fixtures/torch/fragmentation_oom.pickle";
    const std::vector<std::vector<std::string>> commands = {
        {"copy", "h2d", "--sizes", "4KiB..1MiB"},
        {"memset", "--sizes", "4KiB..1MiB"},
        {"reuse-sim", "replay", "--trace", trace},
        {"reuse-sim", "tune", "--trace", trace},
        {"reuse-sim", "max-batch", "--capacity", "1GiB", "--batch-trace", "4=" + trace, "--batch-trace", "8=" + trace},
    };
    for (const auto& command : commands)
        for (const char* name : {"out.png", "out", "out.svg.png", ".svg"}) {
            std::vector<std::string> args = command;
            args.push_back("--plot");
            args.push_back(d / name);
            std::string shown;
            for (const std::string& a : args) shown += a + " ";
            CAPTURE(shown);
            const RunResult r = run_gpumem(args);
            CHECK(r.status == 2);
            CHECK(r.out.empty());
            CHECK(r.stderr_lines() == 1);
            CHECK(has(r.err, "--plot draws an SVG picture: name the file FILE.svg"));
            if (std::string(name) == "out.png") CHECK(has(r.err, "(not .png)"));
            CHECK_FALSE(file_exists(d / name));
        }
    // The extension in any case.
    const RunResult upper = run_gpumem({"reuse-sim", "replay", "--trace", trace, "--plot", d / "OUT.SVG"});
    CHECK(upper.status == 0);
    CHECK(file_exists(d / "OUT.SVG"));
}

// Issue 57: a legal 250-byte name was refused, the folder blamed (the
// temporary file's name beside it was 258 bytes).
TEST_CASE("cli --plot: a legal 250-byte name is written; one past the file system's limit is refused naming its length, not the folder") {
    const PlotFolder d;
    const std::string trace = tests_dir() + "/fixtures/torch/fragmentation_oom.pickle";
    const std::string legal = std::string(246, 'p') + ".svg";
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--trace", trace, "--plot", d / legal});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(file_exists(d / legal));
    const std::string too_long = std::string(252, 'p') + ".svg";
    const RunResult refused = run_gpumem({"reuse-sim", "replay", "--trace", trace, "--plot", d / too_long});
    CHECK(refused.status == 2);
    CHECK(refused.stderr_lines() == 1);
    CHECK(has(refused.err, "its name is 256 bytes; the file system of '" + d.path + "' takes names of at most 255"));
    CHECK_FALSE(has(refused.err, "cannot write in"));
}

// Issue 57: a run that keeps running out of memory drew a cross in every
// stretch, a band that hid the strategy's line and the cap's label.
TEST_CASE("cli reuse-sim replay --plot: the crosses of refused requests are thinned, at most 40 a strategy; the notes count them all") {
    const PlotFolder d;
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--strategy", "torch-caching", "--capacity", "40MiB", "--plot", d / "oom.svg"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::ifstream in(d / "oom.svg");
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t from = svg.find("<g id=\"markers\">"), to = svg.find("</g>", from);
    REQUIRE(from != std::string::npos);
    const std::string markers = svg.substr(from, to - from);
    std::size_t crosses = 0;
    for (std::size_t at = markers.find("stroke-width=\"2.5\""); at != std::string::npos; at = markers.find("stroke-width=\"2.5\"", at + 1)) ++crosses;
    CHECK(crosses > 1);
    CHECK(crosses <= 40);
    CHECK(has(svg, "request(s) refused, the first at event"));
}
