// gpumem copy: copy bandwidth between host and device, within a device and
// between devices, timed as nvbandwidth times it, for every kind of host
// memory, with verification and a threshold for health checks.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "legacy.hpp"
#include "bench/copy_bench.hpp"
#include "copy_report.hpp"
#include "base/cpu_affinity.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_devices.hpp"
#include "core/device_inventory.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "progress.hpp"
#include "base/sizes.hpp"

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

struct CopyOptions {
    std::string direction;
    std::string size = kDefaultSize;
    std::string sizes;
    std::string host_memory = "pinned";
    std::string engine = "ce";
    int iterations = 0;  // 0: by --sample-time
    int samples = kDefaultSamples;
    int warmup = kDefaultWarmup;
    double sample_time = kDefaultSampleSeconds;
    bool verify = false;
    std::string peer;
    bool no_affinity = false;
    bool no_chart = false;
    double expect_min = 0;
    std::string corrupt_offset;      // hidden test hook
    bool host_memory_given = false;  // --host-memory was on the command line
    bool expect_min_given = false;
    bool sample_time_given = false;
};

// The request with every argument checked; no device touched yet.
struct CopyRequest {
    CopyDirection direction = CopyDirection::h2d;
    HostMemoryKind host_kind = HostMemoryKind::pinned;
    CopyEngine engine = CopyEngine::ce;
    std::vector<std::uint64_t> sizes;
    TimingPlan timing;
    bool auto_iterations = true;
    double sample_seconds = kDefaultSampleSeconds;
    bool verify = false;
    std::optional<std::uint64_t> corrupt_offset;
    std::optional<DeviceSpec> peer_spec;
    bool affinity = true;
    bool chart = true;
    double expect_min = 0;
};

CopyRequest check_options(const CopyOptions& o) {
    CopyRequest q;
    q.direction = parse_copy_direction(o.direction);
    q.host_kind = parse_host_memory_kind(o.host_memory);
    q.engine = parse_copy_engine(o.engine);
    if (o.host_memory_given && !copy_uses_host_memory(q.direction))
        throw UsageError(std::string("--host-memory has no meaning for ") + copy_direction_name(q.direction) +
                         ", which copies between device buffers");
    validate_copy_combination(q.direction, q.host_kind, q.engine);
    q.sizes = o.sizes.empty() ? std::vector<std::uint64_t>{parse_size(o.size)} : parse_size_range(o.sizes);
    if (!o.peer.empty()) {
        if (q.direction != CopyDirection::p2p) throw UsageError("--peer is for p2p copies only");
        q.peer_spec = parse_device_spec(o.peer);
    }
    q.auto_iterations = o.iterations <= 0;
    q.timing = TimingPlan{o.warmup, q.auto_iterations ? 1 : o.iterations, o.samples};
    q.sample_seconds = o.sample_time_given ? o.sample_time : kDefaultSampleSeconds;
    q.verify = o.verify;
    if (!o.corrupt_offset.empty()) {
        if (!o.verify) throw UsageError("--debug-corrupt-offset needs --verify");
        q.corrupt_offset = parse_size(o.corrupt_offset, true);
        const std::uint64_t largest = *std::max_element(q.sizes.begin(), q.sizes.end());
        if (*q.corrupt_offset >= largest)
            throw UsageError("--debug-corrupt-offset " + std::to_string(*q.corrupt_offset) + " is beyond the copy of " +
                             std::to_string(largest) + " bytes");
    }
    q.affinity = !o.no_affinity;
    q.chart = !o.no_chart;
    if (o.expect_min_given && !(o.expect_min > 0))
        throw UsageError("--expect-min must be a positive bandwidth in GB/s, such as 50");
    q.expect_min = o.expect_min_given ? o.expect_min : 0;
    return q;
}

