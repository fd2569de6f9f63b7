// gpumem alloc-test fill: allocate SIZE or PCT% of free memory in chunks,
// write test patterns over all of it and optionally read them back.
#include <limits>

#include "alloc/alloc.hpp"
#include "base/text.hpp"
#include "cli/commands.hpp"
#include "cli/lock_wait.hpp"
#include "core/device_inventory.hpp"

namespace gpumem::cli {
namespace {

constexpr const char* kCommand = "alloc-test fill";

// What CLI11 fills.
struct FillOptionsText {
    double lock_timeout = kDefaultLockTimeout;  // --lock-timeout
    TotalText total;
    std::string chunk = "1GiB";
    bool verify = false;
    std::vector<std::string> patterns;  // none: all
    int passes = 1;
    std::uint64_t seed = 1;
    std::optional<std::uint64_t> corrupt_word;  // hidden test hook
};

void add_options(CLI::App& sub, FillOptionsText& o) {
    add_lock_timeout_option(sub, o.lock_timeout);
    add_total_option(sub, o.total, "How much: SIZE or PCT% of free memory (default 90%)");
    sub.add_option("--chunk", o.chunk, "Allocation piece size (default 1GiB)")->check(size_validator(false));
    sub.add_flag("--verify", o.verify, "Read every pattern back and compare (exit 4 on a mismatch)");
    sub.add_option("--pattern", o.patterns, "Patterns, comma list or repeated (default all; gpumem --list patterns)")
        ->type_name("NAME[,NAME...]")
        ->check(list_validator(kPatterns));
    sub.add_option("--passes", o.passes, "Repeat all patterns N times (default 1)")->type_name("N")->check(CLI::Range(1, 1000000));
    add_unsigned_option(sub, "--seed", o.seed, "Seed of the walking and random patterns (default 1)", 0,
                        std::numeric_limits<std::uint64_t>::max());
    add_unsigned_option(sub, "--debug-corrupt-word", o.corrupt_word, "Test hook: invert one word between writing and verifying",
                        0, 1ULL << 60)
        ->group("");
}

FillRequest check(const FillOptionsText& o, const Globals& globals) {
    FillRequest q;
    q.devices = device_spec_or(globals, "0");
    q.lock_timeout = o.lock_timeout;
    FillOptions& f = q.options;
    f.total = parse_size_spec(total_text(o.total, "90%"), {false, true});
    f.chunk = parse_chunk(o.chunk);
    f.verify = o.verify;
    f.patterns = o.patterns.empty() ? all_patterns() : kPatterns.parse_list(o.patterns, kAllocTestListRules);
    f.passes = o.passes;
    f.seed = o.seed;
    if (o.corrupt_word) {
        if (!o.verify) throw UsageError("--debug-corrupt-word needs --verify");
        f.corrupt_word = *o.corrupt_word;
    }
    return q;
}

void execute(const FillRequest& q, FillResults& results, Session& session) {
    recording_allocation_failure(results.allocation_failure, [&] {
        measure_rows(q.devices, q.options, session, kCommand, run_fill, results.devices, q.lock_timeout);
    });
    for (FillDevice& d : results.devices) d.peak_bps = nvml_figures_for(d.device.pci).peak_memory_bandwidth;
    const std::string failure = fill_failure_message(results);
    if (!failure.empty()) throw VerificationError(failure);
}

// ---------------------------------------------------------------------------
// Report

// One row: a device, and the patterns and passes the run wrote.
struct FillLine {
    const FillDevice* device;
    const FillOptions* options;
};

// Bytes written plus bytes read back over the kernels' time; 0 before any.
double write_read_rate(const FillResult& r) {
    const double seconds = r.write_seconds + r.read_seconds;
    return seconds > 0 ? static_cast<double>(r.bytes_written + r.bytes_read) / seconds : 0;
}

std::string verdict(const FillLine& l) {
    const FillResult& r = l.device->result;
    if (r.bytes_written == 0) return "allocated";
    if (!l.options->verify) return "written";
    return r.mismatched_words ? "FAILED" : "ok";
}

std::string patterns_text(const std::vector<Pattern>& patterns) {
    std::vector<std::string> names;
    names.reserve(patterns.size());
    for (Pattern p : patterns) names.emplace_back(pattern_name(p));
    return join(names, ",");
}

std::vector<std::string_view> verdicts() { return {"allocated", "written", "ok", "FAILED"}; }

constexpr Column<FillLine> kFillColumns[] = {
    {{"index", "cuda", FieldKind::integer}, [](const FillLine& l) -> Cell { return device_index(l.device->device); }},
    {{"free", "free", FieldKind::bytes}, [](const FillLine& l) -> Cell { return l.device->result.free_before; }},
    {{"requested", "requested", FieldKind::bytes}, [](const FillLine& l) -> Cell { return l.device->result.requested; }},
    {{"allocated", "allocated", FieldKind::bytes}, [](const FillLine& l) -> Cell { return l.device->result.allocated; }},
    {{"chunks", "chunks", FieldKind::integer},
     [](const FillLine& l) -> Cell { return static_cast<std::uint64_t>(l.device->result.chunks); }},
    {{"alloc_seconds", "alloc s", FieldKind::real, 3}, [](const FillLine& l) -> Cell { return l.device->result.alloc_seconds; }},
    {{"patterns", "patterns", FieldKind::text}, [](const FillLine& l) -> Cell { return patterns_text(l.options->patterns); }},
    {{"passes", "passes", FieldKind::integer}, [](const FillLine& l) -> Cell { return std::int64_t{l.options->passes}; }},
    {{"bytes_written", "written", FieldKind::bytes}, [](const FillLine& l) -> Cell { return l.device->result.bytes_written; }},
    {{"bytes_read", "read", FieldKind::bytes}, [](const FillLine& l) -> Cell { return l.device->result.bytes_read; }},
    {{"write_gbps", "write", FieldKind::bandwidth},
     [](const FillLine& l) -> Cell {
         const FillResult& r = l.device->result;
         return r.write_seconds > 0 ? Cell(r.bytes_written / r.write_seconds) : Cell();
     }},
    {{"read_gbps", "read", FieldKind::bandwidth},
     [](const FillLine& l) -> Cell {
         const FillResult& r = l.device->result;
         return r.read_seconds > 0 ? Cell(r.bytes_read / r.read_seconds) : Cell();
     }},
    {{"gbps", "write+read", FieldKind::bandwidth},
     [](const FillLine& l) -> Cell {
         const double rate = write_read_rate(l.device->result);
         return rate > 0 ? Cell(rate) : Cell();
     }},
    {{"peak_gbps", "peak", FieldKind::bandwidth}, [](const FillLine& l) -> Cell { return optional_cell(l.device->peak_bps); }},
    {{"pct_of_peak", "% peak", FieldKind::percent, 1},
     [](const FillLine& l) -> Cell {
         const double rate = write_read_rate(l.device->result);
         return l.device->peak_bps && rate > 0 ? Cell(100.0 * rate / *l.device->peak_bps) : Cell();
     }},
    {{"mismatched_words", "bad words", FieldKind::integer}, [](const FillLine& l) -> Cell { return l.device->result.mismatched_words; }},
    {{"result", "result", FieldKind::text}, [](const FillLine& l) -> Cell { return verdict(l); }, Shown::always, false, nullptr,
     verdicts},
};

// One reported mismatch (the first bad word of a failing chunk) on its device.
struct MismatchLine {
    const DeviceIdentity* device;
    const FillMismatch* mismatch;
};

constexpr Column<MismatchLine> kMismatchColumns[] = {
    {{"index", "", FieldKind::integer}, [](const MismatchLine& m) -> Cell { return device_index(*m.device); }},
    {{"pattern", "", FieldKind::text}, [](const MismatchLine& m) -> Cell { return std::string(pattern_name(m.mismatch->pattern)); },
     Shown::always, false, nullptr, [] { return kPatterns.name_list(); }},
    {{"pass", "", FieldKind::integer}, [](const MismatchLine& m) -> Cell { return std::int64_t{m.mismatch->pass}; }},
    {{"chunk", "", FieldKind::integer}, [](const MismatchLine& m) -> Cell { return static_cast<std::uint64_t>(m.mismatch->chunk); }},
    {{"chunk_base", "", FieldKind::text}, [](const MismatchLine& m) -> Cell { return hex(m.mismatch->chunk_base); }},
    {{"offset", "", FieldKind::bytes}, [](const MismatchLine& m) -> Cell { return m.mismatch->offset; }},
    {{"address", "", FieldKind::text},
     [](const MismatchLine& m) -> Cell { return hex(m.mismatch->chunk_base + m.mismatch->offset); }},
    {{"expected", "", FieldKind::text}, [](const MismatchLine& m) -> Cell { return hex(m.mismatch->expected); }},
    {{"actual", "", FieldKind::text}, [](const MismatchLine& m) -> Cell { return hex(m.mismatch->actual); }},
    {{"bad_words_in_chunk", "", FieldKind::integer}, [](const MismatchLine& m) -> Cell { return m.mismatch->words_in_chunk; }},
};

constexpr auto mismatch_schema = nested_schema<kMismatchColumns>;

using FillDocument = ModeDocument<FillRequest, FillResults>;

// Every reported mismatch, in device order; null when every word read back
// right (the key is left out then).
Cell mismatches_cell(const FillResults& results) {
    std::vector<MismatchLine> lines;
    bool failed = false;
    for (const FillDevice& d : results.devices) {
        failed = failed || d.result.mismatched_words > 0;
        for (const FillMismatch& m : d.result.mismatches) lines.push_back({&d.device, &m});
    }
    return failed ? records_cell(make_records(Columns<MismatchLine>(kMismatchColumns), lines)) : Cell();
}

constexpr Column<FillDocument> kDocumentColumns[] = {
    {{"chunk", "", FieldKind::bytes}, [](const FillDocument& d) -> Cell { return d.request.options.chunk; }},
    {{"verify", "", FieldKind::boolean}, [](const FillDocument& d) -> Cell { return d.request.options.verify; }},
    {{"seed", "", FieldKind::integer}, [](const FillDocument& d) -> Cell { return d.request.options.seed; }},
    {{"mismatches", "", FieldKind::records}, [](const FillDocument& d) -> Cell { return mismatches_cell(d.results); },
     Shown::always, true, mismatch_schema},
    {{"allocation_failure", "", FieldKind::record},
     [](const FillDocument& d) -> Cell { return allocation_failure_cell(d.results.allocation_failure); }, Shown::always, true,
     allocation_failure_schema},
};

constexpr ModeLayout<FillLine, FillDocument> kLayout{kCommand, "fill", kFillColumns, kDocumentColumns};

}  // namespace

std::string fill_failure_message(const FillResults& results) {
    std::string failure;
    std::uint64_t failing_devices = 0;
    for (const FillDevice& d : results.devices) {
        const FillResult& r = d.result;
        if (r.mismatched_words == 0) continue;
        ++failing_devices;
        if (!failure.empty() || r.mismatches.empty()) continue;
        const FillMismatch& m = r.mismatches.front();
        failure = "device " + to_string(d.device.cuda_index.value()) + ": " + std::to_string(r.mismatched_words) +
                  " word(s) read back wrong; first at " + hex(m.chunk_base + m.offset) + " (chunk " + std::to_string(m.chunk) +
                  " at " + hex(m.chunk_base) + " + " + hex(m.offset) + ", pattern " + pattern_name(m.pattern) + ", pass " +
                  std::to_string(m.pass) + "): expected " + hex(m.expected) + ", read " + hex(m.actual);
        for (std::size_t i = 1; i < r.mismatches.size() && i < 4; ++i)
            failure += "; " + hex(r.mismatches[i].chunk_base + r.mismatches[i].offset);
    }
    if (!failure.empty() && failing_devices > 1) failure += " (and " + std::to_string(failing_devices - 1) + " more device(s))";
    return failure;
}

Report fill_report(const FillRequest& q, const FillResults& results, const OutputOptions& output) {
    Report r;
    const auto lines = lines_per_device<FillLine>(results.devices, r, [&](const FillDevice& d) { return FillLine{&d, &q.options}; });
    kLayout.fill(r, lines, FillDocument{q, results}, output.format);
    r.text_after.push_back(
        "write+read: bytes written plus bytes read back, over the kernels' time (CUDA events); peak from NVML's memory clock "
        "and bus width");
    return r;
}

namespace {
constexpr ListEntry kFillLists[] = {{"patterns", "alloc-test fill --pattern", [] { return view_of(kPatterns); }}};
}  // namespace

constexpr CommandDefinition kAllocFillCommand{
    [] { return make_command(CommandFunctions<FillOptionsText, FillRequest, FillResults>{add_options, check, execute, fill_report}); },
    [] { return kLayout.schema(); }, kFillLists};

}  // namespace gpumem::cli
