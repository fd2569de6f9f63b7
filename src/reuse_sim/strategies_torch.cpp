// PyTorch's CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator), without expandable segments, CUDA graphs, events
// or garbage collection, which a single-process trace replay never reaches:
//  - empty_cache (emptyCache): release_cached_blocks, below;
//  - round_size: below 512 B -> 512; else, when roundup_power2_divisions
//    applies to the size's interval and size > 512 * divisions, up to the
//    next power-of-two division; else up to a multiple of 512;
//  - requests <= 1 MiB use the small pool, others the large pool;
//  - get_allocation_size: <= 1 MiB -> a 2 MiB segment; < 10 MiB -> 20 MiB;
//    else the size rounded up to 2 MiB;
//  - get_free_block: best fit by (stream, size, address) in the pool; a
//    block >= max_split_size never serves a request below it, and serves a
//    larger one only if it exceeds it by less than max_non_split_rounding;
//  - on a miss, cudaMalloc; if refused, free cached oversize blocks
//    (release_available_cached_blocks, only with max_split_size set) and
//    retry; if refused again, free every unsplit cached segment
//    (release_cached_blocks) and retry once more (num_alloc_retries), then OOM;
//  - should_split: small pool when >= 512 B remain, large pool when the
//    request is below max_split_size and > 1 MiB remains;
//  - a freed block merges with free neighbours of its segment.
// Memory goes back to the device only through those releases.
#include <algorithm>
#include <memory>
#include <set>

#include "reuse_sim/strategies_impl.hpp"

namespace gpumem::reuse_sim::detail {
namespace {

constexpr std::uint64_t kMinBlockSize = 512;
constexpr std::uint64_t kSmallSize = 1048576;
constexpr std::uint64_t kSmallBuffer = 2097152;
constexpr std::uint64_t kLargeBuffer = 20971520;
constexpr std::uint64_t kMinLargeAlloc = 10485760;
constexpr std::uint64_t kRoundLarge = 2097152;

int floor_log2(std::uint64_t v) noexcept { return 63 - __builtin_clzll(v); }
bool is_pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

struct Block {
    std::uint64_t address = 0;
    std::uint64_t size = 0;
    std::uint64_t requested = 0;
    std::uint64_t stream = 0;         // as the trace names it: the pool's first sort key
    std::uint32_t stream_index = 0;   // for the upstream
    bool small = false;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours within the segment (cudaMalloc'd range)
    Block* next = nullptr;
    bool is_split() const noexcept { return prev || next; }
};

struct BlockComparatorSize {
    bool operator()(const Block* a, const Block* b) const noexcept {
        if (a->stream != b->stream) return a->stream < b->stream;
        if (a->size != b->size) return a->size < b->size;
        return a->address < b->address;
    }
};
using BlockPool = std::set<Block*, BlockComparatorSize>;

struct Stat {
    std::uint64_t current = 0, peak = 0;
    void increase(std::uint64_t n) noexcept {
        current += n;
        peak = std::max(peak, current);
    }
    void decrease(std::uint64_t n) noexcept { current -= n; }
};

class TorchCaching final : public Strategy {
public:
    TorchCaching(Upstream& upstream, const TorchOptions& o) : Strategy(upstream), o_(o) {}

    static std::uint64_t roundup_power2_next_division(std::uint64_t size, std::uint64_t divisions) {
        if (is_pow2(size)) return size;
        const std::uint64_t power2_floor = std::uint64_t{1} << floor_log2(size);
        const std::uint64_t power2_division = power2_floor >> floor_log2(divisions);
        if (power2_division == 0) return power2_floor << 1;
        const std::uint64_t round_size_floor = size & ~(power2_division - 1);
        return round_size_floor == size ? size : round_size_floor + power2_division;
    }

    std::uint64_t roundup_power2_divisions(std::uint64_t size) const noexcept {
        // Intervals start at 1 MiB (2^20): index 0 covers everything below 2 MiB.
        const int index = std::min(15, std::max(0, floor_log2(size) - 20));
        return o_.roundup_power2_divisions[static_cast<std::size_t>(index)];
    }

