// CPU suite for `gpumem copy`: directions and engines, sweep ranges, the
// statistics a row shows, the bar chart, the report's shape in every format,
// and usage errors through the binary (all of which fail before any GPU work).
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "chart.hpp"
#include "cli_harness.hpp"
#include "base/copy_plan.hpp"
#include "copy_report.hpp"
#include "base/cpu_affinity.hpp"
#include "base/errors.hpp"
#include "output.hpp"
#include "base/sizes.hpp"

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

CopyResult fake(const char* flow, CopyDirection direction, std::uint64_t bytes, std::vector<double> seconds) {
    CopyResult r;
    r.flow = flow;
    r.direction = direction;
    r.bytes = bytes;
    r.iterations = 4;
    r.warmup = 2;
    r.seconds = std::move(seconds);
    if (copy_uses_host_memory(direction)) r.host_kind = HostMemoryKind::pinned;
    return r;
}

CopyReportStyle style_for(Format format) {
    CopyReportStyle style;
    style.format = format;
    return style;
}

std::string render_as(const Report& report, Format format) {
    OutputOptions o;
    o.format = format;
    return render(report, o);
}

}  // namespace

TEST_CASE("copy: directions, engines and timing methods") {
    CHECK(parse_copy_direction("h2d") == CopyDirection::h2d);
    CHECK(parse_copy_direction("bidir") == CopyDirection::bidir);
    CHECK(parse_copy_direction("p2p") == CopyDirection::p2p);
    CHECK_THROWS_AS(parse_copy_direction("H2D"), UsageError);
    CHECK_THROWS_AS(parse_copy_direction("htod"), UsageError);
    for (auto d : {CopyDirection::h2d, CopyDirection::d2h, CopyDirection::d2d, CopyDirection::h2h, CopyDirection::bidir,
                   CopyDirection::p2p})
        CHECK(parse_copy_direction(copy_direction_name(d)) == d);
    CHECK(copy_uses_host_memory(CopyDirection::bidir));
    CHECK_FALSE(copy_uses_host_memory(CopyDirection::d2d));
    CHECK_FALSE(copy_uses_host_memory(CopyDirection::p2p));
    CHECK(parse_copy_engine("sm") == CopyEngine::sm);
    CHECK_THROWS_AS(parse_copy_engine("dma"), UsageError);

    using K = HostMemoryKind;
    CHECK(copy_timing_for(CopyDirection::h2d, K::pinned, CopyEngine::ce, false) == CopyTiming::events);
    CHECK(copy_timing_for(CopyDirection::h2d, K::registered, CopyEngine::ce, false) == CopyTiming::events);
    CHECK(copy_timing_for(CopyDirection::d2h, K::pageable, CopyEngine::ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(CopyDirection::bidir, K::pageable_huge, CopyEngine::ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(CopyDirection::h2h, K::pinned, CopyEngine::ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(CopyDirection::h2h, K::pinned, CopyEngine::sm, false) == CopyTiming::events);
    CHECK(copy_timing_for(CopyDirection::p2p, K::pinned, CopyEngine::ce, false) == CopyTiming::host_clock);
    CHECK(copy_timing_for(CopyDirection::p2p, K::pinned, CopyEngine::ce, true) == CopyTiming::events);
    CHECK(copy_timing_for(CopyDirection::d2d, K::pageable, CopyEngine::ce, false) == CopyTiming::events);

    CHECK_THROWS_AS(validate_copy_combination(CopyDirection::h2d, K::pageable, CopyEngine::sm), UsageError);
    CHECK_THROWS_AS(validate_copy_combination(CopyDirection::bidir, K::pageable_huge, CopyEngine::sm), UsageError);
    CHECK_NOTHROW(validate_copy_combination(CopyDirection::h2d, K::write_combined, CopyEngine::sm));
    CHECK_NOTHROW(validate_copy_combination(CopyDirection::d2d, K::pageable, CopyEngine::sm));
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
    using D = CopyDirection;
    using K = HostMemoryKind;
    auto n = copy_memory_needs(D::h2d, K::pinned, 100, false);
    CHECK(n.device == 104);
    CHECK(n.host == 104);
    n = copy_memory_needs(D::d2d, K::pinned, 1 << 20, false);
    CHECK(n.device == 2u << 20);
    CHECK(n.host == 0);
    n = copy_memory_needs(D::bidir, K::pinned, 1 << 20, false);
    CHECK(n.device == 2u << 20);
    CHECK(n.host == 2u << 20);
    n = copy_memory_needs(D::h2h, K::pageable, 1 << 20, true);
    CHECK(n.device == 0);
    CHECK(n.host == 2u << 20);
    n = copy_memory_needs(D::p2p, K::pinned, 1 << 20, true);
    CHECK(n.device == 1u << 20);
    CHECK(n.peer == 1u << 20);
    // A write-combined destination is checked on the device: one more buffer.
    CHECK(copy_memory_needs(D::d2h, K::write_combined, 1 << 20, true).device == 2u << 20);
    CHECK(copy_memory_needs(D::d2h, K::write_combined, 1 << 20, false).device == 1u << 20);
    CHECK(copy_memory_needs(D::h2d, K::write_combined, 1 << 20, true).device == 1u << 20);
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
    const CopyResult r = fake("h2d", CopyDirection::h2d, 8000000000ULL, {1.0, 2.0, 4.0});
    const CopyFigures f = copy_figures(r);
    CHECK(f.seconds.median == doctest::Approx(2.0));
    CHECK(f.median_bps == doctest::Approx(4e9));
    CHECK(f.min_bps == doctest::Approx(2e9));
    CHECK(f.max_bps == doctest::Approx(8e9));
    // cv of {8, 4, 2}: mean 14/3, sample stdev 3.0551
    CHECK(f.cv == doctest::Approx(3.0550504633 / (14.0 / 3.0)).epsilon(1e-6));
    CHECK(copy_figures(fake("h2d", CopyDirection::h2d, 1, {})).median_bps == 0);
    const CopyFigures steady = copy_figures(fake("h2d", CopyDirection::h2d, 1 << 20, {1e-3, 1e-3, 1e-3}));
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
    std::vector<CopyResult> results = {fake("h2d", CopyDirection::h2d, 64 << 20, {1.25e-3, 1.2e-3, 1.3e-3})};
    results[0].verification.checked = true;
    const Report report = build_copy_report(results, style_for(Format::json));
    const auto doc = nlohmann::json::parse(render_as(report, Format::json));
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
}

TEST_CASE("copy report: CSV has a header and one line per row") {
    std::vector<CopyResult> results = {fake("d2h", CopyDirection::d2h, 4096, {2e-6, 2e-6}),
                                       fake("d2h", CopyDirection::d2h, 8192, {3e-6, 3e-6})};
    const auto lines = lines_of(render_as(build_copy_report(results, style_for(Format::csv)), Format::csv));
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
    for (std::uint64_t b = 4096; b <= (1u << 20); b *= 2) results.push_back(fake("h2d", CopyDirection::h2d, b, {b / 50e9, b / 50e9}));
    CopyReportStyle style = style_for(Format::table);
    style.chart_style = ChartStyle{false, 80};
    const std::string text = render_as(build_copy_report(results, style), Format::table);
    const auto lines = lines_of(text);
    CHECK(lines[0].rfind("dev  direction  host memory  engine", 0) == 0);
    CHECK(text.find("bandwidth by size: h2d, device 0, pinned, ce") != std::string::npos);
    std::size_t bars = 0;
    for (const auto& l : lines)
        if (l.find(" |#") != std::string::npos) ++bars;
    CHECK(bars == results.size());
    for (const auto& l : lines) CHECK(display_width(l) <= 120);

    style.chart = false;
    const std::string plain = render_as(build_copy_report(results, style), Format::table);
    CHECK(plain.find('#') == std::string::npos);
    CHECK(plain.find("bandwidth by size") == std::string::npos);

    const Report json_report = build_copy_report(results, style_for(Format::json));
    CHECK(json_report.text_after.empty());
    // A single size draws no chart.
    const std::string one = render_as(build_copy_report({results[0]}, style_for(Format::table)), Format::table);
    CHECK(one.find("bandwidth by size") == std::string::npos);
}

TEST_CASE("copy report: d2d says bytes are counted once; bidir and host-clock rows are explained") {
    std::vector<CopyResult> results = {fake("d2d", CopyDirection::d2d, 1 << 20, {1e-6})};
    std::string text = render_as(build_copy_report(results, style_for(Format::table)), Format::table);
    CHECK(text.find("note: d2d counts each byte once") != std::string::npos);
    auto doc = nlohmann::json::parse(render_as(build_copy_report(results, style_for(Format::json)), Format::json));
    CHECK(doc["results"][0]["host_memory"].is_null());
    CHECK(doc["notes"][0].get<std::string>().find("d2d counts each byte once") == 0);

    results = {fake("bidir-h2d", CopyDirection::bidir, 1 << 20, {1e-4}), fake("bidir-d2h", CopyDirection::bidir, 1 << 20, {1e-4})};
    results[0].timing = results[1].timing = CopyTiming::host_clock;
    results[0].host_kind = results[1].host_kind = HostMemoryKind::pageable;
    text = render_as(build_copy_report(results, style_for(Format::table)), Format::table);
    CHECK(text.find("bidir-h2d") != std::string::npos);
    CHECK(text.find("bidir-d2h") != std::string::npos);
    CHECK(text.find("note: bidir:") != std::string::npos);
    CHECK(text.find("note: host-clock rows") != std::string::npos);
    CHECK(text.find("d2d counts") == std::string::npos);
}

TEST_CASE("copy report: p2p rows carry peer columns; unmeasured rows are null with a reason") {
    CopyResult staged = fake("p2p", CopyDirection::p2p, 1 << 20, {1e-4});
    staged.peer = DeviceId(1);
    staged.peer_access = false;
    CopyResult direct = staged;
    direct.peer_access = true;
    direct.seconds.clear();
    direct.skipped = "device 0 cannot access device 1 directly";
    const std::vector<CopyResult> results = {staged, direct};
    const auto doc = nlohmann::json::parse(render_as(build_copy_report(results, style_for(Format::json)), Format::json));
    REQUIRE(doc["results"].size() == 2);
    CHECK(doc["results"][0]["peer"] == 1);
    CHECK(doc["results"][0]["peer_access"] == false);
    CHECK(doc["results"][1]["peer_access"] == true);
    CHECK(doc["results"][1]["median_gbps"].is_null());
    CHECK(doc["results"][1]["skipped"] == "device 0 cannot access device 1 directly");
    const std::string text = render_as(build_copy_report(results, style_for(Format::table)), Format::table);
    CHECK(text.find("peer access") != std::string::npos);
    CHECK(text.find("not measured: device 0 cannot access device 1 directly") != std::string::npos);
    CHECK(describe_copy(staged) == "device 0 p2p to device 1 (peer access off, ce) 1 MiB");
}

TEST_CASE("copy report: thresholds and verification failures are found") {
    std::vector<CopyResult> results = {fake("h2d", CopyDirection::h2d, 1000000000, {0.02}),   // 50 GB/s
                                       fake("h2d", CopyDirection::h2d, 1000000000, {0.04})};  // 25 GB/s
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
    const auto doc = nlohmann::json::parse(render_as(build_copy_report(results, style_for(Format::json)), Format::json));
    CHECK(doc["results"][0]["verified"] == "FAILED");
    CHECK(doc["results"][0]["mismatches"] == 3);
    CHECK(doc["results"][0]["first_bad_offset"] == 4096);
    CHECK(describe_copy(results[0]) == "device 0 h2d (pinned, ce) 953.67 MiB");
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

TEST_CASE("copy cli: help names every option and the exit status of --expect-min") {
    const auto r = run_gpumem({"copy", "--help"});
    CHECK(r.status == 0);
    for (const char* option : {"--size", "--sizes", "--host-memory", "--engine", "--iterations", "--samples", "--warmup",
                               "--sample-time", "--verify", "--peer", "--no-affinity", "--no-chart", "--expect-min"})
        CHECK(r.out.find(option) != std::string::npos);
    CHECK(r.out.find("--debug-corrupt-offset") == std::string::npos);  // hidden
    CHECK(r.out.find("Exit 6") != std::string::npos);
}
