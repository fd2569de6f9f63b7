#include "bench/alloc_apis.hpp"

#include <algorithm>
#include <type_traits>

#include "core/log.hpp"

#include "core/cuda_check.hpp"
#include "core/driver_api.hpp"
#include "base/errors.hpp"
#include "base/sizes.hpp"

namespace gpumem {
namespace {

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

void log_driver_failure(CUresult result, const char* call) noexcept {
    if (result == CUDA_SUCCESS) return;
    try {
        const char* name = "CUDA_ERROR_UNKNOWN";
        if (driver_api().cuGetErrorName) driver_api().cuGetErrorName(result, &name);
        log::error("{} failed in a destructor: {}", call, name);
    } catch (...) {
    }
}

// Like check_driver, but an out-of-memory result names the size asked for.
void check_vmm(CUresult result, const char* call, std::size_t bytes, DeviceId device) {
    if (result == CUDA_ERROR_OUT_OF_MEMORY)
        throw OutOfMemoryError(std::string(call) + " of " + format_bytes(bytes) + " on device " + to_string(device) +
                                   " failed: CUDA_ERROR_OUT_OF_MEMORY",
                               bytes);
    check_driver(result, call);
}

CUmemAllocationProp vmm_properties(DeviceId device) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device.ordinal();
    return prop;
}

HostMemoryKind host_kind_of(AllocApi api) {
    switch (api) {
        case AllocApi::host_wc: return HostMemoryKind::write_combined;
        case AllocApi::host_mapped: return HostMemoryKind::mapped;
        case AllocApi::registered: return HostMemoryKind::registered;
        default: return HostMemoryKind::pinned;
    }
}

}  // namespace

constexpr Named<AllocApi> kAllocApiRows[] = {
    {"device", AllocApi::device, "cudaMalloc / cudaFree"},
    {"async", AllocApi::async, "cudaMallocAsync / cudaFreeAsync, each with a stream synchronize: a pool miss"},
    {"async-pool", AllocApi::async_pool, "cudaMallocFromPoolAsync / cudaFreeAsync on a pool that keeps its memory: a pool hit"},
    {"managed", AllocApi::managed, "cudaMallocManaged / cudaFree, never more than the device has free"},
    {"host", AllocApi::host, "cudaHostAlloc (page-locked, as cudaMallocHost) / cudaFreeHost"},
    {"host-wc", AllocApi::host_wc, "cudaHostAlloc(WriteCombined) / cudaFreeHost"},
    {"host-mapped", AllocApi::host_mapped, "cudaHostAlloc(Mapped) and cudaHostGetDevicePointer / cudaFreeHost"},
    {"registered", AllocApi::registered, "mmap and cudaHostRegister / cudaHostUnregister and munmap"},
    {"vmm", AllocApi::vmm, "cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess, and back"},
};
constexpr NameTable<AllocApi> kAllocApis{"allocation API", kAllocApiRows, "apis"};

AllocApi parse_alloc_api(std::string_view text) { return kAllocApis.parse(trimmed(text)); }

// The rows' names are string literals, so data() is a C string.
const char* alloc_api_name(AllocApi api) noexcept { return kAllocApis.name_of(api).data(); }

const std::vector<AllocApi>& all_alloc_apis() {
    static const std::vector<AllocApi> apis = kAllocApis.values();
    return apis;
}

std::string alloc_api_names() { return kAllocApis.names(", "); }

bool alloc_api_uses_device_memory(AllocApi api) noexcept {
    return api == AllocApi::device || api == AllocApi::async || api == AllocApi::async_pool || api == AllocApi::managed ||
           api == AllocApi::vmm;
}

void ensure_context(DeviceId device) {
    GPUMEM_CUDA_CALL(cudaSetDevice(device.ordinal()));
    // cudaFree(nullptr) is the documented way to create the primary context
    // and make it current on this thread without allocating anything.
    GPUMEM_CUDA_CALL(cudaFree(nullptr));
}

