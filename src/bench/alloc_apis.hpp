// One interface over the allocation APIs alloc-test measures: cudaMalloc,
// stream-ordered cudaMallocAsync, managed memory, the pinned host kinds and
// the driver's virtual memory management (cuMemCreate + cuMemMap). Every
// allocation has an RAII owner, so nothing stays allocated on any path.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/name_table.hpp"
#include "core/cuda_raii.hpp"

namespace gpumem {

enum class AllocApi {
    device,       // cudaMalloc / cudaFree
    async,        // cudaMallocAsync / cudaFreeAsync on a stream, each followed by a stream synchronize:
                  // with the default pool's release threshold (0) every allocation grows the pool
                  // and every synchronize returns the memory to the driver
    async_pool,   // cudaMallocFromPoolAsync / cudaFreeAsync served by a pool that keeps its memory
                  // (release threshold UINT64_MAX), no synchronize: the host cost of a pool hit
    managed,      // cudaMallocManaged / cudaFree
    host,         // cudaHostAlloc (page-locked, as cudaMallocHost) / cudaFreeHost
    host_wc,      // cudaHostAlloc(WriteCombined)
    host_mapped,  // cudaHostAlloc(Mapped) + cudaHostGetDevicePointer
    registered,   // mmap + cudaHostRegister / cudaHostUnregister + munmap
    vmm,          // cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess, and back
};

// The API names, in the order `all` runs them, each with a one-line help.
extern const NameTable<AllocApi> kAllocApis;

// Thin wrappers over kAllocApis.
AllocApi parse_alloc_api(std::string_view text);  // surrounding blanks ignored; throws UsageError naming the known APIs
const char* alloc_api_name(AllocApi api) noexcept;
const std::vector<AllocApi>& all_alloc_apis();
std::string alloc_api_names();  // "device, async, ..." for help and messages
// Whether the API's memory is GPU memory (counts against cudaMemGetInfo's free).
bool alloc_api_uses_device_memory(AllocApi api) noexcept;

// Granularity of VMM physical allocations on `device` (cuMemGetAllocationGranularity,
// minimum; 2 MiB on current GPUs). Needs the device's context current.
std::size_t vmm_granularity(DeviceId device);
// Bytes an allocation of `bytes` really takes through `api`: VMM rounds up
// to its granularity; the others are reported as requested.
std::size_t alloc_api_rounded_size(AllocApi api, DeviceId device, std::size_t bytes);

// A driver handle that is not a pointer (a CUmemGenericAllocationHandle, a
// CUdeviceptr), made to meet the NullablePointer requirements so that a
// std::unique_ptr can own it through its deleter's `pointer` type. Null is a
// flag of its own: no value of the handle is reserved for "none".
template <typename Handle>
class NullableHandle {
public:
    NullableHandle() noexcept = default;
    NullableHandle(std::nullptr_t) noexcept {}  // implicit: NullablePointer requires it
    explicit NullableHandle(Handle value) noexcept : value_(value), engaged_(true) {}

    Handle get() const noexcept { return value_; }
    explicit operator bool() const noexcept { return engaged_; }

    friend bool operator==(NullableHandle a, NullableHandle b) noexcept {
        return a.engaged_ == b.engaged_ && (!a.engaged_ || a.value_ == b.value_);
    }
    friend bool operator!=(NullableHandle a, NullableHandle b) noexcept { return !(a == b); }
    friend bool operator==(NullableHandle a, std::nullptr_t) noexcept { return !a.engaged_; }
    friend bool operator==(std::nullptr_t, NullableHandle a) noexcept { return !a.engaged_; }
    friend bool operator!=(NullableHandle a, std::nullptr_t) noexcept { return a.engaged_; }
    friend bool operator!=(std::nullptr_t, NullableHandle a) noexcept { return a.engaged_; }

private:
    Handle value_{};
    bool engaged_ = false;
};

// A unique_ptr over a deleter whose `pointer` is a NullableHandle.
template <typename Deleter>
using UniqueHandle = std::unique_ptr<typename Deleter::pointer, Deleter>;

// Deleters of the owners below, as in core/cuda_raii.hpp: each frees through
// release_on, on its device, and logs a failure instead of throwing.
struct VmmUnmap {  // cuMemUnmap
    using pointer = NullableHandle<CUdeviceptr>;
    DeviceId device{0};
    std::size_t bytes = 0;
    void operator()(pointer address) const noexcept;
};
struct VmmAddressFree {  // cuMemAddressFree
    using pointer = NullableHandle<CUdeviceptr>;
    DeviceId device{0};
    std::size_t bytes = 0;
    void operator()(pointer address) const noexcept;
};
struct VmmRelease {  // cuMemRelease
    using pointer = NullableHandle<CUmemGenericAllocationHandle>;
    DeviceId device{0};
    void operator()(pointer handle) const noexcept;
};
struct MemPoolDestroy {  // cudaMemPoolDestroy
    DeviceId device{0};
    void operator()(cudaMemPool_t pool) const noexcept;
};
// cudaFreeAsync on the allocation's stream, then, without a pool, a
// synchronize (which returns the default pool's memory to the driver).
struct AsyncFree {
    cudaStream_t stream = nullptr;
    bool synchronize = true;
    DeviceId device{0};
    void operator()(void* ptr) const noexcept;
};

// Physical memory + reserved address range + mapping + access rights.
// Releases whatever steps completed, in reverse order.
class VmmAllocation {
public:
    VmmAllocation() = default;
    VmmAllocation(DeviceId device, std::size_t bytes);  // bytes: a multiple of vmm_granularity(device)
    ~VmmAllocation() noexcept { reset(); }
    VmmAllocation(VmmAllocation&&) noexcept = default;
    VmmAllocation& operator=(VmmAllocation&&) noexcept = default;
    VmmAllocation(const VmmAllocation&) = delete;
    VmmAllocation& operator=(const VmmAllocation&) = delete;

