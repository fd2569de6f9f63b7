// main() of the browser suites: exit 77 (skipped) when no Chromium is
// installed, so that the suite runs everywhere and counts where it can.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

#include "chromium.hpp"

int main(int argc, char** argv) {
    bool listing = false;
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], "--count", 7) == 0 || std::strncmp(argv[i], "--list", 6) == 0 || std::strncmp(argv[i], "-c", 2) == 0 ||
            std::strncmp(argv[i], "-ltc", 4) == 0)
            listing = true;
    if (!listing && browser::chromium_binary().empty()) {
        std::fprintf(stderr, "no Chromium (chromium, chromium-browser, google-chrome or $GPUMEM_CHROMIUM): skipping\n");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
