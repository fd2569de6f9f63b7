// torch-caching's expandable segments (expandable_segments:True): instead of
// a cudaMalloc per segment, one large range of address space per stream and
// pool, into which pages are mapped as requests need them: 2 MiB pages
// (kSmallBuffer) for the small pool, 20 MiB pages (kLargeBuffer) for the
// large one. Each map_block is one num_device_alloc whatever the number of
// pages it maps, each unmap_block one num_device_free; reserved bytes are
// the mapped pages. A request maps pages for its rounded size (not the
// segment a cudaMalloc would take), at the lowest address of its stream's
// segment where free and unmapped space together fit it. release_cached_blocks
// unmaps the whole pages of every free block; a segment left without pages
// is given back (no counter moves).
#include <algorithm>

#include "reuse_sim/torch_caching.hpp"

namespace gpumem::reuse_sim::detail::torch {

Block* TorchCaching::try_allocate_expandable_block(const Params& p) {
    // More than a segment's address space: more than a device has, where
    // PyTorch's cuMemCreate fails.
    if (p.size > kSegmentAddressSpace / kLargeBuffer * kLargeBuffer) return nullptr;
    // Free and unmapped blocks with room for the request, in one of:
    // unmapped -> null; unmapped -> free -> *; free -> unmapped -> *.
    Block* candidate = find_expandable_block(p);
    if (!candidate->mapped) map_block(candidate, std::min(candidate->size, p.size));
    while (candidate->size < p.size) {
        // free -> unmapped -> *: map some of the unmapped block, which merges
        // with the free one before it.
        Block* next = candidate->next;
        map_block(next, std::min(p.size - candidate->size, next->size));
        candidate = next;
    }
    p.pool->erase_block(candidate);
    return candidate;
}

// The lowest address in the stream's segments where free and unmapped space
// together fit the request; a new segment when there is none.
Block* TorchCaching::find_expandable_block(const Params& p) {
    auto allocatable = [](const Block* b) { return b && !b->allocated; };
    auto has_available_address_space = [&](const Block* b) {
        std::uint64_t bytes = 0;
        while (bytes < p.size && allocatable(b)) {
            bytes += b->size;
            b = b->next;
        }
        return bytes >= p.size;
    };
    BlockPool& pool = *p.pool;
    Block key;
    key.stream = p.stream;
    for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == p.stream; ++it) {
        Block* c = *it;
        // A free block right before the unmapped one can be used too.
        if (allocatable(c->prev)) c = c->prev;
        if (has_available_address_space(c)) return c;
    }
    std::vector<bool>& slots = pool.segment_slots[p.stream];
    const auto free_slot = std::find(slots.begin(), slots.end(), false);
    const auto slot = static_cast<std::uint32_t>(free_slot - slots.begin());
    if (free_slot == slots.end()) slots.push_back(true);
    else *free_slot = true;
    if (slot >= (kSyntheticBase - kExpandableBase) / kSegmentAddressSpace)
        throw SizeOverflow("more expandable segments at once on one stream than the model has address space for");
    auto segment = std::make_unique<ExpandableSegment>();
    ExpandableSegment* es = segment.get();
    segments_.emplace(es, std::move(segment));
    es->page = pool.small ? kSmallBuffer : kLargeBuffer;
    es->size = kSegmentAddressSpace / es->page * es->page;
    es->base = kExpandableBase + slot * kSegmentAddressSpace;
    es->slot = slot;
    Block* candidate = new_block();
    candidate->address = es->base;
    candidate->size = es->size;
    candidate->stream = p.stream;
    candidate->stream_index = p.stream_index;
    candidate->pool = &pool;
    candidate->segment = es;
    candidate->mapped = false;
    pool.unmapped.insert(candidate);
    return candidate;
}

// Maps the pages under the first `size` bytes of the unmapped block
// `to_map` (page-aligned), which then merges with free neighbours.
void TorchCaching::map_block(Block* to_map, std::uint64_t size) {
    const ExpandableSegment& es = *to_map->segment;
    const std::uint64_t offset = to_map->address - es.base;
    const std::uint64_t begin = offset / es.page;
    const std::uint64_t end = (offset + size + es.page - 1) / es.page;
    const std::uint64_t mapped = (end - begin) * es.page;
    BlockPool& pool = *to_map->pool;
    pool.erase_unmapped(to_map);
    to_map->mapped = true;
    if (mapped < to_map->size) {
        // to_map -> remaining -> to_map->next
        Block* remaining = new_block();
        *remaining = *to_map;
        remaining->address = to_map->address + mapped;
        remaining->size = to_map->size - mapped;
        remaining->mapped = false;
        remaining->prev = to_map;
        if (remaining->next) remaining->next->prev = remaining;
        to_map->next = remaining;
        pool.unmapped.insert(remaining);
        to_map->size = mapped;
    }
    try_merge_blocks(to_map, to_map->prev);
    try_merge_blocks(to_map, to_map->next);
    pool.insert_into_blocks(to_map);
    upstream_.map_pages(mapped);
}

// Unmaps the whole pages inside the free block; what is left of partial
// pages before and after them stays cached as free blocks.
void TorchCaching::unmap_block(Block* block) {
    const ExpandableSegment& es = *block->segment;
    const std::uint64_t offset = block->address - es.base;
    const std::uint64_t begin = (offset + es.page - 1) / es.page;
    const std::uint64_t end = (offset + block->size) / es.page;
    if (begin >= end) return;
    BlockPool& pool = *block->pool;
    pool.erase_block(block);
    const std::uint64_t unmapped_address = es.base + begin * es.page;
    const std::uint64_t unmapped_size = (end - begin) * es.page;
    const std::uint64_t before_size = unmapped_address - block->address;
    const std::uint64_t after_size = block->size - before_size - unmapped_size;
    if (before_size > 0) {  // prev -> before_free -> block
        Block* before_free = new_block();
        *before_free = *block;
        before_free->size = before_size;
        before_free->next = block;
        if (before_free->prev) before_free->prev->next = before_free;
        block->prev = before_free;
        pool.insert_into_blocks(before_free);
    }
    if (after_size > 0) {  // block -> after_free -> next
        Block* after_free = new_block();
        *after_free = *block;
        after_free->address = unmapped_address + unmapped_size;
        after_free->size = after_size;
        after_free->prev = block;
        if (after_free->next) after_free->next->prev = after_free;
        block->next = after_free;
        pool.insert_into_blocks(after_free);
    }
    block->address = unmapped_address;
    block->size = unmapped_size;
    block->mapped = false;
    try_merge_blocks(block, block->prev);
    try_merge_blocks(block, block->next);
    pool.unmapped.insert(block);
    upstream_.unmap_pages(unmapped_size);
}

// A segment without pages goes away with its address space.
void TorchCaching::release_expandable_segment(Block* block) {
    BlockPool& pool = *block->pool;
    pool.erase_unmapped(block);
    const ExpandableSegment* es = block->segment;
    std::vector<bool>& slots = pool.segment_slots[block->stream];
    slots[es->slot] = false;
    while (!slots.empty() && !slots.back()) slots.pop_back();
    if (slots.empty()) pool.segment_slots.erase(block->stream);
    segments_.erase(es);
    delete_block(block);
}

}  // namespace gpumem::reuse_sim::detail::torch
