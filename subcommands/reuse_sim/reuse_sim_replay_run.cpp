// gpumem reuse-sim replay's execute(): read the cost table, check the GPU
// for --execute, open the input once and the output files, simulate every
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
#include "reuse_sim/cost_table.hpp"
#include "reuse_sim/reuse_sim_replay.hpp"

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

OutputFiles open_outputs(const ReplayRequest& q) {
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

// Every strategy on the simulated device, in one replay of the input.
void simulate(const ReplayRequest& q, rs::EventSource& source, const rs::CostModel& costs, OutputFiles& files, ReplayResults& r) {
    std::vector<std::unique_ptr<rs::Lane>> lanes;
    std::vector<rs::Lane*> lane_ptrs;
    for (const Named<rs::StrategySpec>* row : q.setup.strategies) {
        auto lane = std::make_unique<rs::Lane>(std::string(row->name), std::make_unique<rs::SimulatedUpstream>(q.setup.capacity, &costs));
        lane->strategy = rs::make_strategy(row->value, r.strategy_options, *lane->upstream);
        lane_ptrs.push_back(lane.get());
        lanes.push_back(std::move(lane));
    }
    rs::ReplayOptions options;
    options.sync_every = q.setup.sync_every;
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
ExecuteRun replay_on_gpu(const ReplayRequest& q, const Named<rs::StrategySpec>& row, const rs::LaneResult& simulated,
                         rs::EventSource& source, DeviceId device, const rs::CostModel& costs, const rs::StrategyOptions& options) {
    if (!source.rewind()) throw Error("--execute: cannot read " + source.description() + " again");
    rs::Lane lane(std::string(row.name), rs::make_cuda_upstream(device, q.setup.capacity, &costs));
    lane.strategy = rs::make_strategy(row.value, options, *lane.upstream);
    rs::ReplayOptions replay_options;
    replay_options.sync_every = q.setup.sync_every;
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

void execute_on_gpu(const ReplayRequest& q, DeviceId device, rs::EventSource& source, const rs::CostModel& costs, Unit unit,
                    ReplayResults& r) {
    const rs::CudaDeviceMemory before = rs::cuda_device_memory(device);
    r.execute = ExecuteResults{device, before.name, before.free_bytes, std::nullopt, {}};
    ExecuteResults& x = *r.execute;
    for (std::size_t i = 0; i < q.setup.strategies.size(); ++i) {
        throw_if_interrupted();
        x.runs.push_back(replay_on_gpu(q, *q.setup.strategies[i], r.lanes[i], source, device, costs, r.strategy_options));
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

void execute_replay(const ReplayRequest& q, ReplayResults& r, Session& session) {
    const rs::CostTable table = load_costs(q.setup, r);
    const rs::CostModel costs(table);
    // The GPU before the simulation: without one, --execute fails at once
    // (exit 3) instead of after a long replay whose table it then prints.
    std::optional<DeviceId> device;
    if (q.execute_on) device = select_cuda_devices(*q.execute_on).front().cuda_index.value();
    std::unique_ptr<rs::EventSource> source = open_input(q.input, q.setup, q.execute_on.has_value());
    r.input_description = source->description();
    r.input_format = source->format();
    OutputFiles files = open_outputs(q);
    r.strategy_options = q.setup.strategy_options;
    if (const rs::RecordedAllocatorSettings* recorded = source->allocator_settings()) apply_recorded_settings(q.setup, *recorded, r);
    if (needs_largest_request(q.setup)) r.strategy_options.largest_request = rs::largest_request(*source);
    simulate(q, *source, costs, files, r);
    note_allocator_facts(q.input, false, *source, r);
    if (device) execute_on_gpu(q, *device, *source, costs, session.output().unit, r);
    r.complete = true;
}

}  // namespace gpumem::cli
