// reuse-sim max-batch's model (reuse_sim/batch_model.hpp): recordings of
// one program at two or more batches aligned request by request, sizes as
// constant or affine laws after PyTorch's 512-byte rounding, the trace at
// any batch, and the largest batch that fits per setting. Stand-in programs
// whose trace at every batch is known: the true answer is found by
// generating and replaying each batch, and the model's must never be above
// it (and at most one below); the PyTorch fixtures fitted against
// themselves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "reuse_sim/batch_model.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim_helpers.hpp"
#include "tests_dir.hpp"

namespace {

using rs::EventKind;

std::uint64_t round_up(std::uint64_t bytes, std::uint64_t granule) { return std::max(granule, (bytes + granule - 1) / granule * granule); }

// A stand-in training program: weights allocated once (constant sizes),
// then `steps` steps each allocating activations (affine in the batch:
// round_up(base + num * B / den, 512)) and freeing them in reverse, with a
// workspace in the middle of each step from batch `workspace_from` on (a
// library choosing another algorithm as the batch grows).
struct Program {
    std::vector<std::uint64_t> weights;
    struct Activation {
        std::uint64_t base, num, den;
    };
    std::vector<Activation> activations;
    int steps = 3;
    std::uint64_t workspace_from = 0;  // 0: none
    std::uint64_t workspace = 0;
    // Below workspace_from, a smaller workspace (0: none): the library's
    // choice at small batches, another algorithm's.
    std::uint64_t workspace_small = 0;
    // A size that is not affine: this activation is quadratic in the batch.
    int quadratic = -1;
    // One that grows slower from batch 8 on (a quarter of its slope): no
    // line and no convex quadratic holds.
    int concave = -1;
    // Below this batch, activation 0 grows four times as steeply: a
    // library's other kernel at small batches (0: never).
    std::uint64_t steep_below = 0;

    std::uint64_t activation(std::size_t i, std::uint64_t batch) const {
        const Activation& a = activations[i];
        if (static_cast<int>(i) == quadratic) return round_up(a.base + a.num * batch * batch / a.den, 512);
        if (static_cast<int>(i) == concave) return round_up(a.base + a.num * (batch < 8 ? batch : 8 + (batch - 8) / 4) / a.den, 512);
        if (i == 0 && batch < steep_below) return round_up(a.base + (4 * a.num * batch + a.den - 1) / a.den, 512);
        return round_up(a.base + (a.num * batch + a.den - 1) / a.den, 512);
    }

    std::vector<rs::Event> events(std::uint64_t batch) const {
        std::vector<rs::Event> out;
        std::uint64_t id = 1;
        for (const std::uint64_t w : weights) out.push_back(A(id++, w));
        for (int s = 0; s < steps; ++s) {
            const std::uint64_t first = id;
            for (std::size_t i = 0; i < activations.size(); ++i) {
                out.push_back(A(id++, activation(i, batch)));
                const bool small = workspace_small != 0 && batch < workspace_from;
                if (i == activations.size() / 2 && workspace_from != 0 && (batch >= workspace_from || small)) {
                    out.push_back(A(id, small ? workspace_small : workspace));
                    out.push_back(F(id++));
                }
            }
            for (std::uint64_t k = id; k-- > first;)
                if (std::none_of(out.begin(), out.end(), [&](const rs::Event& e) { return e.kind == EventKind::free && e.id == k; }))
                    out.push_back(F(k));
            out.push_back(S());
        }
        for (std::size_t n = 0; n < out.size(); ++n) out[n].line = n + 1;
        return out;
    }
};

Program mlp() {
    Program p;
    p.weights = {4 * MiB, 1 * MiB, 64 * KiB, 512, 12 * MiB};
    p.activations = {{0, 256 * KiB, 1}, {0, 1 * MiB, 1}, {512, 3 * MiB, 2}, {0, 768 * KiB, 1}, {1 * MiB, 100 * KiB, 3}, {0, 2 * MiB, 1}};
    return p;
}

rs::BatchRecording record(const Program& p, std::uint64_t batch) { return {batch, "bs" + std::to_string(batch), p.events(batch)}; }

bool fits(const Program& p, std::uint64_t batch, const rs::TorchOptions& torch, std::uint64_t capacity) {
    rs::StrategyOptions options;
    options.torch = torch;
    return run_strategy("torch-caching", p.events(batch), options, capacity).result.ooms == 0;
}

// The largest batch whose own trace fits: every batch generated and replayed.
std::uint64_t true_largest(const Program& p, const rs::TorchOptions& torch, std::uint64_t capacity) {
    std::uint64_t batch = 0;
    while (batch < 100000 && fits(p, batch + 1, torch, capacity)) ++batch;
    return batch;
}

std::vector<std::uint64_t> request_sizes(const std::vector<rs::Event>& events) {
    std::vector<std::uint64_t> sizes;
    for (const rs::Event& e : events)
        if (e.kind == EventKind::alloc) sizes.push_back(e.size);
    return sizes;
}

std::uint64_t total_bytes(const std::vector<rs::Event>& events) {
    std::uint64_t total = 0;
    for (const std::uint64_t size : request_sizes(events)) total += size;
    return total;
}

rs::MaxBatchOptions two_threads() {
    rs::MaxBatchOptions o;
    o.replay.threads = 2;
    o.limit = 4096;
    return o;
}

}  // namespace

