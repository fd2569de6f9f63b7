#include "info/info_fields.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/errors.hpp"
#include "base/text.hpp"
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
// A health figure: null when not read, or when the GPU or driver does not support it.
template <auto figure>
Cell health_cell(const InfoDevice& d) {
    if (!d.device->health) return Cell();
    const auto& value = (*d.device->health).*figure;
    if (!value) return Cell();
    if constexpr (std::is_same_v<std::decay_t<decltype(*value)>, bool>) return *value;
    else return static_cast<std::uint64_t>(*value);
}

std::optional<std::uint64_t> clock_event_reasons(const InfoDevice& d) {
    return d.device->health ? d.device->health->clock_event_reasons : std::nullopt;
}

// How each row appears in --format prometheus.
constexpr InfoMetric no_metric() { return {}; }
constexpr InfoMetric gauge(std::string_view name, std::string_view help, double scale = 1) {
    return {MetricRole::sample, name, help, MetricType::gauge, {}, {}, scale, nullptr};
}
// A count that only grows (until the driver reloads or the GPU is serviced).
constexpr InfoMetric counter(std::string_view name, std::string_view help, std::string_view label, std::string_view value) {
    return {MetricRole::sample, name, help, MetricType::counter, label, value, 1, nullptr};
}
constexpr InfoMetric info_label(std::string_view label) {
    return {MetricRole::info_label, label, {}, MetricType::gauge, {}, {}, 1, nullptr};
}
constexpr InfoMetric custom(void (*add)(const InfoDevice&, const MetricLabels&, std::vector<MetricFamily>&)) {
    return {MetricRole::custom, {}, {}, MetricType::gauge, {}, {}, 1, add};
}

constexpr std::string_view kEccVolatileHelp =
    "ECC errors in device memory since the driver loaded (nvidia-smi's ecc.errors.*.volatile.total), by error: "
    "corrected or uncorrected.";
constexpr std::string_view kEccAggregateHelp =
    "ECC errors in device memory over the GPU's life (nvidia-smi's ecc.errors.*.aggregate.total), by error: "
    "corrected or uncorrected.";
constexpr std::string_view kRemappedHelp =
    "Memory rows remapped to spare rows (Ampere and newer), by cause: correctable or uncorrectable errors.";
constexpr std::string_view kRetiredHelp =
    "Memory pages retired (GPUs before Ampere), by cause: single_bit_ecc (several corrected errors) or double_bit_ecc.";

// The active clock event reasons as one sample (a bitmask, as nvml.h's
// nvmlClocksEventReason* bits and nvidia-smi's clocks_event_reasons.active).
void add_clock_event_mask(const InfoDevice& d, const MetricLabels& base, std::vector<MetricFamily>& out) {
    if (const auto bits = clock_event_reasons(d))
        out.push_back({"gpumem_clock_event_reasons_bitmask",
                       "Clock event (throttle) reasons active now, as the bitmask of nvml.h's nvmlClocksEventReason* bits.",
                       MetricType::gauge,
                       {{base, static_cast<double>(*bits)}}});
}

// The state set: a sample per reason NVML names, 1 for the active ones; a
// bit gpumem does not know is a reason named by its hex value, 1 when set.
void add_clock_event_states(const InfoDevice& d, const MetricLabels& base, std::vector<MetricFamily>& out) {
    const auto bits = clock_event_reasons(d);
    if (!bits) return;
    const std::vector<std::string> active = clock_event_reason_names(*bits);
    MetricFamily family{"gpumem_clock_event_reason_active",
                        "Whether a clock event (throttle) reason holds the clocks back now (1) or not (0), by reason as "
                        "nvidia-smi names it.",
                        MetricType::gauge,
                        {}};
    std::vector<std::string> reasons = clock_event_reason_names(~std::uint64_t{0});
    reasons.pop_back();  // the bits no reason names, as one hex value
    for (const std::string& name : active)
        if (name.rfind("0x", 0) == 0) reasons.push_back(name);
    for (const std::string& reason : reasons) {
        MetricLabels labels = base;
        labels.emplace_back("reason", reason);
        const bool on = std::find(active.begin(), active.end(), reason) != active.end();
        family.samples.push_back({std::move(labels), on ? 1.0 : 0.0});
    }
    out.push_back(std::move(family));
}

constexpr bool kDefault = true;     // in the default table
constexpr bool kAsked = false;      // only when --query names it, or in other formats
constexpr auto kHealth = &SnapshotFields::health;

