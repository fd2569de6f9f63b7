// Text within a width: how many columns a UTF-8 string takes on a terminal,
// and every way gpumem fits text into a number of columns (cut, wrapped at
// words, after a separator, prose with its indent kept). Pure: the width is
// always a parameter, measured once by terminal.hpp's terminal_screen() and
// carried in OutputOptions; nothing here asks a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpumem::cli {

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
// `text` broken at spaces into lines of at most `width` columns (a word
// longer than that stands alone on its line); every line but the first starts
// with `indent` spaces, counted in the width; a number and the unit after it
// ("352.38 MiB") stay on one line; width 0 (a pipe) leaves the text as it
// is. Help pages and every answer's prose on a terminal use it.
std::string wrap_words(std::string_view text, std::size_t width, std::size_t indent = 0);
// `text` in lines of at most `columns`, broken only after `after` outside
// brackets (a roundup list [256:1,512:2,>:8] is one item) and at its own
// newlines: an item wider than `columns` alone stays whole.
std::string wrap_after(const std::string& text, std::size_t columns, char after);
// `text` (one line or several) with every line within `columns`: a longer
// line broken at words, its indent kept and the lines after its first two
// further in; a word wider than that alone after its commas. Prose of the
// table format (Report::text_before, text_after), warnings.
std::string fit_prose(std::string_view text, std::size_t columns);
// `text` after `indent`, its lines after the first `more` further in.
std::string indented(const std::string& text, const std::string& indent, std::size_t more);
// The widest line of a text of several, in columns.
std::size_t widest_line(std::string_view text);
// Each line of `text` within `columns`: a longer one cut at the width.
std::string cut_lines(const std::string& text, std::size_t columns);
// `text` as written after `prefix` (a "gpumem: warning: " a terminal shows
// before it): the lines of both within `columns` (fit_prose), without the
// prefix.
std::string text_after_prefix(std::string_view prefix, std::string_view text, std::size_t columns);

}  // namespace gpumem::cli