TEST_CASE("batch model: an MLP's constant weights and affine activations, rebuilt exactly at the recorded batches") {
    const Program p = mlp();
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 16), record(p, 8)});
    const rs::BatchModelChecks& c = model.checks();
    CHECK(c.requests == p.weights.size() + 3 * p.activations.size());
    CHECK(c.aligned == c.requests);
    CHECK(c.constant == p.weights.size());
    CHECK(c.affine == 3 * p.activations.size());
    CHECK(c.not_affine == 0);
    CHECK(c.unaligned == 0);
    CHECK(c.vanished == 0);
    CHECK(c.granule == 512);
    CHECK(c.holds());
    CHECK(model.smallest_recorded_batch() == 8);
    CHECK(model.largest_recorded_batch() == 16);
    for (const std::uint64_t b : {8, 16}) CHECK(request_sizes(model.events_at(b)) == request_sizes(p.events(b)));
    // Beyond (and below) the recorded batches: never less than the truth,
    // at most the rounding's drift over the distance more.
    for (const std::uint64_t b : {1, 2, 5, 11, 17, 33, 100, 1000}) {
        const std::vector<std::uint64_t> modelled = request_sizes(model.events_at(b)), truth = request_sizes(p.events(b));
        REQUIRE(modelled.size() == truth.size());
        for (std::size_t i = 0; i < truth.size(); ++i) {
            CAPTURE(b);
            CAPTURE(i);
            CHECK(modelled[i] >= truth[i]);
            const std::uint64_t distance = b > 16 ? b - 16 : 8 - std::min<std::uint64_t>(b, 8);
            // Each fitted size is the line's within a granule: drift of
            // two granules over the fit's span of 8 batches, and one of rounding.
            CHECK(modelled[i] - truth[i] <= 512 * (2 + (2 * distance + 7) / 8));
        }
    }
    // Locations name the modelled batch.
    const std::vector<rs::Event> at61 = model.events_at(61);
    CHECK(at61[11].line == 12);
}

TEST_CASE("batch model: the largest batch under a cap is the true one, or one below, never above, for each setting") {
    Program p = mlp();
    rs::TorchOptions expandable;
    expandable.expandable_segments = true;
    const std::vector<rs::TorchLane> lanes = {{rs::TorchOptions{}, 300 * MiB}, {expandable, 300 * MiB}, {rs::TorchOptions{}, 1 * GiB}};
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    const std::vector<rs::MaxBatchAnswer> answers = rs::search_max_batch(model, lanes, two_threads());
    REQUIRE(answers.size() == lanes.size());
    for (std::size_t i = 0; i < lanes.size(); ++i) {
        CAPTURE(i);
        const std::uint64_t truth = true_largest(p, lanes[i].torch, lanes[i].capacity);
        REQUIRE(answers[i].largest);
        CHECK(*answers[i].largest <= truth);
        CHECK(*answers[i].largest + 1 >= truth);
        CHECK_FALSE(answers[i].reached_limit);
        CHECK_FALSE(answers[i].largest_hopeful);  // the model holds: one answer
        // (expandable segments' reserved figure may pass the cap without an OOM)
        if (!lanes[i].torch.expandable_segments) CHECK(answers[i].peak_reserved_at_largest <= lanes[i].capacity);
        CHECK(answers[i].peak_reserved_at_largest > 0);
        CHECK(answers[i].peak_reserved_at_next > lanes[i].capacity);
        CHECK(answers[i].replays >= 3);
    }
    CHECK(*answers[2].largest > *answers[0].largest);
}

