// reuse-sim's what-if tuner (reuse-sim tune): a grid of PyTorch allocator
// settings (PYTORCH_CUDA_ALLOC_CONF), each replayed through torch-caching,
// ranked, and the question users ask answered in one sentence: which setting
// would have avoided the OOM, and at what cost. Pure logic: the grid, the
// ranking, the PYTORCH_CUDA_ALLOC_CONF text, the sentence and the plan of the
// capacity search; the replays are the command's (subcommands/reuse_sim/reuse_sim_tune_replays.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/name_table.hpp"
#include "reuse_sim/strategy.hpp"

namespace gpumem::reuse_sim {

enum class Knob { max_split_size, roundup_power2_divisions, expandable_segments, garbage_collection_threshold };

// A setting the tuner varies: a row of kKnobs. --sweep's parsing, its help,
// --list knobs, the completions, the JSON schema of a row's settings and the
// PYTORCH_CUDA_ALLOC_CONF text all read the table.
struct KnobSpec {
    Knob knob;
    std::string_view conf_key;  // its key in PYTORCH_CUDA_ALLOC_CONF
    std::string_view defaults;  // tune's values, as --sweep takes them
    bool needs_cap;             // acts only under a memory cap (PyTorch: a memory fraction)
    // One value as --sweep writes it, into its field of `options`. Throws UsageError.
    void (*parse)(std::string_view value, TorchOptions& options);
    // Its field copied; whether two settings agree on it; its value in
    // PYTORCH_CUDA_ALLOC_CONF (empty: PyTorch's default, left out).
    void (*copy)(const TorchOptions& from, TorchOptions& to);
    bool (*same)(const TorchOptions& a, const TorchOptions& b);
    std::string (*conf_value)(const TorchOptions& options);

    friend bool operator==(const KnobSpec& a, const KnobSpec& b) noexcept { return a.knob == b.knob; }
};
extern const NameTable<KnobSpec> kKnobs;
// A knob by its name or its PYTORCH_CUDA_ALLOC_CONF key (max_split_size_mb); null if neither.
const Named<KnobSpec>* find_knob(std::string_view name);

// A PYTORCH_ALLOC_CONF text applied to `options` as PyTorch 2.11 applies
// one at start and at each torch.cuda.memory._set_allocator_settings
// (AcceleratorAllocatorConfig::parseArgs): max_split_size,
// roundup_power2_divisions and garbage_collection_threshold return to their
// defaults unless the text sets them; expandable_segments and
// max_non_split_rounding_mb keep their value unless it does. Keys the model
// has no use for are passed over. Throws UsageError for a bad value.
void apply_alloc_conf(std::string_view conf, TorchOptions& options);

// The most grid points one run replays (each is a lane of the replay).
inline constexpr std::uint64_t kMaxGridPoints = 128;

// One knob and the values it takes: each value is a TorchOptions whose
// field for the knob holds it.
struct SweepAxis {
    const Named<KnobSpec>* knob = nullptr;
    std::vector<TorchOptions> values;
};

// "KNOB=V1,V2,...". Throws UsageError (unknown knob, bad or repeated value, empty list).
SweepAxis parse_sweep(std::string_view text);

// The grid's axes: every --sweep, and with `tune` every other knob on its
// default values (a knob that needs a cap only when `capped`). A knob swept
// twice, a knob that needs a cap without one, or more than kMaxGridPoints
// points are usage errors.
std::vector<SweepAxis> grid_axes(const std::vector<std::string>& sweeps, bool tune, bool capped);
// The number of points: the product of the axes' sizes (saturating).
std::uint64_t grid_size(const std::vector<SweepAxis>& axes) noexcept;

struct GridPoint {
    TorchOptions options;
    bool recorded = false;  // the setting the input ran with (the baseline)
};
// Every combination of the axes over `baseline` (the first axis varies
// slowest), once each; the baseline is marked where it falls, or comes
// first when it is not in the grid.
std::vector<GridPoint> grid_points(const TorchOptions& baseline, const std::vector<SweepAxis>& axes);

// Whether two settings agree on every knob.
bool same_setting(const TorchOptions& a, const TorchOptions& b) noexcept;

// PYTORCH_CUDA_ALLOC_CONF for `options`, PyTorch's syntax, defaults left out:
// "max_split_size_mb:128,roundup_power2_divisions:[1:1,256:1,512:2,>:8],expandable_segments:True".
std::string alloc_conf(const TorchOptions& options);
// roundup_power2_divisions as PYTORCH_CUDA_ALLOC_CONF writes it ("4", or the
// list form), such that parse_roundup_power2_divisions gives `divisions`
// back; empty when every interval is 0 (off).
std::string format_roundup_power2_divisions(const std::array<std::uint64_t, 16>& divisions);

// What one grid point's replay gave.
struct TuneOutcome {
    std::uint64_t peak_reserved = 0, ooms = 0, retries = 0, device_allocs = 0, device_frees = 0;
    double modelled_us = 0;
    std::optional<std::uint64_t> first_oom_event;  // the ordinal (from 1) of the event first refused
    // Of the requests the recording refused (its OOMs), those this setting
    // serves: after each, the program would have gone on with its step
    // instead of recovering, asking for memory the recording never saw.
    std::uint64_t granted_ooms = 0;
};

struct TuneRow {
    GridPoint point;
    TuneOutcome outcome;
};

// Whether `a` ranks before `b`: no OOM first (among settings with OOMs,
// fewer first), then the lower peak reserved, fewer retries, less modelled time.
bool ranks_before(const TuneOutcome& a, const TuneOutcome& b) noexcept;
// Sorts by ranks_before; among equals the recorded setting first, then grid order.
void rank_rows(std::vector<TuneRow>& rows);

// The smallest capacity the best setting fits in, searched by replays over
// [low, high]: `low` a capacity known to be too small (or the least
// conceivable), `high` one the setting fits in.
struct CapacitySearch {
    std::optional<std::uint64_t> smallest;  // none: not searched
    std::uint64_t resolution = 0;           // the search's last step
    std::uint64_t replays = 0;              // lanes replayed for it
    std::string not_searched;               // why not, when not
};
// Capacities for one pass of the search over (low, high]: `count` of them,
// evenly spaced, rounded up to MiB, the last one `high`; fewer when the
// range is narrower than `count` MiB.
std::vector<std::uint64_t> capacity_probes(std::uint64_t low, std::uint64_t high, std::size_t count);

// The answer, one sentence: whether and with what setting the trace fits
// under `capacity` (kUnlimited: no cap), as recorded or not, the event the
// recorded setting first fails at, and the smallest capacity found; where the
// input recorded OOMs (`recorded_ooms`, its oom events) and the best setting
// grants some, how many, and that the program's course after them is not in
// the recording. `rows` ranked; `bytes` formats a size; `baseline_name` is
// "as recorded" or "with the baseline settings".
std::string tune_answer(const std::vector<TuneRow>& rows, std::uint64_t capacity, const CapacitySearch& search,
                        const std::function<std::string(std::uint64_t)>& bytes, std::string_view baseline_name,
                        std::uint64_t recorded_ooms = 0);

// 18231 -> "18,231".
std::string group_digits(std::uint64_t value);

}  // namespace gpumem::reuse_sim
