#pragma once
// gpumem's log: one line a message on stderr ("gpumem: warning: ..."), at the
// level the command line chose (-q, -v, -vv). Only log.cpp includes spdlog:
// its headers, header-only as the static binary needs, cost each file that
// includes them about 10 s of compile time at -O3, and 11 files did (most of
// CI's build time for the libraries). Here a call formats with fmt and hands
// log.cpp the finished line.
#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace gpumem::log {

enum class Level { debug, info, warn, error };

// The lowest level that is written (warn until the command line sets it).
void set_threshold(Level lowest) noexcept;
[[nodiscard]] bool enabled(Level level) noexcept;
// How a message is laid out after its "gpumem: LEVEL: " (given as
// `prefix`): the command line fits a warning within stderr's width, measured
// once for the run. Unset (tests that link the libraries alone): as it is.
// Set before any thread logs.
using Layout = std::function<std::string(Level level, std::string_view prefix, std::string_view message)>;
void set_layout(Layout layout);
// Writes one message, formatted already; never throws (a failed write to
// stderr has nowhere to be reported).
void write(Level level, std::string_view message) noexcept;

template <typename... Args>
void at(Level level, fmt::format_string<Args...> format, Args&&... args) {
    if (enabled(level)) write(level, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
    at(Level::debug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
    at(Level::info, format, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
    at(Level::warn, format, std::forward<Args>(args)...);
}
template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
    at(Level::error, format, std::forward<Args>(args)...);
}

}  // namespace gpumem::log
