// gpumem reuse-sim replay: the strategies compared on one input, on a
// simulated device (with --execute, also for real on a GPU). Its options and
// check() are in reuse_sim_replay.cpp, execute() in reuse_sim_replay_run.cpp,
// the report, its schema and the picture in reuse_sim_replay_report.cpp.
// The CPU tests call the report with synthetic results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/device_id.hpp"
#include "base/device_spec.hpp"
#include "cli/chart.hpp"
#include "reuse_sim/reuse_sim_common.hpp"
#include "reuse_sim/upstream.hpp"

namespace gpumem::cli {

struct ReplayRequest {
    ReuseSimInput input;
    ReplaySetup setup;
    std::vector<std::string> warnings;  // options that tune no selected strategy, a bare capacity
    std::optional<std::string> timeline;  // --timeline FILE
    std::uint64_t timeline_points = 1000;
    std::optional<std::string> save_trace;  // --save-trace FILE
    bool chart = true;                      // table format without --no-chart
    LevelChartStyle chart_style;
    std::optional<DeviceSpec> execute_on;        // --execute: one device
    std::optional<std::string> plot;             // --plot FILE.svg: checked writable, never an input
    std::optional<std::string> recorded_device;  // --plot: the GPU the trace was recorded on (its statistics)

    // Points the replay keeps: for --timeline, the chart and the picture (0: none).
    std::size_t replay_timeline_points() const;
};

// The upstream API calls that must agree between a strategy's simulated and
// real (--execute) replays.
struct ApiCall {
    const char* name;  // the key in the document's execute.runs[].calls
    std::uint64_t reuse_sim::UpstreamCounters::*count;
};
inline constexpr ApiCall kApiCalls[] = {
    {"cudaMalloc", &reuse_sim::UpstreamCounters::device_allocs},
    {"cudaFree", &reuse_sim::UpstreamCounters::device_frees},
    {"cudaMallocAsync", &reuse_sim::UpstreamCounters::async_allocs},
    {"cudaFreeAsync", &reuse_sim::UpstreamCounters::async_frees},
    {"cudaMemset", &reuse_sim::UpstreamCounters::fills},
    {"cudaDeviceSynchronize", &reuse_sim::UpstreamCounters::synchronizations},
};

// One strategy replayed for real (--execute), beside its simulation.
struct ExecuteRun {
    reuse_sim::LaneResult simulated, measured;
    double wall_seconds = 0;
    bool counts_agree = false;  // the same upstream calls and OOMs
};

struct ExecuteResults {
    DeviceId device;
    std::string device_name;
    std::uint64_t free_bytes_before = 0;
    std::optional<std::uint64_t> free_bytes_after;  // once every run is done
    std::vector<ExecuteRun> runs;                    // one per strategy, as each finishes

    // Strategies whose real device refused requests the simulated one
    // granted (the GPU had less free memory than the replay needs; their
    // call counts then differ too, but the cause is memory, not the model),
    // and those whose counts differ otherwise.
    std::vector<std::string> out_of_memory() const;
    std::vector<std::string> mismatched() const;
    // Requests the GPU refused that the simulated device granted.
    std::uint64_t refused() const;
    bool verified() const { return free_bytes_after && out_of_memory().empty() && mismatched().empty(); }
};

struct ReplayResults : ReplayedInput {
    std::vector<reuse_sim::LaneResult> lanes;  // one per strategy, in the request's order
    std::optional<reuse_sim::Timeline> timeline;
    std::optional<ExecuteResults> execute;  // --execute
};

void execute_replay(const ReplayRequest& q, ReplayResults& r, Session& session);
Report replay_report(const ReplayRequest& q, const ReplayResults& r, const OutputOptions& output);
// The picture of the replay: reserved and live memory over the run per
// strategy, the OOMs, the cap; none before anything was replayed.
std::optional<Plot> replay_plot(const ReplayRequest& q, const ReplayResults& r);
// The document's keys (the job's CommandDefinition::schema).
DocumentSchema replay_document_schema();

}  // namespace gpumem::cli
