// gpumem reuse-sim's execute(): read the cost table, check the GPU for
// --execute, open the input once and the output files, simulate every
// strategy in one replay, then with --execute replay each for real.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <memory>
#include <string>
#include <vector>


#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "bench/cuda_upstream.hpp"
#include "core/cuda_devices.hpp"
#include "reuse_sim/reuse_sim.hpp"
#include "reuse_sim/cost_table.hpp"
#include "reuse_sim/snapshot_reader.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// Passes events through and writes each to a gpumem trace on the way
// (--save-trace: a workload, or an RMM log, as a gpumem trace file).
class TeeSource final : public rs::EventSource {
public:
    TeeSource(rs::EventSource& inner, rs::GpumemTraceWriter& writer) : inner_(inner), writer_(writer) {}
    bool next(rs::Event& e) override {
        if (!inner_.next(e)) return false;
        writer_.write(e, inner_.tag_name(e.tag));
        return true;
    }
    std::string location(std::uint64_t line) const override { return inner_.location(line); }
    std::string description() const override { return inner_.description(); }
    std::string format() const override { return inner_.format(); }
    bool rewind() override { return false; }
    std::uint64_t skipped() const override { return inner_.skipped(); }
    std::string skipped_what() const override { return inner_.skipped_what(); }
    std::vector<std::string> notes() const override { return inner_.notes(); }
    const rs::RecordedAllocatorSettings* allocator_settings() const override { return inner_.allocator_settings(); }
    const rs::AllocatorFacts* allocator_facts() const override { return inner_.allocator_facts(); }
    std::string tag_name(std::uint32_t tag) const override { return inner_.tag_name(tag); }

private:
    rs::EventSource& inner_;
    rs::GpumemTraceWriter& writer_;
};

// The files the run writes, opened (and so checked) before the simulation.
struct OutputFiles {
    std::unique_ptr<rs::GpumemTraceWriter> trace;  // --save-trace
    std::ofstream timeline;                        // --timeline, when open
};

OutputFiles open_outputs(const ReuseSimRequest& q) {
    OutputFiles files;
    if (q.save_trace) files.trace = std::make_unique<rs::GpumemTraceWriter>(*q.save_trace);
    if (q.timeline) {
        files.timeline.open(*q.timeline, std::ios::trunc);
        if (!files.timeline) throw UsageError("--timeline '" + *q.timeline + "': " + std::strerror(errno));
    }
    return files;
}

void write_timeline(std::ofstream& out, const std::string& path, const rs::Timeline& timeline, const std::vector<rs::LaneResult>& lanes) {
    out << "event,live_bytes";
    for (const rs::LaneResult& lane : lanes) out << ',' << lane.strategy;
    out << '\n';
    for (std::size_t p = 0; p < timeline.points(); ++p) {
        out << timeline.first_event(p) << ',' << timeline.live(p);
        for (std::size_t l = 0; l < timeline.lanes(); ++l) out << ',' << timeline.reserved(p, l);
        out << '\n';
    }
    out.flush();
    if (!out) throw Error(path + ": error writing timeline");
}

rs::CostTable load_costs(const ReuseSimRequest& q, ReuseSimResults& r) {
    std::vector<std::string> missing;
    rs::CostTable table = q.costs ? rs::read_cost_table(*q.costs, &missing) : rs::default_cost_table();
    if (!missing.empty()) r.warnings.push_back(*q.costs + ": no " + join(missing) + "; built-in figures used for those");
    r.cost_device = table.device;
    r.cost_source = table.source;
    return table;
}

bool needs_largest_request(const ReuseSimRequest& q) {
    for (const Named<rs::StrategySpec>* row : q.strategies)
        if (row->value.needs_largest_request && row->value.needs_largest_request(q.strategy_options)) return true;
    return false;
}

// The input, opened once. It is read again for a first pass (ring's size)
// and by each --execute replay: standard input and FIFOs are then kept in a
// temporary file as they are read.
std::unique_ptr<rs::EventSource> open_input(const ReuseSimRequest& q) {
    if (!q.input.trace) return rs::make_workload(q.input.workload);
    const bool rereadable = needs_largest_request(q) || q.execute_on || q.tune;
    // The hook's record of the program's pools and settings, beside a snapshot it wrote.
    const rs::RecordedCalls* calls = q.recording ? &q.recording->calls : nullptr;
    return rs::open_trace(*q.input.trace, q.input.trace_format, rereadable, q.input.trace_device, calls);
}

