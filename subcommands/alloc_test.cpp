// gpumem alloc-test: scripted allocation stress tests (latency, max, fill,
// churn, hold). The modes' logic lives in src/bench/alloc_modes.cpp; this file
// parses and validates options (before any GPU work), runs the modes on the
// chosen devices and turns their results into a Report.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <spdlog/spdlog.h>

#include "bench/alloc_apis.hpp"
#include "bench/alloc_modes.hpp"
#include "legacy.hpp"
#include "core/device_inventory.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "progress.hpp"
#include "base/sizes.hpp"
#include "core/timing.hpp"
#include "version.hpp"

namespace gpumem::cli {
namespace {

constexpr const char* kDefaultLatencySizes = "4KiB,1MiB,16MiB,256MiB,1GiB";
constexpr const char* kDefaultChurnSizes = "4KiB..64MiB";
constexpr std::uint64_t kDefaultChurnOps = 10000;

// What the user typed, per mode; turned into the core's option structs by
// the validators below, before the driver is touched.
struct LatencyCli {
    std::vector<std::string> apis{"device"};
    std::string sizes = kDefaultLatencySizes;
    int iterations = 50;
    int warmup = 3;
    bool no_sync_probe = false;
    std::string save_costs;
    LatencyOptions options;
};

struct MaxCli {
    std::string granularity = "2MiB";
    std::string chunk = "1GiB";
    MaxOptions options;
};

struct FillCli {
    std::string total = "90%";
    std::string chunk = "1GiB";
    bool verify = false;
    std::vector<std::string> patterns;
    int passes = 1;
    std::uint64_t seed = 1;
    long long corrupt_word = -1;  // hidden test hook
    FillOptions options;
};

struct ChurnCli {
    std::string sizes = kDefaultChurnSizes;
    std::uint64_t ops = 0;
    std::string duration;
    std::uint64_t seed = 1;
    std::string via = "direct";
    std::string api = "device";
    std::size_t slots = 4;
    std::string growth = "exact";
    std::string max_live = "50%";
    ChurnOptions options;
};

struct HoldCli {
    std::string total;
    std::string chunk = "1GiB";
    std::string duration;
    double duration_s = 0;  // 0: until a signal
    std::uint64_t chunk_bytes = 1ULL << 30;
    SizeSpec total_spec;
};

// ---------------------------------------------------------------------------
// Validation (no CUDA)

std::uint64_t chunk_size(const std::string& text) {
    const std::uint64_t bytes = parse_size(text);
    if (bytes % 8 != 0) throw UsageError("--chunk must be a multiple of 8 bytes: the patterns are 64-bit words");
    return bytes;
}

void validate(LatencyCli& c) {
    c.options.apis = parse_alloc_api_list(c.apis);
    c.options.sizes = parse_size_range(c.sizes);
    c.options.iterations = c.iterations;
    c.options.warmup = c.warmup;
    c.options.probe_sync = !c.no_sync_probe;
    if (!c.save_costs.empty()) {
        // Open it for writing now, before any GPU work: access() on the
        // folder says yes to root everywhere (even /proc) and misses a
        // folder named as the file. A file this check creates is removed.
        const char* path = c.save_costs.c_str();
        int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        const bool created = fd >= 0;
        if (fd < 0 && errno == EEXIST) fd = ::open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0) throw UsageError("--save-costs: cannot write '" + c.save_costs + "': " + std::strerror(errno));
        ::close(fd);
        if (created) ::unlink(path);
    }
}

void validate(MaxCli& c) {
    c.options.granularity = parse_size(c.granularity);
    c.options.chunk = parse_size(c.chunk);
    if (c.options.chunk < c.options.granularity) throw UsageError("--chunk must not be smaller than --granularity");
}

void validate(FillCli& c) {
    c.options.total = parse_size_spec(c.total, {false, true});
    c.options.chunk = chunk_size(c.chunk);
    c.options.verify = c.verify;
    c.options.patterns = c.patterns.empty() ? all_patterns() : parse_pattern_list(c.patterns);
    c.options.passes = c.passes;
    c.options.seed = c.seed;
    if (c.corrupt_word >= 0) {
        if (!c.verify) throw UsageError("--debug-corrupt-word needs --verify");
        c.options.corrupt_word = static_cast<std::uint64_t>(c.corrupt_word);
    }
}

void validate(ChurnCli& c, const CLI::App& sub) {
    if (c.via == "direct") {
        c.options.via = ChurnOptions::Via::direct;
    } else if (c.via == "mixmemory") {
        c.options.via = ChurnOptions::Via::mixmemory;
    } else {
        throw UsageError("unknown --via '" + c.via + "' (expected direct or mixmemory)");
    }
    c.options.api = parse_alloc_api(c.api);
    const bool mix = c.options.via == ChurnOptions::Via::mixmemory;
    if (mix && c.options.api != AllocApi::device)
        throw UsageError("--via mixmemory allocates device memory through MixMemory; --api must be device");
    if (!mix && (sub.count("--slots") || sub.count("--growth")))
        throw UsageError("--slots and --growth need --via mixmemory");
    c.options.sizes = parse_size_range(c.sizes);
    c.options.ops = c.ops;
    c.options.duration_s = c.duration.empty() ? 0 : parse_duration_seconds(c.duration);
    if (c.options.ops == 0 && c.options.duration_s == 0) c.options.ops = kDefaultChurnOps;
    c.options.seed = c.seed;
    c.options.max_live = parse_size_spec(c.max_live, {false, true});
    c.options.slots = c.slots;
    c.options.growth = parse_growth_policy(c.growth);
}

void validate(HoldCli& c) {
    c.total_spec = parse_size_spec(c.total, {false, true});
    c.chunk_bytes = chunk_size(c.chunk);
    c.duration_s = c.duration.empty() ? 0 : parse_duration_seconds(c.duration);
}

// ---------------------------------------------------------------------------
// Running

struct Devices {
    std::vector<DeviceIdentity> identities;
    std::vector<DeviceId> ordinals;
};

Devices choose_devices(const Context& ctx) {
    Devices d;
    d.identities = resolve_cuda_devices(ctx.globals, "0");
    for (const DeviceIdentity& id : d.identities) d.ordinals.push_back(id.cuda_index.value());
    return d;
}

// Progress on stderr for a single device on a terminal; several device
// threads would garble one line, so they run without.
class ProgressSink {
public:
    ProgressSink(const Context& ctx, std::size_t device_count, std::string command)
        : enabled_(device_count == 1 && progress_enabled(ctx.globals)), command_(std::move(command)) {}

