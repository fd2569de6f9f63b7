// The one file that includes spdlog (see log.hpp).
#include "core/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

namespace gpumem::log {
namespace {

std::atomic<Level> threshold{Level::warn};
Layout& installed_layout() {
    static Layout instance;
    return instance;
}

spdlog::level::level_enum to_spdlog(Level level) noexcept {
    switch (level) {
        case Level::debug: return spdlog::level::debug;
        case Level::info: return spdlog::level::info;
        case Level::warn: return spdlog::level::warn;
        case Level::error: return spdlog::level::err;
    }
    return spdlog::level::err;
}

// Made on first use, so that a message logged before the command line is
// parsed (or by a test that links the libraries alone) still goes to stderr
// in gpumem's form, never to stdout as spdlog's default logger would.
spdlog::logger& logger() {
    static const std::shared_ptr<spdlog::logger> instance = [] {
        auto made = std::make_shared<spdlog::logger>("gpumem", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        made->set_pattern("%n: %l: %v");
        made->set_level(spdlog::level::trace);  // the threshold above decides
        return made;
    }();
    return *instance;
}

}  // namespace

void set_threshold(Level lowest) noexcept { threshold.store(lowest, std::memory_order_relaxed); }

bool enabled(Level level) noexcept { return level >= threshold.load(std::memory_order_relaxed); }

void set_layout(Layout layout) { installed_layout() = std::move(layout); }

void write(Level level, std::string_view message) noexcept {
    try {
        if (const Layout& fit = installed_layout()) {
            const auto name = spdlog::level::to_string_view(to_spdlog(level));
            const std::string prefix = "gpumem: " + std::string(name.data(), name.size()) + ": ";
            logger().log(to_spdlog(level), "{}", fit(level, prefix, message));
            return;
        }
        logger().log(to_spdlog(level), "{}", message);
    } catch (...) {  // stderr failed: nothing is left to tell
    }
}

}  // namespace gpumem::log
