// Constructors of the individual strategies, for make_strategy.
#pragma once

#include <memory>

#include "reuse_sim/strategy.hpp"

namespace gpumem::reuse_sim::detail {

std::unique_ptr<Strategy> make_naive(Upstream& upstream);
std::unique_ptr<Strategy> make_grow_only(Upstream& upstream, const GrowthPolicy& growth, bool zero_fill);
std::unique_ptr<Strategy> make_shape_persistent(Upstream& upstream);
std::unique_ptr<Strategy> make_ring(Upstream& upstream, std::uint32_t buffers, std::uint64_t buffer_size);
std::unique_ptr<Strategy> make_async_pool(Upstream& upstream, std::uint64_t release_threshold);
std::unique_ptr<Strategy> make_rmm_pool(Upstream& upstream, std::uint64_t initial, std::uint64_t maximum);
std::unique_ptr<Strategy> make_rmm_binning(Upstream& upstream, const StrategyOptions& options);
std::unique_ptr<Strategy> make_torch_caching(Upstream& upstream, const TorchOptions& options);

}  // namespace gpumem::reuse_sim::detail
