// The bad-input table (test_bad_input.cpp runs it): each command's cases
// live in bad_input_<command>.cpp, the global ones in test_bad_input.cpp.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace bad_input {

using Args = std::vector<std::string>;

struct BadCase {
    Args args;
    std::set<int> statuses = {2};
    bool json = false;  // also run with --json and check the error document
    std::vector<std::string> env = {};  // "NAME=value" to set, "NAME" alone to unset
};

// Unsets every variable that names a launcher's rank, so that a case means
// the same when the suite itself runs under srun or mpirun.
inline std::vector<std::string> no_launcher(std::vector<std::string> more = {}) {
    std::vector<std::string> env = {"SLURM_LOCALID", "SLURM_PROCID", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                    "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_RANK", "PMI_LOCAL_RANK", "PMI_RANK",
                                    "LOCAL_RANK"};
    env.insert(env.end(), more.begin(), more.end());
    return env;
}

// Trace files and the like, written once per process into a temporary folder.
struct Scratch {
    std::string dir;
    Scratch() {
        char tmpl[] = "/tmp/gpumem-bad-input.XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
        dir = tmpl;
        write("empty.csv", "");
        write("comments.csv", "# only a comment\n\n");
        write("bad_header.csv", "this,is,not,a,trace\nalloc,1,10,0,\n");
        write("truncated.csv", "action,id,size,stream,tag\nalloc,1,4096,0,a\nalloc,2,40");
        write("zero_size.csv", "action,id,size,stream,tag\nalloc,1,0,0,\n");
        write("bad_action.csv", "action,id,size,stream,tag\nmalloc,1,10,0,\n");
        write("few_fields.csv", "action,id,size,stream,tag\nalloc,1,10\n");
        write("many_fields.csv", "action,id,size,stream,tag\nalloc,1,10,0,t,extra\n");
        write("huge_size.csv", "action,id,size,stream,tag\nalloc,1,99999999999999999999999,0,\n");
        write("negative_size.csv", "action,id,size,stream,tag\nalloc,1,-5,0,\n");
        write("bad_id.csv", "action,id,size,stream,tag\nalloc,x,10,0,\n");
        write("rmm_bad_pointer.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0xZZ,10,0x0\n");
        write("rmm_bad_action.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,0.1,grab,0x10,10,0x0\n");
        write("rmm_truncated.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0x10");
        write("rmm_zero.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0x10,0,0x0\n");
        write("good.csv", "action,id,size,stream,tag\nalloc,1,4096,0,a\nfree,1,,,\n");
        write("binary.csv", std::string("\x00\x01\x02\xff\xfe\n\x00", 7));
        write("costs_bad.json", "{\"schema_version\": 1, \"kind\": \"gpumem-cost-table\"");
        write("costs_wrong.json", "{\"kind\": \"something else\"}");
        write("costs_array.json", "[1, 2, 3]");
    }
    ~Scratch() {
        const std::string cmd = "rm -rf '" + dir + "'";
        (void)std::system(cmd.c_str());
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(dir + "/" + name, std::ios::binary) << text;
    }
    std::string path(const std::string& name) const { return dir + "/" + name; }
};

inline const Scratch& scratch() {
    static const Scratch s;
    return s;
}

// The exit statuses of a case whose rejection needs the device list (a
// well-formed but absent device): 2 where the GPU machine has fewer devices,
// 3 where there is no driver.
inline const std::set<int> kDeviceList = {2, 3};

std::vector<BadCase> global_cases(const Scratch& s);
std::vector<BadCase> info_cases(const Scratch& s);
std::vector<BadCase> memset_cases(const Scratch& s);
std::vector<BadCase> copy_cases(const Scratch& s);
std::vector<BadCase> alloc_test_cases(const Scratch& s);
std::vector<BadCase> reuse_sim_cases(const Scratch& s);
std::vector<BadCase> check_cases(const Scratch& s);
std::vector<BadCase> report_cases(const Scratch& s);

}  // namespace bad_input
