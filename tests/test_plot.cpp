// --plot's pure parts: the SVG writer's escaping and numbers, nice ticks,
// log axes, byte units, and the document render_svg makes (its legend, axes
// and title present, no script, no link out). The browser test
// (test_plots_browser.cpp) renders real plots in Chromium.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli/plot.hpp"
#include "cli/svg.hpp"

using namespace gpumem::cli;

namespace {

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
}

std::vector<std::string> labels_of(const AxisLayout& a) {
    std::vector<std::string> labels;
    for (const PlotTick& t : a.ticks) labels.push_back(t.label);
    return labels;
}

}  // namespace

TEST_CASE("svg: text is escaped, control characters and broken UTF-8 replaced; numbers are short") {
    CHECK(xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;");
    CHECK(xml_escape(std::string("x\x01y\x7fz", 5)) == "x?y?z");
    CHECK(xml_escape("tab\tnew\n") == "tab\tnew\n");
    CHECK(xml_escape("caf\xc3\xa9 \xe2\x86\x92") == "caf\xc3\xa9 \xe2\x86\x92");
    CHECK(xml_escape("bad \xff\xc3 end") == "bad ?? end");
    CHECK(svg_number(12.5) == "12.5");
    CHECK(svg_number(3.0) == "3");
    CHECK(svg_number(-0.001) == "0");
    CHECK(svg_number(1234.567) == "1234.57");
    CHECK(svg_number(std::nan("")) == "0");
    CHECK(svg_number(1.0 / 0.0) == "0");
    SvgWriter w(10, 20);
    w.open("g", {{"id", "a\"b"}});
    w.text("text", {}, "<x>");
    const std::string doc = w.finish();
    CHECK(doc.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"20\"", 0) == 0);
    CHECK(doc.find("<g id=\"a&quot;b\">") != std::string::npos);
    CHECK(doc.find("<text>&lt;x&gt;</text>") != std::string::npos);
    CHECK(doc.find("</g>\n</svg>\n") != std::string::npos);  // closed by finish()
}

