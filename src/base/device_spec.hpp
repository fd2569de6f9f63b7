// Device selection: the `-d SPEC` grammar, CUDA_VISIBLE_DEVICES and
// CUDA_DEVICE_ORDER, and how CUDA numbers devices. Pure logic on identities
// gathered elsewhere (NVML or the CUDA runtime), so it is tested on the CPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/device_id.hpp"
#include "base/launcher.hpp"

namespace gpumem {

// PCI address domain:bus:device.function, comparable across NVML's
// `00000000:18:00.0` and CUDA's `0000:18:00.0`.
struct PciAddress {
    std::uint32_t domain = 0;
    std::uint32_t bus = 0;
    std::uint32_t device = 0;
    std::uint32_t function = 0;

    bool operator==(const PciAddress& o) const noexcept {
        return domain == o.domain && bus == o.bus && device == o.device && function == o.function;
    }
    bool operator<(const PciAddress& o) const noexcept;
    std::string to_string() const;  // 0000:18:00.0
};

// Parses `0000:18:00.0`, `00000000:18:00.0` or `18:00.0` (domain 0). nullopt if malformed.
std::optional<PciAddress> parse_pci_address(std::string_view text);

// What identifies one physical GPU, whichever API found it.
struct DeviceIdentity {
    std::optional<DeviceId> cuda_index;  // ordinal a CUDA program in this environment uses; empty: hidden from CUDA
    std::optional<unsigned> nvml_index;  // NVML's (PCI-ordered) index; empty: unknown
    std::string uuid;                    // GPU-xxxxxxxx-xxxx-...
    PciAddress pci;
    std::string name;
};

// One element of a `-d` SPEC.
struct DeviceSelector {
    enum class Kind { cuda_index, uuid_prefix, pci_address };
    Kind kind = Kind::cuda_index;
    std::optional<DeviceId> index;  // Kind::cuda_index only
    std::string uuid_prefix;        // lower case, starting with "gpu-"
    PciAddress pci;
    std::string text;  // as written, for messages
};

// This process's place on its node, for `local`: the launcher's local rank.
struct LocalRank {
    unsigned rank = 0;
    std::optional<unsigned> size;    // ranks on this node, when the launcher says
    std::string_view rank_variable;  // SLURM_LOCALID, ...: for messages
    std::string_view size_variable;
};

struct DeviceSpec {
    bool all = false;
    bool local = false;                   // `local`: the device of this process's local rank
    std::optional<LocalRank> local_rank;  // with `local`: the launcher's; empty without one
    std::vector<DeviceSelector> selectors;
    std::string text;
};

// Whether `spec` names exactly one device whatever the machine has: one
// index, UUID or PCI id, or `local`.
bool names_one_device(const DeviceSpec& spec) noexcept;

// `0`, `1,3`, `GPU-d944`, `0000:18:00.0`, `18:00.0`, `all`, `local`. Throws
// UsageError. `local` takes its local rank from `launcher`: without one it
// is a UsageError here, before any driver call.
DeviceSpec parse_device_spec(std::string_view text, const LauncherInfo& launcher);
// The same with no launcher at hand: `local` parses, and resolving it is
// the UsageError.
DeviceSpec parse_device_spec(std::string_view text);

// Positions in `visible` (CUDA order) that `spec` names, in the order given.
// Unknown, ambiguous and repeated devices throw UsageError; an empty `visible`
// throws NoDeviceError.
//
// `local` names one device, by the launcher's local rank:
//   - one visible device: that one, whatever the local rank. A launcher that
//     binds GPUs (srun --gpus-per-task=1) leaves each task only its own; on a
//     node with one GPU the ranks share it.
//   - otherwise visible[local rank]: the ranks of a node take the devices in
//     CUDA order (devices beyond the ranks stay unused);
//   - fewer visible devices than the node's ranks (when the launcher says
//     how many) is a UsageError naming both counts, on every rank alike, so
//     that a fleet fails the same way everywhere; without the count, a local
//     rank with no device of its own is.
std::vector<std::size_t> resolve_device_spec(const DeviceSpec& spec, const std::vector<DeviceIdentity>& visible);

// One entry of CUDA_VISIBLE_DEVICES.
struct VisibleDevicesEntry {
    enum class Kind { index, uuid_prefix, mig };
    Kind kind = Kind::index;
    int index = -1;
    std::string uuid_prefix;  // lower case
};

// Entries up to (not including) the first one CUDA would reject (no digits,
// negative, a malformed UUID, or an entry of another kind than the first:
// indices, GPU- UUIDs and MIG- UUIDs do not mix); CUDA stops there and hides
// the rest. Indices read as strtol reads them ("1a" is 1). nullopt when the
// variable is unset; an empty list hides every device.
std::optional<std::vector<VisibleDevicesEntry>> parse_cuda_visible_devices(const char* value);

enum class DeviceOrder { fastest_first, pci_bus_id };
DeviceOrder parse_cuda_device_order(const char* value);  // unset or unknown: fastest_first, as CUDA

// CUDA's enumeration order before CUDA_VISIBLE_DEVICES: positions into `all`.
// nullopt when it cannot be decided without asking CUDA (FASTEST_FIRST with
// different GPU models).
std::optional<std::vector<std::size_t>> cuda_base_order(const std::vector<DeviceIdentity>& all, DeviceOrder order);

// Applies CUDA_VISIBLE_DEVICES to the base order: positions into `all` in CUDA
// index order. Mirrors CUDA: the list stops at the first entry that names no
// device; a device named twice (before that point) makes CUDA fail to
// initialise, which throws NoDeviceError. A UUID entry matches a device whose
// UUID it begins, or which it begins. `base_order` may be nullopt only if no
// entry is an index. Returns nullopt when undecidable (MIG entries, or indices
// without a base order).
std::optional<std::vector<std::size_t>> apply_cuda_visible_devices(
    const std::vector<DeviceIdentity>& all, const std::optional<std::vector<std::size_t>>& base_order,
    const std::optional<std::vector<VisibleDevicesEntry>>& entries);

// Normalises a UUID for prefix matching (lower case).
std::string normalize_uuid(std::string_view uuid);

}  // namespace gpumem
