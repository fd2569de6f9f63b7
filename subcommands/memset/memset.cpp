// gpumem memset: fill device (or host) memory with 8/16/32-bit words, time it
// against the memory's peak bandwidth, and optionally verify every word.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/log.hpp"

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "bench/alloc_apis.hpp"
#include "bench/memset_bench.hpp"
#include "cli/commands.hpp"
#include "cli/lock_wait.hpp"
#include "cli/plot.hpp"
#include "cli/progress.hpp"
#include "core/cuda_devices.hpp"
#include "core/device_inventory.hpp"

namespace gpumem::cli {
namespace {

// What CLI11 fills.
struct MemsetOptions {
    double lock_timeout = kDefaultLockTimeout;  // --lock-timeout
    std::string size = "256MiB";
    std::optional<std::string> sizes;  // a sweep
    std::optional<std::string> plot;   // --plot FILE.svg
    std::string value = "0";
    std::string width = "8";
    std::string offset = "0";
    std::string target = "device";
    std::string host_memory = "pinned";
    int iterations = 20;
    int warmup = 2;
    int samples = 5;
    bool verify = false;
    std::optional<std::string> corrupt_offset;  // hidden test hook
};

enum class MemsetTarget { device, host };
constexpr Named<MemsetTarget> kTargetRows[] = {
    {"device", MemsetTarget::device, "device memory (cudaMalloc), set with cuMemsetD8/D16/D32"},
    {"host", MemsetTarget::host, "host memory of --host-memory's kind, set by the CPU"},
};
const NameTable<MemsetTarget> kTargets{"memset target", kTargetRows};

// Word widths, in bits: what cuMemsetD8/D16/D32 set.
constexpr Named<int> kWidthRows[] = {
    {"8", 8, "bytes (cuMemsetD8)"},
    {"16", 16, "16-bit words (cuMemsetD16)"},
    {"32", 32, "32-bit words (cuMemsetD32)"},
};
const NameTable<int> kWidths{"word width", kWidthRows};

// Checked: everything but what depends on the device (a size in % of free).
struct MemsetRequest {
    DeviceSpec devices;
    SizeSpec size;
    std::vector<std::uint64_t> sweep;  // --sizes, in order; empty: --size alone
    std::optional<std::string> plot;   // --plot FILE.svg
    MemsetPlan plan;  // device and (for %) size set per device
    double lock_timeout = kDefaultLockTimeout;
};

// One device's memset.
struct MemsetRow {
    DeviceIdentity device;
    MemsetPlan plan;
    MemsetResult result;
    std::optional<double> peak_bps;  // NVML's peak memory bandwidth (device target)
};

struct MemsetResults {
    std::vector<MemsetRow> rows;
};

void add_options(CLI::App& sub, MemsetOptions& o) {
    add_lock_timeout_option(sub, o.lock_timeout);
    CLI::Option* size =
        sub.add_option("-s,--size", o.size, "Buffer size (SIZE, or PCT% of free device memory)")->capture_default_str()->check(size_validator(true));
    CLI::Option* sizes = sub.add_option("--sizes", o.sizes,
                                        "Sweep: sizes A,B,C or a range A..B (doubling), A..B:xF or A..B:+S; one row per size and device")
                             ->check(range_validator());
    size->excludes(sizes);
    sub.add_option("--value", o.value, "Word value, decimal or 0x hexadecimal")->capture_default_str()->type_name("V");
    sub.add_option("--width", o.width, "Word width in bits (cuMemsetD8/D16/D32)")->capture_default_str()->check(names_validator(kWidths));
    sub.add_option("--offset", o.offset, "First byte set; bytes [offset, size) are set")->capture_default_str()->type_name("SIZE");
    sub.add_option("--target", o.target, "Memory to set: " + kTargets.names())->capture_default_str()->check(names_validator(kTargets));
    sub.add_option("--host-memory", o.host_memory, "Host memory kind with --target host")
        ->capture_default_str()
        ->type_name("KIND")
        ->check(names_validator(kHostMemoryKinds));
    sub.add_option("-n,--iterations", o.iterations, "Memsets per timed sample")->capture_default_str()->check(CLI::Range(1, kMaxQueuedOperations));
    sub.add_option("--warmup", o.warmup, "Untimed memsets first")->capture_default_str()->check(CLI::Range(0, 1000));
    sub.add_option("--samples", o.samples, "Timed samples (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
    sub.add_flag("--verify", o.verify, "Check every word afterwards (and that bytes before --offset are untouched); exit 4 on mismatch");
    add_plot_option(sub, o.plot, "With --sizes: draw bandwidth against size as an SVG picture in FILE.svg");
    sub.add_option("--debug-corrupt-offset", o.corrupt_offset, "Test hook: corrupt this byte of the region before verifying")->group("");
}

MemsetRequest check(const MemsetOptions& o, const Globals& globals) {
    MemsetRequest q;
    q.devices = device_spec_or(globals, "0");
    q.lock_timeout = o.lock_timeout;
    MemsetPlan& plan = q.plan;
    plan.width = kWidths.parse(o.width) / 8;
    // The parsers' messages name the value, not the option: add it.
    auto named = [](const char* option, const std::string& text, auto parse) {
        try {
            return parse(text);
        } catch (const UsageError& e) {
            throw UsageError(std::string(option) + " " + text + ": " + e.what());
        }
    };
    plan.value = static_cast<std::uint32_t>(
        named("--value", o.value, [](const std::string& t) { return parse_unsigned(t, 0xFFFFFFFFULL); }));
    plan.offset = named("--offset", o.offset, [](const std::string& t) { return parse_size(t, true); });
    plan.host_target = kTargets.parse(o.target) == MemsetTarget::host;
    plan.host_kind = parse_host_memory_kind(o.host_memory);
    plan.timing = TimingPlan{o.warmup, o.iterations, o.samples};
    plan.verify = o.verify;
    if (o.corrupt_offset) {
        plan.corrupt_offset = parse_size(*o.corrupt_offset, true);
        plan.verify = true;
    }
    if (o.sizes) {
        q.sweep = parse_size_range(*o.sizes);
        for (std::uint64_t bytes : q.sweep) {
            check_buffer_size(bytes, "--sizes");
            plan.size = bytes;
            validate_memset_plan(plan);
        }
    }
    q.plot = check_sweep_plot(o.plot, o.sizes.has_value());
    if (o.sizes) return q;
    q.size = parse_size_spec(o.size, {false, true});
    if (q.size.is_percent && plan.host_target)
        throw UsageError("--size as a percentage needs --target device (it means % of free device memory)");
    if (!q.size.is_percent) {
        check_buffer_size(q.size.bytes, "--size");
        plan.size = q.size.bytes;
        validate_memset_plan(plan);
    }
    return q;
}

void execute(const MemsetRequest& q, MemsetResults& results, Session& session) {
    std::uint64_t total_mismatches = 0;
    std::string first_failure;
    const std::vector<DeviceIdentity> devices = select_cuda_devices(q.devices);
    lock_for_measuring(devices, q.lock_timeout, session);  // no other gpumem measuring these GPUs meanwhile
    // A sweep's sizes, or the one --size (0: a percentage, resolved per device).
    const std::vector<std::uint64_t> sizes = q.sweep.empty() ? std::vector<std::uint64_t>{q.plan.size} : q.sweep;
    Progress progress(session.progress() && sizes.size() > 1, "memset", devices.size() * sizes.size(), session.output().screen.stderr_columns);
    for (const DeviceIdentity& device : devices)
    for (std::uint64_t size : sizes) {
        throw_if_interrupted();
        MemsetRow row{device, q.plan, {}, std::nullopt};
        row.plan.device = device.cuda_index.value();
        row.plan.size = size;
        if (q.size.is_percent) {
            // Whole words, so that any percentage gives a valid plan.
            row.plan.size = q.size.resolve(device_memory_info(row.plan.device).free) / row.plan.width * row.plan.width;
            validate_memset_plan(row.plan);
        }
        log::info("memset of {} on device {} ({})", format_bytes(row.plan.size - row.plan.offset), row.plan.device.ordinal(), device.name);
        row.result = run_memset(row.plan);
        if (!row.plan.host_target) row.peak_bps = nvml_figures_for(device.pci).peak_memory_bandwidth;
        if (row.result.mismatches && first_failure.empty())
            first_failure = "device " + to_string(row.plan.device) + ": first bad byte at offset " +
                            std::to_string(*row.result.first_bad_offset);
        total_mismatches += row.result.mismatches;
        results.rows.push_back(std::move(row));
        progress.update(results.rows.size(), "device " + to_string(results.rows.back().plan.device) + " " + format_bytes(size));
    }
    progress.finish();
    if (total_mismatches)
        throw VerificationError("verification failed: " + std::to_string(total_mismatches) + " mismatching words (" + first_failure + ")");
}

double median_bps(const MemsetRow& r) { return static_cast<double>(r.result.bytes_set) / r.result.seconds.median; }

constexpr Column<MemsetRow> kResultColumns[] = {
    {{"device", "dev", FieldKind::integer}, [](const MemsetRow& r) -> Cell { return std::int64_t{r.plan.device.ordinal()}; }},
    {{"target", "target", FieldKind::text},
     [](const MemsetRow& r) -> Cell {
         return r.plan.host_target ? std::string("host:") + host_memory_kind_name(r.plan.host_kind) : std::string("device");
     }},
    {{"bytes", "bytes", FieldKind::bytes}, [](const MemsetRow& r) -> Cell { return r.result.bytes_set; }},
    {{"width_bits", "width", FieldKind::integer}, [](const MemsetRow& r) -> Cell { return std::int64_t{r.plan.width} * 8; }},
    {{"value", "value", FieldKind::text}, [](const MemsetRow& r) -> Cell { return hex_padded(r.plan.value, r.plan.width); }},
    {{"median_us", "median us", FieldKind::real, 1}, [](const MemsetRow& r) -> Cell { return r.result.seconds.median * 1e6; }},
    {{"bandwidth_gbps", "bandwidth", FieldKind::bandwidth}, [](const MemsetRow& r) -> Cell { return median_bps(r); }},
    {{"min_gbps", "min", FieldKind::bandwidth},
     [](const MemsetRow& r) -> Cell { return static_cast<double>(r.result.bytes_set) / r.result.seconds.max; }},
    {{"max_gbps", "max", FieldKind::bandwidth},
     [](const MemsetRow& r) -> Cell { return static_cast<double>(r.result.bytes_set) / r.result.seconds.min; }},
    {{"cv_percent", "cv", FieldKind::percent, 2}, [](const MemsetRow& r) -> Cell { return r.result.seconds.cv * 100.0; }},
    {{"peak_percent", "of peak", FieldKind::percent, 1},
     [](const MemsetRow& r) -> Cell { return r.peak_bps ? Cell(100.0 * median_bps(r) / *r.peak_bps) : Cell(); }},
    {{"verified", "verified", FieldKind::text},
     [](const MemsetRow& r) -> Cell { return std::string(!r.result.verified ? "no" : r.result.mismatches ? "FAILED" : "ok"); }},
    {{"mismatches", "mismatches", FieldKind::integer},
     [](const MemsetRow& r) -> Cell { return r.result.verified ? Cell(static_cast<std::int64_t>(r.result.mismatches)) : Cell(); }},
};

constexpr Column<MemsetRow> kDetailColumns[] = {
    {{"device", "", FieldKind::integer}, [](const MemsetRow& r) -> Cell { return std::int64_t{r.plan.device.ordinal()}; }},
    {{"uuid", "", FieldKind::text}, [](const MemsetRow& r) -> Cell { return r.device.uuid; }},
    {{"name", "", FieldKind::text}, [](const MemsetRow& r) -> Cell { return r.device.name; }},
    {{"buffer_bytes", "", FieldKind::bytes}, [](const MemsetRow& r) -> Cell { return r.plan.size; }},
    {{"offset", "", FieldKind::bytes}, [](const MemsetRow& r) -> Cell { return r.plan.offset; }},
    {{"samples_us", "", FieldKind::list},
     [](const MemsetRow& r) -> Cell {
         std::vector<double> us;
         for (double s : r.result.sample_seconds) us.push_back(s * 1e6);
         return us;
     }},
    {{"iterations", "", FieldKind::integer}, [](const MemsetRow& r) -> Cell { return std::int64_t{r.plan.timing.iterations}; }},
    {{"warmup", "", FieldKind::integer}, [](const MemsetRow& r) -> Cell { return std::int64_t{r.plan.timing.warmup}; }},
    {{"mean_us", "", FieldKind::real}, [](const MemsetRow& r) -> Cell { return r.result.seconds.mean * 1e6; }},
    {{"stdev_us", "", FieldKind::real}, [](const MemsetRow& r) -> Cell { return r.result.seconds.stdev * 1e6; }},
    {{"peak_gbps", "", FieldKind::bandwidth}, [](const MemsetRow& r) -> Cell { return optional_cell(r.peak_bps); }},
    {{"huge_pages", "", FieldKind::boolean},
     [](const MemsetRow& r) -> Cell { return r.plan.host_target ? Cell(r.result.host_huge_pages) : Cell(); },
     Shown::always, true},
    {{"first_bad_offset", "", FieldKind::bytes},
     [](const MemsetRow& r) -> Cell { return optional_cell(r.result.first_bad_offset); }, Shown::always, true},
};

constexpr auto detail_schema = nested_schema<kDetailColumns>;

constexpr const char* kBandwidthNote = "GB/s = 1e9 bytes/s of bytes set; time is per memset, median of samples";

constexpr Column<MemsetResults> kDocumentColumns[] = {
    {{"details", "", FieldKind::records},
     [](const MemsetResults& r) -> Cell { return records_cell(make_records(Columns<MemsetRow>(kDetailColumns), r.rows)); },
     Shown::always, false, detail_schema},
    {{"bandwidth_note", "", FieldKind::text}, [](const MemsetResults&) -> Cell { return std::string(kBandwidthNote); }},
};

// --plot's picture: median bandwidth against size (log scale), a line per
// device, and each device's peak memory bandwidth (NVML) where known.
Plot memset_sweep_plot(const MemsetResults& results) {
    Plot plot;
    plot.x = {"memset size", AxisScale::log2, AxisValues::bytes, false};
    plot.y = {"median bandwidth (GB/s)", AxisScale::linear, AxisValues::number, true};
    std::vector<DeviceId> devices;
    std::string names, target;
    for (const MemsetRow& r : results.rows) {
        const DeviceId id = r.plan.device;
        auto found = std::find(devices.begin(), devices.end(), id);
        if (found == devices.end()) {
            devices.push_back(id);
            names += (names.empty() ? "" : ", ") + std::string("device ") + to_string(id) + (r.device.name.empty() ? "" : " (" + r.device.name + ")");
            PlotSeries s;
            s.label = "device " + to_string(id);
            plot.series.push_back(std::move(s));
            if (r.peak_bps)
                plot.rules.push_back({false, *r.peak_bps / 1e9,
                                      "device " + to_string(id) + ": peak memory bandwidth (NVML), " + format_decimal(*r.peak_bps / 1e9, 1) + " GB/s",
                                      -2});
            target = r.plan.host_target ? std::string("host memory (") + host_memory_kind_name(r.plan.host_kind) + ")" : "device memory";
        }
        PlotSeries& s = plot.series[static_cast<std::size_t>(std::find(devices.begin(), devices.end(), id) - devices.begin())];
        s.x.push_back(static_cast<double>(r.result.bytes_set));
        s.y.push_back(median_bps(r) / 1e9);
    }
    for (PlotSeries& s : plot.series) s.points = s.x.size() < 2;
    const MemsetPlan* plan = results.rows.empty() ? nullptr : &results.rows.front().plan;
    plot.title = "gpumem memset: bandwidth by size on " + (names.empty() ? std::string("no device") : names);
    plot.subtitle = target + (plan ? ", " + std::to_string(plan->width * 8) + "-bit words, median of " + std::to_string(plan->timing.samples) +
                                         " samples of " + std::to_string(plan->timing.iterations) + " memsets"
                                   : std::string()) +
                    "; GB/s = 1e9 bytes set per second";
    return plot;
}

Report report(const MemsetRequest& q, const MemsetResults& results, const OutputOptions& output) {
    Report r;
    r.command = "memset";
    r.tables.push_back(make_table("results", Columns<MemsetRow>(kResultColumns), results.rows, output.format));
    r.fields = make_record(Columns<MemsetResults>(kDocumentColumns), results);
    if (q.plot) r.plot = plot_file(*q.plot, memset_sweep_plot(results));
    return r;
}

}  // namespace

namespace {
// memset's lists; host-memory is copy's too.
constexpr ListEntry kMemsetLists[] = {
    {"targets", "memset --target", [] { return view_of(kTargets); }},
    {"widths", "memset --width", [] { return view_of(kWidths); }},
    {"host-memory", "memset, copy --host-memory", [] { return view_of(kHostMemoryKinds); }},
};

DocumentSchema document_schema() {
    return {"memset",
            {{"results", Columns<MemsetRow>(kResultColumns).schema()}},
            Columns<MemsetResults>(kDocumentColumns).schema()};
}
}  // namespace

constexpr CommandDefinition kMemsetCommand{
    [] { return make_command(CommandFunctions<MemsetOptions, MemsetRequest, MemsetResults>{add_options, check, execute, report}); },
    document_schema,
    kMemsetLists};

}  // namespace gpumem::cli