TEST_CASE("plot axes: nice ticks are 1, 2 or 5 x 10^k apart and cover the range") {
    CHECK(nice_ticks(0, 97, 6) == std::vector<double>{0, 20, 40, 60, 80, 100});
    CHECK(nice_ticks(0, 10, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
    const std::vector<double> small = nice_ticks(0, 1.3, 6);
    REQUIRE(small.size() == 8);
    CHECK(small[1] == doctest::Approx(0.2));
    CHECK(small.back() == doctest::Approx(1.4));
    const std::vector<double> offset = nice_ticks(-3, 7, 5);
    CHECK(offset.front() <= -3);
    CHECK(offset.back() >= 7);
    for (double t : offset) CHECK(std::signbit(t) == (t < 0));  // no "-0"
    CHECK(nice_ticks(5, 5, 4) == std::vector<double>{5});  // degenerate: the value alone
}

TEST_CASE("plot axes: log2 ticks are powers of two, aligned, at most as many as asked") {
    const std::vector<double> t = log2_ticks(4096, 1 << 30, 10);
    REQUIRE(!t.empty());
    CHECK(t.size() <= 10);
    CHECK(t.front() <= 4096);
    CHECK(t.back() >= static_cast<double>(1 << 30));
    for (std::size_t i = 1; i < t.size(); ++i) CHECK(t[i] == t[i - 1] * (t[1] / t[0]));
    for (double v : t) CHECK(std::log2(v) == std::floor(std::log2(v)));
    CHECK(log2_ticks(1024, 4096, 10) == std::vector<double>{1024, 2048, 4096});
    CHECK(log2_ticks(0, 10, 5).empty());
}

TEST_CASE("plot axes: bytes in one unit named in the title; log axes label each size; whole numbers for batches") {
    const double gib = 1024.0 * 1024 * 1024;
    const AxisLayout mem = layout_axis({"memory", AxisScale::linear, AxisValues::bytes, true}, 0, 38 * gib, 6);
    CHECK(mem.title == "memory (GiB)");
    CHECK(mem.lo == 0);
    CHECK(mem.hi >= 38 * gib);
    CHECK(labels_of(mem) == std::vector<std::string>{"0", "5", "10", "15", "20", "25", "30", "35", "40"});
    const AxisLayout sizes = layout_axis({"copy size", AxisScale::log2, AxisValues::bytes, false}, 4096, 64.0 * 1024 * 1024, 8);
    CHECK(sizes.title == "copy size (bytes, log scale)");
    CHECK(sizes.ticks.front().label == "4 KiB");
    CHECK(sizes.ticks.back().label == "64 MiB");
    const AxisLayout batch = layout_axis({"batch", AxisScale::linear, AxisValues::whole, true}, 1, 3, 6);
    for (const PlotTick& tick : batch.ticks) CHECK(tick.value == std::floor(tick.value));
    CHECK(labels_of(batch) == std::vector<std::string>{"0", "1", "2", "3"});
    const AxisLayout events = layout_axis({"event", AxisScale::linear, AxisValues::number, true}, 0, 1200000, 6);
    CHECK(events.ticks.back().label == "1.2M");
    CHECK(short_number(25000, 1000) == "25k");
    CHECK(short_number(0.5, 0.1) == "0.5");
    CHECK(short_number(1.25e6, 5e4) == "1.25M");
}

TEST_CASE("plot: the document has its title, axes, legend entries for every series and line, and nothing external") {
    Plot plot;
    plot.title = "gpumem copy h2d: bandwidth by size on device 0 (NVIDIA <H200>)";
    plot.subtitle = "median of 5 samples";
    plot.x = {"copy size", AxisScale::log2, AxisValues::bytes, false};
    plot.y = {"median bandwidth (GB/s)", AxisScale::linear, AxisValues::number, true};
    PlotSeries s;
    s.label = "h2d, pinned";
    s.x = {4096, 65536, 1048576, 67108864};
    s.y = {5, 20, 50, 55};
    plot.series.push_back(s);
    s.label = "d2h, pinned";
    s.dashed = true;
    s.y_low = {4, 18, 45, 50};
    plot.series.push_back(s);
    plot.rules.push_back({false, 63.0, "PCIe Gen5 x16's 63.0 GB/s", -2});
    plot.markers.push_back({1048576, 50, MarkerShape::cross, 1, "out of memory", ""});
    plot.notes.push_back("a note");
    const std::string svg = render_svg(plot);
    CHECK(count_of(svg, "<svg ") == 1);
    CHECK(count_of(svg, "class=\"legend-entry\"") == 4);  // two series, the marker, the rule
    CHECK(svg.find("id=\"x-axis\"") != std::string::npos);
    CHECK(svg.find("id=\"y-axis\"") != std::string::npos);
    CHECK(svg.find("id=\"background\"") != std::string::npos);
    CHECK(svg.find("NVIDIA &lt;H200&gt;") != std::string::npos);
    CHECK(svg.find("copy size (bytes, log scale)") != std::string::npos);
    CHECK(svg.find("<polygon") != std::string::npos);  // the band of the second series
    CHECK(svg.find("stroke-dasharray") != std::string::npos);
    CHECK(svg.find("<script") == std::string::npos);
    CHECK(count_of(svg, "http") == 1);  // the SVG namespace alone: no link, font or image from elsewhere
    CHECK(svg.find("nothing was measured") == std::string::npos);

    Plot empty;
    empty.title = "nothing";
    const std::string none = render_svg(empty);
    CHECK(none.find("nothing was measured") != std::string::npos);
    CHECK(none.find("id=\"legend\"") != std::string::npos);
}

TEST_CASE("plot: a rule's label is drawn over the markers, on a halo, so that a row of crosses near a cap cannot hide it") {
    Plot plot;
    plot.x = {"event", AxisScale::linear, AxisValues::number, true};
    plot.y = {"memory", AxisScale::linear, AxisValues::bytes, true};
    plot.rules.push_back({false, 100.0, "cap 100 B", -2});
    for (int i = 0; i < 5; ++i) plot.markers.push_back({static_cast<double>(i), 99.0, MarkerShape::cross, 0, "out of memory", ""});
    const std::string svg = render_svg(plot);
    const std::size_t markers = svg.find("id=\"markers\""), labels = svg.find("id=\"rule-labels\"");
    REQUIRE(markers != std::string::npos);
    REQUIRE(labels != std::string::npos);
    CHECK(markers < labels);
    CHECK(svg.find(">cap 100 B<") > labels);
    CHECK(svg.find("paint-order=\"stroke\"") != std::string::npos);
}

TEST_CASE("plot: --plot's file is written only where there is something to draw") {
    Plot plot;
    plot.rules.push_back({false, 63.0, "PCIe Gen5 x16's 63.0 GB/s", -2});  // a reference alone is no picture of a run
    CHECK_FALSE(has_points(plot));
    Report::PlotFile file = plot_file("h2d.svg", plot);
    CHECK(file.nothing_drawn);
    CHECK(file.svg.empty());
    PlotSeries s;
    s.x = {4096};
    s.y = {std::nan("")};
    plot.series.push_back(s);
    CHECK_FALSE(has_points(plot));  // a size with no figure
    plot.series.back().y = {5};
    CHECK(has_points(plot));
    file = plot_file("h2d.svg", plot);
    CHECK_FALSE(file.nothing_drawn);
    CHECK(file.path == "h2d.svg");
    CHECK(file.svg.find("<svg ") != std::string::npos);
    Plot marked;
    marked.markers.push_back({8, 1, MarkerShape::ring, 0, "", ""});
    CHECK(has_points(marked));
}
