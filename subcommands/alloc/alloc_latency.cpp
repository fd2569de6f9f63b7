// gpumem alloc-test latency: allocation and free latency per API and size,
// whether they synchronize the device, and optionally a cost table for
// reuse-sim (--save-costs).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "alloc/alloc.hpp"
#include "cli/commands.hpp"
#include "cli/lock_wait.hpp"
#include "version.hpp"

namespace gpumem::cli {
namespace {

constexpr const char* kCommand = "alloc-test latency";
constexpr const char* kDefaultSizes = "4KiB,1MiB,16MiB,256MiB,1GiB";

// What CLI11 fills.
struct LatencyOptionsText {
    double lock_timeout = kDefaultLockTimeout;  // --lock-timeout
    std::vector<std::string> apis{"device"};
    std::string sizes = kDefaultSizes;
    int iterations = 50;
    int warmup = 3;
    bool no_sync_probe = false;
    std::optional<std::string> save_costs;
};

void add_options(CLI::App& sub, LatencyOptionsText& o) {
    add_lock_timeout_option(sub, o.lock_timeout);
    sub.add_option("--api", o.apis, "Allocation APIs, comma list or repeated (default device; gpumem --list apis)")
        ->type_name("API[,API...]")
        ->check(list_validator(kAllocApis));
    sub.add_option("--sizes", o.sizes,
                   std::string("Sizes: SIZE, A,B,C, A..B (doubling), A..B:xF, A..B:+S (default ") + kDefaultSizes + ")")
        ->check(range_validator());
    sub.add_option("--iterations", o.iterations, "Timed allocate/free pairs per size (default 50)")
        ->type_name("N")
        ->check(CLI::Range(1, 1000000));
    sub.add_option("--warmup", o.warmup, "Untimed pairs before them (default 3)")->type_name("N")->check(CLI::Range(0, 1000));
    sub.add_flag("--no-sync-probe", o.no_sync_probe, "Skip the probe of whether allocation and free synchronize the device");
    sub.add_option("--save-costs", o.save_costs, "Write the medians as a cost table (JSON) for gpumem reuse-sim replay --costs")
        ->type_name("FILE");
}

LatencyRequest check(const LatencyOptionsText& o, const Globals& globals) {
    LatencyRequest q;
    q.devices = device_spec_or(globals, "0");
    q.lock_timeout = o.lock_timeout;
    q.options.apis = kAllocApis.parse_list(o.apis, kAllocTestListRules);
    q.options.sizes = parse_size_range(o.sizes);
    q.options.iterations = o.iterations;
    q.options.warmup = o.warmup;
    q.options.probe_sync = !o.no_sync_probe;
    if (o.save_costs) {
        const std::string& path = *o.save_costs;
        if (path.empty()) throw UsageError("--save-costs needs a file name");
        if (path.back() == '/') throw UsageError("--save-costs: '" + path + "' names a directory, not a file");
        q.devices = single_device_spec(globals, "alloc-test latency --save-costs");
        q.save_costs = path;
    }
    return q;
}

// Whether `path` can be written, found by opening it, before any GPU work:
// access() on the folder says yes to root everywhere (even /proc) and misses
// a folder named as the file. A file this check creates is removed.
// O_NONBLOCK: a FIFO that nobody reads is refused at once instead of
// blocking the open forever.
void check_writable(const std::string& path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NONBLOCK, 0644);
    const bool created = fd >= 0;
    if (fd < 0 && errno == EEXIST) fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENXIO) throw UsageError("--save-costs: '" + path + "' is a FIFO that nobody reads");
    if (fd < 0) throw UsageError("--save-costs: cannot write '" + path + "': " + std::strerror(errno));
    ::close(fd);
    if (created) ::unlink(path.c_str());
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot open '" + path + "' for writing: " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) throw Error("cannot write '" + path + "': " + std::strerror(errno));
}

void execute(const LatencyRequest& q, LatencyResults& results, Session& session) {
    if (q.save_costs) check_writable(*q.save_costs);
    measure_rows(q.devices, q.options, session, kCommand, run_latency, results.devices, q.lock_timeout);
    if (!q.save_costs) return;
    const std::string source = std::string("gpumem ") + GPUMEM_VERSION + " alloc-test latency: host-clock medians of " +
                               std::to_string(q.options.iterations) + " iterations";
    const LatencyDevice& first = results.devices.front();
    write_file(*q.save_costs, reuse_sim::cost_table_to_json(cost_table_from_latency(first.result, first.device.name, source)));
    results.costs_written = true;
}

// ---------------------------------------------------------------------------
// Report

// One row of the table: a size of an API on a device.
struct LatencyLine {
    const DeviceIdentity* device;
    const LatencyRow* row;
    const SyncProbe* probe;  // null without the probe
};

std::vector<std::string_view> api_names() { return kAllocApis.name_list(); }

