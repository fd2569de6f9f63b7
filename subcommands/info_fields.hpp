// The fields `gpumem info --query` reports: one table, a row per field, with
// its key (the JSON key, CSV header and --query name), its table header and
// kind, another name --query accepts (nvidia-smi's), the NVML query
// it needs, whether the default table shows it, and how it is read from a
// device. Parsing --query, the default columns, the NVML queries a run asks
// for, `gpumem --list fields`, the JSON schema and the report all read this
// table: adding a field is adding a row (and, for a new NVML figure, its
// SnapshotFields member and its query in DeviceInventory::snapshot).
#pragma once

#include <string_view>
#include <vector>

#include "base/name_table.hpp"
#include "core/device_inventory.hpp"
#include "output.hpp"

namespace gpumem::cli {

// One device of one sample: what a field's getter reads.
struct InfoDevice {
    const DeviceReport* device;
    const InventorySnapshot* snapshot;  // driver versions, shared by every device
};

struct InfoField {
    std::string_view header;  // table header
    FieldKind kind;
    // Another name --query accepts: nvidia-smi's (memory.free, pci.bus_id),
    // or a plainer one (cuda_index); empty when there is none.
    std::string_view alias;
    // The figure the snapshot must read for it; null for what every snapshot
    // reads (identity and memory).
    bool SnapshotFields::*needs;
    bool in_default_table;
    Cell (*get)(const InfoDevice&);
};

extern const NameTable<InfoField> kInfoFields;

using InfoFieldList = std::vector<const Named<InfoField>*>;

// The output field of a row: its key is the row's name.
Field info_field(const Named<InfoField>& row) noexcept;

// A --query list: keys or nvidia-smi names, comma-separated, each once.
// UsageError for an empty list or item, an unknown or a repeated field.
InfoFieldList parse_info_fields(std::string_view text);
// Without --query: the default columns in a table, every field elsewhere.
InfoFieldList default_info_fields(Format format);
// The NVML queries `fields` need (identity and memory are always read).
SnapshotFields snapshot_fields_for(const InfoFieldList& fields);

// `gpumem --list fields`: each description names the field's alias.
NameListView info_fields_view();
// The schema of a devices row. --query chooses the keys, so none is required.
FieldSchemaSet info_fields_schema();

}  // namespace gpumem::cli
