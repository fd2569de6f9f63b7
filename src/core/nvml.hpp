// NVML, loaded at run time with dlopen so that gpumem starts on machines with
// no driver and never links libnvidia-ml. NVML answers memory questions
// without creating a CUDA context: no GPU memory is taken and gpumem does not
// appear in any process list.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "base/device_spec.hpp"
#include "base/errors.hpp"
#include "base/nvml_figures.hpp"

namespace gpumem {

// NVML_ERROR_GPU_IS_LOST: the GPU has fallen off the bus (Xid 79).
class GpuLostError : public Error {
public:
    using Error::Error;
};

class Nvml {
public:
    // Loads libnvidia-ml.so.1 and initialises it; nullptr with `why_not` set if
    // either fails.
    static std::unique_ptr<Nvml> open(std::string& why_not);
    // Starts open() on a background thread so that NVML's start-up overlaps
    // the caller's own; the next open() in the process takes its result.
    static void start_opening();
    ~Nvml();
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    std::string driver_version() const;
    int cuda_driver_version() const;  // e.g. 13000; 0 if unknown
    unsigned device_count() const;

    // NVML index of the device at `pci`, attaching only that device (each
    // attach costs ~6.6 ms on an H200; a scan by index attaches them all).
    std::optional<unsigned> index_of(const PciAddress& pci) const;

    // Identity of NVML device `index` (nvml_index set; cuda_index left empty).
    DeviceIdentity identity(unsigned index) const;
    NvmlMemory memory(unsigned index) const;
    std::optional<NvmlBar1> bar1(unsigned index) const;
    std::optional<std::pair<int, int>> compute_capability(unsigned index) const;
    // Empty when NVML does not report the link; a call that failed for
    // another reason than "not supported" is also noted in `failures`
    // (NvmlHealth::errors' form: function, message) when given, so that a
    // check can say unknown rather than n/a.
    std::optional<NvmlPcieLink> pcie_link(unsigned index, NvmlHealth* failures = nullptr) const;
    // Peak memory bandwidth in bytes/s from the maximum memory clock and the bus
    // width (double data rate), as NVIDIA computes its datasheet figure.
    std::optional<double> peak_memory_bandwidth(unsigned index) const;
    std::vector<NvmlProcess> compute_processes(unsigned index) const;
    // Every health figure of device `index`; unsupported ones stay empty.
    NvmlHealth health(unsigned index) const;
    // The GPU's NVLink links, their state and error counters.
    NvmlNvLink nvlink(unsigned index) const;
    // CPUs close to the GPU, as a list of CPU numbers; empty if unknown.
    std::vector<int> cpu_affinity(unsigned index) const;

    // Leave NVML initialised when this object goes: for a process about to
    // exit, whose NVML resources the driver releases with the process anyway.
    // nvmlShutdown took 2.1-2.6 ms on an H200 (bench/nvml_probe), a tenth of
    // a `gpumem info` one-liner.
    void skip_shutdown() noexcept { skip_shutdown_ = true; }

    struct Api;

private:
    Nvml() = default;
    static std::unique_ptr<Nvml> open_now(std::string& why_not);
    void* library_ = nullptr;
    std::unique_ptr<Api> api_;
    bool skip_shutdown_ = false;
};

}  // namespace gpumem
