#include "base/interrupt.hpp"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>

#include "base/errors.hpp"

namespace gpumem {
namespace {

volatile std::sig_atomic_t g_signal = 0;
// Signals after the first, and when the first came (CLOCK_MONOTONIC, ms).
volatile std::sig_atomic_t g_repeats = 0;
std::atomic<long long> g_first_ms{0};
static_assert(std::atomic<long long>::is_always_lock_free, "read and written in a signal handler");
// Each slot a group, 0 free; written outside the handler one slot at a
// time (a slot is a sig_atomic_t: the handler sees a whole value).
volatile std::sig_atomic_t g_groups_to_kill[kMaxGroupsToKill] = {};

long long monotonic_ms() noexcept {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
    return static_cast<long long>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

extern "C" void on_signal(int signal) {
    if (g_signal == 0) {
        g_first_ms = monotonic_ms();
        g_signal = signal;
        return;
    }
    // A repeat while we are already stopping: the same request (timeout's
    // second signal, a double Ctrl-C), unless the stop has had its time or
    // this is the third. Forced, the default action, so that a user is
    // never stuck with an unresponsive process; the program we run in a
    // group of its own goes with us.
    g_repeats = g_repeats + 1;
    if (g_repeats < 2 && monotonic_ms() - g_first_ms < kForceAfterSeconds * 1000LL) return;
    for (const volatile std::sig_atomic_t& group : g_groups_to_kill)
        if (group > 0) ::kill(-static_cast<pid_t>(group), SIGKILL);
    std::signal(signal, SIG_DFL);
    std::raise(signal);
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

void request_interrupt_for_testing(int signal) noexcept {
    g_first_ms = monotonic_ms();
    g_repeats = 0;
    g_signal = signal;
}

bool add_group_to_kill_when_forced(int process_group) noexcept {
    for (volatile std::sig_atomic_t& slot : g_groups_to_kill)
        if (slot == 0) {
            slot = process_group;
            return true;
        }
    return false;
}

void remove_group_to_kill_when_forced(int process_group) noexcept {
    for (volatile std::sig_atomic_t& slot : g_groups_to_kill)
        if (slot == process_group) slot = 0;
}

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
