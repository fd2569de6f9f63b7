#include "cli/chart.hpp"

#include <algorithm>
#include <cmath>

#include "cli/width.hpp"

namespace gpumem::cli {
namespace {

// U+2588 FULL BLOCK and U+258F..U+2589: one to seven eighths of a cell.
const char* const kFullBlock = "\u2588";
const char* const kEighths[8] = {"", "\u258F", "\u258E", "\u258D", "\u258C", "\u258B", "\u258A", "\u2589"};
constexpr int kMinBarWidth = 10;

std::string pad_left(const std::string& s, std::size_t width) {
    const std::size_t w = display_width(s);
    return w >= width ? s : std::string(width - w, ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
    const std::size_t w = display_width(s);
    return w >= width ? s : s + std::string(width - w, ' ');
}

// The bar and the number of columns it takes.
std::pair<std::string, int> bar_cells(double fraction, int width, bool unicode) {
    if (!(fraction > 0)) return {"", 0};
    fraction = std::min(fraction, 1.0);
    std::string bar;
    if (!unicode) {
        const int n = std::max(1, static_cast<int>(std::lround(fraction * width)));
        return {std::string(static_cast<std::size_t>(n), '#'), n};
    }
    const long eighths = std::max(1L, std::lround(fraction * width * 8));
    const int full = static_cast<int>(eighths / 8);
    const int rest = static_cast<int>(eighths % 8);
    for (int i = 0; i < full; ++i) bar += kFullBlock;
    bar += kEighths[rest];
    return {bar, full + (rest ? 1 : 0)};
}

}  // namespace

std::vector<std::string> render_bar_chart(const std::string& title, const std::vector<ChartBar>& bars, const ChartStyle& style) {
    std::vector<std::string> lines;
    if (!title.empty()) lines.push_back(title);
    if (bars.empty()) return lines;
    std::size_t label_width = 0, value_width = 0;
    double largest = 0;
    for (const ChartBar& b : bars) {
        label_width = std::max(label_width, display_width(b.label));
        value_width = std::max(value_width, display_width(b.value_text));
        if (std::isfinite(b.value)) largest = std::max(largest, b.value);
    }
    // label, " |", bar, " ", value
    const int fixed = static_cast<int>(label_width + 2 + 1 + value_width);
    const int bar_width = std::max(kMinBarWidth, style.width - fixed);
    const std::string axis = style.unicode ? " \u2502" : " |";
    for (const ChartBar& b : bars) {
        const double fraction = largest > 0 && std::isfinite(b.value) ? b.value / largest : 0.0;
        const auto [bar, cells] = bar_cells(fraction, bar_width, style.unicode);
        std::string line = pad_left(b.label, label_width);
        line += axis;
        line += bar;
        line += std::string(static_cast<std::size_t>(bar_width - cells), ' ');
        line += ' ';
        line += pad_left(b.value_text, value_width);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        lines.push_back(std::move(line));
    }
    return lines;
}

std::vector<std::string> render_level_chart(const std::vector<LevelSeries>& series, const LevelChartStyle& style,
                                            const std::function<std::string(double peak)>& peak_text) {
    static const char* const kUnicodeLevels[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char kAsciiLevels[] = " .:-=+*#%@";
    const std::size_t levels = style.unicode ? 9 : 10;
    std::size_t label_width = 4;
    for (const LevelSeries& s : series) label_width = std::max(label_width, display_width(s.label));
    // Within style.columns: the levels narrowed by what the label and the
    // widest peak take (peaks are at most the largest value's width).
    std::size_t level_width = style.width;
    if (style.columns != 0) {
        std::size_t peak_width = 0;
        for (const LevelSeries& s : series)
            if (!s.values.empty()) peak_width = std::max(peak_width, display_width(peak_text(*std::max_element(s.values.begin(), s.values.end()))));
        const std::size_t taken = label_width + 2 + 2 + 5 + peak_width;  // "  " levels "  peak " text
        constexpr std::size_t kFewestLevels = 10;
        level_width = std::clamp(style.columns - std::min(style.columns, taken), kFewestLevels, std::max(style.width, kFewestLevels));
    }
    // Each series folded into at most `level_width` columns, by the maximum.
    std::vector<std::vector<double>> folded;
    double largest = 0;
    for (const LevelSeries& s : series) {
        const std::size_t points = s.values.size();
        const std::size_t width = std::min(level_width, points);
        std::vector<double> columns(width, 0.0);
        for (std::size_t c = 0; c < width; ++c)
            for (std::size_t p = c * points / width; p < (c + 1) * points / width; ++p) columns[c] = std::max(columns[c], s.values[p]);
        for (double v : columns) largest = std::max(largest, v);
        folded.push_back(std::move(columns));
    }
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < series.size(); ++i) {
        const std::vector<double>& columns = folded[i];
        const double peak = columns.empty() ? 0.0 : *std::max_element(columns.begin(), columns.end());
        const double top = style.shared_scale ? largest : peak;
        std::string line = pad_right(series[i].label, label_width) + "  ";
        for (double v : columns) {
            std::size_t level = top > 0 ? static_cast<std::size_t>(std::ceil(v * static_cast<double>(levels - 1) / top)) : 0;
            level = std::min(level, levels - 1);
            if (style.unicode) line += kUnicodeLevels[level];
            else line += kAsciiLevels[level];
        }
        lines.push_back(line + "  peak " + peak_text(peak));
    }
    return lines;
}

}  // namespace gpumem::cli
