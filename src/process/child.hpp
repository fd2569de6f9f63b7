// Running another program and waiting for it: fork, exec with an
// environment of the caller's making, signals and process groups, waitpid.
// reuse-sim's record, tune --confirm and max-batch run the user's program
// through this; it knows nothing of the command line (no CLI11, no
// printing) nor of what the program records.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpumem::process {

// How the program runs.
struct ChildOptions {
    // A process group of its own, its stdout on our stderr (our stdout holds
    // a report), and an interruption of ours (base/interrupt.hpp) stops the
    // whole group: asked with SIGTERM, killed after 5 s (at once when a
    // repeated signal forces gpumem to die). Otherwise it runs
    // in our group (the terminal's Ctrl-C reaches it as under `time`), its
    // stdout its own, and a SIGINT or SIGTERM sent to us by another process
    // goes on to it.
    bool own_group = false;
    // Its whole environment, NAME=VALUE each.
    std::vector<std::string> environment;
    // Non-empty: its stdout and stderr both go to this file (created or
    // emptied, mode 0600), not to the terminal: a search that runs a
    // program a dozen times keeps its output for when a run fails.
    std::string output_file;
};

struct ChildExit {
    int exit_status = 0;       // as a shell reports it (128 + signal; 127, 126 when exec failed)
    double wall_seconds = 0;
    bool interrupted = false;  // own_group: our interruption stopped it
    // "cannot run CMD: why" when exec failed (the exit status is then 127
    // or 126, as a shell's).
    std::optional<std::string> start_error;
};

// Runs `command` (its first word searched on PATH) and waits for it. Throws
// gpumem::Error when it cannot be started at all (no pipe, no fork) or
// waiting fails; a failed exec is reported, not thrown.
ChildExit run_child(const std::vector<std::string>& command, const ChildOptions& options);

// A program started in a process group of its own and not waited for:
// several run side by side, each polled. Move-only; its destructor stops
// it (its group asked with SIGTERM, killed after 5 s) if it still runs,
// and never throws. Its stdout goes to our stderr or options.output_file,
// as run_child's own_group (options.own_group is taken as set).
class RunningChild {
public:
    // Throws as run_child does; a failed exec is the exit's start_error.
    RunningChild(const std::vector<std::string>& command, ChildOptions options);
    RunningChild(RunningChild&& other) noexcept;
    RunningChild& operator=(RunningChild&& other) noexcept;
    RunningChild(const RunningChild&) = delete;
    RunningChild& operator=(const RunningChild&) = delete;
    ~RunningChild();

    // A process already started by another (a fork server's run, which
    // made itself a group leader) that is now our child: waited for and
    // stopped as one we started.
    static RunningChild adopt(int pid);

    // Its exit once it ended (once: later calls give the same), without waiting.
    std::optional<ChildExit> poll();
    // Stops it now (its group asked, then killed): an interrupted exit.
    ChildExit stop();
    int pid() const noexcept { return pid_; }

private:
    RunningChild() = default;
    void release() noexcept;
    int pid_ = -1;
    double started_ = 0;  // steady clock, seconds
    std::optional<std::string> start_error_;
    std::optional<ChildExit> exit_;
};

// A wait status as a shell reports it: the exit code, 128 + the signal that
// killed it, else 1.
int shell_exit_status(int wait_status) noexcept;

// Where execvp would look for `program`: each directory of PATH with the
// name appended, for a name without '/'; nothing otherwise.
std::vector<std::string> path_candidates(const std::string& program);

}  // namespace gpumem::process
