#include "cli/terminal.hpp"

#include "cli/output.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <string_view>

namespace gpumem::cli {

bool stdout_is_utf8_terminal() {
    if (isatty(STDOUT_FILENO) != 1) return false;
    for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
        const char* value = std::getenv(name);
        if (value == nullptr || *value == '\0') continue;
        std::string v(value);
        std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return v.find("utf-8") != std::string::npos || v.find("utf8") != std::string::npos;
    }
    return false;
}

namespace {

// The width of the terminal on `fd`; else $COLUMNS, at most kPipeColumns;
// else kPipeColumns. Clamped to 40..160.
int columns_of(int fd) {
    winsize ws{};
    if (isatty(fd) == 1 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return std::clamp<int>(ws.ws_col, 40, 160);
    if (const char* columns = std::getenv("COLUMNS")) {
        // strtol, not atoi: an out-of-range COLUMNS is undefined behaviour for atoi.
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && n > 0) return static_cast<int>(std::clamp(n, 40L, static_cast<long>(kPipeColumns)));
    }
    return static_cast<int>(kPipeColumns);
}

}  // namespace

int terminal_columns() { return columns_of(STDOUT_FILENO); }

int stderr_columns() { return columns_of(STDERR_FILENO); }

std::string stderr_text(std::string_view prefix, std::string_view text) {
    const std::string fitted = fit_prose(std::string(prefix) + std::string(text), static_cast<std::size_t>(stderr_columns()));
    if (fitted.compare(0, prefix.size(), prefix) == 0) return fitted.substr(prefix.size());
    // The text's first word did not fit after the prefix (a long path): the
    // prefix ends its line, and the text starts on the next (its space became
    // the line break). Cutting the prefix's length off would eat the break
    // and put the next line's indent after the prefix, past the width.
    const std::size_t bare = prefix.find_last_not_of(' ') + 1;
    return fitted.substr(std::min(bare, fitted.size()));
}

std::string warning_text(std::string_view text) { return stderr_text("gpumem: warning: ", text); }

std::string error_text(std::string_view text) {
    if (::isatty(STDERR_FILENO) == 0) return std::string(text);
    return stderr_text("gpumem: error: ", text);
}

namespace {

// The code point that starts at utf8[at], and its length in bytes (a
// malformed byte is one column of its own, as terminals show a
// replacement character).
char32_t code_point_at(std::string_view utf8, std::size_t at, std::size_t& length) noexcept {
    const auto byte = [&utf8](std::size_t i) { return static_cast<unsigned char>(utf8[i]); };
    const unsigned char lead = byte(at);
    length = lead < 0x80 ? 1 : (lead & 0xE0U) == 0xC0U ? 2 : (lead & 0xF0U) == 0xE0U ? 3 : (lead & 0xF8U) == 0xF0U ? 4 : 1;
    if (at + length > utf8.size()) length = 1;
    if (length == 1) return lead;
    char32_t c = lead & (0x7FU >> length);
    for (std::size_t i = 1; i < length; ++i) {
        if ((byte(at + i) & 0xC0U) != 0x80U) {
            length = 1;
            return lead;
        }
        c = (c << 6U) | (byte(at + i) & 0x3FU);
    }
    return c;
}

// Columns a terminal gives one code point: 2 for East Asian wide and
// fullwidth characters (CJK, Hangul, fullwidth forms, most emoji), 0 for
// combining marks and zero-width ones, else 1 (wcwidth's ranges, in short).
std::size_t code_point_columns(char32_t c) noexcept {
    struct Range {
        char32_t first, last;
    };
    static constexpr Range kZero[] = {{0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A}, {0x064B, 0x065F},
                                      {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F},
                                      {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}};
    static constexpr Range kWide[] = {{0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
                                      {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},
                                      {0xA000, 0xA4CF},   {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
                                      {0xFE10, 0xFE19},   {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},
                                      {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}};
    const auto in = [c](const auto& ranges) {
        return std::any_of(std::begin(ranges), std::end(ranges), [c](const Range& r) { return c >= r.first && c <= r.last; });
    };
    if (in(kZero)) return 0;
    return in(kWide) ? 2 : 1;
}

}  // namespace

std::size_t display_width(std::string_view utf8) noexcept {
    std::size_t n = 0;
    for (std::size_t at = 0, length = 1; at < utf8.size(); at += length) n += code_point_columns(code_point_at(utf8, at, length));
    return n;
}

std::size_t prefix_within(std::string_view utf8, std::size_t columns) noexcept {
    std::size_t used = 0, at = 0;
    for (std::size_t length = 1; at < utf8.size(); at += length) {
        const std::size_t width = code_point_columns(code_point_at(utf8, at, length));
        if (used + width > columns) break;
        used += width;
    }
    return at;
}

std::string fit_columns(std::string_view utf8, std::size_t columns) {
    if (display_width(utf8) <= columns) return std::string(utf8);
    const std::size_t keep = columns > 3 ? columns - 3 : 0;
    return std::string(utf8.substr(0, prefix_within(utf8, keep))) + std::string("...", columns - keep < 3 ? columns - keep : 3);
}

}  // namespace gpumem::cli