    std::uint64_t round_size(std::uint64_t size) const noexcept {
        if (size < kMinBlockSize) return kMinBlockSize;
        const std::uint64_t divisions = roundup_power2_divisions(size);
        if (divisions > 1 && size > kMinBlockSize * divisions) return roundup_power2_next_division(size, divisions);
        return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
    }

    static std::uint64_t get_allocation_size(std::uint64_t size) noexcept {
        if (size <= kSmallSize) return kSmallBuffer;
        if (size < kMinLargeAlloc) return kLargeBuffer;
        return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
    }

    bool allocate(const Request& r) override {
        const std::uint64_t size = round_size(r.size);
        const bool small = size <= kSmallSize;
        BlockPool& pool = small ? small_ : large_;
        const std::uint64_t alloc_size = get_allocation_size(size);
        Block key;
        key.stream = r.stream_value;
        key.size = size;

        Block* block = get_free_block(pool, key);
        if (!block) {
            block = alloc_block(alloc_size, small, r, false);
            if (!block && release_available_cached_blocks(pool, key)) block = alloc_block(alloc_size, small, r, false);
            if (!block && release_cached_blocks()) block = alloc_block(alloc_size, small, r, true);
        }
        if (!block) {
            ++num_ooms_;
            return false;
        }
        const bool split_remainder = should_split(block, size);
        alloc_found_block(block, pool, size, r, split_remainder);
        return true;
    }

    void deallocate(std::uint32_t handle) override {
        Block* block = live_[handle];
        block->allocated = false;
        allocated_bytes_.decrease(block->size);
        requested_bytes_.decrease(block->requested);
        allocation_.decrease(1);
        if (block->size >= o_.max_split_size) oversize_allocations_.decrease(1);
        free_block(block);
    }

    void release_all() override { release_cached_blocks(); }
    // emptyCache: release_cached_blocks (its first step, completing frees
    // that wait on events, is already in the trace as their frees).
    void empty_cache() override { release_cached_blocks(); }

    std::vector<std::pair<std::string, std::uint64_t>> details() const override {
        const UpstreamCounters& c = upstream_.counters();
        return {
            {"num_device_alloc", c.device_allocs},
            {"num_device_free", c.device_frees},
            {"num_alloc_retries", retries_},
            {"num_ooms", num_ooms_},
            {"reserved_bytes.all.peak", c.peak_reserved_bytes},
            {"allocated_bytes.all.peak", allocated_bytes_.peak},
            {"requested_bytes.all.peak", requested_bytes_.peak},
            {"segment.all.peak", segment_.peak},
            {"allocation.all.peak", allocation_.peak},
            {"oversize_allocations.peak", oversize_allocations_.peak},
            {"oversize_segments.peak", oversize_segments_.peak},
        };
    }

private:
    Block* get_free_block(BlockPool& pool, const Block& key) {
        auto it = pool.lower_bound(const_cast<Block*>(&key));
        if (it == pool.end() || (*it)->stream != key.stream) return nullptr;
        // Do not return an oversized block for a large request.
        if (key.size < o_.max_split_size && (*it)->size >= o_.max_split_size) return nullptr;
        // Allow an oversized block to be rounded up, within a limit.
        if (key.size >= o_.max_split_size && (*it)->size >= key.size + o_.max_non_split_rounding) return nullptr;
        Block* block = *it;
        pool.erase(it);
        return block;
    }

    Block* alloc_block(std::uint64_t alloc_size, bool small, const Request& r, bool is_retry) {
        if (is_retry) ++retries_;
        std::uint64_t address = 0;
        if (!upstream_.allocate(alloc_size, r.stream, address)) return nullptr;
        Block* b = new_block();
        b->address = address;
        b->size = alloc_size;
        b->stream = r.stream_value;
        b->stream_index = r.stream;
        b->small = small;
        segment_.increase(1);
        if (alloc_size >= o_.max_split_size) oversize_segments_.increase(1);
        return b;
    }

    bool should_split(const Block* block, std::uint64_t size) const noexcept {
        const std::uint64_t remaining = block->size - size;
        if (block->small) return remaining >= kMinBlockSize;
        return size < o_.max_split_size && remaining > kSmallSize;
    }

