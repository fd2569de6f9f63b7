// The device work of `gpumem check` (standard and long levels): each step
// runs one of gpumem's engines and is judged as soon as it ends; and the
// whole run, from the NVML figures to p2p.
#include "bench/check_engine.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "base/check_table.hpp"
#include "base/cpu_affinity.hpp"
#include "base/sizes.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "bench/alloc_apis.hpp"
#include "bench/check_contention.hpp"
#include "bench/copy_bench.hpp"
#include "bench/memset_bench.hpp"
#include "bench/memtest.hpp"
#include "core/cuda_check.hpp"
#include "core/kernel_log.hpp"

namespace gpumem {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t MiB = 1ULL << 20;
constexpr std::uint64_t GiB = 1ULL << 30;
// A device copy of 256 MiB runs at full rate on HBM and over NVLink; a PCIe
// copy engine reaches its rate well below 64 MiB (see copy.cpp's defaults).
constexpr std::uint64_t kDeviceCopyBytes = 256 * MiB;
constexpr std::uint64_t kHostCopyBytes = 256 * MiB;
constexpr std::uint64_t kMemsetBytes = 1 * GiB;
constexpr std::uint64_t kAllocGranule = 2 * MiB;
// A fill or memtest that cannot get its share of free memory (another
// process took some meanwhile) tries again with half, at most this many times.
constexpr int kFillRetries = 2;


std::optional<Threshold> threshold(const CheckSettings& s, const std::string& id, const std::optional<Reference>& reference) {
    return threshold_for(id, check_row(id).value, s.thresholds, reference);
}

std::optional<Reference> pcie_of(const CheckDeviceFigures& f) {
    if (!f.pcie) return std::nullopt;
    return pcie_reference(f.pcie->max_generation, f.pcie->max_width);
}

// Runs a device's steps: each is timed, a failure of its work (a CUDA
// error, no memory) fails its check instead of the run, and each outcome is
// added as soon as it is judged. Ctrl-C and a sibling's stop pass through.
class StepRunner {
public:
    StepRunner(const CheckSettings& settings, std::vector<CheckOutcome>& out, const StopToken& stop, const OutcomeFn& on,
               const CheckDeviceFigures* device = nullptr)
        : settings_(settings), out_(out), stop_(stop), on_(on), device_(device) {}

