// RAII owners of CUDA resources, in the manner of RMM's cuda_device and
// device_buffer: move-only, constructors throw, destructors never throw (they
// log), and every allocation and free runs on the owner's device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/device_id.hpp"
#include "base/memory_policy.hpp"

namespace gpumem {

// Current device of the calling thread.
DeviceId current_device();

// Makes `device` current for its lifetime and restores the previous device.
// Switches only when the device differs, so nested guards cost nothing.
// Since CUDA 12, cudaSetDevice creates the device's primary context (~500 MB
// and an entry in the process list); so a previous device whose context was
// never created (the thread's untouched default, device 0) is not restored:
// restoring it would create that context for nothing.
class AutoDevice {
public:
    explicit AutoDevice(DeviceId device);
    ~AutoDevice() noexcept;
    AutoDevice(const AutoDevice&) = delete;
    AutoDevice& operator=(const AutoDevice&) = delete;
    AutoDevice(AutoDevice&&) = delete;
    AutoDevice& operator=(AutoDevice&&) = delete;

    bool switched() const noexcept { return previous_.has_value(); }

    // Number of cudaSetDevice calls made by guards in this process (switch and
    // restore), so tests can prove guards switch only when needed.
    static std::uint64_t set_device_calls() noexcept;

    // Whether the destructor will switch back (false when the previous
    // device has no context; see above).
    bool restores() const noexcept { return previous_ && restore_; }

private:
    std::optional<DeviceId> previous_;  // device to restore; empty when nothing was switched
    bool restore_ = false;
};

class CudaStream {
public:
    CudaStream() = default;
    // A non-blocking stream on `device`: never serialises with the legacy stream.
    explicit CudaStream(DeviceId device);
    ~CudaStream() noexcept;
    CudaStream(CudaStream&& other) noexcept;
    CudaStream& operator=(CudaStream&& other) noexcept;
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;

    cudaStream_t get() const noexcept { return stream_; }
    std::optional<DeviceId> device() const noexcept { return device_; }
    void synchronize() const;

private:
    cudaStream_t stream_ = nullptr;
    std::optional<DeviceId> device_;
};

class CudaEvent {
public:
    CudaEvent() = default;
    explicit CudaEvent(DeviceId device, bool timing = true);
    ~CudaEvent() noexcept;
    CudaEvent(CudaEvent&& other) noexcept;
    CudaEvent& operator=(CudaEvent&& other) noexcept;
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    cudaEvent_t get() const noexcept { return event_; }
    void record(cudaStream_t stream);
    // Milliseconds from `start` to this event (both must have completed).
    float elapsed_ms_since(const CudaEvent& start) const;

private:
    cudaEvent_t event_ = nullptr;
    std::optional<DeviceId> device_;
};

// plain: cudaMalloc; managed: cudaMallocManaged(cudaMemAttachGlobal). Both
// are freed with cudaFree.
enum class DeviceMemoryKind { plain, managed };

// Device memory from cudaMalloc (or managed memory). Failure to allocate
// throws OutOfMemoryError.
class DeviceAllocation {
public:
    DeviceAllocation() = default;
    DeviceAllocation(DeviceId device, std::size_t bytes, DeviceMemoryKind kind = DeviceMemoryKind::plain);
    ~DeviceAllocation() noexcept;
    DeviceAllocation(DeviceAllocation&& other) noexcept;
    DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
    DeviceAllocation(const DeviceAllocation&) = delete;
    DeviceAllocation& operator=(const DeviceAllocation&) = delete;

    void* data() const noexcept { return ptr_; }
    std::size_t size() const noexcept { return bytes_; }
    std::optional<DeviceId> device() const noexcept { return device_; }
    explicit operator bool() const noexcept { return ptr_ != nullptr; }
    void reset() noexcept;  // frees now

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
    std::optional<DeviceId> device_;
};

// Host memory of any HostMemoryKind. Page-locked kinds belong to the CUDA
// context of `device` (they are usable from every device in practice).
class HostAllocation {
public:
    HostAllocation() = default;
    HostAllocation(HostMemoryKind kind, std::size_t bytes, DeviceId device);
    ~HostAllocation() noexcept;
    HostAllocation(HostAllocation&& other) noexcept;
    HostAllocation& operator=(HostAllocation&& other) noexcept;
    HostAllocation(const HostAllocation&) = delete;
    HostAllocation& operator=(const HostAllocation&) = delete;

    void* data() const noexcept { return ptr_; }
    std::size_t size() const noexcept { return bytes_; }
    HostMemoryKind kind() const noexcept { return kind_; }
    // Whether the pages really are huge pages (MAP_HUGETLB or THP advised).
    bool huge_pages() const noexcept { return huge_pages_; }
    // Device-side address of mapped and registered memory (nullptr for other kinds).
    void* device_pointer() const noexcept { return device_ptr_; }
    explicit operator bool() const noexcept { return ptr_ != nullptr; }
    void reset() noexcept;

private:
    void* ptr_ = nullptr;
    void* device_ptr_ = nullptr;
    std::size_t bytes_ = 0;
    std::size_t mapping_bytes_ = 0;  // mmap'ed length for pageable kinds
    HostMemoryKind kind_ = HostMemoryKind::pinned;
    bool huge_pages_ = false;
    std::optional<DeviceId> device_;
};

}  // namespace gpumem
