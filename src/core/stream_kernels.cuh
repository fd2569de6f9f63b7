// Streaming kernels over 64-bit words, as templates: fill, verify, and
// verify-then-write a word function over a buffer, a rotating copy, and a
// strided check. core/kernels.cu instantiates them with `Default` below and
// bench/fill_verify_kernels.cu with every variant it compares, so that the
// variant the benchmark finds fastest is switched in by changing that one
// line. CUDA only (nvcc); plain C++ uses
// core/kernels.hpp.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "base/memtest_words.hpp"

namespace gpumem::stream {

using u64 = unsigned long long;

// How a thread reads: plain ld.global, through the read-only cache (__ldg),
// or marked evict-first (__ldcs, data used once).
enum class Load { plain, ldg, ldcs };
// How it writes: plain st.global or evict-first (__stcs).
enum class Store { plain, stcs };
// How many blocks: resident (SMs x blocks that fit on one, each striding over
// the buffer), capped (one tile a block up to 8192 blocks: the kernels of
// gpumem 0.1) or one tile a block (no striding).
enum class Grid { resident, capped, tile_per_block };

// A kernel variant: Unroll 16-byte vectors a thread keeps in flight, the
// load and store flavour, and whether index arithmetic is 64-bit even when
// the buffer would allow 32-bit.
template <int UnrollV, Load LoadV = Load::plain, Store StoreV = Store::plain, bool WideIndexV = false,
          Grid GridV = Grid::resident, int ThreadsV = 512>
struct Config {
    static constexpr int unroll = UnrollV;
    static constexpr Load load = LoadV;
    static constexpr Store store = StoreV;
    static constexpr bool wide_index = WideIndexV;
    static constexpr Grid grid = GridV;
    static constexpr int threads = ThreadsV;
};

// The variant gpumem's kernels use (core/kernels.cu): the one line to change
// when bench/fill_verify_kernels finds a faster one. 16-byte vectors, four of
// them in flight a thread (reading HBM at full rate needs many bytes in
// flight per SM, which one 8-byte load at a time a thread does not give),
// plain loads and stores, 32-bit indices where they fit, and a grid of at
// most 8192 blocks striding over the buffer. On an H200
// (bench/results/2026-11-23-fill-verify-kernels-h200.md) it reached 93.4 % of
// peak for fill+verify over the five patterns, against 84.9 % for gpumem
// 0.1's kernels; one tile a block reached 94.2 % there but lost on the random
// pattern's verify (76.7 % against 85.8 %) and on the memtest block moves.
using Default = Config<4, Load::plain, Store::plain, false, Grid::capped>;

// ---------------------------------------------------------------------------
// Word functions: the value at (global word index, device address).

struct NoWord {
    __host__ __device__ u64 operator()(u64, u64) const { return 0; }
};
struct ZerosWord {
    __host__ __device__ u64 operator()(u64, u64) const { return 0; }
};
struct OnesWord {
    __host__ __device__ u64 operator()(u64, u64) const { return ~0ULL; }
};
struct WalkingWord {
    u64 seed;
    __host__ __device__ u64 operator()(u64 index, u64) const { return 1ULL << ((index + seed) & 63); }
};
struct AddressWord {
    __host__ __device__ u64 operator()(u64, u64 address) const { return address; }
};
struct RandomWord {
    u64 seed;
    __host__ __device__ u64 operator()(u64 index, u64) const { return splitmix64(seed ^ (index * 0xD1B54A32D192ED03ULL)); }
};

// Pattern (base/alloc_plan.hpp) by number: 0 zeros, 1 ones, 2 walking, 3 address, 4 random.
__host__ __device__ inline u64 pattern_value(int pattern, u64 seed, u64 index, u64 address) {
    switch (pattern) {
        case 0: return ZerosWord{}(index, address);
        case 1: return OnesWord{}(index, address);
        case 2: return WalkingWord{seed}(index, address);
        case 3: return AddressWord{}(index, address);
        default: return RandomWord{seed}(index, address);
    }
}

// A memtest word pattern whose kind is fixed at compile time.
template <WordKind K>
struct MemtestWord {
    WordPattern pattern;
    ChunkSpan chunk;
    __host__ __device__ u64 operator()(u64 index, u64 address) const {
        return memtest_word_of<K>(pattern, index, address, chunk);
    }
};

// ---------------------------------------------------------------------------
// Mismatch bookkeeping: each thread counts in registers; only at the end,
// and only in a warp where some lane saw a mismatch, does anything reach
// memory.

struct Mismatch {
    u64 count = 0, first = ~0ULL, expected = 0, actual = 0;
    __device__ void note(u64 index, u64 want, u64 got) {
        ++count;
        if (index < first) {
            first = index;
            expected = want;
            actual = got;
        }
    }
};

constexpr unsigned kFullWarp = 0xffffffffu;

// Sum of counts and the lowest index (with its expected and actual words)
// over the warp, in lane 0. Every lane of the warp must call it.
__device__ inline Mismatch warp_reduce(Mismatch m) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        const u64 count = __shfl_down_sync(kFullWarp, m.count, offset);
        const u64 first = __shfl_down_sync(kFullWarp, m.first, offset);
        const u64 expected = __shfl_down_sync(kFullWarp, m.expected, offset);
        const u64 actual = __shfl_down_sync(kFullWarp, m.actual, offset);
        m.count += count;
        if (first < m.first) {
            m.first = first;
            m.expected = expected;
            m.actual = actual;
        }
    }
    return m;
}

