// Launcher detection from environment variables, as Slurm, Open MPI,
// MVAPICH, PMI launchers and torchrun set them, alone and mixed; the origin
// stamp made from it.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "base/errors.hpp"
#include "base/launcher.hpp"

using namespace gpumem;

namespace {

using Env = std::map<std::string, std::string>;

EnvironmentLookup lookup(const Env& env) {
    return [env](const char* name) -> std::optional<std::string> {
        const auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        return it->second;
    };
}

LauncherInfo detect(const Env& env) { return detect_launcher(lookup(env)); }

// What srun sets in each task of `srun -n 2` on one node (Slurm 22.05,
// tests/slurm-test.sh's cluster), task 1.
Env srun_task1() {
    return {{"SLURM_JOB_ID", "7"},          {"SLURM_JOBID", "7"},      {"SLURM_STEP_ID", "0"},
            {"SLURM_PROCID", "1"},          {"SLURM_LOCALID", "1"},    {"SLURM_NODEID", "0"},
            {"SLURM_NTASKS", "2"},          {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "2"},
            {"SLURM_TASKS_PER_NODE", "2"},  {"SLURM_GTIDS", "0,1"}};
}

// What the batch script's shell of `sbatch -n 2` has: no step, the job's counts.
Env sbatch_shell() {
    return {{"SLURM_JOB_ID", "8"},   {"SLURM_PROCID", "0"},         {"SLURM_LOCALID", "0"},
            {"SLURM_NODEID", "0"},   {"SLURM_NTASKS", "2"},         {"SLURM_TASKS_PER_NODE", "2"}};
}

Env with(Env env, const Env& more) {
    for (const auto& [k, v] : more) env[k] = v;
    return env;
}

}  // namespace

TEST_CASE("launcher: none in a plain environment") {
    const LauncherInfo info = detect({{"HOME", "/root"}, {"PATH", "/usr/bin"}});
    CHECK_FALSE(info.found());
    CHECK_FALSE(info.rank);
    CHECK_FALSE(info.local_rank);
    CHECK_FALSE(info.job_id);
}

TEST_CASE("launcher: Slurm step (srun)") {
    const LauncherInfo info = detect(srun_task1());
    CHECK(info.name == "slurm");
    CHECK(info.rank == 1u);
    CHECK(info.world_size == 2u);
    CHECK(info.local_rank == 1u);
    CHECK(info.local_rank_variable == "SLURM_LOCALID");
    CHECK(info.local_size == 2u);
    CHECK(info.local_size_variable == "SLURM_STEP_TASKS_PER_NODE");
    CHECK(info.job_id == std::string("7"));
}

TEST_CASE("launcher: Slurm's tasks per node on several nodes") {
    // Four nodes: 3, 3, 2 and 1 tasks; this task runs on the third.
    Env env = with(srun_task1(), {{"SLURM_STEP_TASKS_PER_NODE", "3(x2),2,1"}, {"SLURM_NODEID", "2"}, {"SLURM_LOCALID", "1"},
                                  {"SLURM_PROCID", "7"}, {"SLURM_STEP_NUM_TASKS", "9"}});
    LauncherInfo info = detect(env);
    CHECK(info.local_size == 2u);
    CHECK(info.rank == 7u);
    CHECK(info.world_size == 9u);
    env["SLURM_NODEID"] = "1";
    CHECK(detect(env).local_size == 3u);
    env["SLURM_NODEID"] = "3";
    env["SLURM_LOCALID"] = "0";
    CHECK(detect(env).local_size == 1u);
    // Without SLURM_NODEID only a list with one count for every node says it.
    env.erase("SLURM_NODEID");
    CHECK_FALSE(detect(env).local_size);
    env["SLURM_STEP_TASKS_PER_NODE"] = "4(x16)";
    CHECK(detect(env).local_size == 4u);

    CHECK(slurm_tasks_on_node("2", 0, "V") == 2);
    CHECK(slurm_tasks_on_node("2(x3),1", 2, "V") == 2);
    CHECK(slurm_tasks_on_node("2(x3),1", 3, "V") == 1);
    CHECK(slurm_tasks_on_node("1,2,3", 2, "V") == 3);
    CHECK_THROWS_AS(slurm_tasks_on_node("2(x3),1", 4, "V"), UsageError);
}

