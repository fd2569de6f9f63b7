// RAPIDS RMM's pool_memory_resource and binning_memory_resource (over a pool,
// as RMM's replay benchmark builds it), with the rules of
// include/rmm/mr/device/{pool,fixed_size,binning}_memory_resource.hpp and
// detail/stream_ordered_memory_resource.hpp:
//  - requests are rounded up to 256 bytes;
//  - each stream has its own free list; a stream that finds nothing takes the
//    best fit from another stream's list (then absorbs that whole list), then
//    absorbs the other lists one by one looking again, and only then grows;
//  - growth asks upstream for max(request, current pool size) (doubling), or
//    with a maximum for max(request, half of what remains below it), halving
//    the attempt on failure down to the request itself;
//  - memory goes back upstream only when the resource is released.
// RMM keeps its per-stream lists in a map ordered by CUDA event handle; here
// they are visited in stream order (the event handles' order is not
// reproducible).
#include <algorithm>

#include "reuse_sim/flat_map.hpp"
#include "reuse_sim/free_list.hpp"
#include "reuse_sim/max_index.hpp"
#include "reuse_sim/strategies_impl.hpp"

namespace gpumem::reuse_sim::detail {
namespace {

constexpr std::uint64_t kAlignment = 256;
// Checked: --pool-max near 2^64 would otherwise wrap to a pool of 0 bytes.
inline std::uint64_t align_up(std::uint64_t n) { return round_up_checked(n, kAlignment); }

class RmmPoolResource {
public:
    RmmPoolResource(Upstream& upstream, std::uint64_t initial, std::uint64_t maximum)
        : upstream_(upstream), maximum_(maximum) {
        if (initial > 0) {
            // RMM puts the initial block on the legacy default stream's list.
            const FreeBlock b = try_to_expand(initial, initial, 0);
            if (b.valid()) insert(0, b);
        }
    }

    // do_allocate: `bytes` already rounded by the caller to 256.
    bool allocate(std::uint64_t bytes, std::uint32_t stream, std::uint64_t& address, bool& head) {
        FreeBlock b;
        if (largest_.get(stream) >= bytes) {  // the usual case: the stream's own list, split in place
            b = lists_[stream]->take_front_of_best_fit(bytes);
            updated(stream);
        } else {
            b = get_block(bytes, stream);
            if (!b.valid()) return false;
            if (b.size > bytes) insert(stream, FreeBlock{b.address + bytes, b.size - bytes, false});
        }
        address = b.address;
        head = b.head;
        return true;
    }
    void deallocate(std::uint64_t address, std::uint64_t bytes, std::uint32_t stream, bool head) {
        insert(stream, FreeBlock{address, bytes, head});
    }
    void release() {
        for (const auto& [address, size] : upstream_blocks_) upstream_.deallocate(address, size, 0);
        upstream_blocks_.clear();
        lists_.clear();
        largest_.clear();
        pool_size_ = 0;
    }
    std::uint64_t pool_size() const noexcept { return pool_size_; }
    std::size_t upstream_blocks() const noexcept { return upstream_blocks_.size(); }

private:
    static constexpr std::size_t npos = MaxIndex<std::uint64_t>::npos;

    // Every change to a stream's list goes through these three, which keep
    // largest_ (the largest free block of each stream) up to date. An empty
    // list is dropped: with 10^6 streams most are empty at any time.
    void insert(std::uint32_t stream, FreeBlock b) {
        if (stream >= lists_.size()) lists_.resize(stream + 1);
        if (!lists_[stream]) lists_[stream] = std::make_unique<CoalescingFreeList>();
        lists_[stream]->insert(b);
        largest_.set(stream, lists_[stream]->largest());
    }
    FreeBlock take(std::uint32_t stream, std::uint64_t size) {
        if (largest_.get(stream) < size) return {};
        const FreeBlock b = lists_[stream]->take_best_fit(size);
        updated(stream);
        return b;
    }
    // Moves stream `from`'s whole list into `stream`'s.
    void absorb(std::uint32_t stream, std::uint32_t from) {
        if (stream >= lists_.size()) lists_.resize(stream + 1);
        if (!lists_[stream]) lists_[stream].swap(lists_[from]);
        else lists_[stream]->absorb(*lists_[from]);
        updated(from);
        updated(stream);
    }
    void updated(std::uint32_t stream) {
        auto& l = lists_[stream];
        if (l && l->empty()) l.reset();
        largest_.set(stream, l ? l->largest() : 0);
    }

