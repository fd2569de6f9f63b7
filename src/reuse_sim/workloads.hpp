// Built-in workloads: deterministic generators for a seed that produce
// events step by step (never the whole trace), shaped like the programs the
// source documents discuss. A step is one inference (inference, dynamic,
// detector), one request (llm-decode) or one training iteration (training);
// every step ends with a device synchronization.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/name_table.hpp"
#include "reuse_sim/events.hpp"

namespace gpumem::reuse_sim {

struct WorkloadOptions {
    std::string name = "dynamic";
    std::uint64_t steps = 200;
    std::uint64_t seed = 1;
    double change_rate = 0.1;             // dynamic: chance per step that the batch size changes
    std::uint64_t batch_min = 1, batch_max = 32;  // dynamic draws from [min, max]; others use max
    std::uint32_t layers = 8;
    std::uint64_t sample_bytes = 768ULL << 10;  // activation bytes per sample at the first layer
    std::uint32_t max_detections = 100;         // detector: detections per image drawn from [0, max]
    std::uint64_t prompt_min = 32, prompt_max = 512;  // llm-decode: tokens
    std::uint64_t tokens_min = 16, tokens_max = 256;  // llm-decode: generated tokens per request
    std::uint64_t kv_bytes_per_token = 4096;          // llm-decode: per layer (K and V, fp16)
    std::uint32_t streams = 1;  // steps run on streams 0..N-1 in turn
};

namespace detail {
class Generator;
}  // namespace detail

// What a workload's description says of --batch.
enum class BatchUse { range, largest, none };

// A workload: a row of kWorkloads (gpumem --list workloads).
struct WorkloadSpec {
    std::unique_ptr<detail::Generator> (*make)(const WorkloadOptions& options);
    BatchUse batch = BatchUse::largest;

    friend bool operator==(const WorkloadSpec& a, const WorkloadSpec& b) noexcept { return a.make == b.make; }
    friend bool operator!=(const WorkloadSpec& a, const WorkloadSpec& b) noexcept { return !(a == b); }
};
extern const NameTable<WorkloadSpec> kWorkloads;

// UsageError for an unknown name or impossible parameters.
void check_workload_options(const WorkloadOptions& options);
// Throws UsageError for unknown names and impossible parameters.
std::unique_ptr<EventSource> make_workload(const WorkloadOptions& options);

}  // namespace gpumem::reuse_sim
