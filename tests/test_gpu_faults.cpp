// Faults on the GPU, each through the real gpumem binary in a child process:
//   - out of memory in the middle of a run, in every subcommand that
//     allocates: exit 5, one error line, and the memory is free again;
//   - SIGINT and SIGTERM while copy sweeps, memset runs and alloc-test
//     fills, holds and churns: exit 130 within a second of the signal, and
//     NVML's used memory back at its starting value;
//   - two gpumem processes stressing the same GPU at once: both succeed and
//     verify their data;
//   - no visible GPU (CUDA_VISIBLE_DEVICES="" or a bad index) gives exit 3,
//     and a device SPEC that names no GPU exit 2, in every GPU subcommand.
// Runs on device 0 only; a machine with other work on its GPU may fail the
// memory-level checks (they compare against readings taken just before).
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "nvml_used.hpp"
#include "core/cuda_devices.hpp"
#include "core/nvml.hpp"

namespace {

using namespace gpu_memory;

std::uint64_t free_now() {
    std::size_t free = 0, total = 0;
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
    return free;
}

// Device memory this test process takes so that only about `leave` bytes
// stay free for the child: it makes the child run out of memory part way.
class Ballast {
public:
    explicit Ballast(std::uint64_t leave) {
        const std::uint64_t free = free_now();
        REQUIRE(free > leave + GiB);
        // One allocation: the rest of free memory, less what is left.
        REQUIRE(cudaMalloc(&p_, free - leave) == cudaSuccess);
    }
    ~Ballast() { cudaFree(p_); }
    Ballast(const Ballast&) = delete;
    Ballast& operator=(const Ballast&) = delete;

private:
    void* p_ = nullptr;
};

int lines(const std::string& text) {
    int n = 0;
    for (char c : text) n += c == '\n';
    return n;
}

std::string join(const std::vector<std::string>& args) {
    std::string s = "gpumem";
    for (const auto& a : args) s += " " + a;
    return s;
}

}  // namespace

