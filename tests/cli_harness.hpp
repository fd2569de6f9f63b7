// Runs the gpumem binary (path in $GPUMEM_BIN), or any program, with
// arguments and environment changes, and captures its exit status, stdout and
// stderr; start_* runs it in the background.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

struct RunResult {
    int status = -1;
    std::string out, err;
    int stderr_lines() const {
        int n = 0;
        for (char c : err) n += c == '\n';
        return n;
    }
};

inline std::string gpumem_binary() {
    const char* bin = std::getenv("GPUMEM_BIN");
    if (!bin) throw std::runtime_error("GPUMEM_BIN is not set");
    return bin;
}

inline std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A program started in the background with its stdout and stderr going to
// temporary files; wait() collects them.
struct Started {
    pid_t pid = -1;
    std::string out_path, err_path;

    RunResult wait() {
        RunResult r;
        if (pid > 0) {
            int wstatus = 0;
            while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
            }
            r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
            pid = -1;
        }
        r.out = slurp(out_path);
        r.err = slurp(err_path);
        unlink(out_path.c_str());
        unlink(err_path.c_str());
        return r;
    }
    // Still running? (An exited child stays unreaped for wait().)
    bool running() const {
        if (pid <= 0) return false;
        siginfo_t info{};
        if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
        return info.si_pid == 0;
    }
};

// env_overrides: "NAME=value" to set, "NAME" alone to unset. stdin is /dev/null.
inline Started start_program(const std::string& bin, const std::vector<std::string>& args,
                             const std::vector<std::string>& env_overrides = {}) {
    char out_path[] = "/tmp/gpumem-test-outXXXXXX";
    char err_path[] = "/tmp/gpumem-test-errXXXXXX";
    const int out_fd = mkstemp(out_path);
    const int err_fd = mkstemp(err_path);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    for (const std::string& o : env_overrides) {
        const auto eq = o.find('=');
        const std::string name = o.substr(0, eq);
        for (auto it = env_strings.begin(); it != env_strings.end();)
            it = it->rfind(name + "=", 0) == 0 ? env_strings.erase(it) : it + 1;
        if (eq != std::string::npos) env_strings.push_back(o);
    }
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings{bin};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    Started started;
    started.out_path = out_path;
    started.err_path = err_path;
    if (posix_spawn(&started.pid, bin.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) started.pid = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(out_fd);
    close(err_fd);
    return started;
}

inline RunResult run_program(const std::string& bin, const std::vector<std::string>& args,
                             const std::vector<std::string>& env_overrides = {}) {
    return start_program(bin, args, env_overrides).wait();
}

// env_overrides: "NAME=value" to set, "NAME" alone to unset.
inline RunResult run_gpumem(const std::vector<std::string>& args, const std::vector<std::string>& env_overrides = {}) {
    return run_program(gpumem_binary(), args, env_overrides);
}

inline Started start_gpumem(const std::vector<std::string>& args, const std::vector<std::string>& env_overrides = {}) {
    return start_program(gpumem_binary(), args, env_overrides);
}
