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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <new>
#include <set>
#include <utility>

namespace gpumem::reuse_sim {

// The free lists' tree nodes come from here: a block is inserted and removed
// millions of times in a replay, and malloc and free of its nodes were a
// fifth of RMM's pool model. Freed nodes wait, per thread and node type, on
// a stack for the next insert, and go back to the heap when the thread ends.
template <typename T>
class NodeAllocator {
public:
    using value_type = T;
    NodeAllocator() noexcept = default;
    template <typename U>
    explicit NodeAllocator(const NodeAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        Stack& s = stack();
        if (n != 1 || !s.top) return static_cast<T*>(::operator new(n * sizeof(T)));
        void* p = s.top;
        s.top = s.top->next;
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (n != 1) {
            ::operator delete(p);
            return;
        }
        static_assert(sizeof(T) >= sizeof(Free), "a node holds the stack's link");
        Stack& s = stack();
        s.top = ::new (static_cast<void*>(p)) Free{s.top};
    }
    friend bool operator==(const NodeAllocator&, const NodeAllocator&) noexcept { return true; }
    friend bool operator!=(const NodeAllocator&, const NodeAllocator&) noexcept { return false; }

private:
    struct Free {
        Free* next;
    };
    struct Stack {
        Free* top = nullptr;
        Stack() = default;
        Stack(const Stack&) = delete;
        Stack& operator=(const Stack&) = delete;
        ~Stack() {
            while (top) ::operator delete(std::exchange(top, top->next));
        }
    };
    static Stack& stack() noexcept {
        thread_local Stack s;
        return s;
    }
};

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
            by_size_.erase(next->second.by_size);
            next = by_address_.erase(next);  // the block after it: still the right hint
        }
        if (merge_prev) {
            prev->second.size += b.size;
            resize_entry(prev->second, prev->first);
            return;
        }
        auto a = by_address_.emplace_hint(next, b.address, Entry{b.size, b.head, {}});
        a->second.by_size = by_size_.insert({b.size, b.address}).first;
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

    // take_best_fit(size), then inserting back what the block holds beyond
    // `size`: returns the first `size` bytes of the best fit, or an invalid
    // block. The rest never merges with a neighbour (the list is coalesced),
    // so it stays where the block was, in the block's own tree nodes.
    FreeBlock take_front_of_best_fit(std::uint64_t size) {
        auto it = by_size_.lower_bound({size, 0});
        if (it == by_size_.end()) return {};
        const std::uint64_t address = it->second;
        auto a = by_address_.find(address);
        const FreeBlock b{address, size, a->second.head};
        free_bytes_ -= size;
        if (a->second.size == size) {
            by_size_.erase(it);
            by_address_.erase(a);
            return b;
        }
        auto node = by_address_.extract(a++);
        node.key() = address + size;
        node.mapped().size -= size;
        node.mapped().head = false;
        auto rest = by_address_.insert(a, std::move(node));
        resize_entry(rest->second, rest->first);
        return b;
    }

    // Removes the free block that starts at `address` if it is exactly `size` bytes.
    bool take_exact(std::uint64_t address, std::uint64_t size) {
        auto a = by_address_.find(address);
        if (a == by_address_.end() || a->second.size != size) return false;
        by_size_.erase(a->second.by_size);
        by_address_.erase(a);
        free_bytes_ -= size;
        return true;
    }

    // Moves every block of `other` into this list (merging where they touch).
    // The blocks of the shorter list go into the longer one: the coalesced
    // union is the same either way, and RMM's pool moves whole lists between
    // streams again and again.
    void absorb(CoalescingFreeList& other) {
        if (other.count() > count()) swap(other);
        for (const auto& [address, e] : other.by_address_) insert(FreeBlock{address, e.size, e.head});
        other.clear();
    }

    void swap(CoalescingFreeList& other) noexcept {
        by_address_.swap(other.by_address_);
        by_size_.swap(other.by_size_);
        std::swap(free_bytes_, other.free_bytes_);
    }

    void clear() {
        by_address_.clear();
        by_size_.clear();
        free_bytes_ = 0;
    }

    std::uint64_t largest() const noexcept { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }

private:
    using SizeAddress = std::pair<std::uint64_t, std::uint64_t>;
    using BySize = std::set<SizeAddress, std::less<SizeAddress>, NodeAllocator<SizeAddress>>;
    struct Entry {
        std::uint64_t size;
        bool head;
        BySize::iterator by_size;  // this block's (size, address) in by_size_
    };

    // The block at `address` changed its size or address: its by_size_ entry
    // follows, in the same tree node.
    void resize_entry(Entry& e, std::uint64_t address) {
        auto node = by_size_.extract(e.by_size);
        node.value() = {e.size, address};
        e.by_size = by_size_.insert(std::move(node)).position;
    }

    std::map<std::uint64_t, Entry, std::less<std::uint64_t>, NodeAllocator<std::pair<const std::uint64_t, Entry>>> by_address_;
    BySize by_size_;
    std::uint64_t free_bytes_ = 0;
};

}  // namespace gpumem::reuse_sim
