// A GPU as the check tests describe one: CUDA index N, its NVML index, a
// UUID and a PCI bus of its own, an H200 (test_check.cpp, test_check_npd.cpp).
#pragma once

#include <string>

#include "base/device_spec.hpp"

inline gpumem::DeviceIdentity test_gpu_identity(int cuda) {
    gpumem::DeviceIdentity d;
    d.cuda_index = gpumem::DeviceId(cuda);
    d.nvml_index = static_cast<unsigned>(cuda);
    d.uuid = "GPU-0000000" + std::to_string(cuda) + "-aaaa-bbbb-cccc-dddddddddddd";
    d.pci.bus = 0x18 + static_cast<unsigned>(cuda);
    d.name = "NVIDIA H200";
    return d;
}
