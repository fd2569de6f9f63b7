// The pure half of `gpumem check`: its levels, its checks (one table: id,
// unit, comparison, the lowest level that runs it, and how its default
// threshold is derived from a theoretical figure), threshold overrides from
// the command line and from a JSON file, and the verdict logic (pass, warn,
// fail, n/a; --strict; the worst of several). No CUDA and no NVML: tested on
// the CPU. src/bench/check_engine runs the checks on a GPU.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/name_table.hpp"

namespace gpumem {

// How much a check run does (DCGM's -r 1/2/3). `deep` is the level named "long".
enum class CheckLevel { quick, standard, deep };
extern const NameTable<CheckLevel> kCheckLevels;

// A check's verdict. n/a: the GPU or driver does not have the figure (not
// supported by the hardware, no peer access): never a failure. unknown: the
// check could not run (an NVML call failed or was not permitted, a file
// could not be read, the CUDA context it needed could not be made): the
// node's health is not known, so it is never read as a pass.
enum class Verdict { pass, warn, fail, na, unknown };
extern const NameTable<Verdict> kVerdicts;
std::string_view verdict_name(Verdict verdict) noexcept;
// fail > unknown > warn > pass > n/a (Nagios' CRITICAL > UNKNOWN > WARNING >
// OK): a device with one failed check fails; one whose checks could not all
// run is unknown unless one failed (a fleet must not pass a node it could
// not judge); one whose checks are all n/a is n/a.
Verdict worse(Verdict a, Verdict b) noexcept;
Verdict worst_of(const std::vector<Verdict>& verdicts) noexcept;

// What a failed or warned check asks the operator to do, from the least to
// the most disruptive: nothing, drain the node (no new jobs until someone
// looks), reset the GPU (nvidia-smi -r), reboot the node, send the GPU or
// node for service (RMA). Declared in that order: a larger value is worse.
enum class Remediation { none, drain, reset_gpu, reboot, service };
extern const NameTable<Remediation> kRemediations;
std::string_view remediation_name(Remediation remediation) noexcept;
Remediation worse_remediation(Remediation a, Remediation b) noexcept;

// How a value is judged against its threshold.
enum class Comparison { at_least, at_most, equal };
// ">=", "<=", "==", or where the comparison does not hold "<", ">", "!=".
std::string_view comparison_symbol(Comparison comparison, bool holds = true) noexcept;

// Where a check's default threshold comes from.
enum class ThresholdRule {
    fixed,            // `amount` itself
    none,             // no default: reported, judged only once a threshold is given
    unsettable,       // a yes/no figure judged against `amount`; no override
    peak_fraction,    // amount x NVML's peak memory bandwidth
    copy_fraction,    // amount x half the peak: a device copy reads and writes each byte
    pcie_fraction,    // amount x the PCIe link's theoretical rate (maximum generation x width)
    free_fraction,    // amount x the device's free memory when the check starts
    total_fraction,   // amount x the device's total memory
    maximum,          // the GPU's own maximum of the figure (link width, memory clock)
};

struct CheckOutcome;
struct CheckReadings;  // base/check_readings.hpp

// What a quick-level check's judge reads, so the run knows when it cannot
// judge and whose reading time it shares; device_work for the checks the
// device work runs (src/bench) and p2p.
enum class CheckReading {
    device_work,
    health,      // the device's NVML health figures: unknown without them; shares their reading time
    nvlink,      // the device's NVLink figures: n/a without NVML, unknown for a GPU lost meanwhile
    node,        // the node's GPUs: judged once, on the run's first GPU
    kernel_log,  // the kernel log's Xid events: shares the log's reading time
};

// A quick-level check's judge: a pure function of the figures read before
// any device work, given the check's id.
using CheckJudge = CheckOutcome (*)(const std::string& id, const CheckReadings& readings);

// What a standard or long row's device work does: each kind is one step
// of src/bench's check engine (bench/check_engine.cpp, which needs CUDA),
// run with the row's id and setting, and judged there against the row. A
// quick row (its judge) and p2p (the pair runner's) have none.
enum class DeviceStep : std::uint8_t {
    none,
    context,        // create the CUDA context, timed; every later step needs it
    memset,         // cuMemsetD32 bandwidth
    copy,           // a copy's bandwidth; the row's setting is its direction ("d2d", "h2d": kCopyDirections)
    largest_alloc,  // the largest single cudaMalloc
    fill,           // patterns written over the free memory and read back
    memtest,        // the memtest86 set
};

// A row of kChecks.
struct CheckKind {
    std::string_view unit;  // "GB/s", "bytes", "count", "MHz", "s", "lanes", "bool"
    Comparison comparison = Comparison::at_least;
    CheckLevel level = CheckLevel::quick;  // the lowest level that runs it
    Verdict beyond = Verdict::fail;        // the verdict when the threshold is crossed
    // >=: a value above the threshold by less than this fraction warns
    // (a GPU at the edge of failing); 0: no such band.
    double warn_margin = 0;
    ThresholdRule rule = ThresholdRule::fixed;
    double amount = 0;            // see ThresholdRule
    std::string_view threshold;   // the default threshold in words, for --list, help and the man page
    bool per_pair = false;        // p2p: one check per ordered pair, id "p2p.A-B"
    // What a failed or warned check asks for by default (a check that knows
    // better, such as an Xid code's, sets its own on the outcome).
    Remediation remediation = Remediation::none;
    // Where the figure comes from: "NVML nvmlDeviceGetTotalEccErrors",
    // "kernel log (Xid)", "cudaMalloc": for --list checks and the man page.
    std::string_view source;
    // A quick-level check's judge and what it reads, beside the row itself
    // (base/check_table.hpp); null for the others, which src/bench runs.
    CheckReading reading = CheckReading::device_work;
    CheckJudge judge = nullptr;
    // A standard or long check's device work, and its setting (a copy's
    // direction), beside the row itself; none for the others.
    DeviceStep step = DeviceStep::none;
    std::string_view step_setting = {};
};

// Every check, in the order they run and are reported (gpumem --list checks):
// the rows of base/check_table.hpp. The table drives the run: a quick-level
// row holds its judge, a pure function of the figures read before any work;
// a standard or long row names its device step (which src/bench runs with
// CUDA), or is the pair runner's (p2p). static_asserts there hold each row
// to exactly one of these.
extern const NameTable<CheckKind> kChecks;
// The row of a check id ("copy.h2d", "p2p.0-1"); UsageError when unknown.
const Named<CheckKind>& check_row(std::string_view id);
// The same without throwing: null for an id no row has (a document of
// another gpumem version may name one). It costs what a known id's lookup
// does: no message, no suggestion (report reads a row per check per GPU).
const Named<CheckKind>* find_check_row(std::string_view id) noexcept;
// The id of the p2p check from `source` to `destination`: "p2p.0-1".
std::string p2p_check_id(int source, int destination);
// Whether a check runs at `level`.
bool runs_at(const CheckKind& kind, CheckLevel level) noexcept;
// The levels that run a check whose lowest is `lowest`, in words: "every
// level", "standard and long", "long".
std::string_view levels_text(CheckLevel lowest) noexcept;
// --threshold ID=... at `level`: a UsageError when `level` does not run the
// check (its threshold would be silently ignored), naming the levels that do.
void require_runs_at(const std::string& id, CheckLevel level);

// ---------------------------------------------------------------------------
// Thresholds given by the user

struct ThresholdOverride {
    double value = 0;    // in the check's unit
    std::string source;  // "--threshold" or the file's path
};
// Check id (or "p2p" for every pair) -> threshold.
using ThresholdOverrides = std::map<std::string, ThresholdOverride>;

// A threshold value for `kind` as written: a number in the check's unit, or
// with a unit: sizes (60GiB) for bytes, bandwidths (45GB/s, 40GiB/s, 10TB/s)
// for GB/s, 1500MHz, 5s, x16 or 16lanes. NaN, infinities, negative numbers
// and absurdly large ones are UsageErrors, as is a check that takes none.
double parse_threshold_value(const Named<CheckKind>& row, std::string_view text);
// The check --expect-gpus sets ("node.gpus"), and its value: a whole number
// of GPUs, at least 1; UsageError otherwise.
inline constexpr std::string_view kExpectedGpusCheck = "node.gpus";
double parse_expect_gpus(std::string_view text);
// "ID=VALUE" (--threshold): the id (a check, a p2p pair, or "p2p") and its value.
std::pair<std::string, double> parse_threshold_option(std::string_view text);
// The --threshold options in order (a check named twice is an error), over
// `overrides` (a --thresholds file's; core/thresholds_file reads one).
ThresholdOverrides merge_threshold_options(const std::vector<std::string>& options, ThresholdOverrides overrides = {});
// A --thresholds file's text (a JSON object of check id to a number or a
// string with a unit); `name` names it in errors.
ThresholdOverrides parse_threshold_file_text(const std::string& text, const std::string& name);
// The override that applies to `id`: its own, else for a p2p pair "p2p"'s.
const ThresholdOverride* find_override(const ThresholdOverrides& overrides, const std::string& id);

// ---------------------------------------------------------------------------
// Default thresholds

// The theoretical figure a default threshold is a fraction of, in the
// check's unit, and how to name it in a reason: "PCIe Gen5 x16's 63.0 GB/s".
struct Reference {
    double value = 0;
    std::string name;
};
// Bytes per second of one direction of a PCIe link: GT/s x encoding x lanes
// / 8, before packet overheads (Gen5 x16: 63.0 GB/s). Empty when unknown.
std::optional<double> pcie_rate_bps(unsigned generation, unsigned width) noexcept;
std::optional<Reference> pcie_reference(std::optional<unsigned> max_generation, std::optional<unsigned> max_width);
std::optional<Reference> peak_reference(std::optional<double> peak_bps, ThresholdRule rule);
std::optional<Reference> free_reference(std::optional<std::uint64_t> free_bytes);
std::optional<Reference> total_reference(std::optional<std::uint64_t> total_bytes);

struct Threshold {
    double value = 0;
    std::string basis;  // "75% of PCIe Gen5 x16's 63.0 GB/s", "--threshold", "set.json"
};
// The threshold of check `id`: the user's, else its default from `reference`
// (the rule's figure, where the rule needs one). Empty: no threshold.
std::optional<Threshold> threshold_for(const std::string& id, const CheckKind& kind, const ThresholdOverrides& overrides,
                                       const std::optional<Reference>& reference);

// ---------------------------------------------------------------------------
// Verdicts

// One check on one device, judged.
struct CheckOutcome {
    std::string id;               // "copy.h2d", "p2p.0-1"
    const CheckKind* kind = nullptr;  // its row of kChecks
    Verdict verdict = Verdict::na;
    std::optional<double> value;  // in kind->unit
    std::optional<double> threshold;
    std::string reason;
    double seconds = 0;
    // Set from the row when the check warns or fails (judged, failed_check,
    // apply_strict), else none; a check may set a more precise one.
    Remediation remediation = Remediation::none;
};

// The verdict of `value` against `threshold` under `kind`'s comparison,
// severity and warning margin (--strict: see apply_strict).
Verdict judge_value(const CheckKind& kind, double value, double threshold) noexcept;
// A measured check: its verdict and a one-line reason ("55.3 GB/s >= 47.3
// GB/s (75% of PCIe Gen5 x16's 63.0 GB/s)"), with `note` after it.
CheckOutcome judged(const std::string& id, std::optional<double> value, const std::optional<Threshold>& threshold,
                    const std::string& note = "");
// A check that has no value: n/a, and why.
CheckOutcome not_applicable(const std::string& id, const std::string& why);
// A check that could not run (an NVML call failed or was refused, a file
// could not be read): unknown, and why.
CheckOutcome unknown_check(const std::string& id, const std::string& why);
// A check whose work failed (a CUDA error, out of memory): a failure with
// the error as the reason and its row's remediation.
CheckOutcome failed_check(const std::string& id, const std::string& why);
// The remediation a verdict asks for under `kind`: its row's for warn and
// fail, none otherwise.
Remediation remediation_for(const CheckKind& kind, Verdict verdict) noexcept;
// A value in a check's unit, for reasons and text output: "55.3 GB/s", "71.3 GiB", "3".
std::string format_check_value(const CheckKind& kind, double value);

// A device's checks, counted.
struct VerdictCounts {
    std::uint64_t passed = 0, warned = 0, failed = 0, na = 0, unknown = 0;
    Verdict worst = Verdict::na;
    Remediation remediation = Remediation::none;  // the worst of the checks'
};
VerdictCounts count_verdicts(const std::vector<CheckOutcome>& checks);
// --strict: a warning, and a check that could not run (unknown), become
// failures, and the reason says so. A strict run passes only a node whose
// every check ran and passed (or is n/a).
void apply_strict(CheckOutcome& outcome, bool strict);

// ---------------------------------------------------------------------------
// A host link's rate, measured again before it fails

// A host link's rate (copy.h2d, copy.d2h) falls with the host's other
// traffic and never rises above what the link can do, so one slow window is
// no fault: an H200 VM's first check once measured 33.5 GB/s at best (median
// 28.2) where every run after it gave 55. A rate that does not pass is
// measured again after each of these pauses, and the best attempt is
// judged; a link trained down or narrowed stays slow every time and fails
// about 2 s later than it would have.
inline constexpr std::array<std::chrono::milliseconds, 3> kHostLinkRetestPauses = {
    std::chrono::milliseconds(250), std::chrono::milliseconds(500), std::chrono::milliseconds(1000)};

// One attempt: its best and median samples, bytes per second.
struct RateAttempt {
    double best_bps = 0;
    double median_bps = 0;
};
struct RetestedRate {
    RateAttempt best;           // the attempt whose best sample is the highest
    unsigned best_attempt = 1;  // its number, from 1
    double first_best_bps = 0;  // the first attempt's best sample
    unsigned attempts = 0;
};
// Runs `measure` until `passes` takes the best sample so far, or once more
// after each of `pauses` (each waited through `wait`, which may throw to
// stop) and no further.
RetestedRate retest_rate(const std::function<RateAttempt()>& measure, const std::function<bool(double)>& passes,
                         const std::vector<std::chrono::milliseconds>& pauses,
                         const std::function<void(std::chrono::milliseconds)>& wait);
// What a retested rate adds to its check's reason: empty after one attempt,
// else "; attempt 3 of 3 (the first gave 33.5 GB/s; a rate that does not
// pass is measured again after 0.25, 0.5 and 1 s)".
std::string retest_note(const RetestedRate& rate, const std::vector<std::chrono::milliseconds>& pauses);

}  // namespace gpumem
