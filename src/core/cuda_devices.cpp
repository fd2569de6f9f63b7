#include "core/cuda_devices.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/cuda_check.hpp"
#include "base/errors.hpp"

namespace gpumem {
namespace {

std::string format_uuid(const cudaUUID_t& uuid) {
    const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
    char buf[64];
    std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                  b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return buf;
}

}  // namespace

bool driver_library_present() noexcept {
    void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (lib == nullptr) return false;
    dlclose(lib);
    return true;
}

std::vector<DeviceIdentity> cuda_visible_devices() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver || status == cudaErrorInitializationError ||
        status == cudaErrorInvalidDevice) {
        cudaGetLastError();
        if (status == cudaErrorInsufficientDriver && !driver_library_present())
            throw NoDeviceError("no NVIDIA driver: libcuda.so.1 not found");
        if (status == cudaErrorNoDevice && std::getenv("CUDA_VISIBLE_DEVICES"))
            throw NoDeviceError(std::string("no CUDA device is visible (CUDA_VISIBLE_DEVICES='") +
                                std::getenv("CUDA_VISIBLE_DEVICES") + "')");
        // cudaErrorInvalidDevice from the device count: CUDA_VISIBLE_DEVICES
        // names a device twice, and CUDA refuses to initialise at all.
        throw NoDeviceError(std::string("no usable CUDA device: ") + cudaGetErrorName(status) + " (" +
                            cudaGetErrorString(status) + ")" +
                            (status == cudaErrorInvalidDevice && std::getenv("CUDA_VISIBLE_DEVICES")
                                 ? "; CUDA_VISIBLE_DEVICES names a device twice"
                                 : ""));
    }
    GPUMEM_CUDA_TRY(status, "cudaGetDeviceCount");
    std::vector<DeviceIdentity> devices;
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        GPUMEM_CUDA_TRY(cudaGetDeviceProperties(&prop, i), "cudaGetDeviceProperties");
        DeviceIdentity d;
        d.cuda_index = DeviceId(i);
        d.name = prop.name;
        d.uuid = format_uuid(prop.uuid);
        d.pci.domain = static_cast<std::uint32_t>(prop.pciDomainID);
        d.pci.bus = static_cast<std::uint32_t>(prop.pciBusID);
        d.pci.device = static_cast<std::uint32_t>(prop.pciDeviceID);
        devices.push_back(std::move(d));
    }
    return devices;
}

std::vector<DeviceIdentity> cuda_base_order_devices() {
    const char* saved = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::optional<std::string> value = saved ? std::optional<std::string>(saved) : std::nullopt;
    unsetenv("CUDA_VISIBLE_DEVICES");
    std::vector<DeviceIdentity> devices;
    try {
        devices = cuda_visible_devices();
    } catch (...) {
        if (value) setenv("CUDA_VISIBLE_DEVICES", value->c_str(), 1);
        throw;
    }
    if (value) setenv("CUDA_VISIBLE_DEVICES", value->c_str(), 1);
    return devices;
}

std::string format_cuda_version(int version) {
    if (version <= 0) return "";
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string cuda_runtime_version_string() { return format_cuda_version(CUDART_VERSION); }

int cuda_driver_version_via_runtime() noexcept {
    int v = 0;
    if (cudaDriverGetVersion(&v) != cudaSuccess) return 0;
    return v;
}

std::vector<DeviceIdentity> select_cuda_devices(const DeviceSpec& spec) {
    const std::vector<DeviceIdentity> visible = cuda_visible_devices();
    std::vector<DeviceIdentity> chosen;
    for (std::size_t i : resolve_device_spec(spec, visible)) chosen.push_back(visible[i]);
    return chosen;
}

}  // namespace gpumem
