#include "cli/writer.hpp"

#include <stdio_ext.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

namespace gpumem::cli {

void write_stdout(std::string_view text) {
    errno = 0;
    const std::size_t written = text.empty() ? 0 : std::fwrite(text.data(), 1, text.size(), stdout);
    if (written == text.size() && std::fflush(stdout) == 0) return;
    const int error = errno != 0 ? errno : EIO;
    // Drop what stdio still holds, so that exit() does not try it again.
    __fpurge(stdout);
    std::clearerr(stdout);
    if (error == EPIPE) throw StdoutClosed();
    throw OutputError(std::string("writing output: ") + std::strerror(error));
}

void ignore_sigpipe() noexcept { std::signal(SIGPIPE, SIG_IGN); }

}  // namespace gpumem::cli
