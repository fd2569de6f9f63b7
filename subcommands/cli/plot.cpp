#include "cli/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "base/sizes.hpp"
#include "cli/svg.hpp"
#include "cli/width.hpp"

namespace gpumem::cli {
namespace {

// Okabe and Ito's colour-blind safe palette, its yellow (unreadable on
// white) left out, and two darker tones.
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B"};
constexpr const char* kGrey = "#555555";
constexpr const char* kBackground = "#ffffff";
constexpr const char* kInk = "#222222";
constexpr const char* kGrid = "#e4e4e4";
constexpr const char* kFont = "sans-serif";

// Layout, in pixels.
constexpr double kFontSize = 12, kTitleSize = 15;
constexpr double kTop = 58, kRight = 28, kBottomAxis = 52, kLegendRow = 20, kNoteRow = 16;

const std::uint64_t kKiB = 1024;

struct ByteUnit {
    double divisor;
    const char* name;
};

ByteUnit byte_unit_for(double largest) {
    constexpr double kib = 1024.0, mib = kib * 1024, gib = mib * 1024, tib = gib * 1024;
    if (largest >= tib) return {tib, "TiB"};
    if (largest >= gib) return {gib, "GiB"};
    if (largest >= mib) return {mib, "MiB"};
    if (largest >= kib) return {kib, "KiB"};
    return {1, "bytes"};
}

int decimals_for(double step) {
    if (!(step > 0)) return 0;
    return std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
}

// A map from data values to pixels along one axis.
struct Scale {
    double lo, hi, from, to;
    bool log;
    double operator()(double v) const {
        const double a = log ? std::log2(lo) : lo, b = log ? std::log2(hi) : hi;
        const double t = log ? std::log2(v) : v;
        return b == a ? from : from + (t - a) / (b - a) * (to - from);
    }
};

double text_width(const std::string& s, double size = kFontSize) {
    return static_cast<double>(display_width(s)) * size * 0.62;
}

struct Range {
    double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
    void add(double v, bool log) {
        if (!std::isfinite(v) || (log && !(v > 0))) return;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    bool empty() const { return !(lo <= hi); }
};

void draw_marker(SvgWriter& svg, MarkerShape shape, double x, double y, const char* colour, double r = 4.5) {
    switch (shape) {
        case MarkerShape::dot:
            svg.empty("circle", {{"cx", svg_number(x)}, {"cy", svg_number(y)}, {"r", svg_number(r)}, {"fill", colour},
                                 {"stroke", kBackground}, {"stroke-width", "1"}});
            break;
        case MarkerShape::ring:
            svg.empty("circle", {{"cx", svg_number(x)}, {"cy", svg_number(y)}, {"r", svg_number(r)}, {"fill", kBackground},
                                 {"stroke", colour}, {"stroke-width", "2"}});
            break;
        case MarkerShape::cross:
            svg.empty("path", {{"d", "M" + svg_number(x - r) + " " + svg_number(y - r) + "L" + svg_number(x + r) + " " + svg_number(y + r) +
                                         "M" + svg_number(x - r) + " " + svg_number(y + r) + "L" + svg_number(x + r) + " " + svg_number(y - r)},
                               {"stroke", colour}, {"stroke-width", "2.5"}, {"fill", "none"}});
            break;
        case MarkerShape::diamond:
            svg.empty("path", {{"d", "M" + svg_number(x) + " " + svg_number(y - r - 1) + "L" + svg_number(x + r + 1) + " " + svg_number(y) + "L" +
                                         svg_number(x) + " " + svg_number(y + r + 1) + "L" + svg_number(x - r - 1) + " " + svg_number(y) + "Z"},
                               {"fill", colour}, {"stroke", kBackground}, {"stroke-width", "1"}});
            break;
    }
}

const char* rule_colour(int colour) { return colour == -2 ? kGrey : plot_colour(colour); }

// One legend entry: what its swatch shows and its text.
struct LegendEntry {
    enum Kind { line, dashed_line, rule, marker } kind = line;
    MarkerShape shape = MarkerShape::dot;
    const char* colour = kInk;
    std::string text;
};

std::vector<LegendEntry> legend_entries(const Plot& plot) {
    std::vector<LegendEntry> entries;
    for (std::size_t i = 0; i < plot.series.size(); ++i) {
        const PlotSeries& s = plot.series[i];
        if (s.label.empty()) continue;
        const char* colour = plot_colour(s.colour >= 0 ? s.colour : static_cast<int>(i));
        if (s.points) entries.push_back({LegendEntry::marker, MarkerShape::dot, colour, s.label});
        else entries.push_back({s.dashed ? LegendEntry::dashed_line : LegendEntry::line, MarkerShape::dot, colour, s.label});
    }
    for (const PlotMarker& m : plot.markers) {
        if (m.legend.empty()) continue;
        const bool seen = std::any_of(entries.begin(), entries.end(), [&](const LegendEntry& e) {
            return e.kind == LegendEntry::marker && e.text == m.legend && e.shape == m.shape;
        });
        if (!seen) entries.push_back({LegendEntry::marker, m.shape, plot_colour(m.colour), m.legend});
    }
    for (const PlotRule& r : plot.rules)
        if (!r.label.empty()) entries.push_back({LegendEntry::rule, MarkerShape::dot, rule_colour(r.colour), r.label});
    return entries;
}

constexpr double kSwatch = 26, kEntryGap = 18;

// Rows of entries within `width`.
std::vector<std::vector<const LegendEntry*>> legend_rows(const std::vector<LegendEntry>& entries, double width) {
    std::vector<std::vector<const LegendEntry*>> rows;
    double used = width;
    for (const LegendEntry& e : entries) {
        const double w = kSwatch + 6 + text_width(e.text) + kEntryGap;
        if (rows.empty() || used + w > width) {
            rows.emplace_back();
            used = 0;
        }
        rows.back().push_back(&e);
        used += w;
    }
    return rows;
}

std::string polyline_points(const std::vector<double>& xs, const std::vector<double>& ys, const Scale& sx, const Scale& sy) {
    std::string points;
    for (std::size_t i = 0; i < xs.size() && i < ys.size(); ++i) {
        if (!std::isfinite(xs[i]) || !std::isfinite(ys[i]) || (sx.log && !(xs[i] > 0)) || (sy.log && !(ys[i] > 0))) continue;
        if (!points.empty()) points += ' ';
        points += svg_number(sx(xs[i])) + "," + svg_number(sy(ys[i]));
    }
    return points;
}

}  // namespace

const char* plot_colour(int index) {
    const int n = static_cast<int>(sizeof kPalette / sizeof kPalette[0]);
    return kPalette[((index % n) + n) % n];
}

std::string short_number(double value, double step) {
    const double a = std::fabs(value);
    const double divisor = a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e4 ? 1e3 : 1;
    const char* suffix = a >= 1e9 ? "G" : a >= 1e6 ? "M" : a >= 1e4 ? "k" : "";
    return format_decimal(value / divisor, decimals_for(step / divisor)) + suffix;
}

std::vector<double> nice_ticks(double lo, double hi, std::size_t target) {
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
    target = std::max<std::size_t>(target, 2);
    const double raw = (hi - lo) / static_cast<double>(target);
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / magnitude;
    const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
    const double first = std::floor(lo / step + 1e-9) * step, last = std::ceil(hi / step - 1e-9) * step;
    std::vector<double> ticks;
    for (std::size_t k = 0;; ++k) {
        double v = first + static_cast<double>(k) * step;
        if (std::fabs(v) < step * 1e-9) v = 0;  // no "-0" from rounding
        ticks.push_back(v);
        if (v >= last - step * 1e-9 || ticks.size() > 4 * target + 4) break;
    }
    return ticks;
}

std::vector<double> log2_ticks(double lo, double hi, std::size_t most) {
    if (!(lo > 0) || !(hi >= lo)) return {};
    const int a = static_cast<int>(std::floor(std::log2(lo) + 1e-9)), b = static_cast<int>(std::ceil(std::log2(hi) - 1e-9));
    most = std::max<std::size_t>(most, 2);
    int every = 1;
    while (static_cast<std::size_t>((b - a) / every) + 1 > most) every *= 2;
    std::vector<double> ticks;
    // Aligned to multiples of `every` (4 KiB, 64 KiB, 1 MiB rather than 8 KiB, 128 KiB...).
    int start = a;
    while (start % every != 0) --start;
    for (int e = start; e < b + every; e += every) ticks.push_back(std::ldexp(1.0, e));
    return ticks;
}

AxisLayout layout_axis(const PlotAxis& axis, double lo, double hi, std::size_t target_ticks) {
    AxisLayout layout;
    layout.title = axis.title;
    if (axis.scale == AxisScale::log2) {
        if (!(lo > 0) || !(hi >= lo)) lo = 1, hi = 2;
        std::vector<double> ticks = log2_ticks(lo, hi, target_ticks + 4);
        if (ticks.size() < 2) ticks = {lo, lo * 2};
        layout.lo = ticks.front();
        layout.hi = ticks.back();
        for (double t : ticks)
            layout.ticks.push_back({t, axis.values == AxisValues::bytes && t >= 1 && t < 1.8e19
                                           ? format_bytes(static_cast<std::uint64_t>(t))
                                           : short_number(t, t)});
        layout.title += axis.values == AxisValues::bytes ? " (bytes, log scale)" : " (log scale)";
        return layout;
    }
    if (axis.from_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
    if (!(hi > lo)) hi = lo + (axis.values == AxisValues::bytes ? static_cast<double>(kKiB) : 1.0);
    double divisor = 1;
    if (axis.values == AxisValues::bytes) {
        const ByteUnit unit = byte_unit_for(std::max(std::fabs(lo), std::fabs(hi)));
        divisor = unit.divisor;
        layout.title += std::string(" (") + unit.name + ")";
    }
    std::vector<double> ticks = nice_ticks(lo / divisor, hi / divisor, target_ticks);
    if (axis.values == AxisValues::whole) {
        // Whole numbers only: a step of at least 1.
        const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
        if (step < 1) {
            ticks.clear();
            for (long v = std::lround(std::floor(lo)); v <= std::lround(std::ceil(hi)); ++v) ticks.push_back(static_cast<double>(v));
        }
    }
    const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
    for (double t : ticks) layout.ticks.push_back({t * divisor, short_number(t, step)});
    layout.lo = ticks.front() * divisor;
    layout.hi = ticks.back() * divisor;
    if (!(layout.hi > layout.lo)) layout.hi = layout.lo + divisor;
    return layout;
}

namespace {

// Where the data is drawn: its scales and the plot area's pixels.
struct Frame {
    Scale sx, sy;
    double left, width, height;  // of the plot area, whose top is kTop
};

void draw_axes(SvgWriter& svg, const Frame& f, const AxisLayout& xa, const AxisLayout& ya) {
    const double bottom = kTop + f.height, right = f.left + f.width;
    svg.open("g", {{"id", "x-axis"}});
    for (const PlotTick& t : xa.ticks) {
        const double x = f.sx(t.value);
        svg.empty("line", {{"x1", svg_number(x)}, {"x2", svg_number(x)}, {"y1", svg_number(kTop)}, {"y2", svg_number(bottom)}, {"stroke", kGrid}});
        svg.text("text", {{"class", "tick"}, {"x", svg_number(x)}, {"y", svg_number(bottom + 16)}, {"text-anchor", "middle"}}, t.label);
    }
    svg.empty("line", {{"x1", svg_number(f.left)}, {"x2", svg_number(right)}, {"y1", svg_number(bottom)}, {"y2", svg_number(bottom)}, {"stroke", kInk}});
    svg.text("text", {{"class", "axis-title"}, {"x", svg_number(f.left + f.width / 2)}, {"y", svg_number(bottom + 38)}, {"text-anchor", "middle"}},
             xa.title);
    svg.close();
    svg.open("g", {{"id", "y-axis"}});
    for (const PlotTick& t : ya.ticks) {
        const double y = f.sy(t.value);
        svg.empty("line", {{"x1", svg_number(f.left)}, {"x2", svg_number(right)}, {"y1", svg_number(y)}, {"y2", svg_number(y)}, {"stroke", kGrid}});
        svg.text("text", {{"class", "tick"}, {"x", svg_number(f.left - 6)}, {"y", svg_number(y + 4)}, {"text-anchor", "end"}}, t.label);
    }
    svg.empty("line", {{"x1", svg_number(f.left)}, {"x2", svg_number(f.left)}, {"y1", svg_number(kTop)}, {"y2", svg_number(bottom)}, {"stroke", kInk}});
    svg.text("text", {{"class", "axis-title"}, {"x", "0"}, {"y", "0"}, {"text-anchor", "middle"},
                      {"transform", "translate(16 " + svg_number(kTop + f.height / 2) + ") rotate(-90)"}},
             ya.title);
    svg.close();
}

void draw_series(SvgWriter& svg, const Frame& f, const Plot& plot) {
    svg.open("g", {{"id", "plot-area"}, {"clip-path", "url(#plot-clip)"}});
    for (std::size_t i = 0; i < plot.series.size(); ++i) {
        const PlotSeries& s = plot.series[i];
        const char* colour = plot_colour(s.colour >= 0 ? s.colour : static_cast<int>(i));
        svg.open("g", {{"class", "series"}});
        if (s.y_low.size() == s.y.size() && !s.y_low.empty() && !s.points) {
            // The band: along the maxima, back along the minima.
            std::string points = polyline_points(s.x, s.y, f.sx, f.sy);
            const std::vector<double> rx(s.x.rbegin(), s.x.rend()), rlow(s.y_low.rbegin(), s.y_low.rend());
            const std::string bottom = polyline_points(rx, rlow, f.sx, f.sy);
            if (!points.empty() && !bottom.empty()) {
                points += ' ';
                points += bottom;
                svg.empty("polygon", {{"points", points}, {"fill", colour}, {"fill-opacity", "0.15"}, {"stroke", "none"}});
            }
        }
        if (s.points) {
            for (std::size_t k = 0; k < s.x.size() && k < s.y.size(); ++k)
                if (std::isfinite(s.x[k]) && std::isfinite(s.y[k])) draw_marker(svg, MarkerShape::dot, f.sx(s.x[k]), f.sy(s.y[k]), colour, 3.5);
        } else if (const std::string points = polyline_points(s.x, s.y, f.sx, f.sy); !points.empty()) {
            SvgAttributes a = {{"points", points}, {"fill", "none"}, {"stroke", colour}, {"stroke-width", "2"}, {"stroke-linejoin", "round"}};
            if (s.dashed) a.emplace_back("stroke-dasharray", "7 4");
            svg.empty("polyline", a);
        }
        svg.close();
    }
    svg.close();
}

// The rules' lines, the markers over them, then the rules' labels over
// both, each on a halo of the background: a row of crosses near a cap
// must not hide what the cap's line says.
void draw_rules_and_markers(SvgWriter& svg, const Frame& f, const Plot& plot) {
    const double bottom = kTop + f.height, right = f.left + f.width;
    struct Label {
        double x, y;
        const char* colour;
        const char* anchor;
        const std::string* text;
    };
    std::vector<Label> labels;
    svg.open("g", {{"id", "rules"}});
    int vertical_labels = 0;  // each vertical rule's label a line lower: near answers' labels would overlap
    for (const PlotRule& r : plot.rules) {
        const char* colour = rule_colour(r.colour);
        if (r.vertical) {
            const double x = f.sx(r.value);
            svg.empty("line", {{"x1", svg_number(x)}, {"x2", svg_number(x)}, {"y1", svg_number(kTop)}, {"y2", svg_number(bottom)},
                               {"stroke", colour}, {"stroke-width", "1.5"}, {"stroke-dasharray", "5 4"}});
            const bool right_half = x > f.left + f.width * 0.7;
            labels.push_back({right_half ? x - 4 : x + 4, kTop + 12 + 14 * vertical_labels++, colour, right_half ? "end" : "start", &r.label});
        } else {
            const double y = f.sy(r.value);
            svg.empty("line", {{"x1", svg_number(f.left)}, {"x2", svg_number(right)}, {"y1", svg_number(y)}, {"y2", svg_number(y)},
                               {"stroke", colour}, {"stroke-width", "1.5"}, {"stroke-dasharray", "5 4"}});
            labels.push_back({right - 4, y - 4, colour, "end", &r.label});
        }
    }
    svg.close();
    svg.open("g", {{"id", "markers"}});
    for (const PlotMarker& m : plot.markers) {
        if (!std::isfinite(m.x) || !std::isfinite(m.y) || (f.sx.log && !(m.x > 0)) || (f.sy.log && !(m.y > 0))) continue;
        const double x = f.sx(m.x), y = f.sy(m.y);
        draw_marker(svg, m.shape, x, y, plot_colour(m.colour));
        if (!m.label.empty()) svg.text("text", {{"x", svg_number(x + 8)}, {"y", svg_number(y - 8)}, {"fill", plot_colour(m.colour)}}, m.label);
    }
    svg.close();
    svg.open("g", {{"id", "rule-labels"}, {"stroke", kBackground}, {"stroke-width", "3"}, {"paint-order", "stroke"}});
    for (const Label& l : labels)
        svg.text("text", {{"x", svg_number(l.x)}, {"y", svg_number(l.y)}, {"fill", l.colour}, {"text-anchor", l.anchor}}, *l.text);
    svg.close();
}

void draw_legend(SvgWriter& svg, const std::vector<std::vector<const LegendEntry*>>& rows, double top) {
    svg.open("g", {{"id", "legend"}});
    for (std::size_t row = 0; row < rows.size(); ++row) {
        double x = 16;
        const double y = top + static_cast<double>(row) * kLegendRow + 10;
        for (const LegendEntry* e : rows[row]) {
            svg.open("g", {{"class", "legend-entry"}});
            if (e->kind == LegendEntry::marker) {
                draw_marker(svg, e->shape, x + kSwatch / 2, y, e->colour);
            } else {
                SvgAttributes a = {{"x1", svg_number(x)}, {"x2", svg_number(x + kSwatch)}, {"y1", svg_number(y)}, {"y2", svg_number(y)},
                                   {"stroke", e->colour}, {"stroke-width", e->kind == LegendEntry::rule ? "1.5" : "2.5"}};
                if (e->kind != LegendEntry::line) a.emplace_back("stroke-dasharray", e->kind == LegendEntry::rule ? "5 4" : "7 4");
                svg.empty("line", a);
            }
            svg.text("text", {{"x", svg_number(x + kSwatch + 6)}, {"y", svg_number(y + 4)}}, e->text);
            svg.close();
            x += kSwatch + 6 + text_width(e->text) + kEntryGap;
        }
    }
    svg.close();
}

// The data's ranges along x and y (rules included), and whether there is any.
bool data_ranges(const Plot& plot, Range& xr, Range& yr) {
    const bool xlog = plot.x.scale == AxisScale::log2, ylog = plot.y.scale == AxisScale::log2;
    for (const PlotSeries& s : plot.series) {
        for (double v : s.x) xr.add(v, xlog);
        for (double v : s.y) yr.add(v, ylog);
        for (double v : s.y_low) yr.add(v, ylog);
    }
    for (const PlotMarker& m : plot.markers) {
        xr.add(m.x, xlog);
        yr.add(m.y, ylog);
    }
    for (const PlotRule& r : plot.rules) (r.vertical ? xr : yr).add(r.value, r.vertical ? xlog : ylog);
    const bool any = !xr.empty() && !yr.empty();
    if (xr.empty()) xr.lo = xlog ? 1 : 0, xr.hi = xlog ? 2 : 1;
    if (yr.empty()) yr.lo = ylog ? 1 : 0, yr.hi = ylog ? 2 : 1;
    // A little room above the highest value, so that a line at the top stays visible.
    if (!ylog && yr.hi > 0) yr.hi *= 1.04;
    return any;
}

}  // namespace

std::string render_svg(const Plot& plot) {
    Range xr, yr;
    const bool has_data = data_ranges(plot, xr, yr);
    const AxisLayout xa = layout_axis(plot.x, xr.lo, xr.hi, 8), ya = layout_axis(plot.y, yr.lo, yr.hi, 6);
    double widest_y_label = 0;
    for (const PlotTick& t : ya.ticks) widest_y_label = std::max(widest_y_label, text_width(t.label));
    const double left = 28 + widest_y_label + 12, width = plot.width;
    const Frame frame{{xa.lo, xa.hi, left, width - kRight, plot.x.scale == AxisScale::log2},
                      {ya.lo, ya.hi, kTop + plot.plot_height, kTop, plot.y.scale == AxisScale::log2},
                      left, width - left - kRight, plot.plot_height};
    const std::vector<LegendEntry> entries = legend_entries(plot);
    const auto rows = legend_rows(entries, width - 2 * 16);
    const double legend_top = kTop + frame.height + kBottomAxis;
    const double notes_top = legend_top + static_cast<double>(rows.size()) * kLegendRow + 6;
    const double height = notes_top + static_cast<double>(plot.notes.size()) * kNoteRow + 10;

    SvgWriter svg(width, height);
    svg.text("title", {}, plot.title);
    svg.empty("rect", {{"id", "background"}, {"x", "0"}, {"y", "0"}, {"width", svg_number(width)}, {"height", svg_number(height)}, {"fill", kBackground}});
    svg.open("g", {{"font-family", kFont}, {"font-size", svg_number(kFontSize)}, {"fill", kInk}});
    // A long title (a file's name, the GPU's) gets a smaller font rather
    // than run past the picture's edge.
    const auto fitting = [&](const std::string& text, double size) {
        const double room = width - 2 * 16, wide = text_width(text, size);
        return wide > room ? size * room / wide : size;
    };
    svg.text("text",
             {{"id", "plot-title"}, {"x", "16"}, {"y", "24"}, {"font-size", svg_number(fitting(plot.title, kTitleSize))}, {"font-weight", "bold"}},
             plot.title);
    if (!plot.subtitle.empty())
        svg.text("text", {{"id", "plot-subtitle"}, {"x", "16"}, {"y", "43"}, {"font-size", svg_number(fitting(plot.subtitle, kFontSize))}},
                 plot.subtitle);
    svg.open("defs");
    svg.open("clipPath", {{"id", "plot-clip"}});
    svg.empty("rect", {{"x", svg_number(left)}, {"y", svg_number(kTop - 4)}, {"width", svg_number(frame.width)}, {"height", svg_number(frame.height + 8)}});
    svg.close();
    svg.close();
    draw_axes(svg, frame, xa, ya);
    draw_series(svg, frame, plot);
    draw_rules_and_markers(svg, frame, plot);
    if (!has_data)
        svg.text("text", {{"id", "no-data"}, {"x", svg_number(left + frame.width / 2)}, {"y", svg_number(kTop + frame.height / 2)}, {"text-anchor", "middle"}},
                 "nothing was measured");
    draw_legend(svg, rows, legend_top);
    if (!plot.notes.empty()) {
        svg.open("g", {{"id", "notes"}, {"fill", kGrey}});
        for (std::size_t i = 0; i < plot.notes.size(); ++i)
            svg.text("text", {{"x", "16"}, {"y", svg_number(notes_top + static_cast<double>(i) * kNoteRow + 10)}}, plot.notes[i]);
        svg.close();
    }
    svg.close();
    return svg.finish();
}

bool has_points(const Plot& plot) {
    const auto finite = [](double x, double y) { return std::isfinite(x) && std::isfinite(y); };
    for (const PlotSeries& s : plot.series)
        for (std::size_t k = 0; k < s.x.size() && k < s.y.size(); ++k)
            if (finite(s.x[k], s.y[k])) return true;
    return std::any_of(plot.markers.begin(), plot.markers.end(), [&](const PlotMarker& m) { return finite(m.x, m.y); });
}

Report::PlotFile plot_file(const std::string& path, const Plot& plot) {
    if (!has_points(plot)) return {"--plot", path, "", true};
    return {"--plot", path, render_svg(plot), false};
}

}  // namespace gpumem::cli
