// gpumem alloc-test: five modes (latency, max, fill, churn, hold), each a
// Command of its own in alloc_<mode>.cpp (options, check, execute, report)
// and a row of app.cpp's table. This header holds what the modes share, and
// what the CPU tests call without a GPU: the checked requests, the results
// and the pure reports.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/alloc_plan.hpp"
#include "base/device_spec.hpp"
#include "base/sizes.hpp"
#include "bench/alloc_modes.hpp"
#include "cli/command.hpp"
#include "cli/lock_wait.hpp"
#include "core/cuda_devices.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"

namespace gpumem::cli {

// ---------------------------------------------------------------------------
// Shared by the modes

// "device 0: NVIDIA H200 (GPU-...)": the line above each mode's table.
std::string device_line(const DeviceIdentity& device);
// The `index` column: the CUDA ordinal.
Cell device_index(const DeviceIdentity& device);

// A comma list of a table's names under alloc-test's rules (--api,
// --pattern); the help shows the choices as {a,b,all}.
template <typename T>
CLI::Validator list_validator(const NameTable<T>& table) {
    return parsing_validator([&table](const std::string& value) { table.parse_list(value, kAllocTestListRules); },
                             names_validator(table, true).get_description());
}

// fill's and hold's TOTAL: positional, or --total (scripts' older spelling,
// hidden from --help so that the page names it once). Both given is
// gpumem's usage error, not CLI11's count of values.
struct TotalText {
    std::optional<std::string> positional, option;
};
void add_total_option(CLI::App& sub, TotalText& total, const std::string& help);
// The TOTAL given, or `fallback` (empty: TOTAL is required).
std::string total_text(const TotalText& total, const std::string& fallback);

// A --chunk of fill and hold: a SIZE that is a whole number of 64-bit words.
std::uint64_t parse_chunk(const std::string& text);

// Progress on stderr for a single device on a terminal; several device
// threads would garble one line, so they run without.
class ProgressSink {
public:
    ProgressSink(const Session& session, std::size_t device_count, std::string command);
    ProgressFn fn();
    void finish() { bar_.reset(); }

private:
    bool enabled_;
    std::size_t columns_;  // stderr's width
    std::string command_;
    std::string phase_;
    std::unique_ptr<Progress> bar_;
};

// Runs `measure(device, stop, progress)` on every device (run_on_devices),
// with progress for a single device.
template <typename Measure>
auto measure_on_devices(const std::vector<DeviceIdentity>& devices, const Session& session, const char* command,
                        Measure measure) {
    std::vector<DeviceId> ordinals;
    ordinals.reserve(devices.size());
    for (const DeviceIdentity& d : devices) ordinals.push_back(d.cuda_index.value());
    ProgressSink sink(session, devices.size(), command);
    auto results = run_on_devices(ordinals, [&](DeviceId device, const StopToken& stop) { return measure(device, stop, sink.fn()); });
    sink.finish();
    return results;
}

// A device a mode measured: who it is, and what the mode's bench function
// (run_latency, run_max...) returned there.
template <typename Result>
struct MeasuredDevice {
    DeviceIdentity device;
    Result result;
};
// Every device's row, in the order of -d.
template <typename Row>
struct MeasuredDevices {
    std::vector<Row> devices;
};

// Runs the mode's bench function `run` with `options` on the devices of
// `spec`, each result added to `rows` as Row{identity, result}.
template <typename Row, typename Options, typename Result>
void measure_rows(const DeviceSpec& spec, const Options& options, const Session& session, const char* command,
                  Result (*run)(DeviceId, const Options&, const StopToken&, const ProgressFn&), std::vector<Row>& rows,
                  double lock_timeout) {
    const std::vector<DeviceIdentity> devices = select_cuda_devices(spec);
    lock_for_measuring(devices, lock_timeout, session);  // no other gpumem measuring these GPUs meanwhile
    auto measured = measure_on_devices(devices, session, command, [&](DeviceId device, const StopToken& stop, const ProgressFn& progress) {
        return run(device, options, stop, progress);
    });
    for (std::size_t d = 0; d < devices.size(); ++d) rows.push_back(Row{devices[d], std::move(measured[d])});
}

// One line of a mode's table per device, made by `line(device)`; each device
// is also named above the tables (device_line).
template <typename Line, typename Device, typename MakeLine>
std::vector<Line> lines_per_device(const std::vector<Device>& devices, Report& r, MakeLine line) {
    std::vector<Line> lines;
    for (const Device& d : devices) {
        lines.push_back(line(d));
        r.text_before.push_back(device_line(d.device));
    }
    return lines;
}

// The shape of a mode's document: its command, one table of Line rows
// under `table`, and top-level fields from a Document. The report and the
// schema (--schema) both come from it, so they cannot drift apart.
template <typename Line, typename Document>
struct ModeLayout {
    const char* command;
    const char* table;
    Columns<Line> lines;
    Columns<Document> fields;

