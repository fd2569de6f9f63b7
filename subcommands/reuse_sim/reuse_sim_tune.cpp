// gpumem reuse-sim tune: its options (the shared groups of
// reuse_sim_options.hpp and its own: the grid, --confirm and the program it
// reruns), its check(), its execute(), then its row of the command table.
// The grid's replays are in reuse_sim_tune_replays.cpp, --confirm's runs in
// reuse_sim_tune_confirm.cpp, the report in reuse_sim_tune_report.cpp.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/record_plan.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/cuda_devices.hpp"
#include "reuse_sim/reuse_sim_options.hpp"
#include "reuse_sim/reuse_sim_tune.hpp"
#include "reuse_sim/strategy.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

struct TuneOptions : ProgramOptions {
    InputOptions input;
    TorchOptions torch;
    CapOptions cap;
    GridOptions grid;
    std::optional<std::uint64_t> sync_every;
    std::optional<std::string> costs;
    std::optional<std::string> plot;
    bool confirm = false;                   // --confirm, as max-batch's
    std::optional<std::uint64_t> max_runs;  // --max-runs K: --confirm's real runs, the most settings tried
};

void add_tune_options(CLI::App& sub, TuneOptions& o) {
    add_footer(sub);
    add_input_options(sub, o.input);
    add_grid_options(sub, o.grid, true);
    add_torch_options(sub, o.torch, false);
    add_cap_options(sub, o.cap, true);
    add_sync_every_option(sub, o.sync_every);
    add_costs_option(sub, o.costs);
    add_plot_option(sub, o.plot, "Draw the best settings' replays as an SVG picture");
    // A flag, as max-batch's: how many settings it may try is --max-runs,
    // as max-batch's bound on its real runs is.
    sub.add_flag("--confirm", o.confirm, "Rerun the program for real under the best setting");
    add_unsigned_option(sub, "--max-runs", o.max_runs,
                        "Most real runs of --confirm, the next setting after an OOM (default 1)", 1, rs::kMaxGridPoints);
    add_max_entries_option(sub, o);
    add_program_option(sub, o, "The program --confirm runs");
}

// tune --confirm [--max-runs K] -- CMD: real runs of the program after the ranking. It
// belongs to tune, whose ranking it runs and whose grid its reruns' own
// recordings are tuned under.
std::optional<ConfirmRequest> check_confirm(const TuneOptions& o, const TuneRequest& q) {
    if (!o.confirm) {
        if (o.max_entries) throw UsageError("--max-entries goes with --confirm (the recordings of its real runs)");
        if (o.max_runs) throw UsageError("--max-runs bounds --confirm's real runs: give --confirm");
        if (!o.program.empty()) throw UsageError("a program after -- is run by --confirm: give --confirm");
        return std::nullopt;
    }
    if (!q.input.trace) throw UsageError("--confirm needs --trace: the recording of the program it reruns");
    if (o.program.empty()) throw UsageError("--confirm needs the program to rerun after --: ... --confirm -- CMD [ARGS...]");
    ConfirmRequest confirm{static_cast<std::size_t>(o.max_runs.value_or(1)), o.program, check_real_run_cap(o.cap, o), DeviceSpec{}};
    confirm.device = parse_device_spec("0");
    // Each run's recording is kept beside the trace (standard input's: in
    // the current directory), new or replacing a regular file, as record's.
    for (std::size_t run = 1; run <= confirm.candidates; ++run) {
        const std::string file = confirm_file_name(*q.input.trace, run);
        if (run == 1) {
            const std::size_t slash = file.rfind('/');
            const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
            if (::access(dir.c_str(), W_OK) != 0) {
                std::string refusal = "--confirm keeps each run's recording in ";
                refusal += dir;
                refusal += " (";
                refusal += file;
                refusal += ", ...): cannot write there: ";
                refusal += std::strerror(errno);
                throw UsageError(refusal);
            }
        }
        check_record_target(file, file, o.program, "--confirm");
        check_record_target(stats_file_name(file), stats_file_name(file), o.program, "--confirm");
    }
    return confirm;
}

// reuse-sim tune: torch-caching replayed under a grid of settings, each a
// lane of one replay, ranked.
TuneRequest check_tune(const TuneOptions& o, const Globals& /*globals*/) {
    TuneRequest q;
    q.input = check_input(o.input);
    q.setup.strategies = {&rs::kStrategies.row("torch-caching")};
    check_torch_options(o.torch, q.setup);
    q.setup.sync_every = o.sync_every.value_or(0);
    q.setup.capacity = check_capacity(o.cap);
    q.warnings = bare_capacity_warnings(o.cap);
    const std::vector<std::string> recording_warnings = check_recording(o.cap, q.input, q.setup);
    q.setup.costs = checked_path(o.costs, "--costs");
    q.grid = check_grid(o.grid, q.setup.capacity, true);
    q.confirm = check_confirm(o, q);
    std::vector<std::string> inputs = named_paths(o.program);
    for (const std::optional<std::string>& file : {o.input.trace, o.costs})
        if (file) inputs.push_back(*file);
    std::optional<KeptRecordings> kept;
    if (q.confirm && q.input.trace) {
        // --confirm keeps its runs' recordings beside the trace (TRACE.confirmN...).
        kept = KeptRecordings{confirm_file_name(*q.input.trace, 1), ""};
        std::string example = base_name(kept->file);
        example.replace(example.rfind(".confirm1") + 8, 1, "N");
        kept->how = "--confirm keeps its runs' recordings as " + example;
    }
    q.plot = check_plot(o.plot, inputs, kept);
    q.recorded_device = plot_recorded_device(q.plot, o.input.trace);
    q.warnings.insert(q.warnings.end(), recording_warnings.begin(), recording_warnings.end());
    return q;
}

constexpr ListEntry kTuneLists[] = {
    {"knobs", "reuse-sim tune, max-batch --sweep", [] { return view_of(reuse_sim::kKnobs); }},
};

}  // namespace

void execute_tune(const TuneRequest& q, TuneResults& r, Session& session) {
    // --confirm's real runs need a GPU: without one, exit 3 before the replays.
    if (q.confirm) (void)select_cuda_devices(q.confirm->device);
    const rs::CostTable table = load_costs(q.setup, r);
    const rs::CostModel costs(table);
    std::unique_ptr<rs::EventSource> source = open_replayed_input(q.input, q.setup, true, r);
    tune_replays(q, *source, costs, r,
                 session.progress() ? std::optional(session.output().screen.stderr_columns) : std::nullopt);
    note_allocator_facts(q.input, true, *source, r);
    if (q.confirm) confirm_tune(q, r, session);
    r.complete = true;
}

// The job's own options, check, execute, report and schema.
constexpr CommandDefinition kReuseSimTuneCommand{
    [] { return make_command(CommandFunctions<TuneOptions, TuneRequest, TuneResults>{add_tune_options, check_tune, execute_tune, tune_report}); },
    tune_document_schema, kTuneLists, {},
    "-d/--device: reuse-sim tune replays on no GPU (--confirm's program chooses its GPU; CUDA_VISIBLE_DEVICES selects them)"};

}  // namespace gpumem::cli
