// gpumem reuse-sim max-batch: its options (the recordings or the program
// that makes them, the search's bounds, --confirm, the cap and the grid) and
// its check(), which finds every usage error before any file is read or
// anything runs, then its row of the command table. execute() is in
// reuse_sim_max_batch.cpp, the report in reuse_sim_max_batch_report.cpp.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "reuse_sim/reuse_sim_max_batch.hpp"
#include "reuse_sim/reuse_sim_options.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

// --jobs N: runs of Python programs at once, each a process on a GPU.
constexpr std::uint64_t kMaxJobs = 64;

struct MaxBatchOptions : ProgramOptions {
    std::vector<std::string> batch_traces;  // --batch-trace B=FILE, repeatable
    std::optional<std::string> output;      // -o FILE: the recordings kept
    std::optional<std::string> record_batches;
    bool no_refine = false;
    bool no_fork_server = false;
    std::optional<std::string> headroom;
    std::optional<std::uint64_t> max_runs;
    std::optional<std::string> jobs;
    std::optional<std::uint64_t> repeats;
    std::optional<std::uint64_t> multiple_of;
    bool confirm = false;
    CapOptions cap;
    TorchOptions torch;
    GridOptions grid;
    std::optional<std::string> costs;
    std::optional<std::string> plot;
};

void add_max_batch_options(CLI::App& sub, MaxBatchOptions& o) {
    // What an answer's notes mean, where a user reads first.
    add_footer(sub,
               "An answer ran every time it was run (--repeats). \"varies\": a batch that\n"
               "fitted in some runs only. \"held:\": under DDP over NCCL, every run held DDP's\n"
               "first gradient buckets as late as NCCL's watchdog may free them.\n");
    sub.add_option("--batch-trace", o.batch_traces,
                   "A recording at batch B; two at least")
        ->type_name("B=FILE");
    sub.add_option("-o,--output", o.output, "Keep the recordings made, as FILE with .bsN")
        ->type_name("FILE");
    sub.add_option("--record-batches", o.record_batches,
                   "Batches recorded first (default 4,8)")
        ->type_name("LIST");
    sub.add_flag("--no-refine", o.no_refine,
                 "Record only at --record-batches; no checks");
    add_unsigned_option(sub, "--max-runs", o.max_runs,
                        "Most real runs of the program (default " + std::to_string(MaxBatchRequest::kDefaultMaxRuns) + ")",
                        2, 1000);
    sub.add_option("--jobs", o.jobs, "Runs at once: N, or auto (default auto: as free GPU memory and cores allow)")
        ->type_name("N");
    sub.add_flag("--no-fork-server", o.no_fork_server,
                 "Start each run of python SCRIPT afresh, not forked");
    add_unsigned_option(sub, "--repeats", o.repeats, "Runs an answer must pass (default 2; 3 where timing matters)", 1,
                        20);
    add_unsigned_option(sub, "--multiple-of", o.multiple_of, "Search and run only multiples of N (a length's 64, a page)", 1,
                        std::uint64_t{1} << 20);
    sub.add_option("--headroom", o.headroom, "Keep the modelled peak this far below the cap")
        ->type_name("SIZE");
    sub.add_flag("--confirm", o.confirm,
                 "Also run at the answer and the next batch");
    add_cap_options(sub, o.cap, true);
    add_grid_options(sub, o.grid, false);
    add_torch_options(sub, o.torch, false);
    add_costs_option(sub, o.costs);
    add_plot_option(sub, o.plot, "Draw peak reserved against the batch (SVG)");
    add_max_entries_option(sub, o);
    add_program_option(sub, o, "The program, {batch} where its batch goes");
}

// --batch-trace B=FILE: the batch, a positive integer, and a file that exists.
std::pair<std::uint64_t, std::string> batch_trace(const std::string& text) {
    const std::size_t eq = text.find('=');
    const std::string form = "--batch-trace '" + text + "': expected B=FILE, the batch the recording ran at and its file (8=run.bs8.pickle)";
    if (eq == std::string::npos || eq == 0) throw UsageError(form);
    std::uint64_t batch = 0;
    try {
        batch = parse_unsigned(text.substr(0, eq), std::uint64_t{1} << 40);
    } catch (const UsageError&) {
        throw UsageError(form);
    }
    if (batch == 0) throw UsageError("--batch-trace '" + text + "': the batch must be at least 1");
    const std::string file = text.substr(eq + 1);
    if (file.empty()) throw UsageError("--batch-trace '" + text + "': empty file name");
    return {batch, file};
}