    // Fills `r` (its text lines are the mode's own): the command, the table
    // of `rows` with the columns `keep` keeps, and the document's fields.
    template <typename Keep>
    void fill(Report& r, const std::vector<Line>& rows, const Document& document, Format format, Keep keep) const {
        r.command = command;
        r.tables.push_back(make_table(table, lines, rows, format, keep));
        r.fields = make_record(fields, document);
    }
    void fill(Report& r, const std::vector<Line>& rows, const Document& document, Format format) const {
        fill(r, rows, document, format, [](const Field&) { return true; });
    }
    DocumentSchema schema() const { return {command, {{table, lines.schema()}}, fields.schema()}; }
};

// What a mode's document fields are made from: the request and the results.
template <typename Request, typename Results>
struct ModeDocument {
    const Request& request;
    const Results& results;
};

// A chunked allocation (fill, hold) that failed part way: the JSON
// document's allocation_failure.
struct AllocationFailure {
    DeviceId device{0};
    std::uint64_t requested = 0, allocated = 0, pieces = 0;
};
// The allocation_failure field (null without a failure), and its keys for the schema.
Cell allocation_failure_cell(const std::optional<AllocationFailure>& failure);
const FieldSchemaSet& allocation_failure_schema();

// Calls `allocate()`; a PartialAllocationError is recorded in `failure`
// before it propagates, so that the error document still says how far it got.
template <typename Allocate>
auto recording_allocation_failure(std::optional<AllocationFailure>& failure, Allocate allocate) -> decltype(allocate()) {
    try {
        return allocate();
    } catch (const PartialAllocationError& e) {
        failure = AllocationFailure{e.device(), e.requested_bytes(), e.allocated_bytes(), e.pieces()};
        throw;
    }
}

// What check() makes of a mode's options: the devices (-d) and the mode's
// options for the bench functions.
template <typename ModeOptions>
struct ModeRequest {
    DeviceSpec devices;
    ModeOptions options;
    double lock_timeout = kDefaultLockTimeout;  // --lock-timeout: the timed modes take the GPU's lock (hold does not)
};

// ---------------------------------------------------------------------------
// latency

struct LatencyRequest : ModeRequest<LatencyOptions> {
    std::optional<std::string> save_costs;  // --save-costs FILE (one device)
};
using LatencyDevice = MeasuredDevice<LatencyResult>;
struct LatencyResults {
    std::vector<LatencyDevice> devices;
    bool costs_written = false;  // the --save-costs file holds the table
};
Report latency_report(const LatencyRequest& q, const LatencyResults& results, const OutputOptions& output);

// ---------------------------------------------------------------------------
// max

using MaxRequest = ModeRequest<MaxOptions>;
using MaxDevice = MeasuredDevice<MaxResult>;
using MaxResults = MeasuredDevices<MaxDevice>;
Report max_report(const MaxRequest& q, const MaxResults& results, const OutputOptions& output);

// ---------------------------------------------------------------------------
// fill

using FillRequest = ModeRequest<FillOptions>;
struct FillDevice {
    DeviceIdentity device;
    FillResult result;
    std::optional<double> peak_bps = std::nullopt;  // NVML's peak memory bandwidth
};
struct FillResults {
    std::vector<FillDevice> devices;
    std::optional<AllocationFailure> allocation_failure;
};
Report fill_report(const FillRequest& q, const FillResults& results, const OutputOptions& output);
// What a failed --verify says on stderr (the first bad word, where, and what
// was read); empty when every word read back right.
std::string fill_failure_message(const FillResults& results);

// ---------------------------------------------------------------------------
// churn

struct ChurnRequest : ModeRequest<ChurnOptions> {
    std::string sizes;  // --sizes as written (the document's `sizes`)
};
using ChurnDevice = MeasuredDevice<ChurnResult>;
using ChurnResults = MeasuredDevices<ChurnDevice>;
Report churn_report(const ChurnRequest& q, const ChurnResults& results, const OutputOptions& output);

// ---------------------------------------------------------------------------
// hold

struct HoldRequest {
    DeviceSpec devices;
    SizeSpec total;
    std::uint64_t chunk = 1ULL << 30;
    double duration_s = 0;  // 0: until a signal
};
// What one device held (the memory itself is freed before the report).
struct HoldDevice {
    DeviceIdentity device;
    std::uint64_t free_before = 0, requested = 0, held = 0, chunks = 0;
    double alloc_seconds = 0;
};
struct HoldResults {
    std::vector<HoldDevice> devices;
    double held_seconds = 0;
    std::optional<bool> completed;  // the duration ran out (false: a signal ended it); empty while held
    std::optional<AllocationFailure> allocation_failure;
};
// The line written once everything is held: "ready: held 4 GiB on device 0
// (GPU-...)", or with JSON a one-line {"event":"ready",...} event.
std::string hold_ready_line(const HoldRequest& q, const HoldResults& results, const OutputOptions& output, long long pid);
Report hold_report(const HoldRequest& q, const HoldResults& results, const OutputOptions& output);

}  // namespace gpumem::cli
