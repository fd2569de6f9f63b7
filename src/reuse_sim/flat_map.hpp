// An open-addressing hash map from 64-bit keys to 32-bit values (linear
// probing, backward-shift deletion). The replay looks up every event's id
// here, so it avoids std::unordered_map's node allocation per insert.
#pragma once

#include <cstdint>
#include <vector>

namespace gpumem::reuse_sim {

class U64Map {
public:
    explicit U64Map(std::size_t initial_capacity = 64) { rehash(round_up_pow2(initial_capacity < 8 ? 8 : initial_capacity)); }

    std::size_t size() const noexcept { return size_; }

    // Pointer to the value of `key`, or nullptr.
    const std::uint32_t* find(std::uint64_t key) const noexcept {
        std::size_t i = bucket(key);
        while (slots_[i].used) {
            if (slots_[i].key == key) return &slots_[i].value;
            i = (i + 1) & mask_;
        }
        return nullptr;
    }
    std::uint32_t* find(std::uint64_t key) noexcept {
        return const_cast<std::uint32_t*>(static_cast<const U64Map*>(this)->find(key));
    }

    // Inserts or overwrites.
    void put(std::uint64_t key, std::uint32_t value) {
        if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
        std::size_t i = bucket(key);
        while (slots_[i].used) {
            if (slots_[i].key == key) {
                slots_[i].value = value;
                return;
            }
            i = (i + 1) & mask_;
        }
        slots_[i] = Slot{key, value, 1};
        ++size_;
    }

    // Removes `key`; false if absent.
    bool erase(std::uint64_t key) noexcept {
        std::size_t i = bucket(key);
        while (slots_[i].used && slots_[i].key != key) i = (i + 1) & mask_;
        if (!slots_[i].used) return false;
        // Backward-shift: move later members of the probe run into the hole
        // so that lookups never need tombstones.
        std::size_t hole = i;
        std::size_t j = i;
        for (;;) {
            j = (j + 1) & mask_;
            if (!slots_[j].used) break;
            const std::size_t home = bucket(slots_[j].key);
            const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
            if (movable) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole].used = 0;
        --size_;
        return true;
    }

    template <typename F>
    void for_each(F f) const {
        for (const Slot& s : slots_)
            if (s.used) f(s.key, s.value);
    }

    void clear() {
        for (Slot& s : slots_) s.used = 0;
        size_ = 0;
    }

private:
    struct Slot {
        std::uint64_t key = 0;
        std::uint32_t value = 0;
        std::uint32_t used = 0;
    };

    static std::size_t round_up_pow2(std::size_t n) {
        std::size_t p = 1;
        while (p < n) p <<= 1;
        return p;
    }
    std::size_t bucket(std::uint64_t key) const noexcept {
        // Fibonacci hashing: ids and addresses are often multiples of large
        // powers of two, which the multiply spreads over the high bits.
        return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_) & mask_;
    }
    void rehash(std::size_t capacity) {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(capacity, Slot{});
        mask_ = capacity - 1;
        int bits = 0;
        while ((std::size_t{1} << bits) < capacity) ++bits;
        shift_ = 64 - bits;
        if (shift_ >= 64) shift_ = 63;
        size_ = 0;
        for (const Slot& s : old)
            if (s.used) put(s.key, s.value);
    }

    std::vector<Slot> slots_;
    std::size_t mask_ = 0;
    unsigned shift_ = 60;
    std::size_t size_ = 0;
};

}  // namespace gpumem::reuse_sim