// Every strategy on the simulated device, in one replay of the input.
void simulate(const ReuseSimRequest& q, rs::EventSource& source, const rs::CostModel& costs, OutputFiles& files, ReuseSimResults& r) {
    std::vector<std::unique_ptr<rs::Lane>> lanes;
    std::vector<rs::Lane*> lane_ptrs;
    for (const Named<rs::StrategySpec>* row : q.strategies) {
        auto lane = std::make_unique<rs::Lane>(std::string(row->name), std::make_unique<rs::SimulatedUpstream>(q.capacity, &costs));
        lane->strategy = rs::make_strategy(row->value, r.strategy_options, *lane->upstream);
        lane_ptrs.push_back(lane.get());
        lanes.push_back(std::move(lane));
    }
    rs::ReplayOptions options;
    options.sync_every = q.sync_every;
    options.timeline_points = q.replay_timeline_points();
    options.poll = [] { throw_if_interrupted(); };
    rs::Replay replay(lane_ptrs, options);
    std::unique_ptr<TeeSource> tee;
    if (files.trace) tee = std::make_unique<TeeSource>(source, *files.trace);
    const rs::ReplaySummary summary = replay.run(tee ? static_cast<rs::EventSource&>(*tee) : source);
    if (files.trace) files.trace->close();
    for (const auto& lane : lanes) r.lanes.push_back(rs::summarize(*lane));
    if (replay.timeline()) r.timeline = *replay.timeline();
    if (summary.skipped) r.warnings.push_back(std::to_string(summary.skipped) + " " + source.skipped_what() + " were not replayed");
    for (std::string& note : source.notes()) r.warnings.push_back(std::move(note));
    for (const rs::LaneResult& lane : r.lanes)
        for (const auto& [key, value] : lane.details)
            if (key == "empty_caches_read_as_own_release")
                if (std::string note = rs::release_note(source.description(), value); !note.empty()) r.warnings.push_back(note);
    r.summary = summary;
    if (files.timeline.is_open()) write_timeline(files.timeline, *q.timeline, *r.timeline, r.lanes);
}

// One strategy replayed for real on `device`, from the input's start.
ExecuteRun replay_on_gpu(const ReuseSimRequest& q, const Named<rs::StrategySpec>& row, const rs::LaneResult& simulated,
                         rs::EventSource& source, DeviceId device, const rs::CostModel& costs, const rs::StrategyOptions& options) {
    if (!source.rewind()) throw Error("--execute: cannot read " + source.description() + " again");
    rs::Lane lane(std::string(row.name), rs::make_cuda_upstream(device, q.capacity, &costs));
    lane.strategy = rs::make_strategy(row.value, options, *lane.upstream);
    rs::ReplayOptions replay_options;
    replay_options.sync_every = q.sync_every;
    replay_options.poll = [] { throw_if_interrupted(); };
    replay_options.poll_interval = 256;
    rs::Replay replay(std::vector<rs::Lane*>{&lane}, replay_options);
    ExecuteRun run;
    run.wall_seconds = replay.run(source).seconds;
    run.simulated = simulated;
    run.measured = rs::summarize(lane);
    replay.teardown();
    run.counts_agree = run.measured.ooms == simulated.ooms;
    for (const ApiCall& call : kApiCalls)
        if (simulated.counters.*call.count != run.measured.counters.*call.count) run.counts_agree = false;
    return run;
}

