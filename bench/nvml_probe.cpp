// Research probe for bench/info.sh: what NVML start-up costs, by phase, and
// whether nvmlInitWithFlags(NVML_INIT_FLAG_NO_ATTACH) is cheaper than
// nvmlInit_v2 for a memory query.  nvml_probe [flags]
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

using clk = std::chrono::steady_clock;
static double ms(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

int main(int argc, char** argv) {
    const unsigned flags = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 0;
    const auto t0 = clk::now();
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 1;
    const auto t1 = clk::now();
    auto init_flags = reinterpret_cast<int (*)(unsigned)>(dlsym(lib, "nvmlInitWithFlags"));
    auto get_handle = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    struct Mem { unsigned version; unsigned long long total, reserved, free, used; } mem{};
    mem.version = sizeof(Mem) | (2u << 24);
    auto get_mem = reinterpret_cast<int (*)(void*, Mem*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo_v2"));
    const int r_init = init_flags(flags);
    const auto t2 = clk::now();
    void* dev = nullptr;
    const int r_handle = get_handle(0, &dev);
    const auto t3 = clk::now();
    const int r_mem = get_mem(dev, &mem);
    const auto t4 = clk::now();
    auto shutdown = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlShutdown"));
    const int r_shutdown = shutdown();
    const auto t5 = clk::now();
    std::printf("flags=%u dlopen=%.2fms init=%.2fms(rc %d) handle=%.2fms(rc %d) meminfo=%.2fms(rc %d) shutdown=%.2fms(rc %d) used=%llu\n",
                flags, ms(t0, t1), ms(t1, t2), r_init, ms(t2, t3), r_handle, ms(t3, t4), r_mem, ms(t4, t5), r_shutdown, mem.used);
    return 0;
}
