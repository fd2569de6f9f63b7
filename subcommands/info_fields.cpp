#include "info_fields.hpp"

#include <cstdint>
#include <string>

#include "base/errors.hpp"
#include "core/cuda_devices.hpp"

namespace gpumem::cli {
namespace {

Cell count_cell(unsigned value) { return static_cast<std::int64_t>(value); }

// Getters of one figure of a record every snapshot reads (memory), or of one
// it reads when asked (BAR1, the PCIe link: null when not read).
template <std::uint64_t NvmlMemory::*figure>
Cell memory_cell(const InfoDevice& d) {
    return d.device->memory.*figure;
}
template <std::uint64_t NvmlBar1::*figure>
Cell bar1_cell(const InfoDevice& d) {
    return d.device->bar1 ? Cell((*d.device->bar1).*figure) : Cell();
}
template <unsigned NvmlPcieLink::*figure>
Cell pcie_cell(const InfoDevice& d) {
    return d.device->pcie ? count_cell((*d.device->pcie).*figure) : Cell();
}

// Rows: name (the key), {header, kind, alias, NVML query needed,
// in the default table, getter}, description for --list.
constexpr Named<InfoField> kInfoFieldRows[] = {
    {"index",
     {"cuda", FieldKind::integer, "cuda_index", nullptr, true,
      [](const InfoDevice& d) -> Cell { return std::int64_t{d.device->id.cuda_index.value().ordinal()}; }},
     "CUDA index, as CUDA programs in this environment number the device"},
    {"nvml_index",
     {"nvml", FieldKind::integer, "", nullptr, true,
      [](const InfoDevice& d) -> Cell { return d.device->id.nvml_index ? count_cell(*d.device->id.nvml_index) : Cell(); }},
     "NVML's index, which nvidia-smi shows"},
    {"name", {"name", FieldKind::text, "", nullptr, true, [](const InfoDevice& d) -> Cell { return d.device->id.name; }},
     "device name"},
    {"uuid", {"uuid", FieldKind::text, "gpu_uuid", nullptr, false, [](const InfoDevice& d) -> Cell { return d.device->id.uuid; }},
     "GPU UUID (GPU-...)"},
    {"pci_bus_id",
     {"bus id", FieldKind::text, "pci.bus_id", nullptr, true,
      [](const InfoDevice& d) -> Cell { return d.device->id.pci.to_string(); }},
     "PCI bus id, domain:bus:device.function"},
    {"total", {"total", FieldKind::bytes, "memory.total", nullptr, true, memory_cell<&NvmlMemory::total>},
     "total memory, bytes"},
    {"reserved",
     {"reserved", FieldKind::bytes, "memory.reserved", nullptr, true,
      [](const InfoDevice& d) -> Cell { return d.device->memory.has_reserved ? Cell(d.device->memory.reserved) : Cell(); }},
     "memory the driver reserves, bytes (missing without NVML memory info v2)"},
    {"used", {"used", FieldKind::bytes, "memory.used", nullptr, true, memory_cell<&NvmlMemory::used>},
     "used memory, bytes (with memory info v1, reserved memory included)"},
    {"free", {"free", FieldKind::bytes, "memory.free", nullptr, true, memory_cell<&NvmlMemory::free>},
     "free memory, bytes"},
    {"bar1_total",
     {"bar1 total", FieldKind::bytes, "bar1.total", &SnapshotFields::bar1, false, bar1_cell<&NvmlBar1::total>},
     "BAR1 (device memory the host can map) size, bytes"},
    {"bar1_used",
     {"bar1 used", FieldKind::bytes, "bar1.used", &SnapshotFields::bar1, false, bar1_cell<&NvmlBar1::used>},
     "BAR1 in use, bytes"},
    {"bar1_free",
     {"bar1 free", FieldKind::bytes, "bar1.free", &SnapshotFields::bar1, false, bar1_cell<&NvmlBar1::free>},
     "BAR1 free, bytes"},
    {"compute_capability",
     {"cc", FieldKind::text, "compute_cap", &SnapshotFields::compute_capability, true,
      [](const InfoDevice& d) -> Cell {
          const auto& cc = d.device->compute_capability;
          return cc ? Cell(std::to_string(cc->first) + "." + std::to_string(cc->second)) : Cell();
      }},
     "compute capability, such as 9.0"},
    {"pcie_gen",
     {"pcie gen", FieldKind::integer, "pcie.link.gen.current", &SnapshotFields::pcie, false, pcie_cell<&NvmlPcieLink::current_generation>},
     "current PCIe link generation"},
    {"pcie_width",
     {"pcie width", FieldKind::integer, "pcie.link.width.current", &SnapshotFields::pcie, false, pcie_cell<&NvmlPcieLink::current_width>},
     "current PCIe link width, lanes"},
    {"pcie_gen_max",
     {"pcie gen max", FieldKind::integer, "pcie.link.gen.max", &SnapshotFields::pcie, false, pcie_cell<&NvmlPcieLink::max_generation>},
     "highest PCIe link generation of the device and its slot"},
    {"pcie_width_max",
     {"pcie width max", FieldKind::integer, "pcie.link.width.max", &SnapshotFields::pcie, false, pcie_cell<&NvmlPcieLink::max_width>},
     "widest PCIe link of the device and its slot, lanes"},
    {"peak_memory_bandwidth",
     {"peak bw", FieldKind::bandwidth, "", &SnapshotFields::peak_bandwidth, false,
      [](const InfoDevice& d) -> Cell { return optional_cell(d.device->peak_memory_bandwidth); }},
     "peak memory bandwidth from the maximum memory clock and the bus width (JSON: GB/s)"},
    {"driver_version",
     {"driver", FieldKind::text, "driver_version", &SnapshotFields::versions, false,
      [](const InfoDevice& d) -> Cell { return d.snapshot->driver_version.empty() ? Cell() : Cell(d.snapshot->driver_version); }},
     "NVIDIA driver version"},
    {"cuda_driver_version",
     {"cuda driver", FieldKind::text, "", &SnapshotFields::versions, false,
      [](const InfoDevice& d) -> Cell { return format_cuda_version(d.snapshot->cuda_driver_version); }},
     "CUDA version of the driver, such as 13.0"},
    {"visible_devices_id",
     {"CUDA_VISIBLE_DEVICES", FieldKind::text, "", nullptr, false,
      [](const InfoDevice& d) -> Cell {
          // CUDA's index with the variable unset; where that is unknown, the UUID is unambiguous.
          return d.device->base_index ? std::to_string(*d.device->base_index) : d.device->id.uuid;
      }},
     "the value to put in CUDA_VISIBLE_DEVICES to select this device"},
};

std::string_view trimmed(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// The row named `name` by its key or by its alias.
const Named<InfoField>& field_named(std::string_view name) {
    if (const Named<InfoField>* row = kInfoFields.find(name)) return *row;
    for (const Named<InfoField>& row : kInfoFields)
        if (!row.value.alias.empty() && row.value.alias == name) return row;
    return kInfoFields.row(name);  // throws "unknown info field ... (expected ...)"
}

}  // namespace

const NameTable<InfoField> kInfoFields{"info field", kInfoFieldRows};

Field info_field(const Named<InfoField>& row) noexcept { return {row.name, row.value.header, row.value.kind}; }

InfoFieldList parse_info_fields(std::string_view text) {
    if (trimmed(text).empty())
        throw UsageError("empty list of info fields (expected " + kInfoFields.names() + "; gpumem --list fields describes them)");
    InfoFieldList chosen;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item = trimmed(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (item.empty()) throw UsageError("empty info field name in '" + std::string(text) + "'");
        const Named<InfoField>* row = &field_named(item);
        for (const Named<InfoField>* c : chosen)
            if (c == row) throw UsageError("info field '" + std::string(row->name) + "' named twice");
        chosen.push_back(row);
        if (comma == std::string_view::npos) return chosen;
        start = comma + 1;
    }
}

InfoFieldList default_info_fields(Format format) {
    InfoFieldList fields;
    for (const Named<InfoField>& row : kInfoFields)
        if (format != Format::table || row.value.in_default_table) fields.push_back(&row);
    return fields;
}

SnapshotFields snapshot_fields_for(const InfoFieldList& fields) {
    SnapshotFields need;
    for (const Named<InfoField>* row : fields)
        if (row->value.needs) need.*(row->value.needs) = true;
    return need;
}

NameListView info_fields_view() {
    // Composed once, when --list fields asks: the view holds string_views.
    static const std::vector<std::string> descriptions = [] {
        std::vector<std::string> texts;
        for (const Named<InfoField>& row : kInfoFields)
            texts.push_back(std::string(row.help) + (row.value.alias.empty() ? "" : " (also: " + std::string(row.value.alias) + ")"));
        return texts;
    }();
    NameListView view{kInfoFields.what(), {}};
    for (std::size_t i = 0; i < kInfoFields.size(); ++i) view.rows.emplace_back(kInfoFields.begin()[i].name, descriptions[i]);
    return view;
}

FieldSchemaSet info_fields_schema() {
    FieldSchemaSet set;
    for (const Named<InfoField>& row : kInfoFields) set.fields.push_back({info_field(row), true, nullptr, nullptr});
    return set;
}

}  // namespace gpumem::cli
