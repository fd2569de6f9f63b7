// gpumem alloc-test hold: allocate SIZE or PCT% of free memory, say so on
// stdout at once (the "ready" line, or with --json a ready event: JSON
// Lines), and hold it until --duration ends or SIGINT/SIGTERM.
#include <unistd.h>

#include "alloc/alloc.hpp"
#include "base/interrupt.hpp"
#include "cli/commands.hpp"
#include "core/timing.hpp"

namespace gpumem::cli {
namespace {

constexpr const char* kCommand = "alloc-test hold";

// What CLI11 fills.
struct HoldOptionsText {
    TotalText total;
    std::string chunk = "1GiB";
    std::optional<double> duration;  // seconds
};

void add_options(CLI::App& sub, HoldOptionsText& o) {
    add_total_option(sub, o.total, "How much: SIZE or PCT% of free memory (required)");
    add_value_option(sub, "--duration", o.duration, "Hold this long (default: until SIGINT/SIGTERM, then exit 130)", ValueKind::seconds,
                     1e-6, 365.0 * 86400);
    sub.add_option("--chunk", o.chunk, "Allocation piece size (default 1GiB)")->check(size_validator(false));
}

HoldRequest check(const HoldOptionsText& o, const Globals& globals) {
    HoldRequest q;
    q.devices = device_spec_or(globals, "0");
    q.total = parse_size_spec(total_text(o.total, ""), {false, true});
    q.chunk = parse_chunk(o.chunk);
    q.duration_s = o.duration.value_or(0);
    return q;
}

// The memory is held by `held` alone: leaving this function by any path
// (the end of the duration, a signal, a write to a closed pipe) frees it.
void execute(const HoldRequest& q, HoldResults& results, Session& session) {
    // The ready event and the final (or error) document are JSON Lines.
    if (session.output().format == Format::json) session.json_lines();
    const std::vector<DeviceIdentity> devices = select_cuda_devices(q.devices);
    std::vector<HeldMemory> held = recording_allocation_failure(results.allocation_failure, [&] {
        return measure_on_devices(devices, session, kCommand, [&](DeviceId device, const StopToken& stop, const ProgressFn& progress) {
            return allocate_held(device, q.total, q.chunk, stop, progress);
        });
    });
    for (std::size_t d = 0; d < devices.size(); ++d) {
        const HeldMemory& h = held[d];
        results.devices.push_back({devices[d], h.free_before, h.requested, h.bytes, h.pieces.size(), h.alloc_seconds});
    }
    session.write(hold_ready_line(q, results, session.output(), static_cast<long long>(getpid())));

    const double t0 = host_seconds();
    results.completed = sleep_interruptibly(q.duration_s);
    results.held_seconds = host_seconds() - t0;
    held.clear();  // freed before the report is written
    if (!*results.completed) throw InterruptedError();
}

// ---------------------------------------------------------------------------
// Report

struct HoldLine {
    const HoldDevice* device;
    const HoldResults* results;
};

std::vector<std::string_view> endings() { return {"duration", "signal"}; }

constexpr Column<HoldLine> kHoldColumns[] = {
    {{"index", "cuda", FieldKind::integer}, [](const HoldLine& l) -> Cell { return device_index(l.device->device); }},
    {{"uuid", "uuid", FieldKind::text}, [](const HoldLine& l) -> Cell { return l.device->device.uuid; }},
    {{"free", "free", FieldKind::bytes}, [](const HoldLine& l) -> Cell { return l.device->free_before; }},
    {{"requested", "requested", FieldKind::bytes}, [](const HoldLine& l) -> Cell { return l.device->requested; }},
    {{"held", "held", FieldKind::bytes}, [](const HoldLine& l) -> Cell { return l.device->held; }},
    {{"chunks", "chunks", FieldKind::integer}, [](const HoldLine& l) -> Cell { return l.device->chunks; }},
    {{"alloc_seconds", "alloc s", FieldKind::real, 3}, [](const HoldLine& l) -> Cell { return l.device->alloc_seconds; }},
    {{"held_seconds", "held s", FieldKind::real, 2}, [](const HoldLine& l) -> Cell { return l.results->held_seconds; }},
    {{"ended", "ended by", FieldKind::text},
     [](const HoldLine& l) -> Cell {
         const std::optional<bool>& completed = l.results->completed;
         return completed ? Cell(std::string(*completed ? "duration" : "signal")) : Cell();
     },
     Shown::always, false, nullptr, endings},
};

constexpr Column<HoldResults> kDocumentColumns[] = {
    {{"allocation_failure", "", FieldKind::record},
     [](const HoldResults& r) -> Cell { return allocation_failure_cell(r.allocation_failure); }, Shown::always, true,
     allocation_failure_schema},
};

constexpr ModeLayout<HoldLine, HoldResults> kLayout{kCommand, "hold", kHoldColumns, kDocumentColumns};

}  // namespace

std::string hold_ready_line(const HoldRequest& q, const HoldResults& results, const OutputOptions& output, long long pid) {
    std::uint64_t total = 0;
    std::string line = "ready: held ";
    Json devices = Json::array();
    for (std::size_t d = 0; d < results.devices.size(); ++d) {
        const HoldDevice& h = results.devices[d];
        total += h.held;
        line += (d ? ", " : "") + format_bytes(h.held, output.unit) + " on device " + to_string(h.device.cuda_index.value()) +
                " (" + h.device.uuid + ")";
        devices.push_back({{"index", h.device.cuda_index.value().ordinal()}, {"uuid", h.device.uuid}, {"held", h.held}});
    }
    if (output.format != Format::json) return line + "\n";
    Json event = {{"event", "ready"}};
    event["held"] = total;
    event["devices"] = devices;
    event["duration_seconds"] = q.duration_s > 0 ? Json(q.duration_s) : Json(nullptr);
    event["pid"] = pid;
    return event.dump() + "\n";
}

Report hold_report(const HoldRequest& /*q*/, const HoldResults& results, const OutputOptions& output) {
    Report r;
    std::vector<HoldLine> lines;
    for (const HoldDevice& d : results.devices) lines.push_back({&d, &results});
    kLayout.fill(r, lines, results, output.format);
    return r;
}

constexpr CommandDefinition kAllocHoldCommand{
    [] { return make_command(CommandFunctions<HoldOptionsText, HoldRequest, HoldResults>{add_options, check, execute, hold_report}); },
    [] { return kLayout.schema(); }};

}  // namespace gpumem::cli
