// Which fill/verify kernel variant reaches the most of peak memory bandwidth
// (issue 15: fill + verify at >= 90 % of peak on H100 and H200). Times, with
// CUDA events, the median of SAMPLES launches over a GIB GiB buffer of:
//   - gpumem 0.1's kernels (8-byte words, grid-stride over at most 8192
//     blocks, the pattern chosen by a switch inside the loop), copied here;
//   - the variants of src/core/stream_kernels.cuh (vector width, unroll,
//     grid, load/store flavour, index width, block size, bookkeeping);
//   - the memtest phases' kernels with the default variant and a few others;
//   - cudaMemsetAsync, as a reference for writing.
// Prints markdown tables: GB/s and % of peak (NVML max memory clock x bus
// width x 2, or cudaDevAttrMemoryClockRate where NVML is missing), and
// "BAD" where a verify found mismatches (a broken variant, or broken memory).
// Needs only the driver: cudart is static, NVML is dlopen'ed.
//   fill_verify_kernels [GIB [SAMPLES [DEVICE]]]     (defaults 8, 10, 0)
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "core/stream_kernels.cuh"

namespace {

using gpumem::stream::u64;
namespace st = gpumem::stream;

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        const cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_)); \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// Same layouts as core/kernels.hpp's VerifyResult and MemtestErrors.
struct CountResult {
    unsigned long long mismatches, first_bad_index;
};
struct FirstErrors {
    unsigned long long mismatches, first_index, expected, actual;
    unsigned int lock, unused;
};

// ---------------------------------------------------------------------------
// gpumem 0.1's pattern kernels, as they were.

constexpr int kBaselineThreads = 512;

__global__ void baseline_fill(u64* data, size_t words, int pattern, u64 seed) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words; i += stride)
        data[i] = st::pattern_value(pattern, seed, i, reinterpret_cast<u64>(data + i));
}

__global__ void baseline_verify(const u64* data, size_t words, int pattern, u64 seed, CountResult* result) {
    u64 local = 0, first = ~0ULL;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words; i += stride)
        if (data[i] != st::pattern_value(pattern, seed, i, reinterpret_cast<u64>(data + i))) {
            ++local;
            if (i < first) first = i;
        }
    if (local) {
        atomicAdd(&result->mismatches, local);
        atomicMin(&result->first_bad_index, first);
    }
}

unsigned baseline_grid(size_t words) {
    const size_t blocks = (words + kBaselineThreads - 1) / kBaselineThreads;
    return static_cast<unsigned>(blocks < 8192 ? (blocks == 0 ? 1 : blocks) : 8192);
}

// ---------------------------------------------------------------------------
// Peak bandwidth

struct Peak {
    double nvml = 0, attribute = 0;  // bytes/s; 0 when unknown
    double best() const { return nvml > 0 ? nvml : attribute; }
};

double nvml_peak(int device) {
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) return 0;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
    using Init = int (*)();
    using ByBus = int (*)(const char*, void**);
    using MaxClock = int (*)(void*, int, unsigned*);
    using BusWidth = int (*)(void*, unsigned*);
    auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
    auto by_bus = reinterpret_cast<ByBus>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    auto max_clock = reinterpret_cast<MaxClock>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    auto bus_width = reinterpret_cast<BusWidth>(dlsym(lib, "nvmlDeviceGetMemoryBusWidth"));
    auto shutdown = reinterpret_cast<Init>(dlsym(lib, "nvmlShutdown"));
    double peak = 0;
    if (init && by_bus && max_clock && bus_width && shutdown && init() == 0) {
        void* handle = nullptr;
        unsigned mhz = 0, bits = 0;
        constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
        if (by_bus(bus_id, &handle) == 0 && max_clock(handle, kClockMem, &mhz) == 0 && bus_width(handle, &bits) == 0)
            peak = 2.0 * mhz * 1e6 * bits / 8.0;
        shutdown();
    }
    dlclose(lib);
    return peak;
}