TEST_CASE("gpu faults: out of memory part way through every subcommand exits 5 and frees") {
    // Each command allocates more than the ~3 GiB left free, most of them only
    // after steps that fit (the sweeps, the chunked fills, the trace).
    char trace_path[] = "/tmp/gpumem-faults-traceXXXXXX";
    const int fd = mkstemp(trace_path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(trace_path) << "action,id,size,stream,tag\n"
                                 "alloc,1,1073741824,0,fits\n"
                                 "alloc,2,8589934592,0,too_big\n"
                                 "free,2,,,\nfree,1,,,\n";
    const std::vector<std::vector<std::string>> commands = {
        {"memset", "-s", "8GiB"},
        {"copy", "d2d", "--sizes", "256MiB..4GiB", "--samples", "2"},
        {"copy", "h2d", "--sizes", "512MiB..8GiB", "--samples", "2"},
        {"alloc-test", "fill", "8GiB", "--chunk", "1GiB"},
        {"alloc-test", "hold", "8GiB", "--chunk", "1GiB", "--duration", "1s"},
        {"alloc-test", "latency", "--sizes", "1GiB,2GiB,8GiB", "--iterations", "2", "--warmup", "0"},
        {"reuse-sim", "replay", "--execute", "--trace", trace_path, "--strategy", "naive"},
    };
    const NvmlUsed& used = nvml_used();
    {
        Ballast ballast(3 * GiB);
        const std::uint64_t free_before = free_now();
        const std::uint64_t used_before = used();
        for (const auto& args : commands) {
            for (const bool json : {false, true}) {
                std::vector<std::string> a = args;
                if (json) a.push_back("--json");
                Started child = start_gpumem(a);
                child.wait_within(120);
                const RunResult r = child.wait();
                INFO(join(a) << "\nexit " << r.status << "\nstdout: " << r.out.substr(0, 3000) << "\nstderr: " << r.err);
                CHECK(r.status == 5);
                CHECK(lines(r.err) == 1);
                CHECK(r.err.rfind("gpumem: error: ", 0) == 0);
                if (json) {
                    nlohmann::json doc;
                    REQUIRE_NOTHROW(doc = nlohmann::json::parse(r.out));
                    CHECK(doc["ok"] == false);
                    CHECK(doc["error"]["status"] == 5);
                    CHECK(doc["error"]["code"] == "out_of_memory");
                    // The real replay ran short of memory: nothing was verified.
                    if (args[0] == "reuse-sim") CHECK(doc["execute"]["verified"] == false);
                }
                CHECK(std::llabs(diff(free_now(), free_before)) <= kSlack);
                CHECK(std::llabs(diff(used.settle_to(used_before, 3), used_before)) <= kSlack);
            }
        }
    }
    unlink(trace_path);
}

TEST_CASE("gpu faults: SIGINT and SIGTERM stop long runs with 130 within a second, memory back") {
    const std::vector<std::vector<std::string>> commands = {
        {"copy", "h2d", "--sizes", "256MiB..2GiB", "--samples", "1000"},
        {"copy", "d2d", "--sizes", "256MiB..2GiB", "--samples", "1000", "--engine", "sm"},
        {"memset", "-s", "4GiB", "--samples", "1000", "-n", "64", "--verify"},
        {"alloc-test", "fill", "4GiB", "--verify", "--passes", "1000000"},
        {"alloc-test", "hold", "4GiB"},
        {"alloc-test", "churn", "--duration", "10m", "--sizes", "1MiB..256MiB", "--max-live", "4GiB"},
        {"alloc-test", "churn", "--via", "mixmemory", "--duration", "10m", "--sizes", "1MiB..256MiB"},
    };
    const NvmlUsed& used = nvml_used();
    for (const auto& args : commands) {
        for (const int sig : {SIGINT, SIGTERM}) {
            const std::uint64_t used_before = used.settle_to(used(), 0);
            Started child = start_gpumem(args);
            // Running for real: its context and at least 1 GiB of buffers are
            // in NVML's used memory. Then let it work a little longer.
            const auto deadline = Clock::now() + std::chrono::seconds(60);
            while (used() < used_before + GiB && Clock::now() < deadline && child.running())
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            const bool loaded = used() >= used_before + GiB;
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            const bool still_running = child.running();
            const auto signalled = Clock::now();
            child.signal(sig);
            child.wait_within(10);
            const double seconds = std::chrono::duration<double>(Clock::now() - signalled).count();
            const RunResult r = child.wait();
            const std::uint64_t used_after = used.settle_to(used_before, 3);
            INFO(join(args) << " (signal " << sig << ")\nexit " << r.status << " after " << seconds
                            << " s\nused before " << used_before / MiB << " MiB, after " << used_after / MiB
                            << " MiB\nstderr: " << r.err);
            CHECK(loaded);
            CHECK(still_running);
            CHECK(r.status == 130);
            CHECK(seconds < 1.0);
            CHECK(r.err.find("interrupted") != std::string::npos);
            CHECK(std::llabs(diff(used_after, used_before)) <= kSlack);
        }
    }
}

TEST_CASE("gpu faults: two gpumem processes stressing one GPU both finish and verify") {
    const NvmlUsed& used = nvml_used();
    const std::uint64_t used_before = used();
    const std::vector<std::vector<std::string>> pairs[] = {
        {{"alloc-test", "fill", "8GiB", "--verify", "--passes", "3", "--json"},
         {"copy", "bidir", "-s", "512MiB", "--verify", "--samples", "20", "--json"}},
        {{"memset", "-s", "4GiB", "--verify", "--samples", "20", "--json"},
         {"alloc-test", "churn", "--ops", "3000", "--sizes", "4KiB..64MiB", "--json"}},
        {{"alloc-test", "fill", "25%", "--verify", "--json"}, {"alloc-test", "fill", "25%", "--verify", "--json"}},
    };
    for (const auto& pair : pairs) {
        Started first = start_gpumem(pair[0]);
        Started second = start_gpumem(pair[1]);
        first.wait_within(300);
        second.wait_within(300);
        const RunResult ra = first.wait(), rb = second.wait();
        INFO(join(pair[0]) << " -> " << ra.status << "\nstderr: " << ra.err << "\n"
                           << join(pair[1]) << " -> " << rb.status << "\nstderr: " << rb.err);
        CHECK(ra.status == 0);
        CHECK(rb.status == 0);
        for (const RunResult* r : {&ra, &rb}) {
            nlohmann::json doc;
            REQUIRE_NOTHROW(doc = nlohmann::json::parse(r->out));
            CHECK(doc["ok"] == true);
        }
    }
    CHECK(std::llabs(diff(used.settle_to(used_before, 3), used_before)) <= kSlack);
}

TEST_CASE("gpu faults: no visible GPU gives 3, a SPEC naming no GPU gives 2, in every GPU subcommand") {
    const std::vector<std::vector<std::string>> commands = {
        {"info"},
        {"memset", "-s", "1MiB"},
        {"copy", "h2d", "-s", "1MiB"},
        {"alloc-test", "latency", "--sizes", "4KiB"},
        {"alloc-test", "fill", "1MiB"},
        {"reuse-sim", "replay", "--execute", "--steps", "2"},
    };
    for (const auto& args : commands) {
        for (const char* visible : {"CUDA_VISIBLE_DEVICES=", "CUDA_VISIBLE_DEVICES=99", "CUDA_VISIBLE_DEVICES=GPU-ffffffff"}) {
            const RunResult r = run_gpumem(args, {visible});
            INFO(visible << " " << join(args) << "\nexit " << r.status << "\nstdout: " << r.out << "\nstderr: " << r.err);
            CHECK(r.status == 3);
            CHECK(lines(r.err) == 1);
            CHECK(r.out.empty());
        }
        for (const char* spec : {"99", "GPU-ffffffff", "0000:ff:1f.7"}) {
            std::vector<std::string> a = args;
            a.insert(a.end(), {"-d", spec});
            const RunResult r = run_gpumem(a);
            INFO(join(a) << "\nexit " << r.status << "\nstdout: " << r.out << "\nstderr: " << r.err);
            CHECK(r.status == 2);
            CHECK(lines(r.err) == 1);
            CHECK(r.out.empty());
        }
    }
}
