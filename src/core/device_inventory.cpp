#include "core/device_inventory.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>
#include <cstdlib>

#include "core/log.hpp"

#include "core/cuda_check.hpp"
#include "core/cuda_devices.hpp"
#include "base/errors.hpp"

namespace gpumem {
namespace {

// Position in `all` of the device at `pci`.
std::optional<std::size_t> find_by_pci(const std::vector<DeviceIdentity>& all, const PciAddress& pci) {
    for (std::size_t i = 0; i < all.size(); ++i)
        if (all[i].pci == pci) return i;
    return std::nullopt;
}

// Every NVML device's identity, in NVML's order. The first query of a device
// attaches it (~6.6 ms on an H200), and NVML is thread-safe: attach every
// device at once rather than in turn.
// A device NVML reports lost (fallen off the bus) is left out and named in
// `lost`: the others still answer, and gpumem check fails the node on it.
std::vector<DeviceIdentity> nvml_identities(const Nvml& nvml, std::vector<std::string>& lost) {
    const unsigned count = nvml.device_count();
    std::vector<DeviceIdentity> all(count);
    std::vector<std::exception_ptr> failures(count);
    {
        std::vector<std::thread> threads;
        for (unsigned i = 1; i < count; ++i)
            threads.emplace_back([&, i] {
                try {
                    all[i] = nvml.identity(i);
                } catch (...) {
                    failures[i] = std::current_exception();
                }
            });
        try {
            if (count > 0) all[0] = nvml.identity(0);
        } catch (...) {
            failures[0] = std::current_exception();
        }
        for (std::thread& t : threads) t.join();
    }
    std::vector<DeviceIdentity> found;
    for (unsigned i = 0; i < count; ++i) {
        if (!failures[i]) {
            found.push_back(std::move(all[i]));
            continue;
        }
        try {
            std::rethrow_exception(failures[i]);
        } catch (const GpuLostError& e) {
            lost.emplace_back(e.what());
        }
    }
    return found;
}

// How CUDA numbers the NVML devices `all`: positions in `all`.
struct CudaOrder {
    std::vector<std::size_t> visible;                // CUDA index order under CUDA_VISIBLE_DEVICES
    std::optional<std::vector<std::size_t>> base;    // with the variable unset; nullopt when unknown
};

CudaOrder cuda_order(const std::vector<DeviceIdentity>& all) {
    const auto entries = parse_cuda_visible_devices(std::getenv("CUDA_VISIBLE_DEVICES"));
    const DeviceOrder order = parse_cuda_device_order(std::getenv("CUDA_DEVICE_ORDER"));
    std::optional<std::vector<std::size_t>> base = cuda_base_order(all, order);
    std::optional<std::vector<std::size_t>> visible = apply_cuda_visible_devices(all, base, entries);

    const bool has_mig = entries && std::any_of(entries->begin(), entries->end(), [](const VisibleDevicesEntry& e) {
                             return e.kind == VisibleDevicesEntry::Kind::mig;
                         });
    if (!visible && !base && !has_mig) {
        // Mixed GPU models under FASTEST_FIRST: only the driver knows the order.
        log::debug("CUDA order undecidable from NVML (mixed models); asking the CUDA runtime");
        std::vector<std::size_t> order_from_cuda;
        for (const DeviceIdentity& d : cuda_base_order_devices()) {
            if (const auto pos = find_by_pci(all, d.pci)) order_from_cuda.push_back(*pos);
        }
        base = order_from_cuda;
        visible = apply_cuda_visible_devices(all, base, entries);
    }
    if (!visible) {
        // MIG entries: let CUDA apply the variable itself.
        log::debug("CUDA_VISIBLE_DEVICES holds MIG entries; asking the CUDA runtime");
        std::vector<std::size_t> mapped;
        for (const DeviceIdentity& d : cuda_visible_devices()) {
            if (const auto pos = find_by_pci(all, d.pci)) mapped.push_back(*pos);
        }
        visible = mapped;
    }
    return {std::move(*visible), std::move(base)};
}

}  // namespace

DeviceInventory::DeviceInventory(DeviceInventory&&) noexcept = default;
DeviceInventory& DeviceInventory::operator=(DeviceInventory&&) noexcept = default;
DeviceInventory::~DeviceInventory() = default;

DeviceInventory DeviceInventory::open() {
    DeviceInventory inv;
    std::string why_not;
    const auto t0 = std::chrono::steady_clock::now();
    inv.nvml_ = Nvml::open(why_not);
    log::debug("NVML load and init: {:.2f} ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!inv.nvml_) {
        // No NVML: the CUDA runtime can still answer, at the price of a context.
        std::vector<DeviceIdentity> devices;
        try {
            devices = cuda_visible_devices();
        } catch (const NoDeviceError& e) {
            throw NoDeviceError(std::string(e.what()) + " (" + why_not + ")");
        }
        log::warn("NVML unavailable ({}); using the CUDA runtime, which creates a context (~500 MB) on each device queried",
                     why_not);
        inv.source_ = "cuda-runtime";
        inv.visible_ = std::move(devices);
        inv.base_index_.assign(inv.visible_.size(), std::nullopt);
        return inv;
    }
    inv.source_ = "nvml";
    const std::vector<DeviceIdentity> all = nvml_identities(*inv.nvml_, inv.lost_);
    log::debug("NVML identities of {} devices: {:.2f} ms", all.size(),
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

    const CudaOrder order = cuda_order(all);
    for (std::size_t cuda_index = 0; cuda_index < order.visible.size(); ++cuda_index) {
        DeviceIdentity d = all[order.visible[cuda_index]];
        d.cuda_index = DeviceId(static_cast<int>(cuda_index));
        std::optional<unsigned> base_index;
        if (order.base)
            for (std::size_t b = 0; b < order.base->size(); ++b)
                if ((*order.base)[b] == order.visible[cuda_index]) base_index = static_cast<unsigned>(b);
        inv.visible_.push_back(std::move(d));
        inv.base_index_.push_back(base_index);
    }
    return inv;
}

NvmlDeviceFigures nvml_figures_for(const PciAddress& pci) {
    NvmlDeviceFigures figures;
    std::string why_not;
    const auto nvml = Nvml::open(why_not);
    if (!nvml) {
        log::debug("NVML unavailable ({}): no peak bandwidth or PCIe figures", why_not);
        return figures;
    }
    try {
        const std::optional<unsigned> index = nvml->index_of(pci);
        if (!index) return figures;
        figures.name = nvml->identity(*index).name;
        figures.peak_memory_bandwidth = nvml->peak_memory_bandwidth(*index);
        figures.pcie = nvml->pcie_link(*index);
        figures.cpu_affinity = nvml->cpu_affinity(*index);
    } catch (const Error& e) {  // extras only: never fail a run over them
        log::debug("NVML figures unavailable: {}", e.what());
    }
    return figures;
}

InventorySnapshot DeviceInventory::snapshot(const std::vector<std::size_t>& positions, const SnapshotFields& fields) const {
    InventorySnapshot snap;
    snap.source = source_;
    if (!fields.versions) {
    } else if (nvml_) {
        snap.driver_version = nvml_->driver_version();
        snap.cuda_driver_version = nvml_->cuda_driver_version();
    } else {
        snap.cuda_driver_version = cuda_driver_version_via_runtime();
    }
    for (std::size_t pos : positions) {
        DeviceReport r;
        r.id = visible_.at(pos);
        r.base_index = base_index_.at(pos);
        if (nvml_) {
            // NVML found every visible device, so each has its NVML index.
            const unsigned index = r.id.nvml_index.value();
            r.memory = nvml_->memory(index);
            if (fields.bar1) r.bar1 = nvml_->bar1(index);
            if (fields.compute_capability) r.compute_capability = nvml_->compute_capability(index);
            // Health first: the PCIe link's failed calls join its errors.
            if (fields.health) r.health = nvml_->health(index);
            if (fields.pcie) r.pcie = nvml_->pcie_link(index, r.health ? &*r.health : nullptr);
            if (fields.peak_bandwidth) r.peak_memory_bandwidth = nvml_->peak_memory_bandwidth(index);
            if (fields.processes) r.processes = nvml_->compute_processes(index);
        } else {
            GPUMEM_CUDA_CALL(cudaSetDevice(r.id.cuda_index->ordinal()));
            std::size_t free_bytes = 0, total_bytes = 0;
            GPUMEM_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
            r.memory.total = total_bytes;
            r.memory.free = free_bytes;
            r.memory.used = total_bytes - free_bytes;
            cudaDeviceProp prop{};
            GPUMEM_CUDA_CALL(cudaGetDeviceProperties(&prop, r.id.cuda_index->ordinal()));
            r.compute_capability = std::make_pair(prop.major, prop.minor);
        }
        snap.devices.push_back(std::move(r));
    }
    return snap;
}

}  // namespace gpumem