    ProgressFn fn() {
        if (!enabled_) return {};
        return [this](const char* phase, std::uint64_t done, std::uint64_t total) {
            if (!bar_ || phase_ != phase) {
                bar_.reset();
                phase_ = phase;
                bar_ = std::make_unique<Progress>(true, command_ + ": " + phase_, total);
            }
            bar_->update(done);
        };
    }
    void finish() { bar_.reset(); }

private:
    bool enabled_;
    std::string command_;
    std::string phase_;
    std::unique_ptr<Progress> bar_;
};

std::string device_line(const DeviceIdentity& id) {
    return "device " + to_string(id.cuda_index.value()) + ": " + id.name + " (" + id.uuid + ")";
}

// A row from cells of any type. (Built one cell at a time: an initializer
// list of variants trips GCC 12's -Wmaybe-uninitialized.)
template <typename... Values>
std::vector<Cell> cells(Values&&... values) {
    std::vector<Cell> row;
    row.reserve(sizeof...(values));
    (row.emplace_back(std::forward<Values>(values)), ...);
    return row;
}

template <typename... Values>
void append(std::vector<Cell>& row, Values&&... values) {
    (row.emplace_back(std::forward<Values>(values)), ...);
}

Cell optional_bool(const std::optional<bool>& b) { return b ? Cell(*b) : Cell(); }

Cell percent_of(std::uint64_t part, std::uint64_t whole) {
    return whole ? Cell(100.0 * static_cast<double>(part) / static_cast<double>(whole)) : Cell();
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot open '" + path + "' for writing: " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) throw Error("cannot write '" + path + "': " + std::strerror(errno));
}

// A failed chunked allocation is reported in the JSON document too.
void note_allocation_failure(Context& ctx, const PartialAllocationError& e) {
    ctx.report.extra["allocation_failure"] = {{"index", e.device().ordinal()},
                                              {"requested", e.requested_bytes()},
                                              {"allocated_before_failure", e.allocated_bytes()},
                                              {"pieces_before_failure", e.pieces()}};
}

// --- latency

void run_latency_mode(LatencyCli& c, Context& ctx) {
    ctx.report.command = "alloc-test latency";
    if (!c.save_costs.empty()) {
        const DeviceSpec spec = chosen_device_spec(ctx.globals, "0");
        if (spec.all || spec.selectors.size() != 1)
            throw UsageError("--save-costs writes one device's table; choose one device with -d");
    }
    const Devices devices = choose_devices(ctx);
    ProgressSink sink(ctx, devices.ordinals.size(), "alloc-test latency");
    const std::vector<LatencyResult> results = run_on_devices(
        devices.ordinals, [&](DeviceId device, const StopToken& stop) { return run_latency(device, c.options, stop, sink.fn()); });
    sink.finish();

    const bool any_vmm = std::find(c.options.apis.begin(), c.options.apis.end(), AllocApi::vmm) != c.options.apis.end();
    Table t;
    t.key = "latency";
    t.fields = {{"index", "cuda", FieldKind::integer}, {"api", "api", FieldKind::text}, {"size", "size", FieldKind::bytes}};
    if (any_vmm) t.fields.push_back({"allocated", "allocated", FieldKind::bytes});
    t.fields.insert(t.fields.end(), {{"iterations", "n", FieldKind::integer},
                                     {"alloc_p50_us", "alloc p50 us", FieldKind::real, 1},
                                     {"alloc_p90_us", "p90", FieldKind::real, 1},
                                     {"alloc_p99_us", "p99", FieldKind::real, 1},
                                     {"alloc_max_us", "max", FieldKind::real, 1},
                                     {"free_p50_us", "free p50 us", FieldKind::real, 1},
                                     {"free_p90_us", "p90", FieldKind::real, 1},
                                     {"free_p99_us", "p99", FieldKind::real, 1},
                                     {"free_max_us", "max", FieldKind::real, 1},
                                     {"alloc_syncs", "alloc syncs", FieldKind::boolean},
                                     {"free_syncs", "free syncs", FieldKind::boolean}});
    for (std::size_t d = 0; d < results.size(); ++d) {
        const LatencyResult& r = results[d];
        ctx.report.text_before.push_back(device_line(devices.identities[d]));
        for (const LatencyRow& row : r.rows) {
            const auto probe = std::find_if(r.sync.begin(), r.sync.end(), [&](const SyncProbe& p) { return p.api == row.api; });
            std::vector<Cell> row_cells =
                cells(static_cast<std::int64_t>(devices.identities[d].cuda_index.value().ordinal()), std::string(alloc_api_name(row.api)), row.size);
            if (any_vmm) append(row_cells, row.allocated);
            append(row_cells, static_cast<std::int64_t>(row.alloc_us.count), row.alloc_us.median, row.alloc_us.p90,
                   row.alloc_us.p99, row.alloc_us.max, row.free_us.median, row.free_us.p90, row.free_us.p99,
                   row.free_us.max, probe != r.sync.end() ? optional_bool(probe->alloc_syncs) : Cell(),
                   probe != r.sync.end() ? optional_bool(probe->free_syncs) : Cell());
            t.add_row(std::move(row_cells));
        }
    }
    ctx.report.tables.push_back(std::move(t));
    ctx.report.text_before.push_back("host clock per call, " + std::to_string(c.options.iterations) + " iterations after " +
                                     std::to_string(c.options.warmup) + " warm-ups; microseconds");
    ctx.report.extra["iterations"] = c.options.iterations;
    ctx.report.extra["warmup"] = c.options.warmup;
    if (c.options.probe_sync) {
        ctx.report.text_after.push_back("syncs: the call returned only after a " + format_decimal(kSyncProbeKernelMs, 0) +
                                        " ms kernel on another stream had ended (probed with " +
                                        format_bytes(kSyncProbeBytes) + "); - means undecided");
        ctx.report.extra["sync_probe"] = {{"kernel_ms", kSyncProbeKernelMs}, {"bytes", kSyncProbeBytes}};
    }
    if (!c.save_costs.empty()) {
        const std::string source = std::string("gpumem ") + GPUMEM_VERSION + " alloc-test latency: host-clock medians of " +
                                   std::to_string(c.options.iterations) + " iterations";
        write_file(c.save_costs, reuse_sim::cost_table_to_json(
                                     cost_table_from_latency(results.front(), devices.identities.front().name, source)));
        ctx.report.extra["cost_table"] = c.save_costs;
        ctx.report.text_after.push_back("cost table written to " + c.save_costs);
    }
}

// --- max

void run_max_mode(MaxCli& c, Context& ctx) {
    ctx.report.command = "alloc-test max";
    const Devices devices = choose_devices(ctx);
    ProgressSink sink(ctx, devices.ordinals.size(), "alloc-test max");
    const std::vector<MaxResult> results = run_on_devices(
        devices.ordinals, [&](DeviceId device, const StopToken& stop) { return run_max(device, c.options, stop, sink.fn()); });
    sink.finish();
    Table t;
    t.key = "max";
    t.fields = {{"index", "cuda", FieldKind::integer},
                {"total", "total", FieldKind::bytes},
                {"free", "free", FieldKind::bytes},
                {"largest_single", "largest single", FieldKind::bytes},
                {"largest_pct_free", "% free", FieldKind::percent, 1},
                {"chunk", "chunk", FieldKind::bytes},
                {"chunks", "chunks", FieldKind::integer},
                {"tail_pieces", "tail", FieldKind::integer},
                {"obtainable", "obtainable", FieldKind::bytes},
                {"obtainable_pct_free", "% free", FieldKind::percent, 1},
                {"obtainable_pct_total", "% total", FieldKind::percent, 1},
                {"shortfall", "short of free", FieldKind::bytes},
                {"probes", "probes", FieldKind::integer}};
    for (std::size_t d = 0; d < results.size(); ++d) {
        const MaxResult& r = results[d];
        ctx.report.text_before.push_back(device_line(devices.identities[d]));
        const std::uint64_t got = r.chunks.total();
        t.add_row(cells(static_cast<std::int64_t>(devices.identities[d].cuda_index.value().ordinal()), r.total, r.free_before,
                        r.largest_single, percent_of(r.largest_single, r.free_before), c.options.chunk,
                        r.chunks.full_chunks, r.chunks.tail_pieces, got, percent_of(got, r.free_before),
                        percent_of(got, r.total), r.free_before > got ? r.free_before - got : std::uint64_t{0},
                        static_cast<std::int64_t>(r.probes)));
    }
    ctx.report.tables.push_back(std::move(t));
    ctx.report.extra["granularity"] = c.options.granularity;
    ctx.report.text_after.push_back("largest single: binary search of cudaMalloc to " + format_bytes(c.options.granularity) +
                                    "; obtainable: pieces of the chunk until one fails, then halves down to the granularity. "
                                    "free is cudaMemGetInfo's, with gpumem's own context (~0.5 GiB) already counted as used.");
}

// --- fill

std::string patterns_text(const std::vector<Pattern>& patterns) {
    std::string s;
    for (Pattern p : patterns) s += (s.empty() ? "" : ",") + std::string(pattern_name(p));
    return s;
}

std::string hex(std::uint64_t v) {
    std::ostringstream out;
    out << "0x" << std::hex << v;
    return out.str();
}

void run_fill_mode(FillCli& c, Context& ctx) {
    ctx.report.command = "alloc-test fill";
    const Devices devices = choose_devices(ctx);
    ProgressSink sink(ctx, devices.ordinals.size(), "alloc-test fill");
    std::vector<FillResult> results;
    try {
        results = run_on_devices(devices.ordinals,
                                 [&](DeviceId device, const StopToken& stop) { return run_fill(device, c.options, stop, sink.fn()); });
    } catch (const PartialAllocationError& e) {
        note_allocation_failure(ctx, e);
        throw;
    }
    sink.finish();
    Table t;
    t.key = "fill";
    t.fields = {{"index", "cuda", FieldKind::integer},
                {"free", "free", FieldKind::bytes},
                {"requested", "requested", FieldKind::bytes},
                {"allocated", "allocated", FieldKind::bytes},
                {"chunks", "chunks", FieldKind::integer},
                {"alloc_seconds", "alloc s", FieldKind::real, 3},
                {"patterns", "patterns", FieldKind::text},
                {"passes", "passes", FieldKind::integer},
                {"bytes_written", "written", FieldKind::bytes},
                {"bytes_read", "read", FieldKind::bytes},
                {"write_gbps", "write", FieldKind::bandwidth},
                {"read_gbps", "read", FieldKind::bandwidth},
                {"gbps", "write+read", FieldKind::bandwidth},
                {"peak_gbps", "peak", FieldKind::bandwidth},
                {"pct_of_peak", "% peak", FieldKind::percent, 1},
                {"mismatched_words", "bad words", FieldKind::integer},
                {"result", "result", FieldKind::text}};
    Json mismatches = Json::array();
    std::string failure;
    std::uint64_t failing_devices = 0;
    for (std::size_t d = 0; d < results.size(); ++d) {
        const FillResult& r = results[d];
        const DeviceIdentity& id = devices.identities[d];
        ctx.report.text_before.push_back(device_line(id));
        const double seconds = r.write_seconds + r.read_seconds;
        const double rate = seconds > 0 ? static_cast<double>(r.bytes_written + r.bytes_read) / seconds : 0;
        const std::optional<double> peak = nvml_figures_for(id.pci).peak_memory_bandwidth;
        const bool wrote = r.bytes_written > 0;
        const char* verdict = !wrote ? "allocated" : !c.options.verify ? "written" : r.mismatched_words ? "FAILED" : "ok";
        t.add_row(cells(static_cast<std::int64_t>(id.cuda_index.value().ordinal()), r.free_before, r.requested, r.allocated,
                        static_cast<std::uint64_t>(r.chunks), r.alloc_seconds, patterns_text(c.options.patterns),
                        static_cast<std::int64_t>(c.options.passes), r.bytes_written, r.bytes_read,
                        r.write_seconds > 0 ? Cell(r.bytes_written / r.write_seconds) : Cell(),
                        r.read_seconds > 0 ? Cell(r.bytes_read / r.read_seconds) : Cell(), rate > 0 ? Cell(rate) : Cell(),
                        peak ? Cell(*peak) : Cell(), peak && rate > 0 ? Cell(100.0 * rate / *peak) : Cell(),
                        r.mismatched_words, std::string(verdict)));
        for (const FillMismatch& m : r.mismatches) {
            mismatches.push_back({{"index", id.cuda_index.value().ordinal()},
                                  {"pattern", pattern_name(m.pattern)},
                                  {"pass", m.pass},
                                  {"chunk", m.chunk},
                                  {"chunk_base", hex(m.chunk_base)},
                                  {"offset", m.offset},
                                  {"address", hex(m.chunk_base + m.offset)},
                                  {"expected", hex(m.expected)},
                                  {"actual", hex(m.actual)},
                                  {"bad_words_in_chunk", m.words_in_chunk}});
        }
        if (r.mismatched_words && failure.empty()) {
            const FillMismatch& m = r.mismatches.front();
            failure = "device " + to_string(id.cuda_index.value()) + ": " + std::to_string(r.mismatched_words) +
                      " word(s) read back wrong; first at " + hex(m.chunk_base + m.offset) + " (chunk " +
                      std::to_string(m.chunk) + " at " + hex(m.chunk_base) + " + " + hex(m.offset) + ", pattern " +
                      pattern_name(m.pattern) + ", pass " + std::to_string(m.pass) + "): expected " + hex(m.expected) +
                      ", read " + hex(m.actual);
            for (std::size_t i = 1; i < r.mismatches.size() && i < 4; ++i)
                failure += "; " + hex(r.mismatches[i].chunk_base + r.mismatches[i].offset);
        }
        if (r.mismatched_words) ++failing_devices;
    }
    ctx.report.tables.push_back(std::move(t));
    ctx.report.extra["chunk"] = c.options.chunk;
    ctx.report.extra["verify"] = c.options.verify;
    ctx.report.extra["seed"] = c.options.seed;
    ctx.report.text_after.push_back(
        "write+read: bytes written plus bytes read back, over the kernels' time (CUDA events); peak from NVML's memory clock "
        "and bus width");
    if (!failure.empty()) {
        ctx.report.extra["mismatches"] = mismatches;
        if (failing_devices > 1) failure += " (and " + std::to_string(failing_devices - 1) + " more device(s))";
        throw VerificationError(failure);
    }
}

// --- churn

void run_churn_mode(ChurnCli& c, Context& ctx) {
    ctx.report.command = "alloc-test churn";
    const Devices devices = choose_devices(ctx);
    ProgressSink sink(ctx, devices.ordinals.size(), "alloc-test churn");
    const std::vector<ChurnResult> results = run_on_devices(
        devices.ordinals, [&](DeviceId device, const StopToken& stop) { return run_churn(device, c.options, stop, sink.fn()); });
    sink.finish();
    const bool mix = c.options.via == ChurnOptions::Via::mixmemory;
    Table t;
    t.key = "churn";
    t.fields = {{"index", "cuda", FieldKind::integer},
                {"via", "via", FieldKind::text},
                {"api", "api", FieldKind::text},
                {"ops", "ops", FieldKind::integer},
                {"allocations", "allocs", FieldKind::integer},
                {"frees", "frees", FieldKind::integer}};
    if (mix) t.fields.push_back({"reuses", "reuses", FieldKind::integer});
    t.fields.insert(t.fields.end(), {{"failures", "failures", FieldKind::integer},
                                     {"alloc_p50_us", mix ? "request p50 us" : "alloc p50 us", FieldKind::real, 1},
                                     {"alloc_p99_us", "p99", FieldKind::real, 1}});
    if (!mix)
        t.fields.insert(t.fields.end(), {{"free_p50_us", "free p50 us", FieldKind::real, 1},
                                         {"free_p99_us", "p99", FieldKind::real, 1}});
    t.fields.insert(t.fields.end(), {{"peak_live", mix ? "peak capacity" : "peak live", FieldKind::bytes},
                                     {"peak_used", "peak used", FieldKind::bytes},
                                     {"bytes_allocated", "allocated", FieldKind::bytes},
                                     {"max_live", "live cap", FieldKind::bytes},
                                     {"seconds", "seconds", FieldKind::real, 2}});
    for (std::size_t d = 0; d < results.size(); ++d) {
        const ChurnResult& r = results[d];
        ctx.report.text_before.push_back(device_line(devices.identities[d]));
        std::vector<Cell> row = cells(static_cast<std::int64_t>(devices.identities[d].cuda_index.value().ordinal()), c.via,
                                      std::string(alloc_api_name(c.options.api)), r.ops, r.allocations, r.frees);
        if (mix) row.push_back(r.reuses);
        row.push_back(r.failures);
        row.push_back(r.alloc_us.count ? Cell(r.alloc_us.median) : Cell());
        row.push_back(r.alloc_us.count ? Cell(r.alloc_us.p99) : Cell());
        if (!mix) {
            row.push_back(r.free_us.count ? Cell(r.free_us.median) : Cell());
            row.push_back(r.free_us.count ? Cell(r.free_us.p99) : Cell());
        }
        append(row, r.peak_live, r.peak_used, r.bytes_allocated, r.max_live, r.seconds);
        t.add_row(std::move(row));
    }
    ctx.report.tables.push_back(std::move(t));
    ctx.report.extra["seed"] = c.options.seed;
    ctx.report.extra["sizes"] = c.sizes;
    if (mix) {
        ctx.report.extra["slots"] = c.options.slots;
        ctx.report.extra["growth"] = c.options.growth.name();
        ctx.report.text_after.push_back("mixmemory: " + std::to_string(c.options.slots) +
                                        " slots; each op asks a random slot for a random size (a reuse when it fits, else a "
                                        "free and a larger allocation); peak capacity: sum of the slots' buffers");
    } else {
        ctx.report.text_after.push_back(
            "peak live: own accounting of live bytes; peak used: growth of cudaMemGetInfo's used memory over the start");
    }
}

// --- hold

void run_hold_mode(HoldCli& c, Context& ctx) {
    ctx.report.command = "alloc-test hold";
    const Devices devices = choose_devices(ctx);
    const bool json = ctx.output.format == Format::json;
    if (json) ctx.output.compact_json = true;  // JSON Lines: the ready event, then the final document
    ProgressSink sink(ctx, devices.ordinals.size(), "alloc-test hold");
    std::vector<HeldMemory> held;
    try {
        held = run_on_devices(devices.ordinals, [&](DeviceId device, const StopToken& stop) {
            return allocate_held(device, c.total_spec, c.chunk_bytes, stop, sink.fn());
        });
    } catch (const PartialAllocationError& e) {
        note_allocation_failure(ctx, e);
        throw;
    }
    sink.finish();

    std::uint64_t total = 0;
    std::string line = "ready: held ";
    Json event = {{"event", "ready"}};
    Json event_devices = Json::array();
    for (std::size_t d = 0; d < held.size(); ++d) {
        const DeviceIdentity& id = devices.identities[d];
        total += held[d].bytes;
        line += (d ? ", " : "") + format_bytes(held[d].bytes, ctx.output.unit) + " on device " +
                to_string(id.cuda_index.value()) + " (" + id.uuid + ")";
        event_devices.push_back({{"index", id.cuda_index.value().ordinal()}, {"uuid", id.uuid}, {"held", held[d].bytes}});
    }
    event["held"] = total;
    event["devices"] = event_devices;
    event["duration_seconds"] = c.duration_s > 0 ? Json(c.duration_s) : Json(nullptr);
    event["pid"] = static_cast<long long>(getpid());
    write_stdout(json ? event.dump() + "\n" : line + "\n");

    const double t0 = host_seconds();
    const bool completed = wait_interruptibly(c.duration_s);
    const double held_seconds = host_seconds() - t0;
    std::vector<std::uint64_t> piece_counts;
    for (HeldMemory& h : held) {
        piece_counts.push_back(h.pieces.size());
        h.pieces.clear();  // free before reporting
    }

    Table t;
    t.key = "hold";
    t.fields = {{"index", "cuda", FieldKind::integer},     {"uuid", "uuid", FieldKind::text},
                {"free", "free", FieldKind::bytes},        {"requested", "requested", FieldKind::bytes},
                {"held", "held", FieldKind::bytes},        {"chunks", "chunks", FieldKind::integer},
                {"alloc_seconds", "alloc s", FieldKind::real, 3}, {"held_seconds", "held s", FieldKind::real, 2},
                {"ended", "ended by", FieldKind::text}};
    for (std::size_t d = 0; d < held.size(); ++d) {
        const HeldMemory& h = held[d];
        t.add_row(cells(static_cast<std::int64_t>(devices.identities[d].cuda_index.value().ordinal()), devices.identities[d].uuid,
                        h.free_before, h.requested, h.bytes, piece_counts[d], h.alloc_seconds, held_seconds,
                        std::string(completed ? "duration" : "signal")));
    }
    ctx.report.tables.push_back(std::move(t));
    if (!completed) throw InterruptedError();
}

}  // namespace

