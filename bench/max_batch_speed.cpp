// reuse-sim max-batch's core on a pair (or more) of recordings, timed by
// phase: reading, fitting (alignment and size laws), the search (all lanes'
// probes replayed together), wall and CPU seconds. Calls
// src/reuse_sim/batch_model.hpp directly, until the command lands.
//   build/bench/max_batch_speed CAPACITY_BYTES THREADS LANES B=FILE B=FILE...
//   LANES: "default" (PyTorch's defaults) or "tune" (--tune's grid under a cap,
//   settings that provably replay alike replayed once).
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "reuse_sim/batch_model.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tuner.hpp"

namespace rs = gpumem::reuse_sim;

namespace {
double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
double wall_seconds() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
struct Clock {
    double wall = wall_seconds(), cpu = cpu_seconds();
    void lap(const char* phase) {
        const double w = wall_seconds(), c = cpu_seconds();
        std::printf("%-8s wall %7.3f s  cpu %7.3f s\n", phase, w - wall, c - cpu);
        wall = w;
        cpu = c;
    }
};
}  // namespace

int main(int argc, char** argv) try {
    if (argc < 6) {
        std::fprintf(stderr, "usage: max_batch_speed CAPACITY_BYTES THREADS default|tune B=FILE B=FILE...\n");
        return 2;
    }
    const std::uint64_t capacity = std::strtoull(argv[1], nullptr, 10);
    const unsigned threads = static_cast<unsigned>(std::atoi(argv[2]));
    const std::string lanes_kind = argv[3];
    const double start_wall = wall_seconds(), start_cpu = cpu_seconds();
    Clock clock;
    std::vector<rs::BatchRecording> recordings;
    std::uint64_t events = 0;
    for (int i = 4; i < argc; ++i) {
        const std::string arg = argv[i];
        const std::size_t eq = arg.find('=');
        if (eq == std::string::npos) throw gpumem::UsageError("expected B=FILE, got " + arg);
        rs::BatchRecording r;
        r.batch = std::strtoull(arg.substr(0, eq).c_str(), nullptr, 10);
        r.name = arg.substr(eq + 1);
        std::unique_ptr<rs::EventSource> source = rs::open_trace(r.name, rs::TraceFormat::automatic);
        rs::Event e;
        while (source->next(e)) r.events.push_back(e);
        events += r.events.size();
        recordings.push_back(std::move(r));
    }
    clock.lap("read");
    const rs::BatchModel model = rs::BatchModel::fit(std::move(recordings));
    clock.lap("fit");
    const rs::BatchModelChecks& c = model.checks();
    std::vector<rs::TorchLane> lanes;
    std::size_t defaults = 0;  // the lane of PyTorch's default setting
    if (lanes_kind == "tune") {
        const std::vector<rs::GridPoint> points = rs::grid_points(rs::TorchOptions{}, rs::grid_axes({}, true, true));
        const std::vector<rs::Event> at_largest = model.events_at(model.largest_recorded_batch());
        std::vector<std::uint64_t> sizes;
        for (const rs::Event& e : at_largest)
            if (e.kind == rs::EventKind::alloc) sizes.push_back(e.size);
        const std::vector<std::size_t> same = rs::equivalent_points(points, sizes);
        std::vector<std::size_t> lane_of(points.size(), 0);
        for (std::size_t i = 0; i < points.size(); ++i) {
            if (same[i] == i) lanes.push_back({points[i].options, capacity});
            lane_of[i] = same[i] == i ? lanes.size() - 1 : lane_of[same[i]];
            if (points[i].recorded) defaults = lane_of[i];
        }
        std::printf("grid     %zu settings, %zu replayed\n", points.size(), lanes.size());
    } else {
        lanes.push_back({rs::TorchOptions{}, capacity});
    }
    rs::MaxBatchOptions options;
    options.replay.threads = threads;
    const std::vector<rs::MaxBatchAnswer> answers = rs::search_max_batch(model, lanes, options);
    clock.lap("search");
    std::uint64_t replays = 0;
    for (const rs::MaxBatchAnswer& a : answers) replays += a.replays;
    std::printf("total    wall %7.3f s  cpu %7.3f s  (%llu events read, %llu replays)\n", wall_seconds() - start_wall, cpu_seconds() - start_cpu,
                static_cast<unsigned long long>(events), static_cast<unsigned long long>(replays));
    std::printf("model    %llu requests: %llu aligned (%llu constant, %llu affine, %llu not affine), %llu unaligned, %llu vanished\n",
                static_cast<unsigned long long>(c.requests), static_cast<unsigned long long>(c.aligned),
                static_cast<unsigned long long>(c.constant), static_cast<unsigned long long>(c.affine),
                static_cast<unsigned long long>(c.not_affine), static_cast<unsigned long long>(c.unaligned),
                static_cast<unsigned long long>(c.vanished));
    const rs::MaxBatchAnswer& a = answers[defaults];
    std::printf("answer   largest batch (defaults): %s; hopeful %s; peak reserved %llu at it, %llu at the next\n",
                a.largest ? std::to_string(*a.largest).c_str() : "none", a.largest_hopeful ? std::to_string(*a.largest_hopeful).c_str() : "-",
                static_cast<unsigned long long>(a.peak_reserved_at_largest), static_cast<unsigned long long>(a.peak_reserved_at_next));
    std::size_t best = defaults;
    for (std::size_t i = 0; i < answers.size(); ++i)
        if (answers[i].largest.value_or(0) > answers[best].largest.value_or(0)) best = i;
    if (lanes.size() > 1)
        std::printf("best     largest batch over the grid: %s with %s\n",
                    answers[best].largest ? std::to_string(*answers[best].largest).c_str() : "none",
                    rs::alloc_conf(lanes[best].torch).empty() ? "the defaults" : rs::alloc_conf(lanes[best].torch).c_str());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "max_batch_speed: %s\n", e.what());
    return 1;
}
