// gpumem copy: copy bandwidth between host and device, within a device and
// between devices, timed as nvbandwidth times it, for every kind of host
// memory, with verification and a threshold for health checks.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/log.hpp"

#include "base/cpu_affinity.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "bench/copy_bench.hpp"
#include "cli/commands.hpp"
#include "cli/lock_wait.hpp"
#include "copy/copy_report.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_devices.hpp"
#include "core/device_inventory.hpp"
#include "cli/progress.hpp"
#include "cli/terminal.hpp"

namespace gpumem::cli {
namespace {

// Defaults for a quick check that is both fast and steady. A PCIe copy
// engine reaches its full rate well below 64 MiB (one copy ~1.2 ms at Gen5),
// while pinning 64 MiB costs ~20 ms where 512 MiB costs ~170 ms. Samples of
// ~10 ms each gave a coefficient of variation of 0.03-0.13% on an H200
// (bench/results), far under 1%, so the whole process stays near the ~0.3 s
// a CUDA context takes to create. Sweeps use the same 10 ms.
constexpr const char* kDefaultSize = "64MiB";
constexpr double kDefaultSampleSeconds = 0.01;
constexpr int kDefaultSamples = 5;
constexpr int kDefaultWarmup = 2;
// --expect-min's ceiling: far above any memory's bandwidth, yet finite.
constexpr double kMaxExpectMinGbps = 1e6;

// What CLI11 fills.
struct CopyOptions {
    double lock_timeout = kDefaultLockTimeout;  // --lock-timeout
    std::string direction;
    std::string size = kDefaultSize;
    std::optional<std::string> sizes;
    std::optional<std::string> host_memory;  // pinned when not given
    std::string engine = "ce";
    int iterations = 0;  // 0: by --sample-time
    int samples = kDefaultSamples;
    int warmup = kDefaultWarmup;
    std::optional<double> sample_time;
    bool verify = false;
    std::optional<std::string> peer;
    bool no_affinity = false;
    bool no_chart = false;
    std::optional<std::string> plot;
    std::optional<double> expect_min;
    std::optional<std::string> corrupt_offset;  // hidden test hook
};

// Every argument checked; no device touched yet.
struct CopyRequest {
    DeviceSpec devices;
    CopyPlan plan;                    // device, peer and peer access set per unit
    std::optional<DeviceSpec> peers;  // --peer
    bool affinity = true;
    CopyReportStyle style;
    double lock_timeout = kDefaultLockTimeout;
};

// The directions between two devices, which take --peer: "p2p, p2p-bidir".
std::string peer_direction_names() {
    std::vector<std::string> names;
    for (const Named<CopyDirection>& row : kCopyDirections)
        if (row.value.uses_peer()) names.emplace_back(row.name);
    return join(names);
}

void add_options(CLI::App& sub, CopyOptions& o) {
    add_lock_timeout_option(sub, o.lock_timeout);
    sub.add_option("direction", o.direction, "What is copied, where (see gpumem --list directions)")
        ->required()
        ->type_name("DIRECTION")
        ->check(names_validator(kCopyDirections));
    CLI::Option* size = sub.add_option("-s,--size", o.size, "Bytes per copy")->capture_default_str()->check(size_validator(false));
    CLI::Option* sizes = sub.add_option("--sizes", o.sizes,
                                        "Sweep: sizes A,B,C or a range A..B (doubling), A..B:xF or A..B:+S; one row per "
                                        "size and a bar chart")
                             ->check(range_validator());
    size->excludes(sizes);
    sub.add_option("--host-memory", o.host_memory, "Host memory kind (default pinned)")
        ->type_name("KIND")
        ->check(names_validator(kHostMemoryKinds));
    sub.add_option("--engine", o.engine, "ce: a copy engine (cudaMemcpyAsync); sm: a copy kernel on the SMs")
        ->capture_default_str()
        ->check(names_validator(kCopyEngines));
    sub.add_option("-n,--iterations", o.iterations, "Copies per timed sample (default: as many as fill --sample-time)")
        ->check(CLI::Range(1, 4096));
    sub.add_option("--samples", o.samples, "Timed samples; the median is reported")->capture_default_str()->check(CLI::Range(1, 1000));
    sub.add_option("--warmup", o.warmup, "Untimed copies before the samples")->capture_default_str()->check(CLI::Range(0, 1000));
    add_value_option(sub, "--sample-time", o.sample_time, "How long one sample should last when --iterations is not given (default 10ms)",
                     ValueKind::seconds, 0.001, 10.0);
    sub.add_flag("--verify", o.verify, "Fill the source with a pattern and check every destination byte; exit 4 on mismatch");
    sub.add_option("--peer", o.peer, peer_direction_names() + ": the other device(s), a -d style SPEC (default: every other device)")
        ->type_name("SPEC");
    sub.add_flag("--no-affinity", o.no_affinity, "Do not pin host threads to the CPUs next to the GPU (NVML)");
    sub.add_flag("--no-chart", o.no_chart, "No bar chart after a sweep");
    add_plot_option(sub, o.plot, "With --sizes: draw bandwidth against size as an SVG picture in FILE.svg");
    add_value_option(sub, "--expect-min", o.expect_min, "Exit 6 when any median bandwidth is below RATE; results still print",
                     ValueKind::rate_gbps, 0, kMaxExpectMinGbps);
    sub.add_option("--debug-corrupt-offset", o.corrupt_offset, "Test hook: flip this destination byte before verifying")->group("");
}

std::vector<std::uint64_t> checked_sizes(const CopyOptions& o) {
    std::vector<std::uint64_t> sizes = o.sizes ? parse_size_range(*o.sizes) : std::vector<std::uint64_t>{parse_size(o.size)};
    for (std::uint64_t bytes : sizes) check_buffer_size(bytes, o.sizes ? "--sizes" : "--size");
    return sizes;
}

bool same_device(const DeviceSelector& a, const DeviceSelector& b) {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case DeviceSelector::Kind::cuda_index: return a.index == b.index;
        case DeviceSelector::Kind::uuid_prefix: return a.uuid_prefix == b.uuid_prefix;
        case DeviceSelector::Kind::pci_address: return a.pci == b.pci;
    }
    return false;
}

// --peer: for peer directions only. One device named by both -d and --peer
// the same way is refused here; other spellings of it once devices are known.
std::optional<DeviceSpec> checked_peers(const CopyOptions& o, const CopyDirection& direction, const DeviceSpec& devices) {
    if (!o.peer) return std::nullopt;
    if (!direction.uses_peer()) throw UsageError("--peer is for " + peer_direction_names() + " copies only, not " + o.direction);
    DeviceSpec peers = parse_device_spec(*o.peer);
    const bool single = !peers.all && !devices.all && peers.selectors.size() == 1 && devices.selectors.size() == 1;
    if (single && same_device(peers.selectors.front(), devices.selectors.front()))
        throw UsageError("--peer " + peers.text + " names the device -d " + devices.text + " itself; " + o.direction +
                         " copies to another device");
    return peers;
}

std::optional<std::uint64_t> checked_corrupt_offset(const CopyOptions& o, const std::vector<std::uint64_t>& sizes) {
    if (!o.corrupt_offset) return std::nullopt;
    if (!o.verify) throw UsageError("--debug-corrupt-offset needs --verify");
    const std::uint64_t offset = parse_size(*o.corrupt_offset, true);
    const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    if (offset >= largest)
        throw UsageError("--debug-corrupt-offset " + std::to_string(offset) + " is beyond the copy of " + std::to_string(largest) +
                         " bytes");
    return offset;
}

CopyRequest check(const CopyOptions& o, const Globals& globals) {
    CopyRequest q;
    q.devices = device_spec_or(globals, "0");
    q.lock_timeout = o.lock_timeout;
    CopyPlan& plan = q.plan;
    plan.direction = kCopyDirections.parse(o.direction);
    plan.host_kind = parse_host_memory_kind(o.host_memory.value_or("pinned"));
    plan.engine = kCopyEngines.parse(o.engine);
    if (o.host_memory && !plan.direction.uses_host_memory())
        throw UsageError("--host-memory has no meaning for " + o.direction + ", which copies between device buffers");
    validate_copy_combination(plan.direction, plan.host_kind, plan.engine);
    plan.sizes = checked_sizes(o);
    q.peers = checked_peers(o, plan.direction, q.devices);
    plan.auto_iterations = o.iterations <= 0;
    plan.timing = TimingPlan{o.warmup, plan.auto_iterations ? 1 : o.iterations, o.samples};
    plan.sample_seconds = o.sample_time.value_or(kDefaultSampleSeconds);
    plan.verify = o.verify;
    plan.corrupt_offset = checked_corrupt_offset(o, plan.sizes);
    q.affinity = !o.no_affinity;
    if (o.expect_min && !(*o.expect_min > 0)) throw UsageError("--expect-min must be a positive bandwidth in GB/s, such as 50");
    q.style.expect_min_gbps = o.expect_min;
    q.style.chart = !o.no_chart;
    q.style.plot = check_sweep_plot(o.plot, o.sizes.has_value());
    // The terminal the report will be printed on (no driver involved).
    const Screen& screen = globals.output.screen;
    q.style.chart_style = ChartStyle{screen.stdout_utf8, static_cast<int>(screen.stdout_columns)};
    return q;
}

// One device, or one (device, peer) pair for the peer directions.
struct CopyUnit {
    DeviceIdentity device;
    std::optional<DeviceIdentity> peer;
};

const DeviceIdentity& identity_of(DeviceId id, const std::vector<DeviceIdentity>& visible) {
    return *std::find_if(visible.begin(), visible.end(), [id](const DeviceIdentity& d) { return d.cuda_index == id; });
}

std::vector<CopyUnit> copy_units(const CopyRequest& q, const std::vector<DeviceIdentity>& devices) {
    std::vector<CopyUnit> units;
    const CopyDirection& direction = q.plan.direction;
    if (!direction.uses_peer()) {
        for (const DeviceIdentity& d : devices) units.push_back({d, std::nullopt});
        return units;
    }
    const std::string name = copy_direction_name(direction);
    const std::vector<DeviceIdentity> visible = cuda_visible_devices();
    if (visible.size() < 2)
        throw UsageError("copy " + name + " needs a second device, and only " + std::to_string(visible.size()) + " is visible");
    std::vector<DeviceId> device_ids, peer_ids;
    for (const DeviceIdentity& d : devices) device_ids.push_back(d.cuda_index.value());
    if (q.peers) {
        for (std::size_t i : resolve_device_spec(*q.peers, visible)) peer_ids.push_back(visible[i].cuda_index.value());
    } else {
        for (const DeviceIdentity& v : visible) peer_ids.push_back(v.cuda_index.value());  // every other device
    }
    if (q.peers && !q.peers->all && device_ids.size() == 1)
        for (DeviceId p : peer_ids)
            if (p == device_ids.front())
                throw UsageError("--peer " + q.peers->text + " names device " + to_string(p) + " itself; " + name +
                                 " copies to another device");
    for (const auto& [device, peer] : peer_pairs(device_ids, peer_ids, direction.bidirectional))
        units.push_back({identity_of(device, visible), identity_of(peer, visible)});
    if (units.empty()) throw UsageError("copy " + name + ": no pair of different devices among -d and --peer");
    return units;
}

// Pins this thread to the CPUs next to the device, when NVML knows them.
void pin_near(const DeviceIdentity& device, std::optional<ScopedCpuAffinity>& pin, std::vector<PinnedCpus>& pinned) {
    const DeviceId id = device.cuda_index.value();
    const NvmlDeviceFigures figures = nvml_figures_for(device.pci);
    if (figures.cpu_affinity.empty()) {
        log::debug("no CPU affinity known for device {} (NVML); host threads not pinned", id.ordinal());
        return;
    }
    pin.emplace(figures.cpu_affinity);
    const std::string cpus = format_cpu_list(figures.cpu_affinity);
    if (!pin->pinned()) {
        log::debug("device {}: could not pin host threads to CPUs {}", id.ordinal(), cpus);
        return;
    }
    log::info("device {}: host threads pinned to CPUs {}", id.ordinal(), cpus);
    pinned.push_back({id, cpus});
}

// A plan of a unit, or why it cannot run (then it is reported, not run).
struct UnitPlan {
    CopyPlan plan;
    std::string skipped;
};

// Why peer access cannot be enabled for the plan's copies, or "" when it can.
std::string peer_access_missing(const CopyPlan& plan) {
    std::vector<std::pair<DeviceId, DeviceId>> ways = {{plan.device, *plan.peer}};
    if (plan.direction.bidirectional) ways.emplace_back(*plan.peer, plan.device);
    for (const auto& [from, to] : ways)
        if (!peer_access_possible(from, to)) {
            std::string why =
                "device " + to_string(from) + " cannot access device " + to_string(to) + " directly (cudaDeviceCanAccessPeer is 0)";
            log::warn("{}", why);
            return why;
        }
    return "";
}

// A device runs one plan; a pair of devices runs the staged copy (peer
// access off; copy engines only) and then the direct one (peer access on).
std::vector<UnitPlan> unit_plans(const CopyRequest& q, const CopyUnit& unit) {
    CopyPlan base = q.plan;
    base.device = unit.device.cuda_index.value();
    if (!unit.peer) return {{base, ""}};
    base.peer = unit.peer->cuda_index;
    std::vector<UnitPlan> plans;
    if (base.engine == CopyEngine::ce) {
        CopyPlan staged = base;
        staged.peer_access = false;
        plans.push_back({staged, ""});
    }
    base.peer_access = true;
    plans.push_back({base, peer_access_missing(base)});
    return plans;
}

void run_unit(const CopyRequest& q, const CopyUnit& unit, CopyResults& results, const std::function<void()>& measured) {
    const DeviceId device = unit.device.cuda_index.value();
    // Pin first, so the context's own threads and first-touched host pages
    // start out next to the GPU.
    std::optional<ScopedCpuAffinity> pin;
    if (q.affinity) pin_near(unit.device, pin, results.cpu_affinity);
    // Current without a guard: a guard would restore the previous device
    // afterwards, and cudaSetDevice creates a context on the device it names.
    GPUMEM_CUDA_CALL(cudaSetDevice(device.ordinal()));
    for (const UnitPlan& p : unit_plans(q, unit)) {
        if (!p.skipped.empty()) {
            for (CopyResult& r : unmeasured_results(p.plan, p.skipped)) results.rows.push_back(std::move(r));
            measured();
            continue;
        }
        check_copy_fits(p.plan);
        log::info("copy {} on device {}: {} size(s) up to {}", copy_direction_name(p.plan.direction), device.ordinal(),
                     p.plan.sizes.size(), format_bytes(*std::max_element(p.plan.sizes.begin(), p.plan.sizes.end())));
        run_copy_plan(p.plan, [&](CopyResult r) {
            results.rows.push_back(std::move(r));
            measured();
        });
    }
}

// After every copy ran: a failed verification exits 4, a median below
// --expect-min exits 6 (the results are reported either way).
void check_outcome(const CopyRequest& q, const std::vector<CopyResult>& rows) {
    const auto failed = failed_verifications(rows);
    if (!failed.empty()) {
        const CopyResult& r = *failed.front();
        std::string message = "verification failed: " + describe_copy(r) + ": " + std::to_string(r.verification.mismatched_words) +
                              " of " + std::to_string((r.bytes + 7) / 8) + " 8-byte words differ";
        if (r.verification.first_bad_offset) message += ", first bad byte at offset " + std::to_string(*r.verification.first_bad_offset);
        if (failed.size() > 1) message += " (" + std::to_string(failed.size() - 1) + " more copies failed too)";
        throw VerificationError(message);
    }
    if (!q.style.expect_min_gbps) return;
    const double expect_min = *q.style.expect_min_gbps;
    const auto below = copies_below(rows, expect_min);
    if (below.empty()) return;
    const CopyResult& r = *below.front();
    std::string message = describe_copy(r) + ": median " + format_decimal(copy_figures(r).median_bps / 1e9, 2) +
                          " GB/s is below --expect-min " + format_decimal(expect_min, 3) + " GB/s";
    if (below.size() > 1) message += " (and " + std::to_string(below.size() - 1) + " more)";
    throw ExpectationError(message);
}

// --plot: each device's name and the figures of its reference lines.
std::vector<CopyDevice> plotted_devices(const std::vector<DeviceIdentity>& devices) {
    std::vector<CopyDevice> plotted;
    for (const DeviceIdentity& d : devices) {
        const DeviceId id = d.cuda_index.value();
        if (std::any_of(plotted.begin(), plotted.end(), [id](const CopyDevice& p) { return p.id == id; })) continue;
        const NvmlDeviceFigures figures = nvml_figures_for(d.pci);
        CopyDevice p{id, d.name.empty() ? figures.name : d.name, figures.peak_memory_bandwidth, std::nullopt, std::nullopt};
        if (figures.pcie) p.pcie_generation = figures.pcie->max_generation, p.pcie_width = figures.pcie->max_width;
        plotted.push_back(std::move(p));
    }
    return plotted;
}

void execute(const CopyRequest& q, CopyResults& results, Session& session) {
    const std::vector<CopyUnit> units = copy_units(q, select_cuda_devices(q.devices));
    std::vector<DeviceIdentity> measured_devices;  // every device and peer: no other gpumem measuring them meanwhile
    for (const CopyUnit& u : units) {
        measured_devices.push_back(u.device);
        if (u.peer) measured_devices.push_back(*u.peer);
    }
    if (q.style.plot) results.devices = plotted_devices(measured_devices);
    lock_for_measuring(measured_devices, q.lock_timeout, session);
    const CopyPlan& plan = q.plan;
    const std::uint64_t plans_per_unit = plan.direction.uses_peer() && plan.engine == CopyEngine::ce ? 2 : 1;
    Progress progress(session.progress() && (plan.sizes.size() > 1 || units.size() > 1), "copy " + copy_direction_name(plan.direction),
                      units.size() * plans_per_unit * plan.sizes.size() * static_cast<std::uint64_t>(plan.direction.copies()),
                      session.output().screen.stderr_columns);
    const Unit unit = session.output().unit;
    auto measured = [&] {
        const CopyResult& r = results.rows.back();
        const std::string rate = r.measured() ? format_bandwidth(copy_figures(r).median_bps, unit) : std::string("-");
        progress.update(results.rows.size(), describe_copy(r) + " " + rate);
    };
    for (const CopyUnit& unit_to_run : units) {
        throw_if_interrupted();
        run_unit(q, unit_to_run, results, measured);
    }
    progress.finish();
    check_outcome(q, results.rows);
}

Report report(const CopyRequest& q, const CopyResults& results, const OutputOptions& output) {
    return build_copy_report(results, q.style, output);
}

}  // namespace

namespace {
constexpr ListEntry kCopyLists[] = {
    {"directions", "copy DIRECTION", [] { return view_of(kCopyDirections); }},
    {"engines", "copy --engine", [] { return view_of(kCopyEngines); }},
};
}  // namespace

constexpr CommandDefinition kCopyCommand{
    [] { return make_command(CommandFunctions<CopyOptions, CopyRequest, CopyResults>{add_options, check, execute, report}); },
    copy_document_schema, kCopyLists};

}  // namespace gpumem::cli