Peak peak_bandwidth(int device) {
    Peak p;
    int khz = 0, bits = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess)
        p.attribute = 2.0 * khz * 1e3 * bits / 8.0;
    p.nvml = nvml_peak(device);
    return p;
}

// ---------------------------------------------------------------------------
// Timing

struct Bench {
    void* buffer = nullptr;
    u64 bytes = 0;
    int samples = 10;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, end = nullptr;
    CountResult* count = nullptr;
    FirstErrors* errors = nullptr;
    double peak = 0;

    u64 words() const { return bytes / 8; }

    // Median seconds of `launch` over the samples, after two warm-ups.
    template <class Launch>
    double median_seconds(Launch&& launch) {
        for (int i = 0; i < 2; ++i) launch();
        CHECK(cudaGetLastError());
        std::vector<double> s;
        for (int i = 0; i < samples; ++i) {
            CHECK(cudaEventRecord(start, stream));
            launch();
            CHECK(cudaEventRecord(end, stream));
            CHECK(cudaEventSynchronize(end));
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, start, end));
            s.push_back(ms / 1e3);
        }
        CHECK(cudaGetLastError());
        std::sort(s.begin(), s.end());
        return s[s.size() / 2];
    }

    void reset_results() {
        const CountResult c{0, ~0ULL};
        const FirstErrors e{0, ~0ULL, 0, 0, 0, 0};
        CHECK(cudaMemcpyAsync(count, &c, sizeof c, cudaMemcpyHostToDevice, stream));
        CHECK(cudaMemcpyAsync(errors, &e, sizeof e, cudaMemcpyHostToDevice, stream));
        CHECK(cudaStreamSynchronize(stream));
    }
    u64 mismatches() {
        CountResult c{};
        FirstErrors e{};
        CHECK(cudaMemcpy(&c, count, sizeof c, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&e, errors, sizeof e, cudaMemcpyDeviceToHost));
        return c.mismatches + e.mismatches;
    }

    std::string cell(u64 traffic, double seconds, bool bad = false) const {
        char text[64];
        const double rate = traffic / seconds;
        if (peak > 0) {
            std::snprintf(text, sizeof text, "%.0f (%.1f%%)%s", rate / 1e9, 100.0 * rate / peak, bad ? " BAD" : "");
        } else {
            std::snprintf(text, sizeof text, "%.0f%s", rate / 1e9, bad ? " BAD" : "");
        }
        return text;
    }
};

// ---------------------------------------------------------------------------
// Fill and verify of the five alloc-test patterns

constexpr const char* kPatternNames[] = {"zeros", "ones", "walking", "address", "random"};
constexpr int kPatterns = 5;
constexpr u64 kSeed = 1;

template <class Fn>
void with_pattern(int pattern, Fn&& fn) {
    switch (pattern) {
        case 0: fn(st::ZerosWord{}); break;
        case 1: fn(st::OnesWord{}); break;
        case 2: fn(st::WalkingWord{kSeed}); break;
        case 3: fn(st::AddressWord{}); break;
        default: fn(st::RandomWord{kSeed}); break;
    }
}

struct PatternTimes {
    double fill = 0, verify = 0;
    bool bad = false;
};

// One table row group: fill, verify and fill+verify for every pattern.
void print_rows(Bench& b, const std::string& name, const PatternTimes (&t)[kPatterns]) {
    const u64 n = b.words() * 8;
    double fill_all = 0, verify_all = 0;
    bool any_bad = false;
    for (const PatternTimes& p : t) {
        fill_all += p.fill;
        verify_all += p.verify;
        any_bad = any_bad || p.bad;
    }
    std::printf("| %s | fill |", name.c_str());
    for (const PatternTimes& p : t) std::printf(" %s |", b.cell(n, p.fill).c_str());
    std::printf(" %s |\n", b.cell(n * kPatterns, fill_all).c_str());
    std::printf("| %s | verify |", name.c_str());
    for (const PatternTimes& p : t) std::printf(" %s |", b.cell(n, p.verify, p.bad).c_str());
    std::printf(" %s |\n", b.cell(n * kPatterns, verify_all, any_bad).c_str());
    std::printf("| %s | **fill+verify** |", name.c_str());
    for (const PatternTimes& p : t) std::printf(" %s |", b.cell(2 * n, p.fill + p.verify, p.bad).c_str());
    std::printf(" **%s** |\n", b.cell(2 * n * kPatterns, fill_all + verify_all, any_bad).c_str());
    std::fflush(stdout);
}

