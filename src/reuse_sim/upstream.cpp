#include "reuse_sim/upstream.hpp"

namespace gpumem::reuse_sim {

namespace {
constexpr std::uint64_t round_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }
}  // namespace

// --- Upstream: the counting, shared by the simulated and the real device ---

bool Upstream::allocate(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) {
    if (!fits(size) || !do_allocate(size, stream, address)) {
        ++counters_.device_alloc_failures;
        return false;
    }
    ++counters_.device_allocs;
    counters_.device_reserved_bytes += size;
    add_reserved(size);
    if (costs_) counters_.modelled_us += costs_->device_alloc(size);
    return true;
}

void Upstream::deallocate(std::uint64_t address, std::uint64_t size, std::uint32_t stream) {
    do_deallocate(address, size, stream);
    ++counters_.device_frees;
    counters_.device_reserved_bytes -= size;
    sub_reserved(size);
    if (costs_) counters_.modelled_us += costs_->device_free(size);
}

void Upstream::map_pages(std::uint64_t size) {
    ++counters_.device_allocs;
    counters_.device_reserved_bytes += size;
    add_reserved(size);
    if (costs_) counters_.modelled_us += costs_->device_alloc(size);
}

void Upstream::unmap_pages(std::uint64_t size) {
    ++counters_.device_frees;
    counters_.device_reserved_bytes -= size;
    sub_reserved(size);
    if (costs_) counters_.modelled_us += costs_->device_free(size);
}

bool Upstream::allocate_async(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) {
    if (!do_allocate_async(size, stream, address)) {
        ++counters_.async_alloc_failures;
        return false;
    }
    ++counters_.async_allocs;
    if (costs_) counters_.modelled_us += costs_->async_alloc(size);
    return true;
}

void Upstream::deallocate_async(std::uint64_t address, std::uint64_t size, std::uint32_t stream) {
    do_deallocate_async(address, size, stream);
    ++counters_.async_frees;
    if (costs_) counters_.modelled_us += costs_->async_free(size);
}

void Upstream::fill_zero(std::uint64_t address, std::uint64_t size) {
    do_fill_zero(address, size);
    ++counters_.fills;
    if (costs_) counters_.modelled_us += costs_->memset(size);
}

void Upstream::synchronize() {
    do_synchronize();
    ++counters_.synchronizations;
}

void Upstream::count_pool_grow(std::uint64_t bytes) noexcept {
    ++counters_.pool_grows;
    counters_.pool_reserved_bytes += bytes;
    add_reserved(bytes);
    if (costs_) counters_.modelled_us += costs_->pool_grow(bytes);
}

void Upstream::count_pool_release(std::uint64_t bytes) noexcept {
    ++counters_.pool_releases;
    counters_.pool_reserved_bytes -= bytes;
    sub_reserved(bytes);
    if (costs_) counters_.modelled_us += costs_->pool_release(bytes);
}

// --- SimulatedUpstream ---

std::uint64_t SimulatedUpstream::new_address(std::uint64_t size) {
    // Like the driver, large allocations start on 2 MiB boundaries.
    // Addresses are never reused, so a trace that allocates more than the
    // address space in all would wrap them: refused instead.
    const std::uint64_t a = next_address_;
    const std::uint64_t span = round_up_checked(size, kPoolGranule);
    if (span > std::numeric_limits<std::uint64_t>::max() - a)
        throw SizeOverflow("the simulated device's 64-bit address space is used up (addresses are never reused)");
    next_address_ += span;
    return a;
}

bool SimulatedUpstream::do_allocate(std::uint64_t size, std::uint32_t, std::uint64_t& address) {
    address = new_address(size);
    return true;
}

CoalescingFreeList& SimulatedUpstream::stream_list(std::uint32_t stream) {
    if (stream >= freed_on_stream_.size()) freed_on_stream_.resize(stream + 1);
    return freed_on_stream_[stream];
}

bool SimulatedUpstream::do_allocate_async(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) {
    const std::uint64_t need = round_up_checked(size, kPoolAlignment);
    CoalescingFreeList& own = stream_list(stream);
    // The best fit in the stream's list, else in the pool's; what the block
    // holds beyond the request stays in that list.
    FreeBlock b = own.take_front_of_best_fit(need);
    if (!b.valid()) b = pool_free_.take_front_of_best_fit(need);
    if (!b.valid()) {
        const std::uint64_t grow = round_up_checked(need, kPoolGranule);
        if (!fits(grow)) return false;
        b = FreeBlock{new_address(grow), grow, true};
        pool_chunks_.emplace(b.address, grow);
        count_pool_grow(grow);
        // The rest of a fresh granule run stays with this stream, where it
        // can merge with what the stream frees.
        if (grow > need) own.insert(FreeBlock{b.address + need, grow - need, false});
    }
    address = b.address;
    return true;
}

void SimulatedUpstream::do_deallocate_async(std::uint64_t address, std::uint64_t size, std::uint32_t stream) {
    const bool head = pool_chunks_.count(address) != 0;
    stream_list(stream).insert(FreeBlock{address, round_up(size, kPoolAlignment), head});
}

void SimulatedUpstream::do_synchronize() {
    for (CoalescingFreeList& l : freed_on_stream_) pool_free_.absorb(l);
    if (counters().pool_reserved_bytes <= release_threshold_) return;
    for (auto it = pool_chunks_.begin(); it != pool_chunks_.end() && counters().pool_reserved_bytes > release_threshold_;) {
        if (pool_free_.take_exact(it->first, it->second)) {
            count_pool_release(it->second);
            it = pool_chunks_.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace gpumem::reuse_sim
