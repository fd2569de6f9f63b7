// The JSON readers of gpumem report on one document, in CPU time (the
// figure that a shared machine does not distort much): nlohmann::json's
// DOM, which report used before issue 29, and src/base/fast_json.cpp.
//   build/bench/fast_json_speed FILE [REPEATS]
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/fast_json.hpp"

namespace {
double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: fast_json_speed FILE [REPEATS]\n");
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 2000;
    const double megabytes = static_cast<double>(text.size()) * repeats / 1e6;
    std::size_t values = 0;
    const double t0 = cpu_seconds();
    for (int i = 0; i < repeats; ++i) values += nlohmann::json::parse(text).size();
    const double t1 = cpu_seconds();
    gpumem::fastjson::Document doc;
    gpumem::fastjson::Fault fault;
    for (int i = 0; i < repeats; ++i)
        if (doc.parse(text, 64, fault)) values += doc.root().count;
    const double t2 = cpu_seconds();
    std::printf("%zu bytes x %d: nlohmann::json DOM %.0f MB/s, fast_json %.0f MB/s (CPU time; %zu)\n", text.size(), repeats,
                megabytes / (t1 - t0), megabytes / (t2 - t1), values);
    return 0;
}
