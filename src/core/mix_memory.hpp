// MixMemory: a host buffer and a device buffer for one device that grow
// lazily and are reused, as in tensorRT_Pro, without its defects: ownership
// is tracked per buffer (a growth after wrapping foreign memory owns and frees
// what it allocates), sizes are recorded only after an allocation succeeds,
// failures throw and leave the buffer empty, the object is move-only,
// zero-fill is optional and stream-ordered, and a bad device id is an error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/cuda_raii.hpp"
#include "base/memory_policy.hpp"

namespace gpumem {

struct MixMemoryOptions {
    DeviceId device{0};
    HostMemoryKind host_kind = HostMemoryKind::pinned;
    GrowthPolicy growth = GrowthPolicy::exact();
    bool zero_fill = false;  // zero new memory on growth (device: on `stream`)
    // Stream for device zero-fill; nullptr means the per-thread default
    // stream, never the legacy stream that stalls the whole device.
    cudaStream_t stream = nullptr;
};

struct MixMemoryCounters {
    std::uint64_t device_allocations = 0, device_frees = 0, device_reuses = 0;
    std::uint64_t host_allocations = 0, host_frees = 0, host_reuses = 0;
    std::uint64_t device_bytes_allocated = 0, host_bytes_allocated = 0;  // cumulative
    std::uint64_t peak_device_capacity = 0, peak_host_capacity = 0;
};

class MixMemory {
public:
    explicit MixMemory(MixMemoryOptions options = {});
    ~MixMemory() noexcept;
    MixMemory(MixMemory&& other) noexcept;
    MixMemory& operator=(MixMemory&& other) noexcept;
    MixMemory(const MixMemory&) = delete;
    MixMemory& operator=(const MixMemory&) = delete;

    // A device buffer of at least `bytes`: the current one when it is large
    // enough, else a new one sized by the growth policy (the old one is freed
    // first, so growth never needs old + new at once). Throws
    // OutOfMemoryError and leaves the device buffer empty on failure.
    void* device(std::size_t bytes);
    void* host(std::size_t bytes);
    template <typename T>
    T* device(std::size_t count) {
        return static_cast<T*>(device(static_cast<std::size_t>(checked_array_bytes(count, sizeof(T)))));
    }
    template <typename T>
    T* host(std::size_t count) {
        return static_cast<T*>(host(static_cast<std::size_t>(checked_array_bytes(count, sizeof(T)))));
    }

    // Use memory owned by someone else until a request exceeds `bytes`; that
    // memory is never freed here.
    void reference_device(void* ptr, std::size_t bytes);
    void reference_host(void* ptr, std::size_t bytes);

    void release_device() noexcept;  // frees owned device memory, forgets wrapped memory
    void release_host() noexcept;
    void release() noexcept { release_device(); release_host(); }

    void* device_data() const noexcept { return device_ptr_; }
    void* host_data() const noexcept { return host_ptr_; }
    std::size_t device_capacity() const noexcept { return device_capacity_; }
    std::size_t host_capacity() const noexcept { return host_capacity_; }
    bool owns_device() const noexcept { return static_cast<bool>(device_owned_); }
    bool owns_host() const noexcept { return static_cast<bool>(host_owned_); }
    bool host_huge_pages() const noexcept { return host_owned_.huge_pages(); }
    DeviceId device_id() const noexcept { return options_.device; }
    const MixMemoryOptions& options() const noexcept { return options_; }
    const MixMemoryCounters& counters() const noexcept { return counters_; }

private:
    MixMemoryOptions options_;
    DeviceAllocation device_owned_;  // empty while wrapping foreign memory
    HostAllocation host_owned_;
    void* device_ptr_ = nullptr;     // owned or wrapped
    void* host_ptr_ = nullptr;
    std::size_t device_capacity_ = 0;
    std::size_t host_capacity_ = 0;
    MixMemoryCounters counters_;
};

}  // namespace gpumem
