// Everything gpumem prints on stdout goes through write_stdout, so that a
// failed or short write is an error (exit 1, "writing output: No space left
// on device") and a reader that closed the pipe (`gpumem reuse-sim | head -1`)
// ends the run quietly, as coreutils do: main() then dies of SIGPIPE, which
// the shell reports as status 141.
#pragma once

#include <sys/types.h>

#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// What a path that is not a regular file is, in words for an error
// ("a directory", "a FIFO"...), from its stat mode.
const char* file_kind_in_words(mode_t mode);

// A file gpumem writes besides stdout (--plot FILE.svg), checked before any
// work: `option` names it in errors. Refused as usage errors: an empty
// name, a directory, anything but a regular file (a FIFO, a device), a
// folder that does not exist or takes no new file (checked by creating
// one: access() says yes to root everywhere), gpumem's own executable, and
// any of `inputs` (the run's own input files, the program it runs): the
// write would replace them.
void check_output_file(const std::string& option, const std::string& path, const std::vector<std::string>& inputs = {});
// --plot FILE.svg, for every command that offers it: check_output_file's
// checks, then the name's extension, .svg (any case): the picture is SVG.
void check_plot_file(const std::string& path, const std::vector<std::string>& inputs = {});
// --plot of a bandwidth sweep (memset's, copy's): none, or a file that
// check_plot_file takes when `sweep` (--sizes was given); a usage error
// otherwise, as the picture is bandwidth against size.
std::optional<std::string> check_sweep_plot(const std::optional<std::string>& plot, bool sweep);

// Writes `text` to `path` whole or not at all: a temporary file in the same
// folder, renamed over `path` once written and flushed, so that a reader
// never sees half a file and a failure leaves the old one. Throws Error
// ("OPTION 'path': reason").
void write_file_atomically(const std::string& option, const std::string& path, std::string_view text);

// Makes writes to a closed pipe fail with EPIPE instead of killing the
// process, so that what it holds is freed by unwinding first.
void ignore_sigpipe() noexcept;

}  // namespace gpumem::cli
