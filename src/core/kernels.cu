#include "core/kernels.hpp"

#include <algorithm>

#include "core/cuda_check.hpp"
#include "core/stream_kernels.cuh"

namespace gpumem {
namespace {

__device__ __forceinline__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spin_kernel(volatile int* flag, int* timed_out, unsigned long long timeout_ns) {
    const unsigned long long start = global_timer_ns();
    while (*flag == 0) {
        if (global_timer_ns() - start > timeout_ns) {
            *timed_out = 1;
            return;
        }
    }
}

template <typename Word>
__global__ void verify_words_kernel(const Word* data, size_t count, Word value, VerifyResult* result) {
    unsigned long long local = 0;
    unsigned long long first = ~0ULL;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count; i += stride) {
        if (data[i] != value) {
            ++local;
            if (i < first) first = i;
        }
    }
    if (local) {
        atomicAdd(&result->mismatches, local);
        atomicMin(&result->first_bad_index, first);
    }
}

// 16-byte vector version for 32-bit words: most of the time is spent here on
// large buffers, and wide loads reach memory bandwidth.
__global__ void verify_words32_vec_kernel(const uint4* data, size_t vec_count, unsigned value, VerifyResult* result) {
    unsigned long long local = 0;
    unsigned long long first = ~0ULL;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < vec_count; i += stride) {
        const uint4 v = data[i];
        const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; ++k)
            if (w[k] != value) {
                ++local;
                const unsigned long long idx = i * 4 + k;
                if (idx < first) first = idx;
            }
    }
    if (local) {
        atomicAdd(&result->mismatches, local);
        atomicMin(&result->first_bad_index, first);
    }
}

__global__ void reset_result_kernel(VerifyResult* result) {
    result->mismatches = 0;
    result->first_bad_index = ~0ULL;
}

__global__ void reset_memtest_errors_kernel(MemtestErrors* errors) {
    *errors = MemtestErrors{0, ~0ULL, 0, 0, 0, 0};
}

__global__ void sm_copy_vec_kernel(uint4* dst, const uint4* src, size_t vec_count) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < vec_count; i += stride) dst[i] = src[i];
}

__global__ void sm_copy_bytes_kernel(unsigned char* dst, const unsigned char* src, size_t bytes) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < bytes; i += stride) dst[i] = src[i];
}

constexpr int kThreads = 512;

// The fill, verify and memtest kernels' variant (see stream_kernels.cuh).
using Stream = stream::Default;

unsigned grid_for(size_t work) {
    // Enough blocks to fill any current GPU several times over; grid-stride loops do the rest.
    const size_t blocks = (work + kThreads - 1) / kThreads;
    return static_cast<unsigned>(blocks < 8192 ? (blocks == 0 ? 1 : blocks) : 8192);
}

void check_launch(const char* name) {
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) throw_cuda_error(status, name);
}

}  // namespace

void launch_spin(volatile int* flag, int* timed_out, std::uint64_t timeout_ns, cudaStream_t stream) {
    spin_kernel<<<1, 1, 0, stream>>>(flag, timed_out, timeout_ns);
    check_launch("spin_kernel launch");
}

void reset_verify_result(VerifyResult* result, cudaStream_t stream) {
    reset_result_kernel<<<1, 1, 0, stream>>>(result);
    check_launch("reset_result_kernel launch");
}

void launch_verify_words(const void* data, std::size_t count, int width_bytes, std::uint32_t value, VerifyResult* result,
                         cudaStream_t stream) {
    if (count == 0) return;
    switch (width_bytes) {
        case 1:
            verify_words_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<const unsigned char*>(data), count,
                                                                          static_cast<unsigned char>(value), result);
            break;
        case 2:
            verify_words_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<const unsigned short*>(data), count,
                                                                          static_cast<unsigned short>(value), result);
            break;
        default:
            if (reinterpret_cast<std::uintptr_t>(data) % 16 == 0 && count % 4 == 0) {
                verify_words32_vec_kernel<<<grid_for(count / 4), kThreads, 0, stream>>>(static_cast<const uint4*>(data),
                                                                                        count / 4, value, result);
            } else {
                verify_words_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<const unsigned*>(data), count,
                                                                              static_cast<unsigned>(value), result);
            }
    }
    check_launch("verify_words_kernel launch");
}

namespace {

// Calls fn with the word function of `pattern`, its type fixed at compile time.
template <class Fn>
void with_pattern_word(Pattern pattern, std::uint64_t seed, Fn&& fn) {
    switch (pattern) {
        case Pattern::zeros: fn(stream::ZerosWord{}); break;
        case Pattern::ones: fn(stream::OnesWord{}); break;
        case Pattern::walking: fn(stream::WalkingWord{seed}); break;
        case Pattern::address: fn(stream::AddressWord{}); break;
        default: fn(stream::RandomWord{seed}); break;
    }
}

}  // namespace

void launch_fill_pattern(void* data, std::size_t words, Pattern pattern, std::uint64_t seed, cudaStream_t stream) {
    if (words == 0) return;
    with_pattern_word(pattern, seed, [&](auto word) {
        stream::launch_words<Stream, stream::Mode::write>(data, words, 0, stream::NoWord{}, word, stream::NoRecorder{}, stream);
    });
    check_launch("fill_pattern kernel launch");
}

