// GPU suite for `gpumem info`: runs on the device machine.
#include <doctest/doctest.h>

#include "cli_harness.hpp"

TEST_CASE("gpu info: runs and exits 0") {
    const auto r = run_gpumem({"info"});
    CHECK(r.status == 0);
}