void setup_alloc_test(CLI::App& sub_app, Context& ctx, bool full) {
    CLI::App* sub = &sub_app;
    if (!full) return;  // listed in --help; options only for the subcommand invoked
    // The mode is a subcommand; the hidden positional only catches unknown
    // modes so that the message can name them.
    auto unknown_mode = std::make_shared<std::string>();
    sub->require_subcommand(0, 1);
    sub->add_option("MODE", *unknown_mode, "latency, max, fill, churn or hold (each has its own --help)");
    sub->callback([sub, unknown_mode] {
        const char* modes = "latency, max, fill, churn or hold";
        if (sub->get_subcommands().empty()) {
            if (unknown_mode->empty()) throw UsageError(std::string("alloc-test needs a mode: ") + modes);
            throw UsageError("unknown alloc-test mode '" + *unknown_mode + "' (expected " + modes + ")");
        }
        if (!unknown_mode->empty()) throw UsageError("unexpected argument '" + *unknown_mode + "'");
    });

    // latency
    auto lat = std::make_shared<LatencyCli>();
    CLI::App* l = sub->add_subcommand("latency", "Allocation and free latency per API and size, and whether a free "
                                                 "synchronizes the device");
    l->add_option("--api", lat->apis, "Allocation APIs, comma list or repeated: " + alloc_api_names() + ", or all")
        ->type_name("API[,API...]");
    l->add_option("--sizes", lat->sizes, std::string("Sizes: SIZE, A,B,C, A..B (doubling), A..B:xF, A..B:+S (default ") +
                                             kDefaultLatencySizes + ")")
        ->check(range_validator());
    l->add_option("--iterations", lat->iterations, "Timed allocate/free pairs per size (default 50)")
        ->type_name("N")
        ->check(CLI::Range(1, 1000000));
    l->add_option("--warmup", lat->warmup, "Untimed pairs before them (default 3)")->type_name("N")->check(CLI::Range(0, 1000));
    l->add_flag("--no-sync-probe", lat->no_sync_probe, "Skip the probe of whether allocation and free synchronize the device");
    l->add_option("--save-costs", lat->save_costs, "Write the medians as a cost table (JSON) for gpumem reuse-sim --costs")
        ->type_name("FILE");
    l->callback([lat, &ctx] {
        validate(*lat);
        ctx.run = [lat, &ctx] { run_latency_mode(*lat, ctx); };
    });

    // max
    auto mx = std::make_shared<MaxCli>();
    CLI::App* m = sub->add_subcommand("max", "Largest single cudaMalloc (binary search) and the total obtainable in chunks");
    m->add_option("--granularity", mx->granularity, "Precision of the search and smallest back-off piece (default 2MiB)")
        ->check(size_validator(false));
    m->add_option("--chunk", mx->chunk, "Piece size for the total obtainable (default 1GiB)")->check(size_validator(false));
    m->callback([mx, &ctx] {
        validate(*mx);
        ctx.run = [mx, &ctx] { run_max_mode(*mx, ctx); };
    });

    // fill
    auto fl = std::make_shared<FillCli>();
    CLI::App* f = sub->add_subcommand("fill", "Allocate SIZE or PCT% of free memory in chunks, write patterns and "
                                              "optionally verify them");
    f->add_option("total,--total", fl->total, "How much: SIZE or PCT% of free memory (default 90%)")
        ->check(size_validator(true));
    f->add_option("--chunk", fl->chunk, "Allocation piece size (default 1GiB)")->check(size_validator(false));
    f->add_flag("--verify", fl->verify, "Read every pattern back and compare (exit 4 on a mismatch)");
    f->add_option("--pattern", fl->patterns,
                  "Patterns, comma list or repeated: zeros, ones, walking, address, random, all (default all)")
        ->type_name("NAME[,NAME...]");
    f->add_option("--passes", fl->passes, "Repeat all patterns N times (default 1)")->type_name("N")->check(CLI::Range(1, 1000000));
    f->add_option("--seed", fl->seed, "Seed of the walking and random patterns (default 1)")->type_name("N");
    f->add_option("--debug-corrupt-word", fl->corrupt_word, "Test hook: invert one word between writing and verifying")
        ->type_name("N")
        ->check(CLI::Range(0LL, 1LL << 60))
        ->group("");
    f->callback([fl, &ctx] {
        validate(*fl);
        ctx.run = [fl, &ctx] { run_fill_mode(*fl, ctx); };
    });

    // churn
    auto ch = std::make_shared<ChurnCli>();
    CLI::App* c = sub->add_subcommand("churn", "Random allocate/free of sizes from --sizes, directly or through MixMemory");
    c->add_option("--sizes", ch->sizes, std::string("Sizes to draw from, uniformly: a list or range (default ") +
                                            kDefaultChurnSizes + ")")
        ->check(range_validator());
    c->add_option("--ops", ch->ops, "Operations (default 10000 unless --duration)")->type_name("N")->check(CLI::Range(1ULL, 1ULL << 40));
    c->add_option("--duration", ch->duration, "Run this long: 30s, 500ms, 2m (with --ops: whichever ends first)")
        ->type_name("TIME");
    c->add_option("--seed", ch->seed, "Seed of the operation stream (default 1)")->type_name("N");
    c->add_option("--via", ch->via, "direct (the API's own calls) or mixmemory (MixMemory slots)")
        ->type_name("direct|mixmemory")
        ->check(CLI::IsMember({"direct", "mixmemory"}));
    c->add_option("--api", ch->api, "Allocation API for --via direct: " + alloc_api_names() + " (default device)")
        ->type_name("API");
    c->add_option("--slots", ch->slots, "MixMemory objects (default 4)")->type_name("N")->check(CLI::Range(1, 4096));
    c->add_option("--growth", ch->growth, "MixMemory growth: exact, 512B, 2MiB, x1.5, x2 (default exact)")
        ->type_name("POLICY");
    c->add_option("--max-live", ch->max_live, "Most live bytes at once: SIZE or PCT% of free (default 50%)")
        ->check(size_validator(true));
    c->callback([ch, c, &ctx] {
        validate(*ch, *c);
        ctx.run = [ch, &ctx] { run_churn_mode(*ch, ctx); };
    });

    // hold
    auto hd = std::make_shared<HoldCli>();
    CLI::App* h = sub->add_subcommand("hold", "Allocate SIZE or PCT% of free memory and hold it until --duration ends or a "
                                              "signal; prints a ready line once held");
    h->add_option("total,--total", hd->total, "How much: SIZE or PCT% of free memory")->required()->check(size_validator(true));
    h->add_option("--duration", hd->duration, "Hold this long (default: until SIGINT/SIGTERM, then exit 130)")
        ->type_name("TIME");
    h->add_option("--chunk", hd->chunk, "Allocation piece size (default 1GiB)")->check(size_validator(false));
    h->callback([hd, &ctx] {
        validate(*hd);
        ctx.run = [hd, &ctx] { run_hold_mode(*hd, ctx); };
    });
}

}  // namespace gpumem::cli
