// What the tests of reuse-sim record, tune --confirm and max-batch share:
// where the fixtures are (the stand-in torch, its programs), a scratch
// folder per case, and two small predicates.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tests_dir.hpp"

namespace record_fixtures {

using ::tests_dir;

// The stand-in torch (standin/), the chained sitecustomize (chained/) and the programs.
inline std::string record_dir() { return tests_dir() + "/fixtures/record"; }

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
inline bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// A fresh directory for one case's files, removed at the end; `name` tells
// whose it is in /tmp ("/tmp/gpumem-NAME-test-XXXXXX").
struct Scratch {
    std::string path;
    explicit Scratch(const std::string& name = "record") {
        std::string pattern = "/tmp/gpumem-" + name + "-test-XXXXXX";
        path = ::mkdtemp(pattern.data()) ? pattern : std::string();
    }
    ~Scratch() {
        if (!path.empty()) (void)!std::system(("rm -rf '" + path + "'").c_str());
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    std::string operator/(const std::string& name) const { return path + "/" + name; }
};

}  // namespace record_fixtures
