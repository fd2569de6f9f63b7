// PyTorch 2.11's CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator) for one device. Counted as PyTorch counts them:
// num_device_alloc (cudaMalloc and page maps), num_device_free (cudaFree and
// page unmaps), reserved_bytes (segments and mapped pages), num_alloc_retries,
// num_ooms. --capacity stands for set_per_process_memory_fraction's
// allowed_memory_maximum (size_t(fraction * total)).
//  - round_size: below 512 B -> 512; else, when roundup_power2_divisions
//    applies to the size's interval and size > 512 * divisions, up to the
//    next power-of-two division; else up to a multiple of 512;
//  - requests <= 1 MiB use the small pool, others the large pool;
//  - get_allocation_size: <= 1 MiB -> a 2 MiB segment; < 10 MiB -> 20 MiB;
//    else the size rounded up to 2 MiB;
//  - get_free_block: best fit by (stream, size, address) in the pool; a
//    block >= max_split_size never serves a request below it, and serves a
//    larger one only if it exceeds it by less than max_non_split_rounding;
//    with expandable segments, a block that can grow into unmapped pages
//    counts with them;
//  - on a miss: garbage collection (with a memory fraction and a threshold),
//    then a new segment; the fraction refuses it when total reserved + the
//    segment would exceed allowed_memory_maximum. If refused, free cached
//    oversize blocks (release_available_cached_blocks, only with
//    max_split_size set) and try again; then free every unsplit cached
//    segment and unmap every free page (release_cached_blocks), retry once
//    more (num_alloc_retries), and raise OOM (num_ooms). The program goes on:
//    the refused request is never freed;
//  - should_split: small pool, or expandable segments, when >= 512 B
//    remain; large pool when the request is below max_split_size and > 1 MiB
//    remains;
//  - a freed block merges with free neighbours of its segment;
//  - garbage_collect_cached_blocks: while reserved exceeds threshold *
//    allowed_memory_maximum, free the unsplit large cached blocks whose age
//    (get_free_block calls since they were cached) is at least the average;
//  - empty_cache (emptyCache): release_cached_blocks;
//  - record_stream: a block used on another stream is cached when its free
//    completes (Event::deferred): at the start of the next request, or, when
//    that request took new memory or ran out of it, in its release before
//    the retry (synchronize_and_free_events), which a snapshot shows alike.
//    One the next request completed looks immediate in a snapshot; without
//    max_split_size and garbage collection the last free before a request
//    is held alike (the same end for an immediate one), with them cached;
//  - private pools (Request::pool: a CUDA graph's during its capture, a
//    torch.cuda.MemPool's inside use_mem_pool): their requests take and
//    cache blocks in their pool only (get_pool). While a capture or a
//    use_mem_pool context is under way (captures_underway: a pool's
//    requests, and Request::capturing) a request makes no
//    release_cached_blocks (no retry: out of memory at once), as PyTorch
//    2.11 does for both; release_available_cached_blocks (max_split_size)
//    still frees oversize blocks of its pool. No release gives a pool's
//    blocks back while it is in use; once the program gave it up
//    (pool_released: a MemPool deleted) its cached blocks are freed at once
//    (emptyCache of that pool) and by every later release_cached_blocks;
//  - settings changed while the program runs (settings_changed:
//    torch.cuda.memory._set_allocator_settings) apply from that point, as
//    parseArgs applies them (apply_alloc_conf); with expandable segments
//    switched off, cached blocks of expandable segments serve no request
//    (get_free_block), and releases still unmap their pages.
// Memory goes back to the device only through those releases.
#include <algorithm>
#include <memory>

#include "reuse_sim/strategies_impl.hpp"
#include "reuse_sim/torch_caching.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::reuse_sim::detail {
namespace torch {
namespace {

int floor_log2(std::uint64_t v) noexcept { return 63 - __builtin_clzll(v); }
bool is_pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }


}  // namespace

TorchCaching::TorchCaching(Upstream& upstream, const TorchOptions& o, std::shared_ptr<ReleaseReadings> readings,
                           bool decides_readings)
    : Strategy(upstream),
      o_(o),
      next_synthetic_address_(kSyntheticBase),
      readings_(std::move(readings)),
      decides_readings_(decides_readings) {}

