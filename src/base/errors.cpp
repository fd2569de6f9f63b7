#include "base/errors.hpp"

namespace gpumem {

const char* exit_status_name(ExitStatus status) noexcept {
    switch (status) {
        case ExitStatus::success: return "success";
        case ExitStatus::runtime_error: return "runtime_error";
        case ExitStatus::usage_error: return "usage_error";
        case ExitStatus::no_device: return "no_device";
        case ExitStatus::verification_failed: return "verification_failed";
        case ExitStatus::out_of_memory: return "out_of_memory";
        case ExitStatus::below_expectation: return "below_expectation";
        case ExitStatus::check_failed: return "check_failed";
        case ExitStatus::interrupted: return "interrupted";
    }
    return "unknown";
}

CudaError::CudaError(const std::string& call, const std::string& error_name, const std::string& error_text,
                     int code)
    : Error(call + " failed: " + error_name + " (" + error_text + ")",
            // cudaErrorNoDevice (100) and cudaErrorInsufficientDriver (35) mean no usable GPU.
            (code == 100 || code == 35) ? ExitStatus::no_device : ExitStatus::runtime_error),
      call_(call),
      error_name_(error_name),
      code_(code) {}

}  // namespace gpumem
