// Where max-batch's runs go side by side (base/run_slots.hpp): facts in,
// slots out. Parallel runs must never change the answer: each under its
// own cap, only where the GPU's free memory holds them all.
#include <doctest/doctest.h>

#include "base/run_slots.hpp"

using namespace gpumem;

namespace {

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

RunSlotFacts h200s(std::vector<std::uint64_t> free_gib, std::uint64_t cap_gib, unsigned cores = 16) {
    RunSlotFacts f;
    for (std::size_t g = 0; g < free_gib.size(); ++g) f.gpus.push_back({std::to_string(g), free_gib[g] * GiB});
    f.cap = cap_gib * GiB;
    f.cores = cores;
    return f;
}

}  // namespace

TEST_CASE("run slots: one GPU holds as many runs as its free memory allows beside 1 GiB, one a two cores, eight at most") {
    // 139 GiB free, 6 GiB caps (7.5 GiB a run): 18 fit; 16 cores allow 8.
    RunSlotPlan p = plan_run_slots(h200s({139}, 6));
    CHECK(p.slots.size() == 8);
    CHECK(p.limit == "the host's cores");
    // One GPU: no GPU named; the cores shared, 2 threads each.
    CHECK(p.slots.front().environment == std::vector<std::string>{"OMP_NUM_THREADS=2"});
    // 14 GiB caps (15.5 a run): 8 fit, 8 allowed.
    CHECK(plan_run_slots(h200s({139}, 14)).slots.size() == 8);
    // 40 GiB caps: 3 fit.
    p = plan_run_slots(h200s({139}, 40));
    CHECK(p.slots.size() == 3);
    CHECK(p.limit == "the GPU's free memory");
    // Two cores: one run at a time.
    CHECK(plan_run_slots(h200s({139}, 6, 2)).slots.size() == 1);
}

TEST_CASE("run slots: where the cap is near the free memory, one run at a time; another process's memory counts") {
    RunSlotPlan p = plan_run_slots(h200s({139}, 100));
    CHECK(p.slots.size() == 1);
    CHECK(p.limit == "the cap is near the free memory of the GPU");
    // Another process holds 120 GiB: 19 free, 6 GiB caps: 2 fit.
    CHECK(plan_run_slots(h200s({19}, 6)).slots.size() == 2);
    // Nothing free at all: one run still (it will say what it meets).
    CHECK(plan_run_slots(h200s({0}, 6)).slots.size() == 1);
}

TEST_CASE("run slots: --jobs N asks; memory still bounds it; unknown memory takes the user's word, auto one") {
    RunSlotFacts f = h200s({139}, 40);
    f.asked = 2;
    CHECK(plan_run_slots(f).slots.size() == 2);
    f.asked = 10;  // 3 fit
    CHECK(plan_run_slots(f).slots.size() == 3);
    f.asked = 1;
    CHECK(plan_run_slots(f).slots.size() == 1);
    RunSlotFacts unknown;
    unknown.cap = 6 * GiB;
    unknown.cores = 16;
    RunSlotPlan p = plan_run_slots(unknown);
    CHECK(p.slots.size() == 1);
    CHECK(p.limit == "the GPUs' free memory is not known");
    unknown.asked = 4;
    CHECK(plan_run_slots(unknown).slots.size() == 4);
}

TEST_CASE("run slots: several GPUs spread the runs, each named in CUDA_VISIBLE_DEVICES; not where the user named them") {
    RunSlotPlan p = plan_run_slots(h200s({139, 30}, 14));
    REQUIRE(p.slots.size() == 8);
    std::size_t on_1 = 0;
    for (const RunSlot& s : p.slots) {
        REQUIRE(s.environment.size() == 2);
        if (s.environment.front() == "CUDA_VISIBLE_DEVICES=1") ++on_1;
        CHECK(s.environment.back() == "OMP_NUM_THREADS=2");
    }
    CHECK(on_1 == 1);  // GPU 1 holds one 15.5 GiB run beside 1 GiB kept free
    RunSlotFacts pinned = h200s({139, 139}, 14);
    pinned.spread = false;
    pinned.threads_set = true;  // and the user's OMP_NUM_THREADS stands
    for (const RunSlot& s : plan_run_slots(pinned).slots) CHECK(s.environment.empty());
}

TEST_CASE("run slots: torchrun's runs take disjoint sets of GPUs; unknown ranks, one run") {
    RunSlotFacts f = h200s({139, 139, 139, 139}, 4);
    f.ranks = 2;
    RunSlotPlan p = plan_run_slots(f);
    REQUIRE(p.slots.size() == 2);
    CHECK(p.slots[0].environment == std::vector<std::string>{"CUDA_VISIBLE_DEVICES=0,1", "OMP_NUM_THREADS=4"});
    CHECK(p.slots[1].environment == std::vector<std::string>{"CUDA_VISIBLE_DEVICES=2,3", "OMP_NUM_THREADS=4"});
    f.ranks = 4;
    CHECK(plan_run_slots(f).slots.size() == 1);
    f.ranks = 0;
    p = plan_run_slots(f);
    CHECK(p.slots.size() == 1);
    CHECK(p.limit == "a launcher's ranks are not known before its first run");
    // Two ranks on one GPU (gloo): one run at a time.
    RunSlotFacts one = h200s({139}, 4);
    one.ranks = 2;
    CHECK(plan_run_slots(one).slots.size() == 1);
}
