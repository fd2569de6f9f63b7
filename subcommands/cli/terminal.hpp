// What the terminals on stdout and stderr can show (how many columns, UTF-8
// or not), measured once a run (terminal_screen()) and carried from there in
// OutputOptions::screen to every reader: the tables, charts, help pages,
// progress lines, warnings and errors. Fitting text into those columns is
// width.hpp's, which never asks a terminal itself.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpumem::cli {

// The widest human output gets where it is not a terminal (a pipe, a file).
inline constexpr std::size_t kPipeColumns = 100;

struct Screen {
    // The width human output keeps within: that of the terminal on stdout
    // (clamped to 40..160); elsewhere (a pipe, a file) $COLUMNS up to
    // kPipeColumns, else kPipeColumns. isatty() tells the two apart.
    std::size_t stdout_columns = kPipeColumns;
    // The same for stderr (warnings, errors, progress).
    std::size_t stderr_columns = kPipeColumns;
    // stdout is a terminal whose locale (LC_ALL, LC_CTYPE, LANG) is UTF-8:
    // charts may draw with block characters.
    bool stdout_utf8 = false;
    // stderr is a terminal: an error wraps there; in a pipe or a file it
    // stays one line, for scripts and logs.
    bool stderr_terminal = false;
};

// The run's screen, measured on the first call and the same after: every
// width a run uses comes from this one measurement.
const Screen& terminal_screen();

// `text` as written after `prefix` on stderr, within its columns.
std::string stderr_text(std::string_view prefix, std::string_view text, const Screen& screen);
// An error (one line, `text`) after "gpumem: error: ": wrapped to the
// terminal when stderr is one; one line in a pipe or a file.
std::string error_text(std::string_view text, const Screen& screen);

}  // namespace gpumem::cli
