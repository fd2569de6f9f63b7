// Throwing checks for CUDA runtime calls, in the manner of RMM's
// RMM_CUDA_TRY: every message names the failing call and the error's name.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "base/errors.hpp"

namespace gpumem {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call) {
    // Clear the sticky per-thread "last error" so later calls start clean.
    cudaGetLastError();
    throw CudaError(call, cudaGetErrorName(status), cudaGetErrorString(status), static_cast<int>(status));
}

// Allocation failures become OutOfMemoryError; everything else CudaError.
[[noreturn]] inline void throw_allocation_error(cudaError_t status, const char* call, unsigned long long bytes,
                                                const std::string& what) {
    cudaGetLastError();
    if (status == cudaErrorMemoryAllocation)
        throw OutOfMemoryError(std::string(call) + " of " + what + " failed: " + cudaGetErrorName(status), bytes);
    throw CudaError(call, cudaGetErrorName(status), cudaGetErrorString(status), static_cast<int>(status));
}

}  // namespace gpumem

// GPUMEM_CUDA_TRY(expr, "name"): evaluates a cudaError_t and throws on failure.
#define GPUMEM_CUDA_TRY(expr, name)                                           \
    do {                                                                      \
        const cudaError_t gpumem_status_ = (expr);                            \
        if (gpumem_status_ != cudaSuccess) ::gpumem::throw_cuda_error(gpumem_status_, name); \
    } while (0)

// GPUMEM_CUDA_CALL(cudaFoo(args)): names the call after its source text.
#define GPUMEM_CUDA_CALL(expr) GPUMEM_CUDA_TRY(expr, #expr)
