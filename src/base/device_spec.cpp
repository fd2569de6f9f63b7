#include "base/device_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <tuple>

#include "base/errors.hpp"
#include "base/text.hpp"

namespace gpumem {
namespace {

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool parse_hex_field(std::string_view s, std::size_t max_digits, std::uint32_t& out) {
    if (s.empty() || s.size() > max_digits) return false;
    std::uint32_t v = 0;
    for (char c : s) {
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
        v = v * 16 + static_cast<std::uint32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10);
    }
    out = v;
    return true;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) return false;
    return true;
}

std::string describe(const DeviceIdentity& d) {
    return d.uuid.empty() ? d.pci.to_string() : d.uuid;
}

std::string no_local_rank_message(const LauncherInfo& launcher) {
    std::string message = "-d local needs a launcher's local rank: " + local_rank_variables();
    if (launcher.found())
        return message + "; this process was started by " + std::string(launcher.name) + ", which gives none";
    return message + "; none is set (run gpumem under srun, mpirun or torchrun, or give -d a device)";
}

std::string devices_visible(std::size_t count) {
    return std::to_string(count) + (count == 1 ? " device is" : " devices are") + " visible";
}

// The rule is documented at resolve_device_spec.
std::size_t local_position(const LocalRank& local, std::size_t visible) {
    if (visible == 1) return 0;
    if (local.size && *local.size > visible)
        throw UsageError("-d local: " + std::to_string(*local.size) + " ranks run on this node (" +
                         std::string(local.size_variable) + ") but only " + devices_visible(visible) +
                         ": give each rank a GPU (srun --gpus-per-task=1) or run fewer ranks per node");
    if (local.rank >= visible)
        throw UsageError("-d local: local rank " + std::to_string(local.rank) + " (" + std::string(local.rank_variable) +
                         ") has no device: only " + devices_visible(visible) + " (0.." + std::to_string(visible - 1) + ")");
    return local.rank;
}

}  // namespace

bool PciAddress::operator<(const PciAddress& o) const noexcept {
    return std::tie(domain, bus, device, function) < std::tie(o.domain, o.bus, o.device, o.function);
}

std::string PciAddress::to_string() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, device, function);
    return buf;
}

std::optional<PciAddress> parse_pci_address(std::string_view text) {
    const std::string_view s = trim(text);
    const auto dot = s.rfind('.');
    if (dot == std::string_view::npos) return std::nullopt;
    std::vector<std::string_view> fields = split(s.substr(0, dot), ':');
    PciAddress a;
    if (fields.size() == 3) {
        if (!parse_hex_field(fields[0], 8, a.domain)) return std::nullopt;
        fields.erase(fields.begin());
    }
    if (fields.size() != 2) return std::nullopt;
    if (!parse_hex_field(fields[0], 2, a.bus) || !parse_hex_field(fields[1], 2, a.device)) return std::nullopt;
    if (!parse_hex_field(s.substr(dot + 1), 1, a.function) || a.device > 0x1f || a.function > 7) return std::nullopt;
    return a;
}

