// gpumem reuse-sim: replay allocation traces or built-in workloads through
// reuse strategies on a simulated device (no GPU needed), compare them, and
// with --execute replay them for real on a GPU.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

#include <spdlog/spdlog.h>

#include "legacy.hpp"
#include "reuse_sim/cost_table.hpp"
#include "core/cuda_devices.hpp"
#include "bench/cuda_upstream.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "reuse_sim/simulator.hpp"
#include "base/sizes.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/workloads.hpp"

namespace gpumem::cli {
namespace {

std::string comma_list(const std::vector<std::string>& items) {
    std::string list;
    for (const auto& item : items) list += (list.empty() ? "" : ", ") + item;
    return list;
}

namespace rs = gpumem::reuse_sim;

struct ReuseSimOptions {
    // input
    std::string workload = "dynamic";
    std::uint64_t steps = 200;
    std::uint64_t seed = 1;
    double change_rate = 0.1;
    std::string batch = "1..32";
    std::uint32_t layers = 8;
    std::string sample_bytes = "768KiB";
    std::uint32_t max_detections = 100;
    std::string prompt = "32..512";
    std::string tokens = "16..256";
    std::uint32_t streams = 1;
    std::string trace;
    std::string trace_format = "auto";
    // strategies
    std::string strategy = "all";
    std::string growth = "exact";
    bool zero_fill = false;
    std::uint32_t ring_buffers = 4;
    std::string ring_size;
    std::string pool_initial;
    std::string pool_max;
    std::string bins = "256KiB..4MiB";
    std::uint64_t bin_blocks = 128;
    std::string max_split_size;
    std::string max_non_split_rounding;
    std::string roundup_power2_divisions;
    std::string release_threshold;
    std::uint64_t sync_every = 0;
    // device and output
    std::string capacity;
    std::string costs;
    std::string timeline;
    std::size_t timeline_points = 1000;
    std::string save_trace;
    bool no_chart = false;
    bool execute = false;
};

constexpr std::size_t kChartWidth = 60;

// Passes events through and writes each to a gpumem trace on the way
// (--save-trace: a workload, or an RMM log, as a gpumem trace file).
class TeeSource final : public rs::EventSource {
public:
    TeeSource(rs::EventSource& inner, const std::string& path) : inner_(inner), writer_(path) {}
    bool next(rs::Event& e) override {
        if (!inner_.next(e)) return false;
        writer_.write(e, inner_.tag_name(e.tag));
        return true;
    }
    std::string location(std::uint64_t line) const override { return inner_.location(line); }
    std::string description() const override { return inner_.description(); }
    bool rewind() override { return false; }
    std::uint64_t skipped() const override { return inner_.skipped(); }
    std::string tag_name(std::uint32_t tag) const override { return inner_.tag_name(tag); }
    void close() { writer_.close(); }

private:
    rs::EventSource& inner_;
    rs::GpumemTraceWriter writer_;
};

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

rs::StrategyOptions strategy_options(const ReuseSimOptions& o) {
    rs::StrategyOptions s;
    s.growth = kGrowthRules.parse(o.growth);
    s.zero_fill = o.zero_fill;
    s.ring_buffers = o.ring_buffers;
    if (!o.ring_size.empty()) s.ring_size = parse_size(o.ring_size);
    if (!o.pool_initial.empty()) s.pool_initial = parse_size(o.pool_initial, true);
    if (!o.pool_max.empty()) s.pool_maximum = parse_size(o.pool_max);
    if (s.pool_maximum != rs::kUnlimited && s.pool_initial > s.pool_maximum)
        throw UsageError("--pool-initial exceeds --pool-max");
    s.bins = parse_size_range(o.bins, 64);
    s.bin_blocks = o.bin_blocks;
    if (!o.max_split_size.empty()) {
        s.torch.max_split_size = parse_size(o.max_split_size);
        // PyTorch refuses max_split_size_mb below kLargeBuffer (20 MiB).
        if (s.torch.max_split_size < (20ULL << 20)) throw UsageError("--max-split-size must be at least 20MiB (as PyTorch requires)");
    }
    if (!o.max_non_split_rounding.empty()) {
        s.torch.max_non_split_rounding = parse_size(o.max_non_split_rounding);
        if (s.torch.max_non_split_rounding < (20ULL << 20))
            throw UsageError("--max-non-split-rounding must be at least 20MiB (as PyTorch requires)");
    }
    if (!o.roundup_power2_divisions.empty())
        s.torch.roundup_power2_divisions = rs::parse_roundup_power2_divisions(o.roundup_power2_divisions);
    if (!o.release_threshold.empty()) s.release_threshold = parse_size(o.release_threshold, true);
    return s;
}

rs::WorkloadOptions workload_options(const ReuseSimOptions& o) {
    rs::WorkloadOptions w;
    w.name = o.workload;
    w.steps = o.steps;
    w.seed = o.seed;
    w.change_rate = o.change_rate;
    std::tie(w.batch_min, w.batch_max) = parse_count_range(o.batch, "--batch");
    w.layers = o.layers;
    w.sample_bytes = parse_size(o.sample_bytes);
    w.max_detections = o.max_detections;
    std::tie(w.prompt_min, w.prompt_max) = parse_count_range(o.prompt, "--prompt");
    std::tie(w.tokens_min, w.tokens_max) = parse_count_range(o.tokens, "--tokens");
    w.streams = o.streams;
    return w;
}

// A fresh source each call: the simulation and each --execute replay read it anew.
std::function<std::unique_ptr<rs::EventSource>()> source_factory(const ReuseSimOptions& o) {
    if (!o.trace.empty()) {
        const rs::TraceFormat format = rs::parse_trace_format(o.trace_format);
        return [path = o.trace, format] { return rs::open_trace(path, format); };
    }
    const rs::WorkloadOptions w = workload_options(o);
    return [w] { return rs::make_workload(w); };
}

Table comparison_table(const std::vector<rs::LaneResult>& results, bool with_measured) {
    Table t;
    t.key = "strategies";
    t.fields = {
        {"strategy", "strategy", FieldKind::text},
        {"requests", "requests", FieldKind::integer},
        {"upstream_allocs", "allocs", FieldKind::integer},
        {"upstream_frees", "frees", FieldKind::integer},
        {"hit_rate", "hit rate", FieldKind::percent, 1},
        {"peak_reserved", "peak reserved", FieldKind::bytes},
        {"peak_live", "peak live", FieldKind::bytes},
        {"slack_at_peak", "slack at peak", FieldKind::bytes},
        {"fragmentation", "frag", FieldKind::percent, 1},
        {"implicit_syncs", "syncs", FieldKind::integer},
        {"ooms", "OOMs", FieldKind::integer},
        {"retries", "retries", FieldKind::integer},
        {"modelled_ms", "model ms", FieldKind::real, 2},
    };
    if (with_measured) t.fields.push_back({"measured_ms", "GPU ms", FieldKind::real, 2});
    for (const rs::LaneResult& r : results) {
        std::vector<Cell> row = {
            r.strategy,
            static_cast<std::uint64_t>(r.requests),
            static_cast<std::uint64_t>(r.upstream_allocs),
            static_cast<std::uint64_t>(r.upstream_frees),
            r.hit_rate * 100.0,
            static_cast<std::uint64_t>(r.peak_reserved),
            static_cast<std::uint64_t>(r.peak_live),
            static_cast<std::uint64_t>(r.slack_at_peak),
            r.fragmentation * 100.0,
            static_cast<std::uint64_t>(r.implicit_syncs),
            static_cast<std::uint64_t>(r.ooms),
            static_cast<std::uint64_t>(r.retries),
            r.modelled_us / 1000.0,
        };
        if (with_measured) row.resize(row.size() + 1);  // filled by --execute
        t.add_row(std::move(row));
    }
    return t;
}

// Table mode: the best value of each compared column gets a '*' (others a
// space, to keep the digits aligned). Columns where all rows agree are left alone.
void mark_best(Table& t, Unit unit) {
    if (t.rows.size() < 2) return;
    const std::vector<std::pair<std::string, bool>> compared = {
        {"upstream_allocs", false}, {"upstream_frees", false}, {"hit_rate", true}, {"peak_reserved", false},
        {"slack_at_peak", false},   {"fragmentation", false},  {"implicit_syncs", false}, {"ooms", false},
        {"retries", false},         {"modelled_ms", false},    {"measured_ms", false},
    };
    for (std::size_t col = 0; col < t.fields.size(); ++col) {
        const auto it = std::find_if(compared.begin(), compared.end(), [&](const auto& c) { return c.first == t.fields[col].key; });
        if (it == compared.end()) continue;
        const bool higher_is_better = it->second;
        double best = std::nan("");
        bool all_equal = true;
        for (const auto& row : t.rows) {
            const double v = cell_number(row[col]);
            if (std::isnan(v)) continue;
            if (!std::isnan(best) && v != best) all_equal = false;
            if (std::isnan(best) || (higher_is_better ? v > best : v < best)) best = v;
        }
        if (std::isnan(best) || all_equal) continue;
        for (auto& row : t.rows) {
            const double v = cell_number(row[col]);
            if (std::isnan(v)) continue;
            const std::string text = cell_text(row[col], t.fields[col], unit);
            row[col] = text + (v == best ? "*" : " ");
        }
    }
}

// One line of blocks per strategy: reserved bytes over the run, each row on
// its own scale (its peak, printed at the end) so that every strategy's shape
// shows; the table compares the magnitudes.
std::vector<std::string> render_chart(const rs::Timeline& timeline, const std::vector<std::string>& names, bool unicode,
                                      Unit unit) {
    static const char* const kUnicodeLevels[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char kAsciiLevels[] = " .:-=+*#%@";
    const std::size_t levels = unicode ? 9 : 10;
    const std::size_t points = timeline.points();
    if (points == 0) return {};
    const std::size_t width = std::min(kChartWidth, points);
    std::size_t name_width = 4;
    for (const auto& n : names) name_width = std::max(name_width, n.size());
    auto row = [&](const std::string& label, auto value_at) {
        std::vector<std::uint64_t> columns(width, 0);
        for (std::size_t c = 0; c < width; ++c)
            for (std::size_t p = c * points / width; p < (c + 1) * points / width; ++p) columns[c] = std::max(columns[c], value_at(p));
        const std::uint64_t top = *std::max_element(columns.begin(), columns.end());
        std::string line = label + std::string(name_width - label.size() + 2, ' ');
        for (std::uint64_t v : columns) {
            std::size_t level = top == 0 ? 0
                                         : static_cast<std::size_t>(std::ceil(static_cast<double>(v) * static_cast<double>(levels - 1) /
                                                                              static_cast<double>(top)));
            level = std::min(level, levels - 1);
            if (unicode) line += kUnicodeLevels[level];
            else line += kAsciiLevels[level];
        }
        return line + "  peak " + format_bytes(top, unit);
    };
    std::vector<std::string> lines;
    lines.push_back("");
    lines.push_back("Reserved bytes over events " + std::to_string(timeline.first_event(0)) + ".." +
                    std::to_string(timeline.first_event(points - 1)) + " (each row scaled to its own peak):");
    for (std::size_t l = 0; l < names.size(); ++l) lines.push_back(row(names[l], [&](std::size_t p) { return timeline.reserved(p, l); }));
    lines.push_back(row("live", [&](std::size_t p) { return timeline.live(p); }));
    return lines;
}

void write_timeline(const std::string& path, const rs::Timeline& timeline, const std::vector<std::string>& names) {
    std::ofstream out(path, std::ios::trunc);
    if (!out) throw UsageError(path + ": cannot write timeline");
    out << "event,live_bytes";
    for (const auto& n : names) out << ',' << n;
    out << '\n';
    for (std::size_t p = 0; p < timeline.points(); ++p) {
        out << timeline.first_event(p) << ',' << timeline.live(p);
        for (std::size_t l = 0; l < timeline.lanes(); ++l) out << ',' << timeline.reserved(p, l);
        out << '\n';
    }
    out.flush();
    if (!out) throw Error(path + ": error writing timeline");
}

Json counters_json(const rs::UpstreamCounters& c) {
    return Json{{"device_allocs", c.device_allocs},
                {"device_frees", c.device_frees},
                {"device_alloc_failures", c.device_alloc_failures},
                {"async_allocs", c.async_allocs},
                {"async_frees", c.async_frees},
                {"async_alloc_failures", c.async_alloc_failures},
                {"pool_grows", c.pool_grows},
                {"pool_releases", c.pool_releases},
                {"fills", c.fills},
                {"synchronizations", c.synchronizations},
                {"peak_reserved_bytes", c.peak_reserved_bytes}};
}

// Upstream API calls that must agree between the simulated and the real run.
std::vector<std::pair<const char*, std::uint64_t>> api_calls(const rs::UpstreamCounters& c) {
    return {{"cudaMalloc", c.device_allocs},  {"cudaFree", c.device_frees},       {"cudaMallocAsync", c.async_allocs},
            {"cudaFreeAsync", c.async_frees}, {"cudaMemset", c.fills},           {"cudaDeviceSynchronize", c.synchronizations}};
}

std::string trace_format_label(const ReuseSimOptions& o) {
    if (o.trace.empty()) return "generated";
    rs::TraceFormat f = rs::parse_trace_format(o.trace_format);
    if (f == rs::TraceFormat::automatic) f = rs::detect_trace_format(o.trace);
    return rs::trace_format_name(f);
}

int execute_device(const LegacyGlobals& globals) {
    const DeviceSpec spec = chosen_device_spec(globals, "0");
    if (spec.all || spec.selectors.size() != 1) throw UsageError("--execute runs on one device: give -d with a single GPU");
    const std::vector<DeviceIdentity> visible = cuda_visible_devices();  // NoDeviceError without a GPU
    const auto positions = resolve_device_spec(spec, visible);
    return visible[positions.front()].cuda_index.value().ordinal();
}

void run_reuse_sim(const ReuseSimOptions& o, Context& ctx) {
    Report& report = ctx.report;
    report.command = "reuse-sim";
    if (!ctx.globals.device.empty() && !o.execute)
        throw UsageError("-d/--device selects the GPU for --execute; reuse-sim alone uses no GPU");
    // Everything the user wrote is checked before any work (and before CUDA).
    const std::vector<rs::StrategyKind> kinds = rs::parse_strategy_list(o.strategy);
    rs::StrategyOptions sopts = strategy_options(o);
    const std::uint64_t capacity = o.capacity.empty() ? rs::kUnlimited : parse_size(o.capacity);
    auto make_source = source_factory(o);
    std::vector<std::string> missing_costs;
    const rs::CostTable table = o.costs.empty() ? rs::default_cost_table() : rs::read_cost_table(o.costs, &missing_costs);
    if (!missing_costs.empty()) {
        report.warnings.push_back(o.costs + ": no " + comma_list(missing_costs) + "; built-in figures used for those");
        spdlog::warn("{}", report.warnings.back());
    }
    const rs::CostModel costs(table);
    // The GPU, too, before the simulation: without one, --execute fails at
    // once (exit 3) instead of after a long replay whose table it then prints.
    const int device = o.execute ? execute_device(ctx.globals) : -1;

    std::unique_ptr<rs::EventSource> source = make_source();
    const bool has_ring = std::find(kinds.begin(), kinds.end(), rs::StrategyKind::ring) != kinds.end();
    if (has_ring && sopts.ring_size == 0) {
        sopts.ring_size = std::max<std::uint64_t>(rs::largest_request(*source), 1);
    }

    std::vector<std::unique_ptr<rs::Lane>> lanes;
    std::vector<rs::Lane*> lane_ptrs;
    std::vector<std::string> names;
    for (rs::StrategyKind k : kinds) {
        auto lane = std::make_unique<rs::Lane>(rs::strategy_name(k), std::make_unique<rs::SimulatedUpstream>(capacity, &costs));
        lane->strategy = rs::make_strategy(k, sopts, *lane->upstream);
        lane_ptrs.push_back(lane.get());
        names.push_back(lane->name);
        lanes.push_back(std::move(lane));
    }
    const bool chart = ctx.output.format == Format::table && !o.no_chart;
    rs::ReplayOptions ropts;
    ropts.sync_every = o.sync_every;
    ropts.timeline_points = (chart || !o.timeline.empty()) ? std::max(o.timeline_points, kChartWidth) : 0;
    ropts.poll = [] { throw_if_interrupted(); };
    rs::Replay replay(lane_ptrs, ropts);
    std::unique_ptr<TeeSource> tee;
    if (!o.save_trace.empty()) tee = std::make_unique<TeeSource>(*source, o.save_trace);
    const rs::ReplaySummary summary = replay.run(tee ? static_cast<rs::EventSource&>(*tee) : *source);
    if (tee) tee->close();

    std::vector<rs::LaneResult> results;
    results.reserve(lanes.size());
    for (const auto& lane : lanes) results.push_back(rs::summarize(*lane));

    Table table_rows = comparison_table(results, o.execute);
    Json details = Json::object(), upstreams = Json::object();
    for (const rs::LaneResult& r : results) {
        Json d = Json::object();
        d["hits"] = r.hits;
        d["served"] = r.served;
        for (const auto& [k, v] : r.details) d[k] = v;
        details[r.strategy] = std::move(d);
        upstreams[r.strategy] = counters_json(r.counters);
    }
    const std::string input_description = source->description();
    report.extra["input"] = {{"kind", o.trace.empty() ? "workload" : "trace"},
                             {"description", input_description},
                             {"format", trace_format_label(o)}};
    report.extra["events"] = summary.events;
    report.extra["requests"] = summary.allocs;
    report.extra["frees"] = summary.frees;
    report.extra["sync_points"] = summary.syncs;
    report.extra["skipped_events"] = summary.skipped;
    report.extra["streams"] = summary.streams;
    report.extra["peak_live_bytes"] = summary.peak_live_bytes;
    report.extra["largest_request_bytes"] = summary.largest_request;
    report.extra["max_live_allocations"] = summary.max_live_allocations;
    report.extra["live_at_end"] = summary.live_at_end;
    report.extra["capacity_bytes"] = capacity == rs::kUnlimited ? Json() : Json(capacity);
    report.extra["simulation_seconds"] = summary.seconds;
    report.extra["events_per_second"] = summary.seconds > 0 ? static_cast<double>(summary.events) / summary.seconds : 0.0;
    report.extra["cost_table"] = {{"device", table.device}, {"source", table.source}};
    report.extra["options"] = {
        {"growth", std::string(kGrowthRules.name_of(sopts.growth))},
        {"zero_fill", sopts.zero_fill},
        {"ring_buffers", sopts.ring_buffers},
        {"ring_size", sopts.ring_size},
        {"pool_initial", sopts.pool_initial},
        {"pool_max", sopts.pool_maximum == rs::kUnlimited ? Json() : Json(sopts.pool_maximum)},
        {"bins", sopts.bins},
        {"bin_blocks", sopts.bin_blocks},
        {"max_split_size", sopts.torch.max_split_size == rs::TorchOptions::kNoLimit ? Json() : Json(sopts.torch.max_split_size)},
        {"max_non_split_rounding", sopts.torch.max_non_split_rounding},
        {"roundup_power2_divisions", sopts.torch.roundup_power2_divisions},
        {"release_threshold", sopts.release_threshold},
        {"sync_every", o.sync_every},
    };
    report.extra["details"] = std::move(details);
    report.extra["upstream"] = std::move(upstreams);

    std::string head = "reuse-sim: " + input_description + ": " + std::to_string(summary.events) + " events, " +
                       std::to_string(summary.allocs) + " requests, peak live " + format_bytes(summary.peak_live_bytes, ctx.output.unit) +
                       ", largest request " + format_bytes(summary.largest_request, ctx.output.unit);
    if (capacity != rs::kUnlimited) head += ", capacity " + format_bytes(capacity, ctx.output.unit);
    report.text_before.push_back(head);
    if (summary.skipped)
        report.warnings.push_back(std::to_string(summary.skipped) + " 'allocate failure' lines of the trace were not replayed");
    if (!o.timeline.empty() && replay.timeline()) write_timeline(o.timeline, *replay.timeline(), names);

    report.tables.push_back(std::move(table_rows));
    Table& shown = report.tables.back();

    if (o.execute) {
        const rs::CudaDeviceMemory before = rs::cuda_device_memory(DeviceId(device));
        Json runs = Json::array();
        std::vector<std::string> mismatches;
        // Lanes whose real device refused requests the simulated one granted:
        // the GPU had less free memory than the replay needs. Their call
        // counts then differ too, but the cause is memory, not the model.
        std::vector<std::string> out_of_memory;
        std::uint64_t refused = 0;
        for (std::size_t i = 0; i < kinds.size(); ++i) {
            throw_if_interrupted();
            std::unique_ptr<rs::EventSource> real_source = make_source();
            rs::Lane lane(names[i], rs::make_cuda_upstream(DeviceId(device), capacity, &costs));
            lane.strategy = rs::make_strategy(kinds[i], sopts, *lane.upstream);
            rs::ReplayOptions eopts;
            eopts.sync_every = o.sync_every;
            eopts.poll = [] { throw_if_interrupted(); };
            eopts.poll_interval = 256;
            rs::Replay real(std::vector<rs::Lane*>{&lane}, eopts);
            const rs::ReplaySummary rsum = real.run(*real_source);
            const rs::LaneResult measured = rs::summarize(lane);
            real.teardown();
            Json calls = Json::object();
            bool agree = measured.ooms == results[i].ooms;
            const auto sim_calls = api_calls(results[i].counters), real_calls = api_calls(measured.counters);
            for (std::size_t k = 0; k < sim_calls.size(); ++k) {
                calls[sim_calls[k].first] = {{"simulated", sim_calls[k].second}, {"real", real_calls[k].second}};
                if (sim_calls[k].second != real_calls[k].second) agree = false;
            }
            if (measured.ooms > results[i].ooms) {
                out_of_memory.push_back(names[i]);
                refused += measured.ooms - results[i].ooms;
            } else if (!agree) {
                mismatches.push_back(names[i]);
            }
            shown.rows[i].back() = measured.measured_us / 1000.0;
            runs.push_back({{"strategy", names[i]},
                            {"calls", std::move(calls)},
                            {"ooms", {{"simulated", results[i].ooms}, {"real", measured.ooms}}},
                            {"peak_reserved_bytes", {{"simulated", results[i].peak_reserved}, {"real", measured.peak_reserved}}},
                            {"pool_grows", {{"simulated", results[i].counters.pool_grows}, {"real", measured.counters.pool_grows}}},
                            {"measured_ms", measured.measured_us / 1000.0},
                            {"modelled_ms", results[i].modelled_us / 1000.0},
                            {"wall_seconds", rsum.seconds},
                            {"counts_agree", agree}});
        }
        const rs::CudaDeviceMemory after = rs::cuda_device_memory(DeviceId(device));
        report.extra["execute"] = {{"device", device},
                                   {"device_name", before.name},
                                   {"free_bytes_before", before.free_bytes},
                                   {"free_bytes_after", after.free_bytes},
                                   {"verified", mismatches.empty() && out_of_memory.empty()},
                                   {"runs", std::move(runs)}};
        report.text_after.push_back("");
        report.text_after.push_back("--execute on GPU " + std::to_string(device) + " (" + before.name +
                                    "): GPU ms is the host time of the real CUDA calls; upstream call counts " +
                                    (!out_of_memory.empty() ? "not compared: the GPU ran out of memory"
                                     : mismatches.empty()   ? "agree with the simulation"
                                                            : "DIFFER from the simulation"));
        if (!out_of_memory.empty()) {
            if (ctx.output.format == Format::table) mark_best(shown, ctx.output.unit);
            throw OutOfMemoryError("--execute: GPU " + std::to_string(device) + " ran out of memory replaying " + comma_list(out_of_memory) +
                                       ": " + std::to_string(refused) + " request(s) refused that the simulated device granted (" +
                                       format_bytes(before.free_bytes, ctx.output.unit) + " free before; --capacity simulates a smaller device)",
                                   summary.largest_request);
        }
        if (!mismatches.empty()) {
            if (ctx.output.format == Format::table) mark_best(shown, ctx.output.unit);
            throw VerificationError("--execute: real upstream calls differ from the simulated ones for " + comma_list(mismatches) +
                                    " (see \"execute\" in --json)");
        }
    }

    if (ctx.output.format == Format::table) {
        mark_best(shown, ctx.output.unit);
        report.text_after.push_back("");
        report.text_after.push_back("* best in its column. Model ms: CUDA calls priced by the cost table (" + table.device +
                                    (o.costs.empty() ? ", built-in" : ", " + o.costs) + ").");
        if (chart && replay.timeline()) {
            const bool unicode = isatty(STDOUT_FILENO) == 1;
            for (auto& line : render_chart(*replay.timeline(), names, unicode, ctx.output.unit)) report.text_after.push_back(line);
        }
    }
    for (const auto& w : report.warnings) spdlog::warn("{}", w);
}

}  // namespace

void setup_reuse_sim(CLI::App& sub_app, Context& ctx, bool full) {
    auto o = std::make_shared<ReuseSimOptions>();
    CLI::App* sub = &sub_app;
    if (!full) return;  // listed in --help; options only for the subcommand invoked
    sub->footer("Sizes take units (4KiB, 1.5GiB). Strategies: naive, grow-only, shape-persistent, ring, pool, binning, "
                "torch-caching, async-pool, or all. See gpumem(1), section REUSE-SIM.");
    auto* workload = sub->add_option("--workload", o->workload, "Built-in workload: inference, dynamic, detector, llm-decode, training (default dynamic)")
                         ->type_name("NAME")
                         ->check(CLI::IsMember(rs::workload_names()));
    auto* steps = sub->add_option("--steps", o->steps, "Steps of the workload: inferences, LLM requests or training iterations (default 200)")
                      ->type_name("N")
                      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
    auto* seed = sub->add_option("--seed", o->seed, "Seed of the workload's random choices (default 1)")->type_name("N");
    auto* change = sub->add_option("--change-rate", o->change_rate, "dynamic: chance per step that the batch size changes (default 0.1)")
                       ->type_name("P")
                       ->check(CLI::Range(0.0, 1.0));
    auto* batch = sub->add_option("--batch", o->batch, "Batch size N, or MIN..MAX for dynamic (default 1..32; others use MAX)")->type_name("N|MIN..MAX");
    auto* layers = sub->add_option("--layers", o->layers, "Layers of the model (default 8)")->type_name("N")->check(CLI::Range(1, 1000));
    auto* sample = sub->add_option("--sample-bytes", o->sample_bytes, "Activation bytes per sample at the first layer (default 768KiB)")
                       ->type_name("SIZE")
                       ->check(size_validator(false));
    auto* detections = sub->add_option("--max-detections", o->max_detections, "detector: detections per image drawn from 0..N (default 100)")
                           ->type_name("N");
    auto* prompt = sub->add_option("--prompt", o->prompt, "llm-decode: prompt tokens MIN..MAX (default 32..512)")->type_name("MIN..MAX");
    auto* tokens = sub->add_option("--tokens", o->tokens, "llm-decode: generated tokens per request MIN..MAX (default 16..256)")->type_name("MIN..MAX");
    auto* streams = sub->add_option("--streams", o->streams, "Run steps on N streams in turn (default 1)")->type_name("N")->check(CLI::Range(1, 1024));
    auto* trace = sub->add_option("--trace", o->trace, "Replay this trace instead of a workload (- for standard input)")->type_name("FILE");
    sub->add_option("--trace-format", o->trace_format, "Trace format: gpumem, rmm, or auto (by the header; default)")
        ->type_name("FMT")
        ->check(CLI::IsMember({"auto", "gpumem", "rmm"}));
    for (CLI::Option* w : {workload, steps, seed, change, batch, layers, sample, detections, prompt, tokens, streams}) trace->excludes(w);

    sub->add_option("--strategy", o->strategy, "Strategies to compare: NAME[,NAME...] or all (default all)")->type_name("LIST");
    sub->add_option("--growth", o->growth, "grow-only: growth when a request exceeds the buffer: exact, 512B, 2MiB, x1.5, x2 (default exact)")
        ->type_name("RULE")
        ->check(CLI::IsMember({"exact", "512B", "2MiB", "x1.5", "x2"}));
    sub->add_flag("--zero-fill", o->zero_fill, "grow-only: cudaMemset every new buffer, as MixMemory does (counted as a device stall)");
    sub->add_option("--ring-buffers", o->ring_buffers, "ring: number of buffers (default 4)")->type_name("N")->check(CLI::Range(1, 1 << 20));
    sub->add_option("--ring-size", o->ring_size, "ring: buffer size (default: the largest request)")->type_name("SIZE")->check(size_validator(false));
    sub->add_option("--pool-initial", o->pool_initial, "pool, binning: initial pool size (default 0: grow on demand)")
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub->add_option("--pool-max", o->pool_max, "pool, binning: maximum pool size (default: none, the pool doubles)")
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub->add_option("--bins", o->bins, "binning: bin sizes as a RANGE (default 256KiB..4MiB, RMM's benchmark bins)")
        ->type_name("RANGE")
        ->check(range_validator());
    sub->add_option("--bin-blocks", o->bin_blocks, "binning: blocks per chunk a bin takes from the pool (default 128)")
        ->type_name("N")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
    sub->add_option("--max-split-size", o->max_split_size, "torch-caching: max_split_size (PYTORCH_CUDA_ALLOC_CONF max_split_size_mb; default unlimited)")
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub->add_option("--max-non-split-rounding", o->max_non_split_rounding, "torch-caching: max_non_split_rounding (default 20MiB)")
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub->add_option("--roundup-power2-divisions", o->roundup_power2_divisions,
                    "torch-caching: roundup_power2_divisions, N or [MIB:N,...,>:N] as in PYTORCH_CUDA_ALLOC_CONF (default off)")
        ->type_name("SPEC");
    sub->add_option("--release-threshold", o->release_threshold, "async-pool: memory the pool keeps across synchronizations (default 0)")
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub->add_option("--sync-every", o->sync_every, "Also synchronize the device every N requests (traces have no sync points of their own)")
        ->type_name("N");
    sub->add_option("--capacity", o->capacity, "Device memory the strategies may reserve; beyond it allocations fail (default unlimited)")
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub->add_option("--costs", o->costs, "Cost table (JSON, from alloc-test latency --save-costs) for the modelled time")->type_name("FILE");
    sub->add_option("--timeline", o->timeline, "Write reserved bytes per strategy over the run as CSV")->type_name("FILE");
    sub->add_option("--timeline-points", o->timeline_points, "Points kept for --timeline (default 1000)")
        ->type_name("N")
        ->check(CLI::Range(std::size_t{2}, std::size_t{1} << 24));
    sub->add_option("--save-trace", o->save_trace, "Also write the input's events as a gpumem trace (CSV) to FILE")
        ->type_name("FILE");
    sub->add_flag("--no-chart", o->no_chart, "Table mode: no chart of reserved bytes");
    sub->add_flag("--execute", o->execute,
                  "Also replay each strategy for real on the GPU (-d), report the measured time and check that the real CUDA "
                  "call counts equal the simulated ones (exit 4 if not)");
    sub->callback([o, &ctx] {
        ctx.run = [o, &ctx] { run_reuse_sim(*o, ctx); };
    });
}

}  // namespace gpumem::cli
