// reuse-sim's what-if tuner, its pure parts (reuse_sim/tuner.hpp): --sweep's
// parsing and the grid, the ranking, the PYTORCH_CUDA_ALLOC_CONF text (which
// parse_roundup_power2_divisions reads back) and the answer sentence.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/sizes.hpp"
#include "reuse_sim/tuner.hpp"
#include "reuse_sim/upstream.hpp"

using namespace gpumem;
namespace rs = gpumem::reuse_sim;

namespace {

constexpr std::uint64_t kMiB = 1ULL << 20, kGiB = 1ULL << 30;

std::string usage_error(const std::vector<std::string>& sweeps, bool tune = false, bool capped = true) {
    try {
        rs::grid_axes(sweeps, tune, capped);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

rs::TuneRow row(const std::string& conf_knob, std::uint64_t peak, std::uint64_t ooms, std::uint64_t retries = 0, double us = 0,
                bool recorded = false) {
    rs::TuneRow r;
    if (conf_knob == "expandable") r.point.options.expandable_segments = true;
    if (conf_knob == "split") r.point.options.max_split_size = 128 * kMiB;
    r.point.recorded = recorded;
    r.outcome.peak_reserved = peak;
    r.outcome.ooms = ooms;
    r.outcome.retries = retries;
    r.outcome.modelled_us = us;
    if (ooms) r.outcome.first_oom_event = 18231;
    return r;
}

std::string bytes(std::uint64_t b) { return format_bytes(b); }

}  // namespace

TEST_CASE("tuner: --sweep values of every knob parse, PyTorch's rules apply") {
    const rs::SweepAxis split = rs::parse_sweep("max_split_size=none,20,512");
    REQUIRE(split.values.size() == 3);
    CHECK(split.values[0].max_split_size == rs::TorchOptions::kNoLimit);
    CHECK(split.values[1].max_split_size == 20 * kMiB);
    CHECK(split.values[2].max_split_size == 512 * kMiB);
    const rs::SweepAxis roundup = rs::parse_sweep("roundup_power2_divisions=none,4,[256:1,512:2,>:8]");
    REQUIRE(roundup.values.size() == 3);  // the list form's commas stay inside its brackets
    CHECK(roundup.values[1].roundup_power2_divisions[5] == 4);
    CHECK(roundup.values[2].roundup_power2_divisions[0] == 1);
    CHECK(roundup.values[2].roundup_power2_divisions[15] == 8);
    CHECK(rs::parse_sweep("expandable_segments=True,false").values[0].expandable_segments);
    CHECK(rs::parse_sweep("garbage_collection_threshold=0,0.6").values[1].garbage_collection_threshold == 0.6);
}

TEST_CASE("tuner: bad sweeps are usage errors of one line") {
    CHECK(has(usage_error({"max_split"}), "expected KNOB=V1,V2"));
    CHECK(has(usage_error({"max_split=64"}), "unknown knob 'max_split'"));
    CHECK(has(usage_error({"max_split_size="}), "empty list of values"));
    CHECK(has(usage_error({"max_split_size=64,,128"}), "empty value"));
    CHECK(has(usage_error({"max_split_size=19"}), "at least 20"));
    CHECK(has(usage_error({"max_split_size=lots"}), "expected MiB"));
    CHECK(has(usage_error({"max_split_size=64,64"}), "given twice"));
    CHECK(has(usage_error({"roundup_power2_divisions=3"}), "power of two"));
    CHECK(has(usage_error({"expandable_segments=yes"}), "expected true or false"));
    CHECK(has(usage_error({"garbage_collection_threshold=1"}), "below 1"));
    CHECK(has(usage_error({"garbage_collection_threshold=-0.5"}), "below 1"));
    CHECK(has(usage_error({"garbage_collection_threshold=nan"}), "expected a number"));
    CHECK(has(usage_error({"garbage_collection_threshold=0.5"}, false, false), "memory cap"));
    CHECK(has(usage_error({"max_split_size=64", "max_split_size=128"}), "swept twice"));
    CHECK(has(usage_error({"max_split_size=21,22,23,24,25,26,27,28,29", "roundup_power2_divisions=1,2,4,8,16,32,64,128",
                           "expandable_segments=true,false"}),
              "more than 128"));
    for (const std::vector<std::string>& bad :
         {std::vector<std::string>{"max_split=64"}, {"max_split_size=64,64"}, {"expandable_segments=yes"}})
        CHECK(usage_error(bad).find('\n') == std::string::npos);
}

TEST_CASE("tuner: --tune's grid is a few dozen points, the GC threshold only under a cap, a sweep replaces a knob's defaults") {
    const auto uncapped = rs::grid_axes({}, true, false);
    CHECK(uncapped.size() == 3);
    CHECK(rs::grid_size(uncapped) == 18);
    const auto capped = rs::grid_axes({}, true, true);
    CHECK(capped.size() == 4);
    CHECK(rs::grid_size(capped) == 36);
    const auto mixed = rs::grid_axes({"expandable_segments=true"}, true, true);
    CHECK(rs::grid_size(mixed) == 18);
    CHECK(mixed[2].knob->name == "expandable_segments");  // the table's order, whatever the order given
    CHECK(rs::grid_size(rs::grid_axes({"expandable_segments=true,false"}, false, false)) == 2);
    CHECK(rs::grid_axes({}, false, true).empty());
}

TEST_CASE("tuner: grid points cover the product once each and mark the recorded setting, added when not in the grid") {
    rs::TorchOptions baseline;
    baseline.max_split_size = 256 * kMiB;
    const auto axes = rs::grid_axes({"max_split_size=none,256", "expandable_segments=false,true"}, false, true);
    const std::vector<rs::GridPoint> points = rs::grid_points(baseline, axes);
    REQUIRE(points.size() == 4);
    CHECK(points[0].options.max_split_size == rs::TorchOptions::kNoLimit);
    CHECK(points[1].options.expandable_segments);
    CHECK(points[2].recorded);
    CHECK(points[2].options.max_split_size == 256 * kMiB);
    int recorded = 0;
    for (const rs::GridPoint& p : points) recorded += p.recorded;
    CHECK(recorded == 1);
    baseline.max_split_size = 64 * kMiB;
    const std::vector<rs::GridPoint> more = rs::grid_points(baseline, axes);
    REQUIRE(more.size() == 5);
    CHECK(more[0].recorded);
    CHECK(more[0].options.max_split_size == 64 * kMiB);
}

TEST_CASE("tuner: ranking is no OOM first (then fewer OOMs), then the lowest peak, fewer retries, less modelled time; the recorded setting first among equals") {
    std::vector<rs::TuneRow> rows = {row("", 30 * kGiB, 3),           row("split", 39 * kGiB, 0, 5),
                                     row("expandable", 39 * kGiB, 0, 2, 9.0), row("", 39 * kGiB, 0, 2, 1.0),
                                     row("split", 20 * kGiB, 1),      row("", 39 * kGiB, 0, 2, 1.0, true)};
    rs::rank_rows(rows);
    CHECK(rows[0].point.recorded);  // equal to rows[1] in every figure
    CHECK(rows[1].outcome.modelled_us == 1.0);
    CHECK(rows[2].outcome.modelled_us == 9.0);
    CHECK(rows[3].outcome.retries == 5);
    CHECK(rows[4].outcome.ooms == 1);  // OOMs last, the fewest first
    CHECK(rows[5].outcome.ooms == 3);
    CHECK(rs::ranks_before(row("", 80 * kGiB, 0).outcome, row("", kGiB, 1).outcome));
}

TEST_CASE("tuner: PYTORCH_CUDA_ALLOC_CONF in PyTorch's syntax, defaults left out") {
    rs::TorchOptions o;
    CHECK(rs::alloc_conf(o).empty());
    o.expandable_segments = true;
    o.max_split_size = 128 * kMiB;
    o.roundup_power2_divisions = rs::parse_roundup_power2_divisions("[256:1,512:2,1024:4,>:4]");
    o.garbage_collection_threshold = 0.6;
    CHECK(rs::alloc_conf(o) ==
          "max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,1024:4,>:4],expandable_segments:True,garbage_collection_threshold:0.6");
    o = rs::TorchOptions{};
    o.roundup_power2_divisions.fill(4);
    o.max_non_split_rounding = 64 * kMiB;
    CHECK(rs::alloc_conf(o) == "max_non_split_rounding_mb:64,roundup_power2_divisions:4");
    o = rs::TorchOptions{};
    for (const char* t : {"0.6", "0.123456789", "1e-09", "0.99999"}) {
        rs::parse_sweep(std::string("garbage_collection_threshold=") + t).knob->value.parse(t, o);
        const std::string conf = rs::alloc_conf(o);
        CAPTURE(conf);
        CHECK(std::stod(conf.substr(conf.find(':') + 1)) == o.garbage_collection_threshold);
    }
}

TEST_CASE("tuner: roundup_power2_divisions written out reads back the same, both forms") {
    for (const char* text : {"4", "[256:1,512:2,>:8]", "[1:0,2:16,4:16,>:0]", "[256:1,>:4]", "[32768:2]", "[1:1,4:2,16:4,>:8]", "1"}) {
        CAPTURE(text);
        const auto d = rs::parse_roundup_power2_divisions(text);
        const std::string written = rs::format_roundup_power2_divisions(d);
        CAPTURE(written);
        CHECK(rs::parse_roundup_power2_divisions(written) == d);
    }
    CHECK(rs::format_roundup_power2_divisions(rs::parse_roundup_power2_divisions("8")) == "8");
    CHECK(rs::format_roundup_power2_divisions({}).empty());
    std::mt19937_64 rng(7);
    for (int i = 0; i < 2000; ++i) {
        std::array<std::uint64_t, 16> d{};
        for (std::uint64_t& v : d) v = rng() % 3 == 0 ? 0 : 1ULL << (rng() % 6);
        const std::string written = rs::format_roundup_power2_divisions(d);
        if (written.empty()) continue;
        CAPTURE(written);
        REQUIRE(rs::parse_roundup_power2_divisions(written) == d);
    }
}

TEST_CASE("tuner: the answer says which setting fits, and where the recorded one fails") {
    rs::CapacitySearch none;
    std::vector<rs::TuneRow> fits = {row("expandable", 37 * kGiB + 200 * kMiB, 0), row("", 40 * kGiB, 4, 10, 0, true)};
    CHECK(rs::tune_answer(fits, 40 * kGiB, none, bytes, "as recorded") ==
          "With expandable_segments:True this trace fits in 40 GiB (peak 37.2 GiB); as recorded it fails at event 18,231.");
    std::vector<rs::TuneRow> both = {row("split", 30 * kGiB, 0), row("", 35 * kGiB, 0, 0, 0, true)};
    CHECK(rs::tune_answer(both, 40 * kGiB, none, bytes, "as recorded") ==
          "As recorded this trace fits in 40 GiB (peak 35 GiB); with max_split_size_mb:128 the peak is 30 GiB.");
    std::vector<rs::TuneRow> recorded_best = {row("", 30 * kGiB, 0, 0, 0, true), row("split", 35 * kGiB, 0)};
    CHECK(has(rs::tune_answer(recorded_best, 40 * kGiB, none, bytes, "as recorded"), "no other setting that fits has a lower peak"));
    std::vector<rs::TuneRow> neither = {row("split", 40 * kGiB, 2), row("", 40 * kGiB, 9, 0, 0, true)};
    CHECK(rs::tune_answer(neither, 40 * kGiB, none, bytes, "as recorded") ==
          "No setting of the grid fits this trace in 40 GiB: the best, max_split_size_mb:128, fails at event 18,231 (2 OOMs), as "
          "recorded at event 18,231 (9 OOMs).");
    std::vector<rs::TuneRow> uncapped = {row("expandable", 30 * kGiB, 0), row("", 32 * kGiB, 0, 0, 0, true)};
    rs::CapacitySearch found;
    found.smallest = 28 * kGiB;
    found.resolution = kMiB;
    found.replays = 33;
    CHECK(rs::tune_answer(uncapped, rs::kUnlimited, found, bytes, "with the baseline settings") ==
          "Without a memory cap (--capacity, --memory-fraction) nothing runs out of memory; with expandable_segments:True the peak "
          "reserved is 30 GiB, with the baseline settings 32 GiB; the smallest capacity the best setting fits in is about 28 GiB (to within 1 MiB, 33 "
          "more replays).");
    rs::CapacitySearch skipped;
    skipped.not_searched = "it would take about 90 s more";
    CHECK(has(rs::tune_answer(fits, 40 * kGiB, skipped, bytes, "as recorded"), "was not searched: it would take about 90 s more."));
    CHECK(rs::group_digits(18231) == "18,231");
    CHECK(rs::group_digits(999) == "999");
    CHECK(rs::group_digits(1000000) == "1,000,000");
}

TEST_CASE("tuner: capacity probes split (low, high] evenly, on MiB, ending at high") {
    const auto probes = rs::capacity_probes(100 * kMiB, 260 * kMiB, 16);
    REQUIRE(probes.size() == 16);
    CHECK(probes.front() == 110 * kMiB);
    CHECK(probes.back() == 260 * kMiB);
    for (std::size_t i = 1; i < probes.size(); ++i) CHECK(probes[i] > probes[i - 1]);
    CHECK(rs::capacity_probes(100, 100, 16).empty());
    CHECK(rs::capacity_probes(kMiB, kMiB + 3, 16).size() <= 3);
}

TEST_CASE("tuner: where the recording ran out of memory, the answer counts the OOMs the best setting grants") {
    std::vector<rs::TuneRow> rows = {row("expandable", 900 * kMiB, 0), row("", 1000 * kMiB, 3, 1, 0, true)};
    rows[0].outcome.granted_ooms = 3;
    const rs::CapacitySearch none;
    const std::string all = rs::tune_answer(rows, kGiB, none, bytes, "as recorded", 3);
    CHECK(has(all, "With expandable_segments:True this trace fits in 1 GiB"));
    CHECK(has(all, "; the best setting grants all 3 requests that ran out of memory as recorded, after which "
                   "the program may ask for memory the recording never saw (it recovered instead): rerun it to confirm."));
    rows[0].outcome.granted_ooms = 1;
    rows[0].outcome.ooms = 2;
    rows[0].outcome.first_oom_event = 7;
    CHECK(has(rs::tune_answer(rows, kGiB, none, bytes, "as recorded", 3), "the best setting grants 1 of the 3 requests that ran out of memory as recorded, after"));
    // One recorded OOM, granted.
    rows[0].outcome.ooms = 0;
    CHECK(has(rs::tune_answer(rows, kGiB, none, bytes, "as recorded", 1), "the best setting grants the request that ran out of memory as recorded, after"));
    // Nothing granted, or nothing recorded: nothing said.
    rows[0].outcome.granted_ooms = 0;
    CHECK_FALSE(has(rs::tune_answer(rows, kGiB, none, bytes, "as recorded", 3), "never saw"));
    rows[0].outcome.granted_ooms = 2;
    CHECK_FALSE(has(rs::tune_answer(rows, kGiB, none, bytes, "as recorded", 0), "never saw"));
}
