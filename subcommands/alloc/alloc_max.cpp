// gpumem alloc-test max: the largest single cudaMalloc (searched down from the total) and
// the total obtainable in chunks with cuda_memtest's back-off.
#include "alloc/alloc.hpp"
#include "cli/commands.hpp"
#include "cli/lock_wait.hpp"

namespace gpumem::cli {
namespace {

constexpr const char* kCommand = "alloc-test max";

// What CLI11 fills.
struct MaxOptionsText {
    double lock_timeout = kDefaultLockTimeout;  // --lock-timeout
    std::string granularity = "2MiB";
    std::string chunk = "1GiB";
};

void add_options(CLI::App& sub, MaxOptionsText& o) {
    add_lock_timeout_option(sub, o.lock_timeout);
    sub.add_option("--granularity", o.granularity, "Precision of the search and smallest back-off piece (default 2MiB)")
        ->check(size_validator(false));
    sub.add_option("--chunk", o.chunk, "Piece size for the total obtainable (default 1GiB)")->check(size_validator(false));
}

MaxRequest check(const MaxOptionsText& o, const Globals& globals) {
    MaxRequest q;
    q.devices = device_spec_or(globals, "0");
    q.lock_timeout = o.lock_timeout;
    q.options.granularity = parse_size(o.granularity);
    q.options.chunk = parse_size(o.chunk);
    if (q.options.chunk < q.options.granularity) throw UsageError("--chunk must not be smaller than --granularity");
    return q;
}

void execute(const MaxRequest& q, MaxResults& results, Session& session) {
    measure_rows(q.devices, q.options, session, kCommand, run_max, results.devices, q.lock_timeout);
}

// ---------------------------------------------------------------------------
// Report

// One row: a device, and the chunk size the run used.
struct MaxLine {
    const MaxDevice* device;
    std::uint64_t chunk;
};

Cell percent_of(std::uint64_t part, std::uint64_t whole) {
    return whole ? Cell(100.0 * static_cast<double>(part) / static_cast<double>(whole)) : Cell();
}

constexpr Column<MaxLine> kMaxColumns[] = {
    {{"index", "cuda", FieldKind::integer}, [](const MaxLine& l) -> Cell { return device_index(l.device->device); }},
    {{"total", "total", FieldKind::bytes}, [](const MaxLine& l) -> Cell { return l.device->result.total; }},
    {{"free", "free", FieldKind::bytes}, [](const MaxLine& l) -> Cell { return l.device->result.free_before; }},
    {{"largest_single", "largest single", FieldKind::bytes}, [](const MaxLine& l) -> Cell { return l.device->result.largest_single; }},
    {{"largest_pct_free", "% free", FieldKind::percent, 1},
     [](const MaxLine& l) -> Cell { return percent_of(l.device->result.largest_single, l.device->result.free_before); }},
    {{"chunk", "chunk", FieldKind::bytes}, [](const MaxLine& l) -> Cell { return l.chunk; }},
    {{"chunks", "chunks", FieldKind::integer}, [](const MaxLine& l) -> Cell { return l.device->result.chunks.full_chunks; }},
    {{"tail_pieces", "tail", FieldKind::integer}, [](const MaxLine& l) -> Cell { return l.device->result.chunks.tail_pieces; }},
    {{"obtainable", "obtainable", FieldKind::bytes}, [](const MaxLine& l) -> Cell { return l.device->result.chunks.total(); }},
    {{"obtainable_pct_free", "% free", FieldKind::percent, 1},
     [](const MaxLine& l) -> Cell { return percent_of(l.device->result.chunks.total(), l.device->result.free_before); }},
    {{"obtainable_pct_total", "% total", FieldKind::percent, 1},
     [](const MaxLine& l) -> Cell { return percent_of(l.device->result.chunks.total(), l.device->result.total); }},
    {{"shortfall", "short of free", FieldKind::bytes},
     [](const MaxLine& l) -> Cell {
         const MaxResult& r = l.device->result;
         return r.free_before > r.chunks.total() ? r.free_before - r.chunks.total() : std::uint64_t{0};
     }},
    {{"probes", "probes", FieldKind::integer}, [](const MaxLine& l) -> Cell { return std::int64_t{l.device->result.probes}; }},
};

constexpr Column<MaxRequest> kDocumentColumns[] = {
    {{"granularity", "", FieldKind::bytes}, [](const MaxRequest& q) -> Cell { return q.options.granularity; }},
};

constexpr ModeLayout<MaxLine, MaxRequest> kLayout{kCommand, "max", kMaxColumns, kDocumentColumns};

}  // namespace

Report max_report(const MaxRequest& q, const MaxResults& results, const OutputOptions& output) {
    Report r;
    const auto lines = lines_per_device<MaxLine>(results.devices, r, [&](const MaxDevice& d) { return MaxLine{&d, q.options.chunk}; });
    kLayout.fill(r, lines, q, output.format);
    r.text_after.push_back("largest single: cudaMalloc searched down from the total in doubling steps, then bisected, to " + format_bytes(q.options.granularity) +
                           "; obtainable: pieces of the chunk until one fails, then halves down to the granularity. "
                           "free is cudaMemGetInfo's, with gpumem's own context (~0.5 GiB) already counted as used.");
    return r;
}

constexpr CommandDefinition kAllocMaxCommand{
    [] { return make_command(CommandFunctions<MaxOptionsText, MaxRequest, MaxResults>{add_options, check, execute, max_report}); },
    [] { return kLayout.schema(); }};

}  // namespace gpumem::cli