void execute_on_gpu(const ReuseSimRequest& q, DeviceId device, rs::EventSource& source, const rs::CostModel& costs, Unit unit,
                    ReuseSimResults& r) {
    const rs::CudaDeviceMemory before = rs::cuda_device_memory(device);
    r.execute = ExecuteResults{device, before.name, before.free_bytes, std::nullopt, {}};
    ExecuteResults& x = *r.execute;
    for (std::size_t i = 0; i < q.strategies.size(); ++i) {
        throw_if_interrupted();
        x.runs.push_back(replay_on_gpu(q, *q.strategies[i], r.lanes[i], source, device, costs, r.strategy_options));
    }
    x.free_bytes_after = rs::cuda_device_memory(device).free_bytes;
    const std::string gpu = "--execute: GPU " + std::to_string(device.ordinal());
    if (!x.out_of_memory().empty())
        throw OutOfMemoryError(gpu + " ran out of memory replaying " + join(x.out_of_memory()) + ": " + std::to_string(x.refused()) +
                                   " request(s) refused that the simulated device granted (" + format_bytes(x.free_bytes_before, unit) +
                                   " free before; --capacity simulates a smaller device)",
                               r.summary->largest_request);
    if (!x.mismatched().empty())
        throw VerificationError("--execute: real upstream calls differ from the simulated ones for " + join(x.mismatched()) +
                                " (see \"execute\" in --json)");
}

}  // namespace

std::vector<std::string> ExecuteResults::out_of_memory() const {
    std::vector<std::string> names;
    for (const ExecuteRun& run : runs)
        if (run.measured.ooms > run.simulated.ooms) names.push_back(run.simulated.strategy);
    return names;
}

std::vector<std::string> ExecuteResults::mismatched() const {
    std::vector<std::string> names;
    for (const ExecuteRun& run : runs)
        if (run.measured.ooms <= run.simulated.ooms && !run.counts_agree) names.push_back(run.simulated.strategy);
    return names;
}

std::uint64_t ExecuteResults::refused() const {
    std::uint64_t n = 0;
    for (const ExecuteRun& run : runs)
        if (run.measured.ooms > run.simulated.ooms) n += run.measured.ooms - run.simulated.ooms;
    return n;
}

TuneResults tune_recording(const ReuseSimRequest& q, const std::string& trace, std::uint64_t capacity) {
    // The trace's request, but this recording's file and the runs' cap: the
    // same grid (its axes were chosen for the trace's cap, as the runs').
    ReuseSimRequest rq = q;
    rq.input.trace = trace;
    rq.input.trace_format = rs::TraceFormat::automatic;
    rq.capacity = capacity;
    rq.confirm.reset();
    rq.recording = read_recording_stats(stats_file_name(trace));
    ReuseSimResults r;
    const rs::CostTable table = load_costs(rq, r);
    const rs::CostModel costs(table);
    std::unique_ptr<rs::EventSource> source = open_input(rq);
    r.strategy_options = rq.strategy_options;
    if (const rs::RecordedAllocatorSettings* recorded = source->allocator_settings()) apply_recorded_settings(rq, *recorded, r);
    tune_reuse_sim(rq, *source, costs, r, std::nullopt);
    return std::move(*r.tune);
}

namespace {

std::string quoted_conf(const std::optional<std::string>& conf) {
    return conf && !conf->empty() ? "'" + *conf + "'" : std::string("PyTorch's defaults");
}

}  // namespace

