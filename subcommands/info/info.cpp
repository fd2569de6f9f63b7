// gpumem info: device memory through NVML, without a CUDA context. One
// sample (the default), a sample every --loop SECONDS streamed as it is
// taken, or the --pick N devices with the most free memory.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/log.hpp"

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "cli/commands.hpp"
#include "cli/terminal.hpp"
#include "core/device_inventory.hpp"
#include "info/info_fields.hpp"
#include "info/info_report.hpp"

namespace gpumem::cli {
namespace {

// What CLI11 fills.
struct InfoOptions {
    std::optional<std::string> query;  // comma list of field names
    bool processes = false;
    std::optional<std::uint64_t> pick;
    std::optional<std::string> min_free;
    std::optional<double> loop_seconds;
    std::optional<std::uint64_t> count;
};

constexpr std::uint64_t kMaxPick = 1U << 16;
constexpr std::uint64_t kMaxCount = 1ULL << 40;

// --query takes keys and nvidia-smi's names; --help shows the keys.
CLI::Validator fields_validator() {
    return parsing_validator([](const std::string& value) { parse_info_fields(value); },
                             names_validator(kInfoFields).get_description());
}

void add_options(CLI::App& sub, InfoOptions& o) {
    sub.add_option("--query", o.query,
                   "Comma list of the fields to report, in that order; nvidia-smi's names (memory.free, pci.bus_id...) also "
                   "work (gpumem --list fields describes them)")
        ->check(fields_validator());
    sub.add_flag("--processes", o.processes, "Also list compute processes with their GPU memory");
    add_unsigned_option(sub, "--pick", o.pick,
                        "Print the N devices with the most free memory, comma-separated, for CUDA_VISIBLE_DEVICES; exit 5 "
                        "if fewer qualify",
                        1, kMaxPick);
    sub.add_option("--min-free", o.min_free, "With --pick: only devices with at least this much free (SIZE or % of total)")
        ->check(size_validator(true));
    add_value_option(sub, "-l,--loop", o.loop_seconds, "Repeat every TIME (JSON: one document per line)", ValueKind::seconds, 0.01,
                     86400.0);
    add_unsigned_option(sub, "--count", o.count, "With --loop: stop after N samples (default: until interrupted)", 1, kMaxCount);
}

// Combinations that cannot mean anything: each option needs, or excludes, another.
void check_combinations(const InfoOptions& o) {
    if (o.min_free && !o.pick) throw UsageError("--min-free needs --pick");
    if (o.count && !o.loop_seconds) throw UsageError("--count needs --loop");
    if (o.pick && o.loop_seconds) throw UsageError("--pick and --loop cannot be combined");
    // --pick prints device ids only: fields and processes would be ignored.
    if (o.pick && o.query) throw UsageError("--pick and --query cannot be combined (--pick prints device ids)");
    if (o.pick && o.processes) throw UsageError("--pick and --processes cannot be combined (--pick prints device ids)");
}

// A textfile collector reads one exposition per file, and a pick is a line
// of device ids, not metrics.
void check_prometheus(const InfoOptions& o, Format format) {
    if (format != Format::prometheus) return;
    if (o.loop_seconds)
        throw UsageError("--loop cannot be combined with --format prometheus (one exposition per run: run gpumem from a timer "
                         "that writes the textfile collector's file)");
    if (o.pick) throw UsageError("--pick cannot be combined with --format prometheus (--pick prints device ids)");
}

InfoRequest check(const InfoOptions& o, const Globals& globals) {
    check_combinations(o);
    check_prometheus(o, globals.output.format);
    InfoRequest q;
    q.devices = device_spec_or(globals, "all");
    q.fields = o.query ? parse_info_fields(*o.query) : default_info_fields(globals.output.format);
    q.processes = o.processes;
    q.pick = o.pick;
    if (o.min_free) {
        q.min_free = parse_size_spec(*o.min_free, {false, true});
        // More than all of its memory free: no device could ever qualify.
        if (q.min_free->is_percent && q.min_free->percent > 100)
            throw UsageError("--min-free " + *o.min_free + " is more than the whole memory (at most 100%)");
    }
    q.loop_seconds = o.loop_seconds;
    q.count = o.count;
    if (q.pick) return q;  // a pick reads memory only
    q.snapshot = snapshot_fields_for(q.fields);
    // The table's first line and the JSON document name the driver versions.
    const Format format = globals.output.format;
    q.snapshot.versions = q.snapshot.versions || format == Format::table || format == Format::json;
    q.snapshot.processes = q.processes;
    return q;
}

void pick(const InfoRequest& q, const DeviceInventory& inventory, const std::vector<std::size_t>& positions,
          InfoResults& results, Session& session) {
    const InventorySnapshot snap = inventory.snapshot(positions, q.snapshot);
    results.picked = pick_devices(snap, q.min_free, *q.pick);
    if (results.picked->size() < *q.pick)
        throw OutOfMemoryError("only " + std::to_string(results.picked->size()) + " of the " + std::to_string(snap.devices.size()) +
                                   " devices have " + (q.min_free ? "at least " + q.min_free->text : std::string("any")) +
                                   " free memory; " + std::to_string(*q.pick) + " requested",
                               0);
    if (session.output().format == Format::json) return;  // the report holds pick and picked
    // Any other format: the line alone, for CUDA_VISIBLE_DEVICES=$(gpumem info --pick 2).
    session.write(pick_line(*results.picked) + "\n");
    session.final_document_written();
}

double seconds_since_epoch() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// --loop: each sample is written as it is taken (JSON Lines with --json, the
// CSV header once, an empty line between tables), so that nothing is left
// for the final document. Ctrl-C ends the loop after the last whole sample.
void stream_samples(const InfoRequest& q, const DeviceInventory& inventory, const std::vector<std::size_t>& positions,
                    Session& session) {
    session.json_lines();
    session.final_document_written();
    OutputOptions output = session.output();
    for (std::uint64_t i = 0; !q.count || i < *q.count; ++i) {
        if (i > 0) sleep_interruptibly(*q.loop_seconds);
        throw_if_interrupted();
        InfoResults sample;
        sample.snapshot = inventory.snapshot(positions, q.snapshot);
        sample.timestamp = seconds_since_epoch();
        Report report = info_report(q, sample, output);
        report.origin = origin_record(session.globals().origin);  // each sample is a whole document
        if (i == 0)
            for (const auto& w : report.warnings) log::warn("{}", w);
        session.write((i > 0 && output.format == Format::table ? "\n" : "") + render(report, output));
        if (output.format == Format::csv) output.header = false;
    }
}

void execute(const InfoRequest& q, InfoResults& results, Session& session) {
    DeviceInventory inventory = DeviceInventory::open();
    const std::vector<std::size_t> positions = inventory.resolve(q.devices);
    if (q.loop_seconds) {
        stream_samples(q, inventory, positions, session);
        return;
    }
    inventory.skip_nvml_shutdown();  // one query and the process ends
    if (q.pick) {
        pick(q, inventory, positions, results, session);
        return;
    }
    results.snapshot = inventory.snapshot(positions, q.snapshot);
}

}  // namespace

namespace {
constexpr ListEntry kInfoLists[] = {{"fields", "info --query", info_fields_view}};
}  // namespace

constexpr CommandDefinition kInfoCommand{
    [] { return make_command(CommandFunctions<InfoOptions, InfoRequest, InfoResults>{add_options, check, execute, info_report}); },
    info_schema, kInfoLists, Formats{Format::prometheus}};

}  // namespace gpumem::cli
