// CPU suite for `gpumem copy`: directions and engines, sweep ranges, the
// statistics a row shows, the bar chart, the report's shape in every format,
// and usage errors through the binary (all of which fail before any GPU work).
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/chart.hpp"
#include "cli/width.hpp"
#include "cli_harness.hpp"
#include "base/copy_plan.hpp"
#include "copy/copy_report.hpp"
#include "base/cpu_affinity.hpp"
#include "base/errors.hpp"
#include "cli/output.hpp"
#include "base/sizes.hpp"
#include "render_widths.hpp"

using namespace gpumem;
using namespace gpumem::cli;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream ss(text);
    std::string line;
    while (std::getline(ss, line)) lines.push_back(line);
    return lines;
}

std::size_t count_of(const std::string& haystack, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + needle.size())) ++n;
    return n;
}

CopyDirection direction(const char* name) { return kCopyDirections.parse(name); }

CopyResult fake(const char* flow, const char* dir, std::uint64_t bytes, std::vector<double> seconds) {
    CopyResult r;
    r.flow = flow;
    r.direction = direction(dir);
    r.bytes = bytes;
    r.iterations = 4;
    r.warmup = 2;
    r.seconds = std::move(seconds);
    if (r.direction.uses_host_memory()) r.host_kind = HostMemoryKind::pinned;
    return r;
}

// A peer row from `from` to `to` at `gbps` (1e9 bytes/s); 0: not measured.
CopyResult peer_row(const char* dir, int from, int to, bool access, double gbps, std::uint64_t bytes = 1 << 30) {
    CopyResult r = fake(dir, dir, bytes, gbps > 0 ? std::vector<double>{static_cast<double>(bytes) / (gbps * 1e9)} : std::vector<double>{});
    r.device = DeviceId(from);
    r.peer = DeviceId(to);
    r.peer_access = access;
    if (gbps <= 0) r.skipped = "device " + std::to_string(from) + " cannot access device " + std::to_string(to) + " directly";
    return r;
}

CopyResults results_of(std::vector<CopyResult> rows) {
    CopyResults results;
    results.rows = std::move(rows);
    return results;
}

Report report_as(const std::vector<CopyResult>& rows, Format format, CopyReportStyle style = {}) {
    OutputOptions o;
    o.format = format;
    return build_copy_report(results_of(rows), style, o);
}

// The table format's lines also within 80 and 100 columns.
std::string render_as(const Report& report, Format format) {
    OutputOptions o;
    o.format = format;
    if (format == Format::table) check_widths(report);
    return render(report, o);
}

nlohmann::json json_of(const std::vector<CopyResult>& rows, CopyReportStyle style = {}) {
    return nlohmann::json::parse(render_as(report_as(rows, Format::json, style), Format::json));
}

std::string text_of(const std::vector<CopyResult>& rows, CopyReportStyle style = {}) {
    return render_as(report_as(rows, Format::table, style), Format::table);
}

}  // namespace

TEST_CASE("copy: the direction table says where each buffer lives") {
    using B = BufferKind;
    CHECK(kCopyDirections.name_list() == std::vector<std::string_view>{"h2d", "d2h", "d2d", "h2h", "bidir", "p2p", "p2p-bidir"});
    CHECK_THROWS_AS(kCopyDirections.parse("H2D"), UsageError);
    CHECK_THROWS_AS(kCopyDirections.parse("htod"), UsageError);
    for (const Named<CopyDirection>& row : kCopyDirections) {
        CAPTURE(row.name);
        CHECK(copy_direction_name(row.value) == row.name);
        CHECK(!row.help.empty());
        CHECK(row.value.source != B::peer);  // a copy starts on the host or on its own device
        CHECK(copy_lanes(row.value).size() == static_cast<std::size_t>(row.value.copies()));
        CHECK(copy_lanes(row.value).front().flow == row.value.forward_flow);
    }
    const CopyDirection bidir = direction("bidir");
    CHECK(bidir.uses_host_memory());
    CHECK_FALSE(bidir.uses_peer());
    const auto lanes = copy_lanes(bidir);
    REQUIRE(lanes.size() == 2);
    CHECK(lanes[0].flow == "bidir-h2d");
    CHECK((lanes[1].source == B::device && lanes[1].destination == B::host));
    CHECK(lanes[1].flow == "bidir-d2h");
    CHECK_FALSE(direction("d2d").uses_host_memory());
    CHECK_FALSE(direction("p2p").uses_host_memory());
    CHECK(direction("p2p").uses_peer());
    const auto both = copy_lanes(direction("p2p-bidir"));
    REQUIRE(both.size() == 2);
    CHECK((both[0].source == B::device && both[0].destination == B::peer));
    CHECK((both[1].source == B::peer && both[1].destination == B::device));
    CHECK(copy_flow_names() == std::vector<std::string_view>{"h2d", "d2h", "d2d", "h2h", "bidir-h2d", "bidir-d2h", "p2p", "p2p-bidir"});
    CHECK(direction("h2d") != direction("d2h"));
    CHECK(direction("p2p") == direction("p2p"));
}

