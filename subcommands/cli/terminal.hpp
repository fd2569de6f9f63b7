// What the terminal on stdout can show: UTF-8 or not, how many columns, and
// how wide a string is there. Used by the table renderer and the charts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpumem::cli {

// stdout is a terminal whose locale (LC_ALL, LC_CTYPE, LANG) is UTF-8.
bool stdout_is_utf8_terminal();
// Columns of the terminal on stdout, else $COLUMNS, else 80; clamped to 40..160.
int terminal_columns();
// Columns a UTF-8 string takes, counting one per code point (enough for the
// box, block and star characters gpumem prints).
std::size_t display_width(std::string_view utf8) noexcept;

}  // namespace gpumem::cli
