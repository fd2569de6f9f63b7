#include "cli/progress.hpp"

#include <cstdio>

#include <chrono>

#include "cli/width.hpp"

namespace gpumem::cli {

std::string progress_line(std::string_view label, std::uint64_t done, std::uint64_t total, std::string_view detail,
                          std::size_t columns) {
    const std::size_t room = columns > 1 ? columns - 1 : 1;
    const double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0.0;
    char count[64];
    std::snprintf(count, sizeof count, ": %llu/%llu (%.0f%%)", static_cast<unsigned long long>(done),
                  static_cast<unsigned long long>(total), pct);
    std::string line = std::string(label) + count;
    if (!detail.empty() && display_width(line) + 1 + display_width(detail) <= room) return line + " " + std::string(detail);
    if (display_width(line) <= room) return line;
    // The count is what moves: keep it whole, the label cut before it.
    const std::size_t count_width = display_width(count);
    if (count_width + 3 >= room) return fit_columns(line, room);
    return fit_columns(label, room - count_width) + count;
}

Progress::Progress(bool enabled, std::string label, std::uint64_t total, std::size_t columns)
    : enabled_(enabled), label_(std::move(label)), total_(total), columns_(columns) {}

Progress::~Progress() noexcept { finish(); }

void Progress::update(std::uint64_t done, const std::string& detail) {
    if (!enabled_) return;
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    if (drawn_ && now - last_draw_ < 0.1 && done < total_) return;
    last_draw_ = now;
    drawn_ = true;
    const std::string line = progress_line(label_, done, total_, detail, columns_);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
}

void Progress::finish() noexcept {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
}

}  // namespace gpumem::cli