struct NoRecorder {
    __device__ void flush(const Mismatch&) const {}
};

// Count and first index (a struct with `mismatches` and `first_bad_index`),
// one atomic pair per thread that saw a mismatch: gpumem 0.1's bookkeeping.
template <class Result>
__device__ void add_count(Result* result, const Mismatch& m) {
    atomicAdd(&result->mismatches, m.count);
    atomicMin(&result->first_bad_index, m.first);
}

template <class Result>
struct ThreadCountRecorder {
    Result* result;
    __device__ void flush(const Mismatch& m) const {
        if (m.count != 0) add_count(result, m);
    }
};

// The same through one atomic pair per warp with a mismatch.
template <class Result>
struct WarpCountRecorder {
    Result* result;
    __device__ void flush(const Mismatch& m) const {
        if (!__any_sync(kFullWarp, m.count != 0)) return;
        const Mismatch w = warp_reduce(m);
        if ((threadIdx.x & 31) == 0) add_count(result, w);
    }
};

// Count, and the lowest bad word with its expected and actual values (a
// struct with mismatches, first_index, expected, actual and an unsigned lock).
// The three words of the first bad one change together under a spin lock
// that one lane per warp takes, so two warps cannot mix their words.
template <class Errors>
struct FirstWordRecorder {
    Errors* errors;
    __device__ void flush(const Mismatch& m) const {
        if (!__any_sync(kFullWarp, m.count != 0)) return;
        const Mismatch w = warp_reduce(m);
        if ((threadIdx.x & 31) != 0) return;
        atomicAdd(&errors->mismatches, w.count);
        volatile Errors* shared = errors;
        if (w.first >= shared->first_index) return;
        while (atomicCAS(&errors->lock, 0u, 1u) != 0u) {
        }
        __threadfence();
        if (w.first < shared->first_index) {
            shared->first_index = w.first;
            shared->expected = w.expected;
            shared->actual = w.actual;
        }
        __threadfence();
        atomicExch(&errors->lock, 0u);
    }
};

// ---------------------------------------------------------------------------
// Loads and stores

template <Load L, typename T>
__device__ __forceinline__ T load(const T* p) {
    if constexpr (L == Load::ldg) {
        return __ldg(p);
    } else if constexpr (L == Load::ldcs) {
        return __ldcs(p);
    } else {
        return *p;
    }
}

