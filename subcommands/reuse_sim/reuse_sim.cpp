// gpumem reuse-sim's jobs, each a sub-command of its own (as alloc-test's
// modes are): replay (compare strategies on a workload or a trace; with
// --execute, for real on a GPU), tune (rank PyTorch's allocator settings;
// --confirm reruns the program), record (run a program and record its
// allocations) and max-batch (the largest batch that fits). This file: each
// job's options, built from shared groups, and its check(), which finds
// every usage error before anything runs. Execution and the report are the
// same for every job: the checked request says which ran.
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/errors.hpp"
#include "base/memory_policy.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/commands.hpp"
#include "reuse_sim/reuse_sim.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tuner.hpp"
#include "reuse_sim/workloads.hpp"
#include "cli/terminal.hpp"
#include "cli/writer.hpp"
#include "process/child.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

// The option groups more than one job takes, each registered by one
// function on any job's sub-command: what a job does not register, CLI11
// refuses as an unknown option of that job.

// The input replayed: a built-in workload, or --trace (replay, tune).
struct InputOptions {
    std::optional<std::string> workload;
    std::uint64_t steps = 200;
    std::uint64_t seed = 1;
    double change_rate = 0.1;
    std::string batch = "1..32";
    std::uint64_t layers = 8;
    std::string sample_bytes = "768KiB";
    std::uint64_t max_detections = 100;
    std::string prompt = "32..512";
    std::string tokens = "16..256";
    std::uint64_t streams = 1;
    std::optional<std::string> trace;
    std::string trace_format = "auto";
    std::optional<std::uint64_t> trace_device;
};

// PyTorch's caching allocator settings given as flags (replay, tune,
// max-batch): they override a snapshot's.
struct TorchOptions {
    std::optional<std::string> max_split_size;
    std::optional<std::string> max_non_split_rounding;
    std::optional<std::string> roundup_power2_divisions;
};

// The strategies compared and what tunes them (replay).
struct StrategyKnobs {
    std::string strategy = "all";
    std::optional<std::string> growth;
    bool zero_fill = false;
    std::optional<std::uint64_t> ring_buffers;
    std::optional<std::string> ring_size;
    std::optional<std::string> pool_initial;
    std::optional<std::string> pool_max;
    std::optional<std::string> bins;
    std::optional<std::uint64_t> bin_blocks;
    TorchOptions torch;
    std::optional<std::string> release_threshold;
};

// The device memory: --capacity, or --memory-fraction of --device-total
// (a real run's cap: --capacity or --memory-fraction alone).
struct CapOptions {
    std::optional<std::string> capacity;
    std::optional<double> memory_fraction;
    std::optional<std::string> device_total;
};

// The grid of torch-caching settings (tune, max-batch).
struct GridOptions {
    std::vector<std::string> sweeps;  // --sweep KNOB=V1,V2,..., repeatable
    bool full_grid = false;           // --full-grid: the default grid as well as --sweep's knobs
    bool all_settings = false;        // --all-settings: the whole ranking in the table
};

// A program run for real, given after -- (record, tune --confirm,
// max-batch): CLI11 never sees it (Command::program).
struct ProgramOptions {
    std::optional<std::uint64_t> max_entries;
    std::vector<std::string> program;
};

// The options of each job: the groups it takes and its own.
struct ReplayOptions {
    InputOptions input;
    StrategyKnobs strategies;
    CapOptions cap;
    std::optional<std::uint64_t> sync_every;
    std::optional<std::string> costs;
    std::optional<std::string> timeline;
    std::uint64_t timeline_points = 1000;
    std::optional<std::string> save_trace;
    std::optional<std::string> plot;
    bool no_chart = false;
    bool execute = false;
};

struct TuneOptions : ProgramOptions {
    InputOptions input;
    TorchOptions torch;
    CapOptions cap;
    GridOptions grid;
    std::optional<std::uint64_t> sync_every;
    std::optional<std::string> costs;
    std::optional<std::string> plot;
    bool confirm = false;                   // --confirm, as max-batch's
    std::optional<std::uint64_t> max_runs;  // --max-runs K: --confirm's real runs, the most settings tried
};

struct RecordOptions : ProgramOptions {
    std::string output;  // -o FILE
    CapOptions cap;      // no --device-total: the real run's cap
    bool python_stacks = false;
};

struct MaxBatchOptions : ProgramOptions {
    std::vector<std::string> batch_traces;  // --batch-trace B=FILE, repeatable
    std::optional<std::string> output;      // -o FILE: the recordings kept
    std::optional<std::string> record_batches;
    bool no_refine = false;
    std::optional<std::string> headroom;
    std::optional<std::uint64_t> max_runs;
    bool confirm = false;
    CapOptions cap;
    TorchOptions torch;
    GridOptions grid;
    std::optional<std::string> costs;
    std::optional<std::string> plot;
};

// The options that tune strategies, and whether each was given. Which
// strategies each tunes is in kStrategies' rows (their `options`): the help
// text and the warning about an option that tunes no selected strategy say so
// from there.
struct StrategyOption {
    const char* name;
    bool (*given)(const StrategyKnobs& o);
};
constexpr StrategyOption kStrategyOptions[] = {
    {"--growth", [](const StrategyKnobs& o) { return o.growth.has_value(); }},
    {"--zero-fill", [](const StrategyKnobs& o) { return o.zero_fill; }},
    {"--ring-buffers", [](const StrategyKnobs& o) { return o.ring_buffers.has_value(); }},
    {"--ring-size", [](const StrategyKnobs& o) { return o.ring_size.has_value(); }},
    {"--pool-initial", [](const StrategyKnobs& o) { return o.pool_initial.has_value(); }},
    {"--pool-max", [](const StrategyKnobs& o) { return o.pool_max.has_value(); }},
    {"--bins", [](const StrategyKnobs& o) { return o.bins.has_value(); }},
    {"--bin-blocks", [](const StrategyKnobs& o) { return o.bin_blocks.has_value(); }},
    {"--max-split-size", [](const StrategyKnobs& o) { return o.torch.max_split_size.has_value(); }},
    {"--max-non-split-rounding", [](const StrategyKnobs& o) { return o.torch.max_non_split_rounding.has_value(); }},
    {"--roundup-power2-divisions", [](const StrategyKnobs& o) { return o.torch.roundup_power2_divisions.has_value(); }},
    {"--release-threshold", [](const StrategyKnobs& o) { return o.release_threshold.has_value(); }},
};

