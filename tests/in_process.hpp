// gpumem's command line run in the test's own process, for the CPU suites
// that check what check() refuses without spawning the binary.
#pragma once

#include <string>
#include <vector>

#include "cli/app.hpp"

// check() and everything before the first driver call; returns the exit status.
inline int parse_only(std::vector<std::string> args) {
    args.insert(args.begin(), "gpumem");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return gpumem::cli::run_gpumem(static_cast<int>(argv.size()), argv.data(), gpumem::cli::RunMode::parse_only);
}
