#include "process/child.hpp"
#include "process/file_descriptor.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <utility>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/text.hpp"

namespace gpumem::process {
namespace {

// A signal sent to us by another process (kill) goes on to the program; one
// from the terminal (Ctrl-C) reached the program already, as it is in our
// process group.
volatile sig_atomic_t g_forward = 0;

extern "C" void on_forwarded_signal(int signal, siginfo_t* info, void* /*context*/) {
    if (info == nullptr || info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL) g_forward = signal;
}

class ForwardSignals {
public:
    ForwardSignals() {
        struct sigaction action {};
        action.sa_sigaction = on_forwarded_signal;
        action.sa_flags = SA_SIGINFO;  // no SA_RESTART: waitpid returns with EINTR
        sigemptyset(&action.sa_mask);
        g_forward = 0;
        sigaction(SIGINT, &action, &old_int_);
        sigaction(SIGTERM, &action, &old_term_);
    }
    ~ForwardSignals() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
    }
    ForwardSignals(const ForwardSignals&) = delete;
    ForwardSignals& operator=(const ForwardSignals&) = delete;

private:
    struct sigaction old_int_ {}, old_term_ {};
};

[[noreturn]] void exec_child(std::vector<char*>& argv, std::vector<char*>& envp, bool own_group, int output_fd, int exec_error_fd) {
    // Only async-signal-safe calls between fork and exec.
    if (own_group) {
        ::setpgid(0, 0);
        ::dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    if (output_fd >= 0) {  // dup2 leaves the copies without close-on-exec
        ::dup2(output_fd, STDOUT_FILENO);
        ::dup2(output_fd, STDERR_FILENO);
    }
    for (const int s : {SIGPIPE, SIGINT, SIGTERM}) ::signal(s, SIG_DFL);  // gpumem ignores SIGPIPE; the program must not
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    // The parent says why, once: the pipe closes unread on a successful exec.
    const int error = errno;
    (void)!::write(exec_error_fd, &error, sizeof error);
    ::_exit(error == ENOENT ? 127 : 126);  // as a shell's
}

// The errno of a failed exec, read from the child's end of a close-on-exec
// pipe: 0 once exec succeeded (the pipe closed with nothing in it).
int exec_error(int read_fd) {
    int error = 0;
    ssize_t n;
    do n = ::read(read_fd, &error, sizeof error);
    while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(sizeof error) ? error : 0;
}

// While we wait for a program in a group of its own: a forced stop
// (base/interrupt.hpp) kills that group too, so that it does not outlive us.
class GroupKilledWhenForced {
public:
    explicit GroupKilledWhenForced(pid_t group) noexcept : group_(group) {
        if (group_ > 0) add_group_to_kill_when_forced(group_);
    }
    ~GroupKilledWhenForced() {
        if (group_ > 0) remove_group_to_kill_when_forced(group_);
    }
    GroupKilledWhenForced(const GroupKilledWhenForced&) = delete;
    GroupKilledWhenForced& operator=(const GroupKilledWhenForced&) = delete;

private:
    pid_t group_;
};

// An interruption: the program's whole group is asked to stop, then killed.
int stop_group(pid_t pid) {
    ::kill(-pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {  // 5 s
        if (::waitpid(pid, &status, WNOHANG) == pid) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (i == 99) {
            ::kill(-pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
        }
    }
    ::kill(-pid, SIGKILL);  // stragglers of the group
    return status;
}

int wait_child(pid_t pid, bool own_group, bool& interrupted) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) throw Error(std::string("waitpid: ") + std::strerror(errno));
        if (own_group && interrupt_requested()) {
            interrupted = true;
            return stop_group(pid);
        }
        if (!own_group && g_forward != 0) {
            ::kill(pid, g_forward);
            g_forward = 0;
        }
    }
    return status;
}

std::string start_error_text(const std::string& program, int error) {
    return "cannot run " + program + ": " + std::strerror(error) +
           (error == ENOENT   ? " (name a program in PATH, or give its path)"
            : error == EACCES ? " (not executable: chmod +x it, or name its interpreter first)"
                              : "");
}

}  // namespace

int shell_exit_status(int wait_status) noexcept {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return 1;
}

