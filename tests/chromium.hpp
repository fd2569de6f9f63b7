// Where the browser tests find Chromium: $GPUMEM_CHROMIUM, else chromium,
// chromium-browser or google-chrome on PATH; "" when none is installed
// (browser_main.cpp then skips the suite, exit 77).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace browser {

inline std::string chromium_binary() {
    if (const char* set = std::getenv("GPUMEM_CHROMIUM"); set && *set) return ::access(set, X_OK) == 0 ? set : "";
    const char* path = std::getenv("PATH");
    const std::string dirs = path ? path : "/usr/bin:/bin";
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
        std::size_t start = 0;
        while (start <= dirs.size()) {
            const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
            const std::string candidate = dirs.substr(start, colon - start) + "/" + name;
            if (colon > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
            start = colon + 1;
        }
    }
    return "";
}

}  // namespace browser