bool stdout_is_utf8_terminal() {
    if (isatty(STDOUT_FILENO) != 1) return false;
    for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
        const char* value = std::getenv(name);
        if (value == nullptr || *value == '\0') continue;
        std::string v(value);
        std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return v.find("utf-8") != std::string::npos || v.find("utf8") != std::string::npos;
    }
    return false;
}

int terminal_columns() {
    winsize ws{};
    if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return std::clamp<int>(ws.ws_col, 40, 160);
    if (const char* columns = std::getenv("COLUMNS")) {
        // strtol, not atoi: an out-of-range COLUMNS is undefined behaviour for atoi.
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && n > 0) return static_cast<int>(std::clamp(n, 40L, 160L));
    }
    return 80;
}

// One device, or one (device, peer) pair for p2p.
struct CopyUnit {
    DeviceIdentity device;
    std::optional<DeviceIdentity> peer;
};

std::vector<CopyUnit> copy_units(const CopyRequest& q, const std::vector<DeviceIdentity>& devices) {
    std::vector<CopyUnit> units;
    if (q.direction != CopyDirection::p2p) {
        for (const DeviceIdentity& d : devices) units.push_back({d, std::nullopt});
        return units;
    }
    const std::vector<DeviceIdentity> visible = cuda_visible_devices();
    if (visible.size() < 2)
        throw UsageError("copy p2p needs a second device, and only " + std::to_string(visible.size()) + " is visible");
    std::vector<DeviceIdentity> peers;
    if (q.peer_spec) {
        for (std::size_t i : resolve_device_spec(*q.peer_spec, visible)) peers.push_back(visible[i]);
    } else {
        peers = visible;  // every other device
    }
    if (q.peer_spec && !q.peer_spec->all && devices.size() == 1)
        for (const DeviceIdentity& p : peers)
            if (p.cuda_index == devices.front().cuda_index)
                throw UsageError("--peer " + q.peer_spec->text + " names device " + to_string(p.cuda_index.value()) +
                                 " itself; p2p copies to another device");
    for (const DeviceIdentity& d : devices)
        for (const DeviceIdentity& p : peers)
            if (p.cuda_index != d.cuda_index) units.push_back({d, p});
    if (units.empty()) throw UsageError("copy p2p: no pair of different devices among -d and --peer");
    return units;
}

// Rows that stand for copies that cannot run, so the report says why.
void add_skipped(std::vector<CopyResult>& results, const CopyPlan& plan, const std::string& why) {
    for (std::uint64_t bytes : plan.sizes) {
        CopyResult r;
        r.flow = copy_direction_name(plan.direction);
        r.direction = plan.direction;
        r.device = plan.device;
        r.peer = plan.peer;
        r.peer_access = plan.peer_access;
        r.engine = plan.engine;
        r.bytes = bytes;
        r.skipped = why;
        results.push_back(std::move(r));
    }
}

