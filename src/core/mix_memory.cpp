#include "core/mix_memory.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/cuda_check.hpp"

namespace gpumem {

MixMemory::MixMemory(MixMemoryOptions options) : options_(options) {
    int count = 0;
    GPUMEM_CUDA_CALL(cudaGetDeviceCount(&count));
    if (options_.device.ordinal() < 0 || options_.device.ordinal() >= count)
        throw UsageError("MixMemory: device " + to_string(options_.device) + " does not exist (" +
                         std::to_string(count) + " visible)");
}

MixMemory::~MixMemory() noexcept { release(); }

void* MixMemory::device(std::size_t bytes) {
    if (bytes <= device_capacity() && device_data() != nullptr) {
        ++counters_.device_reuses;
        return device_data();
    }
    const auto capacity = static_cast<std::size_t>(options_.growth.capacity_for(bytes, device_capacity()));
    release_device();  // the buffer is empty and consistent from here on
    DeviceAllocation fresh(options_.device, capacity);  // throws OutOfMemoryError
    if (options_.zero_fill) {
        AutoDevice guard(options_.device);
        cudaStream_t stream = options_.stream ? options_.stream : cudaStreamPerThread;
        GPUMEM_CUDA_CALL(cudaMemsetAsync(fresh.data(), 0, capacity, stream));
    }
    device_owned_ = std::move(fresh);
    ++counters_.device_allocations;
    counters_.device_bytes_allocated += capacity;
    counters_.peak_device_capacity = std::max<std::uint64_t>(counters_.peak_device_capacity, capacity);
    return device_data();
}

void* MixMemory::host(std::size_t bytes) {
    if (bytes <= host_capacity() && host_data() != nullptr) {
        ++counters_.host_reuses;
        return host_data();
    }
    const auto capacity = static_cast<std::size_t>(options_.growth.capacity_for(bytes, host_capacity()));
    release_host();
    HostAllocation fresh(options_.host_kind, capacity, options_.device);
    // Pinned memory from the CUDA allocator is not zeroed; mmap'ed pages are.
    if (options_.zero_fill && host_memory_is_pinned(options_.host_kind) && options_.host_kind != HostMemoryKind::registered)
        std::memset(fresh.data(), 0, capacity);
    host_owned_ = std::move(fresh);
    ++counters_.host_allocations;
    counters_.host_bytes_allocated += capacity;
    counters_.peak_host_capacity = std::max<std::uint64_t>(counters_.peak_host_capacity, capacity);
    return host_data();
}

void MixMemory::reference_device(void* ptr, std::size_t bytes) {
    if (ptr == nullptr && bytes != 0) throw UsageError("MixMemory::reference_device: null pointer with a non-zero size");
    release_device();
    device_wrapped_ = WrappedMemory(ptr, NotOwned{bytes});
}

void MixMemory::reference_host(void* ptr, std::size_t bytes) {
    if (ptr == nullptr && bytes != 0) throw UsageError("MixMemory::reference_host: null pointer with a non-zero size");
    release_host();
    host_wrapped_ = WrappedMemory(ptr, NotOwned{bytes});
}

void MixMemory::release_device() noexcept {
    if (device_owned_) {
        device_owned_.reset();
        ++counters_.device_frees;
    }
    device_wrapped_.reset();
}

void MixMemory::release_host() noexcept {
    if (host_owned_) {
        host_owned_.reset();
        ++counters_.host_frees;
    }
    host_wrapped_.reset();
}

}  // namespace gpumem
