// gpumem check on a GPU, through the real binary in a child process:
//   - standard passes on a healthy GPU within 15 s, every check there;
//   - an impossible threshold exits 7 with one stderr line per failed check
//     and the JSON error document holding every table;
//   - a planted bad word fails fill.verify with its address;
//   - quick creates no CUDA context (it never loads libcuda) and lasts < 1 s;
//   - SIGINT mid-check gives 130 and NVML's used memory back where it was;
//   - two checks on one GPU at once: the second waits for the per-GPU lock,
//     neither fails, their data verified;
//   - memory held by another process (alloc-test hold): the device checks
//     are unknown naming it, never fail; nvml.memory.in_use names it;
//   - a planted Xid of each immediate action, in a saved kernel log naming
//     this GPU's PCI address, gives --list xids' verdict and remediation;
//   - with two GPUs or more, p2p both ways for every pair.
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "nvml_used.hpp"
#include "core/cuda_devices.hpp"
#include "core/nvml.hpp"

using nlohmann::json;

namespace {

using namespace gpu_memory;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        lines.push_back(text.substr(start, end - start));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return lines;
}

const json* find_check(const json& doc, int gpu, const std::string& id) {
    for (const json& c : doc.at("checks"))
        if (c.at("index") == gpu && c.at("check") == id) return &c;
    return nullptr;
}

std::size_t gpu_count() { return gpumem::cuda_visible_devices().size(); }

// Every check of device 0 the level runs, by id.
std::set<std::string> device_checks(const json& doc) {
    std::set<std::string> ids;
    for (const json& c : doc.at("checks"))
        if (c.at("index") == 0) ids.insert(c.at("check").get<std::string>());
    return ids;
}

const std::set<std::string> kDeviceWork = {"cuda.context", "alloc.max", "fill.verify", "memset.bandwidth",
                                           "copy.d2d",     "copy.h2d",  "copy.d2h"};

}  // namespace

TEST_CASE("gpu check: standard passes on a healthy GPU within 15 s") {
    const auto start = Clock::now();
    const RunResult r = run_gpumem({"check", "--json"});
    const double seconds = seconds_since(start);
    INFO("exit " << r.status << " after " << seconds << " s\nstderr: " << r.err << "\nstdout: " << r.out.substr(0, 6000));
    CHECK(r.status == 0);
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));
    CHECK(doc.at("ok") == true);
    CHECK(doc.at("level") == "standard");
    CHECK(doc.at("verdict") != "fail");
    CHECK(seconds < 15.0);
    MESSAGE("gpumem check (standard, " << gpu_count() << " GPU(s)): " << seconds << " s, verdict " << doc.at("verdict"));
    for (const json& c : doc.at("checks")) {
        CAPTURE(c.dump());
        CHECK(c.at("verdict") != "fail");
        if (c.at("verdict") == "warn") MESSAGE("warning: " << c.dump());
    }
    const std::set<std::string> ids = device_checks(doc);
    for (const std::string& id : kDeviceWork) {
        CAPTURE(id);
        CHECK(ids.count(id) == 1);
    }
    for (const char* id : {"fill.verify", "copy.h2d", "memset.bandwidth", "copy.d2d", "alloc.max"}) {
        const json* c = find_check(doc, 0, id);
        REQUIRE(c != nullptr);
        CAPTURE(c->dump());
        CHECK(c->at("verdict") == "pass");
        CHECK(c->at("value").is_number());
        CHECK(c->at("threshold").is_number());
    }
    // The text table too.
    const RunResult text = run_gpumem({"check", "-d", "0"});
    CHECK(text.status == 0);
    CHECK(text.out.find("fill.verify") != std::string::npos);
    CHECK(text.out.find("verdict: ") != std::string::npos);
}