void run_copy_command(const CopyOptions& o, Context& ctx) {
    ctx.report.command = "copy";
    const CopyRequest q = check_options(o);
    const std::vector<DeviceIdentity> devices = resolve_cuda_devices(ctx.globals, "0");
    const std::vector<CopyUnit> units = copy_units(q, devices);

    CopyReportStyle style;
    style.format = ctx.output.format;
    style.unit = ctx.output.unit;
    style.chart = q.chart;
    style.chart_style = ChartStyle{stdout_is_utf8_terminal(), terminal_columns()};

    const std::uint64_t per_plan = q.sizes.size() * (q.direction == CopyDirection::bidir ? 2 : 1);
    const std::uint64_t plans_per_unit = q.direction == CopyDirection::p2p && q.engine == CopyEngine::ce ? 2 : 1;
    Progress progress(progress_enabled(ctx.globals) && (q.sizes.size() > 1 || units.size() > 1),
                      std::string("copy ") + copy_direction_name(q.direction), units.size() * plans_per_unit * per_plan);

    std::vector<CopyResult> results;
    Json affinity = Json::array();
    // The report is rebuilt after every row, so whatever was measured is
    // printed even when a later device fails. Before the first row it stays
    // empty: an error then prints no table header on stdout.
    auto publish = [&] {
        if (results.empty()) return;
        ctx.report = build_copy_report(results, style);
        ctx.report.extra["cpu_affinity"] = affinity;
        if (q.expect_min > 0) ctx.report.extra["expect_min_gbps"] = q.expect_min;
    };

    for (const CopyUnit& unit : units) {
        throw_if_interrupted();
        const int device = unit.device.cuda_index.value().ordinal();
        // Pin first, so the context's own threads and first-touched host pages
        // start out next to the GPU.
        std::optional<ScopedCpuAffinity> pin;
        if (q.affinity) {
            const NvmlDeviceFigures figures = nvml_figures_for(unit.device.pci);
            if (figures.cpu_affinity.empty()) {
                spdlog::debug("no CPU affinity known for device {} (NVML); host threads not pinned", device);
            } else {
                pin.emplace(figures.cpu_affinity);
                const std::string cpus = format_cpu_list(figures.cpu_affinity);
                if (pin->pinned()) {
                    spdlog::info("device {}: host threads pinned to CPUs {}", device, cpus);
                    affinity.push_back({{"device", device}, {"cpus", cpus}});
                } else {
                    spdlog::debug("device {}: could not pin host threads to CPUs {}", device, cpus);
                }
            }
        }
        // Current without a guard: a guard would restore the previous device
        // afterwards, and cudaSetDevice creates a context on the device it names.
        GPUMEM_CUDA_CALL(cudaSetDevice(device));

        CopyPlan base;
        base.direction = q.direction;
        base.device = DeviceId(device);
        base.host_kind = q.host_kind;
        base.engine = q.engine;
        base.sizes = q.sizes;
        base.timing = q.timing;
        base.auto_iterations = q.auto_iterations;
        base.sample_seconds = q.sample_seconds;
        base.verify = q.verify;
        base.corrupt_offset = q.corrupt_offset;

        std::vector<CopyPlan> plans;
        if (unit.peer) {
            base.peer = unit.peer->cuda_index;
            const bool possible = peer_access_possible(base.device, *base.peer);
            if (q.engine == CopyEngine::ce) {
                CopyPlan staged = base;
                staged.peer_access = false;
                plans.push_back(staged);
            }
            CopyPlan direct = base;
            direct.peer_access = true;
            if (possible) {
                plans.push_back(direct);
            } else {
                const std::string why = "device " + std::to_string(device) + " cannot access device " +
                                        to_string(*base.peer) + " directly (cudaDeviceCanAccessPeer is 0)";
                spdlog::warn("{}", why);
                add_skipped(results, direct, why);
            }
        } else {
            plans.push_back(base);
        }

        for (const CopyPlan& plan : plans) {
            check_copy_fits(plan);
            spdlog::info("copy {} on device {}: {} size(s) up to {}", copy_direction_name(plan.direction), device,
                         plan.sizes.size(), format_bytes(*std::max_element(plan.sizes.begin(), plan.sizes.end())));
            run_copy_plan(plan, [&](const CopyResult& r) {
                results.push_back(r);
                progress.update(results.size(), describe_copy(r) + " " + format_bandwidth(copy_figures(r).median_bps, ctx.output.unit));
                publish();
            });
        }
    }
    progress.finish();
    publish();

    const auto failed = failed_verifications(results);
    if (!failed.empty()) {
        const CopyResult& r = *failed.front();
        std::string message = "verification failed: " + describe_copy(r) + ": " +
                              std::to_string(r.verification.mismatched_words) + " of " + std::to_string((r.bytes + 7) / 8) +
                              " 8-byte words differ";
        if (r.verification.first_bad_offset)
            message += ", first bad byte at offset " + std::to_string(*r.verification.first_bad_offset);
        if (failed.size() > 1) message += " (" + std::to_string(failed.size() - 1) + " more copies failed too)";
        throw VerificationError(message);
    }
    if (q.expect_min > 0) {
        const auto below = copies_below(results, q.expect_min);
        if (!below.empty()) {
            const CopyResult& r = *below.front();
            std::string message = describe_copy(r) + ": median " + format_decimal(copy_figures(r).median_bps / 1e9, 2) +
                                  " GB/s is below --expect-min " + format_decimal(q.expect_min, 3) + " GB/s";
            if (below.size() > 1) message += " (and " + std::to_string(below.size() - 1) + " more)";
            throw ExpectationError(message);
        }
    }
}

}  // namespace