TEST_CASE("copy: engines and timing methods") {
    CHECK(kCopyEngines.parse("sm") == CopyEngine::sm);
    CHECK(copy_engine_name(CopyEngine::ce) == "ce");
    CHECK_THROWS_AS(kCopyEngines.parse("dma"), UsageError);
    CHECK(copy_timing_name(CopyTiming::host_clock) == "host-clock");

    using K = HostMemoryKind;
    const auto ce = CopyEngine::ce;
    CHECK(copy_timing_for(direction("h2d"), K::pinned, ce, false) == CopyTiming::events);
    CHECK(copy_timing_for(direction("h2d"), K::registered, ce, false) == CopyTiming::events);
    CHECK(copy_timing_for(direction("d2h"), K::pageable, ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(direction("bidir"), K::pageable_huge, ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(direction("h2h"), K::pinned, ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(direction("h2h"), K::pinned, CopyEngine::sm, false) == CopyTiming::events);
    CHECK(copy_timing_for(direction("p2p"), K::pinned, ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(direction("p2p"), K::pinned, ce, true) == CopyTiming::events);
    CHECK(copy_timing_for(direction("p2p-bidir"), K::pageable, ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(direction("p2p-bidir"), K::pageable, ce, true) == CopyTiming::events);
    CHECK(copy_timing_for(direction("p2p-bidir"), K::pinned, CopyEngine::sm, true) == CopyTiming::events);
    CHECK(copy_timing_for(direction("d2d"), K::pageable, ce, false) == CopyTiming::events);

    CHECK_THROWS_AS(validate_copy_combination(direction("h2d"), K::pageable, CopyEngine::sm), UsageError);
    CHECK_THROWS_AS(validate_copy_combination(direction("bidir"), K::pageable_huge, CopyEngine::sm), UsageError);
    CHECK_NOTHROW(validate_copy_combination(direction("h2d"), K::write_combined, CopyEngine::sm));
    CHECK_NOTHROW(validate_copy_combination(direction("d2d"), K::pageable, CopyEngine::sm));
    CHECK_NOTHROW(validate_copy_combination(direction("p2p-bidir"), K::pageable, CopyEngine::sm));
}

TEST_CASE("copy: peer pairs are every ordered pair, once") {
    const std::vector<DeviceId> one = {DeviceId(0)};
    const std::vector<DeviceId> two = {DeviceId(0), DeviceId(1)};
    const std::vector<DeviceId> four = {DeviceId(0), DeviceId(1), DeviceId(2), DeviceId(3)};
    using Pairs = std::vector<std::pair<DeviceId, DeviceId>>;
    CHECK(peer_pairs(one, one, false).empty());
    CHECK(peer_pairs(one, two, false) == Pairs{{DeviceId(0), DeviceId(1)}});
    CHECK(peer_pairs(two, two, false) == Pairs{{DeviceId(0), DeviceId(1)}, {DeviceId(1), DeviceId(0)}});
    CHECK(peer_pairs(four, four, false).size() == 12);
    // Both ways at once: each unordered pair runs once, and gives both rows.
    CHECK(peer_pairs(two, two, true) == Pairs{{DeviceId(0), DeviceId(1)}});
    const Pairs bidir4 = peer_pairs(four, four, true);
    CHECK(bidir4.size() == 6);
    for (const auto& [d, p] : bidir4) CHECK(d < p);
    // The order given is kept: -d 1 --peer 0 runs 1 -> 0.
    CHECK(peer_pairs({DeviceId(1)}, {DeviceId(0)}, true) == Pairs{{DeviceId(1), DeviceId(0)}});
    // A pair named twice runs once.
    CHECK(peer_pairs(two, {DeviceId(1), DeviceId(1)}, false) == Pairs{{DeviceId(0), DeviceId(1)}});
}

TEST_CASE("copy: copies per sample from the time budget") {
    CHECK(iterations_for_budget(0.0012, 0.02, 512) == 17);
    CHECK(iterations_for_budget(0.00975, 0.02, 512) == 2);
    CHECK(iterations_for_budget(0.1, 0.02, 512) == 1);       // a copy longer than the budget
    CHECK(iterations_for_budget(1e-6, 0.02, 512) == 512);    // capped by the queue
    CHECK(iterations_for_budget(0.0, 0.02, 256) == 256);     // unmeasurably fast
    CHECK(iterations_for_budget(NAN, 0.02, 100) == 100);
    CHECK(iterations_for_budget(0.001, 0.02, 0) == 1);
}

TEST_CASE("copy: buffer sizes and memory needs") {
    CHECK(copy_buffer_bytes(1) == 8);
    CHECK(copy_buffer_bytes(8) == 8);
    CHECK(copy_buffer_bytes(1000003) == 1000008);
    using K = HostMemoryKind;
    auto n = copy_memory_needs(direction("h2d"), K::pinned, 100, false);
    CHECK(n.device == 104);
    CHECK(n.host == 104);
    n = copy_memory_needs(direction("d2d"), K::pinned, 1 << 20, false);
    CHECK(n.device == 2u << 20);
    CHECK(n.host == 0);
    n = copy_memory_needs(direction("bidir"), K::pinned, 1 << 20, false);
    CHECK(n.device == 2u << 20);
    CHECK(n.host == 2u << 20);
    n = copy_memory_needs(direction("h2h"), K::pageable, 1 << 20, true);
    CHECK(n.device == 0);
    CHECK(n.host == 2u << 20);
    n = copy_memory_needs(direction("p2p"), K::pinned, 1 << 20, true);
    CHECK(n.device == 1u << 20);
    CHECK(n.peer == 1u << 20);
    // A write-combined destination is checked on the device: one more buffer.
    CHECK(copy_memory_needs(direction("d2h"), K::write_combined, 1 << 20, true).device == 2u << 20);
    CHECK(copy_memory_needs(direction("d2h"), K::write_combined, 1 << 20, false).device == 1u << 20);
    CHECK(copy_memory_needs(direction("h2d"), K::write_combined, 1 << 20, true).device == 1u << 20);
    CHECK(copy_memory_needs(direction("bidir"), K::write_combined, 1 << 20, true).device == 3u << 20);
    // Both ways between two devices: a source and a destination on each.
    n = copy_memory_needs(direction("p2p-bidir"), K::pinned, 1 << 20, true);
    CHECK(n.device == 2u << 20);
    CHECK(n.peer == 2u << 20);
    CHECK(n.host == 0);
}

TEST_CASE("copy: sweep ranges") {
    const auto full = parse_size_range("4KiB..1GiB");
    REQUIRE(full.size() == 19);
    CHECK(full.front() == 4096);
    CHECK(full.back() == 1ULL << 30);
    CHECK(full[1] == 8192);
    CHECK(parse_size_range("4KiB..64KiB:x4") == std::vector<std::uint64_t>{4096, 16384, 65536});
    CHECK(parse_size_range("1MiB..4MiB:+1MiB").size() == 4);
    CHECK(parse_size_range("1000003") == std::vector<std::uint64_t>{1000003});
    CHECK(parse_size_range("1MiB,3,64MiB") == std::vector<std::uint64_t>{1 << 20, 3, 64 << 20});
    CHECK_THROWS_AS(parse_size_range("1GiB..4KiB"), UsageError);
    CHECK_THROWS_AS(parse_size_range("4KiB..1GiB:x1"), UsageError);
    CHECK_THROWS_AS(parse_size_range("0..4KiB"), UsageError);
}

TEST_CASE("copy: per-sample bandwidth statistics") {
    const CopyResult r = fake("h2d", "h2d", 8000000000ULL, {1.0, 2.0, 4.0});
    const CopyFigures f = copy_figures(r);
    CHECK(f.seconds.median == doctest::Approx(2.0));
    CHECK(f.median_bps == doctest::Approx(4e9));
    CHECK(f.min_bps == doctest::Approx(2e9));
    CHECK(f.max_bps == doctest::Approx(8e9));
    // cv of {8, 4, 2}: mean 14/3, sample stdev 3.0551
    CHECK(f.cv == doctest::Approx(3.0550504633 / (14.0 / 3.0)).epsilon(1e-6));
    CHECK(copy_figures(fake("h2d", "h2d", 1, {})).median_bps == 0);
    const CopyFigures steady = copy_figures(fake("h2d", "h2d", 1 << 20, {1e-3, 1e-3, 1e-3}));
    CHECK(steady.cv == 0);
}

TEST_CASE("chart: ASCII bars scale to the largest value and fit the width") {
    const std::vector<ChartBar> bars = {{"4 KiB", 1.0, "1.00 GB/s"}, {"1 MiB", 2.0, "2.00 GB/s"}, {"1 GiB", 4.0, "4.00 GB/s"},
                                        {"8 GiB", 0.0, "-"}};
    const auto lines = render_bar_chart("title", bars, ChartStyle{false, 60});
    REQUIRE(lines.size() == 5);
    CHECK(lines[0] == "title");
    for (const auto& l : lines) CHECK(display_width(l) <= 60);
    const auto hashes = [](const std::string& s) { return std::count(s.begin(), s.end(), '#'); };
    // label 5 + " |" 2 + " " 1 + value 9 = 17 columns fixed, 43 for the bar
    CHECK(hashes(lines[3]) == 43);
    CHECK(hashes(lines[2]) == 22);  // round(43 / 2)
    CHECK(hashes(lines[1]) == 11);  // round(43 / 4)
    CHECK(hashes(lines[4]) == 0);
    CHECK(lines[1].rfind("4 KiB |#", 0) == 0);
    // Values line up at the right edge.
    CHECK(lines[3].size() == lines[1].size());
    for (const auto& l : lines) CHECK(l.find("\xe2") == std::string::npos);  // pure ASCII
}

TEST_CASE("chart: Unicode bars use eighth blocks and count columns, not bytes") {
    const std::vector<ChartBar> bars = {{"64 KiB", 1.0, "1"}, {"128 KiB", 16.0, "16"}, {"256 KiB", 0.01, "0.0"}};
    const auto lines = render_bar_chart("", bars, ChartStyle{true, 40});
    REQUIRE(lines.size() == 3);
    for (const auto& l : lines) {
        CHECK(display_width(l) <= 40);
        CHECK(l.find("\u2502") != std::string::npos);
    }
    // 7 + 2 + 1 + 3 = 13 columns fixed, 27 cells of bar; the largest is 27 full blocks.
    CHECK(count_of(lines[1], "\u2588") == 27);
    // 1/16 of 27 cells is 13.5 eighths, rounded to 14: one full block and a 6/8 block.
    CHECK(count_of(lines[0], "\u2588") == 1);
    CHECK(lines[0].find("\u258A") != std::string::npos);
    // A tiny positive value still shows one eighth.
    CHECK(lines[2].find("\u258F") != std::string::npos);
    CHECK(display_width("\u2588\u258F ab") == 5);
}

TEST_CASE("chart: narrow terminals keep a minimum bar; empty input") {
    const auto lines = render_bar_chart("t", {{"1 GiB", 1.0, "55.00 GB/s"}}, ChartStyle{false, 5});
    REQUIRE(lines.size() == 2);
    CHECK(std::count(lines[1].begin(), lines[1].end(), '#') == 10);
    CHECK(render_bar_chart("t", {}, ChartStyle{}).size() == 1);
}

TEST_CASE("copy report: JSON keeps numbers as numbers in base units") {
    std::vector<CopyResult> results = {fake("h2d", "h2d", 64 << 20, {1.25e-3, 1.2e-3, 1.3e-3})};
    results[0].verification.checked = true;
    const auto doc = json_of(results);
    CHECK(doc["command"] == "copy");
    REQUIRE(doc["results"].size() == 1);
    const auto& row = doc["results"][0];
    CHECK(row["device"] == 0);
    CHECK(row["direction"] == "h2d");
    CHECK(row["host_memory"] == "pinned");
    CHECK(row["engine"] == "ce");
    CHECK(row["bytes"] == 64u << 20);
    CHECK(row["iterations"] == 4);
    CHECK(row["samples"] == 3);
    CHECK(row["warmup"] == 2);
    CHECK(row["timing"] == "events");
    CHECK(row["median_us"].get<double>() == doctest::Approx(1250.0));
    CHECK(row["median_gbps"].get<double>() == doctest::Approx((64 << 20) / 1.25e-3 / 1e9));
    CHECK(row["min_gbps"].get<double>() < row["median_gbps"].get<double>());
    CHECK(row["max_gbps"].get<double>() > row["median_gbps"].get<double>());
    CHECK(row["cv_percent"].is_number());
    CHECK(row["verified"] == "ok");
    CHECK(row["mismatches"] == 0);
    CHECK(row["first_bad_offset"].is_null());
    CHECK(row["huge_pages"].is_null());
    CHECK(row["skipped"].is_null());
    CHECK_FALSE(row.contains("peer"));  // only p2p reports have peer columns
    CHECK(doc["details"][0]["samples_us"].size() == 3);
    CHECK(doc["notes"].is_array());
    CHECK(doc["bandwidth_note"].get<std::string>().find("1e9") != std::string::npos);
    CHECK(doc["cpu_affinity"].is_array());
    CHECK_FALSE(doc.contains("expect_min_gbps"));  // only with --expect-min
    CHECK(doc["p2p_matrix"].empty());               // only with peer rows
}

TEST_CASE("copy report: CSV has a header and one line per row") {
    std::vector<CopyResult> results = {fake("d2h", "d2h", 4096, {2e-6, 2e-6}),
                                       fake("d2h", "d2h", 8192, {3e-6, 3e-6})};
    const auto lines = lines_of(render_as(report_as(results, Format::csv), Format::csv));
    REQUIRE(lines.size() == 3);
    CHECK(lines[0].rfind("device,direction,host_memory,engine,bytes,iterations,samples,warmup,timing,median_us,", 0) == 0);
    CHECK(lines[0].find("median_gbps [GB/s]") != std::string::npos);
    const auto commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
    CHECK(commas(lines[1]) == commas(lines[0]));
    CHECK(lines[1].rfind("0,d2h,pinned,ce,4096,4,2,2,events,2,", 0) == 0);
    CHECK(lines[2].find(",no,") != std::string::npos);  // not verified
}

TEST_CASE("copy report: a sweep in table mode draws a chart; --no-chart and machine formats do not") {
    std::vector<CopyResult> results;
    for (std::uint64_t b = 4096; b <= (1u << 20); b *= 2) results.push_back(fake("h2d", "h2d", b, {b / 50e9, b / 50e9}));
    CopyReportStyle style;
    style.chart_style = ChartStyle{false, 80};
    const std::string text = text_of(results, style);
    const auto lines = lines_of(text);
    CHECK(lines[0].rfind("dev  direction  host memory  engine", 0) == 0);
    CHECK(text.find("bandwidth by size: h2d, device 0, pinned, ce") != std::string::npos);
    std::size_t bars = 0;
    for (const auto& l : lines)
        if (l.find(" |#") != std::string::npos) ++bars;
    CHECK(bars == results.size());
    for (const auto& l : lines) CHECK(display_width(l) <= 120);

    style.chart = false;
    const std::string plain = text_of(results, style);
    CHECK(plain.find('#') == std::string::npos);
    CHECK(plain.find("bandwidth by size") == std::string::npos);

    const Report json_report = report_as(results, Format::json);
    CHECK(json_report.text_after.empty());
    // A single size draws no chart.
    const std::string one = text_of({results[0]});
    CHECK(one.find("bandwidth by size") == std::string::npos);
}

TEST_CASE("copy report: d2d says bytes are counted once; bidir and host-clock rows are explained") {
    std::vector<CopyResult> results = {fake("d2d", "d2d", 1 << 20, {1e-6})};
    std::string text = text_of(results);
    CHECK(text.find("note: d2d counts each byte once") != std::string::npos);
    auto doc = json_of(results);
    CHECK(doc["results"][0]["host_memory"].is_null());
    CHECK(doc["notes"][0].get<std::string>().find("d2d counts each byte once") == 0);

    results = {fake("bidir-h2d", "bidir", 1 << 20, {1e-4}), fake("bidir-d2h", "bidir", 1 << 20, {1e-4})};
    results[0].timing = results[1].timing = CopyTiming::host_clock;
    results[0].host_kind = results[1].host_kind = HostMemoryKind::pageable;
    text = text_of(results);
    CHECK(text.find("bidir-h2d") != std::string::npos);
    CHECK(text.find("bidir-d2h") != std::string::npos);
    CHECK(text.find("note: bidir:") != std::string::npos);
    CHECK(text.find("note: host-clock rows") != std::string::npos);
    CHECK(text.find("d2d counts") == std::string::npos);
}

TEST_CASE("copy report: p2p rows carry peer columns; unmeasured rows are null with a reason") {
    CopyResult staged = fake("p2p", "p2p", 1 << 20, {1e-4});
    staged.peer = DeviceId(1);
    staged.peer_access = false;
    CopyResult direct = staged;
    direct.peer_access = true;
    direct.seconds.clear();
    direct.skipped = "device 0 cannot access device 1 directly";
    const std::vector<CopyResult> results = {staged, direct};
    const auto doc = json_of(results);
    REQUIRE(doc["results"].size() == 2);
    CHECK(doc["results"][0]["peer"] == 1);
    CHECK(doc["results"][0]["peer_access"] == false);
    CHECK(doc["results"][1]["peer_access"] == true);
    CHECK(doc["results"][1]["median_gbps"].is_null());
    CHECK(doc["results"][1]["skipped"] == "device 0 cannot access device 1 directly");
    const std::string text = text_of(results);
    CHECK(text.find("peer access") != std::string::npos);
    CHECK(unwrapped(text).find("not measured: device 0 cannot access device 1 directly") != std::string::npos);
    CHECK(describe_copy(staged) == "device 0 p2p to device 1 (peer access off, ce) 1 MiB");
}

TEST_CASE("copy report: thresholds and verification failures are found") {
    std::vector<CopyResult> results = {fake("h2d", "h2d", 1000000000, {0.02}),   // 50 GB/s
                                       fake("h2d", "h2d", 1000000000, {0.04})};  // 25 GB/s
    results[1].skipped.clear();
    CHECK(copies_below(results, 30).size() == 1);
    CHECK(copies_below(results, 60).size() == 2);
    CHECK(copies_below(results, 10).empty());
    CHECK(failed_verifications(results).empty());
    results[0].verification.checked = true;
    results[0].verification.mismatched_words = 3;
    results[0].verification.first_bad_offset = 4096;
    const auto failed = failed_verifications(results);
    REQUIRE(failed.size() == 1);
    CHECK(failed[0] == &results[0]);
    const auto doc = json_of(results);
    CHECK(doc["results"][0]["verified"] == "FAILED");
    CHECK(doc["results"][0]["mismatches"] == 3);
    CHECK(doc["results"][0]["first_bad_offset"] == 4096);
    CHECK(describe_copy(results[0]) == "device 0 h2d (pinned, ce) 953.67 MiB");
}

TEST_CASE("copy report: p2p-bidir has a row per way, its own note, and no host columns") {
    const std::vector<CopyResult> rows = {peer_row("p2p-bidir", 0, 1, true, 40), peer_row("p2p-bidir", 1, 0, true, 39)};
    const auto doc = json_of(rows);
    REQUIRE(doc["results"].size() == 2);
    CHECK(doc["results"][0]["direction"] == "p2p-bidir");
    CHECK(doc["results"][0]["device"] == 0);
    CHECK(doc["results"][0]["peer"] == 1);
    CHECK(doc["results"][1]["device"] == 1);
    CHECK(doc["results"][1]["peer"] == 0);
    CHECK(doc["results"][1]["host_memory"].is_null());
    CHECK(doc["details"][1]["peer"] == 0);
    CHECK(doc["details"][1]["peer_access"] == true);
    CHECK(doc["notes"][0].get<std::string>().rfind("p2p-bidir: ", 0) == 0);
    CHECK(describe_copy(rows[1]) == "device 1 p2p-bidir to device 0 (peer access on, ce) 1 GiB");
}

TEST_CASE("copy report: a failure part way reports the rows measured so far") {
    // Nothing measured yet: no rows, so no table is printed, and JSON has empty lists.
    const Report empty = report_as({}, Format::table);
    CHECK_FALSE(empty.has_rows());
    CHECK(empty.text_after.empty());
    const auto doc = json_of({});
    CHECK(doc["results"].empty());
    CHECK(doc["details"].empty());
    CHECK(doc["p2p_matrix"].empty());
    // Device 0 measured, device 1 not reached: its row is there.
    CopyResult first = fake("h2d", "h2d", 1 << 20, {1e-4});
    CHECK(json_of({first})["results"].size() == 1);
}

TEST_CASE("copy report: --expect-min and the pinned CPUs are in the document") {
    CopyResults results = results_of({fake("h2d", "h2d", 1 << 20, {1e-4})});
    results.cpu_affinity = {{DeviceId(0), "0-15,32-47"}, {DeviceId(1), "16-31"}};
    CopyReportStyle style;
    style.expect_min_gbps = 50;
    OutputOptions o;
    o.format = Format::json;
    const auto doc = nlohmann::json::parse(render(build_copy_report(results, style, o), o));
    CHECK(doc["expect_min_gbps"] == 50);
    REQUIRE(doc["cpu_affinity"].size() == 2);
    CHECK(doc["cpu_affinity"][0]["device"] == 0);
    CHECK(doc["cpu_affinity"][0]["cpus"] == "0-15,32-47");
    CHECK(doc["cpu_affinity"][1]["device"] == 1);
}

namespace {

// The p2p results of -d all on `n` devices: every ordered pair, with peer
// access off (staged) and on, the direct copy from `unreachable` to
// `unreachable + 1` not possible. Rates are 10 * source + destination GB/s,
// plus 100 with peer access.
std::vector<CopyResult> p2p_all(int n, int unreachable = -1) {
    std::vector<CopyResult> rows;
    for (int d = 0; d < n; ++d)
        for (int p = 0; p < n; ++p) {
            if (p == d) continue;
            rows.push_back(peer_row("p2p", d, p, false, 10 * d + p));
            const bool skipped = d == unreachable && p == unreachable + 1;
            rows.push_back(peer_row("p2p", d, p, true, skipped ? 0 : 100 + 10 * d + p));
        }
    return rows;
}

}  // namespace

TEST_CASE("p2p matrix: none without peer rows (one device)") {
    CHECK(p2p_matrices({fake("h2d", "h2d", 1 << 20, {1e-4})}).empty());
    CHECK(p2p_matrices({}).empty());
    CHECK(text_of({fake("d2d", "d2d", 1 << 20, {1e-4})}).find("matrix") == std::string::npos);
}

TEST_CASE("p2p matrix: two devices, peer access off and on") {
    const auto matrices = p2p_matrices(p2p_all(2));
    REQUIRE(matrices.size() == 2);
    CHECK(matrices[0].peer_access == false);
    CHECK(matrices[1].peer_access == true);
    for (const P2pMatrix& m : matrices) {
        CHECK(m.direction == "p2p");
        CHECK(m.engine == CopyEngine::ce);
        CHECK(m.bytes == 1u << 30);
        CHECK(m.devices == std::vector<DeviceId>{DeviceId(0), DeviceId(1)});
        REQUIRE(m.rows.size() == 2);
        CHECK_FALSE(m.rows[0].median_bps[0]);
        CHECK_FALSE(m.rows[1].median_bps[1]);
    }
    CHECK(*matrices[0].rows[0].median_bps[1] == doctest::Approx(1e9));   // 0 -> 1
    CHECK(*matrices[0].rows[1].median_bps[0] == doctest::Approx(10e9));  // 1 -> 0
    CHECK(*matrices[1].rows[1].median_bps[0] == doctest::Approx(110e9));
    const auto lines = render_p2p_matrix(matrices[1], Unit::automatic);
    REQUIRE(lines.size() == 4);
    CHECK(lines[0] == "p2p matrix, median GB/s, source device per row, destination per column: peer access on, ce, 1 GiB");
    CHECK(lines[1] == "     0    1");
    CHECK(lines[2] == "0    -  101");
    CHECK(lines[3] == "1  110    -");
}

TEST_CASE("p2p matrix: four devices; a pair that was not measured is '-' and null") {
    const std::vector<CopyResult> rows = p2p_all(4, 2);
    const auto matrices = p2p_matrices(rows);
    REQUIRE(matrices.size() == 2);
    const P2pMatrix& direct = matrices[1];
    REQUIRE(direct.rows.size() == 4);
    for (std::size_t s = 0; s < 4; ++s)
        for (std::size_t d = 0; d < 4; ++d) {
            CAPTURE(s);
            CAPTURE(d);
            const bool expected = s != d && !(s == 2 && d == 3);
            CHECK(direct.rows[s].median_bps[d].has_value() == expected);
            if (expected) CHECK(*direct.rows[s].median_bps[d] == doctest::Approx((100 + 10 * s + d) * 1e9));
        }
    const auto doc = json_of(rows);
    REQUIRE(doc["p2p_matrix"].size() == 2);
    const auto& m = doc["p2p_matrix"][1];
    CHECK(m["direction"] == "p2p");
    CHECK(m["peer_access"] == true);
    CHECK(m["engine"] == "ce");
    CHECK(m["bytes"] == 1u << 30);
    REQUIRE(m["rows"].size() == 4);
    for (int s = 0; s < 4; ++s) {
        CHECK(m["rows"][s]["source"] == s);
        REQUIRE(m["rows"][s]["gbps"].size() == 4);
        CHECK(m["rows"][s]["gbps"][s].is_null());
    }
    CHECK(m["rows"][2]["gbps"][3].is_null());
    CHECK(m["rows"][3]["gbps"][2].get<double>() == doctest::Approx(132));
    CHECK(doc["p2p_matrix"][0]["rows"][0]["gbps"][3].get<double>() == doctest::Approx(3));

    const std::string text = text_of(rows);
    CHECK(text.find("p2p matrix, median GB/s, source device per row, destination per column: peer access off, ce, 1 GiB") !=
          std::string::npos);
    CHECK(text.find("peer access on, ce, 1 GiB\n     0    1    2    3\n0    -  101  102  103\n") != std::string::npos);
    CHECK(text.find("\n2  120  121    -    -\n") != std::string::npos);
    // The matrices come before the notes.
    CHECK(text.find("matrix") < text.find("note: "));
}

// An HGX node's 8 GPUs, 16, and 32: the grid stays a grid within 80 and
// 100 columns. At 80, 16 devices' grid was 82 wide and went through the
// prose wrapping, which ran its cells together out of their columns; now the
// gap narrows to one space, and 32 devices are cut into blocks.
TEST_CASE("p2p matrix: 8, 16 and 32 devices stay aligned within 80 and 100 columns") {
    for (const int n : {8, 16, 32}) {
        CAPTURE(n);
        const std::string text = text_of(p2p_all(n));  // every line within 80 and 100 (check_widths)
        CHECK(text.find("peer access on, ce, 1 GiB") != std::string::npos);
        const P2pMatrix direct = p2p_matrices(p2p_all(n))[1];
        for (const std::size_t columns : {std::size_t{80}, std::size_t{100}}) {
            CAPTURE(columns);
            const std::vector<std::string> lines = render_p2p_matrix(direct, Unit::automatic, columns);
            std::size_t blocks = 0, rows = 0, block_width = 0;
            for (std::size_t i = 1; i < lines.size(); ++i) {
                CAPTURE(lines[i]);
                if (lines[i].rfind("destinations ", 0) == 0) {
                    ++blocks;
                    block_width = 0;
                    continue;
                }
                CHECK(lines[i].size() <= columns);
                if (block_width == 0) block_width = lines[i].size();
                CHECK(lines[i].size() == block_width);  // every line of a block as wide: the cells in columns
                ++rows;
            }
            CHECK(rows == static_cast<std::size_t>(n + 1) * std::max<std::size_t>(blocks, 1));
            CHECK((blocks > 0) == (n == 32));
        }
    }
    // 32 at 80 columns: 19 destinations a block (2 + 19 * 4 = 78), a gap of one.
    const std::vector<std::string> lines = render_p2p_matrix(p2p_matrices(p2p_all(32))[1], Unit::automatic, 80);
    CHECK(std::find(lines.begin(), lines.end(), "destinations 0 to 18:") != lines.end());
    CHECK(std::find(lines.begin(), lines.end(), "destinations 19 to 31:") != lines.end());
    // 16 at 80: one block, one space between the cells.
    const std::vector<std::string> sixteen = render_p2p_matrix(p2p_matrices(p2p_all(16))[1], Unit::automatic, 80);
    CHECK(sixteen[1] == "     0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15");
    CHECK(sixteen[17] == "15 250 251 252 253 254 255 256 257 258 259 260 261 262 263 264   -");
}

TEST_CASE("p2p matrix: p2p-bidir rows fill both ways; one pair of p2p prints no matrix") {
    std::vector<CopyResult> rows;
    for (const auto& [d, p] : peer_pairs({DeviceId(0), DeviceId(1), DeviceId(2), DeviceId(3)},
                                         {DeviceId(0), DeviceId(1), DeviceId(2), DeviceId(3)}, true)) {
        rows.push_back(peer_row("p2p-bidir", d.ordinal(), p.ordinal(), true, 50));
        rows.push_back(peer_row("p2p-bidir", p.ordinal(), d.ordinal(), true, 49));
    }
    const auto matrices = p2p_matrices(rows);
    REQUIRE(matrices.size() == 1);
    CHECK(matrices[0].direction == "p2p-bidir");
    for (std::size_t s = 0; s < 4; ++s)
        for (std::size_t d = 0; d < 4; ++d) CHECK(matrices[0].rows[s].median_bps[d].has_value() == (s != d));
    CHECK(*matrices[0].rows[0].median_bps[3] == doctest::Approx(50e9));
    CHECK(*matrices[0].rows[3].median_bps[0] == doctest::Approx(49e9));
    CHECK(text_of(rows).find("p2p-bidir matrix") != std::string::npos);
    // -d 0 --peer 1: the results table already says it all.
    const std::vector<CopyResult> one_pair = {peer_row("p2p", 0, 1, false, 10), peer_row("p2p", 0, 1, true, 20)};
    CHECK(text_of(one_pair).find("matrix") == std::string::npos);
    CHECK(json_of(one_pair)["p2p_matrix"].size() == 2);
    // A sweep: one matrix per size; GiB/s on request.
    const std::vector<CopyResult> sweep = {peer_row("p2p", 0, 1, true, 10, 4096), peer_row("p2p", 1, 0, true, 10, 4096),
                                           peer_row("p2p", 0, 1, true, 20, 8192), peer_row("p2p", 1, 0, true, 20, 8192)};
    CHECK(p2p_matrices(sweep).size() == 2);
    CHECK(render_p2p_matrix(p2p_matrices(sweep)[0], Unit::GiB)[0].find("median GiB/s") != std::string::npos);
}

namespace {

// Every property name of an object schema and of the objects inside it.
void schema_keys(const nlohmann::json& schema, std::set<std::string>& keys) {
    if (schema.contains("properties"))
        for (const auto& [key, value] : schema["properties"].items()) {
            keys.insert(key);
            schema_keys(value, keys);
        }
    if (schema.contains("items")) schema_keys(schema["items"], keys);
}

// Every key of a document and of the objects inside it.
void document_keys(const nlohmann::json& doc, std::set<std::string>& keys) {
    if (doc.is_object())
        for (const auto& [key, value] : doc.items()) {
            keys.insert(key);
            document_keys(value, keys);
        }
    if (doc.is_array())
        for (const auto& item : doc) document_keys(item, keys);
}

}  // namespace

TEST_CASE("copy report: the document's keys are its schema's, and gpumem --schema gives that schema") {
    CopyResults results = results_of(p2p_all(2, 0));
    results.rows.push_back(fake("h2d", "h2d", 1 << 20, {1e-4}));
    results.cpu_affinity = {{DeviceId(0), "0-7"}};
    CopyReportStyle style;
    style.expect_min_gbps = 1;
    OutputOptions o;
    o.format = Format::json;
    const auto doc = nlohmann::json::parse(render(build_copy_report(results, style, o), o));
    std::set<std::string> in_document, in_schema;
    document_keys(doc, in_document);
    nlohmann::json schema = schema_json(copy_document_schema());
    schema["properties"].erase("origin");  // run_command's stamp, not report()'s
    schema_keys(schema, in_schema);
    const RunResult listed = run_gpumem({"--schema"});
    REQUIRE(listed.status == 0);
    CHECK(nlohmann::json::parse(listed.out)["copy"] == nlohmann::json::parse(schema_json(copy_document_schema()).dump()));
    in_schema.erase("warnings");  // the envelope's, present only with warnings or an error
    in_schema.erase("error");
    in_schema.erase("status");
    in_schema.erase("code");
    in_schema.erase("message");
    CHECK(in_document == in_schema);
    // Every key the old document had is still there.
    for (const char* key : {"results", "bandwidth_note", "notes", "details", "cpu_affinity", "expect_min_gbps", "device", "peer",
                            "peer_access", "direction", "host_memory", "engine", "bytes", "iterations", "samples", "warmup", "timing",
                            "median_us", "median_gbps", "min_gbps", "max_gbps", "cv_percent", "verified", "mismatches",
                            "first_bad_offset", "huge_pages", "skipped", "samples_us", "cpus"})
        CHECK(in_document.count(key) == 1);
    // The table shows the human columns only.
    const Report table = report_as(results.rows, Format::table);
    std::vector<std::string> headers;
    for (const Field& f : table.tables.at(0).fields) headers.emplace_back(f.key);
    CHECK(headers == std::vector<std::string>{"device", "peer", "peer_access", "direction", "host_memory", "engine", "bytes", "median_us",
                                              "median_gbps", "min_gbps", "max_gbps", "cv_percent", "verified"});
}

TEST_CASE("cpu affinity: CPU lists print as ranges") {
    CHECK(format_cpu_list({}) == "");
    CHECK(format_cpu_list({3}) == "3");
    CHECK(format_cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
    CHECK(format_cpu_list({5, 4, 4, 6}) == "4-6");
    CHECK(allowed_cpu_count() >= 1);
    ScopedCpuAffinity none{std::vector<int>{}};
    CHECK_FALSE(none.pinned());
}

// Usage errors are found before the driver is touched, so they hold on any
// machine: exit 2, one line on stderr, nothing on stdout.
TEST_CASE("copy cli: bad input exits 2 with one line on stderr") {
    const std::vector<std::vector<std::string>> cases = {
        {"copy"},
        {"copy", "bogus"},
        {"copy", "h2d", "--peer", "1"},
        {"copy", "h2d", "--engine", "sm", "--host-memory", "pageable"},
        {"copy", "h2d", "--engine", "dma"},
        {"copy", "d2d", "--host-memory", "pinned"},
        {"copy", "h2d", "--host-memory", "nope"},
        {"copy", "h2d", "--size", "1MiB", "--sizes", "1MiB..4MiB"},
        {"copy", "h2d", "--sizes", "4MiB..1MiB"},
        {"copy", "h2d", "--size", "0"},
        {"copy", "h2d", "--debug-corrupt-offset", "5"},
        {"copy", "h2d", "--verify", "--size", "4KiB", "--debug-corrupt-offset", "4KiB"},
        {"copy", "h2d", "--expect-min", "0"},
        {"copy", "h2d", "--iterations", "0"},
        {"copy", "h2d", "--samples", "0"},
        {"copy", "p2p", "--peer", "zz"},
        {"copy", "h2d", "-d", "x"},
        // The issue's examples: usage errors that used to reach the driver.
        {"copy", "h2d", "--sizes", "4KiB...1GiB"},
        {"copy", "h2d", "--expect-min", "1e400"},
        {"copy", "p2p-bidir", "-d", "0", "--peer", "0"},
        {"copy", "d2d", "--peer", "1"},
        {"copy", "h2d", "--size", "257TiB"},
    };
    for (const auto& args : cases) {
        std::string joined;
        for (const auto& a : args) joined += a + " ";
        CAPTURE(joined);
        const auto r = run_gpumem(args);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
    }
}

TEST_CASE("copy cli: a usage error with --json is one JSON document") {
    const auto r = run_gpumem({"copy", "sideways", "--json"});
    CHECK(r.status == 2);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["command"] == "copy");
    CHECK(doc["error"]["status"] == 2);
    CHECK(doc["error"]["message"].get<std::string>().find("sideways") != std::string::npos);
}

TEST_CASE("copy cli: --list directions and --list engines print the tables") {
    const auto directions = run_gpumem({"--list", "directions", "--format", "value"});
    REQUIRE(directions.status == 0);
    for (const Named<CopyDirection>& row : kCopyDirections)
        CHECK(directions.out.find(std::string(row.name) + "\t" + std::string(row.help) + "\n") != std::string::npos);
    const auto engines = run_gpumem({"--list", "engines", "--json"});
    REQUIRE(engines.status == 0);
    const auto doc = nlohmann::json::parse(engines.out);
    REQUIRE(doc["names"].size() == 2);
    CHECK(doc["names"][0]["name"] == "ce");
    CHECK(doc["names"][1]["name"] == "sm");
}

TEST_CASE("copy cli: help names every option and the exit status of --expect-min") {
    const auto r = run_gpumem({"copy", "--help"});
    CHECK(r.status == 0);
    for (const char* option : {"--size", "--sizes", "--host-memory", "--engine", "--iterations", "--samples", "--warmup",
                               "--sample-time", "--verify", "--peer", "--no-affinity", "--no-chart", "--expect-min"})
        CHECK(r.out.find(option) != std::string::npos);
    CHECK(r.out.find("--debug-corrupt-offset") == std::string::npos);  // hidden
    CHECK(r.out.find("Exit 6") != std::string::npos);
}

TEST_CASE("copy --plot: a line per direction over the sizes, the reference each has where NVML gives it, the GPU in the title") {
    std::vector<CopyResult> rows;
    for (std::uint64_t bytes : {1ULL << 20, 1ULL << 24})
        for (const char* flow : {"bidir-h2d", "bidir-d2h"}) rows.push_back(fake(flow, "bidir", bytes, {static_cast<double>(bytes) / 50e9}));
    CopyResults results = results_of(rows);
    results.devices.push_back({DeviceId(0), "NVIDIA H200", 4.8e12, 5u, 16u});
    const Plot plot = copy_sweep_plot(results);
    CHECK(plot.title == "gpumem copy bidir: bandwidth by size on device 0 (NVIDIA H200)");
    REQUIRE(plot.series.size() == 2);
    CHECK(plot.series[0].label == "bidir-h2d, pinned");
    CHECK(plot.series[1].label == "bidir-d2h, pinned");
    CHECK(plot.series[0].x == std::vector<double>{1048576, 16777216});
    CHECK(plot.series[0].y[0] == doctest::Approx(50.0));
    CHECK(plot.x.scale == AxisScale::log2);
    REQUIRE(plot.rules.size() == 1);  // one link, named once
    CHECK(plot.rules[0].value == doctest::Approx(63.015).epsilon(0.001));
    CHECK(plot.rules[0].label == "device 0 PCIe Gen5 x16's 63 GB/s per direction");

    CopyResults d2d = results_of({fake("d2d", "d2d", 1 << 20, {1e-4}), fake("d2d", "d2d", 1 << 22, {2e-4})});
    d2d.devices.push_back({DeviceId(0), "NVIDIA H200", 4.8e12, std::nullopt, std::nullopt});
    const Plot d2d_plot = copy_sweep_plot(d2d);
    REQUIRE(d2d_plot.rules.size() == 1);
    CHECK(d2d_plot.rules[0].value == doctest::Approx(2400));  // half the peak: each byte read and written
    // Without NVML's figures: no reference, and a sweep of one size is marks, not a line.
    CopyResults single = results_of({fake("h2d", "h2d", 1 << 20, {1e-4})});
    const Plot single_plot = copy_sweep_plot(single);
    CHECK(single_plot.rules.empty());
    REQUIRE(single_plot.series.size() == 1);
    CHECK(single_plot.series[0].points);
    CHECK(single_plot.title == "gpumem copy h2d: bandwidth by size on device 0");
}
