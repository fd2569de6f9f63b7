// gpumem check: a memory health verdict per GPU. This file parses and checks
// the options (a saved kernel log and a thresholds file are read here, so a
// bad one is a usage error before any driver call) and reports; the run
// itself is bench/check_engine's run_checks. A failed check exits 7, one
// stderr line per check.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/text.hpp"
#include "check/check_report.hpp"
#include "core/kernel_log.hpp"
#include "core/thresholds_file.hpp"
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

CheckRequest check(const CheckOptions& o, const Globals& globals) {
    CheckRequest q;
    q.devices = device_spec_or(globals, "all");
    q.settings.level = kCheckLevels.parse(o.level);
    q.settings.thresholds = parse_threshold_overrides(o.thresholds, o.thresholds_file);
    // A file may hold every check's thresholds; an option names one to use.
    for (const std::string& option : o.thresholds) require_runs_at(parse_threshold_option(option).first, q.settings.level);
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

// The engine's run with the progress line, erased before any failure line.
void run_with_progress(const CheckRequest& q, CheckResults& results, Session& session) {
    std::optional<Progress> line;
    GpuLocker gpus(session, q.lock_timeout);  // as every command takes the per-GPU lock
    const CheckProgress progress{
        [&](std::uint64_t total, std::uint64_t) { line.emplace(session.progress(), "check", total, session.output().screen.stderr_columns); },
        [&](std::uint64_t done, const CheckOutcome& o) { line->update(done, o.id + " " + std::string(verdict_name(o.verdict))); },
        [&] { line->finish(); }, gpus.locker()};
    run_checks(q, results, progress);
}

void execute(const CheckRequest& q, CheckResults& results, Session& session) {
    const auto start = Clock::now();
    try {
        run_with_progress(q, results, session);
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

namespace {
// checks and xids have columns of their own (levels, thresholds, remediations; an Xid's facts).
constexpr ListEntry kCheckLists[] = {
    {"checks", "check --threshold", check_list, [](Format) { return check_list_table(); }},
    {"levels", "check --level", check_level_list},
    {"xids", "check (xid.events)", xid_list, xid_list_table},
    {"verdicts", "check's verdicts", [] { return view_of(kVerdicts); }},
    {"remediations", "check's remediations", [] { return view_of(kRemediations); }},
};
}  // namespace

constexpr CommandDefinition kCheckCommand{
    [] { return make_command(CommandFunctions<CheckOptions, CheckRequest, CheckResults>{add_options, check, execute, check_report}); },
    check_schema, kCheckLists, Formats{Format::prometheus, Format::nagios, Format::npd}};

}  // namespace gpumem::cli
