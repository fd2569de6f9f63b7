// Host-callable launchers of gpumem's kernels (src/kernels.cu). The header
// has no CUDA syntax so plain C++ files can use it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "base/alloc_plan.hpp"
#include "base/memtest_plan.hpp"

namespace gpumem {

// A one-thread kernel that holds `stream` until *release_flag (host-mapped
// memory) becomes non-zero or `timeout_ns` passes; sets *timed_out then. It
// lets timed work be queued before any of it runs, so launch overhead stays
// out of the measurement (nvbandwidth's method).
void launch_spin(volatile int* release_flag_device, int* timed_out_device, std::uint64_t timeout_ns, cudaStream_t stream);

// Result of a verification kernel, in device memory.
struct VerifyResult {
    unsigned long long mismatches;
    unsigned long long first_bad_index;  // word index; ~0ULL when none
};

// Counts words of `width_bytes` (1, 2 or 4) in [data, data + count words)
// that differ from `value`; writes into *result (device memory, must start
// zeroed with first_bad_index = ~0ULL: see reset_verify_result).
void launch_verify_words(const void* data, std::size_t count, int width_bytes, std::uint32_t value, VerifyResult* result,
                         cudaStream_t stream);
void reset_verify_result(VerifyResult* result, cudaStream_t stream);

// Test patterns (Pattern: base/alloc_plan.hpp) over 64-bit words.
void launch_fill_pattern(void* data, std::size_t words, Pattern pattern, std::uint64_t seed, cudaStream_t stream);
void launch_verify_pattern(const void* data, std::size_t words, Pattern pattern, std::uint64_t seed, VerifyResult* result,
                           cudaStream_t stream);
// The value the pattern holds at word `index` of a buffer starting at `base`
// (host side, for reports and tests).
std::uint64_t pattern_word(Pattern pattern, std::uint64_t seed, std::uint64_t index, std::uint64_t address);

// Mismatches of memtest phases, in device memory: the count, and the
// lowest-indexed bad word (global word index, the word the phase expected,
// the word it read). Start with reset_memtest_errors.
struct MemtestErrors {
    unsigned long long mismatches;
    unsigned long long first_index;  // ~0ULL when none
    unsigned long long expected, actual;
    unsigned int lock;  // held while a warp writes the three words above
    unsigned int unused;
};
void reset_memtest_errors(MemtestErrors* errors, cudaStream_t stream);

// One phase (base/memtest_plan.hpp) over one chunk: `data` holds
// chunk.words words (a multiple of kMemtestWordAlign, 16-byte aligned);
// chunk.first is the global index of its first word. The move phases copy
// between the chunk's halves.
void launch_memtest_phase(const MemtestPhase& phase, void* data, const ChunkSpan& chunk, MemtestErrors* errors,
                          cudaStream_t stream);

// Copy with SM loads/stores instead of a copy engine; `dst`/`src` may be host
// memory the device can address (mapped/registered) or peer memory.
void launch_sm_copy(void* dst, const void* src, std::size_t bytes, int sm_count, cudaStream_t stream);

}  // namespace gpumem
