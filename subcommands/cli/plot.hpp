// Plots as one self-contained SVG file (--plot FILE.svg): a Plot says what
// is drawn in the data's own terms (series of points, markers, reference
// lines such as a cap or a device's peak, two axes with their units);
// render_svg lays it out (scales, nice ticks, log axes, a legend) and writes
// the document: no script, no external font or link, an opaque background
// so that it reads the same in light and dark viewers. Pure: no I/O; the
// axis layout is exposed for the CPU tests.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cli/output.hpp"

namespace gpumem::cli {

enum class AxisScale { linear, log2 };
// What an axis's values are, and so how its ticks read: plain numbers
// (1.5, 200k), bytes (linear: in one binary unit named in the title; log2:
// each tick its own size, "4 KiB"), or a batch size (whole numbers).
enum class AxisValues { number, bytes, whole };

struct PlotAxis {
    std::string title;  // with its unit, except for bytes, whose unit the layout adds: "reserved" -> "reserved (GiB)"
    AxisScale scale = AxisScale::linear;
    AxisValues values = AxisValues::number;
    bool from_zero = true;  // linear: the range includes 0
};

struct PlotTick {
    double value = 0;
    std::string label;
};

// An axis laid out over the data's range [lo, hi]: the range drawn (the
// ticks' first and last, so the data lies within), the ticks, and the
// title with its unit.
struct AxisLayout {
    double lo = 0, hi = 1;
    std::vector<PlotTick> ticks;
    std::string title;
};
AxisLayout layout_axis(const PlotAxis& axis, double lo, double hi, std::size_t target_ticks = 6);

// Tick values 1, 2 or 5 x 10^k apart covering [lo, hi] (lo < hi), about
// `target` of them.
std::vector<double> nice_ticks(double lo, double hi, std::size_t target);
// Powers of two covering [lo, hi] (0 < lo <= hi), every 1st, 2nd, 4th...
// exponent so that at most `most` are kept.
std::vector<double> log2_ticks(double lo, double hi, std::size_t most);
// 1200000 -> "1.2M", 25000 -> "25k", 0.5 -> "0.5": a tick's short label,
// with the decimals that ticks `step` apart need.
std::string short_number(double value, double step);

// A point's mark.
enum class MarkerShape { dot, ring, cross, diamond };

struct PlotSeries {
    std::string label;
    std::vector<double> x, y;
    // Optional, as long as y: a band from y_low to y drawn faint under the
    // line (a bucket's minimum and maximum).
    std::vector<double> y_low;
    bool dashed = false;
    bool points = false;  // a mark at each point instead of a line
    int colour = -1;      // palette index; -1: the series' own index
};

struct PlotMarker {
    double x = 0, y = 0;
    MarkerShape shape = MarkerShape::dot;
    int colour = 0;          // palette index
    std::string legend;      // markers of one legend text share a legend entry
    std::string label;       // written beside the mark ("" for none)
};

// A reference line across the plot: horizontal at a y value (a cap, a
// peak) or vertical at an x value (an answer).
struct PlotRule {
    bool vertical = false;
    double value = 0;
    std::string label;  // beside the line and in the legend
    int colour = -2;    // palette index; -2: grey
};

struct Plot {
    std::string title;     // what was run and on which GPU
    std::string subtitle;  // a second line: the input, the settings
    PlotAxis x, y;
    std::vector<PlotSeries> series;
    std::vector<PlotMarker> markers;
    std::vector<PlotRule> rules;
    std::vector<std::string> notes;  // lines under the legend
    double width = 880;
    double plot_height = 380;  // of the data area; the legend and notes add to the document's
};

// The palette: eight colours distinct for colour-blind readers too, on the
// plot's white background.
const char* plot_colour(int index);

// The SVG document. A plot with no data is still a document: its axes and
// a line saying that nothing was measured.
std::string render_svg(const Plot& plot);

// Whether the plot draws anything measured or modelled: a point of a
// series or a marker (reference lines alone are not a picture of a run).
bool has_points(const Plot& plot);
// --plot's file for the runner: the picture, or, with nothing to draw,
// none to write (the file keeps what it held).
Report::PlotFile plot_file(const std::string& path, const Plot& plot);

}  // namespace gpumem::cli
