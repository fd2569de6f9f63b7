// NVML's used memory of CUDA device 0, for the GPU suites that check that
// a gpumem child process gave back everything it took (test_gpu_faults,
// test_gpu_check): a reading, and a wait until it settles.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "core/cuda_devices.hpp"
#include "core/nvml.hpp"

namespace gpu_memory {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t MiB = 1ULL << 20;
constexpr std::uint64_t GiB = 1ULL << 30;
// Two readings with nothing allocated in between may differ by a few large
// pages of driver bookkeeping; a leak or a surviving context is far larger.
constexpr std::int64_t kSlack = 32 * MiB;

inline std::int64_t diff(std::uint64_t a, std::uint64_t b) { return static_cast<std::int64_t>(a) - static_cast<std::int64_t>(b); }

// NVML's used memory of CUDA device 0: what nvidia-smi shows, and what a
// process that died with memory or a context still held would leave behind.
class NvmlUsed {
public:
    NvmlUsed() {
        std::string why;
        nvml_ = gpumem::Nvml::open(why);
        REQUIRE_MESSAGE(nvml_, "NVML: " << why);
        const auto index = nvml_->index_of(gpumem::cuda_visible_devices().at(0).pci);
        REQUIRE(index.has_value());
        index_ = *index;
    }
    std::uint64_t operator()() const { return nvml_->memory(index_).used; }
    // Waits (up to `seconds`) until used memory is within kSlack of `target`;
    // returns the last reading. A context's memory is returned to the driver
    // as its process is reaped, but NVML may report it a moment later.
    std::uint64_t settle_to(std::uint64_t target, double seconds) const {
        const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
        std::uint64_t used = (*this)();
        while (std::llabs(diff(used, target)) > kSlack && Clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            used = (*this)();
        }
        return used;
    }

private:
    std::unique_ptr<gpumem::Nvml> nvml_;
    unsigned index_ = 0;
};

inline const NvmlUsed& nvml_used() {
    static const NvmlUsed used;
    return used;
}

}  // namespace gpu_memory
