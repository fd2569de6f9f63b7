// gpumem reuse-sim replay: its options (the shared groups of
// reuse_sim_options.hpp and its own: the strategies and what tunes them,
// the output files, --execute) and its check(), then its row of the command
// table. execute() is in reuse_sim_replay_run.cpp, the report in
// reuse_sim_replay_report.cpp.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/memory_policy.hpp"
#include "base/sizes.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/terminal.hpp"
#include "reuse_sim/reuse_sim_options.hpp"
#include "reuse_sim/reuse_sim_replay.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/workloads.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

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

// An empty --strategy is refused with its own words before the table's
// validator (whose message for it would read "strategys").
CLI::Validator non_empty(const char* what) {
    return CLI::Validator(
        [what](std::string& value) -> std::string {
            return value.find_first_not_of(" \t") == std::string::npos ? std::string("empty list of ") + what : std::string();
        },
        "");
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

void check_strategy_options(const StrategyKnobs& o, ReplaySetup& setup) {
    rs::StrategyOptions& s = setup.strategy_options;
    if (o.growth) s.growth = parse_growth_policy(*o.growth);
    s.zero_fill = o.zero_fill;
    if (o.ring_buffers) s.ring_buffers = static_cast<std::uint32_t>(*o.ring_buffers);
    if (o.ring_size) s.ring_size = parse_size(*o.ring_size);
    if (o.pool_initial) s.pool_initial = parse_size(*o.pool_initial, true);
    if (o.pool_max) s.pool_maximum = parse_size(*o.pool_max);
    if (s.pool_maximum != rs::kUnlimited && s.pool_initial > s.pool_maximum) throw UsageError("--pool-initial exceeds --pool-max");
    if (o.bins) s.bins = parse_size_range(*o.bins, 64);
    if (o.bin_blocks) s.bin_blocks = *o.bin_blocks;
    check_torch_options(o.torch, setup);
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

void check_outputs(const ReplayOptions& o, const Globals& globals, ReplayRequest& q) {
    q.setup.costs = checked_path(o.costs, "--costs");
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

// reuse-sim replay: the strategies compared on one input.
ReplayRequest check_replay(const ReplayOptions& o, const Globals& globals) {
    ReplayRequest q;
    q.input = check_input(o.input);
    q.setup.strategies = strategy_rows(o.strategies.strategy);
    check_strategy_options(o.strategies, q.setup);
    q.warnings = ignored_option_warnings(o.strategies, q.setup.strategies);
    q.setup.sync_every = o.sync_every.value_or(0);
    q.setup.capacity = check_capacity(o.cap);
    for (std::string& warning : bare_capacity_warnings(o.cap)) q.warnings.push_back(std::move(warning));
    const std::vector<std::string> recording_warnings = check_recording(o.cap, q.input, q.setup);
    check_outputs(o, globals, q);
    std::vector<std::string> inputs;
    for (const std::optional<std::string>& file : {o.input.trace, o.costs})
        if (file) inputs.push_back(*file);
    q.plot = check_plot(o.plot, inputs, std::nullopt);
    q.recorded_device = plot_recorded_device(q.plot, o.input.trace);
    q.warnings.insert(q.warnings.end(), recording_warnings.begin(), recording_warnings.end());
    return q;
}

}  // namespace

std::size_t ReplayRequest::replay_timeline_points() const {
    if (!chart && !timeline && !plot) return 0;
    return std::max<std::size_t>(timeline_points, chart_style.width);
}

namespace {
constexpr ListEntry kReplayLists[] = {
    {"strategies", "reuse-sim replay --strategy", [] { return view_of(reuse_sim::kStrategies); }},
    {"workloads", "reuse-sim replay, tune --workload", [] { return view_of(reuse_sim::kWorkloads); }},
    {"trace-formats", "reuse-sim replay, tune --trace-format", [] { return view_of(reuse_sim::kTraceFormats); }},
};
}  // namespace

// The job's own options, check, execute, report and schema.
constexpr CommandDefinition kReuseSimReplayCommand{
    [] { return make_command(CommandFunctions<ReplayOptions, ReplayRequest, ReplayResults>{add_replay_options, check_replay, execute_replay, replay_report}); },
    replay_document_schema, kReplayLists};

}  // namespace gpumem::cli
