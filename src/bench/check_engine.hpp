// The engine behind `gpumem check`: reads each device's health through NVML
// (no CUDA context) and the kernel log, judges them, and at the standard and
// long levels runs the device work (context, memset and copy bandwidth,
// largest allocation, fill and verify, memtest, p2p) with the existing
// engines, judging each step as it ends. The checks, thresholds and verdicts
// themselves are base/check_plan's; the order of its table is the order of
// the run, and each row is bound here to what runs it at compile time
// (kJudges in check_health.cpp, kDeviceSteps in check_engine.cpp, each
// checked against base/check_table.hpp's rows by a static_assert).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check_plan.hpp"
#include "base/device_spec.hpp"
#include "base/xid.hpp"
#include "bench/alloc_modes.hpp"
#include "core/device_lock.hpp"
#include "core/nvml.hpp"

namespace gpumem {

// What NVML said about one device before any work: the figures its NVML
// checks judge and its default thresholds derive from.
struct CheckDeviceFigures {
    DeviceIdentity device;            // cuda_index set
    std::string why_no_nvml;          // empty when NVML answered
    std::optional<NvmlHealth> health;
    std::optional<NvmlPcieLink> pcie;
    std::optional<double> peak_bps;   // NVML's peak memory bandwidth
    // Other processes holding memory on the device ("pid 12 python (1 GiB)");
    // empty with processes_known false when NVML could not list them
    // (processes_error then says why).
    std::vector<std::string> other_processes;
    std::vector<NvmlProcess> others;  // the same, as NVML gave them
    bool processes_known = false;
    // NVLink (nvlink.* and p2p's reference); empty when NVML is missing.
    std::optional<NvmlNvLink> nvlink;
    std::string why_no_nvlink;        // why nvlink is empty (the GPU was lost meanwhile)
    std::string processes_error;
    // Memory as NVML saw it before gpumem made a context on the device (at
    // standard level the figures are read before any context); empty with
    // memory_error set when NVML could not tell.
    std::optional<NvmlMemory> memory;
    std::string memory_error;
    std::vector<int> cpu_affinity;    // CPUs next to the GPU
    double seconds = 0;               // reading all of this
    // Set when another process held the GPU's lock past --lock-timeout: the
    // device work is unknown, for this reason (check_contention.hpp).
    std::string why_unlocked;
    // How long the lock was waited for and who held it, for cuda.context's
    // reason; empty when it was free.
    std::string lock_note;
};

// What the node has, for node.gpus: every GPU visible here (whatever -d
// selects), and the GPUs NVML reports lost.
struct CheckNodeFigures {
    std::size_t visible = 0;
    std::vector<std::string> lost;
    bool nvml = false;  // whether NVML answered (without it, lost GPUs cannot be seen)
};

// The devices of `spec` and their NVML figures, through DeviceInventory:
// no CUDA context is created (where NVML is missing, only cuInit runs).
std::vector<CheckDeviceFigures> read_check_figures(const DeviceSpec& spec, CheckNodeFigures* node = nullptr);

// The Xid events of the kernel log, read once for every GPU's xid.events.
struct XidReading {
    XidScan scan;
    XidWindow window;
    std::vector<PciAddress> checked;  // every GPU of the run
    double seconds = 0;               // reading and scanning the log
};

// What a check judged before any device work sees: its device's NVML
// figures, the node's, the kernel log's Xid events, the thresholds.
struct CheckReadings {
    const CheckDeviceFigures& device;
    const CheckNodeFigures& node;
    const XidReading& xid;
    const ThresholdOverrides& thresholds;
};

// Pure: the checks of kChecks that kJudges judges from `readings`, in
// kChecks order; the node's own (node.gpus) only where `with_node` (the
// run's first GPU).
std::vector<CheckOutcome> judge_readings(const CheckReadings& readings, bool with_node);
// Pure: one judged check of one device with an empty node and kernel log
// (tests); std::logic_error for a check kJudges does not judge.
CheckOutcome judge_check(std::string_view id, const CheckDeviceFigures& figures, const ThresholdOverrides& overrides);
// Whether kJudges judges check `id`, and whether kDeviceSteps runs it: a
// row of kChecks is exactly one of these, or per pair (static_asserts in
// check_health.cpp and check_engine.cpp; these are for tests).
bool has_judge(std::string_view id) noexcept;
bool has_device_step(std::string_view id) noexcept;

// Pure: the NVLink checks of a device judged from NVML's link figures
// (nvlink.links and its counters), in kChecks order. A GPU NVML reports no
// link for is n/a; an NVML error is unknown.
std::vector<CheckOutcome> nvlink_checks(const CheckDeviceFigures& figures, const ThresholdOverrides& overrides);
// Pure: node.gpus: the visible GPUs against --expect-gpus (node.gpus's
// threshold); any lost GPU fails, with a reboot.
CheckOutcome node_gpus_check(const CheckNodeFigures& node, const ThresholdOverrides& overrides);
// Pure: the xid.events check of the GPU at `gpu`: the count of its events,
// the worst's verdict and remediation, and each event (worst first) with its
// code, time and meaning in the reason. Events of devices that are none of
// `checked` are named in the reason, not counted; so are the lines not
// understood.
CheckOutcome xid_check(const XidScan& scan, const XidWindow& window, const PciAddress& gpu, const std::vector<PciAddress>& checked);
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
// (kJudges); at standard and long, the device work of every device at once
// (kDeviceSteps, one thread each), then p2p between every pair. Each check
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