DeviceMemoryInfo device_memory_info(DeviceId device) {
    AutoDevice guard(device);
    std::size_t free = 0, total = 0;
    GPUMEM_CUDA_CALL(cudaMemGetInfo(&free, &total));
    return {free, total};
}

std::size_t vmm_granularity(DeviceId device) {
    const CUmemAllocationProp prop = vmm_properties(device);
    std::size_t granularity = 0;
    check_driver(driver_api().cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                 "cuMemGetAllocationGranularity");
    return granularity == 0 ? 1 : granularity;
}

std::size_t alloc_api_rounded_size(AllocApi api, DeviceId device, std::size_t bytes) {
    if (api != AllocApi::vmm) return bytes;
    const std::size_t g = vmm_granularity(device);
    return (bytes + g - 1) / g * g;
}

// --- VmmAllocation ---

VmmAllocation::VmmAllocation(DeviceId device, std::size_t bytes)
    : mapping_(nullptr, VmmUnmap{device, bytes}),
      range_(nullptr, VmmAddressFree{device, bytes}),
      handle_(nullptr, VmmRelease{device}) {
    const DriverApi& api = driver_api();
    const CUmemAllocationProp prop = vmm_properties(device);
    CUmemGenericAllocationHandle handle = 0;
    check_vmm(api.cuMemCreate(&handle, bytes, &prop, 0), "cuMemCreate", bytes, device);
    handle_.reset(VmmRelease::pointer(handle));
    // Each step is owned as soon as it succeeds. On a failure part way the
    // completed steps are released through reset(), in reverse order: left
    // to the members' destructors, they would go in declaration order's
    // reverse, releasing the handle first.
    try {
        CUdeviceptr address = 0;
        check_vmm(api.cuMemAddressReserve(&address, bytes, 0, 0, 0), "cuMemAddressReserve", bytes, device);
        range_.reset(VmmAddressFree::pointer(address));
        check_vmm(api.cuMemMap(address, bytes, 0, handle, 0), "cuMemMap", bytes, device);
        mapping_.reset(VmmUnmap::pointer(address));
        CUmemAccessDesc access{};
        access.location = prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        check_vmm(api.cuMemSetAccess(address, bytes, &access, 1), "cuMemSetAccess", bytes, device);
    } catch (...) {
        reset();
        throw;
    }
}

void VmmUnmap::operator()(pointer address) const noexcept {
    release_on(device, [&] { log_driver_failure(driver_api().cuMemUnmap(address.get(), bytes), "cuMemUnmap"); });
}

void VmmAddressFree::operator()(pointer address) const noexcept {
    release_on(device, [&] { log_driver_failure(driver_api().cuMemAddressFree(address.get(), bytes), "cuMemAddressFree"); });
}

void VmmRelease::operator()(pointer handle) const noexcept {
    release_on(device, [&] { log_driver_failure(driver_api().cuMemRelease(handle.get()), "cuMemRelease"); });
}

// --- RetainingPool ---

RetainingPool::RetainingPool(DeviceId device) : pool_(nullptr, MemPoolDestroy{device}) {
    AutoDevice guard(device);
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device.ordinal();
    cudaMemPool_t pool = nullptr;
    GPUMEM_CUDA_CALL(cudaMemPoolCreate(&pool, &props));
    std::uint64_t keep_everything = ~0ULL;
    const cudaError_t status = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything);
    if (status != cudaSuccess) {
        cudaMemPoolDestroy(pool);
        throw_cuda_error(status, "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)");
    }
    pool_.reset(pool);
}

