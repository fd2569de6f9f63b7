// Charts for the terminal, Unicode block elements on a UTF-8 terminal and
// plain ASCII otherwise: horizontal bars (copy sweeps) and level rows, one
// line of column heights per series over time (reuse-sim). Pure: returns lines.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "cli/width.hpp"

namespace gpumem::cli {

struct ChartBar {
    std::string label;       // left of the bar, right-aligned (e.g. a size)
    double value = 0;        // bar length is value / largest value; <= 0 or NaN: no bar
    std::string value_text;  // right of the bar
};

struct ChartStyle {
    bool unicode = false;
    int width = 80;  // columns a line may use
};

// The title line (when not empty) and one line per bar; no line is wider
// than style.width columns unless the labels alone are.
std::vector<std::string> render_bar_chart(const std::string& title, const std::vector<ChartBar>& bars, const ChartStyle& style);

// One row of a level chart: a label and its values over time.
struct LevelSeries {
    std::string label;
    std::vector<double> values;
};

struct LevelChartStyle {
    bool unicode = false;
    std::size_t width = 60;   // columns of levels; values are folded into them by their maximum
    bool shared_scale = false;  // every row on the largest peak, instead of each on its own
    // The widest a line gets: fewer columns of levels (10 at least) where
    // the label, `width` levels and the peak would not fit; 0: no limit.
    std::size_t columns = 0;
};

// One line per series: the label, `width` columns of levels, and the row's
// peak as `peak_text` writes it.
std::vector<std::string> render_level_chart(const std::vector<LevelSeries>& series, const LevelChartStyle& style,
                                            const std::function<std::string(double peak)>& peak_text);

}  // namespace gpumem::cli
