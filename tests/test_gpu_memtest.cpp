// GPU suite for the deep memory tests (bench/memtest.hpp) and the streaming
// kernels under them (core/kernels.hpp): every test passes on healthy
// memory over several pieces; a word inverted by the test hook is reported
// by every test with its address, offset, piece, expected and actual words;
// a stop ends a run within a second and everything is freed. Also the
// fill/verify pattern kernels at unaligned starts and odd lengths.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "bench/alloc_apis.hpp"
#include "bench/memtest.hpp"
#include "core/cuda_raii.hpp"
#include "core/kernels.hpp"
#include "memory_levels.hpp"

using namespace gpumem;

namespace {

constexpr std::uint64_t MiB = 1ULL << 20;
constexpr std::uint64_t kFreeSlack = 16 * MiB;

std::uint64_t free_now() {
    std::size_t free = 0, total = 0;
    REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
    return free;
}

long long distance(std::uint64_t a, std::uint64_t b) { return std::llabs(static_cast<long long>(a) - static_cast<long long>(b)); }

// 9 MiB + 320 bytes in pieces of 3 MiB: four pieces, the last one small.
MemtestOptions small_options() {
    MemtestOptions o;
    o.bytes = 9 * MiB + 320;
    o.chunk = 3 * MiB;
    o.tests = kMemtestKinds.values();
    o.iterations = 2;
    o.seed = 7;
    return o;
}

// The global word span of piece `c` under small_options().
ChunkSpan small_span(std::size_t c) {
    const std::uint64_t chunk_words = 3 * MiB / 8, total_words = (9 * MiB + 320) / 8;
    const std::uint64_t first = c * chunk_words;
    return {first, std::min(chunk_words, total_words - first)};
}

std::uint64_t traffic_of(MemtestKind kind, const MemtestOptions& o) {
    std::uint64_t bytes = 0;
    for (unsigned it = 0; it < o.iterations; ++it)
        for (const MemtestPhase& p : memtest_phases(kind, o.seed, it))
            for (std::size_t c = 0; c < 4; ++c) bytes += phase_traffic_bytes(p.op, p.expect, small_span(c));
    return bytes;
}

}  // namespace

TEST_CASE("gpu memtest: every test passes on healthy memory over four pieces, and frees it") {
    ensure_context(DeviceId(0));
    StopToken stop;
    const std::uint64_t before = free_now();
    const MemtestOptions o = small_options();
    std::uint64_t phases_reported = 0;
    const MemtestResult r = run_memtest(DeviceId(0), o, stop, [&](const char*, std::uint64_t done, std::uint64_t total) {
        CHECK(done <= total);
        if (total > 0 && done == total) phases_reported = done;
    });
    CHECK(r.bytes == 9 * MiB + 320);
    CHECK(r.chunks == 4);
    CHECK_FALSE(r.stopped);
    CHECK(phases_reported > 0);
    REQUIRE(r.tests.size() == kMemtestKinds.size());
    for (const MemtestTestResult& t : r.tests) {
        INFO(memtest_name(t.test));
        CHECK(t.complete);
        CHECK(t.iterations == 2);
        CHECK(t.mismatches == 0);
        CHECK_FALSE(t.first_bad.has_value());
        CHECK(t.bytes == r.bytes);
        CHECK(t.traffic == traffic_of(t.test, o));
        CHECK(t.seconds > 0);
        CHECK(t.bandwidth > 0);
    }
    CHECK(r.mismatches() == 0);
    CHECK_MEMORY_LEVEL(distance(free_now(), before) <= static_cast<long long>(kFreeSlack));
}

TEST_CASE("gpu memtest: an injected fault is reported by every test with its address and words") {
    ensure_context(DeviceId(0));
    StopToken stop;
    // Multiples of 160 bytes (modulo-20 checks every 20th word first): in the first piece, and in the third.
    for (const std::uint64_t offset : {160ULL * 1000, 160ULL * 40000}) {
        MemtestOptions o = small_options();
        o.inject_fault_at = offset;
        const MemtestResult r = run_memtest(DeviceId(0), o, stop);
        REQUIRE(r.tests.size() == kMemtestKinds.size());
        const std::size_t piece = static_cast<std::size_t>(offset / (3 * MiB));
        for (const MemtestTestResult& t : r.tests) {
            INFO(memtest_name(t.test) << " at offset " << offset);
            CHECK(t.complete);
            CHECK(t.mismatches == 1);
            REQUIRE(t.first_bad.has_value());
            const BadWord& bad = *t.first_bad;
            CHECK(bad.offset == offset);
            CHECK(bad.chunk == piece);
            // cudaMalloc aligns each piece to at least 256 bytes.
            CHECK((bad.address - (offset - piece * 3 * MiB)) % 256 == 0);
            CHECK(bad.actual == ~bad.expected);
            const std::vector<MemtestPhase> phases = memtest_phases(t.test, o.seed, 0);
            const MemtestPhase& first_check = phases[first_checking_phase(phases)];
            CHECK(bad.expected == phase_expected_word(first_check, offset / 8, bad.address, small_span(piece)));
            if (t.test == MemtestKind::own_address) CHECK(bad.expected == bad.address);
        }
    }
}

