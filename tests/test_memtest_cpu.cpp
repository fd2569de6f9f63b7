// CPU suite for the memtest plan (base/memtest_plan.hpp): the table of
// tests, the words of each pattern, and every test's phases run by a host
// model of the kernels over chunked memory: with no fault every check
// passes, and an inverted word is the first bad word each test reports,
// with the expected and actual words the kernels would record.
#include <doctest/doctest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/memtest_plan.hpp"

using namespace gpumem;

namespace {

// Tested memory in the host: chunks of words at made-up device addresses.
struct ModelMemory {
    std::vector<std::vector<std::uint64_t>> chunks;
    std::vector<ChunkSpan> spans;
    std::vector<std::uint64_t> bases;

    explicit ModelMemory(const std::vector<std::uint64_t>& chunk_words) {
        std::uint64_t first = 0, base = 0x7f3a00000000ULL;
        for (std::uint64_t words : chunk_words) {
            chunks.emplace_back(words, 0xdeadbeefULL);
            spans.push_back({first, words});
            bases.push_back(base);
            first += words;
            base += words * 8 + 4096;  // pieces are not contiguous
        }
    }
    std::uint64_t& word(std::uint64_t index) {
        for (std::size_t c = 0;; ++c)
            if (index < spans[c].first + spans[c].words) return chunks[c][index - spans[c].first];
    }
};

struct ModelErrors {
    std::uint64_t mismatches = 0, first = ~0ULL, expected = 0, actual = 0;
    void note(std::uint64_t index, std::uint64_t want, std::uint64_t got) {
        ++mismatches;
        if (index < first) {
            first = index;
            expected = want;
            actual = got;
        }
    }
};

void model_check(const MemtestPhase& phase, ModelMemory& m, std::size_t c, std::uint64_t w, ModelErrors& e) {
    const ChunkSpan& span = m.spans[c];
    const std::uint64_t want = phase_expected_word(phase, span.first + w, m.bases[c] + 8 * w, span);
    if (m.chunks[c][w] != want) e.note(span.first + w, want, m.chunks[c][w]);
}

// One phase as the kernels run it.
void model_phase(const MemtestPhase& phase, ModelMemory& m, ModelErrors& e) {
    for (std::size_t c = 0; c < m.chunks.size(); ++c) {
        std::vector<std::uint64_t>& words = m.chunks[c];
        const ChunkSpan& span = m.spans[c];
        const std::uint64_t half = span.words / 2, shift = phase.write.a % half;
        for (std::uint64_t w = 0; w < span.words; ++w) {
            const std::uint64_t index = span.first + w, address = m.bases[c] + 8 * w;
            switch (phase.op) {
                case PhaseOp::write: words[w] = memtest_word(phase.write, index, address, span); break;
                case PhaseOp::check: model_check(phase, m, c, w, e); break;
                case PhaseOp::check_write:
                    model_check(phase, m, c, w, e);
                    words[w] = memtest_word(phase.write, index, address, span);
                    break;
                case PhaseOp::check_sparse:
                    if (index % kModuloStride == phase.expect.a) model_check(phase, m, c, w, e);
                    break;
                case PhaseOp::move_up:
                    if (w < half) words[half + w] = words[(w + half - shift) % half];
                    break;
                case PhaseOp::move_down:
                    if (w < half) words[w] = words[half + (w + shift) % half];
                    break;
            }
        }
    }
}

// A whole test over `m`, inverting the word at `inject` (a global word
// index) before the first check of the first iteration, as the hook does.
ModelErrors model_test(MemtestKind kind, ModelMemory& m, unsigned iterations, std::optional<std::uint64_t> inject = {}) {
    ModelErrors e;
    for (unsigned it = 0; it < iterations; ++it) {
        const std::vector<MemtestPhase> phases = memtest_phases(kind, 42, it);
        for (std::size_t p = 0; p < phases.size(); ++p) {
            if (it == 0 && inject && p == first_checking_phase(phases)) m.word(*inject) = ~m.word(*inject);
            model_phase(phases[p], m, e);
        }
    }
    return e;
}

const std::vector<std::uint64_t> kChunkWords{64, 1024, 8, 200};  // multiples of kMemtestWordAlign

}  // namespace

TEST_CASE("memtest table: every kind once, names parse, help lines name the cuda_memtest test") {
    std::set<int> values;
    std::set<std::string> names;
    for (const Named<MemtestKind>& row : kMemtestKinds) {
        values.insert(static_cast<int>(row.value));
        names.insert(std::string(row.name));
        CHECK(kMemtestKinds.parse(row.name) == row.value);
        CHECK(std::string(memtest_name(row.value)) == row.name);
        CHECK(std::string(row.help).find("(test ") != std::string::npos);
        CHECK(row.help.back() != '.');
    }
    CHECK(values.size() == 7);
    CHECK(names.size() == 7);
    CHECK(*values.rbegin() == static_cast<int>(MemtestKind::modulo_20));
    CHECK(kMemtestKinds.parse_list("all") == kMemtestKinds.values());
    CHECK_THROWS_AS(kMemtestKinds.parse("walking"), UsageError);
}