TEST_CASE("launcher: the batch script's shell is one process, not the job's tasks") {
    const LauncherInfo info = detect(sbatch_shell());
    CHECK(info.name == "slurm");
    CHECK(info.rank == 0u);
    CHECK(info.local_rank == 0u);
    // SLURM_TASKS_PER_NODE and SLURM_NTASKS describe the allocation, not a step.
    CHECK_FALSE(info.local_size);
    CHECK_FALSE(info.world_size);
    // Inside a step (SLURM_STEP_ID) without SLURM_STEP_*, they describe the step.
    const LauncherInfo step = detect(with(sbatch_shell(), {{"SLURM_STEP_ID", "0"}}));
    CHECK(step.local_size == 2u);
    CHECK(step.local_size_variable == "SLURM_TASKS_PER_NODE");
    CHECK(step.world_size == 2u);
}

TEST_CASE("launcher: Open MPI, MVAPICH, PMI and torchrun") {
    SUBCASE("Open MPI") {
        const LauncherInfo info = detect({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                                          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
        CHECK(info.name == "openmpi");
        CHECK(info.rank == 5u);
        CHECK(info.world_size == 8u);
        CHECK(info.local_rank == 1u);
        CHECK(info.local_size == 4u);
        CHECK(info.local_size_variable == "OMPI_COMM_WORLD_LOCAL_SIZE");
        CHECK_FALSE(info.job_id);  // Open MPI documents none
    }
    SUBCASE("MVAPICH") {
        const LauncherInfo info = detect({{"MV2_COMM_WORLD_RANK", "3"}, {"MV2_COMM_WORLD_LOCAL_RANK", "3"},
                                          {"MV2_COMM_WORLD_LOCAL_SIZE", "4"}, {"MV2_COMM_WORLD_SIZE", "4"}});
        CHECK(info.name == "mvapich");
        CHECK(info.local_rank == 3u);
        CHECK(info.local_rank_variable == "MV2_COMM_WORLD_LOCAL_RANK");
        CHECK(info.world_size == 4u);
    }
    SUBCASE("PMI") {
        const LauncherInfo info = detect({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"PMI_LOCAL_RANK", "0"}, {"PMI_LOCAL_SIZE", "2"}});
        CHECK(info.name == "pmi");
        CHECK(info.rank == 2u);
        CHECK(info.local_rank == 0u);
        CHECK(info.local_size == 2u);
    }
    SUBCASE("PMI with a rank alone (no local rank)") {
        const LauncherInfo info = detect({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}});
        CHECK(info.name == "pmi");
        CHECK(info.rank == 2u);
        CHECK_FALSE(info.local_rank);
    }
    SUBCASE("torchrun") {
        const LauncherInfo info =
            detect({{"LOCAL_RANK", "3"}, {"RANK", "11"}, {"LOCAL_WORLD_SIZE", "8"}, {"WORLD_SIZE", "16"}, {"GROUP_RANK", "1"}});
        CHECK(info.name == "torchrun");
        CHECK(info.local_rank == 3u);
        CHECK(info.local_size == 8u);
        CHECK(info.rank == 11u);
        CHECK(info.world_size == 16u);
    }
    SUBCASE("a RANK alone is no launcher") {
        // Other tools export RANK; only torchrun's LOCAL_RANK says torchrun.
        CHECK_FALSE(detect({{"RANK", "3"}}).found());
        CHECK_FALSE(detect({{"RANK", "not a number"}}).found());
    }
    SUBCASE("PBS and LSF job ids") {
        CHECK(detect({{"PBS_JOBID", "1234.pbs01"}, {"PMI_RANK", "0"}}).job_id == std::string("1234.pbs01"));
        CHECK(detect({{"LSB_JOBID", "99"}, {"OMPI_COMM_WORLD_RANK", "0"}}).job_id == std::string("99"));
        // A job id alone (a batch shell of PBS) stamps the job, with no launcher.
        const LauncherInfo info = detect({{"PBS_JOBID", "5.server"}});
        CHECK_FALSE(info.found());
        CHECK(info.job_id == std::string("5.server"));
    }
}

