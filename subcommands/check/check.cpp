// gpumem check: a memory health verdict per GPU. NVML health at every level
// (no CUDA context at quick); at standard and long, the device work of
// bench/check_engine on every device at once, one thread each, then p2p
// between every pair. A failed check exits 7, one stderr line per check.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/text.hpp"
#include "check/check_report.hpp"
#include "bench/check_contention.hpp"
#include "cli/commands.hpp"
#include "cli/lock_wait.hpp"
#include "cli/progress.hpp"

namespace gpumem::cli {
namespace {

using Clock = std::chrono::steady_clock;

// What CLI11 fills.
struct CheckOptions {
    std::string level = "standard";
    std::vector<std::string> thresholds;      // --threshold ID=VALUE, repeatable
    std::optional<std::string> thresholds_file;  // --thresholds FILE
    bool strict = false;
    std::optional<std::string> kernel_log;       // --kernel-log FILE
    std::string xid_since = "boot";              // --xid-since
    std::optional<std::string> expect_gpus;      // --expect-gpus N
    double lock_timeout = kDefaultLockTimeout;   // --lock-timeout SECONDS
    bool judge_shared = false;                   // --judge-shared
    int fill_passes = 1;                         // hidden test hook
    std::optional<std::uint64_t> corrupt_word;   // hidden test hook
};

void add_options(CLI::App& sub, CheckOptions& o) {
    sub.add_option("--level", o.level, "quick: NVML only, no CUDA context; standard: and device work (seconds); long: and most of free memory")
        ->capture_default_str()
        ->check(names_validator(kCheckLevels));
    sub.add_option("--threshold", o.thresholds,
                   "ID=VALUE: a check's threshold in its unit or with one (copy.h2d=45GB/s, alloc.max=60GiB, p2p=100GB/s); "
                   "repeatable (gpumem --list checks)")
        ->type_name("ID=VALUE")
        ->check(parsing_validator([](const std::string& v) { parse_threshold_option(v); }, ""));
    sub.add_option("--thresholds", o.thresholds_file, "JSON file of check id to threshold (a number, or a string with a unit)")
        ->type_name("FILE");
    sub.add_flag("--strict", o.strict, "A warning fails too (exit 7)");
    sub.add_option("--kernel-log", o.kernel_log,
                   "A saved kernel log (dmesg, journalctl -k) for xid.events instead of the live one (/dev/kmsg); at most 256 MiB")
        ->type_name("FILE");
    sub.add_option("--xid-since", o.xid_since,
                   "Xid events since: boot (the whole log), a duration (30m, 6h, 2d) or a time (2026-11-25T05:00:00[Z|+01:00])")
        ->type_name("WHEN")
        ->capture_default_str()
        ->check(parsing_validator([](const std::string& v) { parse_xid_since(v); }, ""));
    sub.add_option("--expect-gpus", o.expect_gpus, "GPUs the node must have: fewer visible fail it (node.gpus)")
        ->type_name("N")
        ->check(parsing_validator([](const std::string& v) { parse_expect_gpus(v); }, ""));
    add_lock_timeout_option(sub, o.lock_timeout);
    sub.add_flag("--judge-shared", o.judge_shared,
                 "Judge a rate measured while another process computes on the GPU as the GPU's own (by default: unknown, naming it)");
    sub.add_option("--debug-fill-passes", o.fill_passes, "Test hook: repeat fill.verify's patterns N times")
        ->check(CLI::Range(1, 1000000))
        ->group("");
    add_unsigned_option(sub, "--debug-corrupt-word", o.corrupt_word, "Test hook: invert one word before fill.verify reads it back", 0,
                        1ULL << 60)
        ->group("");
}

// A --threshold for a check the level does not run would be silently
// ignored: refused instead (a file may hold every check's).
void check_levels_of(const std::vector<std::string>& options, CheckLevel level) {
    for (const std::string& option : options) {
        const std::string id = parse_threshold_option(option).first;
        const CheckKind& kind = check_row(id == "p2p" ? p2p_check_id(0, 1) : id).value;
        if (!runs_at(kind, level)) {
            std::string message = "--threshold " + id;
            message += ": " + id + " does not run at --level " + std::string(kCheckLevels.name_of(level));
            throw UsageError(message + " (it runs at standard and long)");
        }
    }
}

CheckRequest check(const CheckOptions& o, const Globals& globals) {
    CheckRequest q;
    q.devices = device_spec_or(globals, "all");
    q.settings.level = kCheckLevels.parse(o.level);
    q.settings.thresholds = parse_threshold_overrides(o.thresholds, o.thresholds_file);
    check_levels_of(o.thresholds, q.settings.level);
    if (o.expect_gpus) {
        const std::string id(kExpectedGpusCheck);
        if (find_override(q.settings.thresholds, id) && q.settings.thresholds.at(id).source == "--threshold")
            throw UsageError("--expect-gpus and --threshold node.gpus set the same threshold: give one");
        q.settings.thresholds[id] = ThresholdOverride{parse_expect_gpus(*o.expect_gpus), "--expect-gpus"};
    }
    q.xid_since = parse_xid_since(o.xid_since);
    // A saved log is read here: a bad one is a usage error before any driver call.
    if (o.kernel_log) q.kernel_log = read_kernel_log_file(*o.kernel_log);
    q.settings.strict = o.strict;
    q.settings.judge_shared = o.judge_shared;
    q.lock_timeout = o.lock_timeout;
    q.settings.fill_passes = o.fill_passes;
    q.settings.corrupt_word = o.corrupt_word;
    return q;
}

// How many checks a run makes, for the progress line.
std::uint64_t expected_checks(CheckLevel level, std::size_t devices) {
    std::uint64_t per_device = 0;
    for (const Named<CheckKind>& row : kChecks)
        if (!row.value.per_pair && runs_at(row.value, level) && row.name != kExpectedGpusCheck) ++per_device;
    const std::uint64_t pairs = level == CheckLevel::quick ? 0 : devices * (devices - 1);
    return per_device * devices + pairs + 1;  // node.gpus once
}

// The device work of standard and long: every device at once, then p2p.
void run_device_work(const CheckRequest& q, const std::vector<CheckDeviceFigures>& figures, CheckResults& results, Session& session) {
    const std::uint64_t total = expected_checks(q.settings.level, figures.size());
    std::uint64_t done = 0;
    for (const CheckDeviceResult& d : results.devices) done += d.checks.size();
    Progress progress(session.progress(), "check", total);
    std::mutex progress_mutex;
    const OutcomeFn on_outcome = [&](const CheckOutcome& o) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        progress.update(++done, o.id + " " + std::string(verdict_name(o.verdict)));
    };
    std::vector<DeviceId> ids;
    ids.reserve(figures.size());
    for (const CheckDeviceFigures& f : figures) ids.push_back(f.device.cuda_index.value());
    // results.devices is sized before the threads start: each writes its own element.
    run_on_devices(ids, [&](DeviceId id, const StopToken& stop) {
        for (std::size_t i = 0; i < figures.size(); ++i)
            if (ids[i] == id) run_device_checks(figures[i], q.settings, results.devices[i].checks, stop, on_outcome);
        return 0;
    });
    std::vector<std::vector<CheckOutcome>*> outs;
    for (CheckDeviceResult& d : results.devices) outs.push_back(&d.checks);
    run_p2p_checks(figures, q.settings, outs, on_outcome);
    progress.finish();
}

// The signals that need no device work: the node's GPUs (on its first
// GPU's row), each GPU's Xid events and NVLink, after its NVML checks.
void add_signal_checks(const CheckRequest& q, const CheckNodeFigures& node, const std::vector<CheckDeviceFigures>& figures,
                       std::vector<CheckDeviceResult>& devices) {
    const auto start = Clock::now();
    const XidScan scan = q.kernel_log ? *q.kernel_log : read_live_kernel_log();
    const std::optional<XidClock> clock = q.kernel_log ? std::nullopt : std::optional<XidClock>(xid_clock_now());
    const XidWindow window = xid_window(scan, q.xid_since, clock);
    std::vector<PciAddress> checked;
    checked.reserve(figures.size());
    for (const CheckDeviceFigures& f : figures) checked.push_back(f.device.pci);
    const double xid_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (std::size_t i = 0; i < figures.size(); ++i) {
        std::vector<CheckOutcome>& checks = devices[i].checks;
        if (i == 0) checks.push_back(node_gpus_check(node, q.settings.thresholds));
        checks.push_back(xid_check(scan, window, figures[i].device.pci, checked));
        checks.back().seconds = xid_seconds / static_cast<double>(figures.size());
        for (CheckOutcome& c : nvlink_checks(figures[i], q.settings.thresholds)) checks.push_back(std::move(c));
    }
}

void run_checks(const CheckRequest& q, CheckResults& results, Session& session) {
    CheckNodeFigures node;
    std::vector<CheckDeviceFigures> figures = read_check_figures(q.devices, &node);
    // Device work: one gpumem at a time on a GPU (the figures read again after a wait).
    LockWaitProgress waiting(session, q.lock_timeout);
    if (q.settings.level != CheckLevel::quick) lock_check_devices(q.devices, &node, figures, q.lock_timeout, waiting.callback());
    results.devices.reserve(figures.size());
    for (const CheckDeviceFigures& f : figures) results.devices.push_back(CheckDeviceResult{f.device, nvml_checks(f, q.settings.thresholds)});
    add_signal_checks(q, node, figures, results.devices);
    for (CheckDeviceResult& d : results.devices)
        for (CheckOutcome& c : d.checks) apply_strict(c, q.settings.strict);
    if (q.settings.level != CheckLevel::quick) run_device_work(q, figures, results, session);
}

void execute(const CheckRequest& q, CheckResults& results, Session& session) {
    const auto start = Clock::now();
    try {
        run_checks(q, results, session);
    } catch (...) {
        results.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        throw;
    }
    results.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const std::string summary = check_failure_summary(results);
    if (summary.empty()) return;
    // One line per failed check, then the runner's summary line.
    for (const std::string& line : check_failure_lines(results)) std::fprintf(stderr, "gpumem: error: %s\n", one_line(line).c_str());
    throw CheckFailedError(summary);
}

}  // namespace

constexpr CommandDefinition kCheckCommand{
    [] { return make_command(CommandFunctions<CheckOptions, CheckRequest, CheckResults>{add_options, check, execute, check_report}); },
    check_schema, /*prometheus=*/true, /*nagios=*/true};

}  // namespace gpumem::cli
