// gpumem alloc-test churn: random allocations and frees of sizes from a
// list, through an allocation API directly or through MixMemory slots.
#include <limits>

#include "alloc/alloc.hpp"
#include "cli/commands.hpp"
#include "cli/lock_wait.hpp"

namespace gpumem::cli {
namespace {

constexpr const char* kCommand = "alloc-test churn";
constexpr const char* kDefaultSizes = "4KiB..64MiB";
constexpr std::uint64_t kDefaultOps = 10000;

// What CLI11 fills.
struct ChurnOptionsText {
    double lock_timeout = kDefaultLockTimeout;  // --lock-timeout
    std::string sizes = kDefaultSizes;
    std::optional<std::uint64_t> ops;
    std::optional<double> duration;  // seconds
    std::uint64_t seed = 1;
    std::string via = "direct";
    std::string api = "device";
    std::optional<std::uint64_t> slots;  // --via mixmemory
    std::optional<std::string> growth;   // --via mixmemory
    std::string max_live = "50%";
};

void add_options(CLI::App& sub, ChurnOptionsText& o) {
    add_lock_timeout_option(sub, o.lock_timeout);
    sub.add_option("--sizes", o.sizes, std::string("Sizes to draw from, uniformly: a list or range (default ") + kDefaultSizes + ")")
        ->check(range_validator());
    add_unsigned_option(sub, "--ops", o.ops, "Operations (default 10000 unless --duration)", 1, 1ULL << 40);
    add_value_option(sub, "--duration", o.duration, "Run this long: 30s, 500ms, 2m (with --ops: whichever ends first)",
                     ValueKind::seconds, 1e-6, 365.0 * 86400);
    add_unsigned_option(sub, "--seed", o.seed, "Seed of the operation stream (default 1)", 0, std::numeric_limits<std::uint64_t>::max());
    sub.add_option("--via", o.via, "direct (the API's own calls) or mixmemory (MixMemory slots); default direct")
        ->type_name("VIA")
        ->check(names_validator(kChurnVias));
    sub.add_option("--api", o.api, "Allocation API for --via direct (default device)")->type_name("API")->check(names_validator(kAllocApis));
    add_unsigned_option(sub, "--slots", o.slots, "MixMemory objects (default 4)", 1, 4096);
    sub.add_option("--growth", o.growth,
                   "MixMemory growth: " + kGrowthRules.names(", ") + ", or any SIZE granularity or xF factor (default exact)")
        ->type_name("POLICY")
        ->check(parsing_validator([](const std::string& value) { parse_growth_policy(value); }, ""));
    sub.add_option("--max-live", o.max_live, "Most live bytes at once: SIZE or PCT% of free (default 50%)")
        ->check(size_validator(true));
}

ChurnRequest check(const ChurnOptionsText& o, const Globals& globals) {
    ChurnRequest q;
    q.devices = device_spec_or(globals, "0");
    q.lock_timeout = o.lock_timeout;
    ChurnOptions& c = q.options;
    c.via = kChurnVias.parse(o.via);
    c.api = kAllocApis.parse(o.api);
    const bool mix = c.via == ChurnOptions::Via::mixmemory;
    if (mix && c.api != AllocApi::device)
        throw UsageError("--via mixmemory allocates device memory through MixMemory; --api must be device");
    if (!mix && (o.slots || o.growth)) throw UsageError("--slots and --growth need --via mixmemory");
    c.sizes = parse_size_range(o.sizes);
    q.sizes = o.sizes;
    c.ops = o.ops.value_or(0);
    c.duration_s = o.duration.value_or(0);
    if (c.ops == 0 && c.duration_s == 0) c.ops = kDefaultOps;
    c.seed = o.seed;
    c.max_live = parse_size_spec(o.max_live, {false, true});
    if (o.slots) c.slots = static_cast<std::size_t>(*o.slots);
    if (o.growth) c.growth = parse_growth_policy(*o.growth);
    return q;
}

void execute(const ChurnRequest& q, ChurnResults& results, Session& session) {
    measure_rows(q.devices, q.options, session, kCommand, run_churn, results.devices, q.lock_timeout);
}

// ---------------------------------------------------------------------------
// Report

// One row: a device, and how the run churned.
struct ChurnLine {
    const ChurnDevice* device;
    const ChurnOptions* options;
};

// A percentile of latencies; null when nothing was timed.
Cell latency_cell(const Summary& s, double Summary::*figure) { return s.count ? Cell(s.*figure) : Cell(); }

std::vector<std::string_view> via_names() { return kChurnVias.name_list(); }
std::vector<std::string_view> api_names() { return kAllocApis.name_list(); }

// reuses exist with mixmemory only, the free_ columns with direct only
// (MixMemory frees inside its requests): omit_null keeps them out of the
// schema's required keys.
constexpr Column<ChurnLine> kChurnColumns[] = {
    {{"index", "cuda", FieldKind::integer}, [](const ChurnLine& l) -> Cell { return device_index(l.device->device); }},
    {{"via", "via", FieldKind::text}, [](const ChurnLine& l) -> Cell { return std::string(kChurnVias.name_of(l.options->via)); },
     Shown::always, false, nullptr, via_names},
    {{"api", "api", FieldKind::text}, [](const ChurnLine& l) -> Cell { return std::string(alloc_api_name(l.options->api)); },
     Shown::always, false, nullptr, api_names},
    {{"ops", "ops", FieldKind::integer}, [](const ChurnLine& l) -> Cell { return l.device->result.ops; }},
    {{"allocations", "allocs", FieldKind::integer}, [](const ChurnLine& l) -> Cell { return l.device->result.allocations; }},
    {{"frees", "frees", FieldKind::integer}, [](const ChurnLine& l) -> Cell { return l.device->result.frees; }},
    {{"reuses", "reuses", FieldKind::integer}, [](const ChurnLine& l) -> Cell { return l.device->result.reuses; }, Shown::always,
     true},
    {{"failures", "failures", FieldKind::integer}, [](const ChurnLine& l) -> Cell { return l.device->result.failures; }},
    {{"alloc_p50_us", "alloc p50 us", FieldKind::real, 1},
     [](const ChurnLine& l) -> Cell { return latency_cell(l.device->result.alloc_us, &Summary::median); }},
    {{"alloc_p99_us", "p99", FieldKind::real, 1},
     [](const ChurnLine& l) -> Cell { return latency_cell(l.device->result.alloc_us, &Summary::p99); }},
    {{"free_p50_us", "free p50 us", FieldKind::real, 1},
     [](const ChurnLine& l) -> Cell { return latency_cell(l.device->result.free_us, &Summary::median); }, Shown::always, true},
    {{"free_p99_us", "p99", FieldKind::real, 1},
     [](const ChurnLine& l) -> Cell { return latency_cell(l.device->result.free_us, &Summary::p99); }, Shown::always, true},
    {{"peak_live", "peak live", FieldKind::bytes}, [](const ChurnLine& l) -> Cell { return l.device->result.peak_live; }},
    {{"peak_used", "peak used", FieldKind::bytes}, [](const ChurnLine& l) -> Cell { return l.device->result.peak_used; }},
    {{"bytes_allocated", "allocated", FieldKind::bytes}, [](const ChurnLine& l) -> Cell { return l.device->result.bytes_allocated; }},
    {{"max_live", "live cap", FieldKind::bytes}, [](const ChurnLine& l) -> Cell { return l.device->result.max_live; }},
    {{"seconds", "seconds", FieldKind::real, 2}, [](const ChurnLine& l) -> Cell { return l.device->result.seconds; }},
};

bool via_mixmemory(const ChurnRequest& q) { return q.options.via == ChurnOptions::Via::mixmemory; }

constexpr Column<ChurnRequest> kDocumentColumns[] = {
    {{"seed", "", FieldKind::integer}, [](const ChurnRequest& q) -> Cell { return q.options.seed; }},
    {{"sizes", "", FieldKind::text}, [](const ChurnRequest& q) -> Cell { return q.sizes; }},
    {{"slots", "", FieldKind::integer},
     [](const ChurnRequest& q) -> Cell { return via_mixmemory(q) ? Cell(static_cast<std::uint64_t>(q.options.slots)) : Cell(); },
     Shown::always, true},
    {{"growth", "", FieldKind::text},
     [](const ChurnRequest& q) -> Cell { return via_mixmemory(q) ? Cell(q.options.growth.name()) : Cell(); }, Shown::always, true},
};

constexpr ModeLayout<ChurnLine, ChurnRequest> kLayout{kCommand, "churn", kChurnColumns, kDocumentColumns};

// With mixmemory, reuses instead of the free columns, and alloc_p50_us and
// peak_live are a request's latency and the slots' capacity.
bool churn_keeps(const Field& f, bool mix) {
    if (f.key == "reuses") return mix;
    if (f.key == "free_p50_us" || f.key == "free_p99_us") return !mix;
    return true;
}
void name_mixmemory_headers(Table& table) {
    for (Field& f : table.fields) {
        if (f.key == "alloc_p50_us") f.header = "request p50 us";
        if (f.key == "peak_live") f.header = "peak capacity";
    }
}

}  // namespace

Report churn_report(const ChurnRequest& q, const ChurnResults& results, const OutputOptions& output) {
    Report r;
    const bool mix = via_mixmemory(q);
    const auto lines = lines_per_device<ChurnLine>(results.devices, r, [&](const ChurnDevice& d) { return ChurnLine{&d, &q.options}; });
    kLayout.fill(r, lines, q, output.format, [mix](const Field& f) { return churn_keeps(f, mix); });
    if (mix) {
        name_mixmemory_headers(r.tables.back());
        r.text_after.push_back("mixmemory: " + std::to_string(q.options.slots) +
                               " slots; each op asks a random slot for a random size (a reuse when it fits, else a free and a "
                               "larger allocation); peak capacity: sum of the slots' buffers");
    } else {
        r.text_after.push_back("peak live: own accounting of live bytes; peak used: growth of cudaMemGetInfo's used memory over the start");
    }
    return r;
}

namespace {
// growth is reuse-sim's too.
constexpr ListEntry kChurnLists[] = {
    {"growth", "alloc-test churn, reuse-sim replay --growth", [] { return view_of(kGrowthRules); }},
    {"via", "alloc-test churn --via", [] { return view_of(kChurnVias); }},
};
}  // namespace

constexpr CommandDefinition kAllocChurnCommand{
    [] { return make_command(CommandFunctions<ChurnOptionsText, ChurnRequest, ChurnResults>{add_options, check, execute, churn_report}); },
    [] { return kLayout.schema(); }, kChurnLists};

}  // namespace gpumem::cli
