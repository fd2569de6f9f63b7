// The real upstream for `reuse-sim --execute`: cudaMalloc/cudaFree,
// cudaMallocFromPoolAsync/cudaFreeAsync on a private stream-ordered pool with
// the release threshold, cudaMemset, cudaDeviceSynchronize, each timed on the
// host. It owns everything it hands out and frees all of it when destroyed,
// also when a replay stops on an error or Ctrl-C. This header has no CUDA
// types so that code using it compiles without the CUDA headers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/device_id.hpp"
#include "reuse_sim/upstream.hpp"

namespace gpumem::reuse_sim {

struct CudaDeviceMemory {
    std::uint64_t free_bytes = 0, total_bytes = 0;
    std::string name;
};

// Makes `device` current and reports its memory (cudaMemGetInfo). Throws
// NoDeviceError without a driver or device, CudaError otherwise.
CudaDeviceMemory cuda_device_memory(DeviceId device);

// `capacity` is enforced like the simulated device's, so that --capacity
// runs compare; `costs` (may be null) adds the modelled time beside the
// measured one.
std::unique_ptr<Upstream> make_cuda_upstream(DeviceId device, std::uint64_t capacity, const CostModel* costs);

}  // namespace gpumem::reuse_sim
