// Everything gpumem prints on stdout goes through write_stdout, so that a
// failed or short write is an error (exit 1, "writing output: No space left
// on device") and a reader that closed the pipe (`gpumem reuse-sim | head -1`)
// ends the run quietly, as coreutils do: main() then dies of SIGPIPE, which
// the shell reports as status 141.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "base/errors.hpp"

namespace gpumem::cli {

// stdout's reader went away (EPIPE). Deliberately not a std::exception, so
// that no handler of errors reports it: nothing is printed about it, on
// stderr or stdout; run_gpumem unwinds and returns kClosedPipeStatus.
class StdoutClosed {};

// A write to stdout failed (disk full, a closed descriptor): exit 1. No JSON
// error document follows it, since stdout is what failed.
class OutputError : public Error {
public:
    explicit OutputError(const std::string& message) : Error(message) {}
};

// Writes all of `text` and flushes. Throws StdoutClosed on EPIPE,
// OutputError ("writing output: ...") on any other failure.
void write_stdout(std::string_view text);

// Makes writes to a closed pipe fail with EPIPE instead of killing the
// process, so that what it holds is freed by unwinding first.
void ignore_sigpipe() noexcept;

}  // namespace gpumem::cli