std::string normalize_uuid(std::string_view uuid) {
    std::string out(trim(uuid));
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

DeviceSpec parse_device_spec(std::string_view text) {
    DeviceSpec spec;
    spec.text = std::string(text);
    const std::string_view s = trim(text);
    if (s.empty()) throw UsageError("invalid device '': expected an index, a UUID (GPU-...), a PCI bus id, 'all' or 'local'");
    if (s == "all") {
        spec.all = true;
        return spec;
    }
    if (s == "local") {
        spec.local = true;
        return spec;
    }
    for (std::string_view raw : split(s, ',')) {
        const std::string_view part = trim(raw);
        DeviceSelector sel;
        sel.text = std::string(part);
        if (part.empty()) throw UsageError("invalid device list '" + spec.text + "': empty entry");
        if (all_digits(part)) {
            if (part.size() > 6) throw UsageError("invalid device '" + sel.text + "': index too large");
            sel.kind = DeviceSelector::Kind::cuda_index;
            int ordinal = 0;
            std::from_chars(part.data(), part.data() + part.size(), ordinal);  // all digits, at most 6
            sel.index = DeviceId(ordinal);
        } else if (starts_with_ci(part, "GPU-")) {
            sel.kind = DeviceSelector::Kind::uuid_prefix;
            sel.uuid_prefix = normalize_uuid(part);
            // "GPU-" alone would be a prefix of every UUID.
            if (sel.uuid_prefix.size() == 4)
                throw UsageError("invalid device '" + sel.text + "': give at least one hex digit of the UUID after 'GPU-'");
            const bool ok = std::all_of(sel.uuid_prefix.begin() + 4, sel.uuid_prefix.end(),
                                        [](unsigned char c) { return std::isxdigit(c) || c == '-'; });
            if (!ok) throw UsageError("invalid device '" + sel.text + "': a UUID holds only hex digits and '-'");
        } else if (auto pci = parse_pci_address(part)) {
            sel.kind = DeviceSelector::Kind::pci_address;
            sel.pci = *pci;
        } else if (part == "all" || part == "local") {
            throw UsageError("invalid device list '" + spec.text + "': '" + std::string(part) +
                             "' cannot be combined with other devices");
        } else if (part.front() == '-') {
            throw UsageError("invalid device '" + sel.text + "': indices cannot be negative");
        } else {
            throw UsageError("invalid device '" + sel.text +
                             "': expected an index (0), a UUID or its prefix (GPU-d944...), a PCI bus id (0000:18:00.0), "
                             "'all' or 'local'");
        }
        // A device written twice the same way is an error whatever devices
        // exist, so say so now rather than after loading the driver.
        for (const DeviceSelector& earlier : spec.selectors) {
            const bool same = earlier.kind == sel.kind &&
                              (sel.kind == DeviceSelector::Kind::cuda_index   ? earlier.index == sel.index
                               : sel.kind == DeviceSelector::Kind::uuid_prefix ? earlier.uuid_prefix == sel.uuid_prefix
                                                                               : earlier.pci == sel.pci);
            if (same)
                throw UsageError("invalid device list '" + spec.text + "': device '" + sel.text + "' is named twice");
        }
        spec.selectors.push_back(std::move(sel));
    }
    return spec;
}

bool names_one_device(const DeviceSpec& spec) noexcept {
    return spec.local || (!spec.all && spec.selectors.size() == 1);
}

DeviceSpec parse_device_spec(std::string_view text, const LauncherInfo& launcher) {
    DeviceSpec spec = parse_device_spec(text);
    if (!spec.local) return spec;
    if (!launcher.local_rank) throw UsageError(no_local_rank_message(launcher));
    spec.local_rank = LocalRank{*launcher.local_rank, launcher.local_size, launcher.local_rank_variable,
                                launcher.local_size_variable};
    return spec;
}

std::vector<std::size_t> resolve_device_spec(const DeviceSpec& spec, const std::vector<DeviceIdentity>& visible) {
    // Before the device list: a usage error whatever the machine has.
    if (spec.local && !spec.local_rank) throw UsageError(no_local_rank_message(LauncherInfo{}));
    if (visible.empty()) throw NoDeviceError("no CUDA device is visible" +
                                             std::string(std::getenv("CUDA_VISIBLE_DEVICES") ? " (CUDA_VISIBLE_DEVICES is set)" : ""));
    if (spec.local) return {local_position(*spec.local_rank, visible.size())};
    std::vector<std::size_t> chosen;
    if (spec.all) {
        chosen.resize(visible.size());
        std::iota(chosen.begin(), chosen.end(), 0);
        return chosen;
    }
    for (const DeviceSelector& sel : spec.selectors) {
        std::vector<std::size_t> matches;
        for (std::size_t i = 0; i < visible.size(); ++i) {
            const DeviceIdentity& d = visible[i];
            switch (sel.kind) {
                case DeviceSelector::Kind::cuda_index:
                    if (d.cuda_index == sel.index) matches.push_back(i);
                    break;
                case DeviceSelector::Kind::uuid_prefix:
                    if (normalize_uuid(d.uuid).rfind(sel.uuid_prefix, 0) == 0) matches.push_back(i);
                    break;
                case DeviceSelector::Kind::pci_address:
                    if (d.pci == sel.pci) matches.push_back(i);
                    break;
            }
        }
        if (matches.empty()) {
            if (sel.kind == DeviceSelector::Kind::cuda_index)
                throw UsageError("invalid device '" + sel.text + "': only " + std::to_string(visible.size()) +
                                 " device" + (visible.size() == 1 ? " is" : "s are") + " visible (0.." +
                                 std::to_string(visible.size() - 1) + ")");
            throw UsageError("invalid device '" + sel.text + "': no visible GPU has this " +
                             (sel.kind == DeviceSelector::Kind::uuid_prefix ? "UUID" : "PCI bus id"));
        }
        if (matches.size() > 1)
            throw UsageError("invalid device '" + sel.text + "': matches " + std::to_string(matches.size()) +
                             " GPUs (" + describe(visible[matches[0]]) + ", " + describe(visible[matches[1]]) +
                             "); give more of the UUID");
        if (std::find(chosen.begin(), chosen.end(), matches[0]) != chosen.end())
            throw UsageError("invalid device list '" + spec.text + "': device '" + sel.text + "' is named twice");
        chosen.push_back(matches[0]);
    }
    return chosen;
}

std::optional<std::vector<VisibleDevicesEntry>> parse_cuda_visible_devices(const char* value) {
    // The rules below are the CUDA driver's as observed on driver 580
    // (tests/test_gpu_info.cpp compares them with the CUDA runtime on a GPU).
    if (value == nullptr) return std::nullopt;
    std::vector<VisibleDevicesEntry> entries;
    for (std::string_view part : split(value, ',')) {  // no trimming: " GPU-..." is invalid
        VisibleDevicesEntry e;
        if (part.substr(0, 4) == "GPU-") {  // case-sensitive; the hex digits are not
            const std::string_view hex = part.substr(4);
            const bool ok = std::any_of(hex.begin(), hex.end(), [](unsigned char c) { return std::isxdigit(c); }) &&
                            std::all_of(hex.begin(), hex.end(), [](unsigned char c) { return std::isxdigit(c) || c == '-'; });
            if (!ok) break;
            e.kind = VisibleDevicesEntry::Kind::uuid_prefix;
            e.uuid_prefix = normalize_uuid(part);
        } else if (part.substr(0, 4) == "MIG-") {
            e.kind = VisibleDevicesEntry::Kind::mig;
            e.uuid_prefix = normalize_uuid(part);
        } else {
            // An index reads as strtol does: leading blanks and a sign are
            // accepted, whatever follows the digits is ignored ("1a" is 1),
            // and the value is truncated to 32 bits; negative is invalid.
            const std::string text(part);
            char* end = nullptr;
            const long long v = std::strtoll(text.c_str(), &end, 10);
            if (end == text.c_str()) break;  // no digits
            const auto index = static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<unsigned long long>(v)));
            if (index < 0) break;
            e.kind = VisibleDevicesEntry::Kind::index;
            e.index = index;
        }
        // The list holds one kind of entry: the first of another kind ends it.
        if (!entries.empty() && e.kind != entries.front().kind) break;
        entries.push_back(std::move(e));
    }
    return entries;
}

