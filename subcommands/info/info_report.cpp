#include "info/info_report.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "cli/commands.hpp"
#include "core/cuda_devices.hpp"

namespace gpumem::cli {
namespace {

// One compute process of one device.
struct InfoProcess {
    const DeviceReport* device;
    const NvmlProcess* process;
};

constexpr Column<InfoProcess> kProcessColumns[] = {
    {{"index", "cuda", FieldKind::integer},
     [](const InfoProcess& p) -> Cell { return std::int64_t{p.device->id.cuda_index.value().ordinal()}; }},
    {{"pid", "pid", FieldKind::integer}, [](const InfoProcess& p) -> Cell { return static_cast<std::int64_t>(p.process->pid); }},
    {{"process_name", "process", FieldKind::text}, [](const InfoProcess& p) -> Cell { return p.process->name; }},
    {{"used_memory", "used", FieldKind::bytes}, [](const InfoProcess& p) -> Cell { return optional_cell(p.process->used_memory); }},
};

// NVML memory info v2 answered for every device: `used` excludes reserved memory.
bool memory_info_v2(const InventorySnapshot& snap) {
    return std::all_of(snap.devices.begin(), snap.devices.end(), [](const DeviceReport& d) { return d.memory.has_reserved; });
}

// The keys of a sample's document after its tables.
constexpr Column<InfoResults> kSampleColumns[] = {
    {{"source", "", FieldKind::text}, [](const InfoResults& r) -> Cell { return r.snapshot->source; }},
    {{"driver_version", "", FieldKind::text},
     [](const InfoResults& r) -> Cell { return r.snapshot->driver_version.empty() ? Cell() : Cell(r.snapshot->driver_version); }},
    {{"cuda_driver_version", "", FieldKind::text},
     [](const InfoResults& r) -> Cell { return format_cuda_version(r.snapshot->cuda_driver_version); }},
    {{"memory_info_version", "", FieldKind::integer},
     [](const InfoResults& r) -> Cell {
         if (r.snapshot->source != "nvml") return std::int64_t{0};
         return std::int64_t{memory_info_v2(*r.snapshot) ? 2 : 1};
     }},
    {{"timestamp", "", FieldKind::real}, [](const InfoResults& r) -> Cell { return optional_cell(r.timestamp); }, Shown::always, true},
};

constexpr Column<PickedDevice> kPickedColumns[] = {
    {{"index", "", FieldKind::integer}, [](const PickedDevice& p) -> Cell { return std::int64_t{p.index.ordinal()}; }},
    {{"visible_devices_id", "", FieldKind::text}, [](const PickedDevice& p) -> Cell { return p.visible_devices_id; }},
    {{"free", "", FieldKind::bytes}, [](const PickedDevice& p) -> Cell { return p.free; }},
};

constexpr auto picked_schema = nested_schema<kPickedColumns>;

// The keys of a --pick document.
constexpr Column<InfoResults> kPickColumns[] = {
    {{"pick", "", FieldKind::text}, [](const InfoResults& r) -> Cell { return pick_line(*r.picked); }},
    {{"picked", "", FieldKind::records},
     [](const InfoResults& r) -> Cell { return records_cell(make_records(Columns<PickedDevice>(kPickedColumns), *r.picked)); },
     Shown::always, false, picked_schema},
};

Table devices_table(const InfoFieldList& fields, const InventorySnapshot& snap) {
    Table table;
    table.key = "devices";
    for (const Named<InfoField>* f : fields) table.fields.push_back(info_field(*f));
    for (const DeviceReport& d : snap.devices) {
        const InfoDevice device{&d, &snap};
        std::vector<Cell> row;
        row.reserve(fields.size());
        for (const Named<InfoField>* f : fields) row.push_back(f->value.get(device));
        table.add_row(std::move(row));
    }
    return table;
}

void add_processes(Report& report, const InventorySnapshot& snap, Format format) {
    std::vector<InfoProcess> processes;
    for (const DeviceReport& d : snap.devices)
        for (const NvmlProcess& p : d.processes) processes.push_back({&d, &p});
    report.tables.push_back(make_table("processes", Columns<InfoProcess>(kProcessColumns), processes, format));
    if (format == Format::table && processes.empty()) report.text_after.push_back("\nNo compute processes.");
}

// The table's first line, and the warning about memory info v1.
void add_header(Report& report, const InventorySnapshot& snap) {
    const std::string driver = snap.driver_version.empty() ? std::string("?") : snap.driver_version;
    std::string head = "NVIDIA driver " + driver + ", CUDA " + format_cuda_version(snap.cuda_driver_version) + ", source " + snap.source;
    if (snap.source == "nvml" && !memory_info_v2(snap)) {
        report.warnings.emplace_back("NVML memory info v2 unavailable: 'used' includes driver-reserved memory (v1)");
        head += " (memory info v1)";
    }
    report.text_before.push_back(std::move(head));
}

// --processes: how many compute processes each device has, and what each uses.
void add_process_metrics(const DeviceReport& d, const MetricLabels& base, std::vector<MetricFamily>& out) {
    out.push_back({"gpumem_compute_processes", "Compute processes NVML lists on the GPU (--processes).", MetricType::gauge,
                   {{base, static_cast<double>(d.processes.size())}}});
    MetricFamily used{"gpumem_process_used_memory_bytes",
                      "Device memory a compute process uses, bytes (--processes; none where NVML cannot tell).",
                      MetricType::gauge,
                      {}};
    for (const NvmlProcess& p : d.processes) {
        if (!p.used_memory) continue;
        MetricLabels labels = base;
        labels.emplace_back("pid", std::to_string(p.pid));
        labels.emplace_back("process_name", p.name);
        used.samples.push_back({std::move(labels), static_cast<double>(*p.used_memory)});
    }
    if (!used.samples.empty()) out.push_back(std::move(used));
}

// --format prometheus: each chosen field's samples for each device, labelled
// gpu (the CUDA index) and uuid; the device's name and other identity go on
// gpumem_device_info only, to keep the other families' series few.
std::vector<MetricFamily> info_metrics(const InfoRequest& request, const InventorySnapshot& snap) {
    std::vector<MetricFamily> families;
    for (const DeviceReport& d : snap.devices) {
        const InfoDevice device{&d, &snap};
        const MetricLabels base{{"gpu", std::to_string(d.id.cuda_index.value().ordinal())}, {"uuid", d.id.uuid}};
        MetricSample info{base, 1};
        std::vector<MetricFamily> samples;
        for (const Named<InfoField>* f : request.fields) add_info_field_metrics(f->value, device, base, info, samples);
        if (info.labels.size() > base.size())
            families.push_back({"gpumem_device_info", "The GPU's identity as labels, value 1: join on gpu and uuid.",
                                MetricType::gauge, {std::move(info)}});
        if (request.processes) add_process_metrics(d, base, samples);
        families.insert(families.end(), std::make_move_iterator(samples.begin()), std::make_move_iterator(samples.end()));
    }
    return families;
}

}  // namespace

std::vector<PickedDevice> pick_devices(const InventorySnapshot& snapshot, const std::optional<SizeSpec>& min_free, std::size_t n) {
    std::vector<const DeviceReport*> candidates;
    for (const DeviceReport& d : snapshot.devices)
        if (!min_free || d.memory.free >= min_free->resolve(d.memory.total)) candidates.push_back(&d);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const DeviceReport* a, const DeviceReport* b) { return a->memory.free > b->memory.free; });
    std::vector<PickedDevice> picked;
    for (std::size_t i = 0; i < candidates.size() && i < n; ++i) {
        const DeviceReport& d = *candidates[i];
        // Indices for CUDA_VISIBLE_DEVICES count in CUDA's order with the
        // variable unset; where that is unknown, the UUID is unambiguous.
        picked.push_back({d.id.cuda_index.value(), d.base_index ? std::to_string(*d.base_index) : d.id.uuid, d.memory.free});
    }
    return picked;
}

