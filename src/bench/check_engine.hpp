// The engine behind `gpumem check`: reads each device's health through NVML
// (no CUDA context) and the kernel log, judges them, and at the standard and
// long levels runs the device work (context, memset and copy bandwidth,
// largest allocation, fill and verify, memtest, p2p) with the existing
// engines, judging each step as it ends. The checks, thresholds and verdicts
// themselves are base/check_plan's; the order of its table is the order of
// the run. A quick-level row holds its judge (base/check_table.hpp); a
// standard or long row names its device step (DeviceStep), which
// check_engine.cpp runs by its kind with the row's id and setting.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check_plan.hpp"
#include "base/check_readings.hpp"
#include "base/device_spec.hpp"
#include "base/xid.hpp"
#include "bench/alloc_modes.hpp"
#include "core/device_lock.hpp"
#include "core/nvml.hpp"

namespace gpumem {

// The devices of `spec` and their NVML figures, through DeviceInventory:
// no CUDA context is created (where NVML is missing, only cuInit runs).
std::vector<CheckDeviceFigures> read_check_figures(const DeviceSpec& spec, CheckNodeFigures* node = nullptr);

// Pure: the checks of kChecks whose rows hold a judge, judged from `readings`, in
// kChecks order; the node's own (node.gpus) only where `with_node` (the
// run's first GPU).
std::vector<CheckOutcome> judge_readings(const CheckReadings& readings, bool with_node);
// Pure: one judged check of one device with an empty node and kernel log
// (tests); std::logic_error for a check whose row holds no judge.
CheckOutcome judge_check(std::string_view id, const CheckDeviceFigures& figures, const ThresholdOverrides& overrides);
// Whether check `id`'s row holds a judge, and whether it names a device
// step: a row of kChecks is exactly one of these, or per pair
// (static_asserts in base/check_table.hpp; these are for tests).
bool has_judge(std::string_view id) noexcept;
bool has_device_step(std::string_view id) noexcept;

// Pure: the NVLink checks of a device judged from NVML's link figures
// (nvlink.links and its counters), in kChecks order. A GPU NVML reports no
// link for is n/a; an NVML error is unknown.
std::vector<CheckOutcome> nvlink_checks(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides);
// Pure: what p2p between `a` and `b` is judged against: their NVLink links
// to each other (direct, or through NVSwitches: the fewer of the two GPUs'
// switch links) at the links' rate by NVLink version, else the slower PCIe
// link's rate.
std::optional<Reference> p2p_reference(const CheckDeviceFigures& a, const CheckDeviceFigures& b);
// One NVLink link's rate in one direction, GB/s, by nvmlNvlinkVersion_t
// (1: 20, 2 to 6: 25, 7: 50); empty for a version gpumem does not know.
std::optional<double> nvlink_link_gbps(unsigned version) noexcept;

// Pure: the NVML health checks (nvml.*) of a device from its figures, in
// kChecks order; figures NVML does not report are n/a.
std::vector<CheckOutcome> nvml_checks(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides);

struct CheckSettings {
    CheckLevel level = CheckLevel::standard;
    ThresholdOverrides thresholds;
    bool strict = false;
    // Judge a rate measured beside another compute process as the GPU's own
    // (--judge-shared); by default it is unknown (check_contention.hpp).
    bool judge_shared = false;
    // Test hooks: repeat fill.verify's patterns (a long run to interrupt),
    // and invert one word before they are read back (a bad word to find).
    int fill_passes = 1;
    std::optional<std::uint64_t> corrupt_word;
};

// Called with each check as soon as it is judged (on the device's thread).
using OutcomeFn = std::function<void(const CheckOutcome&)>;

// The share of free memory fill.verify covers, and the long level's memtest.
inline constexpr double kFillPercent = 50;
inline constexpr double kMemtestPercent = 90;

// The device work of the standard and long levels on one device, each
// outcome appended to `out` (then given to `on_outcome`) as it is judged. A
// step that fails (a CUDA error, no memory) fails its check and the next
// step runs; Ctrl-C or a sibling's stop ends the run with everything freed.
void run_device_checks(const CheckDeviceFigures& figures, const CheckSettings& settings, std::vector<CheckOutcome>& out,
                       const StopToken& stop, const OutcomeFn& on_outcome);

// A whole run of `gpumem check`, as the command checked it.
struct CheckRequest {
    DeviceSpec devices;  // -d, default all
    CheckSettings settings;
    // xid.events: the saved log (--kernel-log), read and scanned before the
    // run; empty: the live kernel log, read when the checks run.
    std::optional<XidScan> kernel_log;
    XidSince xid_since;
    double lock_timeout = 60;  // --lock-timeout: how long the command's DeviceLocker waits for another gpumem on a GPU
};

// One device's checks, in the order they ran.
struct CheckDeviceResult {
    DeviceIdentity device;
    std::vector<CheckOutcome> checks;
};

struct CheckResults {
    std::vector<CheckDeviceResult> devices;
    double seconds = 0;  // the whole run
};

// How a run shows its progress (the CLI's progress line). Calls are never
// concurrent; any of them may be empty.
struct CheckProgress {
    // Once, before the device work: the checks the run makes, and those done.
    std::function<void(std::uint64_t total, std::uint64_t done)> start;
    // After each check of the device work, with the count done.
    std::function<void(std::uint64_t done, const CheckOutcome&)> step;
    std::function<void()> finish;
    // Takes the per-GPU locks before the device work (standard and long), as
    // every command takes them: the command's DeviceLocker (core/device_lock.hpp).
    DeviceLocker lock;
};

// The checks a run makes at `level` on `devices` GPUs, node.gpus once.
std::uint64_t expected_checks(CheckLevel level, std::size_t devices);

// The whole run of request `q`: every device's NVML figures and the kernel log, judged
// (their rows' judges); at standard and long, the device work of every device at once
// (each row's device step, one thread a device), then p2p between every pair. Each check
// is added to `results` as it is judged, so a run that throws (Ctrl-C)
// leaves what it measured.
void run_checks(const CheckRequest& q, CheckResults& results, const CheckProgress& progress);

// Rounds in which every unordered pair of `count` devices meets once, no
// device twice in a round (the circle method): pairs of positions.
std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pair_rounds(std::size_t count);

// p2p both ways between every pair of `devices`, the pairs of a round at the
// same time; the check from A to B goes to `outs[A]`.
void run_p2p_checks(const std::vector<CheckDeviceFigures>& devices, const CheckSettings& settings,
                    const std::vector<std::vector<CheckOutcome>*>& outs, const OutcomeFn& on_outcome);

}  // namespace gpumem