void bench_baseline(Bench& b) {
    PatternTimes t[kPatterns];
    auto* data = static_cast<u64*>(b.buffer);
    const size_t words = b.words();
    for (int p = 0; p < kPatterns; ++p) {
        t[p].fill = b.median_seconds(
            [&] { baseline_fill<<<baseline_grid(words), kBaselineThreads, 0, b.stream>>>(data, words, p, kSeed); });
        b.reset_results();
        t[p].verify = b.median_seconds([&] {
            baseline_verify<<<baseline_grid(words), kBaselineThreads, 0, b.stream>>>(data, words, p, kSeed, b.count);
        });
        t[p].bad = b.mismatches() != 0;
    }
    print_rows(b, "0.1 kernels (8-byte words, <= 8192 blocks, switch in loop)", t);
}

// `piece_bytes` > 0: one launch per piece of the buffer, as alloc-test fill
// launches one per allocated chunk (timed together).
template <class Cfg, template <class> class Recorder = st::WarpCountRecorder>
void bench_variant(Bench& b, const char* name, u64 piece_bytes = 0) {
    PatternTimes t[kPatterns];
    const u64 words = b.words(), piece = piece_bytes ? piece_bytes / 8 : words;
    auto* data = static_cast<u64*>(b.buffer);
    for (int p = 0; p < kPatterns; ++p) {
        with_pattern(p, [&](auto word) {
            t[p].fill = b.median_seconds([&] {
                for (u64 at = 0; at < words; at += piece)
                    st::launch_words<Cfg, st::Mode::write>(data + at, std::min(piece, words - at), 0, st::NoWord{}, word,
                                                           st::NoRecorder{}, b.stream);
            });
            b.reset_results();
            t[p].verify = b.median_seconds([&] {
                for (u64 at = 0; at < words; at += piece)
                    st::launch_words<Cfg, st::Mode::check>(data + at, std::min(piece, words - at), 0, word, st::NoWord{},
                                                           Recorder<CountResult>{b.count}, b.stream);
            });
        });
        t[p].bad = b.mismatches() != 0;
    }
    const bool is_default = piece_bytes == 0 && std::is_same_v<Cfg, st::Default> &&
                            std::is_same_v<Recorder<CountResult>, st::WarpCountRecorder<CountResult>>;
    print_rows(b, std::string(name) + (is_default ? " **(default)**" : ""), t);
}

