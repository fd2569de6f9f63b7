// gpumem info: device memory through NVML, without a CUDA context.
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>

#include <spdlog/spdlog.h>

#include "legacy.hpp"
#include "core/cuda_devices.hpp"
#include "core/device_inventory.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"

namespace gpumem::cli {
namespace {

struct InfoOptions {
    std::string query;        // comma list of field names
    bool processes = false;
    int pick = 0;
    std::string min_free;
    double loop_seconds = 0;
    long long count = 0;
};

// A field `info` can report, with the nvidia-smi style alias users know.
struct InfoField {
    Field field;
    const char* alias;
};

const std::vector<InfoField>& info_fields() {
    static const std::vector<InfoField> fields = {
        {{"index", "cuda", FieldKind::integer}, "cuda_index"},
        {{"nvml_index", "nvml", FieldKind::integer}, nullptr},
        {{"name", "name", FieldKind::text}, nullptr},
        {{"uuid", "uuid", FieldKind::text}, "gpu_uuid"},
        {{"pci_bus_id", "bus id", FieldKind::text}, "pci.bus_id"},
        {{"total", "total", FieldKind::bytes}, "memory.total"},
        {{"reserved", "reserved", FieldKind::bytes}, "memory.reserved"},
        {{"used", "used", FieldKind::bytes}, "memory.used"},
        {{"free", "free", FieldKind::bytes}, "memory.free"},
        {{"bar1_total", "bar1 total", FieldKind::bytes}, "bar1.total"},
        {{"bar1_used", "bar1 used", FieldKind::bytes}, "bar1.used"},
        {{"bar1_free", "bar1 free", FieldKind::bytes}, "bar1.free"},
        {{"compute_capability", "cc", FieldKind::text}, "compute_cap"},
        {{"pcie_gen", "pcie gen", FieldKind::integer}, "pcie.link.gen.current"},
        {{"pcie_width", "pcie width", FieldKind::integer}, "pcie.link.width.current"},
        {{"pcie_gen_max", "pcie gen max", FieldKind::integer}, "pcie.link.gen.max"},
        {{"pcie_width_max", "pcie width max", FieldKind::integer}, "pcie.link.width.max"},
        {{"peak_memory_bandwidth", "peak bw", FieldKind::bandwidth}, nullptr},
        {{"driver_version", "driver", FieldKind::text}, "driver_version"},
        {{"cuda_driver_version", "cuda driver", FieldKind::text}, nullptr},
        {{"visible_devices_id", "CUDA_VISIBLE_DEVICES", FieldKind::text}, nullptr},
    };
    return fields;
}

// string_view, not string: a static that allocates could throw before main (cert-err58-cpp).
constexpr std::array<std::string_view, 9> kDefaultTableFields = {"index", "nvml_index", "name", "pci_bus_id", "total",
                                                                 "reserved", "used", "free", "compute_capability"};

std::vector<std::size_t> select_fields(const std::string& query, Format format) {
    const auto& all = info_fields();
    std::vector<std::size_t> chosen;
    if (query.empty()) {
        for (std::size_t i = 0; i < all.size(); ++i) {
            const bool in_table = std::find(kDefaultTableFields.begin(), kDefaultTableFields.end(), all[i].field.key) !=
                                  kDefaultTableFields.end();
            if (format == Format::table ? in_table : true) chosen.push_back(i);
        }
        return chosen;
    }
    std::stringstream ss(query);
    std::string name;
    while (std::getline(ss, name, ',')) {
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        std::size_t found = all.size();
        for (std::size_t i = 0; i < all.size(); ++i)
            if (all[i].field.key == name || (all[i].alias && name == all[i].alias)) found = i;
        if (found == all.size()) {
            std::string names;
            for (const auto& f : all) {
                if (!names.empty()) names += ", ";
                names += f.field.key;
            }
            std::string message = "unknown --query field '";
            message += name;
            message += "' (known: ";
            message += names;
            message += ")";
            throw UsageError(message);
        }
        chosen.push_back(found);
    }
    return chosen;
}

Cell device_cell(std::string_view key, const DeviceReport& d, const InventorySnapshot& snap) {
    const auto& m = d.memory;
    if (key == "index") return static_cast<std::int64_t>(d.id.cuda_index.value().ordinal());
    if (key == "nvml_index") return d.id.nvml_index ? Cell(static_cast<std::int64_t>(*d.id.nvml_index)) : Cell();
    if (key == "name") return d.id.name;
    if (key == "uuid") return d.id.uuid;
    if (key == "pci_bus_id") return d.id.pci.to_string();
    if (key == "total") return static_cast<std::uint64_t>(m.total);
    if (key == "reserved") return m.has_reserved ? Cell(static_cast<std::uint64_t>(m.reserved)) : Cell();
    if (key == "used") return static_cast<std::uint64_t>(m.used);
    if (key == "free") return static_cast<std::uint64_t>(m.free);
    if (key == "bar1_total") return d.bar1 ? Cell(static_cast<std::uint64_t>(d.bar1->total)) : Cell();
    if (key == "bar1_used") return d.bar1 ? Cell(static_cast<std::uint64_t>(d.bar1->used)) : Cell();
    if (key == "bar1_free") return d.bar1 ? Cell(static_cast<std::uint64_t>(d.bar1->free)) : Cell();
    if (key == "compute_capability")
        return d.compute_capability ? Cell(std::to_string(d.compute_capability->first) + "." +
                                           std::to_string(d.compute_capability->second))
                                    : Cell();
    if (key == "pcie_gen") return d.pcie ? Cell(static_cast<std::int64_t>(d.pcie->current_generation)) : Cell();
    if (key == "pcie_width") return d.pcie ? Cell(static_cast<std::int64_t>(d.pcie->current_width)) : Cell();
    if (key == "pcie_gen_max") return d.pcie ? Cell(static_cast<std::int64_t>(d.pcie->max_generation)) : Cell();
    if (key == "pcie_width_max") return d.pcie ? Cell(static_cast<std::int64_t>(d.pcie->max_width)) : Cell();
    if (key == "peak_memory_bandwidth") return d.peak_memory_bandwidth ? Cell(*d.peak_memory_bandwidth) : Cell();
    if (key == "driver_version") return snap.driver_version.empty() ? Cell() : Cell(snap.driver_version);
    if (key == "cuda_driver_version") return format_cuda_version(snap.cuda_driver_version);
    if (key == "visible_devices_id") return d.base_index ? std::to_string(*d.base_index) : d.id.uuid;
    return Cell();
}

Report build_report(const InfoOptions& opts, const InventorySnapshot& snap, Format format) {
    Report report;
    report.command = "info";
    Table devices;
    devices.key = "devices";
    const auto chosen = select_fields(opts.query, format);
    for (std::size_t i : chosen) devices.fields.push_back(info_fields()[i].field);
    for (const DeviceReport& d : snap.devices) {
        std::vector<Cell> row;
        for (const Field& f : devices.fields) row.push_back(device_cell(f.key, d, snap));
        devices.add_row(std::move(row));
    }
    report.tables.push_back(std::move(devices));

    if (opts.processes) {
        Table procs;
        procs.key = "processes";
        procs.fields = {{"index", "cuda", FieldKind::integer},
                        {"pid", "pid", FieldKind::integer},
                        {"process_name", "process", FieldKind::text},
                        {"used_memory", "used", FieldKind::bytes}};
        for (const DeviceReport& d : snap.devices)
            for (const NvmlProcess& p : d.processes)
                procs.add_row({static_cast<std::int64_t>(d.id.cuda_index.value().ordinal()), static_cast<std::int64_t>(p.pid), p.name,
                               p.used_memory ? Cell(static_cast<std::uint64_t>(*p.used_memory)) : Cell()});
        if (format == Format::table && procs.rows.empty()) report.text_after.push_back("\nNo compute processes.");
        report.tables.push_back(std::move(procs));
    }

    report.extra["source"] = snap.source;
    report.extra["driver_version"] = snap.driver_version.empty() ? Json() : Json(snap.driver_version);
    report.extra["cuda_driver_version"] = format_cuda_version(snap.cuda_driver_version);
    const bool v2 = std::all_of(snap.devices.begin(), snap.devices.end(), [](const DeviceReport& d) { return d.memory.has_reserved; });
    report.extra["memory_info_version"] = snap.source == "nvml" ? (v2 ? 2 : 1) : 0;
    std::string head = "NVIDIA driver " + (snap.driver_version.empty() ? std::string("?") : snap.driver_version) +
                       ", CUDA " + format_cuda_version(snap.cuda_driver_version) + ", source " + snap.source;
    if (snap.source == "nvml" && !v2) {
        const std::string w = "NVML memory info v2 unavailable: 'used' includes driver-reserved memory (v1)";
        report.warnings.push_back(w);
        head += " (memory info v1)";
    }
    report.text_before.push_back(head);
    return report;
}

// Sleeps up to `seconds`, waking early on Ctrl-C / SIGTERM.
void interruptible_sleep(double seconds) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    while (!interrupt_requested()) {
        const auto left = until - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) return;
        const std::chrono::steady_clock::duration step =
            std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(50));
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(step).count();
        timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
        nanosleep(&ts, nullptr);
    }
}

