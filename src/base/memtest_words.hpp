// The words the memtest patterns write, as one definition that the kernels
// (core/kernels.cu) and the host (reports, tests) both compile: nvcc sees
// __host__ __device__ functions, a plain C++ compiler sees inline ones. No
// CUDA header is needed.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPUMEM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GPUMEM_HOST_DEVICE inline
#endif

namespace gpumem {

GPUMEM_HOST_DEVICE std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

GPUMEM_HOST_DEVICE std::uint64_t rotate_left(std::uint64_t x, unsigned bits) {
    bits &= 63u;
    return bits == 0 ? x : (x << bits) | (x >> (64u - bits));
}

// How a memtest phase computes the word at a global word index (counted over
// every chunk of the tested memory, so patterns run on across chunks).
enum class WordKind : int {
    constant,  // a
    walking,   // a single bit at (index + a) mod 64, the whole word xor b (b = ~0: walking 0)
    address,   // the word's own device address, xor b
    modulo,    // b at every word whose index mod kModuloStride is a, ~b elsewhere
    block,     // block-move: the lower half of a chunk holds a shifting pattern, the upper half that
               // pattern rotated by a words (see block_move_source)
};

struct WordPattern {
    WordKind kind = WordKind::constant;
    std::uint64_t a = 0, b = 0;
};

// The chunk a word lies in: its first global word index and its length in
// words (a multiple of kMemtestWordAlign).
struct ChunkSpan {
    std::uint64_t first = 0, words = 0;
};

inline constexpr std::uint64_t kModuloStride = 20;
// Chunk lengths are multiples of this many words, so every chunk splits into
// two halves of whole 16-byte vectors.
inline constexpr std::uint64_t kMemtestWordAlign = 8;

// memtest86's block-move seed pattern: a bit shifting by one every two words,
// every second word inverted; `rotation` starts the shift elsewhere.
GPUMEM_HOST_DEVICE std::uint64_t block_seed_word(std::uint64_t index, std::uint64_t rotation) {
    const std::uint64_t bit = rotate_left(1ULL, static_cast<unsigned>(((index >> 1) + rotation) & 63u));
    return (index & 1u) ? ~bit : bit;
}

// Global index of the lower-half word whose value the upper-half word at
// global `index` holds after block moves shifted by `shift` words.
// Kernels evaluate this for every word: the shift is small next to any
// real half, so the 64-bit divisions (slow on a GPU) are skipped there.
GPUMEM_HOST_DEVICE std::uint64_t block_move_source(std::uint64_t index, std::uint64_t shift, const ChunkSpan& chunk) {
    const std::uint64_t half = chunk.words / 2;
    const std::uint64_t j = index - chunk.first - half;
    const std::uint64_t s = shift < half ? shift : shift % half;
    return chunk.first + (j >= s ? j - s : j + half - s);
}

template <WordKind K>
GPUMEM_HOST_DEVICE std::uint64_t memtest_word_of(const WordPattern& p, std::uint64_t index, std::uint64_t address,
                                                 const ChunkSpan& chunk) {
    if constexpr (K == WordKind::constant) {
        return p.a;
    } else if constexpr (K == WordKind::walking) {
        return rotate_left(1ULL, static_cast<unsigned>((index + p.a) & 63u)) ^ p.b;
    } else if constexpr (K == WordKind::address) {
        return address ^ p.b;
    } else if constexpr (K == WordKind::modulo) {
        return index % kModuloStride == p.a ? p.b : ~p.b;
    } else {
        const bool upper = index - chunk.first >= chunk.words / 2;
        return block_seed_word(upper ? block_move_source(index, p.a, chunk) : index, p.b);
    }
}

// The word a pattern holds at global word `index`, device address `address`.
GPUMEM_HOST_DEVICE std::uint64_t memtest_word(const WordPattern& p, std::uint64_t index, std::uint64_t address,
                                              const ChunkSpan& chunk) {
    switch (p.kind) {
        case WordKind::constant: return memtest_word_of<WordKind::constant>(p, index, address, chunk);
        case WordKind::walking: return memtest_word_of<WordKind::walking>(p, index, address, chunk);
        case WordKind::address: return memtest_word_of<WordKind::address>(p, index, address, chunk);
        case WordKind::modulo: return memtest_word_of<WordKind::modulo>(p, index, address, chunk);
        default: return memtest_word_of<WordKind::block>(p, index, address, chunk);
    }
}

}  // namespace gpumem
