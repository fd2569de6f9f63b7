// gpumem: GPU memory operations from the command line.
#include <csignal>

#include "cli/app.hpp"

int main(int argc, char** argv) {
    const int status = gpumem::cli::run_gpumem(argc, argv);
    if (status == gpumem::cli::kClosedPipeStatus) {
        // Everything is freed by now; die of the signal the write would
        // have raised, so that a shell pipeline sees what it sees of coreutils.
        std::signal(SIGPIPE, SIG_DFL);
        std::raise(SIGPIPE);
    }
    return status;
}