template <Store S, typename T>
__device__ __forceinline__ void store(T* p, const T& v) {
    if constexpr (S == Store::stcs) {
        __stcs(p, v);
    } else {
        *p = v;
    }
}

// ---------------------------------------------------------------------------
// Fill, verify, verify-then-write

enum class Mode { write, check, check_write };

// What happens to word `w` (from the buffer's start) and the 16-byte vector
// at word `w`: compare with Expect, produce Write.
template <Mode M, class Expect, class Write>
struct WordStep {
    Expect expect;
    Write write;
    u64 first_index, base_address;

    __device__ __forceinline__ u64 word(u64 w, u64 got, Mismatch& m) const {
        const u64 index = first_index + w, address = base_address + 8 * w;
        if constexpr (M != Mode::write) {
            const u64 want = expect(index, address);
            if (got != want) m.note(index, want, got);
        }
        if constexpr (M != Mode::check) return write(index, address);
        return 0;
    }
    __device__ __forceinline__ ulonglong2 vector(u64 w, ulonglong2 v, Mismatch& m) const {
        ulonglong2 out;
        out.x = word(w, v.x, m);
        out.y = word(w + 1, v.y, m);
        return out;
    }
};

// A load of data the same thread overwrites must not go through the
// read-only cache.
template <class Cfg, Mode M>
constexpr Load kLoadFor = (M == Mode::check_write && Cfg::load == Load::ldg) ? Load::plain : Cfg::load;

// Applies `step` to `words` words at `data`: 16-byte vectors in tiles of
// threads x unroll (all loads of a tile issued before any use), then the
// rest one vector a thread; thread 0 takes a word before the first 16-byte
// boundary and a last odd word. Every thread reaches the recorder.
template <class Cfg, Mode M, typename Index, class Step, class Recorder>
__global__ void __launch_bounds__(Cfg::threads) words_kernel(u64* data, u64 words, Step step, Recorder recorder) {
    constexpr int U = Cfg::unroll;
    constexpr Load L = kLoadFor<Cfg, M>;
    Mismatch m;
    const u64 head = (reinterpret_cast<std::uintptr_t>(data) & 15) ? 1 : 0;
    const u64 vector_words = words > head ? (words - head) & ~1ULL : 0;
    const Index n = static_cast<Index>(vector_words / 2);
    auto* vec = reinterpret_cast<ulonglong2*>(data + head);
    const Index tile = static_cast<Index>(blockDim.x) * U;
    const Index full_tiles = n / tile;
    for (Index t = blockIdx.x; t < full_tiles; t += gridDim.x) {
        const Index i0 = t * tile + threadIdx.x;
        ulonglong2 v[U] = {};
        if constexpr (M != Mode::write) {
#pragma unroll
            for (int k = 0; k < U; ++k) v[k] = load<L>(vec + i0 + k * blockDim.x);
        }
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const Index i = i0 + k * blockDim.x;
            const ulonglong2 out = step.vector(head + 2 * static_cast<u64>(i), v[k], m);
            if constexpr (M != Mode::check) store<Cfg::store>(vec + i, out);
        }
    }
    const Index threads = static_cast<Index>(gridDim.x) * blockDim.x;
    for (Index i = full_tiles * tile + static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threads) {
        const ulonglong2 v = M != Mode::write ? load<L>(vec + i) : ulonglong2{};
        const ulonglong2 out = step.vector(head + 2 * static_cast<u64>(i), v, m);
        if constexpr (M != Mode::check) store<Cfg::store>(vec + i, out);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        auto scalar = [&](u64 w) {
            const u64 out = step.word(w, M != Mode::write ? data[w] : 0, m);
            if constexpr (M != Mode::check) data[w] = out;
        };
        if (head) scalar(0);
        for (u64 w = head + vector_words; w < words; ++w) scalar(w);
    }
    recorder.flush(m);
}

// Upper-bound on a buffer's vectors below which 32-bit indices cannot
// overflow (loop increments stay below 2^32).
constexpr u64 kNarrowIndexLimit = 1ULL << 31;

