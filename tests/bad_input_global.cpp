// Bad invocations of gpumem: global options and the command line as a whole: see bad_input.hpp.
#include "bad_input.hpp"

namespace bad_input {

std::vector<BadCase> global_cases(const Scratch& s) {
    (void)s;
    return {
        {{}, {2}, false},
        {{"frobnicate"}, {2}, true},
        {{"inof"}, {2}, true},
        {{"--list", "strategis"}, {2}, true},
        {{"--schema", "reprot"}, {2}, true},
        {{"--units", "mibs", "info"}},
        {{"--no-such-flag", "info"}},
        {{"info", "--no-such-flag"}, {2}, true},
        {{"--format", "xml", "info"}},
        {{"--units", "parsecs", "info"}},
        {{"--csv", "--json", "info"}},
        {{"--json", "--format", "csv", "info"}},
        {{"--csv", "--format", "table", "info"}},
        {{"--csv", "--format=value", "info"}},
        {{"-q", "-v", "info"}},
        {{"-d"}},
        {{"info", "-d"}},
        {{"-d", "", "info"}},
        {{"-d", "-1", "info"}},
        {{"-d", "zero", "info"}},
        {{"-d", "0,0", "info"}, {2}, true},
        {{"-d", "0,,1", "info"}},
        {{"-d", "GPU-", "info"}},
        {{"-d", "0000:zz:00.0", "info"}},
        {{"-d", "99999999999999999999", "info"}},
        {{"-d", "all,0", "info"}},
        {{"-d", "99", "info"}, kDeviceList},
        {{"-d", "GPU-deadbeef-dead-beef-dead-beefdeadbeef", "info"}, kDeviceList},
        {{"-d", "0000:ff:1f.7", "info"}, kDeviceList},
        // -d local needs a launcher's local rank: without one, exit 2 before the driver.
        {{"-d", "local", "info"}, {2}, true, no_launcher()},
        {{"info", "-d", "local"}, {2}, true, no_launcher()},
        {{"-d", "local", "memset"}, {2}, true, no_launcher()},
        {{"-d", "local", "copy", "h2d"}, {2}, true, no_launcher()},
        {{"-d", "local", "alloc-test", "max"}, {2}, true, no_launcher()},
        {{"-d", "local", "info"}, {2}, true, no_launcher({"RANK=3", "WORLD_SIZE=4"})},  // RANK alone: no launcher
        {{"-d", "local", "info"}, {2}, true, no_launcher({"PMI_RANK=1"})},  // a rank, but no local rank
        {{"-d", "local", "info"}, {2}, false, no_launcher({"SLURM_LOCALID="})},  // empty is unset
        // `local` stands alone.
        {{"-d", "local,0", "info"}, {2}, true, no_launcher({"SLURM_LOCALID=0"})},
        {{"-d", "0,local", "info"}, {2}, false, no_launcher({"SLURM_LOCALID=0"})},
        {{"-d", "all,local", "info"}, {2}, false, no_launcher({"SLURM_LOCALID=0"})},
        {{"-d", "LOCAL", "info"}, {2}, false, no_launcher({"SLURM_LOCALID=0"})},
        // Malformed launcher variables, for every command, named in the message.
        {{"info"}, {2}, true, no_launcher({"SLURM_LOCALID=one", "SLURM_PROCID=0"})},
        {{"-d", "local", "info"}, {2}, true, no_launcher({"SLURM_LOCALID=-1"})},
        {{"memset"}, {2}, true, no_launcher({"OMPI_COMM_WORLD_LOCAL_RANK=1.5"})},
        {{"info"}, {2}, false, no_launcher({"LOCAL_RANK=0", "RANK=-2"})},
        {{"info"}, {2}, false, no_launcher({"LOCAL_RANK=99999999999"})},
        {{"info"}, {2}, false, no_launcher({"SLURM_LOCALID=2", "SLURM_STEP_TASKS_PER_NODE=2", "SLURM_NODEID=0"})},
        {{"info"}, {2}, false, no_launcher({"SLURM_LOCALID=0", "SLURM_STEP_TASKS_PER_NODE=2(x"})},
        {{"reuse-sim", "replay"}, {2}, false, no_launcher({"PMI_RANK=r1"})},
    };
}

}  // namespace bad_input