// "pool, binning: initial pool size": the help of a strategy option, led by
// the strategies it tunes.
std::string for_strategies(const char* option, const std::string& help) { return rs::strategies_using(option) + ": " + help; }

// An empty --strategy is refused with its own words before the table's
// validator (whose message for it would read "strategys").
CLI::Validator non_empty(const char* what) {
    return CLI::Validator(
        [what](std::string& value) -> std::string {
            return value.find_first_not_of(" \t") == std::string::npos ? std::string("empty list of ") + what : std::string();
        },
        "");
}

void add_input_options(CLI::App& sub, InputOptions& o) {
    // The recording first (what record -o or torch.cuda.memory._snapshot()
    // wrote): the help lists options as registered, and the built-in
    // workload's parameters are for trying strategies without one.
    auto* trace = sub.add_option("--trace", o.trace, "Replay this trace or recording (- for stdin; a FIFO works)")
                      ->type_name("FILE");
    sub.add_option("--trace-format", o.trace_format, "Trace format (default auto: by its content)")
        ->type_name("FMT")
        ->check(names_validator(rs::kTraceFormats));
    auto* device = add_unsigned_option(sub, "--trace-device", o.trace_device,
                                       "A snapshot's device (default: the only one used)", 0,
                                       1 << 20);
    auto* workload = sub.add_option("--workload", o.workload, "Built-in workload (default dynamic)")
                         ->type_name("NAME")
                         ->check(names_validator(rs::kWorkloads));
    const std::vector<CLI::Option*> parameters = {
        workload,
        add_unsigned_option(sub, "--steps", o.steps, "Workload steps (default 200)",
                            1, std::uint64_t{1} << 40),
        add_unsigned_option(sub, "--seed", o.seed, "Seed of its random choices (default 1)", 0, kMaxU64),
        add_value_option(sub, "--change-rate", o.change_rate, "dynamic: chance the batch changes (default 0.1)",
                         ValueKind::fraction, 0.0, 1.0),
        sub.add_option("--batch", o.batch, "Batch N, or MIN..MAX for dynamic (default 1..32)")->type_name("N|MIN..MAX"),
        add_unsigned_option(sub, "--layers", o.layers, "Layers of the model (default 8)", 1, 1000),
        sub.add_option("--sample-bytes", o.sample_bytes, "Activations per sample, layer 1 (default 768KiB)")
            ->type_name("SIZE")
            ->check(size_validator(false)),
        add_unsigned_option(sub, "--max-detections", o.max_detections, "detector: 0..N detections per image (default 100)", 0,
                            1000000),
        sub.add_option("--prompt", o.prompt, "llm-decode: prompt tokens (default 32..512)")->type_name("MIN..MAX"),
        sub.add_option("--tokens", o.tokens, "llm-decode: tokens generated (default 16..256)")->type_name("MIN..MAX"),
        add_unsigned_option(sub, "--streams", o.streams, "Run steps on N streams in turn (default 1)", 1, 1024),
    };
    for (CLI::Option* p : parameters) {
        trace->excludes(p);
        device->excludes(p);
    }
}

// `lead`: the strategies they tune, in replay's help; tune and max-batch
// replay torch-caching alone.
void add_torch_options(CLI::App& sub, TorchOptions& o, bool lead) {
    auto help = [lead](const char* option, const std::string& knob, const std::string& text) {
        return lead ? for_strategies(option, knob + text) : knob + text;
    };
    sub.add_option("--max-split-size", o.max_split_size,
                   help("--max-split-size", "max_split_size ", "in bytes, not MiB (default none)"))
        ->type_name("SIZE[B]")
        ->check(size_validator(false));
    sub.add_option("--max-non-split-rounding", o.max_non_split_rounding, help("--max-non-split-rounding", "max_non_split_rounding ", "(default 20MiB)"))
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub.add_option("--roundup-power2-divisions", o.roundup_power2_divisions,
                   help("--roundup-power2-divisions", "", "N or [MIB:N,...,>:N] (default off)"))
        ->type_name("SPEC");
}

void add_strategy_options(CLI::App& sub, StrategyKnobs& o) {
    sub.add_option("--strategy", o.strategy, "Strategies: NAME[,NAME...] or all (default all)")
        ->type_name("LIST")
        ->check(non_empty("strategies"))
        ->check(names_validator(rs::kStrategies, true));
    // The rules alloc-test churn --growth takes: a named one, any SIZE or xF.
    sub.add_option("--growth", o.growth,
                   for_strategies("--growth", "exact, SIZE or xF (default exact)"))
        ->type_name("RULE")
        ->check(parsing_validator([](const std::string& value) { parse_growth_policy(value); }, ""));
    sub.add_flag("--zero-fill", o.zero_fill,
                 for_strategies("--zero-fill", "cudaMemset every new buffer"));
    add_unsigned_option(sub, "--ring-buffers", o.ring_buffers, for_strategies("--ring-buffers", "number of buffers (default 4)"), 1,
                        1 << 20);
    sub.add_option("--ring-size", o.ring_size, for_strategies("--ring-size", "buffer size (default: the largest request)"))
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub.add_option("--pool-initial", o.pool_initial, for_strategies("--pool-initial", "initial size (default 0)"))
        ->type_name("SIZE");
    sub.add_option("--pool-max", o.pool_max, for_strategies("--pool-max", "maximum size (default: none)"))
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub.add_option("--bins", o.bins, for_strategies("--bins", "bin sizes (default 256KiB..4MiB)"))
        ->type_name("RANGE")
        ->check(range_validator());
    add_unsigned_option(sub, "--bin-blocks", o.bin_blocks,
                        for_strategies("--bin-blocks", "blocks per bin chunk (default 128)"), 1, 1 << 20);
    add_torch_options(sub, o.torch, true);
    sub.add_option("--release-threshold", o.release_threshold,
                   for_strategies("--release-threshold", "kept across syncs (default 0)"))
        ->type_name("SIZE");
}

// `replayed`: the memory of a replay, which --device-total may give
// (replay, tune, max-batch); else the cap of a real run (record).
void add_cap_options(CLI::App& sub, CapOptions& o, bool replayed) {
    auto* capacity = sub.add_option("--capacity", o.capacity,
                                    replayed ? "Device memory to fit in (default unlimited)" : "Cap the program's GPU memory")
                         ->type_name("SIZE")
                         ->check(size_validator(false));
    add_value_option(sub, "--memory-fraction", o.memory_fraction,
                     replayed ? "Capacity as a share of --device-total" : "Cap it at this share of the GPU's memory",
                     ValueKind::fraction, 0.0, 1.0)
        ->excludes(capacity);
    if (!replayed) return;
    sub.add_option("--device-total", o.device_total, "The device's total memory, for --memory-fraction")
        ->type_name("SIZE")
        ->check(size_validator(false));
}

