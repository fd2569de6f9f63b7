// NVML's figures as plain data: the clock event reasons named and
// classified, a process in words.
#include "base/nvml_figures.hpp"

#include <cstdio>

#include "base/sizes.hpp"
#include "base/text.hpp"

namespace gpumem {
namespace {

// nvml.h's nvmlClocksEventReason* bits, named as nvidia-smi -q names them,
// and what each says (see ClockReasonClass).
struct ClockReason {
    std::uint64_t bit;
    const char* name;
    ClockReasonClass kind;
};
constexpr ClockReason kClockReasons[] = {
    {0x1, "gpu_idle", ClockReasonClass::normal},
    {0x2, "applications_clocks_setting", ClockReasonClass::normal},
    {0x4, "sw_power_cap", ClockReasonClass::normal},
    {0x8, "hw_slowdown", ClockReasonClass::fault},
    {0x10, "sync_boost", ClockReasonClass::normal},
    {0x20, "sw_thermal_slowdown", ClockReasonClass::warning},
    {0x40, "hw_thermal_slowdown", ClockReasonClass::fault},
    {0x80, "hw_power_brake_slowdown", ClockReasonClass::fault},
    {0x100, "display_clock_setting", ClockReasonClass::normal},
};

}  // namespace

std::vector<std::string> clock_event_reason_names(std::uint64_t reasons) {
    std::vector<std::string> names;
    std::uint64_t known = 0;
    for (const ClockReason& r : kClockReasons) {
        known |= r.bit;
        if (reasons & r.bit) names.emplace_back(r.name);
    }
    if (const std::uint64_t rest = reasons & ~known) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(rest));
        names.emplace_back(buf);
    }
    return names;
}

ClockReasonClass clock_reason_class(std::uint64_t bit) noexcept {
    for (const ClockReason& r : kClockReasons)
        if (r.bit == bit) return r.kind;
    return ClockReasonClass::warning;  // a reason this build does not know
}

std::uint64_t clock_event_reasons_of(std::uint64_t reasons, ClockReasonClass which) noexcept {
    std::uint64_t mask = 0;
    for (int b = 0; b < 64; ++b) {
        const std::uint64_t bit = std::uint64_t{1} << b;
        if ((reasons & bit) && clock_reason_class(bit) == which) mask |= bit;
    }
    return mask;
}

std::uint64_t clock_event_reasons_bad(std::uint64_t reasons) noexcept {
    return clock_event_reasons_of(reasons, ClockReasonClass::warning) | clock_event_reasons_of(reasons, ClockReasonClass::fault);
}

const std::string* NvmlHealth::error_of(std::string_view function) const noexcept {
    for (const auto& [name, message] : errors)
        if (name == function) return &message;
    return nullptr;
}

std::string nvlink_version_name(unsigned version) {
    static const char* const names[] = {"?", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0"};
    return version < 8 ? names[version] : std::to_string(version);
}

std::string process_text(const NvmlProcess& p) {
    std::string text = "pid " + std::to_string(p.pid) + (p.name.empty() ? "" : " " + p.name);
    if (p.used_memory) text += " (" + format_bytes(*p.used_memory) + ")";
    return text;
}

std::string processes_text(const std::vector<NvmlProcess>& processes) {
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < processes.size() && i < 3; ++i) shown.push_back(process_text(processes[i]));
    if (processes.size() > shown.size()) shown.push_back("... (" + std::to_string(processes.size()) + " in all)");
    return join(shown);
}

}  // namespace gpumem