// Rows: name (the key), {header, kind, aliases, NVML query needed,
// in the default table, getter, metric}, description for --list.
constexpr Named<InfoField> kInfoFieldRows[] = {
    {"index",
     {"cuda", FieldKind::integer, "cuda_index", nullptr, kDefault,
      [](const InfoDevice& d) -> Cell { return std::int64_t{d.device->id.cuda_index.value().ordinal()}; }, no_metric()},
     "CUDA index, as CUDA programs in this environment number the device"},
    {"nvml_index",
     {"nvml", FieldKind::integer, "", nullptr, kDefault,
      [](const InfoDevice& d) -> Cell { return d.device->id.nvml_index ? count_cell(*d.device->id.nvml_index) : Cell(); },
      info_label("nvml_index")},
     "NVML's index, which nvidia-smi shows"},
    {"name",
     {"name", FieldKind::text, "", nullptr, kDefault, [](const InfoDevice& d) -> Cell { return d.device->id.name; },
      info_label("name")},
     "device name"},
    {"uuid",
     {"uuid", FieldKind::text, "gpu_uuid", nullptr, kAsked, [](const InfoDevice& d) -> Cell { return d.device->id.uuid; },
      no_metric()},
     "GPU UUID (GPU-...)"},
    {"pci_bus_id",
     {"bus id", FieldKind::text, "pci.bus_id", nullptr, kDefault,
      [](const InfoDevice& d) -> Cell { return d.device->id.pci.to_string(); }, info_label("pci_bus_id")},
     "PCI bus id, domain:bus:device.function"},
    {"total",
     {"total", FieldKind::bytes, "memory.total", nullptr, kDefault, memory_cell<&NvmlMemory::total>,
      gauge("gpumem_memory_total_bytes", "Total device memory, bytes.")},
     "total memory, bytes"},
    {"reserved",
     {"reserved", FieldKind::bytes, "memory.reserved", nullptr, kDefault,
      [](const InfoDevice& d) -> Cell { return d.device->memory.has_reserved ? Cell(d.device->memory.reserved) : Cell(); },
      gauge("gpumem_memory_reserved_bytes", "Device memory the driver reserves, bytes (NVML memory info v2).")},
     "memory the driver reserves, bytes (missing without NVML memory info v2)"},
    {"used",
     {"used", FieldKind::bytes, "memory.used", nullptr, kDefault, memory_cell<&NvmlMemory::used>,
      gauge("gpumem_memory_used_bytes", "Used device memory, bytes (reserved memory included without NVML memory info v2).")},
     "used memory, bytes (with memory info v1, reserved memory included)"},
    {"free",
     {"free", FieldKind::bytes, "memory.free", nullptr, kDefault, memory_cell<&NvmlMemory::free>,
      gauge("gpumem_memory_free_bytes", "Free device memory, bytes.")},
     "free memory, bytes"},
    {"bar1_total",
     {"bar1 total", FieldKind::bytes, "bar1.total", &SnapshotFields::bar1, kAsked, bar1_cell<&NvmlBar1::total>,
      gauge("gpumem_bar1_total_bytes", "BAR1 size (device memory the host can map), bytes.")},
     "BAR1 (device memory the host can map) size, bytes"},
    {"bar1_used",
     {"bar1 used", FieldKind::bytes, "bar1.used", &SnapshotFields::bar1, kAsked, bar1_cell<&NvmlBar1::used>,
      gauge("gpumem_bar1_used_bytes", "BAR1 in use, bytes.")},
     "BAR1 in use, bytes"},
    {"bar1_free",
     {"bar1 free", FieldKind::bytes, "bar1.free", &SnapshotFields::bar1, kAsked, bar1_cell<&NvmlBar1::free>,
      gauge("gpumem_bar1_free_bytes", "BAR1 free, bytes.")},
     "BAR1 free, bytes"},
    {"compute_capability",
     {"cc", FieldKind::text, "compute_cap", &SnapshotFields::compute_capability, kDefault,
      [](const InfoDevice& d) -> Cell {
          const auto& cc = d.device->compute_capability;
          return cc ? Cell(std::to_string(cc->first) + "." + std::to_string(cc->second)) : Cell();
      },
      info_label("compute_capability")},
     "compute capability, such as 9.0"},
    {"pcie_gen",
     {"pcie gen", FieldKind::integer, "pcie.link.gen.current", &SnapshotFields::pcie, kAsked,
      pcie_cell<&NvmlPcieLink::current_generation>,
      gauge("gpumem_pcie_link_generation", "Current PCIe link generation (it drops at idle to save power).")},
     "current PCIe link generation"},
    {"pcie_width",
     {"pcie width", FieldKind::integer, "pcie.link.width.current", &SnapshotFields::pcie, kAsked,
      pcie_cell<&NvmlPcieLink::current_width>, gauge("gpumem_pcie_link_width_lanes", "Current PCIe link width, lanes.")},
     "current PCIe link width, lanes"},
    {"pcie_gen_max",
     {"pcie gen max", FieldKind::integer, "pcie.link.gen.max", &SnapshotFields::pcie, kAsked,
      pcie_cell<&NvmlPcieLink::max_generation>,
      gauge("gpumem_pcie_link_max_generation", "Highest PCIe link generation of the device and its slot.")},
     "highest PCIe link generation of the device and its slot"},
    {"pcie_width_max",
     {"pcie width max", FieldKind::integer, "pcie.link.width.max", &SnapshotFields::pcie, kAsked,
      pcie_cell<&NvmlPcieLink::max_width>,
      gauge("gpumem_pcie_link_max_width_lanes", "Widest PCIe link of the device and its slot, lanes.")},
     "widest PCIe link of the device and its slot, lanes"},
    {"peak_memory_bandwidth",
     {"peak bw", FieldKind::bandwidth, "", &SnapshotFields::peak_bandwidth, kAsked,
      [](const InfoDevice& d) -> Cell { return optional_cell(d.device->peak_memory_bandwidth); },
      gauge("gpumem_memory_peak_bandwidth_bytes_per_second",
            "Peak memory bandwidth from the maximum memory clock and the bus width, bytes per second.")},
     "peak memory bandwidth from the maximum memory clock and the bus width (JSON: GB/s)"},
    {"driver_version",
     {"driver", FieldKind::text, "", &SnapshotFields::versions, kAsked,
      [](const InfoDevice& d) -> Cell { return d.snapshot->driver_version.empty() ? Cell() : Cell(d.snapshot->driver_version); },
      info_label("driver_version")},
     "NVIDIA driver version"},
    {"cuda_driver_version",
     {"cuda driver", FieldKind::text, "", &SnapshotFields::versions, kAsked,
      [](const InfoDevice& d) -> Cell { return format_cuda_version(d.snapshot->cuda_driver_version); },
      info_label("cuda_driver_version")},
     "CUDA version of the driver, such as 13.0"},
    {"visible_devices_id",
     {"CUDA_VISIBLE_DEVICES", FieldKind::text, "", nullptr, kAsked,
      [](const InfoDevice& d) -> Cell {
          // CUDA's index with the variable unset; where that is unknown, the UUID is unambiguous.
          return d.device->base_index ? std::to_string(*d.device->base_index) : d.device->id.uuid;
      },
      info_label("visible_devices_id")},
     "the value to put in CUDA_VISIBLE_DEVICES to select this device"},
    // Memory health (gpumem check judges these): null where the GPU or the driver does not support a figure.
    {"ecc_enabled",
     {"ecc", FieldKind::boolean, "ecc.mode.current", kHealth, kAsked, health_cell<&NvmlHealth::ecc_enabled>,
      gauge("gpumem_ecc_enabled", "Whether ECC is enabled (1) or not (0).")},
     "whether ECC is enabled"},
    {"ecc_enabled_pending",
     {"ecc pending", FieldKind::boolean, "ecc.mode.pending", kHealth, kAsked, health_cell<&NvmlHealth::ecc_pending>,
      gauge("gpumem_ecc_enabled_pending", "Whether ECC will be enabled (1) or not (0) after the next reboot.")},
     "whether ECC will be enabled after the next reboot"},
    {"ecc_corrected_volatile",
     {"ecc corr vol", FieldKind::integer, "ecc.errors.corrected.volatile.total", kHealth, kAsked,
      health_cell<&NvmlHealth::ecc_corrected_volatile>,
      counter("gpumem_ecc_volatile_errors_total", kEccVolatileHelp, "error", "corrected")},
     "corrected ECC errors in device memory since the driver loaded"},
    {"ecc_uncorrected_volatile",
     {"ecc uncorr vol", FieldKind::integer, "ecc.errors.uncorrected.volatile.total", kHealth, kAsked,
      health_cell<&NvmlHealth::ecc_uncorrected_volatile>,
      counter("gpumem_ecc_volatile_errors_total", kEccVolatileHelp, "error", "uncorrected")},
     "uncorrected ECC errors in device memory since the driver loaded"},
    {"ecc_corrected_aggregate",
     {"ecc corr agg", FieldKind::integer, "ecc.errors.corrected.aggregate.total", kHealth, kAsked,
      health_cell<&NvmlHealth::ecc_corrected_aggregate>,
      counter("gpumem_ecc_aggregate_errors_total", kEccAggregateHelp, "error", "corrected")},
     "corrected ECC errors in device memory over the GPU's life"},
    {"ecc_uncorrected_aggregate",
     {"ecc uncorr agg", FieldKind::integer, "ecc.errors.uncorrected.aggregate.total", kHealth, kAsked,
      health_cell<&NvmlHealth::ecc_uncorrected_aggregate>,
      counter("gpumem_ecc_aggregate_errors_total", kEccAggregateHelp, "error", "uncorrected")},
     "uncorrected ECC errors in device memory over the GPU's life"},
    {"remapped_rows_correctable",
     {"remapped corr", FieldKind::integer, "remapped_rows.correctable", kHealth, kAsked,
      health_cell<&NvmlHealth::remapped_rows_correctable>,
      counter("gpumem_remapped_rows_total", kRemappedHelp, "cause", "correctable")},
     "memory rows remapped for correctable errors (Ampere and newer)"},
    {"remapped_rows_uncorrectable",
     {"remapped uncorr", FieldKind::integer, "remapped_rows.uncorrectable", kHealth, kAsked,
      health_cell<&NvmlHealth::remapped_rows_uncorrectable>,
      counter("gpumem_remapped_rows_total", kRemappedHelp, "cause", "uncorrectable")},
     "memory rows remapped for uncorrectable errors (Ampere and newer)"},
    {"remapped_rows_pending",
     {"remap pending", FieldKind::boolean, "remapped_rows.pending", kHealth, kAsked,
      health_cell<&NvmlHealth::remapped_rows_pending>,
      gauge("gpumem_remapped_rows_pending", "Whether a row remap waits for a GPU reset (1) or not (0).")},
     "whether a row remap waits for a GPU reset"},
    {"remapped_rows_failure",
     {"remap failure", FieldKind::boolean, "remapped_rows.failure", kHealth, kAsked,
      health_cell<&NvmlHealth::remapped_rows_failure>,
      gauge("gpumem_remapped_rows_failure", "Whether a row remap failed (1: the GPU needs service) or not (0).")},
     "whether a row remap failed (the GPU needs service)"},
    {"retired_pages_sbe",
     {"retired sbe", FieldKind::integer, "retired_pages.sbe retired_pages.single_bit_ecc.count", kHealth, kAsked,
      health_cell<&NvmlHealth::retired_pages_sbe>,
      counter("gpumem_retired_pages_total", kRetiredHelp, "cause", "single_bit_ecc")},
     "memory pages retired for several single-bit ECC errors (before Ampere)"},
    {"retired_pages_dbe",
     {"retired dbe", FieldKind::integer, "retired_pages.dbe retired_pages.double_bit.count", kHealth, kAsked,
      health_cell<&NvmlHealth::retired_pages_dbe>,
      counter("gpumem_retired_pages_total", kRetiredHelp, "cause", "double_bit_ecc")},
     "memory pages retired for a double-bit ECC error (before Ampere)"},
    {"retired_pages_pending",
     {"retire pending", FieldKind::boolean, "retired_pages.pending", kHealth, kAsked,
      health_cell<&NvmlHealth::retired_pages_pending>,
      gauge("gpumem_retired_pages_pending", "Whether a page waits to be retired at the next reboot (1) or not (0).")},
     "whether a page waits to be retired at the next reboot"},
    {"memory_clock_mhz",
     {"mem clock MHz", FieldKind::integer, "clocks.current.memory clocks.mem", kHealth, kAsked,
      health_cell<&NvmlHealth::memory_clock_mhz>,
      gauge("gpumem_memory_clock_hertz", "Current memory clock, hertz.", 1e6)},
     "current memory clock, MHz"},
    {"memory_clock_max_mhz",
     {"mem clock max MHz", FieldKind::integer, "clocks.max.memory clocks.max.mem", kHealth, kAsked,
      health_cell<&NvmlHealth::memory_clock_max_mhz>,
      gauge("gpumem_memory_clock_max_hertz", "Highest memory clock, hertz.", 1e6)},
     "highest memory clock, MHz"},
    {"clock_event_reasons",
     {"clock events", FieldKind::text, "clocks_event_reasons.active clocks_throttle_reasons.active", kHealth, kAsked,
      [](const InfoDevice& d) -> Cell {
          const auto bits = clock_event_reasons(d);
          return bits ? Cell(hex_padded(*bits, 8)) : Cell();
      },
      custom(add_clock_event_mask)},
     "clock event (throttle) reasons active now, as nvidia-smi's hex bitmask"},
    {"clock_event_reason_names",
     {"clock event reasons", FieldKind::text, "", kHealth, kAsked,
      [](const InfoDevice& d) -> Cell {
          const auto bits = clock_event_reasons(d);
          if (!bits) return Cell();
          return *bits ? Cell(join(clock_event_reason_names(*bits), ",")) : Cell(std::string("none"));
      },
      custom(add_clock_event_states)},
     "the active clock event reasons by name (sw_power_cap,hw_slowdown...), or none"},
};

