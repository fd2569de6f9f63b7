// The launcher through the binary: every JSON document carries its origin
// (the host always, the launcher's rank and job when gpumem runs under one),
// on success and failure, for every command; -d
// local without a launcher and malformed launcher variables are usage errors.
// The environment is set per run, so these cases mean the same under srun.
#include <doctest/doctest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

using nlohmann::json;
using Args = std::vector<std::string>;

namespace {

// Unsets every launcher variable, then sets `more`.
std::vector<std::string> env_with(std::vector<std::string> more = {}) {
    std::vector<std::string> env = {"SLURM_LOCALID", "SLURM_PROCID", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NODEID",
                                    "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_STEP_NUM_TASKS",
                                    "SLURM_NTASKS", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                    "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
                                    "MV2_COMM_WORLD_RANK", "PMI_LOCAL_RANK", "PMI_RANK", "PMI_SIZE", "LOCAL_RANK", "RANK",
                                    "LOCAL_WORLD_SIZE", "WORLD_SIZE", "PBS_JOBID", "LSB_JOBID"};
    env.insert(env.end(), more.begin(), more.end());
    return env;
}

// Task 1 of `srun -n 2` in job 42.
std::vector<std::string> srun_task1() {
    return env_with({"SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_LOCALID=1", "SLURM_NODEID=0",
                     "SLURM_STEP_TASKS_PER_NODE=2", "SLURM_STEP_NUM_TASKS=2"});
}

std::string host() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
}

json document(const RunResult& r) {
    CAPTURE(r.out);
    CAPTURE(r.err);
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));
    REQUIRE(doc.is_object());
    return doc;
}

void check_srun_origin(const RunResult& r) {
    const json doc = document(r);
    REQUIRE(doc.contains("origin"));
    const json& o = doc.at("origin");
    CHECK(o.at("host") == host());
    CHECK(o.at("launcher") == "slurm");
    CHECK(o.at("job_id") == "42");
    CHECK(o.at("rank") == 1);
    CHECK(o.at("local_rank") == 1);
    CHECK(o.at("world_size") == 2);
    // Right after the envelope, before the command's own keys.
    std::vector<std::string> keys;
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(r.out);
    for (const auto& [k, v] : ordered.items()) keys.push_back(k);
    REQUIRE(keys.size() > 6);
    CHECK(keys[5] == "origin");
}

}  // namespace

TEST_CASE("launcher cli: documents carry the origin under srun, on success and failure") {
    SUBCASE("reuse-sim, which succeeds without a GPU") {
        const RunResult r = run_gpumem({"reuse-sim", "replay", "--json", "--steps", "2"}, srun_task1());
        CHECK(r.status == 0);
        check_srun_origin(r);
    }
    SUBCASE("a GPU command: its result here or its no-device error") {
        const RunResult r = run_gpumem({"info", "--json", "-d", "local"}, srun_task1());
        CHECK((r.status == 0 || r.status == 3));  // 3: no driver here
        check_srun_origin(r);
    }
    SUBCASE("a usage error found by a command's check") {
        const RunResult r = run_gpumem({"memset", "--json", "-s", "0"}, srun_task1());
        CHECK(r.status == 2);
        check_srun_origin(r);
    }
    SUBCASE("a parse error") {
        const RunResult r = run_gpumem({"memset", "--json", "--no-such-option"}, srun_task1());
        CHECK(r.status == 2);
        check_srun_origin(r);
    }
}

TEST_CASE("launcher cli: without a launcher the origin is the host alone") {
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--json", "--steps", "2"}, env_with());
    CHECK(r.status == 0);
    const json doc = document(r);
    REQUIRE(doc.contains("origin"));
    CHECK(doc.at("origin") == json{{"host", host()}});
    // A batch system's job without a launcher is still stamped.
    const json pbs = document(run_gpumem({"reuse-sim", "replay", "--json", "--steps", "2"}, env_with({"PBS_JOBID=17.pbs"})));
    CHECK(pbs.at("origin") == json{{"host", host()}, {"job_id", "17.pbs"}});
}

TEST_CASE("launcher cli: torchrun inside srun is stamped as torchrun") {
    std::vector<std::string> env = srun_task1();
    for (const char* v : {"LOCAL_RANK=3", "RANK=7", "LOCAL_WORLD_SIZE=4", "WORLD_SIZE=8", "SLURM_LOCALID=0",
                          "SLURM_STEP_TASKS_PER_NODE=1"})
        env.emplace_back(v);
    const json doc = document(run_gpumem({"reuse-sim", "replay", "--json", "--steps", "2"}, env));
    const json& o = doc.at("origin");
    CHECK(o.at("launcher") == "torchrun");
    CHECK(o.at("local_rank") == 3);
    CHECK(o.at("rank") == 7);
    CHECK(o.at("world_size") == 8);
    CHECK(o.at("job_id") == "42");
}

TEST_CASE("launcher cli: text and CSV output carry no origin") {
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--csv", "--steps", "2"}, srun_task1());
    CHECK(r.status == 0);
    CHECK(r.out.find("slurm") == std::string::npos);
}

TEST_CASE("launcher cli: -d local without a launcher is a usage error that lists the variables") {
    const RunResult r = run_gpumem({"info", "-d", "local"}, env_with());
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.stderr_lines() == 1);
    CHECK(r.err.find("-d local needs a launcher's local rank: SLURM_LOCALID") != std::string::npos);
    for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK (torchrun)", "PMI_LOCAL_RANK"})
        CHECK(r.err.find(v) != std::string::npos);
}

TEST_CASE("launcher cli: a malformed launcher variable is a usage error naming it, for every command") {
    for (const Args& args : {Args{"info"}, Args{"reuse-sim", "replay", "--steps", "2"}, Args{"memset"}}) {
        const RunResult r = run_gpumem(args, env_with({"SLURM_LOCALID=first", "SLURM_PROCID=0"}));
        CAPTURE(r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find("SLURM_LOCALID='first'") != std::string::npos);
    }
    // --version and --help still answer.
    CHECK(run_gpumem({"--help"}, env_with({"SLURM_LOCALID=first"})).status == 0);
    const RunResult version = run_gpumem({"--version"}, env_with({"SLURM_LOCALID=first"}));
    CHECK(version.status == 0);
}

TEST_CASE("launcher cli: the schema declares the origin for every command") {
    const json schemas = json::parse(run_gpumem({"--schema"}).out);
    for (const auto& item : schemas.items()) {
        const std::string command = item.key();  // clang 14 cannot capture a structured binding (CAPTURE is a lambda)
        const json& schema = item.value();
        CAPTURE(command);
        const json& origin = schema.at("properties").at("origin");
        CHECK(origin.at("additionalProperties") == false);
        for (const char* key : {"host", "launcher", "job_id", "rank", "local_rank", "world_size"})
            CHECK(origin.at("properties").contains(key));
        CHECK(origin.at("properties").at("launcher").at("enum").size() == 6);  // five launchers and null
    }
}