TEST_CASE("batch model: the answers do not depend on the threads (extra probes per round when lanes leave threads idle)") {
    Program p = mlp();
    p.workspace_from = 12;
    p.workspace = 40 * MiB;
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    rs::TorchOptions expandable;
    expandable.expandable_segments = true;
    const std::vector<rs::TorchLane> lanes = {{rs::TorchOptions{}, 700 * MiB}, {expandable, 250 * MiB}};
    rs::MaxBatchOptions one = two_threads(), many = two_threads();
    one.replay.threads = 1;
    many.replay.threads = 7;
    const std::vector<rs::MaxBatchAnswer> a = rs::search_max_batch(model, lanes, one), b = rs::search_max_batch(model, lanes, many);
    for (std::size_t i = 0; i < lanes.size(); ++i) {
        CAPTURE(i);
        CHECK(a[i].largest == b[i].largest);
        CHECK(a[i].largest_hopeful == b[i].largest_hopeful);
        CHECK(a[i].peak_reserved_at_largest == b[i].peak_reserved_at_largest);
        CHECK(a[i].peak_reserved_at_next == b[i].peak_reserved_at_next);
        CHECK(b[i].replays >= a[i].replays);  // the extra probes are replays too
        REQUIRE(a[i].largest);
        CHECK(*a[i].largest <= true_largest(p, lanes[i].torch, lanes[i].capacity));
    }
}

TEST_CASE("batch model: fractional slopes and sizes below a granule") {
    Program p;
    p.weights = {3 * MiB};
    // 1000.3 bytes a batch, 3700/7 bytes a batch, and one that starts below 512 bytes.
    p.activations = {{100, 10003, 10}, {4096, 3700, 7}, {0, 100, 1}, {0, 333 * KiB, 3}};
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 24), record(p, 40)});
    CHECK(model.checks().holds());
    for (std::uint64_t b = 1; b <= 300; ++b) {
        const std::vector<std::uint64_t> modelled = request_sizes(model.events_at(b)), truth = request_sizes(p.events(b));
        for (std::size_t i = 0; i < truth.size(); ++i) {
            CAPTURE(b);
            CAPTURE(i);
            CHECK(modelled[i] % 512 == 0);
            CHECK(modelled[i] >= truth[i]);
            if (b >= 24 && b <= 40) CHECK(modelled[i] - truth[i] < 1024);
        }
    }
    // A line that falls below a granule towards batch 1 stops at one granule.
    const rs::BatchModel steep = rs::BatchModel::fit({{10, "bs10", {A(1, 512), F(1)}}, {20, "bs20", {A(1, 1536), F(1)}}});
    CHECK(steep.events_at(1).front().size == 512);
    CHECK(steep.events_at(20).front().size == 1536);
    CHECK(steep.checks().affine == 1);
    CHECK(steep.events_at(20).back().size == 0);  // a free that did not say its size still does not
    // A third recording within the rounding confirms the laws.
    const rs::BatchModel checked = rs::BatchModel::fit({record(p, 24), record(p, 40), record(p, 3)});
    REQUIRE(checked.checks().checked.size() == 1);
    CHECK(checked.checks().checked[0].batch == 3);
    CHECK(checked.checks().checked[0].exact);
    CHECK(checked.checks().not_affine == 0);
}