void add_sync_every_option(CLI::App& sub, std::optional<std::uint64_t>& sync_every) {
    add_unsigned_option(sub, "--sync-every", sync_every, "Also synchronize every N requests",
                        1, kMaxU64);
}

void add_costs_option(CLI::App& sub, std::optional<std::string>& costs) {
    sub.add_option("--costs", costs, "Cost table (alloc-test latency --save-costs)")->type_name("FILE");
}

// `tune`: the default grid is tune's own; max-batch's is the recorded
// setting and expandable segments.
void add_grid_options(CLI::App& sub, GridOptions& o, bool tune) {
    sub.add_option("--sweep", o.sweeps, tune ? "KNOB=V1,V2,...: values of one knob; repeatable" : "KNOB=V1,V2,...: settings to search; repeatable")
        ->type_name("KNOB=VALUES")
        ->check(parsing_validator([](const std::string& v) { rs::parse_sweep(v); }, ""));
    sub.add_flag("--full-grid", o.full_grid, tune ? "With --sweep: also the default grid's other knobs" : "Search the default grid of every knob");
    sub.add_flag("--all-settings", o.all_settings, "The table lists every setting (default: best 10)");
}

void add_max_entries_option(CLI::App& sub, ProgramOptions& o) {
    add_unsigned_option(sub, "--max-entries", o.max_entries,
                        "Most events a recording keeps (default: all)", 1, kMaxU64);
}

void add_program_option(CLI::App& sub, ProgramOptions& o, const std::string& help) {
    sub.add_option("command", o.program, help + ", after --")->type_name("CMD");
}

void add_footer(CLI::App& sub) { sub.footer("Sizes take units (4KiB, 1.5GiB). Details: gpumem(1), REUSE-SIM."); }

void add_replay_options(CLI::App& sub, ReplayOptions& o) {
    add_footer(sub);
    add_input_options(sub, o.input);
    add_strategy_options(sub, o.strategies);
    add_cap_options(sub, o.cap, true);
    add_sync_every_option(sub, o.sync_every);
    add_costs_option(sub, o.costs);
    sub.add_option("--timeline", o.timeline, "Write reserved bytes over the run as CSV")->type_name("FILE");
    add_unsigned_option(sub, "--timeline-points", o.timeline_points, "Points kept for --timeline (default 1000)", 2, std::uint64_t{1} << 24);
    sub.add_option("--save-trace", o.save_trace, "Also write the input as a gpumem trace (CSV)")->type_name("FILE");
    sub.add_flag("--no-chart", o.no_chart, "Table mode: no chart of reserved bytes");
    add_plot_option(sub, o.plot, "Draw the run as an SVG picture");
    sub.add_flag("--execute", o.execute,
                 "Also replay for real on the GPU (-d) and compare");
}

void add_tune_options(CLI::App& sub, TuneOptions& o) {
    add_footer(sub);
    add_input_options(sub, o.input);
    add_grid_options(sub, o.grid, true);
    add_torch_options(sub, o.torch, false);
    add_cap_options(sub, o.cap, true);
    add_sync_every_option(sub, o.sync_every);
    add_costs_option(sub, o.costs);
    add_plot_option(sub, o.plot, "Draw the best settings' replays as an SVG picture");
    // A flag, as max-batch's: how many settings it may try is --max-runs,
    // as max-batch's bound on its real runs is.
    sub.add_flag("--confirm", o.confirm, "Rerun the program for real under the best setting");
    add_unsigned_option(sub, "--max-runs", o.max_runs,
                        "Most real runs of --confirm, the next setting after an OOM (default 1)", 1, rs::kMaxGridPoints);
    add_max_entries_option(sub, o);
    add_program_option(sub, o, "The program --confirm runs");
}

void add_record_options(CLI::App& sub, RecordOptions& o) {
    add_footer(sub);
    sub.add_option("-o,--output", o.output,
                   "The snapshot to write (and FILE.stats.json)")
        ->type_name("FILE")
        ->required();
    add_cap_options(sub, o.cap, false);
    add_max_entries_option(sub, o);
    sub.add_flag("--python-stacks", o.python_stacks,
                 "Also record Python stacks (for memory_viz)");
    add_program_option(sub, o, "The program to record");
}

void add_max_batch_options(CLI::App& sub, MaxBatchOptions& o) {
    add_footer(sub);
    sub.add_option("--batch-trace", o.batch_traces,
                   "A recording at batch B; two at least")
        ->type_name("B=FILE");
    sub.add_option("-o,--output", o.output, "Keep the recordings made, as FILE with .bsN")
        ->type_name("FILE");
    sub.add_option("--record-batches", o.record_batches,
                   "Batches recorded first (default 4,8)")
        ->type_name("LIST");
    sub.add_flag("--no-refine", o.no_refine,
                 "Record only at --record-batches; no checks");
    add_unsigned_option(sub, "--max-runs", o.max_runs,
                        "Most real runs of the program (default " + std::to_string(MaxBatchRequest::kDefaultMaxRuns) + ")",
                        2, 1000);
    sub.add_option("--headroom", o.headroom, "Keep the modelled peak this far below the cap")
        ->type_name("SIZE");
    sub.add_flag("--confirm", o.confirm,
                 "Also run at the answer and the next batch");
    add_cap_options(sub, o.cap, true);
    add_grid_options(sub, o.grid, false);
    add_torch_options(sub, o.torch, false);
    add_costs_option(sub, o.costs);
    add_plot_option(sub, o.plot, "Draw peak reserved against the batch (SVG)");
    add_max_entries_option(sub, o);
    add_program_option(sub, o, "The program, {batch} where its batch goes");
}

// "N" or "A..B" of positive integers.
std::pair<std::uint64_t, std::uint64_t> parse_count_range(const std::string& text, const char* option) {
    const auto dots = text.find("..");
    auto number = [&](const std::string& s) {
        try {
            return parse_unsigned(s, 1ULL << 40);
        } catch (const UsageError&) {
            throw UsageError(std::string(option) + " '" + text + "': expected N or MIN..MAX");
        }
    };
    if (dots == std::string::npos) {
        const std::uint64_t n = number(text);
        return {n, n};
    }
    return {number(text.substr(0, dots)), number(text.substr(dots + 2))};
}

