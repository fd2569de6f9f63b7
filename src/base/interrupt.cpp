#include "base/interrupt.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>

#include "base/errors.hpp"

namespace gpumem {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int signal) {
    // A second Ctrl-C while we are already unwinding falls back to the default
    // action, so a user is never stuck with an unresponsive process.
    if (g_signal != 0) {
        std::signal(signal, SIG_DFL);
        std::raise(signal);
        return;
    }
    g_signal = signal;
}

}  // namespace

void install_interrupt_handlers() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: blocking waits return early with EINTR
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

bool interrupt_requested() noexcept { return g_signal != 0; }
int interrupt_signal() noexcept { return g_signal; }

void throw_if_interrupted() {
    if (g_signal != 0) throw InterruptedError();
}

void request_interrupt_for_testing(int signal) noexcept { g_signal = signal; }

bool sleep_interruptibly(double seconds) {
    using Clock = std::chrono::steady_clock;
    const bool forever = !(seconds > 0);
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(forever ? 0.0 : seconds));
    while (g_signal == 0) {
        auto step = std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(50));
        if (!forever) {
            const auto left = until - Clock::now();
            if (left <= Clock::duration::zero()) return true;
            step = std::min(step, left);
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(step).count();
        timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
        nanosleep(&ts, nullptr);  // a signal ends it early (EINTR)
    }
    return false;
}

}  // namespace gpumem
