// Baseline for bench/alloc.sh: a plain cudaMalloc/cudaFree loop timed the way
// `gpumem alloc-test latency --api device` times it (host steady clock around
// each call, warm-up pairs first, median of the iterations), with no gpumem
// code in it.  raw_alloc SIZES ITERATIONS WARMUP   (SIZES: comma list of bytes)
// Prints one JSON document: {"points":[{"size":N,"alloc_median_us":X,"free_median_us":Y},...]}
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string sizes_text = argc > 1 ? argv[1] : "4096,1048576,16777216,268435456,1073741824";
    const int iterations = argc > 2 ? std::atoi(argv[2]) : 50;
    const int warmup = argc > 3 ? std::atoi(argv[3]) : 3;
    std::vector<size_t> sizes;
    std::stringstream ss(sizes_text);
    for (std::string item; std::getline(ss, item, ',');) sizes.push_back(std::strtoull(item.c_str(), nullptr, 10));
    if (cudaFree(nullptr) != cudaSuccess) {  // create the context outside the timing
        std::fprintf(stderr, "raw_alloc: no usable GPU\n");
        return 1;
    }
    using Clock = std::chrono::steady_clock;
    std::printf("{\"points\":[");
    for (size_t k = 0; k < sizes.size(); ++k) {
        std::vector<double> alloc_us, free_us;
        for (int i = 0; i < warmup + iterations; ++i) {
            void* p = nullptr;
            const auto t0 = Clock::now();
            const cudaError_t a = cudaMalloc(&p, sizes[k]);
            const auto t1 = Clock::now();
            const cudaError_t f = a == cudaSuccess ? cudaFree(p) : cudaSuccess;
            const auto t2 = Clock::now();
            if (a != cudaSuccess || f != cudaSuccess) {
                std::fprintf(stderr, "raw_alloc: %s of %zu bytes failed: %s\n", a != cudaSuccess ? "cudaMalloc" : "cudaFree",
                             sizes[k], cudaGetErrorName(a != cudaSuccess ? a : f));
                return 1;
            }
            if (i < warmup) continue;
            alloc_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            free_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
        }
        std::printf("%s{\"size\":%zu,\"alloc_median_us\":%.3f,\"free_median_us\":%.3f}", k ? "," : "", sizes[k],
                    median(alloc_us), median(free_us));
    }
    std::printf("]}\n");
    return 0;
}
