// The facts base/run_slots.hpp plans with, read on this host: each GPU a
// run may use and its free memory (NVML: no CUDA context, no memory taken),
// as CUDA_VISIBLE_DEVICES names them, and the cores this process may use.
// I/O: the CLI layer's.
#pragma once

#include <cstdint>
#include <optional>

#include "base/run_slots.hpp"

namespace gpumem::cli {

// `ranks`: the GPUs one run takes (0: not known yet); `asked`: --jobs N.
RunSlotFacts run_slot_facts_here(std::uint64_t cap, unsigned ranks, std::optional<unsigned> asked);

}  // namespace gpumem::cli
