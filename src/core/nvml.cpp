#include "core/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>
#include <fstream>


#include "base/errors.hpp"

namespace gpumem {
namespace {

// The few NVML declarations gpumem needs, with the layouts of nvml.h.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
constexpr nvmlReturn_t NVML_ERROR_RESET_REQUIRED = 16;
constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
constexpr unsigned NVML_CLOCK_MEM = 2;
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

struct nvmlPciInfo_t {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
};
struct nvmlMemory_t {
    unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
    unsigned version;
    unsigned long long total, reserved, free, used;
};
// NVML_STRUCT_VERSION(Memory, 2): the struct's size with the version in the top byte.
constexpr unsigned nvmlMemory_v2 = static_cast<unsigned>(sizeof(nvmlMemory_v2_t)) | (2u << 24);
static_assert(nvmlMemory_v2 == 0x02000028, "nvmlMemory_v2_t layout must match nvml.h");
struct nvmlBAR1Memory_t {
    unsigned long long bar1Total, bar1Free, bar1Used;
};
// nvmlFieldValue_t: a field id (NVML_FI_*) in, its value and status out.
struct nvmlFieldValue_t {
    unsigned fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;  // nvmlValueType_t
    nvmlReturn_t nvmlReturn;
    union {
        double dVal;
        unsigned uiVal;
        unsigned long ulVal;
        unsigned long long ullVal;
        long long sllVal;
        int siVal;
        unsigned short usVal;
    } value;
};
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t layout must match nvml.h");
// nvml.h's NVML_FI_DEV_NVLINK_* field ids and value types.
constexpr unsigned kFiCrcFlitTotal = 38, kFiCrcDataTotal = 45, kFiReplayTotal = 52, kFiRecoveryTotal = 59;
constexpr unsigned kFiSpeedCommon = 90, kFiLinkCount = 91;
constexpr unsigned kFiRecoveryAction = 230;  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
// Each value as an unsigned number, whatever type NVML gave it.
std::optional<std::uint64_t> field_number(const nvmlFieldValue_t& v) {
    if (v.nvmlReturn != NVML_SUCCESS) return std::nullopt;
    switch (v.valueType) {
        case 0: return v.value.dVal >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v.value.dVal)) : std::nullopt;
        case 1: return v.value.uiVal;
        case 2: return v.value.ulVal;
        case 3: return v.value.ullVal;
        case 4: return v.value.sllVal >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v.value.sllVal)) : std::nullopt;
        case 5: return v.value.siVal >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v.value.siVal)) : std::nullopt;
        case 6: return v.value.usVal;
        default: return std::nullopt;
    }
}
// nvmlGpuFabricInfo_t (the first call) and nvmlGpuFabricInfo_v2_t (the
// versioned one: the same fields after a version, and a health mask).
struct nvmlGpuFabricInfo_t {
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned cliqueId;
    unsigned char state;  // nvmlGpuFabricState_t
};
struct nvmlGpuFabricInfo_v2_t {
    unsigned version;
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned cliqueId;
    unsigned char state;
    unsigned healthMask;
};
constexpr unsigned nvmlGpuFabricInfo_v2 = static_cast<unsigned>(sizeof(nvmlGpuFabricInfo_v2_t)) | (2u << 24);
static_assert(nvmlGpuFabricInfo_v2 == 0x02000024, "nvmlGpuFabricInfo_v2_t layout must match nvml.h");
constexpr unsigned kNvLinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr unsigned kNvLinkRemoteSwitch = 2;  // NVML_NVLINK_DEVICE_TYPE_SWITCH
struct nvmlProcessInfo_t {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
};

}  // namespace

