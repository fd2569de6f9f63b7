// What the terminal on stdout can show: UTF-8 or not, how many columns, and
// how wide a string is there. Used by the table renderer and the charts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpumem::cli {

// stdout is a terminal whose locale (LC_ALL, LC_CTYPE, LANG) is UTF-8.
bool stdout_is_utf8_terminal();
// The widest human output gets where it is not a terminal (a pipe, a file).
inline constexpr std::size_t kPipeColumns = 100;
// The width human output keeps within: that of the terminal on stdout
// (clamped to 40..160); elsewhere (a pipe, a file) $COLUMNS up to
// kPipeColumns, else kPipeColumns. isatty() tells the two apart.
int terminal_columns();
// The same for stderr (warnings).
int stderr_columns();
// `text` as written after `prefix` on stderr: the lines of both within
// stderr_columns() (fit_prose), without the prefix.
std::string stderr_text(std::string_view prefix, std::string_view text);
// A warning as the logger gets it: after its "gpumem: warning: ".
std::string warning_text(std::string_view text);
// An error (one line, `text`) after "gpumem: error: ": wrapped to the
// terminal when stderr is one; one line in a pipe or a file, where scripts
// and logs read it.
std::string error_text(std::string_view text);
// Columns a UTF-8 string takes on a terminal: two for a wide character
// (CJK, fullwidth forms, most emoji), none for a combining mark, else one a
// code point (the box, block and star characters gpumem prints among them).
std::size_t display_width(std::string_view utf8) noexcept;
// The bytes of `utf8`'s longest beginning within `columns` columns (ending
// between UTF-8 sequences, never inside one, nor halfway through a wide
// character).
std::size_t prefix_within(std::string_view utf8, std::size_t columns) noexcept;
// `utf8` within `columns` columns: whole where it fits, else its first
// characters and "..." (cut by display columns, never inside a sequence).
std::string fit_columns(std::string_view utf8, std::size_t columns);

}  // namespace gpumem::cli