void note_allocator_facts(const ReuseSimRequest& q, const rs::EventSource& source, ReuseSimResults& r) {
    const rs::AllocatorFacts* facts = source.allocator_facts();
    if (!facts) return;
    r.settings_changes = facts->settings_changes;
    if (!r.settings_changes.empty()) {
        std::string line = "the program changed its allocator settings " + std::to_string(r.settings_changes.size()) +
                           (r.settings_changes.size() == 1 ? " time" : " times") +
                           " as it ran (torch.cuda.memory._set_allocator_settings); each phase is replayed under its own: from the start " +
                           quoted_conf(r.allocator_settings ? r.allocator_settings->alloc_conf : std::nullopt);
        for (const auto& [event, conf] : r.settings_changes) line += ", from event " + std::to_string(event) + " " + quoted_conf(conf);
        if (q.tune)
            line += ". A suggested setting replaces only the first phase (events 1 to " + std::to_string(r.settings_changes.front().first - 1) +
                    "); each call of the program's own then applies as in a real run (expandable_segments stays as suggested "
                    "unless a call sets it)";
        r.warnings.push_back(line);
    }
    // Settings changed where this recording does not say: its hook predates the record of the calls.
    if (!facts->calls_recorded && q.recording && q.recording->start_conf.value_or("") != facts->final_conf.value_or("") &&
        facts->final_conf) {
        const std::string cause = "the program changed its allocator settings as it ran (it started with " +
                                  quoted_conf(q.recording->start_conf) + ", the snapshot ends with " + quoted_conf(facts->final_conf) +
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
    if (q.recording && !q.recording->hook_errors.empty()) {
        const auto& errors = q.recording->hook_errors;
        std::string cause = "the recording hook could not follow some of the program's allocator calls (" + errors.front() +
                            (errors.size() > 1 ? "; " + std::to_string(errors.size() - 1) + " more in the recording's hook_errors" : "") +
                            "), so the replay does not know where they fall";
        r.replay_causes.push_back(cause);
        r.warnings.push_back(std::move(cause));
    }
    if (q.recording && facts->calls_recorded && facts->graph_pools > 0 &&
        std::none_of(q.recording->calls.calls.begin(), q.recording->calls.calls.end(),
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

void apply_recorded_settings(const ReuseSimRequest& q, const rs::RecordedAllocatorSettings& recorded, ReuseSimResults& r) {
    r.allocator_settings = recorded;
    rs::TorchOptions& torch = r.strategy_options.torch;
    if (recorded.max_split_size) {
        if (q.torch_flags.max_split_size) r.overridden_settings.emplace_back("max_split_size");
        else torch.max_split_size = *recorded.max_split_size;
    }
    if (recorded.roundup_power2_divisions) {
        if (q.torch_flags.roundup_power2_divisions) r.overridden_settings.emplace_back("roundup_power2_divisions");
        else torch.roundup_power2_divisions = *recorded.roundup_power2_divisions;
    }
    torch.garbage_collection_threshold = recorded.garbage_collection_threshold.value_or(0.0);
    torch.expandable_segments = recorded.expandable_segments.value_or(false);
    const bool replays_torch =
        std::any_of(q.strategies.begin(), q.strategies.end(), [](const auto* row) { return row->name == "torch-caching"; });
    if (!replays_torch) return;
    // PyTorch collects garbage only under a memory fraction, and so does the model.
    if (torch.garbage_collection_threshold > 0.0 && q.capacity == rs::kUnlimited)
        r.warnings.emplace_back("the snapshot ran with garbage_collection_threshold, which PyTorch applies only under a memory "
                                "fraction: give --memory-fraction or --capacity for torch-caching to collect garbage as it did");
}

void execute_reuse_sim(const ReuseSimRequest& q, ReuseSimResults& r, Session& session) {
    if (q.record) {
        record_reuse_sim(q, r, session);  // runs a program: no replay, no driver
        return;
    }
    // --confirm's real runs need a GPU: without one, exit 3 before the replays.
    if (q.confirm) (void)select_cuda_devices(q.confirm->device);
    const rs::CostTable table = load_costs(q, r);
    const rs::CostModel costs(table);
    if (q.max_batch) {
        max_batch_reuse_sim(q, costs, r, session);  // its own inputs: recordings at several batches
        if (q.plot) max_batch_plot_curves(costs, r);
        r.complete = true;
        return;
    }
    // The GPU before the simulation: without one, --execute fails at once
    // (exit 3) instead of after a long replay whose table it then prints.
    std::optional<DeviceId> device;
    if (q.execute_on) device = select_cuda_devices(*q.execute_on).front().cuda_index.value();
    std::unique_ptr<rs::EventSource> source = open_input(q);
    r.input_description = source->description();
    r.input_format = source->format();
    OutputFiles files = open_outputs(q);
    r.strategy_options = q.strategy_options;
    if (const rs::RecordedAllocatorSettings* recorded = source->allocator_settings()) apply_recorded_settings(q, *recorded, r);
    if (q.tune) {
        tune_reuse_sim(q, *source, costs, r,
                       session.progress() ? std::optional(session.output().screen.stderr_columns) : std::nullopt);
        note_allocator_facts(q, *source, r);
        if (q.confirm) confirm_reuse_sim(q, r, session);
        r.complete = true;
        return;
    }
    if (needs_largest_request(q)) r.strategy_options.largest_request = rs::largest_request(*source);
    simulate(q, *source, costs, files, r);
    note_allocator_facts(q, *source, r);
    if (device) execute_on_gpu(q, *device, *source, costs, session.output().unit, r);
    r.complete = true;
}

}  // namespace gpumem::cli
