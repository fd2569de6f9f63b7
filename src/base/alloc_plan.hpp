// The pure half of `gpumem alloc-test`: durations, test patterns, how
// memory is cut into chunks, search of the largest allocation, the
// back-off of chunked allocation and the random stream of churn. No CUDA, so
// it is tested on the CPU; src/bench/alloc_modes runs it on a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/name_table.hpp"
#include "base/sizes.hpp"

namespace gpumem {

// Test patterns over 64-bit words, generated from (pattern, seed, word index,
// address) so a later pass can check them without a reference copy.
enum class Pattern : int { zeros = 0, ones = 1, walking = 2, address = 3, random = 4 };

// `30`, `30s`, `500ms`, `2m`, `1.5h`: seconds, > 0. Throws UsageError.
double parse_duration_seconds(std::string_view text);

// The pattern names, in the order `all` writes them, each with a one-line help.
extern const NameTable<Pattern> kPatterns;

// Thin wrappers over kPatterns.
const char* pattern_name(Pattern pattern) noexcept;
Pattern parse_pattern(std::string_view text);  // surrounding blanks ignored; throws UsageError
const std::vector<Pattern>& all_patterns();

// How alloc-test's lists of names (--api, --pattern) are written: comma
// lists, the option repeated, or `all`, which may also stand among names
// (`vmm,all`: vmm first, then every other); a name given twice counts once,
// order kept; never empty.
inline constexpr ListRules kAllocTestListRules{/*allow_all=*/true, /*allow_repeats=*/true, /*allow_empty=*/false};

// `total` bytes cut into pieces of `chunk` bytes; the last one holds the rest.
std::vector<std::uint64_t> plan_chunks(std::uint64_t total, std::uint64_t chunk);

// Largest multiple of `granularity` not above `limit` for which `probe`
// succeeds, assuming success is monotonic (every smaller size succeeds too);
// 0 if none does. Gallops down from the limit, then bisects: a handful of
// probes when the answer is near the limit, at most about
// 2 log2(limit / granularity) otherwise, counted in *probes.
std::uint64_t largest_succeeding(std::uint64_t limit, std::uint64_t granularity,
                                 const std::function<bool(std::uint64_t)>& probe, int* probes = nullptr);

// Obtaining memory in pieces like cuda_memtest's back-off: pieces of `chunk`
// until one fails, then half that size, and so on down to `granularity`.
struct ChunkedObtain {
    std::uint64_t full_chunks = 0;      // pieces of the requested chunk size
    std::uint64_t full_bytes = 0;
    std::uint64_t tail_pieces = 0;      // smaller pieces taken after the back-off
    std::uint64_t tail_bytes = 0;
    std::uint64_t total() const noexcept { return full_bytes + tail_bytes; }
};
// `try_allocate(size)` allocates and keeps a piece, returning false when the
// allocation fails. `should_stop` is polled between pieces.
ChunkedObtain obtain_in_chunks(std::uint64_t chunk, std::uint64_t granularity,
                               const std::function<bool(std::uint64_t)>& try_allocate,
                               const std::function<void()>& poll = {});

// The random operation stream of churn: seeded, so a run can be repeated.
class ChurnPlanner {
public:
    struct Step {
        bool allocate = true;
        std::uint64_t size = 0;   // allocate: bytes to ask for
        std::size_t victim = 0;   // free: index into the live list
        std::size_t slot = 0;     // MixMemory: slot to ask
    };
    // Sizes are drawn uniformly from `sizes` (a doubling range gives a
    // log-uniform draw). Live bytes stay at or below `max_live` except for a
    // first allocation into an empty set.
    ChurnPlanner(std::uint64_t seed, std::vector<std::uint64_t> sizes, std::uint64_t max_live, std::size_t slots = 1);
    // Direct churn: allocate or free (each half the time while both are possible).
    Step next_direct(std::size_t live_count, std::uint64_t live_bytes);
    // MixMemory churn: every step is a request of a size from a slot.
    Step next_slot_request();

private:
    std::mt19937_64 rng_;
    std::vector<std::uint64_t> sizes_;
    std::uint64_t max_live_;
    std::size_t slots_;
};

// A --total given as SIZE or as a percentage of free memory, in bytes.
// Percentages are rounded down to 2 MiB (cudaMalloc's page size).
std::uint64_t resolve_total(const SizeSpec& total, std::uint64_t free_bytes);

}  // namespace gpumem
