// Baseline for bench/memset.sh: a plain cudaMemsetAsync loop timed the
// nvbandwidth way (spin kernel holding the stream, warm-up, events, median),
// with no gpumem code in it.  raw_memset BYTES ITERATIONS SAMPLES
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                   \
    do {                                                                           \
        cudaError_t e = (x);                                                       \
        if (e != cudaSuccess) {                                                    \
            std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorName(e));             \
            return 1;                                                              \
        }                                                                          \
    } while (0)

__global__ void spin(volatile int* flag) {
    while (*flag == 0) {
    }
}

int main(int argc, char** argv) {
    const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (1ULL << 30);
    const int iterations = argc > 2 ? std::atoi(argv[2]) : 20;
    const int samples = argc > 3 ? std::atoi(argv[3]) : 5;
    void* buf = nullptr;
    int* flag = nullptr;
    int* dflag = nullptr;
    cudaStream_t s;
    cudaEvent_t a, b;
    CHECK(cudaMalloc(&buf, bytes));
    CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer(&dflag, flag, 0));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 2; ++i) CHECK(cudaMemsetAsync(buf, 0, bytes, s));
    CHECK(cudaStreamSynchronize(s));
    std::vector<double> per_op;
    for (int k = 0; k < samples; ++k) {
        *flag = 0;
        spin<<<1, 1, 0, s>>>(dflag);
        CHECK(cudaEventRecord(a, s));
        for (int i = 0; i < iterations; ++i) CHECK(cudaMemsetAsync(buf, 0, bytes, s));
        CHECK(cudaEventRecord(b, s));
        *(volatile int*)flag = 1;
        CHECK(cudaStreamSynchronize(s));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        per_op.push_back(ms / 1000.0 / iterations);
    }
    std::sort(per_op.begin(), per_op.end());
    const double median = per_op[per_op.size() / 2];
    std::printf("{\"bytes\": %zu, \"median_us\": %.3f, \"bandwidth_gbps\": %.2f}\n", bytes, median * 1e6, bytes / median / 1e9);
    cudaFree(buf);
    cudaFreeHost(flag);
    return 0;
}
