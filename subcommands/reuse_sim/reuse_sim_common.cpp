// What reuse-sim's jobs share when they run (reuse_sim_common.hpp): the
// cost table, the input opened once, a snapshot's allocator settings and
// what its pools and settings changes mean for the replay.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/text.hpp"
#include "cli/terminal.hpp"
#include "reuse_sim/reuse_sim_common.hpp"
#include "reuse_sim/snapshot_reader.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

std::string quoted_conf(const std::optional<std::string>& conf) {
    return conf && !conf->empty() ? "'" + *conf + "'" : std::string("PyTorch's defaults");
}

}  // namespace

rs::CostTable load_costs(const ReplaySetup& setup, ReplayedInput& r) {
    std::vector<std::string> missing;
    rs::CostTable table = setup.costs ? rs::read_cost_table(*setup.costs, &missing) : rs::default_cost_table();
    if (!missing.empty()) r.warnings.push_back(*setup.costs + ": no " + join(missing) + "; built-in figures used for those");
    r.cost_device = table.device;
    r.cost_source = table.source;
    return table;
}

bool needs_largest_request(const ReplaySetup& setup) {
    for (const Named<rs::StrategySpec>* row : setup.strategies)
        if (row->value.needs_largest_request && row->value.needs_largest_request(setup.strategy_options)) return true;
    return false;
}

// The input, opened once. It is read again for a first pass (ring's size),
// by each of replay --execute's replays and by tune's: standard input and
// FIFOs are then kept in a temporary file as they are read.
std::unique_ptr<rs::EventSource> open_input(const ReuseSimInput& input, const ReplaySetup& setup, bool rereadable) {
    if (!input.trace) return rs::make_workload(input.workload);
    // The hook's record of the program's pools and settings, beside a snapshot it wrote.
    const rs::RecordedCalls* calls = input.recording ? &input.recording->calls : nullptr;
    return rs::open_trace(*input.trace, input.trace_format, rereadable || needs_largest_request(setup), input.trace_device, calls);
}

std::unique_ptr<rs::EventSource> open_replayed_input(const ReuseSimInput& input, const ReplaySetup& setup, bool rereadable, ReplayedInput& r) {
    std::unique_ptr<rs::EventSource> source = open_input(input, setup, rereadable);
    r.input_description = source->description();
    r.input_format = source->format();
    r.strategy_options = setup.strategy_options;
    if (const rs::RecordedAllocatorSettings* recorded = source->allocator_settings()) apply_recorded_settings(setup, *recorded, r);
    return source;
}