// --record-batches B1,B2[,...]: two distinct positive batches at least, ascending.
std::vector<std::uint64_t> record_batches(const std::string& text) {
    std::vector<std::uint64_t> batches;
    for (std::string_view word : split(text, ',')) {
        try {
            batches.push_back(parse_unsigned(std::string(word), std::uint64_t{1} << 40));
        } catch (const UsageError&) {
            throw UsageError("--record-batches '" + text + "': expected batches B1,B2[,...], positive integers");
        }
        if (batches.back() == 0) throw UsageError("--record-batches '" + text + "': a batch must be at least 1");
    }
    std::sort(batches.begin(), batches.end());
    if (std::adjacent_find(batches.begin(), batches.end()) != batches.end())
        throw UsageError("--record-batches '" + text + "': batch " + std::to_string(*std::adjacent_find(batches.begin(), batches.end())) +
                         " given twice");
    if (batches.size() < 2) throw UsageError("--record-batches '" + text + "': the model needs two batches at least");
    return batches;
}

// The end-to-end form's program: its one knob ({batch}, {seq}, any
// {NAME}), --multiple-of, and the first values to record.
void check_program(const MaxBatchOptions& o, MaxBatchRequest& m) {
    m.program = o.program;
    const std::vector<std::string> knobs = knob_placeholders(m.program);
    if (knobs.empty())
        throw UsageError("max-batch: the program after -- has no {batch}: write it where the batch size goes (-- python train.py --bs "
                         "{batch}), or {NAME} for another size (--max-length {seq}); gpumem runs it at several values");
    if (knobs.size() > 1)
        throw UsageError("max-batch searches one size at a time; the program after -- names " + std::to_string(knobs.size()) + " ({" +
                         join(knobs, "}, {") + "}): write the others' values (two calls answer both)");
    m.knob = knobs.front();
    m.multiple_of = o.multiple_of.value_or(1);
    // A batch's first recordings are small; a length's, a few of its usual
    // values; with --multiple-of N, each rounded up to a multiple of N
    // (N and 2N where they would meet).
    m.record_batches = o.record_batches ? record_batches(*o.record_batches)
                       : m.knob == "batch" ? std::vector<std::uint64_t>{4, 8}
                                           : std::vector<std::uint64_t>{128, 256};
    const std::uint64_t n = m.multiple_of;
    if (o.record_batches) {
        for (const std::uint64_t value : m.record_batches)
            if (value % n != 0)
                throw UsageError("--record-batches " + *o.record_batches + ": " + std::to_string(value) + " is no multiple of --multiple-of " +
                                 std::to_string(n) + ": every run is at a multiple");
    } else if (n > 1) {
        for (std::uint64_t& value : m.record_batches) value = (value + n - 1) / n * n;
        if (m.record_batches.front() == m.record_batches.back()) m.record_batches = {n, 2 * n};
    }
}

