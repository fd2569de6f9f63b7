#include "base/memtest_plan.hpp"

namespace gpumem {

// The numbers are cuda_memtest's (and DCGM's memtest plugin's) test numbers.
constexpr Named<MemtestKind> kMemtestKindRows[] = {
    {"walking-bit", MemtestKind::walking_bit, "a single 1 bit, then a single 0 bit, moving with the word index (test 0)"},
    {"own-address", MemtestKind::own_address, "each word holds its own address, then its complement (test 1)"},
    {"inversions-ones", MemtestKind::inversions_ones, "moving inversions of all zeros and all ones (test 2)"},
    {"inversions-8bit", MemtestKind::inversions_8bit, "moving inversions of an 8-bit walking pattern in every byte (test 3)"},
    {"inversions-random", MemtestKind::inversions_random, "moving inversions of a random word and its complement (test 4)"},
    {"block-move", MemtestKind::block_move, "shifting patterns moved between the halves of each chunk, then checked (test 5)"},
    {"modulo-20", MemtestKind::modulo_20, "a random word at every 20th word, its complement elsewhere, all 20 offsets (test 8)"},
};
constexpr NameTable<MemtestKind> kMemtestKinds{"memtest", kMemtestKindRows};

const char* memtest_name(MemtestKind kind) noexcept { return kMemtestKinds.name_of(kind).data(); }

bool phase_checks(PhaseOp op) noexcept {
    return op == PhaseOp::check || op == PhaseOp::check_write || op == PhaseOp::check_sparse;
}

std::uint64_t memtest_random_word(std::uint64_t seed, unsigned iteration, MemtestKind kind) {
    return splitmix64(seed ^ splitmix64((static_cast<std::uint64_t>(kind) << 32) | iteration));
}

namespace {

MemtestPhase write_phase(const WordPattern& p) { return {PhaseOp::write, {}, p}; }
MemtestPhase check_phase(const WordPattern& p) { return {PhaseOp::check, p, {}}; }

WordPattern constant(std::uint64_t value) { return {WordKind::constant, value, 0}; }

// Write p, check p while writing ~p, check ~p; then the same from ~p.
void moving_inversions(std::vector<MemtestPhase>& phases, std::uint64_t p) {
    for (const std::uint64_t first : {p, ~p}) {
        phases.push_back(write_phase(constant(first)));
        phases.push_back({PhaseOp::check_write, constant(first), constant(~first)});
        phases.push_back(check_phase(constant(~first)));
    }
}

// The block-move shift in words: even, so moves stay in whole 16-byte
// vectors, and half of it odd, so that no shift maps the seed pattern onto
// itself and every upper-half word changes in the move.
std::uint64_t block_shift(unsigned iteration) { return 2 * (2 * static_cast<std::uint64_t>(iteration % 32) + 1); }

void block_move(std::vector<MemtestPhase>& phases, unsigned iteration) {
    const std::uint64_t rotation = iteration % 64;
    // The upper half starts as an unshifted copy, so the moves must change it.
    phases.push_back(write_phase({WordKind::block, 0, rotation}));
    const WordPattern moved{WordKind::block, block_shift(iteration), rotation};
    phases.push_back({PhaseOp::move_up, {}, moved});
    phases.push_back({PhaseOp::move_down, {}, moved});
    phases.push_back(check_phase(moved));
}

void modulo_20(std::vector<MemtestPhase>& phases, std::uint64_t p) {
    for (std::uint64_t offset = 0; offset < kModuloStride; ++offset)
        for (const std::uint64_t value : {p, ~p}) {
            const WordPattern pattern{WordKind::modulo, offset, value};
            phases.push_back(write_phase(pattern));
            phases.push_back({PhaseOp::check_sparse, pattern, {}});
        }
}

// Write, check; the same for the second pattern.
void write_check_pairs(std::vector<MemtestPhase>& phases, const WordPattern& a, const WordPattern& b) {
    for (const WordPattern& p : {a, b}) {
        phases.push_back(write_phase(p));
        phases.push_back(check_phase(p));
    }
}

}  // namespace

std::vector<MemtestPhase> memtest_phases(MemtestKind kind, std::uint64_t seed, unsigned iteration) {
    std::vector<MemtestPhase> phases;
    switch (kind) {
        case MemtestKind::walking_bit:
            write_check_pairs(phases, {WordKind::walking, iteration % 64u, 0}, {WordKind::walking, iteration % 64u, ~0ULL});
            break;
        case MemtestKind::own_address:
            write_check_pairs(phases, {WordKind::address, 0, 0}, {WordKind::address, 0, ~0ULL});
            break;
        case MemtestKind::inversions_ones: moving_inversions(phases, 0); break;
        case MemtestKind::inversions_8bit:
            // memtest86 walks the 8-bit pattern over its 8 positions, one per pass; 0x80 first, as cuda_memtest.
            moving_inversions(phases, (0x80ULL >> (iteration % 8u)) * 0x0101010101010101ULL);
            break;
        case MemtestKind::inversions_random: moving_inversions(phases, memtest_random_word(seed, iteration, kind)); break;
        case MemtestKind::block_move: block_move(phases, iteration); break;
        case MemtestKind::modulo_20: modulo_20(phases, memtest_random_word(seed, iteration, kind)); break;
    }
    return phases;
}

namespace {

// Words g in [0, end) with g mod kModuloStride == offset.
std::uint64_t modulo_words_below(std::uint64_t end, std::uint64_t offset) {
    return end > offset ? (end - offset + kModuloStride - 1) / kModuloStride : 0;
}

}  // namespace

std::uint64_t phase_traffic_bytes(PhaseOp op, const WordPattern& expect, const ChunkSpan& chunk) {
    switch (op) {
        case PhaseOp::check_write: return chunk.words * 16;
        case PhaseOp::check_sparse:
            return 8 * (modulo_words_below(chunk.first + chunk.words, expect.a) - modulo_words_below(chunk.first, expect.a));
        default: return chunk.words * 8;  // one pass; a move reads one half and writes the other
    }
}

std::size_t first_checking_phase(const std::vector<MemtestPhase>& phases) {
    for (std::size_t i = 0; i < phases.size(); ++i)
        if (phase_checks(phases[i].op)) return i;
    return phases.size();
}

}  // namespace gpumem