std::uint64_t TorchCaching::roundup_power2_next_division(std::uint64_t size, std::uint64_t divisions) {
    if (is_pow2(size)) return size;
    const std::uint64_t power2_floor = std::uint64_t{1} << floor_log2(size);
    const std::uint64_t power2_division = power2_floor >> floor_log2(divisions);
    if (power2_division == 0) return power2_floor << 1;
    const std::uint64_t round_size_floor = size & ~(power2_division - 1);
    return round_size_floor == size ? size : round_size_floor + power2_division;
}

std::uint64_t TorchCaching::round_size(std::uint64_t size) const noexcept {
    if (size < kMinBlockSize) return kMinBlockSize;
    // Intervals start at 1 MiB (2^20): index 0 covers everything below 2 MiB.
    const int index = std::min(15, std::max(0, floor_log2(size) - 20));
    const std::uint64_t divisions = o_.roundup_power2_divisions[static_cast<std::size_t>(index)];
    if (divisions > 1 && size > kMinBlockSize * divisions) return roundup_power2_next_division(size, divisions);
    return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

std::uint64_t TorchCaching::get_allocation_size(std::uint64_t size) noexcept {
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return kLargeBuffer;
    return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

Params TorchCaching::params_for(const Request& r) {
    Params p;
    p.size = round_size(r.size);
    if (r.pool != 0) {
        // get_pool during a capture or use_mem_pool: that private pool.
        PrivatePool& own = private_pool(r.pool);
        p.pool = p.size <= kSmallSize ? &own.small : &own.large;
        p.capturing = true;
    } else {
        p.pool = p.size <= kSmallSize ? &small_ : &large_;
        p.capturing = r.capturing;
    }
    p.alloc_size = get_allocation_size(p.size);
    p.stream = r.stream_value;
    p.stream_index = r.stream;
    return p;
}

PrivatePool& TorchCaching::private_pool(std::uint32_t index) {
    std::unique_ptr<PrivatePool>& own = private_pools_[index];
    if (!own) own = std::make_unique<PrivatePool>();
    return *own;
}

// _set_allocator_settings runs between requests: a release waiting to be
// read was the program's (PyTorch's own happen inside a request).
// The frees before it in the snapshot had completed: they are cached under
// the settings they were made with.
void TorchCaching::settings_changed(std::string_view conf) {
    flush_pending_empty_cache();
    complete_deferred_frees();
    apply_alloc_conf(conf, o_);
}

// releasePool; ~MemPool then empties that pool's cache alone (the frees
// before it in the snapshot had completed).
void TorchCaching::pool_released(std::uint32_t pool, bool emptied) {
    flush_pending_empty_cache();
    complete_deferred_frees();
    PrivatePool& own = private_pool(pool);
    own.freeable = true;
    if (!emptied) return;
    release_blocks(own.small);
    release_blocks(own.large);
}

bool TorchCaching::do_allocate(const Request& r) {
    const Params p = params_for(r);
    // Frees that completed late show up in a snapshot right before a request
    // (process_events at malloc's start, or the synchronize_and_free_events
    // of the release before its retry: both write them there). They were
    // the release's when the request took new memory or ran out of it (it
    // found no cached block) and, without them, finds no cached block and
    // exceeds the memory fraction: it releases, and they complete there
    // (release_cached_blocks). Done at its start instead, they would have
    // ended alike (they do not change what the fraction refuses), unless
    // one fit the request, which then would have taken no memory. Otherwise
    // they were done at its start: cached for it (with expandable segments,
    // a free block before the unmapped pages also spares mapping some).
    const bool took_memory = !recorded_.empty() || recorded_mapping_ || r.recorded_oom;
    recorded_mapping_ = false;
    if (!deferred_.empty() &&
        !(took_memory && !p.capturing && find_free_block(p) == p.pool->blocks.end() && exceeds_fraction(p)))
        complete_deferred_frees();
    if (pending_empty_cache_) {
        pending_empty_cache_ = false;
        if (read_as_own_release(p)) ++empty_caches_read_as_own_;
        else release_cached_blocks();
    }
    Block* block = malloc_block(p);
    recorded_.clear();  // they were this request's
    // Any still waiting were done at its start (it made no release), and
    // found nothing that fit: after the block is taken, which they may border.
    if (!block) {
        complete_deferred_frees();
        ++num_ooms_;
        return false;
    }
    alloc_found_block(block, p, r);
    complete_deferred_frees();
    return true;
}

// A snapshot shows the program's torch.cuda.empty_cache() and the releases
// PyTorch makes itself inside a request alike: a run of segment frees (or
// unmaps) before the request's new segment. The reader reports it as an
// empty_cache, which waits for the next event. Before a request, it was the
// request's own when no cached block serves the request and the request
// would release memory itself: garbage collection frees a block, or a new
// segment exceeds the memory fraction. The model then makes those releases
// (and counts the retry). Otherwise it was the program's.
bool TorchCaching::is_own_release(const Params& p) const {
    if (p.capturing || find_free_block(p) != p.pool->blocks.end()) return false;
    return gc_would_release() || exceeds_fraction(p);
}

// Whether a new segment for the request exceeds the memory fraction even
// after the oversize blocks it would free: malloc() then reaches
// release_cached_blocks (garbage collection's own releases aside).
bool TorchCaching::exceeds_fraction(const Params& p) const {
    const std::uint64_t capacity = upstream_.capacity();
    if (!fraction_set() || total_allocated_memory() + p.alloc_size <= capacity) return false;
    // The request would free oversize blocks first: when they make room,
    // it frees no more, and a release of everything was the program's.
    std::vector<Block*> oversize;
    if (!select_oversize_blocks(p, oversize)) return true;
    std::uint64_t released = 0;
    for (const Block* b : oversize) released += b->size;
    return total_allocated_memory() - released + p.alloc_size > capacity;
}

// is_own_release, or the reading of the lane that decides for this replay.
bool TorchCaching::read_as_own_release(const Params& p) {
    const std::size_t index = release_index_++;
    if (readings_ && !decides_readings_ && index < readings_->own.size()) return readings_->own[index];
    const bool own = is_own_release(p);
    if (readings_ && decides_readings_) readings_->own.push_back(own);
    return own;
}

void TorchCaching::flush_pending_empty_cache() {
    if (!pending_empty_cache_) return;
    pending_empty_cache_ = false;
    // No request followed: the program's, for every lane alike.
    if (readings_ && decides_readings_) readings_->own.push_back(false);
    ++release_index_;
    release_cached_blocks();
}

void TorchCaching::empty_cache() {
    flush_pending_empty_cache();
    pending_empty_cache_ = true;
}

void TorchCaching::do_release_all() {
    flush_pending_empty_cache();
    release_cached_blocks();
    // As PyTorch once their graphs are gone (releasePool, then a release).
    for (auto& [index, pool] : private_pools_) {
        release_blocks(pool->large);
        release_blocks(pool->small);
    }
}

// malloc() up to the OOM: a cached block, or a new one after whatever
// releases it takes; null when PyTorch raises OutOfMemoryError.
Block* TorchCaching::malloc_block(const Params& p) {
    if (Block* block = get_free_block(p)) return block;
    if (gc_enabled()) garbage_collect_cached_blocks();
    Block* block = alloc_block(p, false);
    if (!block && release_available_cached_blocks(p)) block = alloc_block(p, false);
    // During a capture PyTorch makes no release (it would synchronize): out of memory.
    if (!block && !p.capturing) {
        release_cached_blocks();
        block = alloc_block(p, true);
    }
    return block;
}

// A free after an empty_cache settles it as the program's: PyTorch's own
// release happens inside a request, with no free in between.
void TorchCaching::do_deallocate(std::uint32_t handle) {
    flush_pending_empty_cache();
    complete_deferred_frees();  // they came before it in the snapshot
    // A late free that the very next request completed follows its
    // free_requested in a snapshot as an immediate one does. Held like a
    // late one, the last free before a request ends the same when it was
    // immediate, as long as neither oversize blocks (max_split_size) nor
    // garbage collection are released before the retry: the request took
    // new memory, so the block did not fit it, and the release frees it
    // either way. With those on, it is cached at once.
    if (o_.max_split_size == TorchOptions::kNoLimit && !gc_enabled()) {
        deferred_.push_back(live_[handle]);
        return;
    }
    free_live(handle);
}

// Held allocated until complete_deferred_frees: the handle may be reused.
void TorchCaching::do_deallocate_deferred(std::uint32_t handle) {
    flush_pending_empty_cache();
    deferred_.push_back(live_[handle]);
}

void TorchCaching::complete_deferred_frees() {
    for (Block* block : deferred_) free_allocated(block);
    deferred_.clear();
}

void TorchCaching::free_live(std::uint32_t handle) { free_allocated(live_[handle]); }

void TorchCaching::free_allocated(Block* block) {
    block->allocated = false;
    allocated_bytes_.decrease(block->size);
    requested_bytes_.decrease(block->requested);
    allocation_.decrease(1);
    if (block->size >= o_.max_split_size) oversize_allocations_.decrease(1);
    free_block(block);
}

std::vector<std::pair<std::string, std::uint64_t>> TorchCaching::details() const {
    const UpstreamCounters& c = upstream_.counters();
    return {
        {"num_device_alloc", c.device_allocs},
        {"num_device_free", c.device_frees},
        {"num_alloc_retries", retries()},
        {"num_ooms", num_ooms_},
        {"num_sync_all_streams", num_sync_all_streams_},
        // Releases a snapshot cannot tell from the program's empty_cache()
        // (see is_own_release): num_alloc_retries is one too many for each
        // that was the program's.
        {"empty_caches_read_as_own_release", empty_caches_read_as_own_},
        {"reserved_bytes.all.peak", c.peak_reserved_bytes},
        {"allocated_bytes.all.peak", allocated_bytes_.peak},
        {"requested_bytes.all.peak", requested_bytes_.peak},
        {"segment.all.peak", segment_.peak},
        {"allocation.all.peak", allocation_.peak},
        {"oversize_allocations.peak", oversize_allocations_.peak},
        {"oversize_segments.peak", oversize_segments_.peak},
    };
}

// The best-fitting cached block for the request, left in its pool; end()
// when none may serve it.
std::set<Cached, BySize>::const_iterator TorchCaching::find_free_block(const Params& p) const {
    Block key;
    key.stream = p.stream;
    key.size = p.size;
    const auto& blocks = p.pool->blocks;
    auto it = blocks.lower_bound(Cached::of(&key));
    if (it == blocks.end() || (*it)->stream != p.stream) return blocks.end();
    if ((*it)->segment && o_.expandable_segments) {
        // A block that can grow into the unmapped pages after it counts with
        // them: look further for an expandable block that is smaller so.
        auto expandable_size = [](const Block* b) { return b->size + (b->next && !b->next->mapped ? b->next->size : 0); };
        auto next = std::next(it);
        while ((*it)->segment && next != blocks.end() && (*next)->stream == p.stream &&
               expandable_size(*next) < expandable_size(*it))
            it = next++;
    } else if ((*it)->segment) {
        // Expandable segments switched off after some were made: only other blocks serve.
        do {
            ++it;
        } while (it != blocks.end() && (*it)->segment && (*it)->stream == p.stream);
        if (it == blocks.end() || (*it)->stream != p.stream) return blocks.end();
    }
    // Do not return an oversized block for a large request.
    if (p.size < o_.max_split_size && (*it)->size >= o_.max_split_size) return blocks.end();
    // Allow an oversized block to be rounded up, within a limit.
    if (p.size >= o_.max_split_size && (*it)->size >= p.size + o_.max_non_split_rounding) return blocks.end();
    return it;
}

Block* TorchCaching::get_free_block(const Params& p) {
    // Track block reuse interval only when garbage collection is enabled.
    if (gc_enabled()) ++p.pool->get_free_blocks_call_count;
    const auto it = find_free_block(p);
    if (it == p.pool->blocks.end()) return nullptr;
    Block* block = *it;
    p.pool->erase_block(it);
    return block;
}

Block* TorchCaching::alloc_block(const Params& p, bool is_retry) {
    if (is_retry) count_retry();
    if (fraction_set() && total_allocated_memory() + p.alloc_size > upstream_.capacity()) return nullptr;
    if (o_.expandable_segments) return try_allocate_expandable_block(p);
    std::uint64_t address = 0;
    if (!upstream_.allocate(p.alloc_size, p.stream_index, address)) return nullptr;
    Block* b = new_block();
    b->upstream_address = address;
    b->address = segment_address(p.alloc_size);
    b->size = p.alloc_size;
    b->stream = p.stream;
    b->stream_index = p.stream_index;
    b->pool = p.pool;
    segment_.increase(1);
    if (p.alloc_size >= o_.max_split_size) oversize_segments_.increase(1);
    return b;
}

bool TorchCaching::should_split(const Block* block, std::uint64_t size) const noexcept {
    const std::uint64_t remaining = block->size - size;
    if (block->pool->small || o_.expandable_segments) return remaining >= kMinBlockSize;
    return size < o_.max_split_size && remaining > kSmallSize;
}

void TorchCaching::alloc_found_block(Block* block, const Params& p, const Request& r) {
    if (should_split(block, p.size)) {
        Block* remaining = block;
        block = new_block();
        *block = *remaining;
        block->size = p.size;
        block->prev = remaining->prev;
        if (block->prev) block->prev->next = block;
        block->next = remaining;
        remaining->prev = block;
        remaining->address += p.size;
        remaining->size -= p.size;
        p.pool->insert_into_blocks(remaining);
    }
    block->allocated = true;
    block->requested = r.size;
    at_grow(live_, r.handle) = block;
    allocation_.increase(1);
    allocated_bytes_.increase(block->size);
    requested_bytes_.increase(block->requested);
    if (block->size >= o_.max_split_size) oversize_allocations_.increase(1);
}

void TorchCaching::free_block(Block* block) {
    Block* const candidates[2] = {block->prev, block->next};
    for (Block* c : candidates) try_merge_blocks(block, c);
    block->pool->insert_into_blocks(block);
}

// Merges `src` into its neighbour `dst` (which is in no set) when it is free
// and mapped alike; returns the bytes taken over (0: none).
std::uint64_t TorchCaching::try_merge_blocks(Block* dst, Block* src) {
    if (!src || src->allocated || src->mapped != dst->mapped) return 0;
    if (src->mapped) src->pool->erase_block(src);
    else src->pool->erase_unmapped(src);
    if (dst->prev == src) {  // [src dst]
        dst->address = src->address;
        dst->prev = src->prev;
        if (dst->prev) dst->prev->next = dst;
    } else {  // [dst src]
        dst->next = src->next;
        if (dst->next) dst->next->prev = dst;
    }
    const std::uint64_t subsumed = src->size;
    dst->size += subsumed;
    delete_block(src);
    return subsumed;
}

// The cached oversize blocks (>= max_split_size) of the request's stream that
// release_available_cached_blocks frees, in its order: the smallest that is
// large enough alone, else the largest ones until they are enough (blocks of
// expandable segments stay). Returns whether they are enough.
bool TorchCaching::select_oversize_blocks(const Params& p, std::vector<Block*>& out) const {
    if (o_.max_split_size == TorchOptions::kNoLimit) return false;
    const auto& blocks = p.pool->blocks;
    Block key;
    key.stream = p.stream;
    key.size = std::max(p.size, o_.max_split_size);
    auto it = blocks.lower_bound(Cached::of(&key));
    if (it != blocks.end() && (*it)->stream == p.stream && !(*it)->segment) {
        out.push_back(*it);
        return true;
    }
    if (it == blocks.begin()) return false;
    std::uint64_t total_released = 0;
    do {
        --it;
        if ((*it)->size < o_.max_split_size || (*it)->stream != p.stream) break;
        if (!(*it)->segment) {
            total_released += (*it)->size;
            out.push_back(*it);
        }
    } while (total_released < key.size && it != blocks.begin());
    return total_released >= key.size;
}

// Frees them, enough or not.
bool TorchCaching::release_available_cached_blocks(const Params& p) {
    std::vector<Block*> oversize;
    const bool enough = select_oversize_blocks(p, oversize);
    for (Block* b : oversize) release_block(b);
    return enough;
}

// Where a new cudaMalloc'd segment lies: where the recorded allocator's did,
// if it recorded one of this size for this request and the model has
// nothing there (segments_by_address_ holds those); else an address above
// all others, never reused.
std::uint64_t TorchCaching::segment_address(std::uint64_t size) {
    auto overlaps = [this](std::uint64_t address, std::uint64_t bytes) {
        auto it = segments_by_address_.lower_bound(address);
        if (it != segments_by_address_.end() && it->first - address < bytes) return true;
        return it != segments_by_address_.begin() && address - std::prev(it)->first < std::prev(it)->second;
    };
    for (auto it = recorded_.begin(); it != recorded_.end(); ++it) {
        if (it->second != size) continue;
        const std::uint64_t address = it->first;
        recorded_.erase(it);
        if (address >= kExpandableBase || address > ~0ULL - size || overlaps(address, size)) break;
        segments_by_address_.emplace(address, size);
        return address;
    }
    const std::uint64_t address = next_synthetic_address_;
    const std::uint64_t span = round_up_checked(size, kRoundLarge);
    if (span > ~0ULL - address)
        throw SizeOverflow("torch-caching's 64-bit address space for segments is used up (addresses are never reused)");
    next_synthetic_address_ += span;
    return address;
}

// Frees every unsplit cached segment and unmaps every free page (large
// pool, then small, then the freeable private pools'), after completing the
// frees that wait on other streams (synchronize_and_free_events).
void TorchCaching::release_cached_blocks() {
    ++num_sync_all_streams_;
    complete_deferred_frees();
    release_blocks(large_);
    release_blocks(small_);
    // Then the pools the program gave up (graph_pools_freeable).
    for (auto& [index, pool] : private_pools_) {
        if (!pool->freeable) continue;
        release_blocks(pool->small);
        release_blocks(pool->large);
    }
}

void TorchCaching::release_blocks(BlockPool& pool) {
    while (!pool.whole.empty()) release_block(pool.whole.back());
    if (!o_.expandable_segments && segments_.empty()) return;
    std::vector<Block*> to_unmap;
    for (Block* block : pool.blocks)
        if (block->segment) to_unmap.push_back(block);
    for (Block* block : to_unmap) {
        unmap_block(block);
        if (!block->prev && !block->next) release_expandable_segment(block);
    }
}

void TorchCaching::release_block(Block* block) {
    upstream_.deallocate(block->upstream_address, block->size, block->stream_index);
    if (block->address < kSyntheticBase) segments_by_address_.erase(block->address);
    segment_.decrease(1);
    if (block->size >= o_.max_split_size) oversize_segments_.decrease(1);
    block->pool->erase_block(block);
    delete_block(block);
}

// PyTorch collects garbage only with a memory fraction set.
bool TorchCaching::gc_enabled() const noexcept { return o_.garbage_collection_threshold > 0.0 && fraction_set(); }

bool TorchCaching::gc_would_release() const {
    if (!gc_enabled()) return false;
    const auto gc_threshold =
        static_cast<std::uint64_t>(o_.garbage_collection_threshold * static_cast<double>(upstream_.capacity()));
    if (total_allocated_memory() <= gc_threshold) return false;
    return !large_.whole.empty();
}

// Frees unsplit large cached blocks, oldest first by rounds of "at least the
// average age", until reserved memory is down to the threshold.
void TorchCaching::garbage_collect_cached_blocks() {
    const auto gc_threshold =
        static_cast<std::uint64_t>(o_.garbage_collection_threshold * static_cast<double>(upstream_.capacity()));
    if (total_allocated_memory() <= gc_threshold) return;
    const std::uint64_t target_size = total_allocated_memory() - gc_threshold;
    std::uint64_t gc_reclaimed = 0, total_age = 0, freeable_block_count = 0;
    for (const Block* b : large_.whole) {
        total_age += large_.gc_count(b);
        ++freeable_block_count;
    }
    bool block_freed = true;
    while (gc_reclaimed < target_size && block_freed && freeable_block_count > 0) {
        const double age_threshold = static_cast<double>(total_age) / static_cast<double>(freeable_block_count);
        block_freed = false;
        // From the back: a release moves the last block into the freed place,
        // which this walk has passed.
        for (std::size_t i = large_.whole.size(); i-- > 0;) {
            Block* block = large_.whole[i];
            if (static_cast<double>(large_.gc_count(block)) < age_threshold) continue;
            block_freed = true;
            gc_reclaimed += block->size;
            total_age -= large_.gc_count(block);
            --freeable_block_count;
            release_block(block);
        }
    }
}

Block* TorchCaching::new_block() {
    if (spare_.empty()) {
        chunks_.emplace_back(new Block[256]);
        for (int i = 255; i >= 0; --i) spare_.push_back(&chunks_.back()[i]);
    }
    Block* b = spare_.back();
    spare_.pop_back();
    *b = Block{};
    return b;
}

void TorchCaching::delete_block(Block* b) { spare_.push_back(b); }

}  // namespace torch

std::unique_ptr<Strategy> make_torch_caching(Upstream& upstream, const StrategyOptions& options) {
    return std::make_unique<torch::TorchCaching>(upstream, options.torch, options.release_readings,
                                                 options.decides_release_readings);
}

}  // namespace gpumem::reuse_sim::detail
