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
#include <memory>

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

// The "deleter" of memory someone else owns (MixMemory::reference_device,
// reference_host): it frees nothing. Such memory is held in a unique_ptr all
// the same, so that a move hands the reference over and leaves the moved-from
// MixMemory empty. It carries the memory's size.
struct NotOwned {
    std::size_t bytes = 0;
    void operator()(void*) const noexcept {}
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
    ~MixMemory() noexcept;  // frees the device buffer, then the host buffer
    // A moved-from MixMemory holds no buffer, owned or wrapped; it keeps its
    // options and counters.
    MixMemory(MixMemory&&) noexcept = default;
    MixMemory& operator=(MixMemory&&) noexcept = default;
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

    void* device_data() const noexcept { return device_owned_ ? device_owned_.data() : device_wrapped_.get(); }
    void* host_data() const noexcept { return host_owned_ ? host_owned_.data() : host_wrapped_.get(); }
    std::size_t device_capacity() const noexcept {
        return device_owned_ ? device_owned_.size() : wrapped_bytes(device_wrapped_);
    }
    std::size_t host_capacity() const noexcept { return host_owned_ ? host_owned_.size() : wrapped_bytes(host_wrapped_); }
    bool owns_device() const noexcept { return static_cast<bool>(device_owned_); }
    bool owns_host() const noexcept { return static_cast<bool>(host_owned_); }
    bool host_huge_pages() const noexcept { return host_owned_.huge_pages(); }
    DeviceId device_id() const noexcept { return options_.device; }
    const MixMemoryOptions& options() const noexcept { return options_; }
    const MixMemoryCounters& counters() const noexcept { return counters_; }

private:
    using WrappedMemory = std::unique_ptr<void, NotOwned>;
    static std::size_t wrapped_bytes(const WrappedMemory& m) noexcept { return m ? m.get_deleter().bytes : 0; }

    MixMemoryOptions options_;
    // A buffer is owned, wrapped, or neither; never both.
    DeviceAllocation device_owned_;
    HostAllocation host_owned_;
    WrappedMemory device_wrapped_;
    WrappedMemory host_wrapped_;
    MixMemoryCounters counters_;
};

}  // namespace gpumem