struct Nvml::Api {
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    const char* (*error_string)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*system_driver_version)(char*, unsigned) = nullptr;
    nvmlReturn_t (*system_cuda_driver_version)(int*) = nullptr;
    nvmlReturn_t (*system_process_name)(unsigned, char*, unsigned) = nullptr;
    nvmlReturn_t (*device_count)(unsigned*) = nullptr;
    nvmlReturn_t (*device_handle)(unsigned, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*device_handle_by_pci)(const char*, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*device_index)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*device_name)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*device_uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*device_pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
    nvmlReturn_t (*device_memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
    nvmlReturn_t (*device_memory_v2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;
    nvmlReturn_t (*device_bar1)(nvmlDevice_t, nvmlBAR1Memory_t*) = nullptr;
    nvmlReturn_t (*device_cc)(nvmlDevice_t, int*, int*) = nullptr;
    nvmlReturn_t (*device_processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
    nvmlReturn_t (*device_pcie_gen_cur)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*device_pcie_gen_max)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*device_pcie_width_cur)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*device_pcie_width_max)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*device_bus_width)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*device_max_clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*device_cpu_affinity)(nvmlDevice_t, unsigned, unsigned long*) = nullptr;
    nvmlReturn_t (*device_ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;
    nvmlReturn_t (*device_total_ecc)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
    nvmlReturn_t (*device_remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
    nvmlReturn_t (*device_retired_pages)(nvmlDevice_t, int, unsigned*, unsigned long long*) = nullptr;
    nvmlReturn_t (*device_retired_pending)(nvmlDevice_t, int*) = nullptr;
    nvmlReturn_t (*device_clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*device_clock_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*device_field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
    nvmlReturn_t (*device_nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
    nvmlReturn_t (*device_nvlink_version)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
    nvmlReturn_t (*device_nvlink_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
    nvmlReturn_t (*device_nvlink_remote_type)(nvmlDevice_t, unsigned, int*) = nullptr;
    nvmlReturn_t (*device_fabric)(nvmlDevice_t, nvmlGpuFabricInfo_t*) = nullptr;
    nvmlReturn_t (*device_fabric_v)(nvmlDevice_t, nvmlGpuFabricInfo_v2_t*) = nullptr;

    nvmlDevice_t handle(unsigned index) const {
        nvmlDevice_t h = nullptr;
        const nvmlReturn_t r = device_handle(index, &h);
        if (r == NVML_ERROR_GPU_IS_LOST)
            throw GpuLostError("NVML device " + std::to_string(index) + ": " + error_string(r) + " (fallen off the bus)");
        if (r != NVML_SUCCESS)
            throw Error("nvmlDeviceGetHandleByIndex(" + std::to_string(index) + ") failed: " + error_string(r));
        return h;
    }
    std::string message(nvmlReturn_t r) const { return error_string ? error_string(r) : std::to_string(r); }
};

namespace {

struct OpenResult {
    std::unique_ptr<Nvml> nvml;
    std::string why_not;
};
std::future<OpenResult> g_opening;  // set by start_opening, taken by open

// Whether a call answered. A failure other than "not supported" is noted in
// `failures` (once per function) so that its checks say unknown, not n/a.
bool answered(const Nvml::Api& a, nvmlReturn_t r, std::string_view function, NvmlHealth* failures) {
    if (r == NVML_SUCCESS) return true;
    // The driver's "GPU requires reset", whichever query met it first.
    if (failures && r == NVML_ERROR_RESET_REQUIRED && failures->reset_required_by.empty()) failures->reset_required_by = std::string(function);
    if (failures && r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND && !failures->error_of(function))
        failures->errors.emplace_back(function, a.message(r));
    return false;
}

}  // namespace

void Nvml::start_opening() {
    if (g_opening.valid()) return;
    g_opening = std::async(std::launch::async, [] {
        OpenResult r;
        r.nvml = open_now(r.why_not);
        return r;
    });
}

std::unique_ptr<Nvml> Nvml::open(std::string& why_not) {
    if (g_opening.valid()) {
        OpenResult r = g_opening.get();
        why_not = r.why_not;
        return std::move(r.nvml);
    }
    return open_now(why_not);
}

std::unique_ptr<Nvml> Nvml::open_now(std::string& why_not) {
    // RTLD_LOCAL keeps NVML's symbols out of the global namespace.
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        why_not = "libnvidia-ml.so.1 not found";
        return nullptr;
    }
    std::unique_ptr<Nvml> nvml(new Nvml());
    nvml->library_ = lib;
    nvml->api_ = std::make_unique<Api>();
    Api& a = *nvml->api_;
    auto load = [lib](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name)); };
    load(a.init, "nvmlInit_v2");
    load(a.shutdown, "nvmlShutdown");
    load(a.error_string, "nvmlErrorString");
    load(a.system_driver_version, "nvmlSystemGetDriverVersion");
    load(a.system_cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2");
    load(a.system_process_name, "nvmlSystemGetProcessName");
    load(a.device_count, "nvmlDeviceGetCount_v2");
    load(a.device_handle, "nvmlDeviceGetHandleByIndex_v2");
    load(a.device_handle_by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    load(a.device_index, "nvmlDeviceGetIndex");
    load(a.device_name, "nvmlDeviceGetName");
    load(a.device_uuid, "nvmlDeviceGetUUID");
    load(a.device_pci, "nvmlDeviceGetPciInfo_v3");
    load(a.device_memory, "nvmlDeviceGetMemoryInfo");
    load(a.device_memory_v2, "nvmlDeviceGetMemoryInfo_v2");
    load(a.device_bar1, "nvmlDeviceGetBAR1MemoryInfo");
    load(a.device_cc, "nvmlDeviceGetCudaComputeCapability");
    load(a.device_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
    load(a.device_pcie_gen_cur, "nvmlDeviceGetCurrPcieLinkGeneration");
    load(a.device_pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
    load(a.device_pcie_width_cur, "nvmlDeviceGetCurrPcieLinkWidth");
    load(a.device_pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
    load(a.device_bus_width, "nvmlDeviceGetMemoryBusWidth");
    load(a.device_max_clock, "nvmlDeviceGetMaxClockInfo");
    load(a.device_cpu_affinity, "nvmlDeviceGetCpuAffinity");
    load(a.device_ecc_mode, "nvmlDeviceGetEccMode");
    load(a.device_total_ecc, "nvmlDeviceGetTotalEccErrors");
    load(a.device_remapped_rows, "nvmlDeviceGetRemappedRows");
    load(a.device_retired_pages, "nvmlDeviceGetRetiredPages");
    load(a.device_retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
    load(a.device_clock, "nvmlDeviceGetClockInfo");
    // Renamed from "throttle" in CUDA 12.2's NVML; older drivers have only the old name.
    load(a.device_clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!a.device_clock_reasons) load(a.device_clock_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    load(a.device_field_values, "nvmlDeviceGetFieldValues");
    load(a.device_nvlink_state, "nvmlDeviceGetNvLinkState");
    load(a.device_nvlink_version, "nvmlDeviceGetNvLinkVersion");
    load(a.device_nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    load(a.device_nvlink_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
    load(a.device_fabric, "nvmlDeviceGetGpuFabricInfo");
    load(a.device_fabric_v, "nvmlDeviceGetGpuFabricInfoV");
    if (!a.init || !a.shutdown || !a.error_string || !a.device_count || !a.device_handle || !a.device_name ||
        !a.device_uuid || !a.device_pci || !a.device_memory) {
        why_not = "libnvidia-ml.so.1 lacks required functions (driver too old)";
        a.shutdown = nullptr;  // init never ran, so there is nothing to shut down
        return nullptr;  // the destructor closes the library; init never ran, so no shutdown
    }
    const nvmlReturn_t r = a.init();
    if (r != NVML_SUCCESS) {
        why_not = std::string("nvmlInit failed: ") + a.error_string(r);
        a.shutdown = nullptr;  // nothing to shut down
        return nullptr;
    }
    return nvml;
}

Nvml::~Nvml() {
    if (skip_shutdown_) return;  // the library stays loaded with NVML in it
    if (api_ && api_->shutdown) api_->shutdown();
    if (library_ != nullptr) dlclose(library_);
}

std::string Nvml::driver_version() const {
    char buf[96] = {};
    if (api_->system_driver_version && api_->system_driver_version(buf, sizeof buf) == NVML_SUCCESS) return buf;
    return "";
}

int Nvml::cuda_driver_version() const {
    int v = 0;
    if (api_->system_cuda_driver_version && api_->system_cuda_driver_version(&v) == NVML_SUCCESS) return v;
    return 0;
}

unsigned Nvml::device_count() const {
    unsigned n = 0;
    const nvmlReturn_t r = api_->device_count(&n);
    if (r != NVML_SUCCESS) throw Error("nvmlDeviceGetCount failed: " + api_->message(r));
    return n;
}

std::optional<unsigned> Nvml::index_of(const PciAddress& pci) const {
    if (api_->device_handle_by_pci && api_->device_index) {
        nvmlDevice_t h = nullptr;
        unsigned index = 0;
        if (api_->device_handle_by_pci(pci.to_string().c_str(), &h) == NVML_SUCCESS &&
            api_->device_index(h, &index) == NVML_SUCCESS)
            return index;
        return std::nullopt;
    }
    for (unsigned i = 0, n = device_count(); i < n; ++i)
        if (identity(i).pci == pci) return i;
    return std::nullopt;
}

DeviceIdentity Nvml::identity(unsigned index) const {
    nvmlDevice_t h = api_->handle(index);
    DeviceIdentity id;
    id.nvml_index = index;
    char buf[128] = {};
    if (api_->device_name(h, buf, sizeof buf) == NVML_SUCCESS) id.name = buf;
    std::memset(buf, 0, sizeof buf);
    if (api_->device_uuid(h, buf, sizeof buf) == NVML_SUCCESS) id.uuid = buf;
    nvmlPciInfo_t pci{};
    if (api_->device_pci(h, &pci) == NVML_SUCCESS) {
        id.pci.domain = pci.domain;
        id.pci.bus = pci.bus;
        id.pci.device = pci.device;
        id.pci.function = 0;
        if (auto parsed = parse_pci_address(pci.busId)) id.pci = *parsed;
    }
    return id;
}

NvmlMemory Nvml::memory(unsigned index) const {
    nvmlDevice_t h = api_->handle(index);
    NvmlMemory m;
    if (api_->device_memory_v2) {
        nvmlMemory_v2_t v2{};
        v2.version = nvmlMemory_v2;
        if (api_->device_memory_v2(h, &v2) == NVML_SUCCESS) {
            m.total = v2.total;
            m.reserved = v2.reserved;
            m.used = v2.used;
            m.free = v2.free;
            m.has_reserved = true;
            return m;
        }
    }
    nvmlMemory_t v1{};
    const nvmlReturn_t r = api_->device_memory(h, &v1);
    if (r != NVML_SUCCESS) throw Error("nvmlDeviceGetMemoryInfo failed: " + api_->message(r));
    m.total = v1.total;
    m.used = v1.used;
    m.free = v1.free;
    return m;
}

std::optional<NvmlBar1> Nvml::bar1(unsigned index) const {
    nvmlBAR1Memory_t b{};
    if (!api_->device_bar1 || api_->device_bar1(api_->handle(index), &b) != NVML_SUCCESS) return std::nullopt;
    return NvmlBar1{b.bar1Total, b.bar1Used, b.bar1Free};
}

std::optional<std::pair<int, int>> Nvml::compute_capability(unsigned index) const {
    int major = 0, minor = 0;
    if (!api_->device_cc || api_->device_cc(api_->handle(index), &major, &minor) != NVML_SUCCESS) return std::nullopt;
    return std::make_pair(major, minor);
}

std::optional<NvmlPcieLink> Nvml::pcie_link(unsigned index, NvmlHealth* failures) const {
    const Api& a = *api_;
    nvmlDevice_t h = a.handle(index);
    auto ok = [&](nvmlReturn_t r, const char* function) { return answered(a, r, function, failures); };
    NvmlPcieLink link;
    if (!a.device_pcie_gen_max || !a.device_pcie_width_max) return std::nullopt;
    if (!ok(a.device_pcie_gen_max(h, &link.max_generation), "nvmlDeviceGetMaxPcieLinkGeneration") ||
        !ok(a.device_pcie_width_max(h, &link.max_width), "nvmlDeviceGetMaxPcieLinkWidth"))
        return std::nullopt;
    // The current figures stay 0 when not reported.
    if (a.device_pcie_gen_cur) ok(a.device_pcie_gen_cur(h, &link.current_generation), "nvmlDeviceGetCurrPcieLinkGeneration");
    if (a.device_pcie_width_cur) ok(a.device_pcie_width_cur(h, &link.current_width), "nvmlDeviceGetCurrPcieLinkWidth");
    return link;
}

std::optional<double> Nvml::peak_memory_bandwidth(unsigned index) const {
    if (!api_->device_bus_width || !api_->device_max_clock) return std::nullopt;
    nvmlDevice_t h = api_->handle(index);
    unsigned bus_bits = 0, clock_mhz = 0;
    if (api_->device_bus_width(h, &bus_bits) != NVML_SUCCESS || api_->device_max_clock(h, NVML_CLOCK_MEM, &clock_mhz) != NVML_SUCCESS ||
        bus_bits == 0 || clock_mhz == 0)
        return std::nullopt;
    return 2.0 * clock_mhz * 1e6 * bus_bits / 8.0;
}

std::vector<NvmlProcess> Nvml::compute_processes(unsigned index) const {
    std::vector<NvmlProcess> out;
    if (!api_->device_processes) return out;
    nvmlDevice_t h = api_->handle(index);
    std::vector<nvmlProcessInfo_t> infos(16);
    unsigned count = static_cast<unsigned>(infos.size());
    nvmlReturn_t r = api_->device_processes(h, &count, infos.data());
    while (r == NVML_ERROR_INSUFFICIENT_SIZE && infos.size() < 65536) {
        infos.resize(std::max<std::size_t>(count + 8, infos.size() * 2));
        count = static_cast<unsigned>(infos.size());
        r = api_->device_processes(h, &count, infos.data());
    }
    if (r != NVML_SUCCESS) throw Error("nvmlDeviceGetComputeRunningProcesses failed: " + api_->message(r));
    for (unsigned i = 0; i < count; ++i) {
        NvmlProcess p;
        p.pid = infos[i].pid;
        if (infos[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) p.used_memory = infos[i].usedGpuMemory;
        char name[256] = {};
        if (api_->system_process_name && api_->system_process_name(p.pid, name, sizeof name) == NVML_SUCCESS) {
            p.name = name;
        } else {
            std::ifstream comm("/proc/" + std::to_string(p.pid) + "/comm");
            std::getline(comm, p.name);
        }
        out.push_back(std::move(p));
    }
    return out;
}

std::vector<int> Nvml::cpu_affinity(unsigned index) const {
    std::vector<int> cpus;
    if (!api_->device_cpu_affinity) return cpus;
    constexpr unsigned words = 64;  // 4096 CPUs
    unsigned long mask[words] = {};
    if (api_->device_cpu_affinity(api_->handle(index), words, mask) != NVML_SUCCESS) return cpus;
    constexpr int bits = static_cast<int>(sizeof(unsigned long) * 8);
    for (unsigned w = 0; w < words; ++w)
        for (int b = 0; b < bits; ++b)
            if (mask[w] & (1UL << b)) cpus.push_back(static_cast<int>(w) * bits + b);
    return cpus;
}

namespace {

// The GPU's NVSwitch fabric registration: the versioned call, else the
// first one (a driver that predates the version); nothing where the driver
// has neither or the GPU is on no fabric.
void read_fabric(const Nvml::Api& a, nvmlDevice_t h, unsigned index, NvmlNvLink& out) {
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    NvmlFabric fabric;
    std::string function = "nvmlDeviceGetGpuFabricInfoV";
    if (a.device_fabric_v) {
        nvmlGpuFabricInfo_v2_t info{};
        info.version = nvmlGpuFabricInfo_v2;
        r = a.device_fabric_v(h, &info);
        fabric = NvmlFabric{info.state, info.status, ""};
    }
    if ((r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) && a.device_fabric) {
        function = "nvmlDeviceGetGpuFabricInfo";
        nvmlGpuFabricInfo_t info{};
        r = a.device_fabric(h, &info);
        fabric = NvmlFabric{info.state, info.status, ""};
    }
    if (r == NVML_SUCCESS) {
        fabric.status_text = a.message(fabric.status);
        out.fabric = fabric;
    } else if (r == NVML_ERROR_GPU_IS_LOST) {
        throw GpuLostError("NVML device " + std::to_string(index) + ": " + a.message(r));
    } else if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND) {
        out.fabric_error = function + " failed: " + a.message(r);
    }
}

}  // namespace

NvmlNvLink Nvml::nvlink(unsigned index) const {
    const Api& a = *api_;
    nvmlDevice_t h = a.handle(index);
    NvmlNvLink out;
    read_fabric(a, h, index, out);
    if (!a.device_nvlink_state) return out;  // a driver without NVLink calls: none
    std::optional<unsigned> count;
    if (a.device_field_values) {
        nvmlFieldValue_t values[6] = {};
        const unsigned ids[6] = {kFiLinkCount, kFiSpeedCommon, kFiReplayTotal, kFiRecoveryTotal, kFiCrcFlitTotal, kFiCrcDataTotal};
        for (int i = 0; i < 6; ++i) values[i].fieldId = ids[i];
        const nvmlReturn_t r = a.device_field_values(h, 6, values);
        if (r == NVML_ERROR_GPU_IS_LOST) throw GpuLostError("NVML device " + std::to_string(index) + ": " + a.message(r));
        if (r == NVML_SUCCESS) {
            const auto number = field_number;
            if (const auto n = number(values[0])) count = static_cast<unsigned>(std::min<std::uint64_t>(*n, kNvLinkMaxLinks));
            if (const auto mbps = number(values[1]); mbps && *mbps > 0) out.link_speed_mbps = static_cast<double>(*mbps);
            out.replay_errors = number(values[2]);
            out.recovery_errors = number(values[3]);
            out.crc_flit_errors = number(values[4]);
            out.crc_data_errors = number(values[5]);
        }
    }
    // Without the count, the links answer until the first that does not exist.
    const unsigned probe = count.value_or(kNvLinkMaxLinks);
    for (unsigned link = 0; link < probe; ++link) {
        int is_active = 0;
        const nvmlReturn_t r = a.device_nvlink_state(h, link, &is_active);
        if (r == NVML_ERROR_NOT_SUPPORTED || (!count && r == NVML_ERROR_INVALID_ARGUMENT)) break;
        if (r == NVML_ERROR_GPU_IS_LOST) throw GpuLostError("NVML device " + std::to_string(index) + ": " + a.message(r));
        if (r != NVML_SUCCESS) {
            out.error = "nvmlDeviceGetNvLinkState(link " + std::to_string(link) + ") failed: " + a.message(r);
            return out;
        }
        out.active.push_back(is_active != 0);
        std::optional<PciAddress> remote;
        bool is_switch = false;
        if (is_active != 0) {
            nvmlPciInfo_t pci{};
            if (a.device_nvlink_remote_pci && a.device_nvlink_remote_pci(h, link, &pci) == NVML_SUCCESS) remote = parse_pci_address(pci.busId);
            int type = 0;
            if (a.device_nvlink_remote_type && a.device_nvlink_remote_type(h, link, &type) == NVML_SUCCESS)
                is_switch = static_cast<unsigned>(type) == kNvLinkRemoteSwitch;
            unsigned version = 0;
            if (!out.version && a.device_nvlink_version && a.device_nvlink_version(h, link, &version) == NVML_SUCCESS && version > 0)
                out.version = version;
        }
        out.remote.push_back(remote);
        out.remote_is_switch.push_back(is_switch);
    }
    // Drivers have answered NVLink 5.0 (7) for Hopper's NVLink 4.0 links
    // (a known quirk other NVML users work around): 5.0 exists from
    // Blackwell (compute capability 10) on.
    int major = 0, minor = 0;
    if (out.version == 7u && a.device_cc && a.device_cc(h, &major, &minor) == NVML_SUCCESS && major < 10) out.version = 6;
    out.link_count = static_cast<unsigned>(out.active.size());
    out.supported = out.link_count > 0;
    return out;
}

namespace {

// NVML_MEMORY_ERROR_TYPE_* and NVML_*_ECC counter types, page retirement causes.
constexpr int kCorrected = 0, kUncorrected = 1, kVolatile = 0, kAggregate = 1;
constexpr int kRetiredSbe = 0, kRetiredDbe = 1;

}  // namespace

NvmlHealth Nvml::health(unsigned index) const {
    const Api& a = *api_;
    nvmlDevice_t h = a.handle(index);
    NvmlHealth out;
    auto ok = [&](nvmlReturn_t r, std::string_view function) { return answered(a, r, function, &out); };
    int current = 0, pending = 0;
    if (a.device_ecc_mode && ok(a.device_ecc_mode(h, &current, &pending), "nvmlDeviceGetEccMode")) {
        out.ecc_enabled = current != 0;
        out.ecc_pending = pending != 0;
    }
    auto ecc_count = [&](int type, int counter) -> std::optional<std::uint64_t> {
        unsigned long long n = 0;
        if (!a.device_total_ecc || !ok(a.device_total_ecc(h, type, counter, &n), "nvmlDeviceGetTotalEccErrors")) return std::nullopt;
        return n;
    };
    out.ecc_corrected_volatile = ecc_count(kCorrected, kVolatile);
    out.ecc_uncorrected_volatile = ecc_count(kUncorrected, kVolatile);
    out.ecc_corrected_aggregate = ecc_count(kCorrected, kAggregate);
    out.ecc_uncorrected_aggregate = ecc_count(kUncorrected, kAggregate);
    unsigned correctable = 0, uncorrectable = 0, remap_pending = 0, failure = 0;
    if (a.device_remapped_rows &&
        ok(a.device_remapped_rows(h, &correctable, &uncorrectable, &remap_pending, &failure), "nvmlDeviceGetRemappedRows")) {
        out.remapped_rows_correctable = correctable;
        out.remapped_rows_uncorrectable = uncorrectable;
        out.remapped_rows_pending = remap_pending != 0;
        out.remapped_rows_failure = failure != 0;
    }
    // A count of 0 asks only how many pages there are: NVML answers
    // NVML_ERROR_INSUFFICIENT_SIZE with the count when there are some.
    for (const int cause : {kRetiredSbe, kRetiredDbe}) {
        unsigned count = 0;
        if (!a.device_retired_pages) break;
        const nvmlReturn_t r = a.device_retired_pages(h, cause, &count, nullptr);
        if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE || ok(r, "nvmlDeviceGetRetiredPages"))
            (cause == kRetiredSbe ? out.retired_pages_sbe : out.retired_pages_dbe) = count;
    }
    int retired_pending = 0;
    if (a.device_retired_pending && ok(a.device_retired_pending(h, &retired_pending), "nvmlDeviceGetRetiredPagesPendingStatus"))
        out.retired_pages_pending = retired_pending != 0;
    unsigned mhz = 0;
    if (a.device_clock && ok(a.device_clock(h, NVML_CLOCK_MEM, &mhz), "nvmlDeviceGetClockInfo")) out.memory_clock_mhz = mhz;
    if (a.device_max_clock && ok(a.device_max_clock(h, NVML_CLOCK_MEM, &mhz), "nvmlDeviceGetMaxClockInfo")) out.memory_clock_max_mhz = mhz;
    unsigned long long reasons = 0;
    if (a.device_clock_reasons && ok(a.device_clock_reasons(h, &reasons), "nvmlDeviceGetCurrentClocksEventReasons"))
        out.clock_event_reasons = reasons;
    if (a.device_field_values) {
        nvmlFieldValue_t v{};
        v.fieldId = kFiRecoveryAction;
        const std::string_view what = kRecoveryActionQuery;
        // A driver that predates the field answers it "not supported" or
        // "invalid argument": not reported, n/a.
        if (ok(a.device_field_values(h, 1, &v), what) && v.nvmlReturn != NVML_ERROR_INVALID_ARGUMENT && ok(v.nvmlReturn, what))
            if (const auto action = field_number(v)) out.recovery_action = static_cast<unsigned>(std::min<std::uint64_t>(*action, ~0u));
    }
    return out;
}

}  // namespace gpumem