void run_pick(const InfoOptions& opts, const InventorySnapshot& snap, Context& ctx) {
    std::vector<const DeviceReport*> candidates;
    const SizeSpec min_free = opts.min_free.empty() ? SizeSpec{} : parse_size_spec(opts.min_free, {true, true});
    for (const DeviceReport& d : snap.devices)
        if (d.memory.free >= min_free.resolve(d.memory.total)) candidates.push_back(&d);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const DeviceReport* a, const DeviceReport* b) { return a->memory.free > b->memory.free; });
    std::string list;
    Json picked = Json::array();
    for (std::size_t i = 0; i < candidates.size() && i < static_cast<std::size_t>(opts.pick); ++i) {
        // Indices for CUDA_VISIBLE_DEVICES count in CUDA's order with the
        // variable unset; where that is unknown, the UUID is unambiguous.
        const DeviceReport& d = *candidates[i];
        const std::string id = d.base_index ? std::to_string(*d.base_index) : d.id.uuid;
        list += (list.empty() ? "" : ",") + id;
        picked.push_back({{"index", d.id.cuda_index.value().ordinal()}, {"visible_devices_id", id}, {"free", d.memory.free}});
    }
    ctx.report.command = "info";
    ctx.report.extra["pick"] = list;
    ctx.report.extra["picked"] = picked;
    if (candidates.size() < static_cast<std::size_t>(opts.pick))
        throw OutOfMemoryError("only " + std::to_string(candidates.size()) + " of the " + std::to_string(snap.devices.size()) +
                                   " devices have " + (opts.min_free.empty() ? "any" : "at least " + opts.min_free) +
                                   " free memory; " + std::to_string(opts.pick) + " requested",
                               0);
    if (ctx.output.format == Format::json) return;  // main renders the report
    write_stdout(list + "\n");
    ctx.printed = true;
}

