// Ctrl-C and SIGTERM: the handler only sets a flag; long-running work polls it
// and unwinds normally, so every RAII owner frees its memory.
#pragma once

namespace gpumem {

void install_interrupt_handlers();
bool interrupt_requested() noexcept;
int interrupt_signal() noexcept;  // the signal received, 0 if none
void throw_if_interrupted();      // throws InterruptedError
void request_interrupt_for_testing(int signal) noexcept;

// Sleeps `seconds` (<= 0: until a signal) in short steps, waking early on
// Ctrl-C or SIGTERM; false when a signal ended the wait.
bool sleep_interruptibly(double seconds);

}  // namespace gpumem
