#include "base/alloc_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/errors.hpp"
#include "base/quantities.hpp"

namespace gpumem {
namespace {

constexpr std::uint64_t kLargePage = 2ULL << 20;

std::string trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return std::string(s);
}

}  // namespace

double parse_duration_seconds(std::string_view text) { return parse_duration(text, 1.0); }

constexpr Named<Pattern> kPatternRows[] = {
    {"zeros", Pattern::zeros, "every bit 0"},
    {"ones", Pattern::ones, "every bit 1"},
    {"walking", Pattern::walking, "one bit set, moving with the word index"},
    {"address", Pattern::address, "each word holds its own address"},
    {"random", Pattern::random, "splitmix64 of the seed and the word index"},
};
constexpr NameTable<Pattern> kPatterns{"pattern", kPatternRows};

// The rows' names are string literals, so data() is a C string.
const char* pattern_name(Pattern pattern) noexcept { return kPatterns.name_of(pattern).data(); }

const std::vector<Pattern>& all_patterns() {
    static const std::vector<Pattern> patterns = kPatterns.values();
    return patterns;
}

Pattern parse_pattern(std::string_view text) { return kPatterns.parse(trimmed(text)); }

std::vector<std::uint64_t> plan_chunks(std::uint64_t total, std::uint64_t chunk) {
    std::vector<std::uint64_t> pieces;
    if (total == 0) return pieces;
    if (chunk == 0) chunk = total;
    pieces.assign(static_cast<std::size_t>(total / chunk), chunk);
    if (total % chunk) pieces.push_back(total % chunk);
    return pieces;
}

std::uint64_t largest_succeeding(std::uint64_t limit, std::uint64_t granularity,
                                 const std::function<bool(std::uint64_t)>& probe, int* probes) {
    if (granularity == 0) granularity = 1;
    // Invariant: `lo` granules are known to succeed (0 trivially), `hi` granules to fail.
    std::uint64_t lo = 0;
    std::uint64_t hi = limit / granularity + 1;
    int count = 0;
    // The answer is usually just below the limit (the free memory), and a
    // probe of ~all of an H200 costs ~0.4 s whatever it finds: gallop down
    // from the limit in doubling steps, then bisect the last step.
    for (std::uint64_t step = 1; hi > 1; step *= 2) {
        const std::uint64_t candidate = hi - 1 > step - 1 ? hi - step : 0;
        if (candidate == 0) break;
        ++count;
        if (probe(candidate * granularity)) {
            lo = candidate;
            break;
        }
        hi = candidate;
    }
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        ++count;
        if (probe(mid * granularity))
            lo = mid;
        else
            hi = mid;
    }
    if (probes) *probes = count;
    return lo * granularity;
}

ChunkedObtain obtain_in_chunks(std::uint64_t chunk, std::uint64_t granularity,
                               const std::function<bool(std::uint64_t)>& try_allocate, const std::function<void()>& poll) {
    ChunkedObtain got;
    if (granularity == 0) granularity = 1;
    std::uint64_t size = chunk;
    while (size > 0) {
        if (poll) poll();
        if (try_allocate(size)) {
            if (size == chunk) {
                ++got.full_chunks;
                got.full_bytes += size;
            } else {
                ++got.tail_pieces;
                got.tail_bytes += size;
            }
            continue;
        }
        if (size <= granularity) break;
        size = std::max(granularity, size / 2 / granularity * granularity);
    }
    return got;
}

ChurnPlanner::ChurnPlanner(std::uint64_t seed, std::vector<std::uint64_t> sizes, std::uint64_t max_live, std::size_t slots)
    : rng_(seed), sizes_(std::move(sizes)), max_live_(max_live), slots_(slots == 0 ? 1 : slots) {
    if (sizes_.empty()) throw UsageError("churn needs at least one size");
}

// Modulo rather than std::uniform_int_distribution: the sequence for a seed
// is then the same with every standard library.
ChurnPlanner::Step ChurnPlanner::next_direct(std::size_t live_count, std::uint64_t live_bytes) {
    Step step;
    step.size = sizes_[rng_() % sizes_.size()];
    const bool coin = (rng_() & 1) != 0;
    if (live_count == 0 || (coin && live_bytes + step.size <= max_live_)) {
        step.allocate = true;
    } else {
        step.allocate = false;
        step.victim = static_cast<std::size_t>(rng_() % live_count);
    }
    return step;
}

ChurnPlanner::Step ChurnPlanner::next_slot_request() {
    Step step;
    step.slot = static_cast<std::size_t>(rng_() % slots_);
    step.size = sizes_[rng_() % sizes_.size()];
    return step;
}

std::uint64_t resolve_total(const SizeSpec& total, std::uint64_t free_bytes) {
    if (total.is_percent) {
        const std::uint64_t bytes = total.resolve(free_bytes) / kLargePage * kLargePage;
        return std::max<std::uint64_t>(bytes, kLargePage);
    }
    // Whole 8-byte words: the pattern kernels test words.
    return total.bytes >= 8 ? total.bytes / 8 * 8 : total.bytes;
}

}  // namespace gpumem
