// naive, grow-only (MixMemory), shape-persistent (Torch-TensorRT persistent
// outputs), ring (tensorRT_Pro's MonopolyAllocator) and async-pool
// (cudaMallocAsync).
#include <algorithm>

#include "reuse_sim/flat_map.hpp"
#include "reuse_sim/strategies_impl.hpp"

namespace gpumem::reuse_sim::detail {
namespace {

struct Buffer {
    std::uint64_t address = 0;
    std::uint64_t size = 0;
    std::uint32_t stream = 0;
};

// Every request straight from the upstream and back to it when freed:
// cudaMalloc/cudaFree, or with kStreamOrdered cudaMallocAsync/cudaFreeAsync.
template <bool kStreamOrdered>
class PassThrough : public Strategy {
public:
    using Strategy::Strategy;

private:
    bool do_allocate(const Request& r) override {
        Buffer b{0, r.size, r.stream};
        const bool got = kStreamOrdered ? upstream_.allocate_async(r.size, r.stream, b.address)
                                        : upstream_.allocate(r.size, r.stream, b.address);
        if (!got) return false;
        at_grow(live_, r.handle) = b;
        return true;
    }
    void do_deallocate(std::uint32_t handle) override {
        const Buffer& b = live_[handle];
        if constexpr (kStreamOrdered)
            upstream_.deallocate_async(b.address, b.size, b.stream);
        else
            upstream_.deallocate(b.address, b.size, b.stream);
    }
    void do_release_all() override {}

    std::vector<Buffer> live_;
};

// cudaMalloc and cudaFree for every request.
class Naive final : public PassThrough<false> {
public:
    using PassThrough::PassThrough;
};

// One buffer per requester slot, kept between requests. A requester (a tag,
// or an id when the trace has no tags) can hold several buffers at once:
// its live requests take its free slots in order.
class SlotStrategy : public Strategy {
public:
    using Strategy::Strategy;

    // The buffers no request holds now; a requester's next request allocates anew.
    void empty_cache() override { release_idle(); }
    std::vector<std::pair<std::string, std::uint64_t>> details() const override {
        return {{"slots", slots_.size()}, {"requesters", first_slot_.size()}};
    }

private:
    bool do_allocate(const Request& r) override {
        const std::uint32_t index = free_slot_for(r.slot);
        Slot& s = slots_[index];
        if (!reusable(s, r.size)) {
            // Sized from the buffer held now (0 when the slot is empty, also
            // after a refused growth), before it is freed, as MixMemory does.
            const std::uint64_t capacity = new_capacity(r.size, s.capacity);
            if (s.capacity != 0) {
                // MixMemory frees first, then allocates: the peak never holds both.
                upstream_.deallocate(s.address, s.capacity, s.stream);
                s.capacity = 0;
            }
            std::uint64_t address = 0;
            if (!upstream_.allocate(capacity, r.stream, address)) return false;  // the slot stays empty
            s.address = address;
            s.capacity = capacity;
            s.stream = r.stream;
            after_allocation(s);
        }
        s.in_use = true;
        at_grow(by_handle_, r.handle) = index;
        return true;
    }
    void do_deallocate(std::uint32_t handle) override { slots_[by_handle_[handle]].in_use = false; }
    void do_release_all() override { release_idle(); }

protected:
    void release_idle() {
        for (Slot& s : slots_)
            if (s.capacity != 0 && !s.in_use) {
                upstream_.deallocate(s.address, s.capacity, s.stream);
                s.capacity = 0;
            }
    }
    struct Slot {
        std::uint64_t address = 0;
        std::uint64_t capacity = 0;  // 0: no buffer
        std::uint32_t stream = 0;
        std::uint32_t next = kNone;  // next slot of the same requester
        bool in_use = false;
    };
    static constexpr std::uint32_t kNone = 0xffffffffu;

    virtual bool reusable(const Slot& s, std::uint64_t size) const = 0;
    // Capacity of a new buffer for `size` bytes, `current` the capacity held now.
    virtual std::uint64_t new_capacity(std::uint64_t size, std::uint64_t current) const = 0;
    virtual void after_allocation(const Slot&) {}

private:
    std::uint32_t free_slot_for(std::uint64_t key) {
        std::uint32_t* first = first_slot_.find(key);
        if (!first) {
            first_slot_.put(key, static_cast<std::uint32_t>(slots_.size()));
            slots_.emplace_back();
            return static_cast<std::uint32_t>(slots_.size() - 1);
        }
        std::uint32_t i = *first;
        for (;;) {
            if (!slots_[i].in_use) return i;
            if (slots_[i].next == kNone) break;
            i = slots_[i].next;
        }
        const auto added = static_cast<std::uint32_t>(slots_.size());
        slots_[i].next = added;
        slots_.emplace_back();
        return added;
    }