std::string_view trimmed(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// The row named `name` by its key or by one of its aliases.
const Named<InfoField>& field_named(std::string_view name) {
    if (const Named<InfoField>* row = kInfoFields.find(name)) return *row;
    for (const Named<InfoField>& row : kInfoFields)
        for (std::string_view alias : info_field_aliases(row.value))
            if (alias == name) return row;
    // "unknown info field ... (nearest: ...)", offering the nearest key or
    // alias (memory.fre: memory.free).
    std::vector<std::string_view> names = kInfoFields.name_list();
    for (const Named<InfoField>& row : kInfoFields)
        for (std::string_view alias : info_field_aliases(row.value)) names.push_back(alias);
    // The suggestions among the keys (an alias is the nvidia-smi name of one);
    // "did you mean" among both, for a name near an alias only.
    const std::string expected = kInfoFields.expected(name);
    throw UsageError("unknown " + std::string(kInfoFields.what()) + " '" + std::string(name) + "' (" + expected + ")" +
                     (suggests_names(expected) && !closest_name(name, kInfoFields.name_list()).empty() ? std::string()
                                                                                                         : did_you_mean(name, names)));
}

// A cell as a sample's value: numbers, and booleans as 1 and 0; none for
// null (a figure the device does not give: no sample rather than NaN).
std::optional<double> metric_value(const Cell& cell) {
    if (const bool* b = std::get_if<bool>(&cell)) return *b ? 1.0 : 0.0;
    const double v = cell_number(cell);
    if (std::isnan(v)) return std::nullopt;
    return v;
}

}  // namespace