TEST_CASE("batch model: a size that is not affine is caught by a third recording, and the answer is a range") {
    Program p = mlp();
    p.concave = 1;
    p.activations[1] = {0, 64 * KiB, 1};  // 64 KiB * B up to 8, a quarter of that slope beyond
    const rs::BatchModel two = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    CHECK(two.checks().holds());  // two recordings cannot tell
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 4), record(p, 8), record(p, 16)});
    const rs::BatchModelChecks& c = model.checks();
    CHECK(c.not_affine == 3);  // one activation, in each of three steps
    CHECK_FALSE(c.holds());
    REQUIRE(c.checked.size() == 1);
    CHECK(c.checked[0].batch == 4);
    CHECK_FALSE(c.checked[0].exact);
    CHECK(c.checked[0].requests_off == 3);
    REQUIRE_FALSE(c.mismatches.empty());
    CHECK(c.mismatches[0].what.find("(not affine; the cautious trace takes the steepest line through two recordings at a quarter") !=
          std::string::npos);
    CHECK(c.mismatches[0].what.find("at batch 4") != std::string::npos);
    CHECK(c.mismatches[0].bytes_at_largest == 10 * 64 * KiB);
    // The cautious trace takes the steepest line through two recordings
    // near the largest (at a quarter of its batch or more: 4 and 8 too).
    std::uint64_t cautious = 0, hopeful = 0;
    for (const rs::Event& e : model.events_at(32, true)) cautious += e.kind == EventKind::alloc ? e.size : 0;
    for (const rs::Event& e : model.events_at(32, false)) hopeful += e.kind == EventKind::alloc ? e.size : 0;
    CHECK(cautious > hopeful);
    const std::vector<rs::MaxBatchAnswer> answers = rs::search_max_batch(model, {{rs::TorchOptions{}, 400 * MiB}}, two_threads());
    REQUIRE(answers[0].largest);
    REQUIRE(answers[0].largest_hopeful);
    CHECK(*answers[0].largest <= *answers[0].largest_hopeful);
}

TEST_CASE("batch model: a workspace that appears at the larger batch is an extra: kept in the cautious trace, left out of the hopeful") {
    Program p = mlp();
    p.workspace_from = 12;
    p.workspace = 64 * MiB;
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    const rs::BatchModelChecks& c = model.checks();
    CHECK(c.unaligned == 3);  // once a step
    CHECK(c.aligned == c.requests - 3);
    CHECK(c.vanished == 0);
    CHECK_FALSE(c.holds());
    REQUIRE(c.mismatches.size() == 3);
    CHECK(c.mismatches[0].bytes_at_largest == 64 * MiB);
    CHECK(c.mismatches[0].what.find("absent at batch 8") != std::string::npos);
    CHECK(request_sizes(model.events_at(16, true)) == request_sizes(p.events(16)));
    CHECK(request_sizes(model.events_at(16, false)).size() == request_sizes(p.events(16)).size() - 3);
    // Beyond the largest batch the extra grows in proportion.
    std::uint64_t largest_at_32 = 0;
    for (const rs::Event& e : model.events_at(32)) largest_at_32 = std::max(largest_at_32, e.size);
    CHECK(largest_at_32 == 128 * MiB);
    const rs::TorchLane lane{rs::TorchOptions{}, 400 * MiB};
    const std::vector<rs::MaxBatchAnswer> answers = rs::search_max_batch(model, {lane}, two_threads());
    REQUIRE(answers[0].largest);
    REQUIRE(answers[0].largest_hopeful);
    const std::uint64_t truth = true_largest(p, lane.torch, lane.capacity);
    CHECK(*answers[0].largest <= truth);
    CHECK(*answers[0].largest <= *answers[0].largest_hopeful);
}

TEST_CASE("batch model: requests that vanish as the batch grows are counted, and an extra inside a run is found by its place") {
    Program small = mlp(), big = mlp();
    small.workspace_from = 1;  // at batch 8 only
    small.workspace = 3 * MiB;
    const rs::BatchModel model = rs::BatchModel::fit({record(small, 8), record(big, 16)});
    CHECK(model.checks().vanished == 3);
    CHECK(model.checks().unaligned == 0);
    CHECK(model.checks().aligned == model.checks().requests);
    CHECK(model.checks().affine == 18);
    CHECK_FALSE(model.checks().holds());
    CHECK(model.checks().mismatches.front().what.find("gone as the batch grew") != std::string::npos);
}