void MemPoolDestroy::operator()(cudaMemPool_t pool) const noexcept {
    release_on(device, [&] { log_failure(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy"); });
}

AllocResources::AllocResources(DeviceId device, const std::vector<AllocApi>& apis) : stream_(device) {
    if (std::find(apis.begin(), apis.end(), AllocApi::async_pool) != apis.end()) pool_ = std::make_unique<RetainingPool>(device);
}

// --- AsyncAllocation ---

AsyncAllocation::AsyncAllocation(DeviceId device, std::size_t bytes, cudaStream_t stream, cudaMemPool_t pool)
    : MemoryOwner(AsyncFree{stream, pool == nullptr, device}) {
    if (bytes == 0) return;
    AutoDevice guard(device);
    void* p = nullptr;
    const cudaError_t status = pool ? cudaMallocFromPoolAsync(&p, bytes, pool, stream) : cudaMallocAsync(&p, bytes, stream);
    if (status != cudaSuccess)
        throw_allocation_error(status, pool ? "cudaMallocFromPoolAsync" : "cudaMallocAsync", bytes,
                               format_bytes(bytes) + " on device " + to_string(device));
    own(p, bytes);
    if (pool != nullptr) return;
    // An allocation failure can also surface at the synchronize.
    const cudaError_t sync = cudaStreamSynchronize(stream);
    if (sync != cudaSuccess) {
        reset();
        throw_allocation_error(sync, "cudaMallocAsync (stream synchronize)", bytes,
                               format_bytes(bytes) + " on device " + to_string(device));
    }
}

void AsyncFree::operator()(void* ptr) const noexcept {
    release_on(device, [&] {
        log_failure(cudaFreeAsync(ptr, stream), "cudaFreeAsync");
        if (synchronize) log_failure(cudaStreamSynchronize(stream), "cudaStreamSynchronize (after cudaFreeAsync)");
    });
}

// --- ApiAllocation ---

ApiAllocation::ApiAllocation(AllocApi api, DeviceId device, std::size_t bytes, cudaStream_t stream, cudaMemPool_t pool)
    : api_(api) {
    switch (api) {
        case AllocApi::device: owner_.emplace<DeviceAllocation>(device, bytes); break;
        case AllocApi::async:
            if (stream == nullptr) throw Error("internal error: the async allocation API needs a stream");
            owner_.emplace<AsyncAllocation>(device, bytes, stream);
            break;
        case AllocApi::async_pool:
            if (stream == nullptr || pool == nullptr) throw Error("internal error: the async-pool API needs a stream and a pool");
            owner_.emplace<AsyncAllocation>(device, bytes, stream, pool);
            break;
        // The caller checks free memory first: oversubscribing managed memory can hang the GPU.
        case AllocApi::managed: owner_.emplace<DeviceAllocation>(device, bytes, DeviceMemoryKind::managed); break;
        case AllocApi::host:
        case AllocApi::host_wc:
        case AllocApi::host_mapped:
        case AllocApi::registered: owner_.emplace<HostAllocation>(host_kind_of(api), bytes, device); break;
        case AllocApi::vmm: {
            AutoDevice guard(device);
            owner_.emplace<VmmAllocation>(device, alloc_api_rounded_size(api, device, bytes));
            break;
        }
    }
}

void* ApiAllocation::data() const noexcept {
    return std::visit(
        [](const auto& owner) -> void* {
            if constexpr (std::is_same_v<std::decay_t<decltype(owner)>, std::monostate>)
                return nullptr;
            else
                return owner.data();
        },
        owner_);
}

std::size_t ApiAllocation::size() const noexcept {
    return std::visit(
        [](const auto& owner) -> std::size_t {
            if constexpr (std::is_same_v<std::decay_t<decltype(owner)>, std::monostate>)
                return 0;
            else
                return owner.size();
        },
        owner_);
}

ApiAllocation::operator bool() const noexcept {
    return std::visit(
        [](const auto& owner) -> bool {
            if constexpr (std::is_same_v<std::decay_t<decltype(owner)>, std::monostate>)
                return false;
            else
                return static_cast<bool>(owner);
        },
        owner_);
}

void ApiAllocation::reset() noexcept { owner_.emplace<std::monostate>(); }

}  // namespace gpumem
