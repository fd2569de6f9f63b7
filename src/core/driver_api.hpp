// CUDA driver API functions obtained at run time through
// cudaGetDriverEntryPointByVersion: gpumem never links libcuda, so it starts
// on machines without a driver, and uses the driver's own entry points where
// the runtime has no equivalent (16/32-bit memset, virtual memory management).
#pragma once

#include <cuda.h>

#include <string>

#include "base/device_id.hpp"

namespace gpumem {

struct DriverApi {
    CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
    CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
    CUresult (*cuDevicePrimaryCtxGetState)(CUdevice, unsigned int*, int*) = nullptr;
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
    CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream) = nullptr;
    CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream) = nullptr;
    CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
    CUresult (*cuMemRelease)(CUmemGenericAllocationHandle) = nullptr;
    CUresult (*cuMemAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
    CUresult (*cuMemAddressFree)(CUdeviceptr, size_t) = nullptr;
    CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
    CUresult (*cuMemUnmap)(CUdeviceptr, size_t) = nullptr;
    CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
    CUresult (*cuMemGetAllocationGranularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
};

// Loaded once per process; throws CudaError (or NoDeviceError) if the driver
// lacks one of the functions.
const DriverApi& driver_api();

// Whether the primary context of CUDA device `ordinal` is active, i.e. whether
// making the device current would not create a context (~500 MB) on it.
bool primary_context_active(DeviceId device);

// Throws CudaError naming `call` and the driver's error name.
void check_driver(CUresult result, const char* call);

}  // namespace gpumem
