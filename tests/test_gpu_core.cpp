// GPU suite for the core: AutoDevice, MixMemory, host memory kinds and the
// memset engine. Runs on the device machine; exits 77 elsewhere.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <limits>
#include <vector>

#include "cli_harness.hpp"
#include "memory_levels.hpp"
#include "core/cuda_raii.hpp"
#include "core/driver_api.hpp"
#include "base/errors.hpp"
#include "bench/memset_bench.hpp"
#include "core/mix_memory.hpp"

using namespace gpumem;

namespace {

std::size_t free_device_memory(int device) {
    AutoDevice guard(DeviceId{device});
    std::size_t free_bytes = 0, total = 0;
    REQUIRE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
    return free_bytes;
}

std::size_t total_device_memory(int device) {
    AutoDevice guard(DeviceId{device});
    std::size_t free_bytes = 0, total = 0;
    REQUIRE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
    return total;
}

int device_count() {
    int n = 0;
    cudaGetDeviceCount(&n);
    return n;
}

constexpr std::size_t kMiB = 1 << 20;

}  // namespace

TEST_CASE("MixMemory grows, reuses the same pointer for smaller requests, never shrinks") {
    MixMemory mm(MixMemoryOptions{});
    void* a = mm.device(10 * kMiB);
    CHECK(a != nullptr);
    CHECK(mm.device_capacity() == 10 * kMiB);
    CHECK(mm.device(4 * kMiB) == a);
    CHECK(mm.device(10 * kMiB) == a);
    CHECK(mm.counters().device_reuses == 2);
    void* b = mm.device(20 * kMiB);
    CHECK(mm.device_capacity() == 20 * kMiB);
    CHECK(mm.counters().device_allocations == 2);
    CHECK(mm.counters().device_frees == 1);
    mm.device(1);
    CHECK(mm.device_capacity() == 20 * kMiB);  // never shrinks
    CHECK(mm.device_data() == b);
    void* h = mm.host(3 * kMiB);
    CHECK(h != nullptr);
    CHECK(mm.host(kMiB) == h);
    CHECK(mm.counters().host_reuses == 1);
    CHECK(mm.counters().peak_device_capacity == 20 * kMiB);
}

TEST_CASE("MixMemory honours each growth policy") {
    MixMemoryOptions rounded;
    rounded.growth = GrowthPolicy::round_to(2 * kMiB);
    MixMemory r(rounded);
    r.device(1000);
    CHECK(r.device_capacity() == 2 * kMiB);
    r.device(2 * kMiB + 1);
    CHECK(r.device_capacity() == 4 * kMiB);

    MixMemoryOptions geometric;
    geometric.growth = GrowthPolicy::geometric(2.0);
    MixMemory g(geometric);
    g.device(kMiB);
    CHECK(g.device_capacity() == kMiB);
    g.device(kMiB + 1);
    CHECK(g.device_capacity() == 2 * kMiB);
    g.device(5 * kMiB);
    CHECK(g.device_capacity() == 5 * kMiB);  // the request wins over current * factor
}

