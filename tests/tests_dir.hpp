// Where the tests' own files are (fixtures, the man page, the completions):
// GPUMEM_TESTS_DIR, which tests/run-tests.sh sets so that the suites also run
// from a copy on the GPU machine, else the source tree they were built from.
#pragma once

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

inline std::string tests_dir() {
    const char* dir = std::getenv("GPUMEM_TESTS_DIR");
    return dir ? dir : GPUMEM_TESTS_SOURCE_DIR;
}

// The names in `folder` that end in `suffix`, without it, sorted: a
// folder's fixtures ("x.stats.json" -> "x").
inline std::vector<std::string> names_ending_in(const std::string& folder, const std::string& suffix) {
    std::vector<std::string> names;
    DIR* d = opendir(folder.c_str());
    if (!d) return names;
    while (const dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
            names.push_back(n.substr(0, n.size() - suffix.size()));
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}