TEST_CASE("batch model: one recording, two at one batch, a recording with no allocation, batch 0 are usage errors") {
    const Program p = mlp();
    CHECK_THROWS_AS(rs::BatchModel::fit({record(p, 8)}), gpumem::UsageError);
    CHECK_THROWS_AS(rs::BatchModel::fit({}), gpumem::UsageError);
    CHECK_THROWS_WITH_AS(rs::BatchModel::fit({record(p, 8), record(p, 16), record(p, 8)}), doctest::Contains("two recordings at batch 8"),
                         gpumem::UsageError);
    CHECK_THROWS_AS(rs::BatchModel::fit({record(p, 8), rs::BatchRecording{16, "empty", {S()}}}), gpumem::UsageError);
    CHECK_THROWS_AS(rs::BatchModel::fit({record(p, 8), record(p, 0)}), gpumem::UsageError);
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    CHECK_THROWS_AS(model.events_at(0), gpumem::UsageError);
}

TEST_CASE("batch model: even batch 1 out of memory, and every batch fitting up to the limit") {
    const Program p = mlp();
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    rs::MaxBatchOptions o = two_threads();
    o.limit = 100;
    const std::vector<rs::MaxBatchAnswer> answers =
        rs::search_max_batch(model, {{rs::TorchOptions{}, 8 * MiB}, {rs::TorchOptions{}, 64 * GiB}}, o);
    CHECK_FALSE(answers[0].largest);
    CHECK(answers[0].peak_reserved_at_next > 8 * MiB);  // batch 1, replayed with no cap
    REQUIRE(answers[1].largest);
    CHECK(*answers[1].largest == 100);
    CHECK(answers[1].reached_limit);
}

namespace {

std::vector<rs::Event> fixture_events(const std::string& name) {
    const std::string path = tests_dir() + "/fixtures/torch/" + name;
    std::unique_ptr<rs::EventSource> source = rs::open_trace(path, rs::TraceFormat::automatic);
    std::vector<rs::Event> events;
    rs::Event e;
    while (source->next(e)) events.push_back(e);
    return events;
}

// The recording as if every request were `factor` times larger (an
// activation-only program at `factor` times the batch).
std::vector<rs::Event> scaled(std::vector<rs::Event> events, std::uint64_t factor) {
    for (rs::Event& e : events)
        if (e.kind == EventKind::alloc || e.kind == EventKind::free || e.kind == EventKind::oom) e.size *= factor;
    return events;
}

std::vector<rs::Event> replayed(std::vector<rs::Event> events) {
    events.erase(std::remove_if(events.begin(), events.end(), [](const rs::Event& e) { return rs::is_segment_event(e.kind); }), events.end());
    return events;
}

}  // namespace

TEST_CASE("batch model: PyTorch fixtures fitted against themselves, and against themselves scaled") {
    for (const char* name : {"transformer_train.pickle", "cnn_inference.pickle", "record_stream.pickle", "graph_capture.pickle"}) {
        CAPTURE(name);
        const std::vector<rs::Event> events = fixture_events(name);
        // The same program at two batches: every request constant.
        const rs::BatchModel same = rs::BatchModel::fit({{4, "a", events}, {8, "b", events}});
        CHECK(same.checks().holds());
        CHECK(same.checks().constant == same.checks().requests);
        CHECK(same.checks().granule == 1);  // a snapshot records the bytes asked for
        const std::vector<rs::Event> at100 = same.events_at(100), expected = replayed(events);
        REQUIRE(at100.size() == expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) {
            CHECK(at100[i].kind == expected[i].kind);
            CHECK(at100[i].id == expected[i].id);
            CHECK(at100[i].size == expected[i].size);
            CHECK(at100[i].stream == expected[i].stream);
            CHECK(at100[i].pool == expected[i].pool);
            CHECK(at100[i].deferred == expected[i].deferred);
        }
        // Every request in proportion to the batch: twice the batch, twice the bytes.
        const rs::BatchModel model = rs::BatchModel::fit({{1, "bs1", events}, {2, "bs2", scaled(events, 2)}});
        CHECK(model.checks().holds());
        CHECK(model.checks().aligned == model.checks().requests);
        CHECK(request_sizes(model.events_at(2)) == request_sizes(scaled(events, 2)));
        CHECK(request_sizes(model.events_at(1)) == request_sizes(events));
        // Beyond: exact. A snapshot's sizes are the bytes asked for (a
        // tensor's elements times their width), no rounding to widen the
        // line by: a byte over, past a whole 2 MiB block, would cost the
        // allocator the next block.
        CHECK(request_sizes(model.events_at(5)) == request_sizes(scaled(events, 5)));
        // A third recording in proportion confirms it.
        const rs::BatchModel three = rs::BatchModel::fit({{1, "bs1", events}, {2, "bs2", scaled(events, 2)}, {3, "bs3", scaled(events, 3)}});
        REQUIRE(three.checks().checked.size() == 1);
        CHECK(three.checks().checked[0].exact);
    }
}