TEST_CASE("gpu check: an impossible threshold exits 7, a line per failed check, the tables in the error document") {
    const RunResult r = run_gpumem({"check", "-d", "0", "--threshold", "copy.h2d=10TB/s", "--json"});
    INFO("exit " << r.status << "\nstderr: " << r.err << "\nstdout: " << r.out.substr(0, 6000));
    CHECK(r.status == 7);
    const std::vector<std::string> err = lines_of(r.err);
    REQUIRE(err.size() >= 2);
    bool h2d_line = false;
    for (std::size_t i = 0; i + 1 < err.size(); ++i) {
        CHECK(err[i].rfind("gpumem: error: GPU 0 (GPU-", 0) == 0);
        h2d_line = h2d_line || (err[i].find("): copy.h2d: ") != std::string::npos && err[i].find(" < 10000 GB/s (set by --threshold)") != std::string::npos);
    }
    CHECK(h2d_line);
    CHECK(err.back().find("checks failed on 1 of 1 GPU(s): copy.h2d on GPU 0") != std::string::npos);
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));
    CHECK(doc.at("ok") == false);
    CHECK(doc.at("error").at("status") == 7);
    CHECK(doc.at("error").at("code") == "check_failed");
    CHECK(doc.at("verdict") == "fail");
    CHECK(doc.at("devices").at(0).at("verdict") == "fail");
    const std::set<std::string> ids = device_checks(doc);
    for (const std::string& id : kDeviceWork) CHECK(ids.count(id) == 1);
    const json* h2d = find_check(doc, 0, "copy.h2d");
    REQUIRE(h2d != nullptr);
    CHECK(h2d->at("verdict") == "fail");
    CHECK(h2d->at("threshold") == 10000.0);
    // Measured once more after each pause before it failed (a slow window is no fault).
    CHECK(h2d->at("reason").get<std::string>().find(" of 4 (the first gave ") != std::string::npos);
    CHECK(h2d->at("seconds").get<double>() >= 1.75);

    // Text: the table still goes to stdout.
    const RunResult text = run_gpumem({"check", "-d", "0", "--level", "standard", "--threshold", "copy.d2h=10TB/s"});
    CHECK(text.status == 7);
    CHECK(text.out.find("copy.d2h") != std::string::npos);
    // Prometheus: the failure is in the metrics.
    const RunResult prom = run_gpumem({"check", "-d", "0", "--threshold", "memset.bandwidth=1000TB/s", "--format", "prometheus"});
    CHECK(prom.status == 7);
    CHECK(prom.out.find("gpumem_check_pass{gpu=\"0\"") != std::string::npos);
    CHECK(prom.out.find("gpumem_run_exit_status{command=\"check\"") != std::string::npos);
    CHECK(prom.out.find("} 7\n") != std::string::npos);
    // One exposition: each family once, with the failure's exit status.
    CHECK(prom.out.find("# TYPE gpumem_check_pass gauge") == prom.out.rfind("# TYPE gpumem_check_pass gauge"));
    CHECK(prom.out.find("gpumem_run_success{command=\"check\"") == prom.out.rfind("gpumem_run_success{command=\"check\""));
}

TEST_CASE("gpu check: a bad word fails fill.verify with its address") {
    const RunResult r = run_gpumem({"check", "-d", "0", "--debug-corrupt-word", "123457", "--json"});
    INFO("stderr: " << r.err);
    CHECK(r.status == 7);
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));
    const json* fill = find_check(doc, 0, "fill.verify");
    REQUIRE(fill != nullptr);
    CAPTURE(fill->dump());
    CHECK(fill->at("verdict") == "fail");
    CHECK(fill->at("value") == 1.0);
    CHECK(fill->at("reason").get<std::string>().find("first bad word at 0x") != std::string::npos);
    CHECK(r.err.find("fill.verify: 1 > 0") != std::string::npos);
}

TEST_CASE("gpu check: long runs the memtest86 set, passes, and finds a planted bad word") {
    const auto start = Clock::now();
    const RunResult r = run_gpumem({"check", "-d", "0", "--level", "long", "--json"});
    const double seconds = seconds_since(start);
    INFO("exit " << r.status << "\nstderr: " << r.err);
    CHECK(r.status == 0);
    MESSAGE("gpumem check -d 0 --level long: " << seconds << " s");
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));
    const json* memtest = find_check(doc, 0, "memtest");
    REQUIRE(memtest != nullptr);
    MESSAGE(memtest->dump());
    CHECK(memtest->at("verdict") == "pass");
    CHECK(memtest->at("reason").get<std::string>().find("modulo") != std::string::npos);

    const RunResult bad = run_gpumem({"check", "-d", "0", "--level", "long", "--debug-corrupt-word", "4000", "--json"});
    CHECK(bad.status == 7);
    REQUIRE_NOTHROW(doc = json::parse(bad.out));
    memtest = find_check(doc, 0, "memtest");
    REQUIRE(memtest != nullptr);
    CAPTURE(memtest->dump());
    CHECK(memtest->at("verdict") == "fail");
    CHECK(memtest->at("reason").get<std::string>().find("first bad word at 0x") != std::string::npos);
}

