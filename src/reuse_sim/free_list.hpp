// The address-ordered, coalescing free list of RMM's pool_memory_resource
// (rmm::mr::detail::coalescing_free_list), with the same observable rules:
//  - best fit: the smallest free block that fits; among equal sizes the one at
//    the lowest address (what RMM's std::min_element over an address-ordered
//    list returns);
//  - inserting a block merges it with its address neighbours when they touch,
//    except across the start of an upstream allocation (a "head" block);
//  - a merged block keeps the head flag of its lower part.
// RMM keeps a linked list searched linearly; here an address map plus a
// (size, address) set give the same answers in logarithmic time.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace gpumem::reuse_sim {

struct FreeBlock {
    std::uint64_t address = 0;
    std::uint64_t size = 0;  // 0: no block
    bool head = false;       // starts an upstream allocation: never merges with what precedes it
    bool valid() const noexcept { return size != 0; }
};

class CoalescingFreeList {
public:
    bool empty() const noexcept { return by_address_.empty(); }
    std::size_t count() const noexcept { return by_address_.size(); }
    std::uint64_t free_bytes() const noexcept { return free_bytes_; }

    void insert(FreeBlock b) {
        auto next = by_address_.upper_bound(b.address);
        const bool has_prev = next != by_address_.begin();
        auto prev = has_prev ? std::prev(next) : by_address_.end();
        // prev is end() only when has_prev is false, and then it is not dereferenced.
        // cppcheck-suppress derefInvalidIterator
        const bool merge_prev = has_prev && prev->first + prev->second.size == b.address && !b.head;
        const bool merge_next = next != by_address_.end() && b.address + b.size == next->first && !next->second.head;
        free_bytes_ += b.size;
        if (merge_next) {
            b.size += next->second.size;
            by_size_.erase({next->second.size, next->first});
            next = by_address_.erase(next);  // the block after it: still the right hint
        }
        if (merge_prev) {
            by_size_.erase({prev->second.size, prev->first});
            prev->second.size += b.size;
            by_size_.insert({prev->second.size, prev->first});
            return;
        }
        by_address_.emplace_hint(next, b.address, Entry{b.size, b.head});
        by_size_.insert({b.size, b.address});
    }

    // Removes and returns the best-fitting block for `size`, or an invalid block.
    FreeBlock take_best_fit(std::uint64_t size) {
        auto it = by_size_.lower_bound({size, 0});
        if (it == by_size_.end()) return {};
        const std::uint64_t address = it->second;
        by_size_.erase(it);
        auto a = by_address_.find(address);
        FreeBlock b{address, a->second.size, a->second.head};
        by_address_.erase(a);
        free_bytes_ -= b.size;
        return b;
    }

    // Removes the free block that starts at `address` if it is exactly `size` bytes.
    bool take_exact(std::uint64_t address, std::uint64_t size) {
        auto a = by_address_.find(address);
        if (a == by_address_.end() || a->second.size != size) return false;
        by_size_.erase({size, address});
        by_address_.erase(a);
        free_bytes_ -= size;
        return true;
    }

    // Moves every block of `other` into this list (merging where they touch).
    void absorb(CoalescingFreeList& other) {
        for (const auto& [address, e] : other.by_address_) insert(FreeBlock{address, e.size, e.head});
        other.clear();
    }

    void clear() {
        by_address_.clear();
        by_size_.clear();
        free_bytes_ = 0;
    }

    std::uint64_t largest() const noexcept { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }

private:
    struct Entry {
        std::uint64_t size;
        bool head;
    };
    std::map<std::uint64_t, Entry> by_address_;
    std::set<std::pair<std::uint64_t, std::uint64_t>> by_size_;
    std::uint64_t free_bytes_ = 0;
};

}  // namespace gpumem::reuse_sim
