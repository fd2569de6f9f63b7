// main() of every GPU suite: exit 77 (skipped) when no GPU is usable, so the
// same test executables run everywhere and only count on a real GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
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