TEST_CASE("gpu memtest: a stop while allocating throws; one from another thread while testing ends the run within a second; all freed") {
    ensure_context(DeviceId(0));
    const std::uint64_t before = free_now();
    {
        // Stopped while allocating: thrown as allocate_chunks does, nothing held.
        StopToken stop;
        stop.stop_all();
        CHECK_THROWS_AS(run_memtest(DeviceId(0), small_options(), stop), StoppedBySiblingError);
    }
    {
        // A quarter of free memory, enough iterations to run for minutes.
        StopToken stop;
        MemtestOptions o;
        o.bytes = before / 4;
        o.tests = kMemtestKinds.values();
        o.iterations = 100000;
        std::chrono::steady_clock::time_point stopped_at;
        std::thread stopper([&] {
            std::this_thread::sleep_for(std::chrono::seconds(3));
            stopped_at = std::chrono::steady_clock::now();
            stop.stop_all();
        });
        const MemtestResult r = run_memtest(DeviceId(0), o, stop);
        const auto returned_at = std::chrono::steady_clock::now();
        stopper.join();
        const double late = std::chrono::duration<double>(returned_at - stopped_at).count();
        CHECK(r.stopped);
        CHECK(late < 1.0);
        CHECK(r.mismatches() == 0);
    }
    CHECK_MEMORY_LEVEL(distance(free_now(), before) <= static_cast<long long>(kFreeSlack));
}

TEST_CASE("gpu memtest: bad options are usage errors") {
    StopToken stop;
    MemtestOptions o = small_options();
    o.bytes = kMemtestMinBytes - 1;
    CHECK_THROWS_AS(run_memtest(DeviceId(0), o, stop), UsageError);
    o = small_options();
    o.tests.clear();
    CHECK_THROWS_AS(run_memtest(DeviceId(0), o, stop), UsageError);
    o = small_options();
    o.iterations = 0;
    CHECK_THROWS_AS(run_memtest(DeviceId(0), o, stop), UsageError);
}

TEST_CASE("gpu pattern kernels: exact words at unaligned starts and odd lengths, and the first bad index") {
    ensure_context(DeviceId(0));
    CudaStream stream(DeviceId(0));
    constexpr std::size_t kWords = 5000;
    DeviceAllocation buffer(DeviceId(0), kWords * 8);
    DeviceAllocation result_buffer(DeviceId(0), sizeof(VerifyResult));
    auto* result = static_cast<VerifyResult*>(result_buffer.data());
    auto* base = static_cast<std::uint64_t*>(buffer.data());
    for (const std::size_t start : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
        for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{4095}, std::size_t{4096}}) {
            for (Pattern pattern : all_patterns()) {
                INFO("start " << start << " count " << count << " pattern " << pattern_name(pattern));
                REQUIRE(cudaMemsetAsync(base, 0xA5, kWords * 8, stream.get()) == cudaSuccess);
                launch_fill_pattern(base + start, count, pattern, 11, stream.get());
                std::vector<std::uint64_t> host(kWords);
                REQUIRE(cudaMemcpyAsync(host.data(), base, kWords * 8, cudaMemcpyDeviceToHost, stream.get()) == cudaSuccess);
                stream.synchronize();
                std::size_t wrong = 0, outside = 0;
                for (std::size_t i = 0; i < kWords; ++i) {
                    if (i < start || i >= start + count) {
                        outside += host[i] != 0xA5A5A5A5A5A5A5A5ULL;
                    } else {
                        const auto address = reinterpret_cast<std::uint64_t>(base + i);
                        wrong += host[i] != pattern_word(pattern, 11, i - start, address);
                    }
                }
                CHECK(wrong == 0);
                CHECK(outside == 0);
                // Invert the last word, then the first: verify names the lowest.
                for (const std::size_t bad : {start + count - 1, start}) {
                    const std::uint64_t flipped = ~host[bad];
                    REQUIRE(cudaMemcpyAsync(base + bad, &flipped, 8, cudaMemcpyHostToDevice, stream.get()) == cudaSuccess);
                    reset_verify_result(result, stream.get());
                    launch_verify_pattern(base + start, count, pattern, 11, result, stream.get());
                    VerifyResult r{};
                    REQUIRE(cudaMemcpyAsync(&r, result, sizeof r, cudaMemcpyDeviceToHost, stream.get()) == cudaSuccess);
                    stream.synchronize();
                    CHECK(r.first_bad_index == bad - start);
                    CHECK(r.mismatches == (count == 1 || bad == start + count - 1 ? 1u : 2u));
                }
            }
        }
    }
}
