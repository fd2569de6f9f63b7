// Helpers for the reuse-sim tests: traces written in the test itself, and a
// one-strategy replay on the simulated device.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "reuse_sim/cost_table.hpp"
#include "reuse_sim/simulator.hpp"
#include "reuse_sim/strategy.hpp"

namespace rs = gpumem::reuse_sim;

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// Events held in memory: A(id, size, tag, stream), F(id), S().
class VectorSource final : public rs::EventSource {
public:
    explicit VectorSource(std::vector<rs::Event> events) : events_(std::move(events)) {}
    bool next(rs::Event& e) override {
        if (pos_ == events_.size()) return false;
        e = events_[pos_++];
        e.line = pos_;
        return true;
    }
    std::string location(std::uint64_t line) const override { return "test:" + std::to_string(line); }
    std::string description() const override { return "test events"; }
    std::string format() const override { return "generated"; }
    bool rewind() override {
        pos_ = 0;
        return true;
    }

private:
    std::vector<rs::Event> events_;
    std::size_t pos_ = 0;
};

inline rs::Event A(std::uint64_t id, std::uint64_t size, std::uint32_t tag = rs::kNoTag, std::uint64_t stream = 0) {
    return rs::Event{rs::EventKind::alloc, id, size, stream, tag, 0};
}
inline rs::Event F(std::uint64_t id) { return rs::Event{rs::EventKind::free, id, 0, 0, rs::kNoTag, 0}; }
inline rs::Event S() { return rs::Event{rs::EventKind::sync, 0, 0, 0, rs::kNoTag, 0}; }

struct Outcome {
    rs::LaneResult result;
    rs::ReplaySummary summary;
    std::uint64_t detail(const std::string& key) const {
        for (const auto& [k, v] : result.details)
            if (k == key) return v;
        throw std::runtime_error("no detail " + key);
    }
};

inline Outcome run_strategy(const std::string& strategy, std::vector<rs::Event> events, rs::StrategyOptions options = {},
                            std::uint64_t capacity = rs::kUnlimited) {
    VectorSource source(std::move(events));
    rs::Lane lane(strategy, std::make_unique<rs::SimulatedUpstream>(capacity, nullptr));
    lane.strategy = rs::make_strategy(rs::kStrategies.parse(strategy), options, *lane.upstream);
    rs::Replay replay({&lane}, {});
    Outcome o;
    o.summary = replay.run(source);
    o.result = rs::summarize(lane);
    return o;
}

// A file with `text` that is removed when the object goes away.
struct TempFile {
    std::string path;
    explicit TempFile(const std::string& text, const char* suffix = ".csv") {
        char name[] = "/tmp/gpumem-reuse-sim-XXXXXX";
        const int fd = mkstemp(name);
        close(fd);
        path = std::string(name) + suffix;
        std::rename(name, path.c_str());
        std::ofstream(path, std::ios::binary) << text;
    }
    ~TempFile() { std::remove(path.c_str()); }
};

// Every event of a source.
inline std::vector<rs::Event> read_all(rs::EventSource& s) {
    std::vector<rs::Event> out;
    rs::Event e;
    while (s.next(e)) out.push_back(e);
    return out;
}

// The message of the UsageError that `f` throws ("" if none).
template <typename F>
std::string usage_error(F f) {
    try {
        f();
    } catch (const gpumem::UsageError& e) {
        return e.what();
    }
    return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
