#include "cli/progress.hpp"

#include <cstdio>

#include <chrono>

namespace gpumem::cli {

Progress::Progress(bool enabled, std::string label, std::uint64_t total)
    : enabled_(enabled), label_(std::move(label)), total_(total) {}

Progress::~Progress() noexcept { finish(); }

void Progress::update(std::uint64_t done, const std::string& detail) {
    if (!enabled_) return;
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    if (drawn_ && now - last_draw_ < 0.1 && done < total_) return;
    last_draw_ = now;
    drawn_ = true;
    const double pct = total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 0.0;
    std::fprintf(stderr, "\r\033[K%s: %llu/%llu (%.0f%%)%s%s", label_.c_str(), static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total_), pct, detail.empty() ? "" : " ", detail.c_str());
    std::fflush(stderr);
}

void Progress::finish() noexcept {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
}

}  // namespace gpumem::cli