// Whether an LD_DEBUG=files log shows gpumem opening libcuda itself: the
// CUDA runtime (linked statically into gpumem) starting up, which a context
// needs. NVML dlopens libcuda on some drivers (580 does: "file=libcuda.so.1
// [0];  dynamically loaded by .../libnvidia-ml.so.1"), so loading alone
// proves nothing; what tells is a load by anything else first, or a second
// dlopen ("opening file=.../libcuda.so.1 [0]; direct_opencount=2").
bool gpumem_opened_libcuda(const std::string& log) {
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
        if (line.find("libcuda.so") == std::string::npos) continue;
        const std::size_t by = line.find("dynamically loaded by ");
        if (by != std::string::npos && line.find("libnvidia-ml", by) == std::string::npos) return true;
        const std::size_t count = line.find("direct_opencount=");
        if (line.find("opening file=") != std::string::npos && count != std::string::npos &&
            std::strtoul(line.c_str() + count + 17, nullptr, 10) >= 2)
            return true;
    }
    return false;
}

TEST_CASE("gpu check: quick creates no CUDA context and lasts under a second") {
    // A context needs the CUDA runtime to open libcuda; quick never does
    // (the dynamic loader's log of every library opened, dlopen's included).
    char dir_template[] = "/tmp/gpumem-check-ld.XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template;
    auto loaded_libcuda = [&](const std::string& prefix) {
        bool found = false;
        DIR* d = opendir(dir.c_str());
        REQUIRE(d != nullptr);
        while (dirent* e = readdir(d))
            if (std::string(e->d_name).rfind(prefix, 0) == 0)
                found = found || gpumem_opened_libcuda(slurp(dir + "/" + e->d_name));
        closedir(d);
        return found;
    };
    const auto start = Clock::now();
    const RunResult quick = run_gpumem({"check", "--level", "quick", "--json"}, {"LD_DEBUG=files", "LD_DEBUG_OUTPUT=" + dir + "/quick"});
    const double seconds = seconds_since(start);
    INFO("stderr: " << quick.err);
    CHECK(quick.status == 0);
    CHECK(seconds < 1.0);
    MESSAGE("gpumem check --level quick: " << seconds << " s");
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(quick.out));
    // Quick: NVML, the node's GPUs, the kernel log's Xid events and NVLink; nothing that needs a context.
    for (const json& c : doc.at("checks")) {
        const std::string id = c.at("check").get<std::string>();
        CAPTURE(id);
        CHECK((id.rfind("nvml.", 0) == 0 || id == "node.gpus" || id == "xid.events" || id.rfind("nvlink.", 0) == 0));
    }
    CHECK_FALSE(loaded_libcuda("quick"));
    // Control: standard does load it, so the log would have shown it.
    const RunResult standard = run_gpumem({"check", "-d", "0", "--json"}, {"LD_DEBUG=files", "LD_DEBUG_OUTPUT=" + dir + "/standard"});
    CHECK(standard.status == 0);
    CHECK(loaded_libcuda("standard"));
    (void)std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("gpu check: SIGINT mid-check gives 130 and memory back") {
    for (const bool json_out : {false, true}) {
        const std::uint64_t before = nvml_used().settle_to(nvml_used()(), 0);
        std::vector<std::string> args = {"check", "-d", "0", "--debug-fill-passes", "100000"};
        if (json_out) args.push_back("--json");
        Started child = start_gpumem(args);
        const auto deadline = Clock::now() + std::chrono::seconds(60);
        while (nvml_used()() < before + GiB && Clock::now() < deadline && child.running())
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        const bool running = child.running();
        const auto signalled = Clock::now();
        child.signal(SIGINT);
        child.wait_within(10);
        const double seconds = seconds_since(signalled);
        const RunResult r = child.wait();
        const std::uint64_t after = nvml_used().settle_to(before, 3);
        INFO("exit " << r.status << " after " << seconds << " s; used before " << before / MiB << " MiB, after " << after / MiB
                     << " MiB\nstderr: " << r.err);
        CHECK(running);
        CHECK(r.status == 130);
        CHECK(seconds < 1.0);
        CHECK(std::llabs(diff(after, before)) <= kSlack);
        if (!json_out) continue;
        json doc;
        REQUIRE_NOTHROW(doc = json::parse(r.out));
        CHECK(doc.at("error").at("status") == 130);
        CHECK(find_check(doc, 0, "cuda.context") != nullptr);  // what ran is reported
        CHECK(find_check(doc, 0, "fill.verify") == nullptr);
    }
}

