// main() of every GPU suite: exit 77 (skipped) when no GPU is usable, so the
// same test executables run everywhere and only count on a real GPU.
//
// With GPUMEM_TEST_LIST_CUDA_DEVICES=1 in the environment the executable
// instead prints, one per line, the UUIDs of the devices the CUDA runtime
// enumerates in this environment (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER),
// in CUDA order, and exits 0, or 3 when CUDA sees none. Tests run it as a
// child process to compare gpumem's device numbering with CUDA's own.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/cuda_devices.hpp"
#include "base/errors.hpp"

namespace {

int list_cuda_devices() {
    try {
        for (const gpumem::DeviceIdentity& d : gpumem::cuda_visible_devices())
            std::printf("%s %s\n", d.uuid.c_str(), d.pci.to_string().c_str());
        return 0;
    } catch (const gpumem::Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return static_cast<int>(e.status());
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (const char* list = std::getenv("GPUMEM_TEST_LIST_CUDA_DEVICES"); list && std::strcmp(list, "1") == 0)
        return list_cuda_devices();
    bool listing = false;
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], "--count", 7) == 0 || std::strncmp(argv[i], "--list", 6) == 0 ||
            std::strncmp(argv[i], "-c", 2) == 0 || std::strncmp(argv[i], "-ltc", 4) == 0)
            listing = true;
    if (!listing) {
        int count = 0;
        const cudaError_t status = cudaGetDeviceCount(&count);
        if (status != cudaSuccess || count == 0) {
            std::fprintf(stderr, "no usable GPU (%s): skipping\n", cudaGetErrorName(status));
            return 77;
        }
    }
    doctest::Context context(argc, argv);
    return context.run();
}
