// CLI tests: run the gpumem binary and check exit status, stdout and stderr.
#include <doctest/doctest.h>

#include "cli_harness.hpp"

TEST_CASE("cli: --help prints usage on stdout and exits 0") {
    const auto r = run_gpumem({"--help"});
    CHECK(r.status == 0);
    CHECK(r.out.find("Usage: gpumem") != std::string::npos);
    CHECK(r.err.empty());
}