// compute() for the current device, kept in `cache` (one per device ordinal
// below 64; 0 means not yet known). Device attributes do not change while a
// process runs.
template <class Compute>
int cached_for_current_device(std::atomic<int> (&cache)[64], Compute compute) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return 1;
    const bool cacheable = device >= 0 && device < 64;
    if (cacheable) {
        if (const int n = cache[device].load(std::memory_order_relaxed)) return n;
    }
    int n = compute(device);
    if (n <= 0) n = 1;
    if (cacheable) cache[device].store(n, std::memory_order_relaxed);
    return n;
}

// SMs of the current device.
inline int current_sm_count() {
    static std::atomic<int> cache[64];
    return cached_for_current_device(cache, [](int device) {
        int n = 0;
        return cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) == cudaSuccess ? n : 1;
    });
}

// Blocks of `Kernel` resident on one SM of the current device.
template <auto Kernel, int Threads>
int resident_blocks_per_sm() {
    static std::atomic<int> cache[64];
    return cached_for_current_device(cache, [](int) {
        int n = 0;
        return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, Threads, 0) == cudaSuccess ? n : 1;
    });
}

template <class Cfg, auto Kernel>
unsigned grid_for_tiles(u64 tiles) {
    u64 blocks = tiles;
    if constexpr (Cfg::grid == Grid::resident) {
        const u64 resident = static_cast<u64>(current_sm_count()) * resident_blocks_per_sm<Kernel, Cfg::threads>();
        blocks = tiles < resident ? tiles : resident;
    } else if constexpr (Cfg::grid == Grid::capped) {
        blocks = tiles < 8192 ? tiles : 8192;
    }
    if (blocks > 0x7fffffffULL) blocks = 0x7fffffffULL;
    return static_cast<unsigned>(blocks == 0 ? 1 : blocks);
}

template <class Cfg, Mode M, typename Index, class Step, class Recorder>
void launch_words_as(u64* data, u64 words, const Step& step, const Recorder& recorder, cudaStream_t stream) {
    constexpr auto kernel = &words_kernel<Cfg, M, Index, Step, Recorder>;
    const u64 tile = static_cast<u64>(Cfg::threads) * Cfg::unroll;
    const u64 tiles = (words / 2 + tile - 1) / tile;
    kernel<<<grid_for_tiles<Cfg, kernel>(tiles), Cfg::threads, 0, stream>>>(data, words, step, recorder);
}

// Runs mode M of (expect, write) over `words` words at `data`, whose first
// word has global index `first_index`; mismatches go to `recorder`.
// Returns without launching when words is 0; launch errors are left to the
// caller's cudaGetLastError.
template <class Cfg, Mode M, class Expect, class Write, class Recorder>
void launch_words(void* data, u64 words, u64 first_index, const Expect& expect, const Write& write,
                  const Recorder& recorder, cudaStream_t stream) {
    if (words == 0) return;
    auto* d = static_cast<u64*>(data);
    const WordStep<M, Expect, Write> step{expect, write, first_index, reinterpret_cast<u64>(data)};
    if (!Cfg::wide_index && words / 2 < kNarrowIndexLimit) {
        launch_words_as<Cfg, M, unsigned>(d, words, step, recorder, stream);
    } else {
        launch_words_as<Cfg, M, u64>(d, words, step, recorder, stream);
    }
}

// ---------------------------------------------------------------------------
// Rotating copy (block moves): dst[i] = src[(i + delta) mod n], in vectors.