void setup_copy(CLI::App& sub_app, Context& ctx, bool full) {
    auto o = std::make_shared<CopyOptions>();
    CLI::App* sub = &sub_app;
    if (!full) return;  // listed in --help; options only for the subcommand invoked
    sub->add_option("direction", o->direction, "h2d, d2h, d2d (within a device), h2h, bidir (h2d and d2h at once) or p2p")
        ->required()
        ->type_name("DIRECTION");
    CLI::Option* size = sub->add_option("-s,--size", o->size, "Bytes per copy")->capture_default_str()->check(size_validator(false));
    CLI::Option* sizes = sub->add_option("--sizes", o->sizes,
                                         "Sweep: sizes A,B,C or a range A..B (doubling), A..B:xF or A..B:+S; one row per "
                                         "size and a bar chart")
                             ->check(range_validator());
    size->excludes(sizes);
    sub->add_option("--host-memory", o->host_memory, std::string("Host memory kind: ") + host_memory_kind_names())
        ->capture_default_str()
        ->type_name("KIND");
    sub->add_option("--engine", o->engine, "ce: a copy engine (cudaMemcpyAsync); sm: a copy kernel on the SMs")
        ->capture_default_str()
        ->type_name("ce|sm");
    sub->add_option("-n,--iterations", o->iterations, "Copies per timed sample (default: as many as fill --sample-time)")
        ->check(CLI::Range(1, 4096));
    sub->add_option("--samples", o->samples, "Timed samples; the median is reported")->capture_default_str()->check(CLI::Range(1, 1000));
    sub->add_option("--warmup", o->warmup, "Untimed copies before the samples")->capture_default_str()->check(CLI::Range(0, 1000));
    sub->add_option("--sample-time", o->sample_time,
                    "Seconds one sample should last when --iterations is not given (default 0.01)")
        ->type_name("SECONDS")
        ->check(CLI::Range(0.001, 10.0));
    sub->add_flag("--verify", o->verify, "Fill the source with a pattern and check every destination byte; exit 4 on mismatch");
    sub->add_option("--peer", o->peer, "p2p: destination device(s), a -d style SPEC (default: every other device)")
        ->type_name("SPEC");
    sub->add_flag("--no-affinity", o->no_affinity, "Do not pin host threads to the CPUs next to the GPU (NVML)");
    sub->add_flag("--no-chart", o->no_chart, "No bar chart after a sweep");
    sub->add_option("--expect-min", o->expect_min, "Exit 6 when any median bandwidth is below GBPS (1e9 bytes/s); results still print")
        ->type_name("GBPS");
    sub->add_option("--debug-corrupt-offset", o->corrupt_offset, "Test hook: flip this destination byte before verifying")
        ->group("");
    sub->callback([o, sub, &ctx] {
        o->host_memory_given = sub->count("--host-memory") > 0;
        o->expect_min_given = sub->count("--expect-min") > 0;
        o->sample_time_given = sub->count("--sample-time") > 0;
        check_options(*o);  // usage errors now, before any device work
        ctx.run = [o, &ctx] { run_copy_command(*o, ctx); };
    });
}

}  // namespace gpumem::cli