TEST_CASE("batch model: a fixture's largest batch under a cap matches replaying the scaled recordings themselves") {
    const std::vector<rs::Event> events = fixture_events("transformer_train.pickle");
    const rs::BatchModel model = rs::BatchModel::fit({{1, "bs1", events}, {2, "bs2", scaled(events, 2)}});
    const Outcome one = run_strategy("torch-caching", replayed(events));
    const std::uint64_t cap = one.result.peak_reserved * 5 + one.result.peak_reserved / 2;
    const std::vector<rs::MaxBatchAnswer> answers = rs::search_max_batch(model, {{rs::TorchOptions{}, cap}}, two_threads());
    REQUIRE(answers[0].largest);
    std::uint64_t truth = 0;
    while (run_strategy("torch-caching", replayed(scaled(events, truth + 1)), {}, cap).result.ooms == 0) ++truth;
    CHECK(*answers[0].largest <= truth);
    CHECK(*answers[0].largest + 1 >= truth);
}

TEST_CASE("batch model: thousands of extras: the greedy diff aligns what the fewest-edits diff gives up on") {
    // 3,000 steps of two activations at batch 8; at batch 16 each step also
    // has a 1 GiB workspace between them, and a constant 4 KiB buffer.
    std::vector<rs::Event> small, big;
    std::uint64_t id = 1;
    for (int s = 0; s < 3000; ++s) {
        const std::uint64_t a = id++, b = id++, w = id++, c = id++;
        small.insert(small.end(), {A(c, 4 * KiB), A(a, 8 * MiB), A(b, 2 * MiB), F(a), F(b), F(c)});
        big.insert(big.end(), {A(c, 4 * KiB), A(a, 16 * MiB), A(w, 1 * GiB), F(w), A(b, 4 * MiB), F(a), F(b), F(c)});
    }
    const rs::BatchModel model = rs::BatchModel::fit({{8, "bs8", small}, {16, "bs16", big}});
    const rs::BatchModelChecks& c = model.checks();
    CHECK(c.requests == 12000);
    CHECK(c.unaligned == 3000);
    CHECK(c.aligned == 9000);
    CHECK(c.vanished == 0);
    CHECK(c.constant == 3000);
    CHECK(c.affine == 6000);
    CHECK(c.mismatches.size() == 20);
}

TEST_CASE("batch model: an error in a modelled trace names the batch and the event") {
    // The free of an id never allocated: the modelled trace keeps it, and its replay names where.
    const std::vector<rs::Event> small = {A(1, 1 * MiB), F(1)}, big = {A(1, 2 * MiB), F(1), F(7)};
    const rs::BatchModel model = rs::BatchModel::fit({{8, "bs8", small}, {16, "bs16", big}});
    CHECK_THROWS_WITH_AS(rs::search_max_batch(model, {{rs::TorchOptions{}, 1 * GiB}}, two_threads()),
                         doctest::Contains("batch 16 (modelled), event 3"), gpumem::UsageError);
}

