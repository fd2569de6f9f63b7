// Shared by the libFuzzer targets: only gpumem::Error (UsageError and its
// siblings) may leave a parser; any other exception is a finding, so it is
// reported and the process aborts for libFuzzer to keep the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "base/errors.hpp"

template <typename F>
inline void fuzz_expect_only_gpumem_errors(F&& body) {
    try {
        body();
    } catch (const gpumem::Error&) {
        // Rejected input: the expected outcome for most of the corpus.
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz finding: unexpected exception: %s\n", e.what());
        std::abort();
    } catch (...) {
        std::fprintf(stderr, "fuzz finding: unexpected non-std exception\n");
        std::abort();
    }
}

inline std::string_view fuzz_text(const unsigned char* data, std::size_t size) {
    return std::string_view(reinterpret_cast<const char*>(data), size);
}
