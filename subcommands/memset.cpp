// gpumem memset: fill device (or host) memory with 8/16/32-bit words, time it
// against the memory's peak bandwidth, and optionally verify every word.
#include <cuda_runtime_api.h>

#include <memory>

#include <spdlog/spdlog.h>

#include "common.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_raii.hpp"
#include "core/device_inventory.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "bench/memset_bench.hpp"
#include "base/sizes.hpp"

namespace gpumem::cli {
namespace {

struct MemsetOptions {
    std::string size = "256MiB";
    std::string value = "0";
    int width_bits = 8;
    std::string offset = "0";
    std::string target = "device";
    std::string host_memory = "pinned";
    int iterations = 20;
    int warmup = 2;
    int samples = 5;
    bool verify = false;
    std::string corrupt_offset;  // hidden test hook
};

std::string hex(std::uint32_t value, int width) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x", width * 2, value);
    return buf;
}

// Everything about the plan that does not depend on the device.
MemsetPlan plan_from_options(const MemsetOptions& o) {
    MemsetPlan plan;
    plan.width = o.width_bits / 8;
    plan.value = static_cast<std::uint32_t>(parse_unsigned(o.value, 0xFFFFFFFFULL));
    plan.offset = parse_size(o.offset, true);
    plan.host_target = o.target == "host";
    plan.host_kind = parse_host_memory_kind(o.host_memory);
    plan.timing = TimingPlan{o.warmup, o.iterations, o.samples};
    plan.verify = o.verify;
    if (!o.corrupt_offset.empty()) {
        plan.corrupt_offset = parse_size(o.corrupt_offset, true);
        plan.verify = true;
    }
    return plan;
}

void run_memset_command(const MemsetOptions& o, Context& ctx) {
    ctx.report.command = "memset";
    MemsetPlan base = plan_from_options(o);
    const SizeSpec size = parse_size_spec(o.size, {false, true});
    if (size.is_percent && base.host_target) throw UsageError("--size as a percentage needs --target device (it means % of free device memory)");
    if (!size.is_percent) {
        base.size = size.bytes;
        validate_memset_plan(base);
    }
    const auto devices = resolve_cuda_devices(ctx.globals, "0");

    Table table;
    table.key = "results";
    table.fields = {{"device", "dev", FieldKind::integer},
                    {"target", "target", FieldKind::text},
                    {"bytes", "bytes", FieldKind::bytes},
                    {"width_bits", "width", FieldKind::integer},
                    {"value", "value", FieldKind::text},
                    {"median_us", "median us", FieldKind::real, 1},
                    {"bandwidth_gbps", "bandwidth", FieldKind::bandwidth},
                    {"min_gbps", "min", FieldKind::bandwidth},
                    {"max_gbps", "max", FieldKind::bandwidth},
                    {"cv_percent", "cv", FieldKind::percent, 2},
                    {"peak_percent", "of peak", FieldKind::percent, 1},
                    {"verified", "verified", FieldKind::text},
                    {"mismatches", "mismatches", FieldKind::integer}};
    ctx.report.tables.push_back(table);
    Table& rows = ctx.report.tables.back();
    Json details = Json::array();
    std::uint64_t total_mismatches = 0;
    std::string first_failure;

    for (const DeviceIdentity& device : devices) {
        throw_if_interrupted();
        MemsetPlan plan = base;
        plan.device = device.cuda_index.value();
        if (size.is_percent) {
            AutoDevice guard(plan.device);
            std::size_t free_bytes = 0, total_bytes = 0;
            GPUMEM_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
            // Round down to a whole word so any percentage gives a valid plan.
            plan.size = size.resolve(free_bytes) / plan.width * plan.width;
            validate_memset_plan(plan);
        }
        spdlog::info("memset of {} on device {} ({})", format_bytes(plan.size - plan.offset), plan.device.ordinal(), device.name);
        const MemsetResult r = run_memset(plan);
        const double bytes = static_cast<double>(r.bytes_set);
        const auto peak = plan.host_target ? std::optional<double>() : nvml_figures_for(device.pci).peak_memory_bandwidth;
        const double bw_median = bytes / r.seconds.median;
        const std::string target = plan.host_target ? std::string("host:") + host_memory_kind_name(plan.host_kind) : "device";
        rows.add_row({static_cast<std::int64_t>(plan.device.ordinal()), target, r.bytes_set, static_cast<std::int64_t>(plan.width * 8),
                      hex(plan.value, plan.width), r.seconds.median * 1e6, bw_median, bytes / r.seconds.max,
                      bytes / r.seconds.min, r.seconds.cv * 100.0, peak ? Cell(100.0 * bw_median / *peak) : Cell(),
                      r.verified ? std::string(r.mismatches ? "FAILED" : "ok") : std::string("no"),
                      r.verified ? Cell(static_cast<std::int64_t>(r.mismatches)) : Cell()});
        Json d = {{"device", plan.device.ordinal()},
                  {"uuid", device.uuid},
                  {"name", device.name},
                  {"buffer_bytes", plan.size},
                  {"offset", plan.offset},
                  {"samples_us", Json::array()},
                  {"iterations", plan.timing.iterations},
                  {"warmup", plan.timing.warmup},
                  {"mean_us", r.seconds.mean * 1e6},
                  {"stdev_us", r.seconds.stdev * 1e6},
                  {"peak_gbps", peak ? Json(*peak / 1e9) : Json()}};
        for (double s : r.sample_seconds) d["samples_us"].push_back(s * 1e6);
        if (plan.host_target) d["huge_pages"] = r.host_huge_pages;
        if (r.first_bad_offset) d["first_bad_offset"] = *r.first_bad_offset;
        details.push_back(d);
        if (r.mismatches && first_failure.empty())
            first_failure = "device " + to_string(plan.device) + ": first bad byte at offset " + std::to_string(*r.first_bad_offset);
        total_mismatches += r.mismatches;
    }
    ctx.report.extra["details"] = details;
    ctx.report.extra["bandwidth_note"] = "GB/s = 1e9 bytes/s of bytes set; time is per memset, median of samples";
    if (total_mismatches)
        throw VerificationError("verification failed: " + std::to_string(total_mismatches) + " mismatching words (" + first_failure + ")");
}

}  // namespace