const NameTable<InfoField> kInfoFields{"info field", kInfoFieldRows, "fields"};

Field info_field(const Named<InfoField>& row) noexcept { return {row.name, row.value.header, row.value.kind}; }

std::vector<std::string_view> info_field_aliases(const InfoField& field) {
    if (field.aliases.empty()) return {};
    return split(field.aliases, ' ');
}

void add_info_field_metrics(const InfoField& field, const InfoDevice& device, const MetricLabels& base, MetricSample& info,
                            std::vector<MetricFamily>& out) {
    const InfoMetric& m = field.metric;
    switch (m.role) {
        case MetricRole::none: return;
        case MetricRole::custom: m.add(device, base, out); return;
        case MetricRole::info_label: {
            const Cell cell = field.get(device);
            if (!std::holds_alternative<std::monostate>(cell))
                info.labels.emplace_back(m.name, cell_plain(cell, Field{m.name, "", field.kind}, Unit::automatic));
            return;
        }
        case MetricRole::sample: {
            const std::optional<double> value = metric_value(field.get(device));
            if (!value) return;
            MetricLabels labels = base;
            if (!m.label.empty()) labels.emplace_back(m.label, m.label_value);
            out.push_back({std::string(m.name), std::string(m.help), m.type, {{std::move(labels), *value * m.scale}}});
            return;
        }
    }
}

InfoFieldList parse_info_fields(std::string_view text) {
    if (trimmed(text).empty())
        throw UsageError("empty list of info fields (" + kInfoFields.expected("") + ")");
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
        for (const Named<InfoField>& row : kInfoFields) {
            std::vector<std::string> aliases;
            for (std::string_view alias : info_field_aliases(row.value)) aliases.emplace_back(alias);
            texts.push_back(std::string(row.help) + (aliases.empty() ? "" : " (also: " + join(aliases) + ")"));
        }
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
