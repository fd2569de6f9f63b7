#include "bench/cuda_upstream.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <unordered_map>
#include <vector>

#include "core/cuda_check.hpp"
#include "base/errors.hpp"

namespace gpumem::reuse_sim {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point since) {
    return std::chrono::duration<double, std::micro>(Clock::now() - since).count();
}

class CudaUpstream final : public Upstream {
public:
    CudaUpstream(DeviceId device, std::uint64_t capacity, const CostModel* costs) : Upstream(capacity, costs), device_(device) {
        GPUMEM_CUDA_TRY(cudaSetDevice(device_.ordinal()), "cudaSetDevice");
    }

    ~CudaUpstream() override {
        // Everything goes back, whatever happened: errors here cannot be
        // reported any more, so they are cleared and ignored.
        cudaSetDevice(device_.ordinal());
        cudaDeviceSynchronize();
        for (const auto& [address, size] : device_live_) cudaFree(reinterpret_cast<void*>(address));
        for (const auto& [address, stream] : async_live_) cudaFreeAsync(reinterpret_cast<void*>(address), stream_handle_or_null(stream));
        cudaDeviceSynchronize();
        if (pool_) {
            cudaMemPoolTrimTo(pool_, 0);
            cudaMemPoolDestroy(pool_);
        }
        for (cudaStream_t s : streams_)
            if (s) cudaStreamDestroy(s);
        cudaGetLastError();
    }

private:
    bool do_allocate(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) override {
        (void)stream;  // cudaMalloc has no stream
        void* p = nullptr;
        if (!allocated(measured([&] { return cudaMalloc(&p, size); }), "cudaMalloc")) return false;
        address = reinterpret_cast<std::uint64_t>(p);
        device_live_.emplace(address, size);
        return true;
    }

    void do_deallocate(std::uint64_t address, std::uint64_t, std::uint32_t) override {
        GPUMEM_CUDA_TRY(measured([&] { return cudaFree(reinterpret_cast<void*>(address)); }), "cudaFree");
        device_live_.erase(address);
    }

    bool do_allocate_async(std::uint64_t size, std::uint32_t stream, std::uint64_t& address) override {
        ensure_pool();
        void* p = nullptr;
        cudaStream_t s = stream_handle(stream);
        if (!allocated(measured([&] { return cudaMallocFromPoolAsync(&p, size, pool_, s); }), "cudaMallocFromPoolAsync"))
            return false;
        address = reinterpret_cast<std::uint64_t>(p);
        async_live_.emplace(address, stream);
        observe_pool();
        return true;
    }

    void do_deallocate_async(std::uint64_t address, std::uint64_t, std::uint32_t stream) override {
        GPUMEM_CUDA_TRY(measured([&] { return cudaFreeAsync(reinterpret_cast<void*>(address), stream_handle(stream)); }),
                        "cudaFreeAsync");
        async_live_.erase(address);
    }

    void do_set_release_threshold(std::uint64_t bytes) override {
        threshold_ = bytes;
        if (pool_) set_threshold();
    }

    void do_fill_zero(std::uint64_t address, std::uint64_t size) override {
        GPUMEM_CUDA_TRY(measured([&] { return cudaMemset(reinterpret_cast<void*>(address), 0, size); }), "cudaMemset");
    }

    void do_synchronize() override {
        GPUMEM_CUDA_TRY(measured([] { return cudaDeviceSynchronize(); }), "cudaDeviceSynchronize");
        observe_pool();
    }

    // Runs `call`, a CUDA call, as a measured region: its time is what the
    // upstream reports as measured.
    template <typename Call>
    cudaError_t measured(Call call) {
        const auto t = Clock::now();
        const cudaError_t status = call();
        count_measured_us(elapsed_us(t));
        return status;
    }
    // Whether an allocation call succeeded: false when the device is out of
    // memory (the error is cleared, so the simulation goes on); any other
    // error throws.
    static bool allocated(cudaError_t status, const char* call) {
        if (status == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            return false;
        }
        if (status != cudaSuccess) throw_cuda_error(status, call);
        return true;
    }

    cudaStream_t stream_handle(std::uint32_t index) {
        if (index >= streams_.size()) streams_.resize(index + 1, nullptr);
        if (!streams_[index]) GPUMEM_CUDA_TRY(cudaStreamCreateWithFlags(&streams_[index], cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        return streams_[index];
    }
    cudaStream_t stream_handle_or_null(std::uint32_t index) const noexcept {
        return index < streams_.size() ? streams_[index] : nullptr;
    }

    void ensure_pool() {
        if (pool_) return;
        // A private pool: the device's default pool and its settings stay untouched.
        cudaMemPoolProps props{};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = device_.ordinal();
        GPUMEM_CUDA_TRY(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
        set_threshold();
    }
    void set_threshold() {
        std::uint64_t value = threshold_;  // cuuint64_t
        GPUMEM_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &value), "cudaMemPoolSetAttribute");
    }
    // The pool's reserved size: growth and release as the driver did them.
    void observe_pool() {
        if (!pool_) return;
        std::uint64_t reserved = 0;  // cuuint64_t
        if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess) {
            cudaGetLastError();
            return;
        }
        const std::uint64_t before = counters().pool_reserved_bytes;
        if (reserved > before) count_pool_grow(reserved - before);
        else if (reserved < before) count_pool_release(before - reserved);
    }

    DeviceId device_;
    std::uint64_t threshold_ = 0;
    cudaMemPool_t pool_ = nullptr;
    std::vector<cudaStream_t> streams_;
    std::unordered_map<std::uint64_t, std::uint64_t> device_live_;  // address -> size
    std::unordered_map<std::uint64_t, std::uint32_t> async_live_;   // address -> stream
};

}  // namespace

CudaDeviceMemory cuda_device_memory(DeviceId device) {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
        cudaGetLastError();
        throw NoDeviceError(std::string("no usable GPU: ") + (status != cudaSuccess ? cudaGetErrorString(status) : "no device"));
    }
    if (device.ordinal() < 0 || device.ordinal() >= count) throw NoDeviceError("no CUDA device " + to_string(device));
    GPUMEM_CUDA_TRY(cudaSetDevice(device.ordinal()), "cudaSetDevice");
    CudaDeviceMemory m;
    std::size_t free_bytes = 0, total_bytes = 0;
    GPUMEM_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    m.free_bytes = free_bytes;
    m.total_bytes = total_bytes;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device.ordinal()) == cudaSuccess) m.name = prop.name;
    return m;
}

std::unique_ptr<Upstream> make_cuda_upstream(DeviceId device, std::uint64_t capacity, const CostModel* costs) {
    return std::make_unique<CudaUpstream>(device, capacity, costs);
}

}  // namespace gpumem::reuse_sim
