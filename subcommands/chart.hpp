// Horizontal bar charts for the terminal: Unicode block elements (eighths of
// a cell) on a UTF-8 terminal, plain ASCII otherwise. Pure: returns lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

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

// Columns a UTF-8 string takes on a terminal, counting one per code point
// (enough for the box and block characters used here).
std::size_t display_width(const std::string& utf8);

}  // namespace gpumem::cli
