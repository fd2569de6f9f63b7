// Deterministic pseudo-random numbers for the workload generators. The
// standard <random> distributions differ between library implementations, so
// the same seed must go through code we own to give the same trace everywhere.
#pragma once

#include <cstdint>

namespace gpumem::reuse_sim {

// xoshiro256** seeded through splitmix64 (Blackman and Vigna).
class Rng {
public:
    explicit Rng(std::uint64_t seed) {
        std::uint64_t x = seed;
        for (auto& s : state_) s = splitmix64(x);
    }
    std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }
    // Uniform integer in [lo, hi].
    std::uint64_t uniform(std::uint64_t lo, std::uint64_t hi) noexcept {
        if (hi <= lo) return lo;
        const std::uint64_t span = hi - lo + 1;
        return lo + (span == 0 ? next() : next() % span);
    }
    // Uniform real in [0, 1).
    double unit() noexcept { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
    bool chance(double p) noexcept { return unit() < p; }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    static std::uint64_t splitmix64(std::uint64_t& x) noexcept {
        std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    std::uint64_t state_[4]{};  // every word is set by the constructor; {} keeps cppcheck's uninitMemberVar quiet
};

}  // namespace gpumem::reuse_sim
