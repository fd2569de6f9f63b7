// Baseline for bench/copy.sh: plain cudaMemcpyAsync loops timed the
// nvbandwidth way (a spin kernel holds the stream while the copies are
// queued, warm-up copies first, events around the timed copies, median of the
// samples), with no gpumem code in it. Pinned host memory.
//   raw_copy [BYTES [ITERATIONS [SAMPLES]]]   (default 512 MiB, 16, 7)
// Prints one JSON object: GB/s (1e9 bytes/s) for h2d, d2h, both directions of
// bidir, and d2d (bytes counted once).
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
            std::exit(1);                                                          \
        }                                                                          \
    } while (0)

namespace {

__global__ void hold(volatile int* release) {
    while (*release == 0) {
    }
}

constexpr int kWarmup = 4;

struct Copy {
    void* dst;
    const void* src;
    cudaMemcpyKind kind;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Each copy on its own stream; all streams start together when the spin
// kernel on the first one ends. Returns each stream's median GB/s.
std::vector<double> measure(const std::vector<Copy>& copies, size_t bytes, int iterations, int samples,
                            volatile int* flag, int* flag_device) {
    const size_t n = copies.size();
    std::vector<cudaStream_t> streams(n);
    std::vector<cudaEvent_t> start(n), stop(n);
    cudaEvent_t gate;
    CHECK(cudaEventCreateWithFlags(&gate, cudaEventDisableTiming));
    for (size_t i = 0; i < n; ++i) {
        CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
        CHECK(cudaEventCreate(&start[i]));
        CHECK(cudaEventCreate(&stop[i]));
    }
    for (int w = 0; w < kWarmup; ++w)
        for (size_t i = 0; i < n; ++i) CHECK(cudaMemcpyAsync(copies[i].dst, copies[i].src, bytes, copies[i].kind, streams[i]));
    CHECK(cudaDeviceSynchronize());
    std::vector<std::vector<double>> rates(n);
    for (int s = 0; s < samples; ++s) {
        *flag = 0;
        hold<<<1, 1, 0, streams[0]>>>(flag_device);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(gate, streams[0]));
        for (size_t i = 1; i < n; ++i) CHECK(cudaStreamWaitEvent(streams[i], gate, 0));
        for (size_t i = 0; i < n; ++i) CHECK(cudaEventRecord(start[i], streams[i]));
        for (size_t i = 0; i < n; ++i)
            for (int k = 0; k < iterations; ++k)
                CHECK(cudaMemcpyAsync(copies[i].dst, copies[i].src, bytes, copies[i].kind, streams[i]));
        for (size_t i = 0; i < n; ++i) CHECK(cudaEventRecord(stop[i], streams[i]));
        *flag = 1;
        CHECK(cudaDeviceSynchronize());
        for (size_t i = 0; i < n; ++i) {
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, start[i], stop[i]));
            rates[i].push_back(static_cast<double>(bytes) * iterations / (ms / 1000.0) / 1e9);
        }
    }
    std::vector<double> medians;
    for (size_t i = 0; i < n; ++i) {
        medians.push_back(median(rates[i]));
        CHECK(cudaStreamDestroy(streams[i]));
        CHECK(cudaEventDestroy(start[i]));
        CHECK(cudaEventDestroy(stop[i]));
    }
    CHECK(cudaEventDestroy(gate));
    return medians;
}

}  // namespace

int main(int argc, char** argv) {
    const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (512ULL << 20);
    const int iterations = argc > 2 ? std::atoi(argv[2]) : 16;
    const int samples = argc > 3 ? std::atoi(argv[3]) : 7;
    void *host_a = nullptr, *host_b = nullptr, *dev_a = nullptr, *dev_b = nullptr;
    int* flag = nullptr;
    int* flag_device = nullptr;
    CHECK(cudaSetDevice(0));
    CHECK(cudaHostAlloc(&host_a, bytes, cudaHostAllocDefault));
    CHECK(cudaHostAlloc(&host_b, bytes, cudaHostAllocDefault));
    CHECK(cudaMalloc(&dev_a, bytes));
    CHECK(cudaMalloc(&dev_b, bytes));
    CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flag_device), flag, 0));
    volatile int* release = flag;

    const double h2d = measure({{dev_a, host_a, cudaMemcpyHostToDevice}}, bytes, iterations, samples, release, flag_device)[0];
    const double d2h = measure({{host_a, dev_a, cudaMemcpyDeviceToHost}}, bytes, iterations, samples, release, flag_device)[0];
    const std::vector<double> bidir = measure({{dev_a, host_a, cudaMemcpyHostToDevice}, {host_b, dev_b, cudaMemcpyDeviceToHost}},
                                              bytes, iterations, samples, release, flag_device);
    const double d2d = measure({{dev_b, dev_a, cudaMemcpyDeviceToDevice}}, bytes, iterations, samples, release, flag_device)[0];
    std::printf("{\"bytes\": %zu, \"iterations\": %d, \"samples\": %d, \"h2d_gbps\": %.3f, \"d2h_gbps\": %.3f, "
                "\"bidir_h2d_gbps\": %.3f, \"bidir_d2h_gbps\": %.3f, \"d2d_gbps\": %.3f}\n",
                bytes, iterations, samples, h2d, d2h, bidir[0], bidir[1], d2d);
    CHECK(cudaFreeHost(host_a));
    CHECK(cudaFreeHost(host_b));
    CHECK(cudaFree(dev_a));
    CHECK(cudaFree(dev_b));
    CHECK(cudaFreeHost(flag));
    return 0;
}