namespace {

double steady_seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// A program forked and exec'd (in a group of its own where asked): its pid,
// and why exec failed, if it did.
struct Spawned {
    pid_t pid = -1;
    std::optional<std::string> start_error;
};

Spawned spawn(const std::vector<std::string>& command, const ChildOptions& options) {
    if (command.empty()) throw UsageError("no program to run");
    std::vector<std::string> args = command, env = options.environment;
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    FileDescriptor output = open_output_file(options.output_file);
    Pipe exec_pipe = make_pipe();
    Spawned spawned;
    spawned.pid = ::fork();
    if (spawned.pid < 0) throw Error(std::string("fork: ") + std::strerror(errno));
    if (spawned.pid == 0) exec_child(argv, envp, options.own_group, output.get(), exec_pipe.write.get());
    if (options.own_group) ::setpgid(spawned.pid, spawned.pid);  // also here: no window before the child's own call
    output.reset();
    exec_pipe.write.reset();  // so that the read sees the pipe's end once exec succeeds
    if (const int error = exec_error(exec_pipe.read.get()); error != 0) spawned.start_error = start_error_text(command.front(), error);
    return spawned;
}

}  // namespace

ChildExit run_child(const std::vector<std::string>& command, const ChildOptions& options) {
    std::optional<ForwardSignals> forward;
    if (!options.own_group) forward.emplace();
    ChildExit run;
    const double start = steady_seconds();
    const Spawned spawned = spawn(command, options);
    const GroupKilledWhenForced forced_group(options.own_group ? spawned.pid : 0);
    run.start_error = spawned.start_error;
    const int status = wait_child(spawned.pid, options.own_group, run.interrupted);
    run.wall_seconds = steady_seconds() - start;
    run.exit_status = shell_exit_status(status);
    return run;
}

RunningChild::RunningChild(const std::vector<std::string>& command, ChildOptions options) {
    options.own_group = true;
    started_ = steady_seconds();
    const Spawned spawned = spawn(command, options);
    pid_ = spawned.pid;
    start_error_ = spawned.start_error;
    add_group_to_kill_when_forced(pid_);
}

RunningChild RunningChild::adopt(int pid) {
    RunningChild child;
    child.pid_ = pid;
    child.started_ = steady_seconds();
    add_group_to_kill_when_forced(pid);
    return child;
}

RunningChild::RunningChild(RunningChild&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), started_(other.started_), start_error_(std::move(other.start_error_)), exit_(std::move(other.exit_)) {}

RunningChild& RunningChild::operator=(RunningChild&& other) noexcept {
    if (this != &other) {
        release();
        pid_ = std::exchange(other.pid_, -1);
        started_ = other.started_;
        start_error_ = std::move(other.start_error_);
        exit_ = std::move(other.exit_);
    }
    return *this;
}

RunningChild::~RunningChild() { release(); }

// Still running: its group stopped and reaped, so that nothing outlives us.
void RunningChild::release() noexcept {
    if (pid_ > 0 && !exit_) stop_group(pid_);
    if (pid_ > 0) remove_group_to_kill_when_forced(pid_);
    pid_ = -1;
}

std::optional<ChildExit> RunningChild::poll() {
    if (exit_ || pid_ <= 0) return exit_;
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == 0 || (done < 0 && errno == EINTR)) return std::nullopt;
    if (done < 0) throw Error(std::string("waitpid: ") + std::strerror(errno));
    ChildExit run;
    run.exit_status = shell_exit_status(status);
    run.wall_seconds = steady_seconds() - started_;
    run.start_error = start_error_;
    exit_ = run;
    remove_group_to_kill_when_forced(pid_);
    return exit_;
}

ChildExit RunningChild::stop() {
    if (poll()) return *exit_;
    ChildExit run;
    run.exit_status = shell_exit_status(stop_group(pid_));
    run.wall_seconds = steady_seconds() - started_;
    run.interrupted = true;
    run.start_error = start_error_;
    exit_ = run;
    remove_group_to_kill_when_forced(pid_);
    return run;
}

std::vector<std::string> path_candidates(const std::string& program) {
    std::vector<std::string> paths;
    if (program.empty() || program.find('/') != std::string::npos) return paths;
    if (const char* path = std::getenv("PATH"))
        for (std::string_view dir : split(path, ':'))
            if (!dir.empty()) paths.push_back(std::string(dir) + "/" + program);
    return paths;
}

}  // namespace gpumem::process
