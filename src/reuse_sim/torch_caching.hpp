// torch-caching: PyTorch 2.11's CUDACachingAllocator (DeviceCachingAllocator
// in c10/cuda/CUDACachingAllocator.cpp), shared by strategies_torch.cpp (the
// request path, the cache, releases, garbage collection) and
// torch_expandable.cpp (expandable segments). What is modelled, and how
// exactly, is in strategies_torch.cpp's opening comment.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "reuse_sim/strategy.hpp"

namespace gpumem::reuse_sim::detail::torch {

constexpr std::uint64_t kMinBlockSize = 512;
constexpr std::uint64_t kSmallSize = 1048576;
constexpr std::uint64_t kSmallBuffer = 2097152;    // small pool segments, and its expandable segments' pages
constexpr std::uint64_t kLargeBuffer = 20971520;   // the large pool's expandable segments' pages
constexpr std::uint64_t kMinLargeAlloc = 10485760;
constexpr std::uint64_t kRoundLarge = 2097152;

// Expandable segments' address space: from kExpandableBase, a range of
// kSegmentAddressSpace per segment. PyTorch reserves 1 1/8 of the device's
// memory; the model reserves more than any device has, which changes
// nothing: a segment does not run out of address space before the device
// runs out of memory, and sizes are compared only between blocks of the same
// segment (whose unmapped tail is the largest).
constexpr std::uint64_t kExpandableBase = std::uint64_t{1} << 52;
constexpr std::uint64_t kSegmentAddressSpace = std::uint64_t{1} << 44;
// The addresses of cudaMalloc'd segments when the trace did not record
// theirs: above expandable segments' and far from a device's (0x7f... on Linux).
constexpr std::uint64_t kSyntheticBase = std::uint64_t{1} << 60;

struct BlockPool;

// The virtual address range of an expandable segment (one per stream and
// pool): pages of `page` bytes are mapped into it as requests need them.
struct ExpandableSegment {
    std::uint64_t base = 0, size = 0, page = 0;
    std::uint32_t slot = 0;  // among its stream's segments in the pool: where its address range lies
};

struct Block {
    std::uint64_t address = 0;  // orders blocks of equal size, as the device's addresses do in PyTorch
    std::uint64_t size = 0;
    std::uint64_t requested = 0;
    std::uint64_t upstream_address = 0;  // of a whole cudaMalloc'd segment, for cudaFree
    std::uint64_t stream = 0;        // as the trace names it: the pool's first sort key
    std::uint32_t stream_index = 0;  // for the upstream
    std::uint64_t gc_count_base = 0; // the pool's get_free_block count when the block was cached
    std::uint32_t whole_index = 0;   // in its pool's `whole`, while it is there
    BlockPool* pool = nullptr;
    ExpandableSegment* segment = nullptr;  // null: a cudaMalloc'd segment
    bool allocated = false;
    bool mapped = true;     // false: address space of an expandable segment without pages
    Block* prev = nullptr;  // neighbours within the segment
    Block* next = nullptr;
    bool is_split() const noexcept { return prev || next; }
};

// A cached block in its pool, with the keys it is ordered by held inline
// (the comparisons then touch no Block); it reads as the Block* it holds.
struct Cached {
    std::uint64_t stream = 0, size = 0, address = 0;
    Block* block = nullptr;
    static Cached of(const Block* b) noexcept { return {b->stream, b->size, b->address, const_cast<Block*>(b)}; }
    Block* operator->() const noexcept { return block; }
    operator Block*() const noexcept { return block; }  // NOLINT(google-explicit-constructor): reads as its block
};

// BlockComparatorSize: (stream, size, address).
struct BySize {
    bool operator()(const Cached& a, const Cached& b) const noexcept {
        if (a.stream != b.stream) return a.stream < b.stream;
        if (a.size != b.size) return a.size < b.size;
        return a.address < b.address;
    }
};
// BlockComparatorAddress: (stream, address), for the unmapped ranges.
struct ByAddress {
    bool operator()(const Block* a, const Block* b) const noexcept {
        if (a->stream != b->stream) return a->stream < b->stream;
        return a->address < b->address;
    }
};

struct BlockPool {
    explicit BlockPool(bool is_small) : small(is_small) {}
    std::set<Cached, BySize> blocks;       // cached (free, mapped) blocks
    std::set<Block*, ByAddress> unmapped;  // expandable segments' address space without pages
    const bool small;
    // Per stream, which address ranges its expandable segments take (only
    // blocks of one stream are ever compared by address).
    std::unordered_map<std::uint64_t, std::vector<bool>> segment_slots;
    // get_free_block calls while garbage collection is on: a cached block's
    // age is how many there were since it was cached.
    std::uint64_t get_free_blocks_call_count = 0;

