// Exception hierarchy of gpumem. Every error carries the exit status the
// command line maps it to, so `main` needs no knowledge of where it came from.
#pragma once

#include <stdexcept>
#include <string>

namespace gpumem {

// Documented in man/gpumem.1.scd, section EXIT STATUS.
enum class ExitStatus : int {
    success = 0,
    runtime_error = 1,
    usage_error = 2,
    no_device = 3,
    verification_failed = 4,
    out_of_memory = 5,
    below_expectation = 6,
    check_failed = 7,
    interrupted = 130,
};

// Short stable identifier of an exit status, used as the JSON error code.
const char* exit_status_name(ExitStatus status) noexcept;

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, ExitStatus status = ExitStatus::runtime_error)
        : std::runtime_error(message), status_(status) {}
    ExitStatus status() const noexcept { return status_; }

private:
    ExitStatus status_;
};

// Bad input from the user: sizes, device specs, files, flag combinations.
class UsageError : public Error {
public:
    explicit UsageError(const std::string& message) : Error(message, ExitStatus::usage_error) {}
};

// No driver, no GPU, or the requested device does not exist at run time.
class NoDeviceError : public Error {
public:
    explicit NoDeviceError(const std::string& message) : Error(message, ExitStatus::no_device) {}
};

// A CUDA runtime or driver call failed; the message names the call and the error.
class CudaError : public Error {
public:
    CudaError(const std::string& call, const std::string& error_name, const std::string& error_text, int code);
    const std::string& call() const noexcept { return call_; }
    const std::string& error_name() const noexcept { return error_name_; }
    int code() const noexcept { return code_; }

private:
    std::string call_;
    std::string error_name_;
    int code_;
};

// An allocation that was the point of the operation failed.
class OutOfMemoryError : public Error {
public:
    OutOfMemoryError(const std::string& message, unsigned long long requested_bytes)
        : Error(message, ExitStatus::out_of_memory), requested_bytes_(requested_bytes) {}
    unsigned long long requested_bytes() const noexcept { return requested_bytes_; }

private:
    unsigned long long requested_bytes_;
};

// Data read back did not match what was written.
class VerificationError : public Error {
public:
    explicit VerificationError(const std::string& message)
        : Error(message, ExitStatus::verification_failed) {}
};

// A measured figure fell below a threshold the user asked to enforce.
class ExpectationError : public Error {
public:
    explicit ExpectationError(const std::string& message)
        : Error(message, ExitStatus::below_expectation) {}
};

// A health check (gpumem check) gave a failing verdict, or gpumem report
// found a failed check or an outlier among the documents it merged.
class CheckFailedError : public Error {
public:
    explicit CheckFailedError(const std::string& message)
        : Error(message, ExitStatus::check_failed) {}
};

// The user pressed Ctrl-C or sent SIGTERM; work stopped cleanly.
class InterruptedError : public Error {
public:
    InterruptedError() : Error("interrupted", ExitStatus::interrupted) {}
};

}  // namespace gpumem
