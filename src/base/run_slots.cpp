#include "base/run_slots.hpp"

#include <algorithm>

namespace gpumem {
namespace {

// Kept free on each GPU beside the runs: another process's growth, the
// driver's own.
constexpr std::uint64_t kKeptFree = std::uint64_t{1} << 30;

RunSlotPlan one_slot(std::string why) {
    RunSlotPlan plan;
    plan.slots.emplace_back();
    plan.limit = std::move(why);
    return plan;
}

// How many processes of `need` bytes a GPU holds beside what it keeps free.
unsigned room_for(const GpuRoom& gpu, std::uint64_t need) {
    if (need == 0 || gpu.free <= kKeptFree) return 0;
    return static_cast<unsigned>(std::min<std::uint64_t>((gpu.free - kKeptFree) / need, 1024));
}

// Several runs at once share the cores: each run's OpenMP threads its share.
RunSlotPlan share_cores(RunSlotPlan plan, const RunSlotFacts& f) {
    if (plan.slots.size() < 2 || f.threads_set) return plan;
    const unsigned each = std::max(1U, f.cores / static_cast<unsigned>(plan.slots.size() * std::max(1U, f.ranks)));
    for (RunSlot& slot : plan.slots) slot.environment.push_back("OMP_NUM_THREADS=" + std::to_string(each));
    return plan;
}

RunSlotPlan plan_slots(const RunSlotFacts& f) {
    if (f.asked && *f.asked <= 1) return one_slot("--jobs 1");
    if (f.ranks == 0) return one_slot("a launcher's ranks are not known before its first run");
    const std::uint64_t need = f.cap + f.outside;
    const unsigned by_cores = std::max(1U, f.cores / (2 * f.ranks));
    if (f.gpus.empty()) {
        if (!f.asked) return one_slot("the GPUs' free memory is not known");
        RunSlotPlan plan;
        plan.slots.resize(*f.asked);
        plan.limit = "--jobs " + std::to_string(*f.asked) + " (the GPUs' free memory not known)";
        return plan;
    }
    const std::size_t usable = f.spread ? f.gpus.size() : 1;
    std::vector<unsigned> room;
    for (std::size_t g = 0; g < usable; ++g) room.push_back(room_for(f.gpus[g], need));
    RunSlotPlan plan;
    if (f.ranks > 1) {
        // Disjoint sets of `ranks` GPUs, each with room for a rank.
        std::vector<std::string> ready;
        for (std::size_t g = 0; g < usable; ++g)
            if (room[g] >= 1) ready.push_back(f.gpus[g].id);
        const std::size_t sets = ready.size() / f.ranks;
        if (sets <= 1) return one_slot("a run takes " + std::to_string(f.ranks) + " GPUs" + (f.spread ? "" : " (CUDA_VISIBLE_DEVICES names them)"));
        const std::size_t wanted = std::min<std::size_t>(sets, f.asked.value_or(std::min(by_cores, kMaxAutomaticJobs)));
        for (std::size_t s = 0; s < wanted; ++s) {
            std::string ids;
            for (unsigned r = 0; r < f.ranks; ++r) ids += (r ? "," : "") + ready[s * f.ranks + r];
            plan.slots.push_back({{"CUDA_VISIBLE_DEVICES=" + ids}});
        }
        plan.limit = wanted < sets ? (f.asked ? "--jobs" : "the host's cores") : "the GPUs, " + std::to_string(f.ranks) + " a run";
        return plan;
    }
    // One process a run: stacked on each GPU as its free memory allows, a
    // GPU whose memory holds only one run taking one.
    unsigned total = 0;
    for (const unsigned r : room) total += r;
    if (total <= 1) return one_slot("the cap is near the free memory of the GPU" + std::string(usable > 1 ? "s" : ""));
    const unsigned wanted = std::min(total, f.asked.value_or(std::min(by_cores, kMaxAutomaticJobs)));
    std::vector<unsigned> given(usable, 0);
    for (unsigned s = 0; s < wanted; ++s) {
        // The GPU with room left that runs the fewest (they share its
        // compute), the one with more room on a tie.
        std::size_t best = usable;
        for (std::size_t g = 0; g < usable; ++g) {
            if (given[g] >= room[g]) continue;
            if (best == usable || given[g] < given[best] || (given[g] == given[best] && room[g] > room[best])) best = g;
        }
        ++given[best];
        RunSlot slot;
        if (usable > 1) slot.environment.push_back("CUDA_VISIBLE_DEVICES=" + f.gpus[best].id);
        plan.slots.push_back(std::move(slot));
    }
    if (wanted == total) plan.limit = "the GPU" + std::string(usable > 1 ? "s'" : "'s") + " free memory";
    else plan.limit = f.asked ? "--jobs" : "the host's cores";
    return plan;
}

}  // namespace

RunSlotPlan plan_run_slots(const RunSlotFacts& f) { return share_cores(plan_slots(f), f); }

}  // namespace gpumem