// No check of either may fail, and none asks for more than unknown does.
void check_no_false_failure(const json& doc) {
    for (const json& c : doc.at("checks")) {
        CAPTURE(c.dump());
        CHECK(c.at("verdict") != "fail");
        if (c.at("verdict") == "unknown") CHECK((c.at("remediation").is_null() || c.at("remediation") == "none"));
        if (c.at("verdict") != "pass" && c.at("verdict") != "n/a") MESSAGE("side by side: " << c.dump());
    }
}

TEST_CASE("gpu check: two checks on one GPU at once: the second waits for the lock, neither fails") {
    const std::uint64_t before = nvml_used().settle_to(nvml_used()(), 0);
    Started first = start_gpumem({"check", "-d", "0", "--json"});
    Started second = start_gpumem({"check", "-d", "0", "--json"});
    first.wait_within(120);
    second.wait_within(120);
    int waited = 0;
    for (Started* s : {&first, &second}) {
        const RunResult r = s->wait();
        INFO("exit " << r.status << "\nstderr: " << r.err);
        CHECK(r.status == 0);
        json doc;
        REQUIRE_NOTHROW(doc = json::parse(r.out));
        const std::set<std::string> ids = device_checks(doc);
        for (const std::string& id : kDeviceWork) CHECK(ids.count(id) == 1);
        check_no_false_failure(doc);
        const json* fill = find_check(doc, 0, "fill.verify");
        REQUIRE(fill != nullptr);
        CAPTURE(fill->dump());
        CHECK(fill->at("verdict") == "pass");
        const json* context = find_check(doc, 0, "cuda.context");
        REQUIRE(context != nullptr);
        if (context->at("reason").get<std::string>().find("for the GPU's lock (held by pid ") != std::string::npos) ++waited;
    }
    CHECK(waited == 1);  // the second waited for the first, which had the GPU to itself
    CHECK(std::llabs(diff(nvml_used().settle_to(before, 3), before)) <= kSlack);
}

TEST_CASE("gpu check: memory held by another process: the device checks are unknown, never fail; nvml.memory.in_use names it") {
    Started hold = start_gpumem({"alloc-test", "hold", "97%", "--duration", "120s"}, {}, /*stdout_pipe=*/true);
    const std::string ready = hold.read_line(60);
    INFO("hold's ready line: " << ready << "\nstderr: " << hold.err());
    REQUIRE(!ready.empty());
    const RunResult r = run_gpumem({"check", "-d", "0", "--json"});
    INFO("exit " << r.status << "\nstderr: " << r.err);
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));
    const std::string pid = "pid " + std::to_string(hold.pid());
    const json* in_use = find_check(doc, 0, "nvml.memory.in_use");
    REQUIRE(in_use != nullptr);
    CAPTURE(in_use->dump());
    CHECK(in_use->at("reason").get<std::string>().find(pid) != std::string::npos);
    // Every device check that is not pass is unknown, naming the holder.
    for (const std::string& id : kDeviceWork) {
        const json* c = find_check(doc, 0, id);
        REQUIRE(c != nullptr);
        CAPTURE(c->dump());
        CHECK(c->at("verdict") != "fail");
        if (c->at("verdict") == "unknown") CHECK(c->at("reason").get<std::string>().find(pid) != std::string::npos);
    }
    for (const char* id : {"memset.bandwidth", "copy.d2d", "copy.h2d", "copy.d2h"}) {
        const json* c = find_check(doc, 0, id);
        REQUIRE(c != nullptr);
        CHECK(c->at("verdict") == "unknown");  // a rate beside another process is not the GPU's own
    }
    // --judge-shared judges the rates all the same.
    const RunResult judged = run_gpumem({"check", "-d", "0", "--json", "--judge-shared"});
    json jdoc;
    REQUIRE_NOTHROW(jdoc = json::parse(judged.out));
    const json* memset = find_check(jdoc, 0, "memset.bandwidth");
    REQUIRE(memset != nullptr);
    CHECK(memset->at("verdict") != "unknown");
    hold.signal(SIGTERM);
    CHECK(hold.wait_within(30) == 130);
}

