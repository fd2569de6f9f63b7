#include "cli/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "cli/width.hpp"

namespace gpumem::cli {
namespace {

bool is_utf8_terminal(int fd) {
    if (::isatty(fd) != 1) return false;
    for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
        const char* value = std::getenv(name);
        if (value == nullptr || *value == '\0') continue;
        std::string v(value);
        std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return v.find("utf-8") != std::string::npos || v.find("utf8") != std::string::npos;
    }
    return false;
}

// The width of the terminal on `fd`; else $COLUMNS, at most kPipeColumns;
// else kPipeColumns. Clamped to 40..160.
std::size_t columns_of(int fd) {
    winsize ws{};
    if (::isatty(fd) == 1 && ::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return std::clamp<std::size_t>(ws.ws_col, 40, 160);
    if (const char* columns = std::getenv("COLUMNS")) {
        // strtol, not atoi: an out-of-range COLUMNS is undefined behaviour for atoi.
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && n > 0) return static_cast<std::size_t>(std::clamp(n, 40L, static_cast<long>(kPipeColumns)));
    }
    return kPipeColumns;
}

Screen measure_screen() {
    Screen screen;
    screen.stdout_columns = columns_of(STDOUT_FILENO);
    screen.stderr_columns = columns_of(STDERR_FILENO);
    screen.stdout_utf8 = is_utf8_terminal(STDOUT_FILENO);
    screen.stderr_terminal = ::isatty(STDERR_FILENO) == 1;
    return screen;
}

}  // namespace

const Screen& terminal_screen() {
    static const Screen screen = measure_screen();
    return screen;
}

std::string stderr_text(std::string_view prefix, std::string_view text, const Screen& screen) {
    return text_after_prefix(prefix, text, screen.stderr_columns);
}

std::string error_text(std::string_view text, const Screen& screen) {
    if (!screen.stderr_terminal) return std::string(text);
    return stderr_text("gpumem: error: ", text, screen);
}

}  // namespace gpumem::cli
