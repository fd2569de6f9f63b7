// Ctrl-C and SIGTERM: the handler only sets a flag; long-running work polls it
// and unwinds normally, so every RAII owner frees its memory.
//
// A repeated signal does not cut that clean stop short unless it is meant
// to: coreutils' timeout signals gpumem, then its whole process group, so
// two arrive at once, and a hurried double Ctrl-C is one request. A signal
// forces gpumem to die at once (of that signal, as it would have without a
// handler) only when it comes kForceAfterSeconds or more after the first,
// or is the third.
#pragma once

namespace gpumem {

// How long a clean stop has before a second signal forces it.
inline constexpr int kForceAfterSeconds = 3;

void install_interrupt_handlers();
bool interrupt_requested() noexcept;
int interrupt_signal() noexcept;  // the signal received, 0 if none
void throw_if_interrupted();      // throws InterruptedError
// Sets the flag as a signal would (0 clears it and the count of repeats).
void request_interrupt_for_testing(int signal) noexcept;

// The process groups of programs gpumem runs in groups of their own
// (several side by side): a forced stop kills each (SIGKILL) first, so that
// no program outlives gpumem. At most kMaxGroupsToKill at once; add returns
// false when all are taken (the caller then runs no more at once).
inline constexpr int kMaxGroupsToKill = 64;
bool add_group_to_kill_when_forced(int process_group) noexcept;
void remove_group_to_kill_when_forced(int process_group) noexcept;

// Sleeps `seconds` (<= 0: until a signal) in short steps, waking early on
// Ctrl-C or SIGTERM; false when a signal ended the wait.
bool sleep_interruptibly(double seconds);

}  // namespace gpumem
