// The one file that includes spdlog (see log.hpp).
#include "core/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>

namespace gpumem::log {
namespace {

std::atomic<Level> threshold{Level::warn};

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

void write(Level level, std::string_view message) noexcept {
    try {
        logger().log(to_spdlog(level), "{}", message);
    } catch (...) {  // stderr failed: nothing is left to tell
    }
}

}  // namespace gpumem::log
