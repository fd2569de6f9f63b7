// gpumem reuse-sim record: its options (-o FILE, the cap of the real run,
// what the hook records, the program after --), its check(), its execute()
// (the program run under the recording hook, what it wrote said on stderr,
// its exit status passed on), its report, and its row of the command table.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/commands.hpp"
#include "reuse_sim/reuse_sim_options.hpp"
#include "reuse_sim/reuse_sim_record.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

struct RecordOptions : ProgramOptions {
    std::string output;  // -o FILE
    CapOptions cap;      // no --device-total: the real run's cap
    bool python_stacks = false;
};

void add_record_options(CLI::App& sub, RecordOptions& o) {
    add_footer(sub);
    sub.add_option("-o,--output", o.output,
                   "The snapshot to write (and FILE.stats.json)")
        ->type_name("FILE")
        ->required();
    add_cap_options(sub, o.cap, false);
    add_max_entries_option(sub, o);
    sub.add_flag("--python-stacks", o.python_stacks,
                 "Also record Python stacks (for memory_viz)");
    add_program_option(sub, o, "The program to record");
}

// reuse-sim record: runs a program and records it, nothing else.
RecordRequest check_record(const RecordOptions& o, const Globals& /*globals*/) {
    if (o.program.empty()) throw UsageError("reuse-sim record needs the program to run after --: gpumem reuse-sim record -o FILE -- CMD [ARGS...]");
    RecordRequest q{check_real_run_cap(o.cap, o), o.program, bare_capacity_warnings(o.cap)};
    q.settings.file = check_record_file(o.output, o.program);
    q.settings.python_stacks = o.python_stacks;
    return q;
}

// The allocator settings the process ran under, as its torch read them.
std::string alloc_conf_text(const RecordedProcess& p) {
    const AllocConfRead read = read_alloc_conf(p.alloc_conf, p.cuda_alloc_conf, p.torch_version);
    if (!read.value) return read.ignored.empty() ? std::string() : ", " + read.ignored + " set but not read by torch " + p.torch_version.value_or("");
    std::string text = ", under " + read.variable + "=" + *read.value;
    if (!read.ignored.empty()) text += "; " + read.ignored + " set too, not read";
    return text;
}

std::string process_line(const RecordedProcess& p, std::size_t processes) {
    std::string line = "recorded " + *p.snapshot + " (" + rs::group_digits(p.events) + " events";
    if (p.rank) line += ", rank " + std::to_string(*p.rank);
    // Several processes: which one wrote it (the order they first used CUDA).
    if (processes > 1) line += ", process " + std::to_string(p.order.value_or(1)) + ", pid " + std::to_string(p.pid);
    if (!p.why.empty() && p.why != "exit") line += ", ended by " + p.why;
    line += alloc_conf_text(p);
    return line + "); torch.cuda.memory_stats() in " + p.stats.value_or("?");
}

// The program's own set_per_process_memory_fraction after gpumem's cap:
// the recording ran under the program's, and its statistics say so.
std::optional<std::string> replaced_cap_line(const RecordedProcess& p) {
    std::uint32_t device = 0;
    for (const MemoryFractionCall& c : p.fraction_calls)
        if (c.by_gpumem) device = c.device;
    const std::optional<CapInForce> cap = cap_in_force(p.fraction_calls, device);
    if (!cap || !cap->replaced_gpumem) return std::nullopt;
    return "the program replaced gpumem's cap (" + exact_size_text(cap->gpumem_allowed) + ") with its own: " +
           "set_per_process_memory_fraction(" + format_decimal(cap->call.fraction, 4) + ") on device " + std::to_string(cap->call.device) +
           ", " + exact_size_text(cap->call.allowed_memory_maximum) + "; " + *p.snapshot + " was recorded under the program's, as " +
           stats_file_name(*p.snapshot) + " says";
}

}  // namespace

void execute_record(const RecordRequest& q, RecordResults& r, Session& session) {
    r.run = run_recorded(q.command, q.settings, process::ChildOptions{});
    const ChildRun& run = *r.run;
    session.set_exit_status(run.exit_status);
    const std::vector<const RecordedProcess*> recorded = run.recorded();
    std::vector<std::string> written;
    for (const RecordedProcess* p : recorded) {
        say_on_stderr(session, process_line(*p, recorded.size()));
        if (const std::optional<std::string> replaced = replaced_cap_line(*p)) say_on_stderr(session, *replaced);
        // The hook gives each process its own file; two claiming one would be a bug to see, not a file lost unsaid.
        if (std::find(written.begin(), written.end(), *p->snapshot) != written.end())
            say_on_stderr(session, "warning: " + *p->snapshot + " was written by more than one process; the last one's is kept");
        written.push_back(*p->snapshot);
    }
    if (recorded.size() > 1) say_on_stderr(session, std::to_string(recorded.size()) + " processes recorded: " + join(written, ", "));
    if (!recorded.empty()) return;
    // Nothing recorded: the program's own failure keeps its status; a
    // program that succeeded without recording anything is gpumem's failure.
    if (run.exit_status != 0) {
        // A program that never started is gpumem's error to say, as one.
        say_on_stderr(session, (run.start_error ? "error: " : "") + nothing_recorded_reason(run));
        return;
    }
    throw Error(nothing_recorded_reason(run));
}

Report record_report(const RecordRequest& q, const RecordResults& /*r*/, const OutputOptions& /*output*/) {
    return job_report("reuse-sim record", q.warnings, {});
}

// record writes no document of its own: the command and the warnings.
DocumentSchema record_document_schema() { return {"reuse-sim record", {}, {}}; }

// The job's own options, check, execute, report and schema.
constexpr CommandDefinition kReuseSimRecordCommand{
    [] { return make_command(CommandFunctions<RecordOptions, RecordRequest, RecordResults>{add_record_options, check_record, execute_record, record_report}); },
    record_document_schema, {}, {},
    "-d/--device: under reuse-sim record the program chooses its GPU (CUDA_VISIBLE_DEVICES selects them)",
    "reuse-sim record passes the program's stdout through (gpumem's own lines go to stderr): no --json, --csv or --format"};

}  // namespace gpumem::cli
