// The upstream every strategy allocates from: the CUDA memory calls a real
// allocator makes. SimulatedUpstream stands in for a device (fake addresses,
// a capacity, a model of the driver's stream-ordered pool); the CUDA
// implementation (cuda_upstream.hpp) makes the real calls for --execute.
// Strategies are written once against this interface.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "reuse_sim/cost_table.hpp"
#include "reuse_sim/free_list.hpp"

namespace gpumem::reuse_sim {

// A size that a strategy or the simulated device cannot round, or add to
// what it holds, within 64 bits. The replay turns it into a usage error that
// names the event and the strategy.
class SizeOverflow : public std::overflow_error {
public:
    using std::overflow_error::overflow_error;
};

// n rounded up to a multiple of `multiple`, or SizeOverflow.
inline std::uint64_t round_up_checked(std::uint64_t n, std::uint64_t multiple) {
    if (n > std::numeric_limits<std::uint64_t>::max() - (multiple - 1))
        throw SizeOverflow("rounding " + std::to_string(n) + " bytes up to a multiple of " + std::to_string(multiple) + " overflows 64 bits");
    return (n + multiple - 1) / multiple * multiple;
}

struct UpstreamCounters {
    // cudaMalloc / cudaFree
    std::uint64_t device_allocs = 0, device_frees = 0, device_alloc_failures = 0;
    // cudaMallocAsync / cudaFreeAsync
    std::uint64_t async_allocs = 0, async_frees = 0, async_alloc_failures = 0;
    // Memory the stream-ordered pool took from the driver, or gave back at a
    // synchronization (modelled; on a GPU, changes of the pool's reserved size).
    std::uint64_t pool_grows = 0, pool_releases = 0;
    std::uint64_t fills = 0;             // cudaMemset on the legacy stream
    std::uint64_t synchronizations = 0;  // cudaDeviceSynchronize
    std::uint64_t reserved_bytes = 0, peak_reserved_bytes = 0;  // device + pool
    std::uint64_t device_reserved_bytes = 0, pool_reserved_bytes = 0;
    double modelled_us = 0;  // from the cost table
    double measured_us = 0;  // wall time of the real calls (CUDA upstream only)
};

// The calls are public and not virtual: each counts what it did (calls,
// failures, reserved bytes, modelled time) around a private virtual hook that
// only performs it, as RMM's device_memory_resource wraps do_allocate. So the
// simulated and the real upstream count the same way by construction, and
// `reuse-sim --execute` can compare their counts.
class Upstream {
public:
    virtual ~Upstream() = default;
    Upstream(const Upstream&) = delete;
    Upstream& operator=(const Upstream&) = delete;

    // cudaMalloc: false when the device (or --capacity) refuses. A request
    // beyond the capacity is refused here, without asking the device.
    bool allocate(std::uint64_t size, std::uint32_t stream, std::uint64_t& address);
    // cudaFree: synchronizes the device.
    void deallocate(std::uint64_t address, std::uint64_t size, std::uint32_t stream);
    // Physical pages mapped into, or unmapped from, an expandable segment
    // (cuMemCreate + cuMemMap, cuMemUnmap + cuMemRelease): PyTorch counts
    // each call as one device allocation or free, and its bytes as reserved.
    // Counted only, never refused and not performed on a device: the caller
    // checks its own limit (PyTorch compares its memory fraction with the
    // segment it would have cudaMalloc'd, not with the pages it maps).
    void map_pages(std::uint64_t size);
    void unmap_pages(std::uint64_t size);
    // cudaMallocAsync / cudaFreeAsync on the device's stream-ordered pool.
    bool allocate_async(std::uint64_t size, std::uint32_t stream, std::uint64_t& address);
    void deallocate_async(std::uint64_t address, std::uint64_t size, std::uint32_t stream);
    // The pool keeps this much memory across synchronizations (cudaMemPoolAttrReleaseThreshold).
    void set_release_threshold(std::uint64_t bytes) { do_set_release_threshold(bytes); }
    // cudaMemset(address, 0, size) on the legacy stream.
    void fill_zero(std::uint64_t address, std::uint64_t size);
    // cudaDeviceSynchronize: the stream-ordered pool trims to its threshold.
    void synchronize();