TEST_CASE("memtest words: walking bits, 8-bit pattern, random words, modulo and block") {
    const ChunkSpan chunk{0, 128};
    for (std::uint64_t i = 0; i < 200; ++i) {
        CHECK(__builtin_popcountll(memtest_word({WordKind::walking, 5, 0}, i, 0, chunk)) == 1);
        CHECK(__builtin_popcountll(memtest_word({WordKind::walking, 5, ~0ULL}, i, 0, chunk)) == 63);
        CHECK(memtest_word({WordKind::address, 0, 0}, i, 0x1000 + 8 * i, chunk) == 0x1000 + 8 * i);
        CHECK(memtest_word({WordKind::address, 0, ~0ULL}, i, 0x1000 + 8 * i, chunk) == ~(0x1000 + 8 * i));
        CHECK(memtest_word({WordKind::modulo, 3, 77}, i, 0, chunk) == (i % 20 == 3 ? 77 : ~77ULL));
    }
    // 64 neighbouring words of a walking pattern cover every bit.
    std::uint64_t all = 0;
    for (std::uint64_t i = 0; i < 64; ++i) all |= memtest_word({WordKind::walking, 9, 0}, i, 0, chunk);
    CHECK(all == ~0ULL);
    CHECK(memtest_phases(MemtestKind::inversions_8bit, 1, 0)[0].write.a == 0x8080808080808080ULL);
    CHECK(memtest_phases(MemtestKind::inversions_8bit, 1, 7)[0].write.a == 0x0101010101010101ULL);
    CHECK(memtest_random_word(1, 0, MemtestKind::modulo_20) == memtest_random_word(1, 0, MemtestKind::modulo_20));
    CHECK(memtest_random_word(1, 0, MemtestKind::modulo_20) != memtest_random_word(2, 0, MemtestKind::modulo_20));
    CHECK(memtest_random_word(1, 0, MemtestKind::modulo_20) != memtest_random_word(1, 1, MemtestKind::modulo_20));
    CHECK(memtest_random_word(1, 0, MemtestKind::modulo_20) != memtest_random_word(1, 0, MemtestKind::inversions_random));
}

TEST_CASE("memtest block moves: the source formula, and the move changes every upper word") {
    for (std::uint64_t words : {8ULL, 64ULL, 200ULL, 1024ULL}) {
        const ChunkSpan chunk{1000, words};
        const std::uint64_t half = words / 2;
        for (unsigned it = 0; it < 70; ++it) {
            const std::vector<MemtestPhase> phases = memtest_phases(MemtestKind::block_move, 1, it);
            const std::uint64_t shift = phases[1].write.a;
            CHECK(shift % 4 == 2);
            for (std::uint64_t j = 0; j < half; ++j) {
                const std::uint64_t index = chunk.first + half + j;
                CHECK(block_move_source(index, shift, chunk) == chunk.first + (j + half - shift % half) % half);
                // What the first write leaves differs from what the check expects after the moves.
                CHECK(memtest_word(phases[0].write, index, 0, chunk) != memtest_word(phases[3].expect, index, 0, chunk));
            }
        }
    }
}

TEST_CASE("memtest phases: each test checks, and its checks pass on memory that keeps its words") {
    for (const Named<MemtestKind>& row : kMemtestKinds) {
        INFO(row.name);
        const std::vector<MemtestPhase> phases = memtest_phases(row.value, 42, 0);
        REQUIRE(first_checking_phase(phases) < phases.size());
        CHECK(phases.front().op == PhaseOp::write);
        ModelMemory m(kChunkWords);
        const ModelErrors e = model_test(row.value, m, 3);
        CHECK(e.mismatches == 0);
    }
}

TEST_CASE("memtest phases: an inverted word is the first bad word, with its expected and actual words") {
    std::uint64_t total = 0;
    for (std::uint64_t w : kChunkWords) total += w;
    // Multiples of 20, so that modulo-20's first check (offset 0) sees them; in the first, second and last piece.
    for (const std::uint64_t index : std::vector<std::uint64_t>{0, 40, 100, total - 16}) {
        for (const Named<MemtestKind>& row : kMemtestKinds) {
            INFO(row.name << " word " << index);
            ModelMemory m(kChunkWords);
            const ModelErrors e = model_test(row.value, m, 2, index);
            CHECK(e.mismatches == 1);
            CHECK(e.first == index);
            CHECK(e.actual == ~e.expected);
            // What the host model says the first check expects there.
            const std::vector<MemtestPhase> phases = memtest_phases(row.value, 42, 0);
            std::size_t c = 0;
            while (index >= m.spans[c].first + m.spans[c].words) ++c;
            const std::uint64_t address = m.bases[c] + 8 * (index - m.spans[c].first);
            CHECK(e.expected == phase_expected_word(phases[first_checking_phase(phases)], index, address, m.spans[c]));
        }
    }
}

TEST_CASE("memtest traffic: bytes each phase moves") {
    const ChunkSpan chunk{7, 100};
    CHECK(phase_traffic_bytes(PhaseOp::write, {}, chunk) == 800);
    CHECK(phase_traffic_bytes(PhaseOp::check, {}, chunk) == 800);
    CHECK(phase_traffic_bytes(PhaseOp::check_write, {}, chunk) == 1600);
    CHECK(phase_traffic_bytes(PhaseOp::move_up, {}, chunk) == 800);
    // Indices 7..106 with index mod 20 == 7: 7, 27, 47, 67, 87 (107 is past the end).
    CHECK(phase_traffic_bytes(PhaseOp::check_sparse, {WordKind::modulo, 7, 0}, chunk) == 5 * 8);
    // == 0: 20, 40, 60, 80, 100.
    CHECK(phase_traffic_bytes(PhaseOp::check_sparse, {WordKind::modulo, 0, 0}, chunk) == 5 * 8);
    CHECK(phase_traffic_bytes(PhaseOp::check_sparse, {WordKind::modulo, 19, 0}, ChunkSpan{0, 19}) == 0);
    CHECK(memtest_round_down(1000) == 960);
    CHECK(memtest_round_down(63) == 0);
    CHECK(memtest_round_down(kMemtestMinBytes) == kMemtestMinBytes);
}
