// Constructors of the individual strategies, for the rows of kStrategies.
#pragma once

#include <memory>

#include "reuse_sim/strategy.hpp"

namespace gpumem::reuse_sim::detail {

// Each takes the options it needs from `options` (its row of kStrategies
// names them for the command line).
std::unique_ptr<Strategy> make_naive(Upstream& upstream, const StrategyOptions& options);
std::unique_ptr<Strategy> make_grow_only(Upstream& upstream, const StrategyOptions& options);
std::unique_ptr<Strategy> make_shape_persistent(Upstream& upstream, const StrategyOptions& options);
std::unique_ptr<Strategy> make_ring(Upstream& upstream, const StrategyOptions& options);
std::unique_ptr<Strategy> make_async_pool(Upstream& upstream, const StrategyOptions& options);
std::unique_ptr<Strategy> make_rmm_pool(Upstream& upstream, const StrategyOptions& options);
std::unique_ptr<Strategy> make_rmm_binning(Upstream& upstream, const StrategyOptions& options);
std::unique_ptr<Strategy> make_torch_caching(Upstream& upstream, const StrategyOptions& options);

}  // namespace gpumem::reuse_sim::detail
