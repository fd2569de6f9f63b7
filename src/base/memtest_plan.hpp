// The deep memory tests (`check --level long`): the memtest86 set that
// cuda_memtest and DCGM's memtest plugin run, each written as a list of
// phases over the whole tested memory. Pure logic: the table of tests, the
// phases of each, the bytes each phase moves and a host model of every word
// (base/memtest_words.hpp), which the kernels share. bench/memtest runs them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/memtest_words.hpp"
#include "base/name_table.hpp"

namespace gpumem {

enum class MemtestKind : int {
    walking_bit,
    own_address,
    inversions_ones,
    inversions_8bit,
    inversions_random,
    block_move,
    modulo_20,
};

// Names, one-line help and order (`all`, --list, the schema's enum) of the tests.
extern const NameTable<MemtestKind> kMemtestKinds;
const char* memtest_name(MemtestKind kind) noexcept;

// What a phase does to every chunk of the tested memory.
enum class PhaseOp : int {
    write,         // store `write`
    check,         // compare with `expect`
    check_write,   // compare with `expect`, then store `write` (the moving-inversion step)
    move_up,       // upper half[j] = lower half[(j - write.a) mod half]
    move_down,     // lower half[i] = upper half[(i + write.a) mod half]
    check_sparse,  // compare with `expect` only the words whose index mod kModuloStride is expect.a
};

struct MemtestPhase {
    PhaseOp op = PhaseOp::write;
    WordPattern expect, write;
};

bool phase_checks(PhaseOp op) noexcept;

// The phases of one iteration of a test. `iteration` varies the random
// words, the walking start and the 8-bit pattern, as repeated passes of
// memtest86 do; the same (seed, iteration) gives the same words.
std::vector<MemtestPhase> memtest_phases(MemtestKind kind, std::uint64_t seed, unsigned iteration);

// The random word of a test's iteration (inversions-random, modulo-20).
std::uint64_t memtest_random_word(std::uint64_t seed, unsigned iteration, MemtestKind kind);

// Bytes a phase reads plus bytes it writes over a chunk of `chunk` (what its
// bandwidth is counted from).
std::uint64_t phase_traffic_bytes(PhaseOp op, const WordPattern& expect, const ChunkSpan& chunk);

// Where the fault-injection test hook corrupts a word: just before the
// first phase that checks, so that exactly that check sees it.
std::size_t first_checking_phase(const std::vector<MemtestPhase>& phases);

// The value a checking phase expects at global word `index` (host model of
// the kernels' comparison).
inline std::uint64_t phase_expected_word(const MemtestPhase& phase, std::uint64_t index, std::uint64_t address,
                                         const ChunkSpan& chunk) {
    return memtest_word(phase.expect, index, address, chunk);
}

// Tested memory is cut into chunks that are multiples of this many bytes.
inline constexpr std::uint64_t kMemtestAlignBytes = kMemtestWordAlign * 8;
// The least memory run_memtest accepts.
inline constexpr std::uint64_t kMemtestMinBytes = kMemtestAlignBytes;

// `bytes` rounded down to a multiple of kMemtestAlignBytes: cut into
// pieces of a rounded chunk size, every piece splits into halves of whole
// 16-byte vectors.
inline constexpr std::uint64_t memtest_round_down(std::uint64_t bytes) { return bytes - bytes % kMemtestAlignBytes; }

}  // namespace gpumem