DeviceOrder parse_cuda_device_order(const char* value) {
    if (value != nullptr && std::string_view(value) == "PCI_BUS_ID") return DeviceOrder::pci_bus_id;
    return DeviceOrder::fastest_first;
}

std::optional<std::vector<std::size_t>> cuda_base_order(const std::vector<DeviceIdentity>& all, DeviceOrder order) {
    std::vector<std::size_t> positions(all.size());
    std::iota(positions.begin(), positions.end(), 0);
    const bool same_model = std::all_of(all.begin(), all.end(), [&](const DeviceIdentity& d) { return d.name == all.front().name; });
    // FASTEST_FIRST ranks by a performance estimate only the CUDA driver knows;
    // among identical GPUs it falls back to PCI order.
    if (order == DeviceOrder::fastest_first && !same_model) return std::nullopt;
    std::stable_sort(positions.begin(), positions.end(), [&](std::size_t a, std::size_t b) { return all[a].pci < all[b].pci; });
    return positions;
}

std::optional<std::vector<std::size_t>> apply_cuda_visible_devices(
    const std::vector<DeviceIdentity>& all, const std::optional<std::vector<std::size_t>>& base_order,
    const std::optional<std::vector<VisibleDevicesEntry>>& entries) {
    if (!entries) return base_order;
    std::vector<std::size_t> visible;
    for (const VisibleDevicesEntry& e : *entries) {
        std::optional<std::size_t> position;
        if (e.kind == VisibleDevicesEntry::Kind::mig) return std::nullopt;
        if (e.kind == VisibleDevicesEntry::Kind::index) {
            if (!base_order) return std::nullopt;
            if (e.index >= 0 && static_cast<std::size_t>(e.index) < base_order->size()) position = (*base_order)[e.index];
        } else {
            // A prefix of the UUID, or the UUID followed by more characters.
            // (Several matches: taken as invalid; not observed on a real driver.)
            std::vector<std::size_t> matches;
            for (std::size_t i = 0; i < all.size(); ++i) {
                const std::string uuid = normalize_uuid(all[i].uuid);
                if (uuid.rfind(e.uuid_prefix, 0) == 0 || (!uuid.empty() && e.uuid_prefix.rfind(uuid, 0) == 0))
                    matches.push_back(i);
            }
            if (matches.size() == 1) position = matches[0];
        }
        if (!position) break;  // CUDA hides this entry and every later one
        if (std::find(visible.begin(), visible.end(), *position) != visible.end())
            throw NoDeviceError("CUDA_VISIBLE_DEVICES names a device twice, which CUDA rejects (cudaErrorInvalidDevice): "
                                "no CUDA program here can use a GPU");
        visible.push_back(*position);
    }
    return visible;
}

}  // namespace gpumem