    // Cached blocks that are a whole cudaMalloc'd segment, the only ones
    // releases free: kept apart, in no order (what releases and garbage
    // collection free does not depend on it), so that a release need not look
    // at every cached block. A cached block is split or not for as long as it
    // is cached.
    std::vector<Block*> whole;

    static bool is_whole(const Block* b) noexcept { return !b->is_split() && !b->segment; }
    void insert_into_blocks(Block* b) {
        b->gc_count_base = get_free_blocks_call_count;
        blocks.insert(Cached::of(b));
        if (!is_whole(b)) return;
        b->whole_index = static_cast<std::uint32_t>(whole.size());
        whole.push_back(b);
    }
    // Erasing by key would search twice (equal_range); blocks are unique.
    void erase_block(std::set<Cached, BySize>::const_iterator it) {
        if (is_whole(*it)) {
            Block* last = whole.back();
            last->whole_index = it->block->whole_index;
            whole[last->whole_index] = last;
            whole.pop_back();
        }
        blocks.erase(it);
    }
    void erase_block(Block* b) { erase_block(blocks.find(Cached::of(b))); }
    void erase_unmapped(Block* b) { unmapped.erase(unmapped.find(b)); }
    std::uint64_t gc_count(const Block* b) const noexcept { return get_free_blocks_call_count - b->gc_count_base; }
};

struct Stat {
    std::uint64_t current = 0, peak = 0;
    void increase(std::uint64_t n) noexcept {
        current += n;
        if (current > peak) peak = current;
    }
    void decrease(std::uint64_t n) noexcept { current -= n; }
};

// One request as malloc() sees it (AllocParams).
struct Params {
    BlockPool* pool = nullptr;
    std::uint64_t size = 0;        // rounded
    std::uint64_t alloc_size = 0;  // the segment a cudaMalloc would take
    std::uint64_t stream = 0;
    std::uint32_t stream_index = 0;
    bool capturing = false;  // for a private pool: made during a CUDA graph capture
};

// A private memory pool (PrivatePool: a CUDA graph's, or a
// torch.cuda.MemPool's): blocks that only requests routed to that pool
// reuse, and that no release gives back while the pool is in use (PyTorch's
// use_count above 0). Once the program gives it up (pool_released), every
// release of cached blocks frees its unsplit blocks too
// (graph_pools_freeable).
struct PrivatePool {
    BlockPool large{false}, small{true};
    bool freeable = false;
};

class TorchCaching final : public Strategy {
public:
    TorchCaching(Upstream& upstream, const TorchOptions& o, std::shared_ptr<ReleaseReadings> readings = nullptr,
                 bool decides_readings = false);

    static std::uint64_t roundup_power2_next_division(std::uint64_t size, std::uint64_t divisions);
    std::uint64_t round_size(std::uint64_t size) const noexcept;
    static std::uint64_t get_allocation_size(std::uint64_t size) noexcept;

