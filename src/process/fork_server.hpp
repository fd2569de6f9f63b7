// A Python process that imports a script's top-level modules once and then
// forks a process for each run of the script (fork_server.py, whose source
// the caller passes in): a search that runs one Python program a dozen times
// pays its imports (15 to 20 s for Lightning) once, and each run still gets
// its own environment, output, process group and CUDA context, since CUDA
// was never initialized in the server. Each run is forked twice and so
// becomes our child (we are a child subreaper once a server started):
// RunningChild waits for it and stops its group as for any other.
// No printing, no CLI11.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "process/child.hpp"
#include "process/temporary_directory.hpp"

namespace gpumem::process {

class ForkServer {
public:
    enum class State { importing, ready, unfit };

    // Starts `interpreter` (as a run would: searched on PATH) on the server's
    // source with `script`, in `environment`; its output goes to a file of
    // its own (the end of it is the why of a server that ended). Throws
    // gpumem::Error where no process can be started.
    ForkServer(const std::string& source, const std::string& interpreter, const std::string& script, std::vector<std::string> environment);
    ForkServer(const ForkServer&) = delete;
    ForkServer& operator=(const ForkServer&) = delete;
    ~ForkServer() = default;  // the server stopped (its group), then its folder removed

    // Where it stands, read without waiting: still importing, ready, or
    // unfit (its imports started CUDA or a thread, it ended, or it was
    // still importing after kImportLimitSeconds, and was then stopped): why().
    State state();
    static constexpr double kImportLimitSeconds = 300;
    const std::string& why() const noexcept { return why_; }
    // Seconds its imports took, once ready.
    double ready_seconds() const noexcept { return ready_seconds_; }

    // A run of `argv` (python SCRIPT ARGS) forked from the ready server,
    // with this environment and working directory, its stdout and stderr
    // to `output_file` (empty: our stderr), `preload` (a Python file) run
    // first, as sitecustomize would be. None, and `why`, where the server
    // cannot start it: the caller then starts a fresh process.
    std::optional<RunningChild> fork_run(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                                         const std::string& output_file, const std::string& preload, std::string& why);

private:
    TemporaryDirectory dir_;  // declared first: removed after the server stopped
    std::optional<RunningChild> server_;
    State state_ = State::importing;
    std::string why_;
    double ready_seconds_ = 0;
    double started_;  // steady clock, seconds
};

}  // namespace gpumem::process