    void* data() const noexcept {
        return range_ ? reinterpret_cast<void*>(static_cast<std::uintptr_t>(range_.get().get())) : nullptr;
    }
    std::size_t size() const noexcept { return range_ ? range_.get_deleter().bytes : 0; }
    explicit operator bool() const noexcept { return static_cast<bool>(range_); }
    // Unmaps, frees the address range, releases the physical memory.
    void reset() noexcept {
        mapping_.reset();
        range_.reset();
        handle_.reset();
    }

private:
    // Declared in the order they must be freed, the reverse of the order they
    // are created in, so that a defaulted move assignment (member by member,
    // in declaration order) frees the old steps in that order. The destructor
    // and a failing constructor go through reset(), which does the same;
    // member destructors alone would run the other way round.
    UniqueHandle<VmmUnmap> mapping_;
    UniqueHandle<VmmAddressFree> range_;
    UniqueHandle<VmmRelease> handle_;
};

// A device memory pool of its own that never returns memory to the driver
// while it lives (release threshold UINT64_MAX), so that allocations after
// the first are served from the pool. Destroying it releases everything.
class RetainingPool {
public:
    explicit RetainingPool(DeviceId device);
    RetainingPool(const RetainingPool&) = delete;
    RetainingPool& operator=(const RetainingPool&) = delete;
    cudaMemPool_t get() const noexcept { return pool_.get(); }

private:
    std::unique_ptr<CUmemPoolHandle_st, MemPoolDestroy> pool_;
};

// Without a pool: cudaMallocAsync on `stream` and a synchronize, so the
// memory is ready when the constructor returns; freeing is cudaFreeAsync and
// a synchronize, which also returns the default pool's memory to the driver
// under its default release threshold (0). With a pool: cudaMallocFromPoolAsync
// and cudaFreeAsync, no synchronize. The stream (and pool) must outlive the
// allocation.
class AsyncAllocation : public MemoryOwner<AsyncFree> {
public:
    AsyncAllocation() = default;
    AsyncAllocation(DeviceId device, std::size_t bytes, cudaStream_t stream, cudaMemPool_t pool = nullptr);
};

// One allocation through any AllocApi. Host kinds reuse HostAllocation and
// cudaMalloc reuses DeviceAllocation.
class ApiAllocation {
public:
    ApiAllocation() = default;
    // Throws OutOfMemoryError when the allocation itself fails, CudaError on
    // other errors. `stream` is used by the async APIs, `pool` by async_pool
    // only. `bytes` for vmm is rounded up to the granularity.
    ApiAllocation(AllocApi api, DeviceId device, std::size_t bytes, cudaStream_t stream = nullptr, cudaMemPool_t pool = nullptr);
    // A moved-from allocation is empty. Its variant still holds the same
    // alternative, but that owner has handed its memory over (its unique_ptr
    // is null), and emptiness, data() and size() are asked of the owner.
    ApiAllocation(ApiAllocation&&) noexcept = default;
    ApiAllocation& operator=(ApiAllocation&&) noexcept = default;
    ApiAllocation(const ApiAllocation&) = delete;
    ApiAllocation& operator=(const ApiAllocation&) = delete;

    AllocApi api() const noexcept { return api_; }
    void* data() const noexcept;
    std::size_t size() const noexcept;
    // Whether memory is held (a zero-byte allocation holds none).
    explicit operator bool() const noexcept;
    void reset() noexcept;  // frees now

private:
    AllocApi api_ = AllocApi::device;
    std::variant<std::monostate, DeviceAllocation, HostAllocation, AsyncAllocation, VmmAllocation> owner_;
};

// What the async APIs need on one device: a stream, and for async_pool a
// retaining pool (created only when that API is used).
class AllocResources {
public:
    AllocResources(DeviceId device, const std::vector<AllocApi>& apis);
    cudaStream_t stream() const noexcept { return stream_.get(); }
    cudaMemPool_t pool() const noexcept { return pool_ ? pool_->get() : nullptr; }
    // Waits for the stream, so pool memory is back when this returns.
    void synchronize() const { stream_.synchronize(); }

private:
    std::unique_ptr<RetainingPool> pool_;  // destroyed after the stream (declared first)
    CudaStream stream_;
};

// Makes `device` current and creates its primary context if needed (driver
// API calls such as VMM's need a current context on the calling thread).
void ensure_context(DeviceId device);

struct DeviceMemoryInfo {
    std::uint64_t free = 0, total = 0;
};
// cudaMemGetInfo on `device` (its context counts as used).
DeviceMemoryInfo device_memory_info(DeviceId device);

}  // namespace gpumem