// The recordings (--batch-trace) or the program that makes them, checked
// whole before any file is read or anything runs.
MaxBatchRequest check_max_batch_input(const MaxBatchOptions& o) {
    MaxBatchRequest m;
    if (!o.batch_traces.empty() && !o.program.empty())
        throw UsageError("max-batch reads recordings (--batch-trace) or records the program after --, not both");
    if (o.batch_traces.empty() && o.program.empty())
        throw UsageError("max-batch needs recordings at two batches (--batch-trace B=FILE, twice) or the program to record after --: "
                         "gpumem reuse-sim max-batch --capacity SIZE -- CMD ... {batch} ...");
    for (const std::string& text : o.batch_traces) {
        m.traces.push_back(batch_trace(text));
        for (std::size_t i = 0; i + 1 < m.traces.size(); ++i)
            if (m.traces[i].first == m.traces.back().first)
                throw UsageError("--batch-trace: batch " + std::to_string(m.traces.back().first) + " given twice (" + m.traces[i].second +
                                 ", " + m.traces.back().second + ")");
    }
    if (!m.traces.empty() && m.traces.size() < 2)
        throw UsageError("max-batch needs recordings at two batches at least: give --batch-trace B=FILE again (one given)");
    for (const auto& [batch, file] : m.traces) {
        if (file == "-") throw UsageError("--batch-trace " + std::to_string(batch) + "=-: max-batch reads files, not standard input");
        struct stat st {};
        if (::stat(file.c_str(), &st) != 0) throw UsageError(file + ": cannot open trace: " + std::strerror(errno));
        if (S_ISDIR(st.st_mode)) throw UsageError(file + ": cannot read a trace from a directory");
    }
    if (!m.traces.empty()) {
        if (o.output) throw UsageError("--output keeps the recordings max-batch makes of the program after --; --batch-trace gives them made");
        if (o.record_batches) throw UsageError("--record-batches chooses the batches max-batch records the program at: give the program after --");
        if (o.no_refine) throw UsageError("--no-refine: max-batch records again only the program after --; --batch-trace gives every recording");
        if (o.confirm) throw UsageError("--confirm runs the program at the answer and the next batch: give the program after -- (with {batch})");
        if (o.max_entries) throw UsageError("--max-entries goes with the program max-batch records (after --)");
        if (o.max_runs) throw UsageError("--max-runs bounds the runs of the program after --; --batch-trace gives every recording");
        if (o.jobs) throw UsageError("--jobs sets how many runs of the program after -- go at once; --batch-trace runs nothing");
        if (o.repeats) throw UsageError("--repeats sets the runs an answer needs: give the program after -- (with {batch})");
        if (o.no_fork_server) throw UsageError("--no-fork-server is about runs of the program after --; --batch-trace runs nothing");
        return m;
    }
    check_program(o, m);
    m.refine = !o.no_refine;
    m.fork_server = !o.no_fork_server;
    if (o.max_runs) m.max_runs = static_cast<unsigned>(*o.max_runs);
    m.max_runs_given = o.max_runs.has_value();
    if (m.max_runs < m.record_batches.size())
        throw UsageError("--max-runs " + std::to_string(m.max_runs) + " is fewer than the " + std::to_string(m.record_batches.size()) +
                         " batches of --record-batches: the first recordings alone need that many runs");
    m.settings = check_real_run_cap(o.cap, o);
    m.settings.hold_late = true;  // every run stands for the worst case NCCL allows (record_run.hpp)
    m.confirm = o.confirm;
    if (o.jobs && *o.jobs != "auto") {
        try {
            m.jobs = static_cast<unsigned>(parse_unsigned(*o.jobs, kMaxJobs));
        } catch (const UsageError&) {
            throw UsageError("--jobs '" + *o.jobs + "': expected a number of runs at once (1 to " + std::to_string(kMaxJobs) + ") or auto");
        }
        if (*m.jobs == 0) throw UsageError("--jobs 0: at least one run at a time (or auto)");
    }
    if (o.repeats) m.repeats = static_cast<unsigned>(*o.repeats);
    if (o.output) {
        if (o.output->empty()) throw UsageError("--output: empty file name");
        for (std::uint64_t batch : m.record_batches) (void)check_record_file(batch_file_name(*o.output, m.knob, batch), m.program, "--output");
        m.keep = check_record_file(*o.output, m.program, "--output");
    }
    return m;
}

// reuse-sim max-batch: recordings at several batches instead of one input;
// the grid of --sweep or --full-grid, else the recorded setting and
// expandable segments.
MaxBatchRequest check_max_batch(const MaxBatchOptions& o, const Globals& /*globals*/) {
    MaxBatchRequest q = check_max_batch_input(o);
    q.setup.strategies = {&rs::kStrategies.row("torch-caching")};
    check_torch_options(o.torch, q.setup);
    q.setup.capacity = check_capacity(o.cap);
    q.warnings = bare_capacity_warnings(o.cap);
    if (q.setup.capacity == rs::kUnlimited)
        throw UsageError("max-batch needs the memory the program must fit in: --capacity SIZE, or --memory-fraction F with --device-total SIZE");
    q.headroom = o.headroom ? parse_size(*o.headroom, true) : 0;
    if (q.headroom >= q.setup.capacity)
        throw UsageError("--headroom " + *o.headroom + " leaves nothing of the cap (" + format_bytes(q.setup.capacity) + ")");
    q.setup.costs = checked_path(o.costs, "--costs");
    if (o.grid.sweeps.empty() && !o.grid.full_grid) {
        // The recorded setting and expandable segments (the other half of
        // the answer: "...: 61; with expandable_segments:True: 66").
        q.grid.axes = rs::grid_axes({"expandable_segments=false,true"}, false, true);
        q.grid.all_settings = o.grid.all_settings;
    } else {
        q.grid = check_grid(o.grid, q.setup.capacity, false);
    }
    std::vector<std::string> inputs = named_paths(o.program);
    if (o.costs) inputs.push_back(*o.costs);
    for (const auto& batch_trace : q.traces) inputs.push_back(batch_trace.second);
    std::optional<KeptRecordings> kept;
    if (q.keep) kept = KeptRecordings{*q.keep, "-o keeps the recordings as " + tagged_file_name(base_name(*q.keep), "bsN")};
    q.plot = check_plot(o.plot, inputs, kept);
    return q;
}

}  // namespace

// The job's own options, check, execute, report and schema.
constexpr CommandDefinition kReuseSimMaxBatchCommand{
    [] {
        return make_command(CommandFunctions<MaxBatchOptions, MaxBatchRequest, MaxBatchResults>{add_max_batch_options, check_max_batch,
                                                                                                execute_max_batch, max_batch_report});
    },
    max_batch_document_schema, {}, {},
    "-d/--device: under max-batch the program chooses its GPU (CUDA_VISIBLE_DEVICES selects them)"};

}  // namespace gpumem::cli