void note_allocator_facts(const ReuseSimInput& input, bool tuned, const rs::EventSource& source, ReplayedInput& r) {
    const rs::AllocatorFacts* facts = source.allocator_facts();
    if (!facts) return;
    r.settings_changes = facts->settings_changes;
    if (!r.settings_changes.empty()) {
        std::string line = "the program changed its allocator settings " + std::to_string(r.settings_changes.size()) +
                           (r.settings_changes.size() == 1 ? " time" : " times") +
                           " as it ran (torch.cuda.memory._set_allocator_settings); each phase is replayed under its own: from the start " +
                           quoted_conf(r.allocator_settings ? r.allocator_settings->alloc_conf : std::nullopt);
        for (const auto& [event, conf] : r.settings_changes) line += ", from event " + std::to_string(event) + " " + quoted_conf(conf);
        if (tuned)
            line += ". A suggested setting replaces only the first phase (events 1 to " + std::to_string(r.settings_changes.front().first - 1) +
                    "); each call of the program's own then applies as in a real run (expandable_segments stays as suggested "
                    "unless a call sets it)";
        r.warnings.push_back(line);
    }
    // Settings changed where this recording does not say: its hook predates the record of the calls.
    if (!facts->calls_recorded && input.recording && input.recording->start_conf.value_or("") != facts->final_conf.value_or("") &&
        facts->final_conf) {
        const std::string cause = "the program changed its allocator settings as it ran (it started with " +
                                  quoted_conf(input.recording->start_conf) + ", the snapshot ends with " + quoted_conf(facts->final_conf) +
                                  ") at places this recording does not say, and the replay applies the last to the whole run";
        r.replay_causes.push_back(cause);
        r.warnings.push_back(cause + ": record it again with this gpumem, which records each _set_allocator_settings call");
    }
    if (!facts->calls_recorded && (facts->mem_pools > 0 || facts->ooms_placed_by_guess > 0)) {
        std::string cause;
        if (facts->mem_pools > 0)
            cause = "the program used " + std::to_string(facts->mem_pools) + " torch.cuda.MemPool pool" + (facts->mem_pools == 1 ? "" : "s") +
                    ", whose requests are placed by the segments each still held at the end";
        if (facts->ooms_placed_by_guess > 0)
            cause += (cause.empty() ? "" : ", and ") + std::to_string(facts->ooms_placed_by_guess) +
                     " refused request(s) in the private pool of the request before them (a snapshot does not say where a "
                     "refused request was to go)";
        r.replay_causes.push_back(cause);
        r.warnings.push_back(cause + ": record it again with this gpumem, which records each use_mem_pool context and "
                                     "CUDA graph capture, for an exact replay");
    }
    // The hook said what it could not follow: that, not a guess, is the cause.
    if (input.recording && !input.recording->hook_errors.empty()) {
        const auto& errors = input.recording->hook_errors;
        std::string cause = "the recording hook could not follow some of the program's allocator calls (" + errors.front() +
                            (errors.size() > 1 ? "; " + std::to_string(errors.size() - 1) + " more in the recording's hook_errors" : "") +
                            "), so the replay does not know where they fall";
        r.replay_causes.push_back(cause);
        r.warnings.push_back(std::move(cause));
    }
    if (input.recording && facts->calls_recorded && facts->graph_pools > 0 &&
        std::none_of(input.recording->calls.calls.begin(), input.recording->calls.calls.end(),
                     [](const rs::AllocatorCall& c) { return c.kind == rs::AllocatorCall::Kind::capture_begin; })) {
        std::string cause = "the snapshot holds " + std::to_string(facts->graph_pools) + " CUDA graph pool" +
                            (facts->graph_pools == 1 ? "" : "s") +
                            " but the recording no capture of them: while a capture is under way PyTorch neither frees its "
                            "cache nor retries, which the replay cannot know here";
        r.replay_causes.push_back(cause);
        r.warnings.push_back(std::move(cause));
    }
    if (facts->unexplained_pool_releases > 0)
        r.replay_causes.push_back(std::to_string(facts->unexplained_pool_releases) +
                                  " release(s) of a private pool the snapshot no longer lists, whose requests replay as the default pools'");
}

void apply_recorded_settings(const ReplaySetup& setup, const rs::RecordedAllocatorSettings& recorded, ReplayedInput& r) {
    r.allocator_settings = recorded;
    rs::TorchOptions& torch = r.strategy_options.torch;
    if (recorded.max_split_size) {
        if (setup.torch_flags.max_split_size) r.overridden_settings.emplace_back("max_split_size");
        else torch.max_split_size = *recorded.max_split_size;
    }
    if (recorded.roundup_power2_divisions) {
        if (setup.torch_flags.roundup_power2_divisions) r.overridden_settings.emplace_back("roundup_power2_divisions");
        else torch.roundup_power2_divisions = *recorded.roundup_power2_divisions;
    }
    torch.garbage_collection_threshold = recorded.garbage_collection_threshold.value_or(0.0);
    torch.expandable_segments = recorded.expandable_segments.value_or(false);
    const bool replays_torch =
        std::any_of(setup.strategies.begin(), setup.strategies.end(), [](const auto* row) { return row->name == "torch-caching"; });
    if (!replays_torch) return;
    // PyTorch collects garbage only under a memory fraction, and so does the model.
    if (torch.garbage_collection_threshold > 0.0 && setup.capacity == rs::kUnlimited)
        r.warnings.emplace_back("the snapshot ran with garbage_collection_threshold, which PyTorch applies only under a memory "
                                "fraction: give --memory-fraction or --capacity for torch-caching to collect garbage as it did");
}

std::vector<std::string_view> alloc_conf_grid_keys() {
    std::vector<std::string_view> keys;
    for (const Named<rs::KnobSpec>& knob : rs::kKnobs) keys.push_back(knob.value.conf_key);
    return keys;
}

void say_on_stderr(const Session& session, const std::string& line) {
    const std::string text = line.rfind("error: ", 0) == 0 ? line : stderr_text("gpumem: ", line, session.output().screen);
    if (!session.globals().quiet) std::fprintf(stderr, "gpumem: %s\n", text.c_str());
}

}  // namespace gpumem::cli