template <class Cfg, typename Index>
__global__ void __launch_bounds__(Cfg::threads) rotate_copy_kernel(ulonglong2* dst, const ulonglong2* src, Index n, Index delta) {
    constexpr int U = Cfg::unroll;
    const Index tile = static_cast<Index>(blockDim.x) * U;
    const Index full_tiles = n / tile;
    auto source = [&](Index i) {
        const Index j = i + delta;
        return j >= n ? j - n : j;
    };
    for (Index t = blockIdx.x; t < full_tiles; t += gridDim.x) {
        const Index i0 = t * tile + threadIdx.x;
        ulonglong2 v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) v[k] = load<Cfg::load>(src + source(i0 + k * blockDim.x));
#pragma unroll
        for (int k = 0; k < U; ++k) store<Cfg::store>(dst + i0 + k * blockDim.x, v[k]);
    }
    const Index threads = static_cast<Index>(gridDim.x) * blockDim.x;
    for (Index i = full_tiles * tile + static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threads)
        store<Cfg::store>(dst + i, load<Cfg::load>(src + source(i)));
}

// `vectors` 16-byte vectors; dst and src 16-byte aligned and disjoint.
template <class Cfg>
void launch_rotate_copy(void* dst, const void* src, u64 vectors, u64 delta, cudaStream_t stream) {
    if (vectors == 0) return;
    delta %= vectors;
    auto* d = static_cast<ulonglong2*>(dst);
    const auto* s = static_cast<const ulonglong2*>(src);
    const u64 tiles = (vectors + static_cast<u64>(Cfg::threads) * Cfg::unroll - 1) / (static_cast<u64>(Cfg::threads) * Cfg::unroll);
    if (!Cfg::wide_index && vectors < kNarrowIndexLimit) {
        constexpr auto kernel = &rotate_copy_kernel<Cfg, unsigned>;
        kernel<<<grid_for_tiles<Cfg, kernel>(tiles), Cfg::threads, 0, stream>>>(d, s, static_cast<unsigned>(vectors),
                                                                               static_cast<unsigned>(delta));
    } else {
        constexpr auto kernel = &rotate_copy_kernel<Cfg, u64>;
        kernel<<<grid_for_tiles<Cfg, kernel>(tiles), Cfg::threads, 0, stream>>>(d, s, vectors, delta);
    }
}

// ---------------------------------------------------------------------------
// Strided check (modulo-20): only the words whose global index is
// `offset` mod `stride`. Each thread keeps Unroll loads in flight.

template <class Cfg, class Expect, class Recorder>
__global__ void __launch_bounds__(Cfg::threads) strided_check_kernel(const u64* data, u64 first_index, u64 first_word,
                                                                    u64 count, u64 stride, Expect expect, Recorder recorder) {
    constexpr int U = Cfg::unroll;
    Mismatch m;
    const u64 threads = static_cast<u64>(gridDim.x) * blockDim.x;
    const u64 base_address = reinterpret_cast<u64>(data);
    for (u64 k0 = blockIdx.x * static_cast<u64>(blockDim.x) + threadIdx.x; k0 < count; k0 += threads * U) {
        u64 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u64 k = k0 + u * threads;
            v[u] = k < count ? load<Cfg::load>(data + first_word + k * stride) : 0;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u64 k = k0 + u * threads;
            const u64 w = first_word + k * stride;
            const u64 want = expect(first_index + w, base_address + 8 * w);
            if (k < count && v[u] != want) m.note(first_index + w, want, v[u]);
        }
    }
    recorder.flush(m);
}

// Checks the words of [data, data + words) whose global index (first_index +
// offset in words) is `residue` mod `stride`.
template <class Cfg, class Expect, class Recorder>
void launch_strided_check(const void* data, u64 words, u64 first_index, u64 stride, u64 residue, const Expect& expect,
                          const Recorder& recorder, cudaStream_t stream) {
    const u64 first_word = (residue % stride + stride - first_index % stride) % stride;
    if (words <= first_word) return;
    const u64 count = (words - first_word + stride - 1) / stride;
    constexpr auto kernel = &strided_check_kernel<Cfg, Expect, Recorder>;
    const u64 per_block = static_cast<u64>(Cfg::threads) * Cfg::unroll;
    kernel<<<grid_for_tiles<Cfg, kernel>((count + per_block - 1) / per_block), Cfg::threads, 0, stream>>>(
        static_cast<const u64*>(data), first_index, first_word, count, stride, expect, recorder);
}

}  // namespace gpumem::stream
