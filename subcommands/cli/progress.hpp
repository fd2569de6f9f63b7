// Progress on stderr for long work, only on a terminal and without -q:
// one line redrawn in place at most ten times a second, erased when done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpumem::cli {

// The progress line "LABEL: DONE/TOTAL (P%) DETAIL" within `columns` - 1
// columns: a line as wide as the terminal, or wider, wraps there, and the
// "\r" that redraws it then returns only to the start of its last row,
// leaving the rest behind on every redraw. The detail goes first, then the
// label's end (marked "...").
std::string progress_line(std::string_view label, std::uint64_t done, std::uint64_t total, std::string_view detail,
                          std::size_t columns);

class Progress {
public:
    // `columns`: stderr's width (OutputOptions::screen.stderr_columns).
    Progress(bool enabled, std::string label, std::uint64_t total, std::size_t columns);
    ~Progress() noexcept;  // erases the line
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    void update(std::uint64_t done, const std::string& detail = "");
    void finish() noexcept;

private:
    bool enabled_;
    bool drawn_ = false;
    std::string label_;
    std::uint64_t total_;
    double last_draw_ = 0;
    std::size_t columns_;
};

}  // namespace gpumem::cli