    // The search of stream_ordered_memory_resource::get_block, with the other
    // streams' lists visited in stream order; largest_ skips those that
    // cannot serve the request (the first loop) or are empty (the second).
    // The stream's own list cannot serve `size` (allocate() looked).
    FreeBlock get_block(std::uint64_t size, std::uint32_t stream) {
        // Another stream's list, without merging first; then absorb that list.
        for (std::size_t s = largest_.first_at_least(0, size); s != npos; s = largest_.first_at_least(s + 1, size)) {
            if (s == stream) continue;
            const auto from = static_cast<std::uint32_t>(s);
            const FreeBlock b = take(from, size);
            if (lists_[from]) absorb(stream, from);
            return b;
        }
        // Absorb the other lists one at a time, looking after each.
        for (std::size_t s = largest_.first_at_least(0, 1); s != npos; s = largest_.first_at_least(s + 1, 1)) {
            if (s == stream) continue;
            absorb(stream, static_cast<std::uint32_t>(s));
            if (FreeBlock b = take(stream, size); b.valid()) return b;
        }
        return try_to_expand(size_to_grow(size), size, stream);
    }

    std::uint64_t size_to_grow(std::uint64_t size) const {
        if (maximum_ != kUnlimited) {
            const std::uint64_t remaining = align_up(maximum_ - pool_size_);
            const std::uint64_t aligned = align_up(size);
            return aligned <= remaining ? std::max(aligned, remaining / 2) : 0;
        }
        return std::max(size, pool_size_);
    }

    FreeBlock try_to_expand(std::uint64_t try_size, std::uint64_t min_size, std::uint32_t stream) {
        while (try_size >= min_size && try_size > 0) {
            std::uint64_t address = 0;
            if (upstream_.allocate(try_size, stream, address)) {
                pool_size_ += try_size;
                upstream_blocks_.emplace_back(address, try_size);
                return FreeBlock{address, try_size, true};
            }
            if (try_size == min_size) break;
            try_size = std::max(min_size, try_size / 2);
        }
        return {};  // RMM throws rmm::out_of_memory: "Maximum pool size exceeded"
    }

    Upstream& upstream_;
    std::uint64_t maximum_;
    std::uint64_t pool_size_ = 0;
    std::vector<std::unique_ptr<CoalescingFreeList>> lists_;  // by stream; null: empty
    MaxIndex<std::uint64_t> largest_;                          // by stream: its list's largest block
    std::vector<std::pair<std::uint64_t, std::uint64_t>> upstream_blocks_;
};

struct PoolAllocation {
    std::uint64_t address = 0;
    std::uint64_t bytes = 0;
    std::uint32_t stream = 0;
    bool head = false;
};

class RmmPool final : public Strategy {
public:
    RmmPool(Upstream& upstream, std::uint64_t initial, std::uint64_t maximum)
        : Strategy(upstream), pool_(upstream, initial, maximum) {}

    std::vector<std::pair<std::string, std::uint64_t>> details() const override {
        return {{"pool_size", pool_.pool_size()}, {"upstream_blocks", pool_.upstream_blocks()}};
    }

private:
    bool do_allocate(const Request& r) override {
        PoolAllocation a{0, align_up(r.size), r.stream, false};
        if (!pool_.allocate(a.bytes, r.stream, a.address, a.head)) return false;
        at_grow(live_, r.handle) = a;
        return true;
    }
    void do_deallocate(std::uint32_t handle) override {
        const PoolAllocation& a = live_[handle];
        pool_.deallocate(a.address, a.bytes, a.stream, a.head);
    }
    void do_release_all() override { pool_.release(); }

    RmmPoolResource pool_;
    std::vector<PoolAllocation> live_;
};

// fixed_size_memory_resource: blocks of one size carved from chunks of
// `blocks` blocks taken from the pool; one chunk at construction, another
// whenever every list is empty.
class FixedSizeBin {
public:
    FixedSizeBin(RmmPoolResource& pool, std::uint64_t block_size, std::uint64_t blocks)
        : pool_(pool), block_size_(align_up(block_size)), chunk_size_(block_size * blocks) {
        add_chunk(0);  // RMM preallocates on the legacy stream at construction
    }
    std::uint64_t block_size() const noexcept { return block_size_; }
    std::size_t chunks() const noexcept { return chunks_; }

