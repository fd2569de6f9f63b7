#include "cli/terminal.hpp"

#include "cli/output.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
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
    return fit_prose(std::string(prefix) + std::string(text), static_cast<std::size_t>(stderr_columns())).substr(prefix.size());
}

std::string warning_text(std::string_view text) { return stderr_text("gpumem: warning: ", text); }

std::string error_text(std::string_view text) {
    if (::isatty(STDERR_FILENO) == 0) return std::string(text);
    return stderr_text("gpumem: error: ", text);
}

std::size_t display_width(std::string_view utf8) noexcept {
    std::size_t n = 0;
    for (unsigned char c : utf8)
        if ((c & 0xC0) != 0x80) ++n;  // count lead bytes, not continuation bytes
    return n;
}

std::string fit_columns(std::string_view utf8, std::size_t columns) {
    if (display_width(utf8) <= columns) return std::string(utf8);
    const std::size_t keep = columns > 3 ? columns - 3 : 0;
    std::size_t n = 0, end = 0;
    for (; end < utf8.size(); ++end) {
        const bool starts_code_point = (static_cast<unsigned char>(utf8[end]) & 0xC0U) != 0x80U;
        if (starts_code_point && n++ == keep) break;
    }
    return std::string(utf8.substr(0, end)) + std::string("...", columns - keep < 3 ? columns - keep : 3);
}

}  // namespace gpumem::cli