    void synchronize_point() override { flush_pending_empty_cache(); }
    void end_of_trace() override { flush_pending_empty_cache(); }
    void recorded_segment(std::uint64_t address, std::uint64_t size) override { recorded_.emplace_back(address, size); }
    void recorded_mapping(std::uint64_t /*size*/) override { recorded_mapping_ = true; }
    void empty_cache() override;
    void settings_changed(std::string_view conf) override;
    void pool_released(std::uint32_t pool, bool emptied) override;
    std::vector<std::pair<std::string, std::uint64_t>> details() const override;

private:
    bool do_allocate(const Request& r) override;
    void do_deallocate(std::uint32_t handle) override;
    void do_deallocate_granted_oom(std::uint32_t handle) override { free_live(handle); }
    void do_deallocate_deferred(std::uint32_t handle) override;
    void do_release_all() override;

    // strategies_torch.cpp
    Params params_for(const Request& r);
    PrivatePool& private_pool(std::uint32_t index);
    bool is_own_release(const Params& p) const;
    bool exceeds_fraction(const Params& p) const;
    bool read_as_own_release(const Params& p);
    void flush_pending_empty_cache();
    void free_live(std::uint32_t handle);
    void free_allocated(Block* block);
    void complete_deferred_frees();
    Block* malloc_block(const Params& p);
    std::set<Cached, BySize>::const_iterator find_free_block(const Params& p) const;
    Block* get_free_block(const Params& p);
    Block* alloc_block(const Params& p, bool is_retry);
    bool should_split(const Block* block, std::uint64_t size) const noexcept;
    void alloc_found_block(Block* block, const Params& p, const Request& r);
    void free_block(Block* block);
    std::uint64_t try_merge_blocks(Block* dst, Block* src);
    bool select_oversize_blocks(const Params& p, std::vector<Block*>& out) const;
    bool release_available_cached_blocks(const Params& p);
    std::uint64_t segment_address(std::uint64_t size);
    void release_cached_blocks();
    void release_blocks(BlockPool& pool);
    void release_block(Block* block);
    bool gc_enabled() const noexcept;
    bool gc_would_release() const;
    void garbage_collect_cached_blocks();
    std::uint64_t total_allocated_memory() const noexcept { return upstream_.counters().reserved_bytes; }
    bool fraction_set() const noexcept { return upstream_.capacity() != kUnlimited; }
    Block* new_block();
    void delete_block(Block* b);

    // torch_expandable.cpp
    Block* try_allocate_expandable_block(const Params& p);
    Block* find_expandable_block(const Params& p);
    void map_block(Block* to_map, std::uint64_t size);
    void unmap_block(Block* block);
    void release_expandable_segment(Block* block);

    TorchOptions o_;
    BlockPool large_{false}, small_{true};
    std::map<std::uint32_t, std::unique_ptr<PrivatePool>> private_pools_;  // by Request::pool
    std::vector<Block*> live_;
    std::vector<std::unique_ptr<Block[]>> chunks_;
    std::vector<Block*> spare_;
    std::unordered_map<const ExpandableSegment*, std::unique_ptr<ExpandableSegment>> segments_;
    std::uint64_t next_synthetic_address_;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> recorded_;  // the next request's recorded cudaMallocs
    bool recorded_mapping_ = false;                                   // the next request mapped pages
    // Blocks freed by the program that wait for their other streams
    // (Event::deferred), in the order the snapshot completed their frees.
    std::vector<Block*> deferred_;
    std::map<std::uint64_t, std::uint64_t> segments_by_address_;      // live segments at recorded addresses: address -> size
    std::uint64_t num_ooms_ = 0, num_sync_all_streams_ = 0, empty_caches_read_as_own_ = 0;
    bool pending_empty_cache_ = false;
    std::shared_ptr<ReleaseReadings> readings_;
    bool decides_readings_ = false;
    std::size_t release_index_ = 0;  // ambiguous releases resolved so far
    Stat allocated_bytes_, requested_bytes_, segment_, allocation_, oversize_allocations_, oversize_segments_;
};

}  // namespace gpumem::reuse_sim::detail::torch
