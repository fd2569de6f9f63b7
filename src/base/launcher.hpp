// Where this process stands in a parallel launch: the launcher that started
// it (Slurm's srun, Open MPI's mpirun, MVAPICH, a PMI launcher, torchrun),
// its rank among all processes and among those on this node, and the job.
// Pure: the environment is read through a lookup that tests replace, so
// every launcher is tested on any machine.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpumem {

// One environment variable's value; nullopt when it is unset. An empty value
// counts as unset (`LOCAL_RANK= gpumem ...` is how a shell clears one).
using EnvironmentLookup = std::function<std::optional<std::string>(const char* name)>;
// The process's own environment (getenv).
EnvironmentLookup process_environment();

struct LauncherInfo {
    std::string_view name;  // "slurm", "openmpi", "mvapich", "pmi", "torchrun"; empty: none found
    std::optional<unsigned> rank;         // among every process of the launch
    std::optional<unsigned> world_size;   // how many processes the launch has
    std::optional<unsigned> local_rank;   // among the launch's processes on this node
    std::optional<unsigned> local_size;   // how many of them run on this node
    std::string_view local_rank_variable;  // where local_rank came from, for messages
    std::string_view local_size_variable;
    std::optional<std::string> job_id;  // the batch system's job (Slurm, PBS, LSF)

    bool found() const noexcept { return !name.empty(); }
};

// The launcher that started this process, from its variables. When several
// launchers' variables are present, the innermost launcher wins (see
// launcher.cpp). A malformed value (not a whole number, negative, a rank not
// below its size) is a UsageError naming the variable.
LauncherInfo detect_launcher(const EnvironmentLookup& env);

// Every launcher's name, as LauncherInfo::name has it (for schemas).
std::vector<std::string_view> launcher_names();

// "SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, ... or PMI_LOCAL_RANK": the
// variables a local rank is read from, for messages.
std::string local_rank_variables();

// Slurm's tasks-per-node list ("2(x3),1": three nodes with 2 tasks, then one
// with 1): the count of node `node` (0-based). Throws UsageError naming
// `variable` when the list is malformed or has no node `node`.
unsigned slurm_tasks_on_node(std::string_view list, unsigned node, std::string_view variable);

// What identifies the process that wrote a document or a metric: the host
// always, the launcher's fields when there is one.
struct Origin {
    std::string host;
    std::string_view launcher;  // empty: no launcher
    std::optional<std::string> job_id;
    std::optional<unsigned> rank;
    std::optional<unsigned> local_rank;
    std::optional<unsigned> world_size;
};

// `host` is gethostname's answer, passed in so that this stays pure.
Origin make_origin(std::string host, const LauncherInfo& launcher);

// The origin as metric labels (name, value), present fields only, in a
// fixed order: host, launcher, job_id, rank, local_rank, world_size.
std::vector<std::pair<std::string_view, std::string>> origin_labels(const Origin& origin);

}  // namespace gpumem
