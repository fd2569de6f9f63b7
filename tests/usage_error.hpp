// The message of the UsageError a call throws, for the CPU suites that check
// what a bad value is told: empty when the call throws none, so that a
// CHECK on what the message holds fails then too.
#pragma once

#include <functional>
#include <string>

#include "base/errors.hpp"

namespace gpumem::test {

inline std::string usage_error(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

}  // namespace gpumem::test