    bool allocate(std::uint32_t stream, std::uint64_t& address) {
        if (!nonempty_.get(stream)) {
            // Blocks are all alike: the first other stream's block fits, and
            // its list moves to this (empty) one.
            std::size_t s = nonempty_.first_at_least(0, 1);
            if (s == stream) s = nonempty_.first_at_least(s + 1, 1);
            if (s != MaxIndex<std::uint8_t>::npos) {
                list(stream).swap(free_[s]);
                nonempty_.set(s, 0);
                nonempty_.set(stream, 1);
            } else if (!add_chunk(stream)) {
                return false;
            }
        }
        auto& own = free_[stream];
        address = own.back();
        own.pop_back();
        if (own.empty()) nonempty_.set(stream, 0);
        return true;
    }
    void deallocate(std::uint64_t address, std::uint32_t stream) {
        list(stream).push_back(address);
        nonempty_.set(stream, 1);
    }

private:
    std::vector<std::uint64_t>& list(std::uint32_t stream) {
        if (stream >= free_.size()) free_.resize(stream + 1);
        return free_[stream];
    }
    bool add_chunk(std::uint32_t stream) {
        std::uint64_t address = 0;
        bool head = false;
        if (!pool_.allocate(align_up(chunk_size_), stream, address, head)) return false;
        ++chunks_;
        auto& own = list(stream);
        for (std::uint64_t i = 0; i + block_size_ <= chunk_size_; i += block_size_) own.push_back(address + i);
        if (!own.empty()) nonempty_.set(stream, 1);
        return true;
    }

    RmmPoolResource& pool_;
    std::uint64_t block_size_;
    std::uint64_t chunk_size_;
    std::size_t chunks_ = 0;
    std::vector<std::vector<std::uint64_t>> free_;  // by stream
    MaxIndex<std::uint8_t> nonempty_;              // by stream: 1 where free_ holds a block
};

class RmmBinning final : public Strategy {
public:
    RmmBinning(Upstream& upstream, const StrategyOptions& o)
        : Strategy(upstream), pool_(upstream, o.pool_initial, o.pool_maximum) {
        std::vector<std::uint64_t> sizes;
        for (std::uint64_t s : o.bins) sizes.push_back(align_up(s));
        std::sort(sizes.begin(), sizes.end());
        sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
        for (std::uint64_t s : sizes) bins_.push_back(std::make_unique<FixedSizeBin>(pool_, s, o.bin_blocks));
    }

    std::vector<std::pair<std::string, std::uint64_t>> details() const override {
        std::vector<std::pair<std::string, std::uint64_t>> d = {{"pool_size", pool_.pool_size()},
                                                                {"upstream_blocks", pool_.upstream_blocks()}};
        for (const auto& b : bins_) d.emplace_back("bin_" + std::to_string(b->block_size()) + "_chunks", b->chunks());
        return d;
    }

private:
    bool do_allocate(const Request& r) override {
        Allocation& a = at_grow(live_, r.handle);
        a = Allocation{};
        a.stream = r.stream;
        const std::uint64_t bytes = align_up(r.size);
        for (std::size_t i = 0; i < bins_.size(); ++i) {
            if (bins_[i]->block_size() >= bytes) {
                a.bin = static_cast<std::uint32_t>(i);
                return bins_[i]->allocate(r.stream, a.address);
            }
        }
        a.bytes = bytes;
        return pool_.allocate(bytes, r.stream, a.address, a.head);
    }
    void do_deallocate(std::uint32_t handle) override {
        const Allocation& a = live_[handle];
        if (a.bin != kNoBin) bins_[a.bin]->deallocate(a.address, a.stream);
        else pool_.deallocate(a.address, a.bytes, a.stream, a.head);
    }
    void do_release_all() override { pool_.release(); }

    static constexpr std::uint32_t kNoBin = 0xffffffffu;
    struct Allocation {
        std::uint64_t address = 0;
        std::uint64_t bytes = 0;
        std::uint32_t stream = 0;
        std::uint32_t bin = kNoBin;
        bool head = false;
    };
    RmmPoolResource pool_;
    std::vector<std::unique_ptr<FixedSizeBin>> bins_;
    std::vector<Allocation> live_;
};

}  // namespace

std::unique_ptr<Strategy> make_rmm_pool(Upstream& upstream, const StrategyOptions& o) {
    return std::make_unique<RmmPool>(upstream, o.pool_initial, o.pool_maximum);
}
std::unique_ptr<Strategy> make_rmm_binning(Upstream& upstream, const StrategyOptions& options) {
    return std::make_unique<RmmBinning>(upstream, options);
}

}  // namespace gpumem::reuse_sim::detail