    template <typename Work>
    void run(const std::string& id, Work work) {
        stop_.throw_if_stopped();
        const auto start = Clock::now();
        CheckOutcome outcome;
        bool allocation_failed = false;
        try {
            outcome = work();
        } catch (const InterruptedError&) {
            throw;
        } catch (const StoppedBySiblingError&) {
            throw;
        } catch (const Error& e) {
            outcome = failed_check(id, e.what());
            allocation_failed = dynamic_cast<const OutOfMemoryError*>(&e) != nullptr;
        }
        outcome.seconds = seconds_since(start);
        // Another process's memory or traffic is not the GPU's fault.
        if (device_) outcome = review_contention(std::move(outcome), allocation_failed, read_contention(device_->device), settings_.judge_shared);
        add(std::move(outcome));
    }
    void add(CheckOutcome outcome) {
        apply_strict(outcome, settings_.strict);
        out_.push_back(std::move(outcome));
        if (on_) on_(out_.back());
    }
    const CheckOutcome& last() const { return out_.back(); }

private:
    const CheckSettings& settings_;
    std::vector<CheckOutcome>& out_;
    const StopToken& stop_;
    const OutcomeFn& on_;
    const CheckDeviceFigures* device_;  // whose contention a step's outcome is reviewed against; none for p2p
};

// The bandwidth figures of a one-size copy plan (its first lane), `samples` samples.
CopyFigures copy_figures_of(CopyPlan plan, std::uint64_t bytes, int samples) {
    plan.sizes = {bytes};
    plan.timing = TimingPlan{2, 1, samples};
    plan.auto_iterations = true;
    plan.sample_seconds = 0.01;
    check_copy_fits(plan);
    std::vector<CopyResult> rows;
    run_copy_plan(plan, [&](CopyResult r) { rows.push_back(std::move(r)); });
    if (rows.empty() || !rows.front().measured()) throw Error("the copy measured nothing");
    return copy_figures(rows.front());
}
double copy_gbps(const CopyPlan& plan, std::uint64_t bytes) { return copy_figures_of(plan, bytes, 5).median_bps / 1e9; }

// Copies between host and device use the host's memory and, on many
// machines, a PCIe switch shared by several GPUs: one device at a time, so
// that no device is judged on a rate another one took from it (on 4 H200s,
// d2h of all four at once measured 48.6 to 54.9 GB/s against 55.3 alone).
// A device whose turn has not come does its device-only steps meanwhile
// (run_device_checks), instead of waiting.
std::mutex& host_link() {
    static std::mutex link;
    return link;
}

std::unique_lock<std::mutex> wait_for_host_link(const StopToken& stop) {
    std::unique_lock<std::mutex> lock(host_link(), std::defer_lock);
    while (!lock.try_lock()) {
        stop.throw_if_stopped();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return lock;
}

CheckOutcome check_context(const std::string& id, DeviceId device, const CheckSettings& s) {
    const auto start = Clock::now();
    ensure_context(device);
    return judged(id, seconds_since(start), threshold(s, id, std::nullopt));
}

CheckOutcome check_alloc_max(const std::string& id, DeviceId device, const CheckSettings& s, const StopToken& stop) {
    const std::uint64_t free = device_memory_info(device).free;
    int probes = 0;
    // Each probe allocates and frees at once; success is monotonic in size.
    const std::uint64_t largest = largest_succeeding(
        free, kAllocGranule,
        [&](std::uint64_t bytes) {
            stop.throw_if_stopped();
            try {
                DeviceAllocation probe(device, static_cast<std::size_t>(bytes));
                return true;
            } catch (const OutOfMemoryError&) {
                return false;
            }
        },
        &probes);
    return judged(id, static_cast<double>(largest), threshold(s, id, free_reference(free)),
                  "one cudaMalloc, found in " + std::to_string(probes) + " probes");
}

std::string fill_note(const FillResult& r, double percent, int passes) {
    const double seconds = r.write_seconds + r.read_seconds;
    std::string note = std::to_string(all_patterns().size()) + " patterns" + (passes > 1 ? " x " + std::to_string(passes) + " passes" : "") + " over " + format_bytes(r.allocated) + " (" +
                       format_decimal(percent, 1) + "% of free)";
    if (seconds > 0) note += ", written and read back at " + format_bandwidth(static_cast<double>(r.bytes_written + r.bytes_read) / seconds);
    if (r.mismatches.empty()) return note;
    const FillMismatch& m = r.mismatches.front();
    note += "; first bad word at " + hex(m.chunk_base + m.offset) + " (pattern " + pattern_name(m.pattern) + "): expected " +
            hex(m.expected) + ", read " + hex(m.actual);
    for (std::size_t i = 1; i < r.mismatches.size() && i < 4; ++i) note += "; " + hex(r.mismatches[i].chunk_base + r.mismatches[i].offset);
    return note;
}

// Runs work(percent of free memory); when another process took memory
// meanwhile and the allocation fails part way, tries again with half.
template <typename Work>
CheckOutcome with_shrinking_share(double percent, Work work) {
    for (int attempt = 0;; ++attempt) {
        try {
            return work(percent);
        } catch (const PartialAllocationError&) {
            if (attempt == kFillRetries) throw;
            percent /= 2;
        }
    }
}

CheckOutcome check_fill(const std::string& id, DeviceId device, const CheckSettings& s, const StopToken& stop) {
    FillOptions options;
    options.chunk = GiB;
    options.verify = true;
    options.patterns = all_patterns();
    options.passes = s.fill_passes;
    options.corrupt_word = s.corrupt_word;
    return with_shrinking_share(kFillPercent, [&](double percent) {
        options.total.is_percent = true;
        options.total.percent = percent;
        options.total.text = format_decimal(percent, 1) + "%";
        const FillResult r = run_fill(device, options, stop);
        return judged(id, static_cast<double>(r.mismatched_words), threshold(s, id, std::nullopt), fill_note(r, percent, options.passes));
    });
}

std::string memtest_note(const MemtestResult& r, double percent) {
    std::vector<std::string> names;
    std::uint64_t traffic = 0;
    double seconds = 0;
    const MemtestTestResult* failing = nullptr;
    for (const MemtestTestResult& t : r.tests) {
        names.emplace_back(memtest_name(t.test));
        traffic += t.traffic;
        seconds += t.seconds;
        if (!failing && t.first_bad) failing = &t;
    }
    std::string note = join(names, ", ") + " over " + format_bytes(r.bytes) + " (" + format_decimal(percent, 1) + "% of free)";
    if (seconds > 0) note += " at " + format_bandwidth(static_cast<double>(traffic) / seconds);
    if (!failing) return note;
    const BadWord& w = *failing->first_bad;
    return note + "; first bad word at " + hex(w.address) + " (" + memtest_name(failing->test) + "): expected " + hex(w.expected) +
           ", read " + hex(w.actual);
}

// The memtest86 set (long): most of the free memory, every test once.
CheckOutcome check_memtest(const std::string& id, DeviceId device, const CheckSettings& s, const StopToken& stop) {
    MemtestOptions options;
    options.tests = kMemtestKinds.values();
    options.chunk = GiB;
    if (s.corrupt_word) options.inject_fault_at = *s.corrupt_word * 8;
    return with_shrinking_share(kMemtestPercent, [&](double percent) {
        options.bytes = static_cast<std::uint64_t>(static_cast<double>(device_memory_info(device).free) * percent / 100);
        const MemtestResult r = run_memtest(device, options, stop);
        // A stopped run returns what it did; the run as a whole ends here.
        if (r.stopped) stop.throw_if_stopped();
        return judged(id, static_cast<double>(r.mismatches()), threshold(s, id, std::nullopt), memtest_note(r, percent));
    });
}

CheckOutcome check_memset(const std::string& id, const CheckDeviceFigures& f, const CheckSettings& s) {
    MemsetPlan plan;
    plan.device = f.device.cuda_index.value();
    plan.size = std::min(kMemsetBytes, device_memory_info(plan.device).free / 4 / 4 * 4);
    plan.width = 4;
    plan.value = 0x5A5A5A5A;
    plan.timing = TimingPlan{2, 20, 5};
    const MemsetResult r = run_memset(plan);
    const double gbps = static_cast<double>(r.bytes_set) / r.seconds.median / 1e9;
    return judged(id, gbps, threshold(s, id, peak_reference(f.peak_bps, ThresholdRule::peak_fraction)),
                  format_bytes(r.bytes_set) + " with cuMemsetD32, median of 5 samples");
}

CheckOutcome check_copy(const std::string& id, const CheckDeviceFigures& f, const CheckSettings& s, std::string_view direction,
                        const StopToken& stop) {
    CopyPlan plan;
    plan.direction = kCopyDirections.parse(direction);
    plan.device = f.device.cuda_index.value();
    if (!plan.direction.uses_host_memory()) {
        const double gbps = copy_gbps(plan, kDeviceCopyBytes);
        return judged(id, gbps, threshold(s, id, peak_reference(f.peak_bps, ThresholdRule::copy_fraction)),
                      format_bytes(kDeviceCopyBytes) + " copies, bytes counted once, median of 5 samples");
    }
    // The caller holds the host link (run_device_checks).
    // The link's capability is its best sample: a host link's rate swings
    // with the host's other traffic, which only ever lowers it. A rate that
    // does not pass is measured again after a pause (kHostLinkRetestPauses).
    const std::optional<Threshold> limit = threshold(s, id, pcie_of(f));
    const CheckKind& kind = check_row(id).value;
    const std::vector<std::chrono::milliseconds> pauses(kHostLinkRetestPauses.begin(), kHostLinkRetestPauses.end());
    const RetestedRate rate = retest_rate(
        [&] {
            const CopyFigures figures = copy_figures_of(plan, kHostCopyBytes, 7);
            return RateAttempt{figures.max_bps, figures.median_bps};
        },
        [&](double bps) { return !limit || judge_value(kind, bps / 1e9, limit->value) == Verdict::pass; },
        pauses,
        [&](std::chrono::milliseconds pause) {
            const auto until = Clock::now() + pause;
            while (Clock::now() < until) {
                stop.throw_if_stopped();
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
    return judged(id, rate.best.best_bps / 1e9, limit,
                  format_bytes(kHostCopyBytes) + " pinned copies, best of 7 samples (median " +
                      format_decimal(rate.best.median_bps / 1e9, 1) + " GB/s)" + retest_note(rate, pauses));
}

// What a device step works with.
struct DeviceWork {
    const CheckDeviceFigures& figures;
    const CheckSettings& settings;
    const StopToken& stop;
    DeviceId device;
};

// A row's device step (base/check_table.hpp names it), run with the row's
// id and setting: the id is typed only in the row.
CheckOutcome run_step(const Named<CheckKind>& row, const DeviceWork& w) {
    const std::string id(row.name);
    switch (row.value.step) {
    case DeviceStep::context: {
        CheckOutcome o = check_context(id, w.device, w.settings);
        // How long this check waited for another gpumem on the GPU, and for whom.
        if (!w.figures.lock_note.empty()) o.reason += (o.reason.empty() ? "" : "; ") + w.figures.lock_note;
        return o;
    }
    case DeviceStep::memset: return check_memset(id, w.figures, w.settings);
    case DeviceStep::copy: return check_copy(id, w.figures, w.settings, row.value.step_setting, w.stop);
    case DeviceStep::largest_alloc: return check_alloc_max(id, w.device, w.settings, w.stop);
    case DeviceStep::fill: return check_fill(id, w.device, w.settings, w.stop);
    case DeviceStep::memtest: return check_memtest(id, w.device, w.settings, w.stop);
    case DeviceStep::none: break;
    }
    throw std::logic_error("check " + id + " has no device step");
}

// Non-empty: the later steps need what this one made, and without its
// value each of them is unknown for this reason.
std::string_view needed_by_later(DeviceStep step) { return step == DeviceStep::context ? "not run: no CUDA context" : ""; }

// It copies between the host and the device: it runs holding the host
// link, and waits for its turn after the device-only steps.
bool uses_host_link(const CheckKind& kind) {
    return kind.step == DeviceStep::copy && kCopyDirections.parse(kind.step_setting).uses_host_memory();
}

// The position of a check among the rows: the report's order.
std::ptrdiff_t row_order(std::string_view id) {
    return std::find_if(std::begin(kCheckRows), std::end(kCheckRows), [id](const Named<CheckKind>& r) { return r.name == id; }) -
           std::begin(kCheckRows);
}

}  // namespace

bool has_device_step(std::string_view id) noexcept {
    const Named<CheckKind>* row = find_check_row(id);
    return row != nullptr && row->value.step != DeviceStep::none;
}

void run_device_checks(const CheckDeviceFigures& f, const CheckSettings& s, std::vector<CheckOutcome>& out, const StopToken& stop,
                       const OutcomeFn& on_outcome) {
    if (s.level == CheckLevel::quick) return;
    // The host threads of the copies, and the pages they touch first, next to the GPU.
    std::optional<ScopedCpuAffinity> pin;
    if (!f.cpu_affinity.empty()) pin.emplace(f.cpu_affinity);
    StepRunner steps(s, out, stop, on_outcome, &f);
    const DeviceWork work{f, s, stop, f.device.cuda_index.value()};
    // Why the remaining steps cannot run: another gpumem kept the GPU's lock
    // past --lock-timeout, or a step later ones need failed.
    std::string missing = f.why_unlocked;
    const std::size_t first = out.size();
    // Host-link steps whose turn had not come: run after the device-only ones.
    std::vector<const Named<CheckKind>*> waiting;
    for (const Named<CheckKind>& row : kCheckRows) {
        if (row.value.step == DeviceStep::none || !runs_at(row.value, s.level)) continue;
        const std::string id(row.name);
        if (!missing.empty()) {
            steps.add(unknown_check(id, missing));
            continue;
        }
        if (uses_host_link(row.value)) {
            std::unique_lock<std::mutex> link(host_link(), std::try_to_lock);
            if (!link.owns_lock()) {
                waiting.push_back(&row);
                continue;
            }
            steps.run(id, [&] { return run_step(row, work); });
            continue;
        }
        steps.run(id, [&] { return run_step(row, work); });
        if (!needed_by_later(row.value.step).empty() && !steps.last().value) missing = needed_by_later(row.value.step);
    }
    for (const Named<CheckKind>* row : waiting) {
        const std::unique_lock<std::mutex> link = wait_for_host_link(stop);
        steps.run(std::string(row->name), [&] { return run_step(*row, work); });
    }
    // The report's order is the table's, whatever order the steps ran in.
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                     [](const CheckOutcome& a, const CheckOutcome& b) { return row_order(a.id) < row_order(b.id); });
}

// ---------------------------------------------------------------------------
// p2p

std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pair_rounds(std::size_t count) {
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> rounds;
    if (count < 2) return rounds;
    // The circle method: position 0 stays, the others turn; an odd count
    // gets a bye (a position past the end) that pairs with nobody.
    const std::size_t n = count % 2 ? count + 1 : count;
    std::vector<std::size_t> ring(n);
    for (std::size_t i = 0; i < n; ++i) ring[i] = i;
    for (std::size_t r = 0; r + 1 < n; ++r) {
        std::vector<std::pair<std::size_t, std::size_t>> round;
        for (std::size_t i = 0; i < n / 2; ++i) {
            const std::size_t a = ring[i], b = ring[n - 1 - i];
            if (a < count && b < count) round.emplace_back(std::min(a, b), std::max(a, b));
        }
        rounds.push_back(std::move(round));
        std::rotate(ring.begin() + 1, ring.end() - 1, ring.end());
    }
    return rounds;
}

namespace {

// What NVML shows on either of two devices: the other processes of both.
DeviceContention pair_contention(const DeviceIdentity& a, const DeviceIdentity& b) {
    DeviceContention both = read_contention(a);
    DeviceContention of_b = read_contention(b);
    both.known = both.known || of_b.known;
    const auto name = [](const DeviceIdentity& d) { return "GPU " + (d.cuda_index ? to_string(*d.cuda_index) : d.pci.to_string()); };
    if (both.others.empty() != of_b.others.empty()) both.where = name(both.others.empty() ? b : a);
    else both.where = name(a) + " and " + name(b);
    for (NvmlProcess& p : of_b.others)
        if (std::none_of(both.others.begin(), both.others.end(), [&](const NvmlProcess& q) { return q.pid == p.pid; }))
            both.others.push_back(std::move(p));
    return both;
}

// Both ways between two devices at once (copy p2p-bidir, peer access on):
// each way's own rate against what connects them (p2p_reference).
void check_pair(const CheckDeviceFigures& a, const CheckDeviceFigures& b, const CheckSettings& s, std::vector<CheckOutcome>& out_a,
                std::vector<CheckOutcome>& out_b, const OutcomeFn& on_outcome) {
    const DeviceId da = a.device.cuda_index.value(), db = b.device.cuda_index.value();
    const std::string ab = p2p_check_id(da.ordinal(), db.ordinal()), ba = p2p_check_id(db.ordinal(), da.ordinal());
    const StopToken no_sibling_stop;  // each pair's failure is its own checks'
    StepRunner to_a(s, out_a, no_sibling_stop, on_outcome), to_b(s, out_b, no_sibling_stop, on_outcome);
    if (!a.why_unlocked.empty() || !b.why_unlocked.empty()) {
        const std::string& why = a.why_unlocked.empty() ? b.why_unlocked : a.why_unlocked;
        to_a.add(unknown_check(ab, why));
        to_b.add(unknown_check(ba, why));
        return;
    }
    // A thread starts on device 0; set, never restore (that would create a context there).
    GPUMEM_CUDA_CALL(cudaSetDevice(da.ordinal()));
    if (!peer_access_possible(da, db) || !peer_access_possible(db, da)) {
        const std::string why = "no peer access between devices " + to_string(da) + " and " + to_string(db);
        to_a.add(not_applicable(ab, why));
        to_b.add(not_applicable(ba, why));
        return;
    }
    // NVLink between the two where NVML reports it, else the slower PCIe link.
    const std::optional<Reference> slower = p2p_reference(a, b);
    const auto start = Clock::now();
    std::vector<CopyResult> rows;
    std::string failure;
    bool allocation_failed = false;
    try {
        CopyPlan plan;
        plan.direction = kCopyDirections.parse("p2p-bidir");
        plan.device = da;
        plan.peer = db;
        plan.sizes = {kDeviceCopyBytes};
        plan.timing = TimingPlan{2, 1, 5};
        plan.sample_seconds = 0.01;
        check_copy_fits(plan);
        run_copy_plan(plan, [&](CopyResult r) { rows.push_back(std::move(r)); });
    } catch (const InterruptedError&) {
        throw;
    } catch (const Error& e) {
        failure = e.what();
        allocation_failed = dynamic_cast<const OutOfMemoryError*>(&e) != nullptr;
    }
    const double seconds = seconds_since(start);
    // A copy between two GPUs shares both: another process on either is
    // not the link's fault.
    const DeviceContention contention = pair_contention(a.device, b.device);
    // Each way's row: the forward one's source is A, the reverse one's B.
    auto judge_way = [&](const std::string& id, DeviceId from, StepRunner& out) {
        auto row = std::find_if(rows.begin(), rows.end(), [from](const CopyResult& r) { return r.device == from && r.measured(); });
        CheckOutcome o = failure.empty() && row != rows.end()
                             ? judged(id, copy_figures(*row).median_bps / 1e9, threshold(s, id, slower),
                                      format_bytes(kDeviceCopyBytes) + " copies both ways at once, median of 5 samples")
                             : failed_check(id, failure.empty() ? "the copy measured nothing" : failure);
        o.seconds = seconds / 2;
        out.add(review_contention(std::move(o), allocation_failed, contention, s.judge_shared));
    };
    judge_way(ab, da, to_a);
    judge_way(ba, db, to_b);
}

}  // namespace

void run_p2p_checks(const std::vector<CheckDeviceFigures>& devices, const CheckSettings& s,
                    const std::vector<std::vector<CheckOutcome>*>& outs, const OutcomeFn& on_outcome) {
    if (s.level == CheckLevel::quick) return;
    for (const auto& round : pair_rounds(devices.size())) {
        throw_if_interrupted();
        // Disjoint pairs at once, one thread each, named by their first device.
        std::vector<DeviceId> firsts;
        firsts.reserve(round.size());
        for (const auto& [a, b] : round) firsts.push_back(devices[a].device.cuda_index.value());
        run_on_devices(firsts, [&](DeviceId first, const StopToken&) {
            for (const auto& [a, b] : round)
                if (devices[a].device.cuda_index == first) check_pair(devices[a], devices[b], s, *outs[a], *outs[b], on_outcome);
            return 0;
        });
    }
}

// ---------------------------------------------------------------------------
// The whole run

std::uint64_t expected_checks(CheckLevel level, std::size_t devices) {
    std::uint64_t per_device = 0;
    for (const Named<CheckKind>& row : kChecks)
        if (!row.value.per_pair && runs_at(row.value, level) && row.name != kExpectedGpusCheck) ++per_device;
    const std::uint64_t pairs = level == CheckLevel::quick ? 0 : devices * (devices - 1);
    return per_device * devices + pairs + 1;  // node.gpus once
}

namespace {

// The kernel log's Xid events, read once for every device's xid.events.
XidReading read_xid_events(const CheckRequest& q, const std::vector<CheckDeviceFigures>& figures) {
    const auto start = Clock::now();
    XidReading xid;
    xid.scan = q.kernel_log ? *q.kernel_log : read_live_kernel_log();
    const std::optional<XidClock> clock = q.kernel_log ? std::nullopt : std::optional<XidClock>(xid_clock_now());
    xid.window = xid_window(xid.scan, q.xid_since, clock);
    xid.checked.reserve(figures.size());
    for (const CheckDeviceFigures& f : figures) xid.checked.push_back(f.device.pci);
    xid.seconds = seconds_since(start);
    return xid;
}

// The device work of standard and long: every device at once, then p2p.
void run_device_work(const CheckRequest& q, const std::vector<CheckDeviceFigures>& figures, CheckResults& results,
                     const CheckProgress& progress) {
    std::uint64_t done = 0;
    for (const CheckDeviceResult& d : results.devices) done += d.checks.size();
    if (progress.start) progress.start(expected_checks(q.settings.level, figures.size()), done);
    std::mutex progress_mutex;
    const OutcomeFn on_outcome = [&](const CheckOutcome& o) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        ++done;
        if (progress.step) progress.step(done, o);
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
    outs.reserve(results.devices.size());
    for (CheckDeviceResult& d : results.devices) outs.push_back(&d.checks);
    run_p2p_checks(figures, q.settings, outs, on_outcome);
    if (progress.finish) progress.finish();
}

}  // namespace

void run_checks(const CheckRequest& q, CheckResults& results, const CheckProgress& progress) {
    CheckNodeFigures node;
    std::vector<CheckDeviceFigures> figures = read_check_figures(q.devices, &node);
    // Device work: one gpumem at a time on a GPU (its figures read again after a wait).
    if (q.settings.level != CheckLevel::quick)
        lock_check_devices(figures, progress.lock, [&q, &node] { return read_check_figures(q.devices, &node); });
    const XidReading xid = read_xid_events(q, figures);
    results.devices.reserve(figures.size());
    // The node's own checks go on its first GPU's row.
    for (std::size_t i = 0; i < figures.size(); ++i) {
        CheckDeviceResult d{figures[i].device, judge_readings(CheckReadings{figures[i], node, xid, q.settings.thresholds}, i == 0)};
        for (CheckOutcome& c : d.checks) apply_strict(c, q.settings.strict);
        results.devices.push_back(std::move(d));
    }
    if (q.settings.level != CheckLevel::quick) run_device_work(q, figures, results, progress);
}

}  // namespace gpumem
