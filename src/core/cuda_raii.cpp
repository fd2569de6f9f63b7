#include "core/cuda_raii.hpp"

#include <sys/mman.h>

#include <atomic>

#include "core/log.hpp"

#include "core/cuda_check.hpp"
#include "core/driver_api.hpp"
#include "base/sizes.hpp"

namespace gpumem {
namespace {

std::atomic<std::uint64_t> g_set_device_calls{0};

constexpr std::size_t kHugePage = 2ULL << 20;

std::size_t round_up(std::size_t value, std::size_t to) { return (value + to - 1) / to * to; }

}  // namespace

void log_failure(cudaError_t status, const char* call) noexcept {
    if (status == cudaSuccess) return;
    cudaGetLastError();
    try {
        log::error("{} failed in a destructor: {}", call, cudaGetErrorName(status));
    } catch (...) {
    }
}

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

CudaStream::CudaStream(DeviceId device) : stream_(nullptr, StreamDestroy{device}) {
    AutoDevice guard(device);
    cudaStream_t stream = nullptr;
    GPUMEM_CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_.reset(stream);
}

void StreamDestroy::operator()(cudaStream_t stream) const noexcept {
    release_on(device, [&] { log_failure(cudaStreamDestroy(stream), "cudaStreamDestroy"); });
}

void CudaStream::synchronize() const { GPUMEM_CUDA_CALL(cudaStreamSynchronize(stream_.get())); }

// --- CudaEvent ---

CudaEvent::CudaEvent(DeviceId device, bool timing) : event_(nullptr, EventDestroy{device}) {
    AutoDevice guard(device);
    cudaEvent_t event = nullptr;
    GPUMEM_CUDA_CALL(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
    event_.reset(event);
}

void EventDestroy::operator()(cudaEvent_t event) const noexcept {
    release_on(device, [&] { log_failure(cudaEventDestroy(event), "cudaEventDestroy"); });
}

void CudaEvent::record(cudaStream_t stream) { GPUMEM_CUDA_CALL(cudaEventRecord(event_.get(), stream)); }

float CudaEvent::elapsed_ms_since(const CudaEvent& start) const {
    float ms = 0;
    GPUMEM_CUDA_CALL(cudaEventElapsedTime(&ms, start.event_.get(), event_.get()));
    return ms;
}

// --- DeviceAllocation ---

DeviceAllocation::DeviceAllocation(DeviceId device, std::size_t bytes, DeviceMemoryKind kind)
    : MemoryOwner(DeviceMemoryFree{device}) {
    if (bytes == 0) return;
    AutoDevice guard(device);
    void* p = nullptr;
    const bool managed = kind == DeviceMemoryKind::managed;
    const cudaError_t status = managed ? cudaMallocManaged(&p, bytes, cudaMemAttachGlobal) : cudaMalloc(&p, bytes);
    if (status != cudaSuccess)
        throw_allocation_error(status, managed ? "cudaMallocManaged" : "cudaMalloc", bytes,
                               format_bytes(bytes) + " on device " + to_string(device));
    own(p, bytes);
}

void DeviceMemoryFree::operator()(void* ptr) const noexcept {
    release_on(device, [&] { log_failure(cudaFree(ptr), "cudaFree"); });
}

// --- HostAllocation ---

HostAllocation::HostAllocation(HostMemoryKind kind, std::size_t bytes, DeviceId device)
    : MemoryOwner(HostMemoryFree{kind, 0, device}) {
    if (bytes == 0) return;
    const std::string what = format_bytes(bytes) + " of " + host_memory_kind_name(kind) + " host memory";
    // Until the end, `p` is freed by hand on each failure, exactly as far as
    // it got; the owner takes it once it is complete.
    void* p = nullptr;
    std::size_t mapping_bytes = 0;
    auto map_pages = [&](bool huge) -> void* {
        const std::size_t length = huge ? round_up(bytes, kHugePage) : bytes;
        void* mapped = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : 0), -1, 0);
        if (mapped == MAP_FAILED) return nullptr;
        mapping_bytes = length;
        return mapped;
    };
    switch (kind) {
        case HostMemoryKind::pinned:
        case HostMemoryKind::write_combined:
        case HostMemoryKind::mapped: {
            AutoDevice guard(device);
            unsigned flags = cudaHostAllocPortable;
            if (kind == HostMemoryKind::write_combined) flags |= cudaHostAllocWriteCombined;
            if (kind == HostMemoryKind::mapped) flags |= cudaHostAllocMapped;
            const cudaError_t status = cudaHostAlloc(&p, bytes, flags);
            if (status != cudaSuccess) throw_allocation_error(status, "cudaHostAlloc", bytes, what);
            if (kind == HostMemoryKind::mapped) {
                const cudaError_t s2 = cudaHostGetDevicePointer(&device_ptr_, p, 0);
                if (s2 != cudaSuccess) {
                    cudaFreeHost(p);
                    throw_cuda_error(s2, "cudaHostGetDevicePointer");
                }
            }
            break;
        }
        case HostMemoryKind::pageable:
        case HostMemoryKind::registered: {
            p = map_pages(false);
            if (p == nullptr) throw OutOfMemoryError("mmap of " + what + " failed", bytes);
            if (kind == HostMemoryKind::registered) {
                AutoDevice guard(device);
                // Mapped too, so kernels (SM copies) can address it, as with
                // cudaHostAllocMapped memory.
                const cudaError_t status = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
                if (status != cudaSuccess) {
                    munmap(p, mapping_bytes);
                    throw_allocation_error(status, "cudaHostRegister", bytes, what);
                }
                const cudaError_t mapped = cudaHostGetDevicePointer(&device_ptr_, p, 0);
                if (mapped != cudaSuccess) {
                    cudaHostUnregister(p);
                    munmap(p, mapping_bytes);
                    throw_cuda_error(mapped, "cudaHostGetDevicePointer");
                }
            }
            break;
        }
        case HostMemoryKind::pageable_huge:
        case HostMemoryKind::huge_only: {
            p = map_pages(true);
            if (p != nullptr) {
                huge_pages_ = true;
            } else if (kind == HostMemoryKind::huge_only) {
                throw OutOfMemoryError("mmap(MAP_HUGETLB) of " + what +
                                           " failed: no free huge pages (see /proc/sys/vm/nr_hugepages)",
                                       bytes);
            } else {
                // Huge first: fall back to normal pages and ask for transparent huge pages.
                p = map_pages(false);
                if (p == nullptr) throw OutOfMemoryError("mmap of " + what + " failed", bytes);
                huge_pages_ = madvise(p, mapping_bytes, MADV_HUGEPAGE) == 0;
            }
            break;
        }
    }
    deleter().mapping_bytes = mapping_bytes;
    own(p, bytes);
}

void HostMemoryFree::operator()(void* ptr) const noexcept {
    try {
        switch (kind) {
            case HostMemoryKind::pinned:
            case HostMemoryKind::write_combined:
            case HostMemoryKind::mapped: {
                AutoDevice guard(device);
                log_failure(cudaFreeHost(ptr), "cudaFreeHost");
                break;
            }
            case HostMemoryKind::registered: {
                AutoDevice guard(device);
                log_failure(cudaHostUnregister(ptr), "cudaHostUnregister");
                munmap(ptr, mapping_bytes);
                break;
            }
            default: munmap(ptr, mapping_bytes);
        }
    } catch (...) {
    }
}

}  // namespace gpumem
