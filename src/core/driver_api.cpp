#include "core/driver_api.hpp"

#include <cuda_runtime_api.h>

#include <mutex>

#include "core/cuda_check.hpp"
#include "base/errors.hpp"

namespace gpumem {
namespace {

template <typename Fn>
void load(Fn& fn, const char* symbol) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
    // 12000: the ABI of these functions as of CUDA 12.0, which every driver
    // that runs this binary's CUDA 12+/13 runtime provides.
    const cudaError_t status = cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &query);
    if (status != cudaSuccess) throw_cuda_error(status, "cudaGetDriverEntryPointByVersion");
    if (query != cudaDriverEntryPointSuccess || p == nullptr)
        throw Error(std::string("the NVIDIA driver does not provide ") + symbol);
    fn = reinterpret_cast<Fn>(p);
}

}  // namespace

const DriverApi& driver_api() {
    static DriverApi api;
    static std::once_flag once;
    std::call_once(once, [] {
        DriverApi a;
        load(a.cuGetErrorName, "cuGetErrorName");
        load(a.cuDeviceGet, "cuDeviceGet");
        load(a.cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState");
        load(a.cuMemsetD8Async, "cuMemsetD8Async");
        load(a.cuMemsetD16Async, "cuMemsetD16Async");
        load(a.cuMemsetD32Async, "cuMemsetD32Async");
        load(a.cuMemCreate, "cuMemCreate");
        load(a.cuMemRelease, "cuMemRelease");
        load(a.cuMemAddressReserve, "cuMemAddressReserve");
        load(a.cuMemAddressFree, "cuMemAddressFree");
        load(a.cuMemMap, "cuMemMap");
        load(a.cuMemUnmap, "cuMemUnmap");
        load(a.cuMemSetAccess, "cuMemSetAccess");
        load(a.cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity");
        api = a;
    });
    return api;
}

bool primary_context_active(DeviceId device) {
    const DriverApi& api = driver_api();
    CUdevice handle = 0;
    check_driver(api.cuDeviceGet(&handle, device.ordinal()), "cuDeviceGet");
    unsigned flags = 0;
    int active = 0;
    check_driver(api.cuDevicePrimaryCtxGetState(handle, &flags, &active), "cuDevicePrimaryCtxGetState");
    return active != 0;
}

void check_driver(CUresult result, const char* call) {
    if (result == CUDA_SUCCESS) return;
    const char* name = "CUDA_ERROR_UNKNOWN";
    if (driver_api().cuGetErrorName) driver_api().cuGetErrorName(result, &name);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfMemoryError(std::string(call) + " failed: " + name, 0);
    throw CudaError(call, name, "driver API", static_cast<int>(result));
}

}  // namespace gpumem
