// The option groups of gpumem reuse-sim's jobs and the checks they share
// (reuse_sim_options.hpp).
#include "reuse_sim/reuse_sim_options.hpp"

#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "base/errors.hpp"
#include "base/record_plan.hpp"
#include "base/sizes.hpp"
#include "cli/options.hpp"
#include "cli/terminal.hpp"
#include "cli/writer.hpp"
#include "process/child.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tuner.hpp"
#include "reuse_sim/workloads.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

// "N" or "A..B" of positive integers.
std::pair<std::uint64_t, std::uint64_t> parse_count_range(const std::string& text, const char* option) {
    const auto dots = text.find("..");
    auto number = [&](const std::string& s) {
        try {
            return parse_unsigned(s, 1ULL << 40);
        } catch (const UsageError&) {
            throw UsageError(std::string(option) + " '" + text + "': expected N or MIN..MAX");
        }
    };
    if (dots == std::string::npos) {
        const std::uint64_t n = number(text);
        return {n, n};
    }
    return {number(text.substr(0, dots)), number(text.substr(dots + 2))};
}

// The trace must exist and not be a directory; it is not opened here: a
// FIFO's open waits for its writer, and it can be read only once.
void check_trace_path(const std::string& path) {
    if (path.empty()) throw UsageError("--trace: empty file name (give a file, or - for standard input)");
    if (path == "-") return;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw UsageError(path + ": cannot open trace: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw UsageError(path + ": cannot read a trace from a directory");
}

// PyTorch refuses max_split_size_mb and max_non_split_rounding_mb below kLargeBuffer (20 MiB).
std::uint64_t torch_size(const std::string& text, const char* option) {
    const std::uint64_t bytes = parse_size(text);
    if (bytes < (20ULL << 20)) {
        // PyTorch's _mb keys are in MiB: a bare number here is bytes, so say which was read.
        const bool bare = text.find_first_not_of("0123456789") == std::string::npos;
        throw UsageError(std::string(option) + " '" + text + "' is " + format_bytes(bytes) + ": it must be at least 20MiB, as PyTorch requires" +
                         (bare ? " (a bare number is bytes; PyTorch's _mb value " + text + " is " + text + "MiB)" : std::string()));
    }
    return bytes;
}

// --plot naming a file the run's recordings take: max-batch -o FILE's
// (FILE.bsN...) or tune --confirm's beside the trace (TRACE.confirmN...),
// their statistics too, in the same folder.
void check_plot_not_a_recording(const std::string& plot, const KeptRecordings& kept) {
    const std::string& recordings = kept.file;
    const auto folder = [](const std::string& path) {
        const std::size_t slash = path.rfind('/');
        return slash == std::string::npos ? std::string(".") : slash == 0 ? std::string("/") : path.substr(0, slash);
    };
    struct stat a {}, b {};
    if (::stat(folder(plot).c_str(), &a) != 0 || ::stat(folder(recordings).c_str(), &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return;
    if (!recording_file_of(recordings, plot))
        return;
    throw UsageError("--plot '" + plot + "': a name this run's recordings take (" + kept.how +
                     ", each with its .stats.json); the picture and a recording would replace each other");
}

}  // namespace

// "pool, binning: initial pool size": the help of a strategy option, led by
// the strategies it tunes.
std::string for_strategies(const char* option, const std::string& help) { return rs::strategies_using(option) + ": " + help; }

void add_input_options(CLI::App& sub, InputOptions& o) {
    // The recording first (what record -o or torch.cuda.memory._snapshot()
    // wrote): the help lists options as registered, and the built-in
    // workload's parameters are for trying strategies without one.
    auto* trace = sub.add_option("--trace", o.trace, "Replay this trace or recording (- for stdin; a FIFO works)")
                      ->type_name("FILE");
    sub.add_option("--trace-format", o.trace_format, "Trace format (default auto: by its content)")
        ->type_name("FMT")
        ->check(names_validator(rs::kTraceFormats));
    auto* device = add_unsigned_option(sub, "--trace-device", o.trace_device,
                                       "A snapshot's device (default: the only one used)", 0,
                                       1 << 20);
    auto* workload = sub.add_option("--workload", o.workload, "Built-in workload (default dynamic)")
                         ->type_name("NAME")
                         ->check(names_validator(rs::kWorkloads));
    const std::vector<CLI::Option*> parameters = {
        workload,
        add_unsigned_option(sub, "--steps", o.steps, "Workload steps (default 200)",
                            1, std::uint64_t{1} << 40),
        add_unsigned_option(sub, "--seed", o.seed, "Seed of its random choices (default 1)", 0, kMaxU64),
        add_value_option(sub, "--change-rate", o.change_rate, "dynamic: chance the batch changes (default 0.1)",
                         ValueKind::fraction, 0.0, 1.0),
        sub.add_option("--batch", o.batch, "Batch N, or MIN..MAX for dynamic (default 1..32)")->type_name("N|MIN..MAX"),
        add_unsigned_option(sub, "--layers", o.layers, "Layers of the model (default 8)", 1, 1000),
        sub.add_option("--sample-bytes", o.sample_bytes, "Activations per sample, layer 1 (default 768KiB)")
            ->type_name("SIZE")
            ->check(size_validator(false)),
        add_unsigned_option(sub, "--max-detections", o.max_detections, "detector: 0..N detections per image (default 100)", 0,
                            1000000),
        sub.add_option("--prompt", o.prompt, "llm-decode: prompt tokens (default 32..512)")->type_name("MIN..MAX"),
        sub.add_option("--tokens", o.tokens, "llm-decode: tokens generated (default 16..256)")->type_name("MIN..MAX"),
        add_unsigned_option(sub, "--streams", o.streams, "Run steps on N streams in turn (default 1)", 1, 1024),
    };
    for (CLI::Option* p : parameters) {
        trace->excludes(p);
        device->excludes(p);
    }
}

// `lead`: the strategies they tune, in replay's help; tune and max-batch
// replay torch-caching alone.
void add_torch_options(CLI::App& sub, TorchOptions& o, bool lead) {
    auto help = [lead](const char* option, const std::string& knob, const std::string& text) {
        return lead ? for_strategies(option, knob + text) : knob + text;
    };
    sub.add_option("--max-split-size", o.max_split_size,
                   help("--max-split-size", "max_split_size ", "in bytes, not MiB (default none)"))
        ->type_name("SIZE[B]")
        ->check(size_validator(false));
    sub.add_option("--max-non-split-rounding", o.max_non_split_rounding, help("--max-non-split-rounding", "max_non_split_rounding ", "(default 20MiB)"))
        ->type_name("SIZE")
        ->check(size_validator(false));
    sub.add_option("--roundup-power2-divisions", o.roundup_power2_divisions,
                   help("--roundup-power2-divisions", "", "N or [MIB:N,...,>:N] (default off)"))
        ->type_name("SPEC");
}

// `replayed`: the memory of a replay, which --device-total may give
// (replay, tune, max-batch); else the cap of a real run (record).
void add_cap_options(CLI::App& sub, CapOptions& o, bool replayed) {
    auto* capacity = sub.add_option("--capacity", o.capacity,
                                    replayed ? "Device memory to fit in (default unlimited)" : "Cap the program's GPU memory")
                         ->type_name("SIZE")
                         ->check(size_validator(false));
    add_value_option(sub, "--memory-fraction", o.memory_fraction,
                     replayed ? "Capacity as a share of --device-total" : "Cap it at this share of the GPU's memory",
                     ValueKind::fraction, 0.0, 1.0)
        ->excludes(capacity);
    if (!replayed) return;
    sub.add_option("--device-total", o.device_total, "The device's total memory, for --memory-fraction")
        ->type_name("SIZE")
        ->check(size_validator(false));
}

void add_sync_every_option(CLI::App& sub, std::optional<std::uint64_t>& sync_every) {
    add_unsigned_option(sub, "--sync-every", sync_every, "Also synchronize every N requests",
                        1, kMaxU64);
}

void add_costs_option(CLI::App& sub, std::optional<std::string>& costs) {
    sub.add_option("--costs", costs, "Cost table (alloc-test latency --save-costs)")->type_name("FILE");
}

// `tune`: the default grid is tune's own; max-batch's is the recorded
// setting and expandable segments.
void add_grid_options(CLI::App& sub, GridOptions& o, bool tune) {
    sub.add_option("--sweep", o.sweeps, tune ? "KNOB=V1,V2,...: values of one knob; repeatable" : "KNOB=V1,V2,...: settings to search; repeatable")
        ->type_name("KNOB=VALUES")
        ->check(parsing_validator([](const std::string& v) { rs::parse_sweep(v); }, ""));
    sub.add_flag("--full-grid", o.full_grid, tune ? "With --sweep: also the default grid's other knobs" : "Search the default grid of every knob");
    sub.add_flag("--all-settings", o.all_settings, "The table lists every setting (default: best 10)");
}

void add_max_entries_option(CLI::App& sub, ProgramOptions& o) {
    add_unsigned_option(sub, "--max-entries", o.max_entries,
                        "Most events a recording keeps (default: all)", 1, kMaxU64);
}

void add_program_option(CLI::App& sub, ProgramOptions& o, const std::string& help) {
    sub.add_option("command", o.program, help + ", after --")->type_name("CMD");
}

void add_footer(CLI::App& sub, const std::string& before) {
    sub.footer(before + "Sizes take units (4KiB, 1.5GiB). Details: gpumem(1), REUSE-SIM.");
}

// A FILE option given as '' would otherwise mean "not given".
std::optional<std::string> checked_path(const std::optional<std::string>& path, const char* option) {
    if (path && path->empty()) throw UsageError(std::string(option) + ": empty file name");
    return path;
}

ReuseSimInput check_input(const InputOptions& o) {
    ReuseSimInput in;
    if (o.trace) {
        check_trace_path(*o.trace);
        in.trace = o.trace;
        in.trace_format = rs::kTraceFormats.parse(o.trace_format);
        if (o.trace_device) {
            if (in.trace_format != rs::TraceFormat::automatic && in.trace_format != rs::TraceFormat::snapshot)
                throw UsageError("--trace-device chooses a device of a PyTorch snapshot, not of a " + o.trace_format + " trace");
            in.trace_device = static_cast<std::uint32_t>(*o.trace_device);
        }
        return in;
    }
    if (o.trace_device) throw UsageError("--trace-device needs --trace (a PyTorch snapshot)");
    rs::WorkloadOptions& w = in.workload;
    w.name = o.workload.value_or("dynamic");
    w.steps = o.steps;
    w.seed = o.seed;
    w.change_rate = o.change_rate;
    std::tie(w.batch_min, w.batch_max) = parse_count_range(o.batch, "--batch");
    w.layers = static_cast<std::uint32_t>(o.layers);
    w.sample_bytes = parse_size(o.sample_bytes);
    w.max_detections = static_cast<std::uint32_t>(o.max_detections);
    std::tie(w.prompt_min, w.prompt_max) = parse_count_range(o.prompt, "--prompt");
    std::tie(w.tokens_min, w.tokens_max) = parse_count_range(o.tokens, "--tokens");
    w.streams = static_cast<std::uint32_t>(o.streams);
    rs::check_workload_options(w);
    return in;
}

// The torch-caching settings given as flags: they override a snapshot's.
void check_torch_options(const TorchOptions& o, ReplaySetup& setup) {
    rs::StrategyOptions& s = setup.strategy_options;
    if (o.max_split_size) s.torch.max_split_size = torch_size(*o.max_split_size, "--max-split-size");
    // "unlimited" is PyTorch's default and can be asked for, also over a snapshot's limit.
    if (o.max_non_split_rounding) s.torch.max_non_split_rounding = torch_size(*o.max_non_split_rounding, "--max-non-split-rounding");
    if (o.roundup_power2_divisions) s.torch.roundup_power2_divisions = rs::parse_roundup_power2_divisions(*o.roundup_power2_divisions);
    setup.torch_flags.max_split_size = o.max_split_size.has_value();
    setup.torch_flags.roundup_power2_divisions = o.roundup_power2_divisions.has_value();
}

// A GPU's memory given as a bare number under 1 MiB: a size without a unit
// is bytes, as everywhere, but no GPU is that small, so the unit was most
// likely left out: "--capacity 40 is 40 B (a size without a unit is bytes):
// did you mean 40GiB?" (MiB for a larger number, as nvidia-smi counts).
std::vector<std::string> bare_capacity_warnings(const CapOptions& o) {
    std::vector<std::string> warnings;
    const std::pair<const char*, const std::optional<std::string>*> given[] = {{"--capacity", &o.capacity}, {"--device-total", &o.device_total}};
    for (const auto& [option, text] : given) {
        if (!*text || (*text)->empty() || (*text)->find_first_not_of("0123456789") != std::string::npos) continue;
        const std::uint64_t bytes = parse_size(**text);
        if (bytes >= (1ULL << 20)) continue;
        warnings.push_back(std::string(option) + " " + **text + " is " + **text + " B (a size without a unit is bytes): did you mean " +
                           **text + (bytes <= 300 ? "GiB" : "MiB") + "?");
    }
    return warnings;
}

// --capacity, or --memory-fraction of --device-total as PyTorch computes its
// allowed maximum (DeviceCachingAllocator::setMemoryFraction). A snapshot
// does not record the device's total memory, so it must be given.
std::uint64_t check_capacity(const CapOptions& o) {
    // Checked first: beside --capacity, --device-total would be ignored unsaid.
    if (o.device_total && !o.memory_fraction)
        throw UsageError("--device-total is used only with --memory-fraction (the capacity is that share of it)" +
                         std::string(o.capacity ? "; --capacity gives the capacity itself" : ""));
    if (o.capacity) return parse_size(*o.capacity);
    if (!o.memory_fraction) return rs::kUnlimited;
    if (!o.device_total)
        throw UsageError("--memory-fraction needs --device-total (the recording GPU's total memory, as torch.cuda.mem_get_info()[1] "
                         "gives it; a snapshot does not record it)");
    if (*o.memory_fraction <= 0.0) throw UsageError("--memory-fraction must be above 0");
    const std::uint64_t capacity = static_cast<std::uint64_t>(*o.memory_fraction * static_cast<double>(parse_size(*o.device_total)));
    if (capacity == 0) throw UsageError("--memory-fraction of --device-total is less than a byte");
    return capacity;
}

// A trace that reuse-sim record wrote comes with its statistics (FILE.stats.json):
// the cap in force when the program ran, gpumem's or the program's own
// set_per_process_memory_fraction, is the replay's unless --capacity or
// --memory-fraction says otherwise. Read here, before the grid is built,
// since a cap decides the grid (garbage collection is tried only under one).
std::vector<std::string> check_recording(const CapOptions& o, ReuseSimInput& input, ReplaySetup& setup) {
    std::vector<std::string> warnings;
    if (!input.trace || *input.trace == "-") return warnings;
    struct stat st {};
    if (::stat(input.trace->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return warnings;
    input.recording = read_recording_stats(stats_file_name(*input.trace));
    if (input.recording && !input.recording->cap && input.recording->device_total && input.recording->ran_out_of_memory && !o.capacity &&
        !o.memory_fraction) {
        // Uncapped, it ran out of the device's own memory: an unlimited replay would grant what the device refused.
        setup.capacity = *input.recording->device_total;
        warnings.push_back("the recording ran without a cap and ran out of the device's memory: replayed under the device's total, " +
                           exact_size_text(setup.capacity) + " (" + input.recording->path + "; the program had somewhat less: pass --capacity)");
    }
    if (!input.recording || !input.recording->cap) return warnings;
    const std::uint64_t recorded = input.recording->cap->call.allowed_memory_maximum;
    if (!o.capacity && !o.memory_fraction) {
        setup.capacity = recorded;
        setup.capacity_from_recording = true;
    } else if (setup.capacity != recorded) {
        warnings.push_back("the replay's capacity " + size_in_words(setup.capacity) + " is not the cap the recording ran under, " +
                           size_in_words(recorded) + " (" + input.recording->path + "); leave out --capacity and --memory-fraction " +
                           "to replay under the recording's");
    }
    if (input.recording->cap->program_changes > 0)
        warnings.push_back("the program changed its own cap " + std::to_string(input.recording->cap->program_changes) +
                             " time(s) during the run (set_per_process_memory_fraction); the replay uses the last one, " +
                             size_in_words(recorded) + ", for the whole run");
    return warnings;
}

// The grid of tune, or of max-batch given --sweep or --full-grid.
TuneGrid check_grid(const GridOptions& o, std::uint64_t capacity, bool tune) {
    TuneGrid grid;
    grid.axes = rs::grid_axes(o.sweeps, o.full_grid || (tune && o.sweeps.empty()), capacity != rs::kUnlimited);
    grid.all_settings = o.all_settings;
    return grid;
}

// The files a program's command line names: each word, and what follows
// '=' in --opt=FILE.
std::vector<std::string> named_paths(const std::vector<std::string>& program) {
    std::vector<std::string> paths;
    for (const std::string& word : program) {
        paths.push_back(word);
        if (const std::size_t eq = word.find('='); eq != std::string::npos) paths.push_back(word.substr(eq + 1));
    }
    // The program itself, as execvp finds it on PATH.
    if (!program.empty())
        for (std::string& candidate : process::path_candidates(program.front())) paths.push_back(std::move(candidate));
    return paths;
}

// A file a recording writes (the snapshot or its statistics) replaces only a
// regular file: the hook renames over it, which as root would turn /dev/null
// into a file, and nothing the program runs from or is given: `record -o
// prog.py -- python3 prog.py` would lose the program.
void check_record_target(const std::string& path, const std::string& shown, const std::vector<std::string>& program,
                         const std::string& option) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;  // a new file
    std::string refusal = option + " " + shown + ": ";
    if (!S_ISREG(st.st_mode)) {
        refusal += cli::file_kind_in_words(st.st_mode);
        refusal += "; " + option + " writes a new file or replaces a regular one";
        throw UsageError(refusal);
    }
    for (const std::string& named : named_paths(program)) {
        struct stat other {};
        if (named.empty() || ::stat(named.c_str(), &other) != 0 || other.st_dev != st.st_dev || other.st_ino != st.st_ino) continue;
        refusal += "the program's own file ('";
        refusal += named;
        refusal += "' on its command line); the recording would replace it";
        throw UsageError(refusal);
    }
}

// FILE as an absolute path (the program may change directory), in a
// directory that exists; the file itself is written by the program's hook.
std::string check_record_file(const std::string& file, const std::vector<std::string>& program, const std::string& option) {
    if (file.empty()) throw UsageError(option + ": empty file name");
    std::string absolute = file.front() == '/' ? file : [&] {
        std::string cwd(4096, '\0');
        if (::getcwd(cwd.data(), cwd.size()) == nullptr) throw UsageError(option + ": cannot read the working directory: " + std::strerror(errno));
        return std::string(cwd.c_str()) + "/" + file;
    }();
    struct stat st {};
    if (::stat(absolute.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw UsageError(file + ": " + option + " writes a file, not a directory");
    const std::size_t slash = absolute.rfind('/');
    const std::string dir = slash == 0 ? "/" : absolute.substr(0, slash);
    if (::access(dir.c_str(), W_OK) != 0) throw UsageError(file + ": cannot write there: " + std::strerror(errno));
    // /proc and /sys take no new files: the program would run, then its
    // recording fail.
    struct statfs dir_fs {};
    constexpr long kProcMagic = 0x9fa0, kSysfsMagic = 0x62656572;
    if (::statfs(dir.c_str(), &dir_fs) == 0 &&
        (static_cast<long>(dir_fs.f_type) == kProcMagic || static_cast<long>(dir_fs.f_type) == kSysfsMagic))
        throw UsageError(option + " " + file + ": " + dir + " is a kernel file system (/proc, /sys), not a place for files");
    check_record_target(absolute, file, program, option);
    check_record_target(stats_file_name(absolute), stats_file_name(file), program, option);
    return absolute;
}

// The cap of a real run: --capacity, or --memory-fraction as given.
RecordSettings check_real_run_cap(const CapOptions& o, const ProgramOptions& p) {
    RecordSettings s;
    s.max_entries = p.max_entries;
    if (o.capacity) s.capacity = parse_size(*o.capacity);
    if (o.memory_fraction && *o.memory_fraction <= 0.0) throw UsageError("--memory-fraction must be above 0");
    s.memory_fraction = o.memory_fraction;
    return s;
}

// --plot FILE.svg, checked before anything is read or run: a file the run
// may write, and none it reads (the input, the cost table, the recordings),
// nor the program's own, nor one its recordings take.
std::optional<std::string> check_plot(const std::optional<std::string>& plot, const std::vector<std::string>& inputs,
                                      const std::optional<KeptRecordings>& kept) {
    if (!plot) return std::nullopt;
    if (kept) check_plot_not_a_recording(*plot, *kept);
    check_plot_file(*plot, inputs);
    return plot;
}

std::optional<std::string> plot_recorded_device(const std::optional<std::string>& plot, const std::optional<std::string>& trace) {
    if (!plot || !trace || *trace == "-") return std::nullopt;
    return recorded_device_name(stats_file_name(*trace));
}

}  // namespace gpumem::cli