void setup_memset(CLI::App& app, Context& ctx, bool full) {
    auto o = std::make_shared<MemsetOptions>();
    CLI::App* sub = app.add_subcommand("memset", "Fill device or host memory with 8/16/32-bit words; time and verify it");
    if (!full) return;  // listed in --help; options only for the subcommand invoked
    sub->add_option("-s,--size", o->size, "Buffer size (SIZE, or PCT% of free device memory)")->capture_default_str()->check(size_validator(true));
    sub->add_option("--value", o->value, "Word value, decimal or 0x hexadecimal")->capture_default_str()->type_name("V");
    sub->add_option("--width", o->width_bits, "Word width in bits (cuMemsetD8/D16/D32)")->capture_default_str()
        ->check(CLI::IsMember({8, 16, 32}));
    sub->add_option("--offset", o->offset, "First byte set; bytes [offset, size) are set")->capture_default_str()->type_name("SIZE");
    sub->add_option("--target", o->target, "Memory to set: device or host")->capture_default_str()->check(CLI::IsMember({"device", "host"}));
    sub->add_option("--host-memory", o->host_memory, std::string("Host memory kind with --target host: ") + host_memory_kind_names())->capture_default_str()
        ->type_name("KIND");
    sub->add_option("-n,--iterations", o->iterations, "Memsets per timed sample")->capture_default_str()->check(CLI::Range(1, kMaxQueuedOperations));
    sub->add_option("--warmup", o->warmup, "Untimed memsets first")->capture_default_str()->check(CLI::Range(0, 1000));
    sub->add_option("--samples", o->samples, "Timed samples (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
    sub->add_flag("--verify", o->verify, "Check every word afterwards (and that bytes before --offset are untouched); exit 4 on mismatch");
    sub->add_option("--debug-corrupt-offset", o->corrupt_offset, "Test hook: corrupt this byte of the region before verifying")
        ->group("");
    sub->callback([o, &ctx] {
        plan_from_options(*o);  // usage errors now, before any device work
        ctx.run = [o, &ctx] { run_memset_command(*o, ctx); };
    });
}

}  // namespace gpumem::cli