TEST_CASE("batch model: a workspace at one size in the two largest recordings keeps it at every batch, not the small batches' slope") {
    // 2 MiB at batch 4 (another algorithm), 4 MiB from batch 8 on: the line
    // through batches 4 and 8 would give 50 MiB at batch 100.
    Program p = mlp();
    p.workspace_from = 8;
    p.workspace = 4 * MiB;
    p.workspace_small = 2 * MiB;
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 4), record(p, 8), record(p, 16)});
    const rs::BatchModelChecks& c = model.checks();
    CHECK(c.not_affine == 3);  // once a step: the third recording tells
    REQUIRE_FALSE(c.mismatches.empty());
    bool said = false;
    for (const rs::ModelMismatch& m : c.mismatches) said = said || m.what.find("kept at 4 MiB: one size at its two largest batches, a workspace") != std::string::npos;
    CHECK(said);
    // The cautious trace at batch 100 is the program's own there within the
    // lines' rounding: the workspace at 4 MiB, not 50.
    CHECK(total_bytes(model.events_at(100, true)) >= total_bytes(p.events(100)));
    CHECK(total_bytes(model.events_at(100, true)) < total_bytes(p.events(100)) + 1 * MiB);
}

TEST_CASE("batch model: an extra seen at one size in two recordings is kept at it; one seen once grows in proportion; the rule is said") {
    Program p = mlp();
    p.workspace_from = 12;
    p.workspace = 64 * MiB;
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 8), record(p, 16), record(p, 24)});
    REQUIRE_FALSE(model.checks().mismatches.empty());
    CHECK(model.checks().mismatches[0].what.find("one size at batches 16 and 24: kept at it, a workspace") != std::string::npos);
    CHECK(total_bytes(model.events_at(64, true)) >= total_bytes(p.events(64)));
    CHECK(total_bytes(model.events_at(64, true)) < total_bytes(p.events(64)) + 1 * MiB);  // not 3 x 64 MiB more
    const rs::BatchModel once = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    CHECK(once.checks().mismatches[0].what.find("seen at one batch only: grows in proportion to the batch beyond it") != std::string::npos);
}

TEST_CASE("batch model: the headroom: a batch fits when its modelled peak stays at or below the cap less the headroom") {
    const Program p = mlp();
    const rs::TorchLane lane{rs::TorchOptions{}, 300 * MiB};
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    const rs::MaxBatchAnswer exact = rs::search_max_batch(model, {lane}, two_threads()).front();
    REQUIRE(exact.largest);
    CHECK_FALSE(exact.next_fits_without_headroom);
    // A headroom one byte more than the answer's room: the answer steps down
    // one batch, and the batch above it is said to fit without the headroom.
    rs::MaxBatchOptions options = two_threads();
    options.headroom = lane.capacity - exact.peak_reserved_at_largest + 1;
    const rs::MaxBatchAnswer room = rs::search_max_batch(model, {lane}, options).front();
    REQUIRE(room.largest);
    CHECK(*room.largest == *exact.largest - 1);
    CHECK(room.peak_reserved_at_largest <= lane.capacity - options.headroom);
    CHECK(room.next_fits_without_headroom);
}

TEST_CASE("batch model: far smaller batches check a size but give it no slope; the recordings near the largest do") {
    Program p = mlp();
    p.steep_below = 16;  // at 4 and 8, activation 0 grows 4x as steeply as from 16 on
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 4), record(p, 8), record(p, 64), record(p, 96)});
    CHECK_FALSE(model.checks().holds());  // said: the small batches do not follow the line
    CHECK(model.checks().not_affine > 0);
    // The cautious trace at 200 follows the line of 64 and 96 (the truth
    // from 16 on), not the small batches' 4x slope carried to 200.
    const std::vector<rs::Event> truth = p.events(200);
    const std::vector<rs::Event> cautious = model.events_at(200, true);
    std::uint64_t truth_bytes = 0, cautious_bytes = 0;
    for (const rs::Event& e : truth) truth_bytes += e.kind == EventKind::alloc ? e.size : 0;
    for (const rs::Event& e : cautious) cautious_bytes += e.kind == EventKind::alloc ? e.size : 0;
    CHECK(cautious_bytes >= truth_bytes);
    CHECK(cautious_bytes <= truth_bytes + truth_bytes / 100);
}

