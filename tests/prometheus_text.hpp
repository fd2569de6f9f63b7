// Prometheus text exposition in the tests: tests/prometheus-check.sh run on
// a text (promtool and prometheus_client validate it; the test asserts what
// it holds), and a reader of the samples for those assertions. The reader
// is no validator (the script is): it reads what gpumem writes back.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "cli_harness.hpp"
#include "tests_dir.hpp"

namespace prometheus_text {

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

struct Exposition {
    std::vector<Sample> samples;
    std::map<std::string, std::string> types;  // family: gauge, counter
    std::map<std::string, std::string> helps;  // family: its text, unescaped as written

    // Samples of `name` whose labels include every one of `labels`.
    std::vector<Sample> find(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
        std::vector<Sample> found;
        for (const Sample& s : samples) {
            if (s.name != name) continue;
            bool all = true;
            for (const auto& [key, value] : labels) {
                const auto it = s.labels.find(key);
                all = all && it != s.labels.end() && it->second == value;
            }
            if (all) found.push_back(s);
        }
        return found;
    }
    // The value of the one sample of `name` with `labels`; none when there is not exactly one.
    std::optional<double> value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
        const std::vector<Sample> found = find(name, labels);
        if (found.size() != 1) return std::nullopt;
        return found.front().value;
    }
};

// The label set of a sample line, from the character after '{'; advances `at` past '}'.
inline std::map<std::string, std::string> read_labels(const std::string& line, std::size_t& at) {
    std::map<std::string, std::string> labels;
    while (at < line.size() && line[at] != '}') {
        const std::size_t eq = line.find("=\"", at);
        if (eq == std::string::npos) throw std::runtime_error("bad labels: " + line);
        const std::string key = line.substr(at, eq - at);
        std::string value;
        for (at = eq + 2; at < line.size() && line[at] != '"'; ++at) {
            if (line[at] == '\\' && at + 1 < line.size()) {
                ++at;
                value += line[at] == 'n' ? '\n' : line[at];
            } else {
                value += line[at];
            }
        }
        labels[key] = value;
        at += 1;                                    // the closing quote
        if (at < line.size() && line[at] == ',') ++at;
    }
    ++at;  // '}'
    return labels;
}

inline Exposition parse(const std::string& text) {
    Exposition e;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        if (line.empty()) continue;
        if (line.rfind("# TYPE ", 0) == 0 || line.rfind("# HELP ", 0) == 0) {
            const std::size_t space = line.find(' ', 7);
            auto& map = line[2] == 'T' ? e.types : e.helps;
            map[line.substr(7, space - 7)] = space == std::string::npos ? "" : line.substr(space + 1);
            continue;
        }
        if (line[0] == '#') continue;
        Sample s;
        std::size_t at = line.find_first_of("{ ");
        s.name = line.substr(0, at);
        if (at < line.size() && line[at] == '{') s.labels = read_labels(line, ++at);
        s.value = std::strtod(line.c_str() + at, nullptr);
        e.samples.push_back(std::move(s));
    }
    return e;
}

// The validation script's verdict on a text: status 0 (valid), 1 (rejected,
// with the readers' messages), 77 (no reader installed).
struct Check {
    int status = -1;
    std::string messages;
};

inline std::string check_script() {
    return tests_dir() + "/prometheus-check.sh";
}

// The script on several texts at once (it starts its readers once for them
// all). env: "PROMTOOL=" or "PROMETHEUS_PYTHON=" leaves that reader out.
inline Check check(const std::vector<std::string>& texts, const std::vector<std::string>& env = {}) {
    std::vector<std::string> paths;
    for (const std::string& text : texts) {
        char path[] = "/tmp/gpumem-prometheus-XXXXXX";
        const int fd = mkstemp(path);
        if (fd < 0) throw std::runtime_error("mkstemp failed");
        close(fd);
        std::ofstream(path, std::ios::binary) << text;
        paths.emplace_back(path);
    }
    std::vector<std::string> args{check_script()};
    args.insert(args.end(), paths.begin(), paths.end());
    const RunResult r = run_program("/bin/bash", args, env);
    for (const std::string& path : paths) std::remove(path.c_str());
    return {r.status, r.err + r.out};
}

inline Check check(const std::string& text, const std::vector<std::string>& env = {}) {
    return check(std::vector<std::string>{text}, env);
}

// A test's check: the script accepts every text, or cannot run here (no
// reader installed: said, and not failed, as a GPU machine may lack both).
inline void expect_valid(const std::vector<std::string>& texts) {
    const Check c = check(texts);
    if (c.status == 77) {
        MESSAGE("promtool and prometheus_client both missing: exposition not validated");
        return;
    }
    CAPTURE(c.messages);
    CHECK(c.status == 0);
}

}  // namespace prometheus_text
