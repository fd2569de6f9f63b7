#include "reuse_sim/run_slots_here.hpp"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/cpu_affinity.hpp"
#include "base/device_spec.hpp"
#include "core/nvml.hpp"

namespace gpumem::cli {

RunSlotFacts run_slot_facts_here(std::uint64_t cap, unsigned ranks, std::optional<unsigned> asked) {
    RunSlotFacts f;
    f.cap = cap;
    f.ranks = ranks;
    f.cores = allowed_cpu_count();
    f.asked = asked;
    const char* threads = std::getenv("OMP_NUM_THREADS");
    f.threads_set = threads != nullptr && *threads != '\0';
    std::string why_not;
    const std::unique_ptr<Nvml> nvml = Nvml::open(why_not);
    if (!nvml) return f;  // no driver: memory not known
    try {
        std::vector<DeviceIdentity> all;
        for (unsigned i = 0; i < nvml->device_count(); ++i) all.push_back(nvml->identity(i));
        const char* named = std::getenv("CUDA_VISIBLE_DEVICES");
        const auto entries = parse_cuda_visible_devices(named);
        const auto base = cuda_base_order(all, parse_cuda_device_order(std::getenv("CUDA_DEVICE_ORDER")));
        const auto visible = apply_cuda_visible_devices(all, base, entries);
        if (!visible) return f;  // MIG, or an order only CUDA knows: one run at a time
        // The user named the GPUs: runs stay on the first of them as given.
        f.spread = named == nullptr;
        for (std::size_t k = 0; k < visible->size(); ++k) {
            const std::size_t at = (*visible)[k];
            GpuRoom room;
            // What to put in CUDA_VISIBLE_DEVICES for this GPU: its index in
            // CUDA's order with the variable unset.
            if (base)
                for (std::size_t b = 0; b < base->size(); ++b)
                    if ((*base)[b] == at) room.id = std::to_string(b);
            if (room.id.empty()) room.id = all[at].uuid;
            room.free = nvml->memory(all[at].nvml_index.value_or(static_cast<unsigned>(at))).free;
            f.gpus.push_back(room);
        }
    } catch (const Error&) {
        f.gpus.clear();  // a GPU NVML cannot read: memory not known
    }
    nvml->skip_shutdown();
    return f;
}

}  // namespace gpumem::cli