void launch_verify_pattern(const void* data, std::size_t words, Pattern pattern, std::uint64_t seed, VerifyResult* result,
                           cudaStream_t stream) {
    if (words == 0) return;
    // Mode::check never stores, so the buffer stays const in fact.
    void* buffer = const_cast<void*>(data);
    with_pattern_word(pattern, seed, [&](auto word) {
        stream::launch_words<Stream, stream::Mode::check>(buffer, words, 0, word, stream::NoWord{},
                                                          stream::WarpCountRecorder<VerifyResult>{result}, stream);
    });
    check_launch("verify_pattern kernel launch");
}

std::uint64_t pattern_word(Pattern pattern, std::uint64_t seed, std::uint64_t index, std::uint64_t address) {
    return stream::pattern_value(static_cast<int>(pattern), seed, index, address);
}

void reset_memtest_errors(MemtestErrors* errors, cudaStream_t stream) {
    reset_memtest_errors_kernel<<<1, 1, 0, stream>>>(errors);
    check_launch("reset_memtest_errors_kernel launch");
}

namespace {

// Calls fn with the memtest word function of `p` over `chunk`, its kind
// fixed at compile time.
template <class Fn>
void with_memtest_word(const WordPattern& p, const ChunkSpan& chunk, Fn&& fn) {
    switch (p.kind) {
        case WordKind::constant: fn(stream::MemtestWord<WordKind::constant>{p, chunk}); break;
        case WordKind::walking: fn(stream::MemtestWord<WordKind::walking>{p, chunk}); break;
        case WordKind::address: fn(stream::MemtestWord<WordKind::address>{p, chunk}); break;
        case WordKind::modulo: fn(stream::MemtestWord<WordKind::modulo>{p, chunk}); break;
        case WordKind::block: fn(stream::MemtestWord<WordKind::block>{p, chunk}); break;
    }
}

// Block moves between the halves of a chunk, in 16-byte vectors: up,
// upper[j] = lower[(j - shift) mod half]; down, lower[i] = upper[(i + shift) mod half].
void launch_block_move(bool up, std::uint64_t shift_words, void* data, const ChunkSpan& chunk, cudaStream_t stream) {
    const std::uint64_t half = chunk.words / 2;
    if (half < 2) return;
    auto* lower = static_cast<unsigned long long*>(data);
    unsigned long long* upper = lower + half;
    const std::uint64_t vectors = half / 2;
    const std::uint64_t shift = (shift_words % half) / 2;
    if (up) {
        stream::launch_rotate_copy<Stream>(upper, lower, vectors, (vectors - shift) % vectors, stream);
    } else {
        stream::launch_rotate_copy<Stream>(lower, upper, vectors, shift, stream);
    }
}

}  // namespace

void launch_memtest_phase(const MemtestPhase& phase, void* data, const ChunkSpan& chunk, MemtestErrors* errors,
                          cudaStream_t stream) {
    using stream::Mode;
    const stream::FirstWordRecorder<MemtestErrors> recorder{errors};
    switch (phase.op) {
        case PhaseOp::write:
            with_memtest_word(phase.write, chunk, [&](auto word) {
                stream::launch_words<Stream, Mode::write>(data, chunk.words, chunk.first, stream::NoWord{}, word,
                                                          stream::NoRecorder{}, stream);
            });
            break;
        case PhaseOp::check:
            with_memtest_word(phase.expect, chunk, [&](auto word) {
                stream::launch_words<Stream, Mode::check>(data, chunk.words, chunk.first, word, stream::NoWord{}, recorder,
                                                          stream);
            });
            break;
        case PhaseOp::check_write:
            // One word function type for both: the plans pair patterns of one kind.
            if (phase.write.kind != phase.expect.kind) throw Error("memtest check_write phase with two pattern kinds");
            with_memtest_word(phase.expect, chunk, [&](auto expect) {
                const decltype(expect) write{phase.write, chunk};
                stream::launch_words<Stream, Mode::check_write>(data, chunk.words, chunk.first, expect, write, recorder,
                                                                stream);
            });
            break;
        case PhaseOp::move_up:
        case PhaseOp::move_down:
            launch_block_move(phase.op == PhaseOp::move_up, phase.write.a, data, chunk, stream);
            break;
        case PhaseOp::check_sparse:
            with_memtest_word(phase.expect, chunk, [&](auto word) {
                stream::launch_strided_check<Stream>(data, chunk.words, chunk.first, kModuloStride, phase.expect.a, word,
                                                     recorder, stream);
            });
            break;
    }
    check_launch("memtest kernel launch");
}

void launch_sm_copy(void* dst, const void* src, std::size_t bytes, int sm_count, cudaStream_t stream) {
    if (bytes == 0) return;
    // A few resident blocks per SM saturate the memory system without
    // oversubscribing; more only adds scheduling work.
    const unsigned blocks_cap = static_cast<unsigned>(sm_count > 0 ? sm_count * 4 : 1024);
    const bool aligned = reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
    const size_t vec_count = aligned ? bytes / 16 : 0;
    if (vec_count) {
        const unsigned blocks = std::min(grid_for(vec_count), blocks_cap);
        sm_copy_vec_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), vec_count);
        check_launch("sm_copy_vec_kernel launch");
    }
    const size_t done = vec_count * 16;
    if (done < bytes) {
        sm_copy_bytes_kernel<<<std::min(grid_for(bytes - done), blocks_cap), kThreads, 0, stream>>>(
            static_cast<unsigned char*>(dst) + done, static_cast<const unsigned char*>(src) + done, bytes - done);
        check_launch("sm_copy_bytes_kernel launch");
    }
}

}  // namespace gpumem
