// Where runs of a program under a memory cap can go side by side (reuse-sim
// max-batch's --jobs): facts in (the GPUs the program may use and each
// one's free memory, the cap, the GPUs a run takes, the host's cores, what
// the user asked), slots out. Each run holds one slot until it ends. Pure:
// the command reads NVML and the environment.
//
// Parallel runs must never change the answer: each runs under its own cap
// (PyTorch's per-process fraction), so a slot is made only where its cap
// and what a process holds beyond it fit in the GPU's free memory beside
// the others; where the cap is near the free memory, one run at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpumem {

struct GpuRoom {
    std::string id;          // as CUDA_VISIBLE_DEVICES names it (an index)
    std::uint64_t free = 0;  // bytes free now (NVML)
};

struct RunSlotFacts {
    // The GPUs runs may use; empty: not known (no driver, or devices named
    // by UUID): one run at a time unless the user asked for more.
    std::vector<GpuRoom> gpus;
    // The runs may be given other GPUs than the first (CUDA_VISIBLE_DEVICES
    // set for each): the user did not name the program's GPUs.
    bool spread = true;
    std::uint64_t cap = 0;  // each process's cap
    // What a process holds beyond its cap: its CUDA context, cuBLAS's and
    // cuDNN's workspaces, NCCL's buffers (seen: 0.5 to 1.2 GiB on an H200).
    std::uint64_t outside = std::uint64_t{3} << 29;  // 1.5 GiB
    // The GPUs one run takes: 1 for one process, its ranks for torchrun's
    // (one a GPU); 0: not known yet (a launcher before its first run).
    unsigned ranks = 1;
    unsigned cores = 1;  // the CPUs this process may use
    std::optional<unsigned> asked;  // --jobs N; none: automatic
    // The user set OMP_NUM_THREADS: theirs stands. Else runs side by side
    // share the cores (OMP_NUM_THREADS set to their share, as torchrun
    // does for its ranks): each PyTorch process otherwise starts a thread
    // per core, and seven of them on 16 cores ran 2x slower each.
    bool threads_set = false;
};

struct RunSlot {
    // NAME=VALUE for the run: CUDA_VISIBLE_DEVICES where runs spread over
    // GPUs, OMP_NUM_THREADS where several share the cores; empty: the
    // program's environment as given.
    std::vector<std::string> environment;
};

struct RunSlotPlan {
    std::vector<RunSlot> slots;  // at least one
    std::string limit;           // why no more ("the cap is near the free memory of GPU 0"), for the report
};

// Automatic: at most this many, and one per two cores (each run's Python
// process keeps a core busy feeding its GPU).
inline constexpr unsigned kMaxAutomaticJobs = 8;

RunSlotPlan plan_run_slots(const RunSlotFacts& facts);

}  // namespace gpumem