TEST_CASE("MixMemory frees owned memory exactly once, including after a move") {
    const std::size_t before = free_device_memory(0);
    {
        MixMemory mm(MixMemoryOptions{});
        mm.device(512 * kMiB);
        MixMemory moved(std::move(mm));
        CHECK(mm.device_data() == nullptr);
        CHECK(mm.device_capacity() == 0);
        CHECK(moved.device_capacity() == 512 * kMiB);
        CHECK(free_device_memory(0) + 500 * kMiB < before);
        MixMemory assigned(MixMemoryOptions{});
        assigned.device(kMiB);
        assigned = std::move(moved);  // frees assigned's own 1 MiB, takes 512 MiB
        CHECK(assigned.device_capacity() == 512 * kMiB);
        CHECK(assigned.counters().device_frees == 0);
    }
    // Everything back (within the allocator's granularity), and no double free
    // would have been reported by the CUDA runtime as an error above.
    CHECK_MEMORY_LEVEL(free_device_memory(0) + 4 * kMiB >= before);
    CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("MixMemory never frees wrapped memory, and owns what a later growth allocates") {
    void* foreign = nullptr;
    REQUIRE(cudaMalloc(&foreign, 4 * kMiB) == cudaSuccess);
    {
        MixMemory mm(MixMemoryOptions{});
        mm.reference_device(foreign, 4 * kMiB);
        CHECK_FALSE(mm.owns_device());
        CHECK(mm.device(2 * kMiB) == foreign);
        void* grown = mm.device(8 * kMiB);
        CHECK(grown != foreign);
        CHECK(mm.owns_device());
        CHECK(mm.counters().device_allocations == 1);
        CHECK(mm.counters().device_frees == 0);  // the foreign buffer was not freed
    }
    // Still ours to use and free exactly once.
    CHECK(cudaMemset(foreign, 1, 4 * kMiB) == cudaSuccess);
    CHECK(cudaFree(foreign) == cudaSuccess);
}

TEST_CASE("MixMemory throws out-of-memory and stays empty and usable") {
    MixMemory mm(MixMemoryOptions{});
    mm.device(kMiB);
    const std::size_t too_big = total_device_memory(0) * 2;
    CHECK_THROWS_AS(mm.device(too_big), OutOfMemoryError);
    CHECK(mm.device_data() == nullptr);
    CHECK(mm.device_capacity() == 0);
    CHECK(cudaGetLastError() == cudaSuccess);  // no sticky error left behind
    CHECK(mm.device(kMiB) != nullptr);
    CHECK_THROWS_AS(mm.device<double>(std::numeric_limits<std::size_t>::max() / 4), UsageError);
}

TEST_CASE("MixMemory rejects a device that does not exist") {
    MixMemoryOptions bad;
    bad.device = DeviceId(device_count());
    CHECK_THROWS_AS(MixMemory{bad}, UsageError);
    bad.device = DeviceId(-1);
    CHECK_THROWS_AS(MixMemory{bad}, UsageError);
}

TEST_CASE("MixMemory zero-fills on growth when asked, on a stream") {
    MixMemoryOptions o;
    o.zero_fill = true;
    MixMemory mm(o);
    // Dirty memory first so that zeros cannot come from a fresh page.
    {
        DeviceAllocation dirty(DeviceId(0), 8 * kMiB);
        REQUIRE(cudaMemset(dirty.data(), 0xAB, 8 * kMiB) == cudaSuccess);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    }
    auto* p = mm.device<unsigned char>(8 * kMiB);
    REQUIRE(cudaStreamSynchronize(cudaStreamPerThread) == cudaSuccess);
    std::vector<unsigned char> host(8 * kMiB, 0xFF);
    REQUIRE(cudaMemcpy(host.data(), p, host.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
    std::size_t nonzero = 0;
    for (unsigned char c : host) nonzero += c != 0;
    CHECK(nonzero == 0);
}

TEST_CASE("every host memory kind allocates, is writable and is released") {
    for (const std::string name : {"pinned", "pageable", "pageable-huge", "huge-only", "write-combined", "mapped", "registered"}) {
        CAPTURE(name);
        const HostMemoryKind kind = parse_host_memory_kind(name);
        MixMemoryOptions o;
        o.host_kind = kind;
        MixMemory mm(o);
        try {
            auto* p = mm.host<std::uint32_t>(kMiB);
            for (std::size_t i = 0; i < kMiB; ++i) p[i] = static_cast<std::uint32_t>(i);
            CHECK(p[kMiB - 1] == kMiB - 1);
            if (kind == HostMemoryKind::huge_only) CHECK(mm.host_huge_pages());
            // The copy engines can read it.
            DeviceAllocation d(DeviceId(0), 4 * kMiB);
            CHECK(cudaMemcpy(d.data(), p, 4 * kMiB, cudaMemcpyHostToDevice) == cudaSuccess);
        } catch (const OutOfMemoryError& e) {
            // Only huge-only may fail, on machines with no reserved huge pages.
            CHECK(kind == HostMemoryKind::huge_only);
            MESSAGE("huge-only unavailable here: " << std::string(e.what()));
        }
        mm.release_host();
        CHECK(mm.host_data() == nullptr);
        CHECK(mm.counters().host_frees == mm.counters().host_allocations);
    }
}

TEST_CASE("AutoDevice switches only when needed and restores the current device") {
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    const auto calls = AutoDevice::set_device_calls();
    {
        AutoDevice same(DeviceId(0));
        CHECK_FALSE(same.switched());
        MixMemory mm(MixMemoryOptions{});
        mm.device(kMiB);
        mm.host(kMiB);
    }
    CHECK(AutoDevice::set_device_calls() == calls);  // nothing switched for device 0
    CHECK(current_device() == DeviceId(0));
    if (device_count() >= 2) {
        REQUIRE(cudaSetDevice(1) == cudaSuccess);
        REQUIRE(cudaFree(nullptr) == cudaSuccess);  // device 1's context exists: it must be restored
        {
            MixMemoryOptions o;
            o.device = DeviceId(0);
            MixMemory mm(o);
            void* p = mm.device(kMiB);
            CHECK(current_device() == DeviceId(1));  // restored after the allocation
            cudaPointerAttributes attr{};
            REQUIRE(cudaPointerGetAttributes(&attr, p) == cudaSuccess);
            CHECK(attr.device == 0);  // allocated on the buffer's device
        }
        CHECK(current_device() == DeviceId(1));  // and after the free
        CHECK(AutoDevice::set_device_calls() >= calls + 4);
        REQUIRE(cudaSetDevice(0) == cudaSuccess);
    } else {
        MESSAGE("one GPU: cross-device restore checked through the guard's bookkeeping only");
    }
}

TEST_CASE("memset writes exactly the requested words for each width, odd sizes and offsets") {
    struct Case { int width; std::uint64_t size, offset; std::uint32_t value; };
    const Case cases[] = {{1, 1000003, 0, 0x5A}, {1, 4097, 13, 0xFF}, {2, 2000006, 6, 0xBEEF}, {2, 10, 8, 0x1234},
                          {4, 4000012, 12, 0xDEADBEEF}, {4, 4, 0, 0x01020304}};
    for (const Case& c : cases) {
        CAPTURE(c.width);
        CAPTURE(c.size);
        CAPTURE(c.offset);
        MemsetPlan plan;
        plan.width = c.width;
        plan.size = c.size;
        plan.offset = c.offset;
        plan.value = c.value;
        plan.verify = true;
        plan.timing = TimingPlan{1, 3, 2};
        const MemsetResult r = run_memset(plan);
        CHECK(r.verified);
        CHECK(r.mismatches == 0);
        CHECK(r.bytes_set == c.size - c.offset);
        CHECK(r.seconds.median > 0);
        plan.corrupt_offset = (c.size - c.offset) / 2;
        const MemsetResult bad = run_memset(plan);
        CHECK(bad.mismatches == 1);
        REQUIRE(bad.first_bad_offset.has_value());
        CHECK(*bad.first_bad_offset / c.width == (c.offset + *plan.corrupt_offset) / c.width);
        plan.corrupt_offset.reset();
        plan.host_target = true;
        plan.host_kind = HostMemoryKind::pageable;
        const MemsetResult host = run_memset(plan);
        CHECK(host.mismatches == 0);
        CHECK(host.verified);
    }
}

TEST_CASE("memset leaves no memory behind and fails cleanly when the buffer is too large") {
    const std::size_t before = free_device_memory(0);
    MemsetPlan plan;
    plan.size = total_device_memory(0) * 2;
    CHECK_THROWS_AS(run_memset(plan), OutOfMemoryError);
    plan.size = 256 * kMiB;
    plan.verify = true;
    run_memset(plan);
    CHECK_MEMORY_LEVEL(free_device_memory(0) + 4 * kMiB >= before);
}

// Child side of the next test: runs in a fresh process (no contexts yet),
// before main, when the test re-executes itself with GPUMEM_TEST_CHILD set.
namespace {
const int g_child_exit = [] {
    const char* mode = std::getenv("GPUMEM_TEST_CHILD");
    if (mode == nullptr || std::string(mode) != "autodevice-no-context") return 0;
    int code = 0;
    try {
        {
            AutoDevice guard(DeviceId(1));  // the thread's default device 0 has no context
            DeviceAllocation buffer(DeviceId(1), 1 << 20);
        }
        code = primary_context_active(DeviceId(0)) ? 10 : 0;  // 10: a context appeared on device 0
        if (code == 0 && current_device() != DeviceId(1)) code = 11;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        code = 12;
    }
    std::_Exit(code);
}();
}  // namespace

TEST_CASE("AutoDevice does not create a context on a device the process never used") {
    if (device_count() < 2) {
        MESSAGE("needs two GPUs");
        return;
    }
    char self[4096] = {};
    REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
    const std::string command = std::string("GPUMEM_TEST_CHILD=autodevice-no-context ") + self;
    const int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    (void)g_child_exit;
}
