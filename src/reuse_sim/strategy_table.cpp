// The strategies' table (kStrategies): a row per strategy, naming its
// constructor. Apart from strategy.cpp, so that the strategies (which
// include strategy.hpp) and their table do not include each other.
#include "reuse_sim/strategies_impl.hpp"
#include "reuse_sim/strategy.hpp"

namespace gpumem::reuse_sim {

namespace {

constexpr Named<StrategySpec> kStrategyRows[] = {
    {"naive", {detail::make_naive, ""}, "cudaMalloc and cudaFree for every request"},
    {"grow-only", {detail::make_grow_only, "--growth --zero-fill"},
     "MixMemory: one buffer per requester, reused while requests fit, freed and reallocated larger otherwise"},
    {"shape-persistent", {detail::make_shape_persistent, ""},
     "Torch-TensorRT's pre-allocated outputs: a requester's buffer is reused only while the size is unchanged"},
    {"ring", {detail::make_ring, "--ring-buffers --ring-size", [](const StrategyOptions& o) { return o.ring_size == 0; }},
     "N buffers of the largest request size handed out in turn (a request finding none free waits)"},
    {"pool", {detail::make_rmm_pool, "--pool-initial --pool-max"},
     "RMM's pool_memory_resource: best fit and coalescing on per-stream free lists, growth by doubling"},
    {"binning", {detail::make_rmm_binning, "--pool-initial --pool-max --bins --bin-blocks"},
     "RMM's binning_memory_resource: fixed-size bins over a pool, larger requests from the pool"},
    {"torch-caching", {detail::make_torch_caching, "--max-split-size --max-non-split-rounding --roundup-power2-divisions"},
     "PyTorch's CUDACachingAllocator: small and large pools, split and merge, free cached segments and retry"},
    {"async-pool", {detail::make_async_pool, "--release-threshold"},
     "cudaMallocAsync on the device's stream-ordered pool, trimmed to its release threshold at synchronizations"},
};

}  // namespace

const NameTable<StrategySpec> kStrategies{"strategy", kStrategyRows, "strategies"};

}  // namespace gpumem::reuse_sim
