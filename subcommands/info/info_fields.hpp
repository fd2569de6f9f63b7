// The fields `gpumem info --query` reports: one table, a row per field, with
// its key (the JSON key, CSV header and --query name), its table header and
// kind, the other names --query accepts (nvidia-smi's), the NVML query
// it needs, whether the default table shows it, how it is read from a
// device and what it gives --format prometheus. Parsing --query, the default
// columns, the NVML queries a run asks for, `gpumem --list fields`, the JSON
// schema, the report and its metrics all read this table: adding a field is
// adding a row (and, for a new NVML figure, its SnapshotFields member and
// its query in DeviceInventory::snapshot).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/name_table.hpp"
#include "core/device_inventory.hpp"
#include "cli/output.hpp"

namespace gpumem::cli {

// One device of one sample: what a field's getter reads.
struct InfoDevice {
    const DeviceReport* device;
    const InventorySnapshot* snapshot;  // driver versions, shared by every device
};

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// What a field gives --format prometheus.
enum class MetricRole {
    none,        // nothing (the gpu and uuid labels every sample has)
    sample,      // one sample of `name`: the field's value times `scale`
    info_label,  // a label of gpumem_device_info (the info-metric convention)
    custom,      // samples `add` writes (a state set)
};
struct InfoMetric {
    MetricRole role = MetricRole::none;
    std::string_view name;  // the family (sample), the label (info_label)
    std::string_view help;
    MetricType type = MetricType::gauge;
    // A label that tells this field's sample from the others of its family
    // (error="corrected"); empty when the family is the field's alone.
    std::string_view label, label_value;
    double scale = 1;  // to base units (MHz to Hz)
    void (*add)(const InfoDevice&, const MetricLabels& base, std::vector<MetricFamily>& out) = nullptr;
};

struct InfoField {
    std::string_view header;  // table header
    FieldKind kind;
    // Other names --query accepts, space-separated: nvidia-smi's
    // (memory.free, pci.bus_id), or a plainer one (cuda_index); empty when
    // there is none.
    std::string_view aliases;
    // The figure the snapshot must read for it; null for what every snapshot
    // reads (identity and memory).
    bool SnapshotFields::*needs;
    bool in_default_table;
    Cell (*get)(const InfoDevice&);
    InfoMetric metric;
};

extern const NameTable<InfoField> kInfoFields;

using InfoFieldList = std::vector<const Named<InfoField>*>;

// The output field of a row: its key is the row's name.
Field info_field(const Named<InfoField>& row) noexcept;
// The names a row's `aliases` holds.
std::vector<std::string_view> info_field_aliases(const InfoField& field);

// A --query list: keys or nvidia-smi names, comma-separated, each once.
// UsageError for an empty list or item, an unknown or a repeated field.
InfoFieldList parse_info_fields(std::string_view text);
// Without --query: the default columns in a table, every field elsewhere.
InfoFieldList default_info_fields(Format format);
// The NVML queries `fields` need (identity and memory are always read).
SnapshotFields snapshot_fields_for(const InfoFieldList& fields);

// The metrics of one field of one device (--format prometheus): samples go
// to `out` (the renderer merges families of the same name), with the `base`
// labels; an info_label field adds its label to `info`, the device's
// gpumem_device_info sample. A figure the device does not give has no sample.
void add_info_field_metrics(const InfoField& field, const InfoDevice& device, const MetricLabels& base, MetricSample& info,
                            std::vector<MetricFamily>& out);

// `gpumem --list fields`: each description names the field's aliases.
NameListView info_fields_view();
// The schema of a devices row. --query chooses the keys, so none is required.
FieldSchemaSet info_fields_schema();

}  // namespace gpumem::cli