// The NVML queries the chosen output needs.
SnapshotFields fields_needed(const InfoOptions& opts, Format format) {
    SnapshotFields need{false, false, false, false, false, opts.processes};
    // Table and JSON carry the driver versions in their header / document.
    need.versions = format == Format::table || format == Format::json;
    for (std::size_t i : select_fields(opts.query, format)) {
        const std::string_view key = info_fields()[i].field.key;
        if (key.rfind("bar1_", 0) == 0) need.bar1 = true;
        if (key == "compute_capability") need.compute_capability = true;
        if (key.rfind("pcie_", 0) == 0) need.pcie = true;
        if (key == "peak_memory_bandwidth") need.peak_bandwidth = true;
        if (key == "driver_version" || key == "cuda_driver_version") need.versions = true;
    }
    return need;
}

void run_info(const InfoOptions& opts, Context& ctx) {
    ctx.report.command = "info";
    // Every argument is checked before the driver is touched, so bad input
    // gives exit 2 on any machine.
    const DeviceSpec spec = chosen_device_spec(ctx.globals, "all");
    select_fields(opts.query, ctx.output.format);
    DeviceInventory inventory = DeviceInventory::open();
    const auto positions = resolve_device_spec(spec, inventory.visible());
    if (opts.pick > 0) {
        inventory.skip_nvml_shutdown();
        run_pick(opts, inventory.snapshot(positions, SnapshotFields{false, false, false, false, false, false}), ctx);
        return;
    }
    if (opts.loop_seconds <= 0) {
        inventory.skip_nvml_shutdown();  // one query and the process ends
        ctx.report = build_report(opts, inventory.snapshot(positions, fields_needed(opts, ctx.output.format)), ctx.output.format);
        for (const auto& w : ctx.report.warnings) spdlog::warn("{}", w);
        return;
    }
    // JSON Lines: one document per sample, and an error that ends the loop
    // (Ctrl-C, a failing query) is reported on one line as well.
    ctx.output.compact_json = true;
    OutputOptions loop_output = ctx.output;
    for (long long i = 0; opts.count == 0 || i < opts.count; ++i) {
        if (i > 0) interruptible_sleep(opts.loop_seconds);
        throw_if_interrupted();
        Report r = build_report(opts, inventory.snapshot(positions, fields_needed(opts, ctx.output.format)), ctx.output.format);
        const auto now = std::chrono::system_clock::now();
        r.extra["timestamp"] = std::chrono::duration<double>(now.time_since_epoch()).count();
        if (i == 0)
            for (const auto& w : r.warnings) spdlog::warn("{}", w);
        if (i > 0 && loop_output.format == Format::csv) loop_output.header = false;
        if (i > 0 && loop_output.format == Format::table) r.text_before.insert(r.text_before.begin(), "");
        write_stdout(render(r, loop_output));
        ctx.printed = true;
    }
}

}  // namespace