    U64Map first_slot_;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> by_handle_;
};

// MixMemory: reuse while the request fits, otherwise free and allocate
// larger, by MixMemory's own growth policy.
class GrowOnly final : public SlotStrategy {
public:
    GrowOnly(Upstream& upstream, const GrowthPolicy& growth, bool zero_fill)
        : SlotStrategy(upstream), growth_(growth), zero_fill_(zero_fill) {}

protected:
    bool reusable(const Slot& s, std::uint64_t size) const override { return s.capacity != 0 && size <= s.capacity; }
    std::uint64_t new_capacity(std::uint64_t size, std::uint64_t current) const override {
        return growth_.capacity_for(size, current);
    }
    void after_allocation(const Slot& s) override {
        // MixMemory's cudaMemset of every new buffer, on the legacy stream.
        if (zero_fill_) upstream_.fill_zero(s.address, s.capacity);
    }

private:
    GrowthPolicy growth_;
    bool zero_fill_;
};

// Torch-TensorRT's pre-allocated outputs: reuse only while the size (the
// shape key) is unchanged; any change, larger or smaller, reallocates.
class ShapePersistent final : public SlotStrategy {
public:
    using SlotStrategy::SlotStrategy;

protected:
    bool reusable(const Slot& s, std::uint64_t size) const override { return s.capacity != 0 && size == s.capacity; }
    std::uint64_t new_capacity(std::uint64_t size, std::uint64_t) const override { return size; }
};

// N buffers of the largest request size handed out in turn. A real ring
// blocks until a buffer comes back; a replay cannot wait for a free that comes
// later in the trace, so such a request (or one larger than the buffers) gets
// a temporary buffer from upstream and is counted as a wait.
class Ring final : public Strategy {
public:
    Ring(Upstream& upstream, std::uint32_t buffers, std::uint64_t buffer_size)
        : Strategy(upstream), ring_(buffers == 0 ? 1 : buffers), buffer_size_(buffer_size) {}

    // The idle buffers; a slot whose buffer was released allocates it again on its next use.
    void empty_cache() override {
        for (auto& s : ring_)
            if (s.buffer.size != 0 && !s.busy) {
                upstream_.deallocate(s.buffer.address, s.buffer.size, s.buffer.stream);
                s.buffer.size = 0;
            }
    }
    std::vector<std::pair<std::string, std::uint64_t>> details() const override {
        return {{"ring_buffers", ring_.size()}, {"ring_buffer_size", buffer_size_}, {"waits", waits_}};
    }

private:
    bool do_allocate(const Request& r) override {
        Use& use = at_grow(by_handle_, r.handle);
        use = Use{};
        if (r.size <= buffer_size_) {
            for (std::size_t k = 0; k < ring_.size(); ++k) {
                const std::size_t i = (cursor_ + k) % ring_.size();
                Buffer& b = ring_[i].buffer;
                if (ring_[i].busy) continue;
                if (b.size == 0) {  // first use of this ring slot
                    if (!upstream_.allocate(buffer_size_, r.stream, b.address)) return false;
                    b.size = buffer_size_;
                    b.stream = r.stream;
                }
                ring_[i].busy = true;
                cursor_ = i + 1;
                use.ring_index = static_cast<std::uint32_t>(i);
                return true;
            }
        }
        ++waits_;
        use.temporary = Buffer{0, r.size, r.stream};
        return upstream_.allocate(r.size, r.stream, use.temporary.address);
    }
    void do_deallocate(std::uint32_t handle) override {
        const Use& use = by_handle_[handle];
        if (use.ring_index != kNone) ring_[use.ring_index].busy = false;
        else upstream_.deallocate(use.temporary.address, use.temporary.size, use.temporary.stream);
    }
    // After every handle was freed, the idle buffers are all of them.
    void do_release_all() override { empty_cache(); }

    static constexpr std::uint32_t kNone = 0xffffffffu;
    struct RingSlot {
        Buffer buffer;
        bool busy = false;
    };
    struct Use {
        std::uint32_t ring_index = kNone;
        Buffer temporary;
    };
    std::vector<RingSlot> ring_;
    std::uint64_t buffer_size_;
    std::size_t cursor_ = 0;
    std::uint64_t waits_ = 0;
    std::vector<Use> by_handle_;
};

// cudaMallocAsync / cudaFreeAsync for every request on the device's
// stream-ordered pool, which returns memory above its release threshold at
// synchronization points.
class AsyncPool final : public PassThrough<true> {
public:
    AsyncPool(Upstream& upstream, std::uint64_t release_threshold) : PassThrough(upstream), release_threshold_(release_threshold) {
        upstream_.set_release_threshold(release_threshold);
    }
    void synchronize_point() override { upstream_.synchronize(); }
    // PyTorch's cudaMallocAsync backend: synchronize, then trim the pool to
    // nothing (cudaMemPoolTrimTo(pool, 0)); the threshold applies again after.
    void empty_cache() override {
        upstream_.set_release_threshold(0);
        upstream_.synchronize();
        upstream_.set_release_threshold(release_threshold_);
    }

private:
    void do_release_all() override {
        upstream_.set_release_threshold(0);
        upstream_.synchronize();
    }

    std::uint64_t release_threshold_;
};

}  // namespace

std::unique_ptr<Strategy> make_naive(Upstream& upstream, const StrategyOptions&) { return std::make_unique<Naive>(upstream); }
std::unique_ptr<Strategy> make_grow_only(Upstream& upstream, const StrategyOptions& o) {
    return std::make_unique<GrowOnly>(upstream, o.growth, o.zero_fill);
}
std::unique_ptr<Strategy> make_shape_persistent(Upstream& upstream, const StrategyOptions&) {
    return std::make_unique<ShapePersistent>(upstream);
}
std::unique_ptr<Strategy> make_ring(Upstream& upstream, const StrategyOptions& o) {
    return std::make_unique<Ring>(upstream, o.ring_buffers, o.ring_buffer_size());
}
std::unique_ptr<Strategy> make_async_pool(Upstream& upstream, const StrategyOptions& o) {
    return std::make_unique<AsyncPool>(upstream, o.release_threshold);
}

}  // namespace gpumem::reuse_sim::detail