TEST_CASE("batch model: at the largest recorded batch a size is the recorded one, even where a steeper line through smaller batches passes above it") {
    // One request in bytes (granule 1): 1,000, 3,000 and 4,000 units at
    // batch 10, 20 and 30, steeper below 20 than above: the line through 10
    // and 20 gives 5,000 at 30, where the run asked for 4,000.
    const std::uint64_t unit = 1000;
    auto one = [&](std::uint64_t batch, std::uint64_t units) {
        std::vector<rs::Event> events = {A(1, 7 * unit + 1), A(2, units * unit + 3), F(2), F(1)};
        for (std::size_t n = 0; n < events.size(); ++n) events[n].line = n + 1;
        return rs::BatchRecording{batch, "bs" + std::to_string(batch), events};
    };
    const rs::BatchModel model = rs::BatchModel::fit({one(10, 1000), one(20, 3000), one(30, 4000)});
    CHECK(model.checks().granule == 1);
    CHECK(model.checks().not_affine == 1);
    CHECK(request_sizes(model.events_at(30, true)) == std::vector<std::uint64_t>{7 * unit + 1, 4000 * unit + 3});
    // Beyond it, the cautious trace takes the steepest line: 10 and 20's.
    CHECK(request_sizes(model.events_at(40, true))[1] == 7000 * unit + 3);
    CHECK(request_sizes(model.events_at(40, false))[1] == 5000 * unit + 3);
}

TEST_CASE("batch model: a size that grows with the square of the batch is quadratic from three recordings, checked by a fourth, exact") {
    Program p = mlp();
    p.quadratic = 1;
    p.activations[1] = {0, 64 * KiB, 1};  // 64 KiB * B^2: attention's L x L scores in a sequence length
    const rs::BatchModel three = rs::BatchModel::fit({record(p, 4), record(p, 8), record(p, 16)});
    CHECK(three.checks().quadratic == 3);  // one activation, in each of three steps
    CHECK(three.checks().not_affine == 0);
    CHECK(three.checks().holds());
    const rs::BatchModel model = rs::BatchModel::fit({record(p, 4), record(p, 8), record(p, 16), record(p, 24)});
    const rs::BatchModelChecks& c = model.checks();
    CHECK(c.quadratic == 3);
    CHECK(c.holds());
    // The fourth (the smallest here) checks the quadratic through the three largest: rebuilt exactly.
    REQUIRE(c.checked.size() == 2);
    CHECK(c.checked[0].batch == 4);
    CHECK(c.checked[0].exact);
    CHECK(c.checked[1].exact);
    // Far beyond the recordings, each size is the program's own or above it
    // by what the 512-byte rounding of the recorded sizes leaves open,
    // never below.
    for (const std::uint64_t batch : {40, 100, 300}) {
        const std::vector<std::uint64_t> modelled = request_sizes(model.events_at(batch)), real = request_sizes(p.events(batch));
        REQUIRE(modelled.size() == real.size());
        for (std::size_t i = 0; i < real.size(); ++i) {
            CAPTURE(batch);
            CAPTURE(i);
            CAPTURE(real[i]);
            CAPTURE(modelled[i]);
            CHECK(modelled[i] >= real[i]);
            CHECK(modelled[i] <= real[i] + real[i] / 100 + 64 * KiB);
        }
    }
    // So the answer under a cap is the true one (or one below), never above.
    for (const std::uint64_t cap : {std::uint64_t{300} * MiB, std::uint64_t{2} * GiB}) {
        CAPTURE(cap);
        const std::uint64_t truth = true_largest(p, rs::TorchOptions{}, cap);
        const std::vector<rs::MaxBatchAnswer> answers = rs::search_max_batch(model, {{rs::TorchOptions{}, cap}}, two_threads());
        REQUIRE(answers[0].largest);
        CHECK(*answers[0].largest <= truth);
        CHECK(*answers[0].largest + 1 >= truth);
    }
    // A line alone (two recordings) would overshoot: the quadratic is what keeps the answer honest.
    const rs::BatchModel line = rs::BatchModel::fit({record(p, 8), record(p, 16)});
    const std::vector<rs::MaxBatchAnswer> linear = rs::search_max_batch(line, {{rs::TorchOptions{}, 2 * GiB}}, two_threads());
    REQUIRE(linear[0].largest);
    CHECK(*linear[0].largest > true_largest(p, rs::TorchOptions{}, 2 * GiB));
}