    const UpstreamCounters& counters() const noexcept { return counters_; }
    // The most it reserves at once (kUnlimited: no limit): --capacity, which
    // for PyTorch's allocator stands for its allowed_memory_maximum.
    std::uint64_t capacity() const noexcept { return capacity_; }

protected:
    // `costs` may be null (no modelled time).
    Upstream(std::uint64_t capacity, const CostModel* costs) noexcept : capacity_(capacity), costs_(costs) {}

    // Whether `size` more bytes fit in the capacity beside what is reserved.
    bool fits(std::uint64_t size) const noexcept {
        return size <= capacity_ && counters_.reserved_bytes <= capacity_ - size;
    }
    // The stream-ordered pool took `bytes` from the driver, or gave them back:
    // for the simulator when its model does so, for the real upstream when
    // the pool's reserved size is seen to change.
    void count_pool_grow(std::uint64_t bytes) noexcept;
    void count_pool_release(std::uint64_t bytes) noexcept;
    // Wall time of real calls (the CUDA upstream only).
    void count_measured_us(double us) noexcept { counters_.measured_us += us; }

private:
    // The operations alone; the public calls above do the counting. The
    // allocation hooks return false when the device refuses (out of memory).
    virtual bool do_allocate(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) = 0;
    virtual void do_deallocate(std::uint64_t address, std::uint64_t size, std::uint32_t stream) = 0;
    virtual bool do_allocate_async(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) = 0;
    virtual void do_deallocate_async(std::uint64_t address, std::uint64_t size, std::uint32_t stream) = 0;
    virtual void do_set_release_threshold(std::uint64_t bytes) = 0;
    virtual void do_fill_zero(std::uint64_t address, std::uint64_t size) = 0;
    virtual void do_synchronize() = 0;

    void add_reserved(std::uint64_t bytes) noexcept {
        counters_.reserved_bytes += bytes;
        if (counters_.reserved_bytes > counters_.peak_reserved_bytes) counters_.peak_reserved_bytes = counters_.reserved_bytes;
    }
    void sub_reserved(std::uint64_t bytes) noexcept { counters_.reserved_bytes -= bytes; }

    std::uint64_t capacity_;
    const CostModel* costs_;
    UpstreamCounters counters_;
};

inline constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

// A device that exists only in memory: addresses are invented (never reused,
// so a use-after-free in a strategy would show as a bad merge), the capacity
// is a number, and time comes from the cost table.
//
// The stream-ordered pool is modelled: it takes memory from the driver in
// 2 MiB granules (one "grow" per cudaMallocAsync it cannot serve), hands it
// out best-fit at 512-byte granularity, reuses a freed block at once on the
// stream that freed it (which also keeps the rest of a fresh granule run) and
// on any stream after a synchronization, and at each
// synchronization gives back whole unused granule runs while it holds more
// than the release threshold. The real driver's internals are not public;
// --execute reports the real pool's reserved peak beside this model's.
class SimulatedUpstream final : public Upstream {
public:
    static constexpr std::uint64_t kPoolGranule = 2ULL << 20;
    static constexpr std::uint64_t kPoolAlignment = 512;

    SimulatedUpstream(std::uint64_t capacity, const CostModel* costs) noexcept : Upstream(capacity, costs) {}

private:
    bool do_allocate(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) override;
    void do_deallocate(std::uint64_t, std::uint64_t, std::uint32_t) override {}
    bool do_allocate_async(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) override;
    void do_deallocate_async(std::uint64_t address, std::uint64_t size, std::uint32_t stream) override;
    void do_set_release_threshold(std::uint64_t bytes) override { release_threshold_ = bytes; }
    void do_fill_zero(std::uint64_t, std::uint64_t) override {}
    void do_synchronize() override;

    std::uint64_t new_address(std::uint64_t size);
    CoalescingFreeList& stream_list(std::uint32_t stream);

    std::uint64_t next_address_ = 0x7f0000000000ULL;

    std::uint64_t release_threshold_ = 0;
    std::vector<CoalescingFreeList> freed_on_stream_;  // reusable at once on that stream
    CoalescingFreeList pool_free_;                      // reusable on any stream
    std::map<std::uint64_t, std::uint64_t> pool_chunks_;  // address -> size of each piece from the driver
};

}  // namespace gpumem::reuse_sim