TEST_CASE("launcher: mixtures: the innermost launcher wins") {
    SUBCASE("torchrun inside srun") {
        // `srun --ntasks-per-node=1 torchrun --nproc-per-node=4 ...`: every
        // worker inherits the step's SLURM_LOCALID 0 (torchrun was the task);
        // LOCAL_RANK is the worker's own.
        Env env = with(srun_task1(), {{"SLURM_LOCALID", "0"}, {"SLURM_PROCID", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "1"},
                                      {"LOCAL_RANK", "3"}, {"RANK", "7"}, {"LOCAL_WORLD_SIZE", "4"}, {"WORLD_SIZE", "8"}});
        const LauncherInfo info = detect(env);
        CHECK(info.name == "torchrun");
        CHECK(info.local_rank == 3u);
        CHECK(info.local_size == 4u);
        CHECK(info.rank == 7u);
        CHECK(info.world_size == 8u);
        CHECK(info.job_id == std::string("7"));  // the Slurm job it runs in
    }
    SUBCASE("mpirun inside an sbatch script") {
        const LauncherInfo info = detect(with(sbatch_shell(), {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
        CHECK(info.name == "openmpi");
        CHECK(info.local_rank == 3u);
        CHECK(info.job_id == std::string("8"));
    }
    SUBCASE("srun --mpi=pmi2: PMI_RANK without PMI_LOCAL_RANK leaves Slurm in charge") {
        const LauncherInfo info = detect(with(srun_task1(), {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}));
        CHECK(info.name == "slurm");
        CHECK(info.local_rank == 1u);
    }
    SUBCASE("only the winner's variables are read") {
        // A stale or foreign SLURM_PROCID does not break a torchrun worker.
        const LauncherInfo info = detect({{"LOCAL_RANK", "0"}, {"SLURM_PROCID", "x"}, {"SLURM_LOCALID", "-1"}});
        CHECK(info.name == "torchrun");
    }
    SUBCASE("empty values count as unset") {
        CHECK(detect(with(srun_task1(), {{"LOCAL_RANK", ""}})).name == "slurm");
    }
}

TEST_CASE("launcher: malformed values are usage errors naming the variable") {
    const struct {
        Env env;
        const char* variable;
    } cases[] = {
        {with(srun_task1(), {{"SLURM_LOCALID", "one"}}), "SLURM_LOCALID"},
        {with(srun_task1(), {{"SLURM_LOCALID", "-1"}}), "SLURM_LOCALID"},
        {with(srun_task1(), {{"SLURM_LOCALID", " 1"}}), "SLURM_LOCALID"},
        {with(srun_task1(), {{"SLURM_LOCALID", "1.0"}}), "SLURM_LOCALID"},
        {with(srun_task1(), {{"SLURM_LOCALID", "0x1"}}), "SLURM_LOCALID"},
        {with(srun_task1(), {{"SLURM_LOCALID", "99999999999999999999"}}), "SLURM_LOCALID"},
        {with(srun_task1(), {{"SLURM_LOCALID", "2147483648"}}), "SLURM_LOCALID"},
        {with(srun_task1(), {{"SLURM_PROCID", "+1"}}), "SLURM_PROCID"},
        {with(srun_task1(), {{"SLURM_NODEID", "a"}}), "SLURM_NODEID"},
        {with(srun_task1(), {{"SLURM_STEP_NUM_TASKS", "-2"}}), "SLURM_STEP_NUM_TASKS"},
        {with(srun_task1(), {{"SLURM_STEP_TASKS_PER_NODE", "2(x)"}}), "SLURM_STEP_TASKS_PER_NODE"},
        {with(srun_task1(), {{"SLURM_STEP_TASKS_PER_NODE", "2(x0)"}}), "SLURM_STEP_TASKS_PER_NODE"},
        {with(srun_task1(), {{"SLURM_STEP_TASKS_PER_NODE", "2,"}}), "SLURM_STEP_TASKS_PER_NODE"},
        {with(srun_task1(), {{"SLURM_STEP_TASKS_PER_NODE", "(x2)"}}), "SLURM_STEP_TASKS_PER_NODE"},
        {with(srun_task1(), {{"SLURM_STEP_TASKS_PER_NODE", "two"}}), "SLURM_STEP_TASKS_PER_NODE"},
        // SLURM_NODEID beyond the list's nodes.
        {with(srun_task1(), {{"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}, {"SLURM_NODEID", "2"}}), "SLURM_STEP_TASKS_PER_NODE"},
        // Ranks not below their counts: the variables contradict each other.
        {with(srun_task1(), {{"SLURM_LOCALID", "2"}}), "SLURM_LOCALID"},
        {with(srun_task1(), {{"SLURM_PROCID", "2"}}), "SLURM_PROCID"},
        {{{"OMPI_COMM_WORLD_LOCAL_RANK", "x"}}, "OMPI_COMM_WORLD_LOCAL_RANK"},
        {{{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "-4"}}, "OMPI_COMM_WORLD_SIZE"},
        {{{"MV2_COMM_WORLD_LOCAL_RANK", "1"}, {"MV2_COMM_WORLD_LOCAL_SIZE", "1"}}, "MV2_COMM_WORLD_LOCAL_RANK"},
        {{{"PMI_RANK", "r0"}}, "PMI_RANK"},
        {{{"LOCAL_RANK", "cuda:0"}}, "LOCAL_RANK"},
        {{{"LOCAL_RANK", "0"}, {"RANK", "-3"}}, "RANK"},
        {{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4 "}}, "LOCAL_WORLD_SIZE"},
    };
    for (const auto& c : cases) {
        const std::string variable = c.variable;
        CAPTURE(variable);
        std::string message = "(no usage error)";
        try {
            detect(c.env);
        } catch (const UsageError& e) {
            message = e.what();
        }
        CAPTURE(message);
        CHECK(message.find(variable) != std::string::npos);
    }
}

TEST_CASE("launcher: leading zeros and the largest rank are numbers") {
    CHECK(detect({{"LOCAL_RANK", "007"}}).local_rank == 7u);
    CHECK(detect({{"LOCAL_RANK", "0"}}).local_rank == 0u);
    CHECK(detect({{"OMPI_COMM_WORLD_RANK", "2147483647"}}).rank == 2147483647u);
}

TEST_CASE("launcher: the local-rank variables, for messages") {
    const std::string names = local_rank_variables();
    for (const char* v : {"SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "PMI_LOCAL_RANK"}) {
        CAPTURE(v);
        CHECK(names.find(v) != std::string::npos);
    }
    CHECK(names.rfind("SLURM_LOCALID", 0) == 0);
    CHECK(names.find(" or ") != std::string::npos);
}

TEST_CASE("origin: the host always, the launcher's fields when present") {
    SUBCASE("no launcher") {
        const Origin o = make_origin("node17", detect({}));
        CHECK(o.host == "node17");
        CHECK(o.launcher.empty());
        CHECK_FALSE(o.rank);
        const auto labels = origin_labels(o);
        REQUIRE(labels.size() == 1);
        CHECK(labels[0].first == "host");
        CHECK(labels[0].second == "node17");
    }
    SUBCASE("srun") {
        const Origin o = make_origin("node17", detect(srun_task1()));
        CHECK(o.launcher == "slurm");
        CHECK(o.job_id == std::string("7"));
        CHECK(o.rank == 1u);
        CHECK(o.local_rank == 1u);
        CHECK(o.world_size == 2u);
        const auto labels = origin_labels(o);
        REQUIRE(labels.size() == 6);
        const char* keys[] = {"host", "launcher", "job_id", "rank", "local_rank", "world_size"};
        const char* values[] = {"node17", "slurm", "7", "1", "1", "2"};
        for (std::size_t i = 0; i < labels.size(); ++i) {
            CHECK(labels[i].first == keys[i]);
            CHECK(labels[i].second == values[i]);
        }
    }
    SUBCASE("a rank without a local rank") {
        const Origin o = make_origin("n", detect({{"PMI_RANK", "4"}}));
        const auto labels = origin_labels(o);
        REQUIRE(labels.size() == 3);
        CHECK(labels[2].first == "rank");
    }
}
