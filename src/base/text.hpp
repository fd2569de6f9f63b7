// Small text helpers shared by every command: hexadecimal numbers, joined
// lists, one-line messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpumem {

// 0x1f
std::string hex(std::uint64_t value);
// 0x0000001f: `bytes` bytes wide, zero-padded (memset words).
std::string hex_padded(std::uint64_t value, int bytes);
// "a, b, c" (or with `separator`).
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// The pieces between the separators, as written: "a,,b" gives a, "" and b;
// "" gives one empty piece.
std::vector<std::string_view> split(std::string_view text, char separator);
// `s` without the white space (isspace) at either end.
std::string_view trim(std::string_view s);
// `s` in lower case (ASCII).
std::string lower(std::string_view s);
// Newlines and carriage returns become spaces: errors are one line on stderr.
std::string one_line(std::string text);
// `text` safe to quote in a message: a byte outside printable ASCII (a
// control byte, a NUL, a binary file's bytes) as \xNN, so a file's bytes never
// reach the terminal raw; at most `limit` bytes of it, then "...".
std::string printable(std::string_view text, std::size_t limit = 60);
// Whether `text` holds a byte no text line has (NUL or another control byte
// but tab, CR and LF): a binary file's.
bool looks_binary(std::string_view text) noexcept;

}  // namespace gpumem