TEST_CASE("gpu check: a planted Xid of each immediate action, naming this GPU, gives --list xids' verdict and remediation") {
    const RunResult listed = run_gpumem({"--list", "xids", "--json"});
    REQUIRE(listed.status == 0);
    const json xids = json::parse(listed.out).at("names");
    // This GPU's address as the driver writes it in an Xid line: NVML's
    // "00000000:18:00.0" is the kernel's "PCI:0000:18:00".
    const RunResult quick = run_gpumem({"check", "--level", "quick", "-d", "0", "--json"});
    REQUIRE_NOTHROW(json::parse(quick.out));
    std::string bus = json::parse(quick.out).at("devices").at(0).at("pci_bus_id").get<std::string>();
    for (char& ch : bus) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    REQUIRE(bus.size() >= 12);
    const std::string device = "PCI:" + bus.substr(bus.size() - 12, 10);  // dddd:bb:dd of dddddddd:bb:dd.f
    char dir_template[] = "/tmp/gpumem-xid.XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string log = std::string(dir_template) + "/kernel.log";
    // check --level quick with only `line` in the kernel log: xid.events' record.
    auto planted = [&](const std::string& line, int events = 1) {
        std::ofstream(log) << "[ 2.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n" << line << "\n";
        const RunResult r = run_gpumem({"check", "--level", "quick", "-d", "0", "--json", "--kernel-log", log});
        INFO("exit " << r.status << "\nstderr: " << r.err);
        json doc;
        REQUIRE_NOTHROW(doc = json::parse(r.out));
        const json* xid = find_check(doc, 0, "xid.events");
        REQUIRE(xid != nullptr);
        CHECK(xid->at("value") == events);
        if (xid->at("verdict") == "fail") CHECK(r.status == 7);
        return *xid;
    };
    // One code of each action that follows the rule, and each departure.
    std::set<std::string> actions_seen;
    int planted_codes = 0;
    for (const json& row : xids) {
        const std::string action = row.at("immediate_action").is_null() ? "none" : row.at("immediate_action").get<std::string>();
        if (action == "XID_154") continue;  // by its line, below
        const bool departs = !row.at("departs").is_null();
        if (!departs && !actions_seen.insert(action).second) continue;
        const std::string line = "[ 100.5] NVRM: Xid (" + device + "): " + std::to_string(row.at("code").get<unsigned>()) + ", pid=1, name=planted, text";
        CAPTURE(line);
        const json xid = planted(line);
        CHECK(xid.at("verdict") == row.at("verdict"));
        CHECK(xid.at("remediation") == row.at("remediation"));
        ++planted_codes;
    }
    CHECK(actions_seen.size() >= 12);
    CHECK(planted_codes >= 15);
    // Xid 154 by the recovery action its line names.
    const std::pair<std::string, std::string> recovery[] = {{"0x1 (GPU Reset Required)", "reset-gpu"}, {"0x2 (Node Reboot Required)", "reboot"}};
    for (const auto& [text, remediation] : recovery) {
        const json xid = planted("[ 100.5] NVRM: Xid (" + device + "): 154, GPU recovery action changed from 0x0 (None) to " + text);
        CHECK(xid.at("verdict") == "fail");
        CHECK(xid.at("remediation") == remediation);
    }
    // Another GPU's Xid is not this one's.
    const json other = planted("[ 100.5] NVRM: Xid (PCI:00ff:ee:00): 79, pid=1, GPU has fallen off the bus.", 0);
    CHECK(other.at("verdict") == "pass");
    std::remove(log.c_str());
    rmdir(dir_template);
}

TEST_CASE("gpu check: p2p both ways between every pair of GPUs") {
    const std::size_t n = gpu_count();
    if (n < 2) {
        MESSAGE("one GPU: no pair to check");
        return;
    }
    const RunResult r = run_gpumem({"check", "--json"});
    INFO("stderr: " << r.err);
    CHECK(r.status == 0);
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));
    for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = 0; b < n; ++b) {
            if (a == b) continue;
            const std::string id = "p2p." + std::to_string(a) + "-" + std::to_string(b);
            const json* c = find_check(doc, static_cast<int>(a), id);
            CAPTURE(id);
            REQUIRE(c != nullptr);
            CHECK(c->at("verdict") != "fail");
            MESSAGE(c->dump());
        }
}