std::string pick_line(const std::vector<PickedDevice>& picked) {
    std::string line;
    for (const PickedDevice& p : picked) line += (line.empty() ? "" : ",") + p.visible_devices_id;
    return line;
}

Report info_report(const InfoRequest& request, const InfoResults& results, const OutputOptions& output) {
    Report report;
    report.command = "info";
    if (results.picked) report.fields = make_record(Columns<InfoResults>(kPickColumns), results);
    if (!results.snapshot) return report;  // nothing measured yet, or a pick
    const InventorySnapshot& snap = *results.snapshot;
    report.tables.push_back(devices_table(request.fields, snap));
    if (request.processes) add_processes(report, snap, output.format);
    report.fields = make_record(Columns<InfoResults>(kSampleColumns), results);
    add_header(report, snap);
    if (output.format == Format::prometheus) report.metrics = info_metrics(request, snap);
    return report;
}

DocumentSchema info_schema() {
    DocumentSchema schema{"info",
                          {{"devices", info_fields_schema()}, {"processes", Columns<InfoProcess>(kProcessColumns).schema()}},
                          Columns<InfoResults>(kSampleColumns).schema()};
    const FieldSchemaSet pick = Columns<InfoResults>(kPickColumns).schema();
    schema.fields.fields.insert(schema.fields.fields.end(), pick.fields.begin(), pick.fields.end());
    return schema;
}

}  // namespace gpumem::cli
