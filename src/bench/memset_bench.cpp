#include "bench/memset_bench.hpp"

#include <algorithm>
#include <cstring>

#include "core/cuda_check.hpp"
#include "core/cuda_raii.hpp"
#include "core/driver_api.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "core/kernels.hpp"
#include "base/sizes.hpp"

namespace gpumem {
namespace {

// Guard value written before the set region when verifying, so an overrun
// below `offset` is caught too: the complement of the value's low byte.
std::uint8_t guard_byte(std::uint32_t value) { return static_cast<std::uint8_t>(~value & 0xFF); }

void enqueue_device_memset(void* region, std::uint64_t words, int width, std::uint32_t value, cudaStream_t stream) {
    const auto ptr = reinterpret_cast<CUdeviceptr>(region);
    const DriverApi& api = driver_api();
    switch (width) {
        case 1: check_driver(api.cuMemsetD8Async(ptr, static_cast<unsigned char>(value), words, stream), "cuMemsetD8Async"); break;
        case 2: check_driver(api.cuMemsetD16Async(ptr, static_cast<unsigned short>(value), words, stream), "cuMemsetD16Async"); break;
        default: check_driver(api.cuMemsetD32Async(ptr, value, words, stream), "cuMemsetD32Async"); break;
    }
}

void host_memset(void* region, std::uint64_t words, int width, std::uint32_t value) {
    switch (width) {
        case 1: std::memset(region, static_cast<int>(value & 0xFF), words); break;
        case 2: std::fill_n(static_cast<std::uint16_t*>(region), words, static_cast<std::uint16_t>(value)); break;
        default: std::fill_n(static_cast<std::uint32_t*>(region), words, value); break;
    }
}

// Mismatches in [data, data + words) against `value`, and the first bad word.
template <typename Word>
void count_host_mismatches(const void* data, std::uint64_t words, Word value, std::uint64_t& mismatches,
                           std::optional<std::uint64_t>& first_bad_word) {
    const auto* w = static_cast<const Word*>(data);
    for (std::uint64_t i = 0; i < words; ++i)
        if (w[i] != value) {
            ++mismatches;
            if (!first_bad_word) first_bad_word = i;
        }
}

}  // namespace

void validate_memset_plan(const MemsetPlan& p) {
    if (p.width != 1 && p.width != 2 && p.width != 4) throw UsageError("--width must be 8, 16 or 32 (bits)");
    const int bits = p.width * 8;
    if (bits < 32 && p.value >> bits) throw UsageError("--value " + std::to_string(p.value) + " does not fit in " + std::to_string(bits) + " bits");
    if (p.size == 0) throw UsageError("--size must be greater than zero");
    if (p.offset >= p.size)
        throw UsageError("--offset " + std::to_string(p.offset) + " is not inside the buffer of " + std::to_string(p.size) + " bytes");
    if (p.offset % p.width)
        throw UsageError("--offset " + std::to_string(p.offset) + " is not a multiple of the word size (" + std::to_string(p.width) + " bytes)");
    if ((p.size - p.offset) % p.width)
        throw UsageError("the region set (" + std::to_string(p.size - p.offset) + " bytes) is not a multiple of the word size (" +
                         std::to_string(p.width) + " bytes)");
    if (p.corrupt_offset && *p.corrupt_offset >= p.size - p.offset) throw UsageError("corruption offset outside the region");
    if (p.timing.iterations < 1 || p.timing.samples < 1 || p.timing.warmup < 0) throw UsageError("iterations and samples must be at least 1");
}

MemsetResult run_memset(const MemsetPlan& p) {
    validate_memset_plan(p);
    MemsetResult result;
    result.bytes_set = p.size - p.offset;
    const std::uint64_t words = result.bytes_set / p.width;
    AutoDevice guard(p.device);

    if (p.host_target) {
        HostAllocation buffer(p.host_kind, p.size, p.device);
        result.host_huge_pages = buffer.huge_pages();
        auto* base = static_cast<unsigned char*>(buffer.data());
        if (p.verify) std::memset(base, guard_byte(p.value), p.size);
        result.sample_seconds = time_on_host(p.timing, [&] { host_memset(base + p.offset, words, p.width, p.value); });
        if (p.verify) {
            if (p.corrupt_offset) base[p.offset + *p.corrupt_offset] ^= 0xFF;
            std::optional<std::uint64_t> first_guard, first_word;
            count_host_mismatches<std::uint8_t>(base, p.offset, guard_byte(p.value), result.mismatches, first_guard);
            if (p.width == 1) count_host_mismatches<std::uint8_t>(base + p.offset, words, static_cast<std::uint8_t>(p.value), result.mismatches, first_word);
            if (p.width == 2) count_host_mismatches<std::uint16_t>(base + p.offset, words, static_cast<std::uint16_t>(p.value), result.mismatches, first_word);
            if (p.width == 4) count_host_mismatches<std::uint32_t>(base + p.offset, words, p.value, result.mismatches, first_word);
            if (first_guard) result.first_bad_offset = *first_guard;
            else if (first_word) result.first_bad_offset = p.offset + *first_word * p.width;
            result.verified = true;
        }
        result.seconds = summarize(result.sample_seconds);
        return result;
    }

    DeviceAllocation buffer(p.device, p.size);  // throws OutOfMemoryError
    CudaStream stream(p.device);
    auto* base = static_cast<unsigned char*>(buffer.data());
    if (p.verify) GPUMEM_CUDA_CALL(cudaMemsetAsync(base, guard_byte(p.value), p.offset, stream.get()));
    result.sample_seconds = time_on_stream(p.device, stream.get(), p.timing, [&](cudaStream_t s) {
        enqueue_device_memset(base + p.offset, words, p.width, p.value, s);
    });
    if (p.verify) {
        if (p.corrupt_offset)
            GPUMEM_CUDA_CALL(cudaMemsetAsync(base + p.offset + *p.corrupt_offset, static_cast<int>(~p.value & 0xFF), 1, stream.get()));
        DeviceAllocation device_result(p.device, sizeof(VerifyResult) * 2);
        auto* checks = static_cast<VerifyResult*>(device_result.data());
        reset_verify_result(checks, stream.get());
        reset_verify_result(checks + 1, stream.get());
        launch_verify_words(base, p.offset, 1, guard_byte(p.value), checks, stream.get());
        launch_verify_words(base + p.offset, words, p.width, p.value, checks + 1, stream.get());
        VerifyResult host_checks[2] = {};
        GPUMEM_CUDA_CALL(cudaMemcpyAsync(host_checks, checks, sizeof host_checks, cudaMemcpyDeviceToHost, stream.get()));
        stream.synchronize();
        result.mismatches = host_checks[0].mismatches + host_checks[1].mismatches;
        if (host_checks[0].mismatches) result.first_bad_offset = host_checks[0].first_bad_index;
        else if (host_checks[1].mismatches) result.first_bad_offset = p.offset + host_checks[1].first_bad_index * p.width;
        result.verified = true;
    }
    result.seconds = summarize(result.sample_seconds);
    return result;
}

}  // namespace gpumem
