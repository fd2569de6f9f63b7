#include "bench/check_contention.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "base/interrupt.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"

namespace gpumem {

std::vector<NvmlProcess> others_of(const std::vector<NvmlProcess>& processes) {
    std::vector<NvmlProcess> others;
    const auto self = static_cast<unsigned>(::getpid());
    for (const NvmlProcess& p : processes)
        if (p.pid != self) others.push_back(p);
    return others;
}

DeviceContention read_contention(const DeviceIdentity& device) {
    DeviceContention c;
    if (!device.nvml_index) return c;
    // One NVML handle for the process's checks (NVML is thread-safe).
    static std::mutex m;
    static std::unique_ptr<Nvml> nvml;
    static bool tried = false;
    const std::lock_guard<std::mutex> guard(m);
    if (!tried) {
        tried = true;
        std::string why_not;
        nvml = Nvml::open(why_not);
        if (nvml) nvml->skip_shutdown();  // the process ends soon after; see Nvml::skip_shutdown
    }
    if (!nvml) return c;
    try {
        c.others = others_of(nvml->compute_processes(*device.nvml_index));
        c.known = true;
        c.memory = nvml->memory(*device.nvml_index);
    } catch (const Error&) {
        // Unknown contention: the outcome stands as measured.
    }
    return c;
}

CheckOutcome review_contention(CheckOutcome o, bool allocation_failed, const DeviceContention& c, bool judge_shared) {
    if (!c.known || c.others.empty()) return o;
    const std::string free = c.memory ? format_bytes(c.memory->free) + " free" : "free memory unknown";
    if (allocation_failed) {
        const std::string why = o.reason;
        o = unknown_check(o.id, "the allocation failed while " + processes_text(c.others) + " held memory on " + c.where + " (" + free +
                                    "): not judged as the GPU's fault (" + why + ")");
        return o;
    }
    const bool rate = o.kind != nullptr && o.kind->unit == "GB/s";
    if (!rate || judge_shared || o.verdict == Verdict::unknown || o.verdict == Verdict::na) return o;
    const std::string judged_as(verdict_name(o.verdict));
    o.reason = one_line("measured while " + processes_text(c.others) + " ran on " + c.where + ": not judged as the GPU's own rate (it would " +
                        judged_as + "; --judge-shared judges it): " + o.reason);
    o.verdict = Verdict::unknown;
    o.remediation = Remediation::none;
    return o;
}

namespace {

// The previous holder releases its lock as it exits, while the driver may
// still list its context for a moment: give NVML up to 3 s to forget it, so
// that the figures read next describe the GPU without it.
void wait_until_gone(const DeviceIdentity& device, unsigned pid) {
    if (pid == 0) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (std::chrono::steady_clock::now() < until) {
        const DeviceContention c = read_contention(device);
        const bool listed = std::any_of(c.others.begin(), c.others.end(), [pid](const NvmlProcess& p) { return p.pid == pid; });
        if (!c.known || !listed) return;
        throw_if_interrupted();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

}  // namespace

void lock_check_devices(std::vector<CheckDeviceFigures>& figures, const DeviceLocker& lock, const FiguresReader& read_again) {
    if (!lock) throw std::logic_error("check's device work needs the command's DeviceLocker");
    std::vector<DeviceIdentity> devices;
    devices.reserve(figures.size());
    for (const CheckDeviceFigures& f : figures) devices.push_back(f.device);
    const std::vector<DeviceLockResult> locks = lock(devices);
    if (locks.size() != devices.size()) throw std::logic_error("a DeviceLocker gives one result per device");
    bool waited = false;
    for (std::size_t i = 0; i < locks.size(); ++i) {
        if (locks[i].waited <= 0) continue;
        waited = true;
        if (locks[i].acquired) wait_until_gone(figures[i].device, holder_pid(locks[i].holder));
    }
    if (waited) {
        std::vector<CheckDeviceFigures> fresh = read_again();
        if (fresh.size() == figures.size()) figures = std::move(fresh);
    }
    for (std::size_t i = 0; i < figures.size(); ++i) {
        if (!locks[i].acquired) {
            figures[i].why_unlocked = "not run: " + lock_refusal(figures[i].device, locks[i]);
        } else if (locks[i].waited > 0) {
            figures[i].lock_note = "waited " + format_decimal(locks[i].waited, 1) + " s for the GPU's lock (held by " + locks[i].holder + ")";
        }
    }
}

}  // namespace gpumem
