// RAII owners of CUDA resources, in the manner of RMM's cuda_device and
// device_buffer: move-only, constructors throw, destructors never throw (they
// log), and every allocation and free runs on the owner's device. Each
// resource sits in a std::unique_ptr whose deleter carries what the free
// needs (the device, the kind of memory, the mapped length), so the moves are
// the defaulted ones and a moved-from owner holds nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

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

// Logs a failed CUDA call where nothing may throw (destructors, deleters)
// and clears the error; does nothing on success.
void log_failure(cudaError_t status, const char* call) noexcept;

// What every deleter of a CUDA resource does (here and in bench/alloc_apis):
// runs `release` on `device` under an AutoDevice, and lets nothing escape.
// `release` logs its own failure; a failed switch is dropped, since a
// deleter has no caller to tell.
template <typename Release>
void release_on(DeviceId device, Release release) noexcept {
    try {
        AutoDevice guard(device);
        release();
    } catch (...) {
    }
}

// The deleters of the owners below. Each frees its resource on the device it
// belongs to, under an AutoDevice, and logs a failure instead of throwing.
// Their `device` is read only while a resource is held. (They live at
// namespace scope because, nested in their owners, their default member
// initializers could not be used before the owner class is complete.)
struct StreamDestroy {  // cudaStreamDestroy
    DeviceId device{0};
    void operator()(cudaStream_t stream) const noexcept;
};
struct EventDestroy {  // cudaEventDestroy
    DeviceId device{0};
    void operator()(cudaEvent_t event) const noexcept;
};
struct DeviceMemoryFree {  // cudaFree
    DeviceId device{0};
    void operator()(void* ptr) const noexcept;
};
// The free depends on how the memory was obtained: cudaFreeHost for the
// cudaHostAlloc kinds, cudaHostUnregister then munmap for registered memory,
// munmap for the pageable kinds.
struct HostMemoryFree {
    HostMemoryKind kind = HostMemoryKind::pinned;
    std::size_t mapping_bytes = 0;  // mmap'ed length of the pageable kinds
    DeviceId device{0};             // page-locked kinds: the context they belong to
    void operator()(void* ptr) const noexcept;
};

class CudaStream {
public:
    CudaStream() = default;
    // A non-blocking stream on `device`: never serialises with the legacy stream.
    explicit CudaStream(DeviceId device);
    CudaStream(CudaStream&&) noexcept = default;
    CudaStream& operator=(CudaStream&&) noexcept = default;
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;

    cudaStream_t get() const noexcept { return stream_.get(); }
    // The stream's device; empty when no stream is held.
    std::optional<DeviceId> device() const noexcept {
        return stream_ ? std::optional<DeviceId>(stream_.get_deleter().device) : std::nullopt;
    }
    void synchronize() const;

private:
    std::unique_ptr<CUstream_st, StreamDestroy> stream_;
};

class CudaEvent {
public:
    CudaEvent() = default;
    explicit CudaEvent(DeviceId device, bool timing = true);
    CudaEvent(CudaEvent&&) noexcept = default;
    CudaEvent& operator=(CudaEvent&&) noexcept = default;
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    cudaEvent_t get() const noexcept { return event_.get(); }
    void record(cudaStream_t stream);
    // Milliseconds from `start` to this event (both must have completed).
    float elapsed_ms_since(const CudaEvent& start) const;

private:
    std::unique_ptr<CUevent_st, EventDestroy> event_;
};

// What the memory owners share (DeviceAllocation, HostAllocation and
// bench/alloc_apis' AsyncAllocation): the memory in a unique_ptr whose
// deleter `Free` knows how to free it, and its length. The owners declare no
// moves of their own: the implicit ones move the unique_ptr, and a
// moved-from owner is empty.
template <typename Free>
class MemoryOwner {
public:
    void* data() const noexcept { return ptr_.get(); }
    std::size_t size() const noexcept { return ptr_ ? bytes_ : 0; }
    explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }
    void reset() noexcept { ptr_.reset(); }  // frees now

protected:
    MemoryOwner() = default;
    explicit MemoryOwner(Free free) noexcept : ptr_(nullptr, std::move(free)) {}
    // Takes over `p`, `bytes` long, once it is complete.
    void own(void* p, std::size_t bytes) noexcept {
        ptr_.reset(p);
        bytes_ = bytes;
    }
    const Free& deleter() const noexcept { return ptr_.get_deleter(); }
    Free& deleter() noexcept { return ptr_.get_deleter(); }

private:
    std::unique_ptr<void, Free> ptr_;
    std::size_t bytes_ = 0;  // read only while memory is held
};

// plain: cudaMalloc; managed: cudaMallocManaged(cudaMemAttachGlobal). Both
// are freed with cudaFree.
enum class DeviceMemoryKind { plain, managed };

// Device memory from cudaMalloc (or managed memory). Failure to allocate
// throws OutOfMemoryError.
class DeviceAllocation : public MemoryOwner<DeviceMemoryFree> {
public:
    DeviceAllocation() = default;
    DeviceAllocation(DeviceId device, std::size_t bytes, DeviceMemoryKind kind = DeviceMemoryKind::plain);

    // The memory's device; empty when nothing is held.
    std::optional<DeviceId> device() const noexcept {
        return *this ? std::optional<DeviceId>(deleter().device) : std::nullopt;
    }
};

// Host memory of any HostMemoryKind. Page-locked kinds belong to the CUDA
// context of `device` (they are usable from every device in practice).
class HostAllocation : public MemoryOwner<HostMemoryFree> {
public:
    HostAllocation() = default;
    HostAllocation(HostMemoryKind kind, std::size_t bytes, DeviceId device);

    HostMemoryKind kind() const noexcept { return deleter().kind; }
    // Whether the pages really are huge pages (MAP_HUGETLB or THP advised).
    bool huge_pages() const noexcept { return huge_pages_; }
    // Device-side address of mapped and registered memory (nullptr for other kinds).
    void* device_pointer() const noexcept { return *this ? device_ptr_ : nullptr; }

private:
    void* device_ptr_ = nullptr;  // read only while memory is held
    bool huge_pages_ = false;
};

}  // namespace gpumem
