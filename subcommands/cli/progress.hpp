// Progress on stderr for long work, only on a terminal and without -q:
// one line redrawn in place at most ten times a second, erased when done.
#pragma once

#include <cstdint>
#include <string>

namespace gpumem::cli {

class Progress {
public:
    Progress(bool enabled, std::string label, std::uint64_t total);
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
};

}  // namespace gpumem::cli