// A FILE option given as '' would otherwise mean "not given".
std::optional<std::string> checked_path(const std::optional<std::string>& path, const char* option) {
    if (path && path->empty()) throw UsageError(std::string(option) + ": empty file name");
    return path;
}

// The trace must exist and not be a directory; it is not opened here: a
// FIFO's open waits for its writer, and it can be read only once.
void check_trace_path(const std::string& path) {
    if (path.empty()) throw UsageError("--trace: empty file name (give a file, or - for standard input)");
    if (path == "-") return;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw UsageError(path + ": cannot open trace: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw UsageError(path + ": cannot read a trace from a directory");
}

ReuseSimInput check_input(const InputOptions& o) {
    ReuseSimInput in;
    if (o.trace) {
        check_trace_path(*o.trace);
        in.trace = o.trace;
        in.trace_format = rs::kTraceFormats.parse(o.trace_format);
        if (o.trace_device) {
            if (in.trace_format != rs::TraceFormat::automatic && in.trace_format != rs::TraceFormat::snapshot)
                throw UsageError("--trace-device chooses a device of a PyTorch snapshot, not of a " + o.trace_format + " trace");
            in.trace_device = static_cast<std::uint32_t>(*o.trace_device);
        }
        return in;
    }
    if (o.trace_device) throw UsageError("--trace-device needs --trace (a PyTorch snapshot)");
    rs::WorkloadOptions& w = in.workload;
    w.name = o.workload.value_or("dynamic");
    w.steps = o.steps;
    w.seed = o.seed;
    w.change_rate = o.change_rate;
    std::tie(w.batch_min, w.batch_max) = parse_count_range(o.batch, "--batch");
    w.layers = static_cast<std::uint32_t>(o.layers);
    w.sample_bytes = parse_size(o.sample_bytes);
    w.max_detections = static_cast<std::uint32_t>(o.max_detections);
    std::tie(w.prompt_min, w.prompt_max) = parse_count_range(o.prompt, "--prompt");
    std::tie(w.tokens_min, w.tokens_max) = parse_count_range(o.tokens, "--tokens");
    w.streams = static_cast<std::uint32_t>(o.streams);
    rs::check_workload_options(w);
    return in;
}

// PyTorch refuses max_split_size_mb and max_non_split_rounding_mb below kLargeBuffer (20 MiB).
std::uint64_t torch_size(const std::string& text, const char* option) {
    const std::uint64_t bytes = parse_size(text);
    if (bytes < (20ULL << 20)) {
        // PyTorch's _mb keys are in MiB: a bare number here is bytes, so say which was read.
        const bool bare = text.find_first_not_of("0123456789") == std::string::npos;
        throw UsageError(std::string(option) + " '" + text + "' is " + format_bytes(bytes) + ": it must be at least 20MiB, as PyTorch requires" +
                         (bare ? " (a bare number is bytes; PyTorch's _mb value " + text + " is " + text + "MiB)" : std::string()));
    }
    return bytes;
}

// The torch-caching settings given as flags: they override a snapshot's.
void check_torch_options(const TorchOptions& o, ReuseSimRequest& q) {
    rs::StrategyOptions& s = q.strategy_options;
    if (o.max_split_size) s.torch.max_split_size = torch_size(*o.max_split_size, "--max-split-size");
    // "unlimited" is PyTorch's default and can be asked for, also over a snapshot's limit.
    if (o.max_non_split_rounding) s.torch.max_non_split_rounding = torch_size(*o.max_non_split_rounding, "--max-non-split-rounding");
    if (o.roundup_power2_divisions) s.torch.roundup_power2_divisions = rs::parse_roundup_power2_divisions(*o.roundup_power2_divisions);
    q.torch_flags.max_split_size = o.max_split_size.has_value();
    q.torch_flags.roundup_power2_divisions = o.roundup_power2_divisions.has_value();
}

void check_strategy_options(const StrategyKnobs& o, ReuseSimRequest& q) {
    rs::StrategyOptions& s = q.strategy_options;
    if (o.growth) s.growth = parse_growth_policy(*o.growth);
    s.zero_fill = o.zero_fill;
    if (o.ring_buffers) s.ring_buffers = static_cast<std::uint32_t>(*o.ring_buffers);
    if (o.ring_size) s.ring_size = parse_size(*o.ring_size);
    if (o.pool_initial) s.pool_initial = parse_size(*o.pool_initial, true);
    if (o.pool_max) s.pool_maximum = parse_size(*o.pool_max);
    if (s.pool_maximum != rs::kUnlimited && s.pool_initial > s.pool_maximum) throw UsageError("--pool-initial exceeds --pool-max");
    if (o.bins) s.bins = parse_size_range(*o.bins, 64);
    if (o.bin_blocks) s.bin_blocks = *o.bin_blocks;
    check_torch_options(o.torch, q);
    if (o.release_threshold) s.release_threshold = parse_size(*o.release_threshold, true);
}

std::vector<const Named<rs::StrategySpec>*> strategy_rows(const std::string& list) {
    std::vector<const Named<rs::StrategySpec>*> rows;
    for (const rs::StrategySpec& spec : rs::kStrategies.parse_list(list)) rows.push_back(rs::kStrategies.find_value(spec));
    return rows;
}

// A strategy option given for strategies none of which is selected is
// ignored, with a warning: scripts that pass it for every run keep working.
std::vector<std::string> ignored_option_warnings(const StrategyKnobs& o, const std::vector<const Named<rs::StrategySpec>*>& selected) {
    std::vector<std::string> warnings;
    for (const StrategyOption& option : kStrategyOptions) {
        if (!option.given(o)) continue;
        bool used = false;
        for (const Named<rs::StrategySpec>* row : selected) used = used || rs::uses_option(row->value, option.name);
        if (used) continue;
        const std::string users = rs::strategies_using(option.name);
        warnings.push_back(std::string(option.name) + " tunes " + users +
                           (users.find(',') == std::string::npos ? ", which is not selected" : ", none of which is selected") +
                           ": ignored");
    }
    return warnings;
}

void check_outputs(const ReplayOptions& o, const Globals& globals, ReuseSimRequest& q) {
    q.costs = checked_path(o.costs, "--costs");
    q.timeline = checked_path(o.timeline, "--timeline");
    q.save_trace = checked_path(o.save_trace, "--save-trace");
    if (q.save_trace && o.input.trace && *q.save_trace == *o.input.trace) throw UsageError("--save-trace would overwrite the --trace it reads");
    q.timeline_points = o.timeline_points;
    q.chart = globals.output.format == Format::table && !o.no_chart;
    q.chart_style.unicode = globals.output.screen.stdout_utf8;
    if (o.execute) {
        q.execute_on = single_device_spec(globals, "--execute");
    } else if (globals.device) {
        throw UsageError("-d/--device selects the GPU for --execute; reuse-sim replay alone uses no GPU");
    }
}

// A GPU's memory given as a bare number under 1 MiB: a size without a unit
// is bytes, as everywhere, but no GPU is that small, so the unit was most
// likely left out: "--capacity 40 is 40 B (a size without a unit is bytes):
// did you mean 40GiB?" (MiB for a larger number, as nvidia-smi counts).
std::vector<std::string> bare_capacity_warnings(const CapOptions& o) {
    std::vector<std::string> warnings;
    const std::pair<const char*, const std::optional<std::string>*> given[] = {{"--capacity", &o.capacity}, {"--device-total", &o.device_total}};
    for (const auto& [option, text] : given) {
        if (!*text || (*text)->empty() || (*text)->find_first_not_of("0123456789") != std::string::npos) continue;
        const std::uint64_t bytes = parse_size(**text);
        if (bytes >= (1ULL << 20)) continue;
        warnings.push_back(std::string(option) + " " + **text + " is " + **text + " B (a size without a unit is bytes): did you mean " +
                           **text + (bytes <= 300 ? "GiB" : "MiB") + "?");
    }
    return warnings;
}

// --capacity, or --memory-fraction of --device-total as PyTorch computes its
// allowed maximum (DeviceCachingAllocator::setMemoryFraction). A snapshot
// does not record the device's total memory, so it must be given.
std::uint64_t check_capacity(const CapOptions& o) {
    // Checked first: beside --capacity, --device-total would be ignored unsaid.
    if (o.device_total && !o.memory_fraction)
        throw UsageError("--device-total is used only with --memory-fraction (the capacity is that share of it)" +
                         std::string(o.capacity ? "; --capacity gives the capacity itself" : ""));
    if (o.capacity) return parse_size(*o.capacity);
    if (!o.memory_fraction) return rs::kUnlimited;
    if (!o.device_total)
        throw UsageError("--memory-fraction needs --device-total (the recording GPU's total memory, as torch.cuda.mem_get_info()[1] "
                         "gives it; a snapshot does not record it)");
    if (*o.memory_fraction <= 0.0) throw UsageError("--memory-fraction must be above 0");
    const std::uint64_t capacity = static_cast<std::uint64_t>(*o.memory_fraction * static_cast<double>(parse_size(*o.device_total)));
    if (capacity == 0) throw UsageError("--memory-fraction of --device-total is less than a byte");
    return capacity;
}

// A trace that reuse-sim record wrote comes with its statistics (FILE.stats.json):
// the cap in force when the program ran, gpumem's or the program's own
// set_per_process_memory_fraction, is the replay's unless --capacity or
// --memory-fraction says otherwise. Read here, before the grid is built,
// since a cap decides the grid (garbage collection is tried only under one).
std::vector<std::string> check_recording(const CapOptions& o, ReuseSimRequest& q) {
    std::vector<std::string> warnings;
    if (!q.input.trace || *q.input.trace == "-") return warnings;
    struct stat st {};
    if (::stat(q.input.trace->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return warnings;
    q.recording = read_recording_stats(stats_file_name(*q.input.trace));
    if (q.recording && !q.recording->cap && q.recording->device_total && q.recording->ran_out_of_memory && !o.capacity &&
        !o.memory_fraction) {
        // Uncapped, it ran out of the device's own memory: an unlimited replay would grant what the device refused.
        q.capacity = *q.recording->device_total;
        warnings.push_back("the recording ran without a cap and ran out of the device's memory: replayed under the device's total, " +
                           exact_size_text(q.capacity) + " (" + q.recording->path + "; the program had somewhat less: pass --capacity)");
    }
    if (!q.recording || !q.recording->cap) return warnings;
    const std::uint64_t recorded = q.recording->cap->call.allowed_memory_maximum;
    if (!o.capacity && !o.memory_fraction) {
        q.capacity = recorded;
        q.capacity_from_recording = true;
    } else if (q.capacity != recorded) {
        warnings.push_back("the replay's capacity " + size_in_words(q.capacity) + " is not the cap the recording ran under, " +
                           size_in_words(recorded) + " (" + q.recording->path + "); leave out --capacity and --memory-fraction " +
                           "to replay under the recording's");
    }
    if (q.recording->cap->program_changes > 0)
        warnings.push_back("the program changed its own cap " + std::to_string(q.recording->cap->program_changes) +
                             " time(s) during the run (set_per_process_memory_fraction); the replay uses the last one, " +
                             size_in_words(recorded) + ", for the whole run");
    return warnings;
}

// The grid of tune, or of max-batch given --sweep or --full-grid.
TuneRequest check_grid(const GridOptions& o, std::uint64_t capacity, bool tune) {
    TuneRequest grid;
    grid.axes = rs::grid_axes(o.sweeps, o.full_grid || (tune && o.sweeps.empty()), capacity != rs::kUnlimited);
    grid.all_settings = o.all_settings;
    return grid;
}

// The files a program's command line names: each word, and what follows
// '=' in --opt=FILE.
std::vector<std::string> named_paths(const std::vector<std::string>& program) {
    std::vector<std::string> paths;
    for (const std::string& word : program) {
        paths.push_back(word);
        if (const std::size_t eq = word.find('='); eq != std::string::npos) paths.push_back(word.substr(eq + 1));
    }
    // The program itself, as execvp finds it on PATH.
    if (!program.empty())
        for (std::string& candidate : process::path_candidates(program.front())) paths.push_back(std::move(candidate));
    return paths;
}

// A file a recording writes (the snapshot or its statistics) replaces only a
// regular file: the hook renames over it, which as root would turn /dev/null
// into a file, and nothing the program runs from or is given: `record -o
// prog.py -- python3 prog.py` would lose the program.
void check_record_target(const std::string& path, const std::string& shown, const std::vector<std::string>& program,
                         const std::string& option) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;  // a new file
    std::string refusal = option + " " + shown + ": ";
    if (!S_ISREG(st.st_mode)) {
        refusal += cli::file_kind_in_words(st.st_mode);
        refusal += "; " + option + " writes a new file or replaces a regular one";
        throw UsageError(refusal);
    }
    for (const std::string& named : named_paths(program)) {
        struct stat other {};
        if (named.empty() || ::stat(named.c_str(), &other) != 0 || other.st_dev != st.st_dev || other.st_ino != st.st_ino) continue;
        refusal += "the program's own file ('";
        refusal += named;
        refusal += "' on its command line); the recording would replace it";
        throw UsageError(refusal);
    }
}

// FILE as an absolute path (the program may change directory), in a
// directory that exists; the file itself is written by the program's hook.
std::string check_record_file(const std::string& file, const std::vector<std::string>& program, const std::string& option = "--output") {
    if (file.empty()) throw UsageError(option + ": empty file name");
    std::string absolute = file.front() == '/' ? file : [&] {
        std::string cwd(4096, '\0');
        if (::getcwd(cwd.data(), cwd.size()) == nullptr) throw UsageError(option + ": cannot read the working directory: " + std::strerror(errno));
        return std::string(cwd.c_str()) + "/" + file;
    }();
    struct stat st {};
    if (::stat(absolute.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw UsageError(file + ": " + option + " writes a file, not a directory");
    const std::size_t slash = absolute.rfind('/');
    const std::string dir = slash == 0 ? "/" : absolute.substr(0, slash);
    if (::access(dir.c_str(), W_OK) != 0) throw UsageError(file + ": cannot write there: " + std::strerror(errno));
    // /proc and /sys take no new files: the program would run, then its
    // recording fail.
    struct statfs dir_fs {};
    constexpr long kProcMagic = 0x9fa0, kSysfsMagic = 0x62656572;
    if (::statfs(dir.c_str(), &dir_fs) == 0 &&
        (static_cast<long>(dir_fs.f_type) == kProcMagic || static_cast<long>(dir_fs.f_type) == kSysfsMagic))
        throw UsageError(option + " " + file + ": " + dir + " is a kernel file system (/proc, /sys), not a place for files");
    check_record_target(absolute, file, program, option);
    check_record_target(stats_file_name(absolute), stats_file_name(file), program, option);
    return absolute;
}

// The cap of a real run: --capacity, or --memory-fraction as given.
RecordSettings check_real_run_cap(const CapOptions& o, const ProgramOptions& p) {
    RecordSettings s;
    s.max_entries = p.max_entries;
    if (o.capacity) s.capacity = parse_size(*o.capacity);
    if (o.memory_fraction && *o.memory_fraction <= 0.0) throw UsageError("--memory-fraction must be above 0");
    s.memory_fraction = o.memory_fraction;
    return s;
}

// --plot naming a file the run's recordings take: max-batch -o FILE's
// (FILE.bsN...) or tune --confirm's beside the trace (TRACE.confirmN...),
// their statistics too, in the same folder.
void check_plot_not_a_recording(const std::string& plot, const ReuseSimRequest& q) {
    std::string recordings, how;
    const auto own_name = [](const std::string& path) { return path.substr(path.rfind('/') + 1); };
    if (q.max_batch && q.max_batch->keep) {
        recordings = *q.max_batch->keep;
        how = "-o keeps the recordings as " + tagged_file_name(own_name(recordings), "bsN");
    } else if (q.confirm && q.input.trace) {
        recordings = confirm_file_name(*q.input.trace, 1);
        std::string example = own_name(recordings);
        example.replace(example.rfind(".confirm1") + 8, 1, "N");
        how = "--confirm keeps its runs' recordings as " + example;
    } else {
        return;
    }
    const auto folder = [](const std::string& path) {
        const std::size_t slash = path.rfind('/');
        return slash == std::string::npos ? std::string(".") : slash == 0 ? std::string("/") : path.substr(0, slash);
    };
    struct stat a {}, b {};
    if (::stat(folder(plot).c_str(), &a) != 0 || ::stat(folder(recordings).c_str(), &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return;
    if (!recording_file_of(recordings, plot))
        return;
    throw UsageError("--plot '" + plot + "': a name this run's recordings take (" + how +
                     ", each with its .stats.json); the picture and a recording would replace each other");
}

// --plot FILE.svg, checked before anything is read or run: a file the run
// may write, and none it reads (the input, the cost table, the recordings),
// nor the program's own, nor one its recordings take.
std::optional<std::string> check_plot(const std::optional<std::string>& plot, const std::vector<std::string>& program,
                                      const std::optional<std::string>& trace, const std::optional<std::string>& costs,
                                      ReuseSimRequest& q) {
    if (!plot) return std::nullopt;
    check_plot_not_a_recording(*plot, q);
    std::vector<std::string> inputs = named_paths(program);
    for (const std::optional<std::string>& file : {trace, costs})
        if (file) inputs.push_back(*file);
    if (q.max_batch)
        for (const auto& batch_trace : q.max_batch->traces) inputs.push_back(batch_trace.second);
    check_plot_file(*plot, inputs);
    if (trace && *trace != "-") q.recorded_device = recorded_device_name(stats_file_name(*trace));
    return plot;
}

// reuse-sim replay: the strategies compared on one input.
ReuseSimRequest check_replay(const ReplayOptions& o, const Globals& globals) {
    ReuseSimRequest q;
    q.command = "reuse-sim replay";
    q.input = check_input(o.input);
    q.strategies = strategy_rows(o.strategies.strategy);
    check_strategy_options(o.strategies, q);
    q.warnings = ignored_option_warnings(o.strategies, q.strategies);
    q.sync_every = o.sync_every.value_or(0);
    q.capacity = check_capacity(o.cap);
    for (std::string& warning : bare_capacity_warnings(o.cap)) q.warnings.push_back(std::move(warning));
    const std::vector<std::string> recording_warnings = check_recording(o.cap, q);
    check_outputs(o, globals, q);
    q.plot = check_plot(o.plot, {}, o.input.trace, o.costs, q);
    q.warnings.insert(q.warnings.end(), recording_warnings.begin(), recording_warnings.end());
    return q;
}

// tune --confirm [--max-runs K] -- CMD: real runs of the program after the ranking. It
// belongs to tune, whose ranking it runs and whose grid its reruns' own
// recordings are tuned under.
std::optional<ConfirmRequest> check_confirm(const TuneOptions& o, const ReuseSimRequest& q) {
    if (!o.confirm) {
        if (o.max_entries) throw UsageError("--max-entries goes with --confirm (the recordings of its real runs)");
        if (o.max_runs) throw UsageError("--max-runs bounds --confirm's real runs: give --confirm");
        if (!o.program.empty()) throw UsageError("a program after -- is run by --confirm: give --confirm");
        return std::nullopt;
    }
    if (!q.input.trace) throw UsageError("--confirm needs --trace: the recording of the program it reruns");
    if (o.program.empty()) throw UsageError("--confirm needs the program to rerun after --: ... --confirm -- CMD [ARGS...]");
    ConfirmRequest confirm{static_cast<std::size_t>(o.max_runs.value_or(1)), o.program, check_real_run_cap(o.cap, o), DeviceSpec{}};
    confirm.device = parse_device_spec("0");
    // Each run's recording is kept beside the trace (standard input's: in
    // the current directory), new or replacing a regular file, as record's.
    for (std::size_t run = 1; run <= confirm.candidates; ++run) {
        const std::string file = confirm_file_name(*q.input.trace, run);
        if (run == 1) {
            const std::size_t slash = file.rfind('/');
            const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
            if (::access(dir.c_str(), W_OK) != 0) {
                std::string refusal = "--confirm keeps each run's recording in ";
                refusal += dir;
                refusal += " (";
                refusal += file;
                refusal += ", ...): cannot write there: ";
                refusal += std::strerror(errno);
                throw UsageError(refusal);
            }
        }
        check_record_target(file, file, o.program, "--confirm");
        check_record_target(stats_file_name(file), stats_file_name(file), o.program, "--confirm");
    }
    return confirm;
}

// reuse-sim tune: torch-caching replayed under a grid of settings, each a
// lane of one replay, ranked.
ReuseSimRequest check_tune(const TuneOptions& o, const Globals& /*globals*/) {
    ReuseSimRequest q;
    q.command = "reuse-sim tune";
    q.input = check_input(o.input);
    q.strategies = {&rs::kStrategies.row("torch-caching")};
    check_torch_options(o.torch, q);
    q.sync_every = o.sync_every.value_or(0);
    q.capacity = check_capacity(o.cap);
    q.warnings = bare_capacity_warnings(o.cap);
    const std::vector<std::string> recording_warnings = check_recording(o.cap, q);
    q.costs = checked_path(o.costs, "--costs");
    q.chart = false;
    q.tune = check_grid(o.grid, q.capacity, true);
    q.confirm = check_confirm(o, q);
    q.plot = check_plot(o.plot, o.program, o.input.trace, o.costs, q);
    q.warnings.insert(q.warnings.end(), recording_warnings.begin(), recording_warnings.end());
    return q;
}

// reuse-sim record: runs a program and records it, nothing else.
ReuseSimRequest check_record(const RecordOptions& o, const Globals& /*globals*/) {
    ReuseSimRequest q;
    q.command = "reuse-sim record";
    if (o.program.empty()) throw UsageError("reuse-sim record needs the program to run after --: gpumem reuse-sim record -o FILE -- CMD [ARGS...]");
    RecordRequest record{check_real_run_cap(o.cap, o), o.program};
    q.warnings = bare_capacity_warnings(o.cap);
    record.settings.file = check_record_file(o.output, o.program);
    record.settings.python_stacks = o.python_stacks;
    q.record = std::move(record);
    return q;
}

// --batch-trace B=FILE: the batch, a positive integer, and a file that exists.
std::pair<std::uint64_t, std::string> batch_trace(const std::string& text) {
    const std::size_t eq = text.find('=');
    const std::string form = "--batch-trace '" + text + "': expected B=FILE, the batch the recording ran at and its file (8=run.bs8.pickle)";
    if (eq == std::string::npos || eq == 0) throw UsageError(form);
    std::uint64_t batch = 0;
    try {
        batch = parse_unsigned(text.substr(0, eq), std::uint64_t{1} << 40);
    } catch (const UsageError&) {
        throw UsageError(form);
    }
    if (batch == 0) throw UsageError("--batch-trace '" + text + "': the batch must be at least 1");
    const std::string file = text.substr(eq + 1);
    if (file.empty()) throw UsageError("--batch-trace '" + text + "': empty file name");
    return {batch, file};
}

// --record-batches B1,B2[,...]: two distinct positive batches at least, ascending.
std::vector<std::uint64_t> record_batches(const std::string& text) {
    std::vector<std::uint64_t> batches;
    for (std::string_view word : split(text, ',')) {
        try {
            batches.push_back(parse_unsigned(std::string(word), std::uint64_t{1} << 40));
        } catch (const UsageError&) {
            throw UsageError("--record-batches '" + text + "': expected batches B1,B2[,...], positive integers");
        }
        if (batches.back() == 0) throw UsageError("--record-batches '" + text + "': a batch must be at least 1");
    }
    std::sort(batches.begin(), batches.end());
    if (std::adjacent_find(batches.begin(), batches.end()) != batches.end())
        throw UsageError("--record-batches '" + text + "': batch " + std::to_string(*std::adjacent_find(batches.begin(), batches.end())) +
                         " given twice");
    if (batches.size() < 2) throw UsageError("--record-batches '" + text + "': the model needs two batches at least");
    return batches;
}

// The recordings (--batch-trace) or the program that makes them, checked
// whole before any file is read or anything runs.
MaxBatchRequest check_max_batch_input(const MaxBatchOptions& o) {
    MaxBatchRequest m;
    if (!o.batch_traces.empty() && !o.program.empty())
        throw UsageError("max-batch reads recordings (--batch-trace) or records the program after --, not both");
    if (o.batch_traces.empty() && o.program.empty())
        throw UsageError("max-batch needs recordings at two batches (--batch-trace B=FILE, twice) or the program to record after --: "
                         "gpumem reuse-sim max-batch --capacity SIZE -- CMD ... {batch} ...");
    for (const std::string& text : o.batch_traces) {
        m.traces.push_back(batch_trace(text));
        for (std::size_t i = 0; i + 1 < m.traces.size(); ++i)
            if (m.traces[i].first == m.traces.back().first)
                throw UsageError("--batch-trace: batch " + std::to_string(m.traces.back().first) + " given twice (" + m.traces[i].second +
                                 ", " + m.traces.back().second + ")");
    }
    if (!m.traces.empty() && m.traces.size() < 2)
        throw UsageError("max-batch needs recordings at two batches at least: give --batch-trace B=FILE again (one given)");
    for (const auto& [batch, file] : m.traces) {
        if (file == "-") throw UsageError("--batch-trace " + std::to_string(batch) + "=-: max-batch reads files, not standard input");
        struct stat st {};
        if (::stat(file.c_str(), &st) != 0) throw UsageError(file + ": cannot open trace: " + std::strerror(errno));
        if (S_ISDIR(st.st_mode)) throw UsageError(file + ": cannot read a trace from a directory");
    }
    if (!m.traces.empty()) {
        if (o.output) throw UsageError("--output keeps the recordings max-batch makes of the program after --; --batch-trace gives them made");
        if (o.record_batches) throw UsageError("--record-batches chooses the batches max-batch records the program at: give the program after --");
        if (o.no_refine) throw UsageError("--no-refine: max-batch records again only the program after --; --batch-trace gives every recording");
        if (o.confirm) throw UsageError("--confirm runs the program at the answer and the next batch: give the program after -- (with {batch})");
        if (o.max_entries) throw UsageError("--max-entries goes with the program max-batch records (after --)");
        if (o.max_runs) throw UsageError("--max-runs bounds the runs of the program after --; --batch-trace gives every recording");
        return m;
    }
    m.program = o.program;
    if (std::none_of(m.program.begin(), m.program.end(), [](const std::string& w) { return w.find(kBatchPlaceholder) != std::string::npos; }))
        throw UsageError("max-batch: the program after -- has no {batch}: write it where the batch size goes (-- python train.py --bs "
                         "{batch}), gpumem runs it at several batches");
    m.record_batches = o.record_batches ? record_batches(*o.record_batches) : std::vector<std::uint64_t>{4, 8};
    m.refine = !o.no_refine;
    if (o.max_runs) m.max_runs = static_cast<unsigned>(*o.max_runs);
    if (m.max_runs < m.record_batches.size())
        throw UsageError("--max-runs " + std::to_string(m.max_runs) + " is fewer than the " + std::to_string(m.record_batches.size()) +
                         " batches of --record-batches: the first recordings alone need that many runs");
    m.settings = check_real_run_cap(o.cap, o);
    m.confirm = o.confirm;
    if (o.output) {
        if (o.output->empty()) throw UsageError("--output: empty file name");
        for (std::uint64_t batch : m.record_batches) (void)check_record_file(batch_file_name(*o.output, batch), m.program, "--output");
        m.keep = check_record_file(*o.output, m.program, "--output");
    }
    return m;
}

// reuse-sim max-batch: recordings at several batches instead of one input;
// the grid of --sweep or --full-grid, else the recorded setting and
// expandable segments.
ReuseSimRequest check_max_batch(const MaxBatchOptions& o, const Globals& /*globals*/) {
    ReuseSimRequest q;
    q.command = "reuse-sim max-batch";
    q.max_batch = check_max_batch_input(o);
    q.strategies = {&rs::kStrategies.row("torch-caching")};
    check_torch_options(o.torch, q);
    q.capacity = check_capacity(o.cap);
    q.warnings = bare_capacity_warnings(o.cap);
    if (q.capacity == rs::kUnlimited)
        throw UsageError("max-batch needs the memory the program must fit in: --capacity SIZE, or --memory-fraction F with --device-total SIZE");
    q.max_batch->headroom = o.headroom ? parse_size(*o.headroom, true) : 0;
    if (q.max_batch->headroom >= q.capacity)
        throw UsageError("--headroom " + *o.headroom + " leaves nothing of the cap (" + format_bytes(q.capacity) + ")");
    q.costs = checked_path(o.costs, "--costs");
    q.chart = false;
    if (o.grid.sweeps.empty() && !o.grid.full_grid) {
        // The recorded setting and expandable segments (the other half of
        // the answer: "...: 61; with expandable_segments:True: 66").
        q.tune = TuneRequest{};
        q.tune->axes = rs::grid_axes({"expandable_segments=false,true"}, false, true);
        q.tune->all_settings = o.grid.all_settings;
    } else {
        q.tune = check_grid(o.grid, q.capacity, false);
    }
    q.plot = check_plot(o.plot, o.program, std::nullopt, o.costs, q);
    return q;
}

}  // namespace

std::size_t ReuseSimRequest::replay_timeline_points() const {
    if (!chart && !timeline && !plot) return 0;
    return std::max<std::size_t>(timeline_points, chart_style.width);
}

namespace {
constexpr ListEntry kReplayLists[] = {
    {"strategies", "reuse-sim replay --strategy", [] { return view_of(reuse_sim::kStrategies); }},
    {"workloads", "reuse-sim replay, tune --workload", [] { return view_of(reuse_sim::kWorkloads); }},
    {"trace-formats", "reuse-sim replay, tune --trace-format", [] { return view_of(reuse_sim::kTraceFormats); }},
};
constexpr ListEntry kTuneLists[] = {
    {"knobs", "reuse-sim tune, max-batch --sweep", [] { return view_of(reuse_sim::kKnobs); }},
};
}  // namespace

// One Command per job: its own options, its own check; execution and the
// report are the same for every job (the request says which ran).
constexpr CommandDefinition kReuseSimReplayCommand{
    [] {
        return make_command(CommandFunctions<ReplayOptions, ReuseSimRequest, ReuseSimResults>{add_replay_options, check_replay,
                                                                                              execute_reuse_sim, reuse_sim_report});
    },
    [] { return reuse_sim_document_schema("reuse-sim replay"); }, kReplayLists};

constexpr CommandDefinition kReuseSimTuneCommand{
    [] {
        return make_command(
            CommandFunctions<TuneOptions, ReuseSimRequest, ReuseSimResults>{add_tune_options, check_tune, execute_reuse_sim, reuse_sim_report});
    },
    [] { return reuse_sim_document_schema("reuse-sim tune"); }, kTuneLists, {},
    "-d/--device: reuse-sim tune replays on no GPU (--confirm's program chooses its GPU; CUDA_VISIBLE_DEVICES selects them)"};

constexpr CommandDefinition kReuseSimRecordCommand{
    [] {
        return make_command(CommandFunctions<RecordOptions, ReuseSimRequest, ReuseSimResults>{add_record_options, check_record,
                                                                                              execute_reuse_sim, reuse_sim_report});
    },
    [] { return reuse_sim_document_schema("reuse-sim record"); }, {}, {},
    "-d/--device: under reuse-sim record the program chooses its GPU (CUDA_VISIBLE_DEVICES selects them)",
    "reuse-sim record passes the program's stdout through (gpumem's own lines go to stderr): no --json, --csv or --format"};

constexpr CommandDefinition kReuseSimMaxBatchCommand{
    [] {
        return make_command(CommandFunctions<MaxBatchOptions, ReuseSimRequest, ReuseSimResults>{add_max_batch_options, check_max_batch,
                                                                                                execute_reuse_sim, reuse_sim_report});
    },
    [] { return reuse_sim_document_schema("reuse-sim max-batch"); }, {}, {},
    "-d/--device: under max-batch the program chooses its GPU (CUDA_VISIBLE_DEVICES selects them)"};

}  // namespace gpumem::cli