void bench_fill_verify(Bench& b) {
    using st::Grid;
    using st::Load;
    using st::Store;
    std::printf("\n## Fill and verify, GB/s (%% of peak)\n\n");
    std::printf("| variant | op |");
    for (const char* name : kPatternNames) std::printf(" %s |", name);
    std::printf(" all five |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    bench_baseline(b);
    bench_variant<st::Config<1, Load::plain, Store::plain, false, Grid::capped>>(b, "16-byte x1, <= 8192 blocks");
    bench_variant<st::Config<1>>(b, "16-byte x1, resident grid");
    bench_variant<st::Config<2>>(b, "16-byte x2, resident grid");
    bench_variant<st::Config<4>>(b, "16-byte x4, resident grid");
    bench_variant<st::Config<8>>(b, "16-byte x8, resident grid");
    bench_variant<st::Config<4, Load::plain, Store::plain, false, Grid::capped>>(b, "16-byte x4, <= 8192 blocks");
    bench_variant<st::Config<4, Load::plain, Store::plain, false, Grid::tile_per_block>>(b, "16-byte x4, one tile a block");
    bench_variant<st::Config<4, Load::ldg>>(b, "16-byte x4, __ldg");
    bench_variant<st::Config<4, Load::ldcs, Store::stcs>>(b, "16-byte x4, __ldcs/__stcs");
    bench_variant<st::Config<8, Load::ldcs, Store::stcs>>(b, "16-byte x8, __ldcs/__stcs");
    bench_variant<st::Config<4, Load::plain, Store::plain, true>>(b, "16-byte x4, 64-bit indices");
    bench_variant<st::Config<4, Load::plain, Store::plain, false, Grid::resident, 256>>(b, "16-byte x4, 256 threads a block");
    bench_variant<st::Config<4>, st::ThreadCountRecorder>(b, "16-byte x4, per-thread atomics");
    bench_variant<st::Default>(b, "default in 1 GiB launches (alloc-test fill's chunks)", 1ULL << 30);
    bench_variant<st::Default>(b, "default in 256 MiB launches", 256ULL << 20);
    const double memset_s = b.median_seconds([&] { CHECK(cudaMemsetAsync(b.buffer, 0, b.bytes, b.stream)); });
    std::printf("| cudaMemsetAsync (reference) | fill | %s | | | | | |\n", b.cell(b.bytes, memset_s).c_str());
}

// ---------------------------------------------------------------------------
// Memtest kernels

template <gpumem::WordKind K>
st::MemtestWord<K> memtest_word(u64 a, u64 b_value, const gpumem::ChunkSpan& chunk) {
    return {{K, a, b_value}, chunk};
}

template <class Cfg>
void bench_memtest_variant(Bench& b, const char* name) {
    using gpumem::WordKind;
    using st::Mode;
    const u64 words = b.words() & ~7ULL;
    const gpumem::ChunkSpan chunk{0, words};
    const st::FirstWordRecorder<FirstErrors> rec{b.errors};
    const u64 n = words * 8;
    std::vector<std::string> cells;
    auto row = [&](u64 traffic, auto&& launch) {
        b.reset_results();
        const double s = b.median_seconds(launch);
        cells.push_back(b.cell(traffic, s, b.mismatches() != 0));
    };
    const auto c0 = memtest_word<WordKind::constant>(0x5555555555555555ULL, 0, chunk);
    const auto c1 = memtest_word<WordKind::constant>(~0x5555555555555555ULL, 0, chunk);
    // A check_write run twice in a row would see its own writes: time pairs that invert back.
    row(n, [&] { st::launch_words<Cfg, Mode::write>(b.buffer, words, 0, st::NoWord{}, c0, st::NoRecorder{}, b.stream); });
    row(n, [&] { st::launch_words<Cfg, Mode::check>(b.buffer, words, 0, c0, st::NoWord{}, rec, b.stream); });
    row(4 * n, [&] {
        st::launch_words<Cfg, Mode::check_write>(b.buffer, words, 0, c0, c1, rec, b.stream);
        st::launch_words<Cfg, Mode::check_write>(b.buffer, words, 0, c1, c0, rec, b.stream);
    });
    const auto walk = memtest_word<WordKind::walking>(3, 0, chunk);
    row(n, [&] { st::launch_words<Cfg, Mode::write>(b.buffer, words, 0, st::NoWord{}, walk, st::NoRecorder{}, b.stream); });
    row(n, [&] { st::launch_words<Cfg, Mode::check>(b.buffer, words, 0, walk, st::NoWord{}, rec, b.stream); });
    const auto addr = memtest_word<WordKind::address>(0, ~0ULL, chunk);
    row(n, [&] { st::launch_words<Cfg, Mode::write>(b.buffer, words, 0, st::NoWord{}, addr, st::NoRecorder{}, b.stream); });
    row(n, [&] { st::launch_words<Cfg, Mode::check>(b.buffer, words, 0, addr, st::NoWord{}, rec, b.stream); });
    const auto mod = memtest_word<WordKind::modulo>(7, 0x0123456789abcdefULL, chunk);
    row(n, [&] { st::launch_words<Cfg, Mode::write>(b.buffer, words, 0, st::NoWord{}, mod, st::NoRecorder{}, b.stream); });
    const u64 sparse = (words - 7 + gpumem::kModuloStride - 1) / gpumem::kModuloStride * 8;
    row(sparse, [&] {
        st::launch_strided_check<Cfg>(b.buffer, words, 0, gpumem::kModuloStride, 7, mod, rec, b.stream);
    });
    const auto block = memtest_word<WordKind::block>(6, 5, chunk);
    row(n, [&] { st::launch_words<Cfg, Mode::write>(b.buffer, words, 0, st::NoWord{}, block, st::NoRecorder{}, b.stream); });
    row(n, [&] { st::launch_words<Cfg, Mode::check>(b.buffer, words, 0, block, st::NoWord{}, rec, b.stream); });
    auto* lower = static_cast<u64*>(b.buffer);
    row(n, [&] { st::launch_rotate_copy<Cfg>(lower + words / 2, lower, words / 4, 3, b.stream); });
    std::printf("| %s%s |", name, std::is_same_v<Cfg, st::Default> ? " **(default)**" : "");
    for (const std::string& c : cells) std::printf(" %s |", c.c_str());
    std::printf("\n");
    std::fflush(stdout);
}

void bench_memtest(Bench& b) {
    using st::Grid;
    using st::Load;
    using st::Store;
    std::printf("\n## Memtest kernels, GB/s read + written (%% of peak)\n\n");
    std::printf("| variant | write const | check const | check+write const | write walking | check walking "
                "| write address | check address | write modulo-20 | sparse check modulo-20 | write block "
                "| check block | block move (copy) |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    bench_memtest_variant<st::Default>(b, "default");
    bench_memtest_variant<st::Config<8>>(b, "16-byte x8, resident grid");
    bench_memtest_variant<st::Config<4, Load::ldcs, Store::stcs>>(b, "16-byte x4, __ldcs/__stcs");
    bench_memtest_variant<st::Config<4, Load::plain, Store::plain, false, Grid::capped>>(b, "16-byte x4, <= 8192 blocks");
    bench_memtest_variant<st::Config<4, Load::plain, Store::plain, false, Grid::tile_per_block>>(b, "16-byte x4, one tile a block");
}

}  // namespace

int main(int argc, char** argv) {
    const double gib = argc > 1 ? std::atof(argv[1]) : 8.0;
    Bench b;
    b.samples = std::max(1, argc > 2 ? std::atoi(argv[2]) : 10);
    const int device = argc > 3 ? std::atoi(argv[3]) : 0;
    if (!(gib > 0)) {
        std::fprintf(stderr, "usage: fill_verify_kernels [GIB [SAMPLES [DEVICE]]]\n");
        return 2;
    }
    b.bytes = static_cast<u64>(gib * (1ULL << 30)) & ~63ULL;
    CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    CHECK(cudaGetDeviceProperties(&prop, device));
    const Peak peak = peak_bandwidth(device);
    b.peak = peak.best();
    CHECK(cudaMalloc(&b.buffer, b.bytes));
    CHECK(cudaMalloc(&b.count, sizeof(CountResult)));
    CHECK(cudaMalloc(&b.errors, sizeof(FirstErrors)));
    CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&b.start));
    CHECK(cudaEventCreate(&b.end));
    std::printf("# fill_verify_kernels on %s (device %d, %d SMs)\n\n", prop.name, device, prop.multiProcessorCount);
    std::printf("- buffer: %.2f GiB, median of %d launches after 2 warm-ups\n", b.bytes / double(1ULL << 30), b.samples);
    std::printf("- peak: %.1f GB/s from NVML max memory clock x bus width x 2; %.1f GB/s from cudaDevAttrMemoryClockRate; "
                "%% below is of %.1f GB/s\n",
                peak.nvml / 1e9, peak.attribute / 1e9, b.peak / 1e9);
    std::printf("- fill+verify: 2 x buffer / (fill time + verify time); \"all five\": over the five patterns in a row\n");
    bench_fill_verify(b);
    bench_memtest(b);
    cudaFree(b.buffer);
    cudaFree(b.count);
    cudaFree(b.errors);
    return 0;
}