void setup_info(CLI::App& sub_app, Context& ctx, bool full) {
    auto opts = std::make_shared<InfoOptions>();
    CLI::App* sub = &sub_app;
    if (!full) return;  // listed in --help; options only for the subcommand invoked
    sub->add_option("--query", opts->query,
                    "Comma list of fields: index, nvml_index, name, uuid, pci_bus_id, total, reserved, used, free, "
                    "bar1_total, bar1_used, bar1_free, compute_capability, pcie_gen, pcie_width, pcie_gen_max, "
                    "pcie_width_max, peak_memory_bandwidth, driver_version, cuda_driver_version, visible_devices_id (nvidia-smi names such as "
                    "memory.free also work)")
        ->type_name("FIELDS");
    sub->add_flag("--processes", opts->processes, "Also list compute processes with their GPU memory");
    sub->add_option("--pick", opts->pick,
                    "Print the N devices with the most free memory, comma-separated, for CUDA_VISIBLE_DEVICES; exit 5 if fewer qualify")
        ->type_name("N")
        ->check(CLI::Range(1, 1 << 16));
    sub->add_option("--min-free", opts->min_free, "With --pick: only devices with at least this much free (SIZE or % of total)")
        ->check(size_validator(true));
    sub->add_option("-l,--loop", opts->loop_seconds, "Repeat every SECONDS (JSON: one document per line)")
        ->type_name("SECONDS")
        ->check(CLI::Range(0.01, 86400.0));
    sub->add_option("--count", opts->count, "With --loop: stop after N samples (default: until interrupted)")
        ->type_name("N")
        ->check(CLI::Range(1LL, 1LL << 40));
    sub->callback([opts, &ctx] {
        if (!opts->min_free.empty() && opts->pick == 0) throw UsageError("--min-free needs --pick");
        if (opts->count > 0 && opts->loop_seconds <= 0) throw UsageError("--count needs --loop");
        if (opts->pick > 0 && opts->loop_seconds > 0) throw UsageError("--pick and --loop cannot be combined");
        ctx.run = [opts, &ctx] { run_info(*opts, ctx); };
    });
}

}  // namespace gpumem::cli