constexpr Column<LatencyLine> kLatencyColumns[] = {
    {{"index", "cuda", FieldKind::integer}, [](const LatencyLine& l) -> Cell { return device_index(*l.device); }},
    {{"api", "api", FieldKind::text}, [](const LatencyLine& l) -> Cell { return std::string(alloc_api_name(l.row->api)); },
     Shown::always, false, nullptr, api_names},
    {{"size", "size", FieldKind::bytes}, [](const LatencyLine& l) -> Cell { return l.row->size; }},
    // Only when VMM, which rounds up, is among the APIs.
    {{"allocated", "allocated", FieldKind::bytes}, [](const LatencyLine& l) -> Cell { return l.row->allocated; }, Shown::always,
     true},
    {{"iterations", "n", FieldKind::integer},
     [](const LatencyLine& l) -> Cell { return static_cast<std::int64_t>(l.row->alloc_us.count); }},
    {{"alloc_p50_us", "alloc p50 us", FieldKind::real, 1}, [](const LatencyLine& l) -> Cell { return l.row->alloc_us.median; }},
    {{"alloc_p90_us", "p90", FieldKind::real, 1}, [](const LatencyLine& l) -> Cell { return l.row->alloc_us.p90; }},
    {{"alloc_p99_us", "p99", FieldKind::real, 1}, [](const LatencyLine& l) -> Cell { return l.row->alloc_us.p99; }},
    {{"alloc_max_us", "max", FieldKind::real, 1}, [](const LatencyLine& l) -> Cell { return l.row->alloc_us.max; }},
    {{"free_p50_us", "free p50 us", FieldKind::real, 1}, [](const LatencyLine& l) -> Cell { return l.row->free_us.median; }},
    {{"free_p90_us", "p90", FieldKind::real, 1}, [](const LatencyLine& l) -> Cell { return l.row->free_us.p90; }},
    {{"free_p99_us", "p99", FieldKind::real, 1}, [](const LatencyLine& l) -> Cell { return l.row->free_us.p99; }},
    {{"free_max_us", "max", FieldKind::real, 1}, [](const LatencyLine& l) -> Cell { return l.row->free_us.max; }},
    {{"alloc_syncs", "alloc syncs", FieldKind::boolean},
     [](const LatencyLine& l) -> Cell { return l.probe ? optional_cell(l.probe->alloc_syncs) : Cell(); }},
    {{"free_syncs", "free syncs", FieldKind::boolean},
     [](const LatencyLine& l) -> Cell { return l.probe ? optional_cell(l.probe->free_syncs) : Cell(); }},
};

// The probe's fixed figures (sync_probe).
struct ProbeFigures {};
constexpr Column<ProbeFigures> kProbeColumns[] = {
    {{"kernel_ms", "", FieldKind::real}, [](const ProbeFigures&) -> Cell { return kSyncProbeKernelMs; }},
    {{"bytes", "", FieldKind::bytes}, [](const ProbeFigures&) -> Cell { return kSyncProbeBytes; }},
};
constexpr auto probe_schema = nested_schema<kProbeColumns>;

using LatencyDocument = ModeDocument<LatencyRequest, LatencyResults>;

constexpr Column<LatencyDocument> kDocumentColumns[] = {
    {{"iterations", "", FieldKind::integer},
     [](const LatencyDocument& d) -> Cell { return std::int64_t{d.request.options.iterations}; }},
    {{"warmup", "", FieldKind::integer}, [](const LatencyDocument& d) -> Cell { return std::int64_t{d.request.options.warmup}; }},
    {{"sync_probe", "", FieldKind::record},
     [](const LatencyDocument& d) -> Cell {
         return d.request.options.probe_sync ? record_cell(make_record(Columns<ProbeFigures>(kProbeColumns), ProbeFigures{}))
                                             : Cell();
     },
     Shown::always, true, probe_schema},
    {{"cost_table", "", FieldKind::text},
     [](const LatencyDocument& d) -> Cell { return d.results.costs_written ? Cell(*d.request.save_costs) : Cell(); },
     Shown::always, true},
};

std::vector<LatencyLine> latency_lines(const LatencyResults& results) {
    std::vector<LatencyLine> lines;
    for (const LatencyDevice& d : results.devices)
        for (const LatencyRow& row : d.result.rows) {
            const auto probe = std::find_if(d.result.sync.begin(), d.result.sync.end(),
                                            [&](const SyncProbe& p) { return p.api == row.api; });
            lines.push_back({&d.device, &row, probe != d.result.sync.end() ? &*probe : nullptr});
        }
    return lines;
}

constexpr ModeLayout<LatencyLine, LatencyDocument> kLayout{kCommand, "latency", kLatencyColumns, kDocumentColumns};

}  // namespace

Report latency_report(const LatencyRequest& q, const LatencyResults& results, const OutputOptions& output) {
    Report r;
    const auto& apis = q.options.apis;
    const bool any_vmm = std::find(apis.begin(), apis.end(), AllocApi::vmm) != apis.end();
    kLayout.fill(r, latency_lines(results), LatencyDocument{q, results}, output.format,
                 [any_vmm](const Field& f) { return any_vmm || f.key != "allocated"; });
    // A narrow terminal keeps the medians, p90 and whether a call syncs (--wide and --json the rest).
    r.tables.back().drop_order = {"alloc_max_us", "free_max_us", "alloc_p99_us", "free_p99_us", "iterations", "allocated",
                                  "alloc_p90_us", "free_p90_us"};
    for (const LatencyDevice& d : results.devices) r.text_before.push_back(device_line(d.device));
    r.text_before.push_back("host clock per call, " + std::to_string(q.options.iterations) + " iterations after " +
                            std::to_string(q.options.warmup) + " warm-ups; microseconds");
    if (q.options.probe_sync)
        r.text_after.push_back("syncs: the call returned only after a " + format_decimal(kSyncProbeKernelMs, 0) +
                               " ms kernel on another stream had ended (probed with " + format_bytes(kSyncProbeBytes) +
                               "); - means undecided");
    if (results.costs_written) r.text_after.push_back("cost table written to " + *q.save_costs);
    return r;
}

namespace {
constexpr ListEntry kLatencyLists[] = {{"apis", "alloc-test latency, churn --api", [] { return view_of(kAllocApis); }}};
}  // namespace

constexpr CommandDefinition kAllocLatencyCommand{
    [] { return make_command(CommandFunctions<LatencyOptionsText, LatencyRequest, LatencyResults>{add_options, check, execute, latency_report}); },
    [] { return kLayout.schema(); }, kLatencyLists};

}  // namespace gpumem::cli
