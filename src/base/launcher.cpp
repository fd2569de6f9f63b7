#include "base/launcher.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>

#include "base/errors.hpp"

namespace gpumem {
namespace {

// One launcher's variables. A null local_size/world_size is computed from
// other variables (Slurm's tasks-per-node lists).
struct LauncherVariables {
    std::string_view name;
    const char* local_rank;
    const char* local_size;
    const char* rank;
    const char* world_size;
    // Whether the rank variable alone says that this launcher started the
    // process. Not torchrun's RANK: other tools export a RANK of their own.
    bool rank_alone_identifies;
};

// In precedence order: the innermost launcher first. torchrun and mpirun
// are started *by* Slurm (`srun torchrun ...`, mpirun in an sbatch script),
// so their workers inherit the Slurm step's variables, and those describe
// the launcher process (often one task per node: SLURM_LOCALID 0 in every
// worker), not the worker. The innermost launcher set its variables last,
// for this very process. Slurm's mpi/pmi2 plugin sets PMI_RANK but no
// PMI_LOCAL_RANK, so under `srun --mpi=pmi2` Slurm's SLURM_LOCALID still
// decides (a local rank outranks a rank alone: see find_launcher).
constexpr LauncherVariables kLaunchers[] = {
    {"torchrun", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE", false},
    {"openmpi", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", true},
    {"mvapich", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", true},
    {"pmi", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", true},
    {"slurm", "SLURM_LOCALID", nullptr, "SLURM_PROCID", nullptr, true},
};

// The batch system's job, whichever launcher runs inside it: the unit an
// operator drains, requeues and looks up. Open MPI documents no job id of
// its own (its mpirun job has one only internally), so an mpirun outside a
// batch system has none.
constexpr const char* kJobIdVariables[] = {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"};

std::optional<std::string> lookup(const EnvironmentLookup& env, const char* name) {
    std::optional<std::string> value = env(name);
    if (value && value->empty()) return std::nullopt;
    return value;
}

// A rank or a count: decimal digits only, at most INT_MAX (a local rank
// becomes a device ordinal, an int).
unsigned parse_count(const std::string& text, std::string_view variable) {
    const std::string named = std::string(variable) + "='" + text + "'";
    if (!text.empty() && text.front() == '-') throw UsageError(named + " is negative: a launcher's rank or count is 0 or more");
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
        throw UsageError(named + " is not a whole number (a launcher's rank or count)");
    const std::string digits = text.substr(std::min(text.find_first_not_of('0'), text.size() - 1));
    if (digits.size() > 10 || std::strtoull(digits.c_str(), nullptr, 10) > static_cast<unsigned long long>(INT_MAX))
        throw UsageError(named + " is out of range (at most " + std::to_string(INT_MAX) + ")");
    return static_cast<unsigned>(std::strtoul(digits.c_str(), nullptr, 10));
}

// A value and the variable it came from.
struct Reading {
    std::optional<unsigned> value;
    std::string_view variable;
};

Reading read_count(const EnvironmentLookup& env, const char* variable) {
    if (variable == nullptr) return {};
    const std::optional<std::string> text = lookup(env, variable);
    if (!text) return {};
    return {parse_count(*text, variable), variable};
}

// First a launcher whose local-rank variable is set, then one whose rank
// alone identifies it: a local rank is what -d local needs, and the
// launcher that gives one is the one that placed this process on its node.
const LauncherVariables* find_launcher(const EnvironmentLookup& env) {
    for (const LauncherVariables& l : kLaunchers)
        if (lookup(env, l.local_rank)) return &l;
    for (const LauncherVariables& l : kLaunchers)
        if (l.rank_alone_identifies && lookup(env, l.rank)) return &l;
    return nullptr;
}

// How many tasks Slurm runs on this node, and in all. SLURM_STEP_* describe
// the step this process is a task of (srun). The batch script's shell is in
// no step: there SLURM_TASKS_PER_NODE and SLURM_NTASKS describe the job's
// allocation while the shell is one process, so they are read only inside a
// step (SLURM_STEP_ID set), where they describe the step. SLURM_NTASKS_PER_NODE
// is not read: it is set only when the user asked for it.
void read_slurm_sizes(const EnvironmentLookup& env, Reading& local_size, Reading& world_size) {
    const bool in_step = lookup(env, "SLURM_STEP_ID").has_value();
    world_size = read_count(env, "SLURM_STEP_NUM_TASKS");
    if (!world_size.value && in_step) world_size = read_count(env, "SLURM_NTASKS");
    const char* list_variable = "SLURM_STEP_TASKS_PER_NODE";
    std::optional<std::string> list = lookup(env, list_variable);
    if (!list && in_step) list = lookup(env, list_variable = "SLURM_TASKS_PER_NODE");
    if (!list) return;
    const Reading node = read_count(env, "SLURM_NODEID");
    if (node.value) {
        local_size = {slurm_tasks_on_node(*list, *node.value, list_variable), list_variable};
        return;
    }
    // Without SLURM_NODEID, a list that gives every node the same count still says it.
    const unsigned first = slurm_tasks_on_node(*list, 0, list_variable);
    const bool uniform = list->find(',') == std::string::npos;
    if (uniform) local_size = {first, list_variable};
}

void check_below(const Reading& rank, const Reading& size) {
    if (rank.value && size.value && *rank.value >= *size.value)
        throw UsageError(std::string(rank.variable) + "=" + std::to_string(*rank.value) + " is not below " +
                         std::string(size.variable) + "'s " + std::to_string(*size.value) +
                         ": the launcher's variables contradict each other");
}

}  // namespace

EnvironmentLookup process_environment() {
    return [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        if (value == nullptr) return std::nullopt;
        return std::string(value);
    };
}

std::vector<std::string_view> launcher_names() {
    std::vector<std::string_view> names;
    for (const LauncherVariables& l : kLaunchers) names.push_back(l.name);
    return names;
}

std::string local_rank_variables() {
    // Slurm's first: the one most runs have.
    std::string names = "SLURM_LOCALID";
    const std::size_t count = std::size(kLaunchers);
    std::size_t listed = 1;
    for (const LauncherVariables& l : kLaunchers) {
        if (l.name == "slurm") continue;
        names += ++listed == count ? " or " : ", ";
        names += l.local_rank;
        if (l.name == "torchrun") names += " (torchrun)";
    }
    return names;
}

unsigned slurm_tasks_on_node(std::string_view list, unsigned node, std::string_view variable) {
    const std::string whole(list);
    auto malformed = [&](const std::string& why) {
        return UsageError(std::string(variable) + "='" + whole + "' is malformed (" + why +
                          "; Slurm writes counts per node such as 2(x3),1)");
    };
    // The whole list is checked, whichever node is asked for: a malformed
    // list is as wrong on the first node as on the last.
    std::optional<unsigned> found;
    unsigned long long nodes = 0;  // before the current item
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        const std::string item(list.substr(start, comma - start));
        const std::size_t paren = item.find('(');
        if (item.empty() || paren == 0) throw malformed("an empty count");
        unsigned repeat = 1;
        if (paren != std::string::npos) {
            if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')')
                throw malformed("'" + item + "' is not N or N(xM)");
            repeat = parse_count(item.substr(paren + 2, item.size() - paren - 3), variable);
            if (repeat == 0) throw malformed("a repeat of 0");
        }
        const unsigned count = parse_count(item.substr(0, paren), variable);
        if (!found && node < nodes + repeat) found = count;
        nodes += repeat;
        start = comma + 1;
    }
    if (!found)
        throw UsageError(std::string(variable) + "='" + whole + "' lists " + std::to_string(nodes) +
                         " node(s), so none has SLURM_NODEID " + std::to_string(node));
    return *found;
}

LauncherInfo detect_launcher(const EnvironmentLookup& env) {
    LauncherInfo info;
    for (const char* variable : kJobIdVariables)
        if ((info.job_id = lookup(env, variable))) break;
    const LauncherVariables* launcher = find_launcher(env);
    if (launcher == nullptr) return info;
    info.name = launcher->name;
    const Reading local_rank = read_count(env, launcher->local_rank);
    const Reading rank = read_count(env, launcher->rank);
    Reading local_size = read_count(env, launcher->local_size);
    Reading world_size = read_count(env, launcher->world_size);
    if (launcher->local_size == nullptr) read_slurm_sizes(env, local_size, world_size);
    check_below(local_rank, local_size);
    check_below(rank, world_size);
    info.local_rank = local_rank.value;
    info.local_rank_variable = local_rank.variable;
    info.local_size = local_size.value;
    info.local_size_variable = local_size.variable;
    info.rank = rank.value;
    info.world_size = world_size.value;
    return info;
}

Origin make_origin(std::string host, const LauncherInfo& launcher) {
    return Origin{std::move(host), launcher.name, launcher.job_id, launcher.rank, launcher.local_rank, launcher.world_size};
}

std::vector<std::pair<std::string_view, std::string>> origin_labels(const Origin& origin) {
    std::vector<std::pair<std::string_view, std::string>> labels;
    labels.emplace_back("host", origin.host);
    if (!origin.launcher.empty()) labels.emplace_back("launcher", std::string(origin.launcher));
    if (origin.job_id) labels.emplace_back("job_id", *origin.job_id);
    if (origin.rank) labels.emplace_back("rank", std::to_string(*origin.rank));
    if (origin.local_rank) labels.emplace_back("local_rank", std::to_string(*origin.local_rank));
    if (origin.world_size) labels.emplace_back("world_size", std::to_string(*origin.world_size));
    return labels;
}

}  // namespace gpumem