    void alloc_found_block(Block* block, BlockPool& pool, std::uint64_t size, const Request& r, bool split_remainder) {
        if (split_remainder) {
            Block* remaining = block;
            block = new_block();
            block->address = remaining->address;
            block->size = size;
            block->stream = remaining->stream;
            block->stream_index = remaining->stream_index;
            block->small = remaining->small;
            block->prev = remaining->prev;
            if (block->prev) block->prev->next = block;
            block->next = remaining;
            remaining->prev = block;
            remaining->address += size;
            remaining->size -= size;
            pool.insert(remaining);
        }
        block->allocated = true;
        block->requested = r.size;
        at_grow(live_, r.handle) = block;
        allocation_.increase(1);
        allocated_bytes_.increase(block->size);
        requested_bytes_.increase(block->requested);
        if (block->size >= o_.max_split_size) oversize_allocations_.increase(1);
    }

    void free_block(Block* block) {
        BlockPool& pool = block->small ? small_ : large_;
        Block* const candidates[2] = {block->prev, block->next};
        for (Block* c : candidates) try_merge_blocks(block, c, pool);
        pool.insert(block);
    }

    void try_merge_blocks(Block* dst, Block* src, BlockPool& pool) {
        if (!src || src->allocated) return;
        pool.erase(src);
        if (dst->prev == src) {  // [src dst]
            dst->address = src->address;
            dst->prev = src->prev;
            if (dst->prev) dst->prev->next = dst;
        } else {  // [dst src]
            dst->next = src->next;
            if (dst->next) dst->next->prev = dst;
        }
        dst->size += src->size;
        delete_block(src);
    }

    // Frees cached oversize blocks (>= max_split_size), only enough for the request.
    bool release_available_cached_blocks(BlockPool& pool, const Block& request_key) {
        if (o_.max_split_size == TorchOptions::kNoLimit) return false;
        Block key = request_key;
        key.size = key.size < o_.max_split_size ? o_.max_split_size : key.size;
        auto it = pool.lower_bound(&key);
        if (it == pool.end() || (*it)->stream != key.stream) {
            // No single block is large enough: free several oversize blocks, largest first.
            if (it == pool.begin()) return false;
            std::uint64_t total_released = 0;
            --it;
            while (total_released < key.size && (*it)->size >= o_.max_split_size && (*it)->stream == key.stream) {
                auto cur = it;
                total_released += (*it)->size;
                if (it != pool.begin()) {
                    --it;
                    release_block(*cur);
                } else {
                    release_block(*cur);
                    break;
                }
            }
            if (total_released < key.size) return false;
        } else {
            release_block(*it);
        }
        return true;
    }

    // Frees every cached segment that is not split (large pool, then small).
    bool release_cached_blocks() {
        release_blocks(large_);
        release_blocks(small_);
        return true;
    }

    void release_blocks(BlockPool& pool) {
        for (auto it = pool.begin(); it != pool.end();) {
            Block* block = *it;
            ++it;
            if (!block->prev && !block->next) release_block(block);
        }
    }

    void release_block(Block* block) {
        upstream_.deallocate(block->address, block->size, block->stream_index);
        segment_.decrease(1);
        if (block->size >= o_.max_split_size) oversize_segments_.decrease(1);
        (block->small ? small_ : large_).erase(block);
        delete_block(block);
    }

    Block* new_block() {
        if (spare_.empty()) {
            chunks_.emplace_back(new Block[256]);
            for (int i = 255; i >= 0; --i) spare_.push_back(&chunks_.back()[i]);
        }
        Block* b = spare_.back();
        spare_.pop_back();
        *b = Block{};
        return b;
    }
    void delete_block(Block* b) { spare_.push_back(b); }

    TorchOptions o_;
    BlockPool large_, small_;
    std::vector<Block*> live_;
    std::vector<std::unique_ptr<Block[]>> chunks_;
    std::vector<Block*> spare_;
    std::uint64_t num_ooms_ = 0;
    Stat allocated_bytes_, requested_bytes_, segment_, allocation_, oversize_allocations_, oversize_segments_;
};

}  // namespace

std::unique_ptr<Strategy> make_torch_caching(Upstream& upstream, const StrategyOptions& options) {
    return std::make_unique<TorchCaching>(upstream, options.torch);
}

}  // namespace gpumem::reuse_sim::detail
