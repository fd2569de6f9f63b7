#include "core/cuda_raii.hpp"

#include <sys/mman.h>

#include <atomic>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/cuda_check.hpp"
#include "core/driver_api.hpp"
#include "base/sizes.hpp"

namespace gpumem {
namespace {

std::atomic<std::uint64_t> g_set_device_calls{0};

void log_failure(cudaError_t status, const char* call) noexcept {
    if (status == cudaSuccess) return;
    cudaGetLastError();
    try {
        spdlog::error("{} failed in a destructor: {}", call, cudaGetErrorName(status));
    } catch (...) {
    }
}

constexpr std::size_t kHugePage = 2ULL << 20;

std::size_t round_up(std::size_t value, std::size_t to) { return (value + to - 1) / to * to; }

}  // namespace

DeviceId current_device() {
    int device = -1;
    GPUMEM_CUDA_CALL(cudaGetDevice(&device));
    return DeviceId(device);
}

AutoDevice::AutoDevice(DeviceId device) {
    const DeviceId current = current_device();
    if (current == device) return;
    const bool restore = primary_context_active(current);
    GPUMEM_CUDA_TRY(cudaSetDevice(device.ordinal()), "cudaSetDevice");
    g_set_device_calls.fetch_add(1, std::memory_order_relaxed);
    previous_ = current;
    restore_ = restore;
}

AutoDevice::~AutoDevice() noexcept {
    if (!previous_ || !restore_) return;
    log_failure(cudaSetDevice(previous_->ordinal()), "cudaSetDevice (restore)");
    g_set_device_calls.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t AutoDevice::set_device_calls() noexcept { return g_set_device_calls.load(std::memory_order_relaxed); }

// --- CudaStream ---

CudaStream::CudaStream(DeviceId device) : device_(device) {
    AutoDevice guard(device);
    GPUMEM_CUDA_CALL(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() noexcept {
    if (stream_ == nullptr) return;
    try {
        AutoDevice guard(*device_);
        log_failure(cudaStreamDestroy(stream_), "cudaStreamDestroy");
    } catch (...) {
    }
}

CudaStream::CudaStream(CudaStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
    if (this != &other) {
        CudaStream dying(std::move(*this));
        stream_ = std::exchange(other.stream_, nullptr);
        device_ = other.device_;
    }
    return *this;
}

void CudaStream::synchronize() const { GPUMEM_CUDA_CALL(cudaStreamSynchronize(stream_)); }

// --- CudaEvent ---

CudaEvent::CudaEvent(DeviceId device, bool timing) : device_(device) {
    AutoDevice guard(device);
    GPUMEM_CUDA_CALL(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() noexcept {
    if (event_ == nullptr) return;
    try {
        AutoDevice guard(*device_);
        log_failure(cudaEventDestroy(event_), "cudaEventDestroy");
    } catch (...) {
    }
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)), device_(other.device_) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
    if (this != &other) {
        CudaEvent dying(std::move(*this));
        event_ = std::exchange(other.event_, nullptr);
        device_ = other.device_;
    }
    return *this;
}

void CudaEvent::record(cudaStream_t stream) { GPUMEM_CUDA_CALL(cudaEventRecord(event_, stream)); }

float CudaEvent::elapsed_ms_since(const CudaEvent& start) const {
    float ms = 0;
    GPUMEM_CUDA_CALL(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
}

// --- DeviceAllocation ---

DeviceAllocation::DeviceAllocation(DeviceId device, std::size_t bytes, DeviceMemoryKind kind) : device_(device) {
    if (bytes == 0) return;
    AutoDevice guard(device);
    void* p = nullptr;
    const bool managed = kind == DeviceMemoryKind::managed;
    const cudaError_t status = managed ? cudaMallocManaged(&p, bytes, cudaMemAttachGlobal) : cudaMalloc(&p, bytes);
    if (status != cudaSuccess)
        throw_allocation_error(status, managed ? "cudaMallocManaged" : "cudaMalloc", bytes,
                               format_bytes(bytes) + " on device " + to_string(device));
    ptr_ = p;
    bytes_ = bytes;
}

DeviceAllocation::~DeviceAllocation() noexcept { reset(); }

void DeviceAllocation::reset() noexcept {
    if (ptr_ == nullptr) return;
    try {
        AutoDevice guard(*device_);
        log_failure(cudaFree(ptr_), "cudaFree");
    } catch (...) {
    }
    ptr_ = nullptr;
    bytes_ = 0;
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)), device_(other.device_) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
    if (this != &other) {
        reset();
        ptr_ = std::exchange(other.ptr_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
        device_ = other.device_;
    }
    return *this;
}

// --- HostAllocation ---

HostAllocation::HostAllocation(HostMemoryKind kind, std::size_t bytes, DeviceId device) : kind_(kind), device_(device) {
    if (bytes == 0) return;
    const std::string what = format_bytes(bytes) + " of " + host_memory_kind_name(kind) + " host memory";
    auto map_pages = [&](bool huge) -> void* {
        const std::size_t length = huge ? round_up(bytes, kHugePage) : bytes;
        void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : 0), -1, 0);
        if (p == MAP_FAILED) return nullptr;
        mapping_bytes_ = length;
        return p;
    };
    switch (kind) {
        case HostMemoryKind::pinned:
        case HostMemoryKind::write_combined:
        case HostMemoryKind::mapped: {
            AutoDevice guard(device);
            unsigned flags = cudaHostAllocPortable;
            if (kind == HostMemoryKind::write_combined) flags |= cudaHostAllocWriteCombined;
            if (kind == HostMemoryKind::mapped) flags |= cudaHostAllocMapped;
            void* p = nullptr;
            const cudaError_t status = cudaHostAlloc(&p, bytes, flags);
            if (status != cudaSuccess) throw_allocation_error(status, "cudaHostAlloc", bytes, what);
            ptr_ = p;
            if (kind == HostMemoryKind::mapped) {
                const cudaError_t s2 = cudaHostGetDevicePointer(&device_ptr_, p, 0);
                if (s2 != cudaSuccess) {
                    cudaFreeHost(p);
                    ptr_ = nullptr;
                    throw_cuda_error(s2, "cudaHostGetDevicePointer");
                }
            }
            break;
        }
        case HostMemoryKind::pageable:
        case HostMemoryKind::registered: {
            ptr_ = map_pages(false);
            if (ptr_ == nullptr) throw OutOfMemoryError("mmap of " + what + " failed", bytes);
            if (kind == HostMemoryKind::registered) {
                AutoDevice guard(device);
                // Mapped too, so kernels (SM copies) can address it, as with
                // cudaHostAllocMapped memory.
                const cudaError_t status = cudaHostRegister(ptr_, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
                if (status != cudaSuccess) {
                    munmap(ptr_, mapping_bytes_);
                    ptr_ = nullptr;
                    throw_allocation_error(status, "cudaHostRegister", bytes, what);
                }
                const cudaError_t mapped = cudaHostGetDevicePointer(&device_ptr_, ptr_, 0);
                if (mapped != cudaSuccess) {
                    cudaHostUnregister(ptr_);
                    munmap(ptr_, mapping_bytes_);
                    ptr_ = nullptr;
                    throw_cuda_error(mapped, "cudaHostGetDevicePointer");
                }
            }
            break;
        }
        case HostMemoryKind::pageable_huge:
        case HostMemoryKind::huge_only: {
            ptr_ = map_pages(true);
            if (ptr_ != nullptr) {
                huge_pages_ = true;
            } else if (kind == HostMemoryKind::huge_only) {
                throw OutOfMemoryError("mmap(MAP_HUGETLB) of " + what +
                                           " failed: no free huge pages (see /proc/sys/vm/nr_hugepages)",
                                       bytes);
            } else {
                // Huge first: fall back to normal pages and ask for transparent huge pages.
                ptr_ = map_pages(false);
                if (ptr_ == nullptr) throw OutOfMemoryError("mmap of " + what + " failed", bytes);
                huge_pages_ = madvise(ptr_, mapping_bytes_, MADV_HUGEPAGE) == 0;
            }
            break;
        }
    }
    bytes_ = bytes;
}

HostAllocation::~HostAllocation() noexcept { reset(); }

void HostAllocation::reset() noexcept {
    if (ptr_ == nullptr) return;
    try {
        switch (kind_) {
            case HostMemoryKind::pinned:
            case HostMemoryKind::write_combined:
            case HostMemoryKind::mapped: {
                AutoDevice guard(*device_);
                log_failure(cudaFreeHost(ptr_), "cudaFreeHost");
                break;
            }
            case HostMemoryKind::registered: {
                AutoDevice guard(*device_);
                log_failure(cudaHostUnregister(ptr_), "cudaHostUnregister");
                munmap(ptr_, mapping_bytes_);
                break;
            }
            default: munmap(ptr_, mapping_bytes_);
        }
    } catch (...) {
    }
    ptr_ = nullptr;
    device_ptr_ = nullptr;
    bytes_ = 0;
    mapping_bytes_ = 0;
}

HostAllocation::HostAllocation(HostAllocation&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      device_ptr_(std::exchange(other.device_ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)),
      kind_(other.kind_),
      huge_pages_(other.huge_pages_),
      device_(other.device_) {}

HostAllocation& HostAllocation::operator=(HostAllocation&& other) noexcept {
    if (this != &other) {
        reset();
        ptr_ = std::exchange(other.ptr_, nullptr);
        device_ptr_ = std::exchange(other.device_ptr_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
        mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
        kind_ = other.kind_;
        huge_pages_ = other.huge_pages_;
        device_ = other.device_;
    }
    return *this;
}

}  // namespace gpumem
