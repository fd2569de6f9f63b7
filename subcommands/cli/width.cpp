#include "cli/width.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <vector>

#include "base/text.hpp"

namespace gpumem::cli {

namespace {

// The code point that starts at utf8[at], and its length in bytes (a
// malformed byte is one column of its own, as terminals show a
// replacement character).
char32_t code_point_at(std::string_view utf8, std::size_t at, std::size_t& length) noexcept {
    const auto byte = [&utf8](std::size_t i) { return static_cast<unsigned char>(utf8[i]); };
    const unsigned char lead = byte(at);
    length = lead < 0x80 ? 1 : (lead & 0xE0U) == 0xC0U ? 2 : (lead & 0xF0U) == 0xE0U ? 3 : (lead & 0xF8U) == 0xF0U ? 4 : 1;
    if (at + length > utf8.size()) length = 1;
    if (length == 1) return lead;
    char32_t c = lead & (0x7FU >> length);
    for (std::size_t i = 1; i < length; ++i) {
        if ((byte(at + i) & 0xC0U) != 0x80U) {
            length = 1;
            return lead;
        }
        c = (c << 6U) | (byte(at + i) & 0x3FU);
    }
    return c;
}

// Columns a terminal gives one code point: 2 for East Asian wide and
// fullwidth characters (CJK, Hangul, fullwidth forms, most emoji), 0 for
// combining marks and zero-width ones, else 1 (wcwidth's ranges, in short).
std::size_t code_point_columns(char32_t c) noexcept {
    struct Range {
        char32_t first, last;
    };
    static constexpr Range kZero[] = {{0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A}, {0x064B, 0x065F},
                                      {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F},
                                      {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}};
    static constexpr Range kWide[] = {{0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
                                      {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},
                                      {0xA000, 0xA4CF},   {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
                                      {0xFE10, 0xFE19},   {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},
                                      {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}};
    const auto in = [c](const auto& ranges) {
        return std::any_of(std::begin(ranges), std::end(ranges), [c](const Range& r) { return c >= r.first && c <= r.last; });
    };
    if (in(kZero)) return 0;
    return in(kWide) ? 2 : 1;
}

}  // namespace

std::size_t display_width(std::string_view utf8) noexcept {
    std::size_t n = 0;
    for (std::size_t at = 0, length = 1; at < utf8.size(); at += length) n += code_point_columns(code_point_at(utf8, at, length));
    return n;
}

std::size_t prefix_within(std::string_view utf8, std::size_t columns) noexcept {
    std::size_t used = 0, at = 0;
    for (std::size_t length = 1; at < utf8.size(); at += length) {
        const std::size_t width = code_point_columns(code_point_at(utf8, at, length));
        if (used + width > columns) break;
        used += width;
    }
    return at;
}

std::string fit_columns(std::string_view utf8, std::size_t columns) {
    if (display_width(utf8) <= columns) return std::string(utf8);
    const std::size_t keep = columns > 3 ? columns - 3 : 0;
    return std::string(utf8.substr(0, prefix_within(utf8, keep))) + std::string("...", columns - keep < 3 ? columns - keep : 3);
}

namespace {

// A unit written after a number ("MiB," in "352.38 MiB,"), its punctuation aside.
bool is_unit_word(std::string_view word) {
    while (!word.empty() && std::string_view(",.;:)]").find(word.back()) != std::string_view::npos) word.remove_suffix(1);
    static constexpr std::string_view kUnits[] = {"B",    "KiB",   "MiB",   "GiB",   "TiB",  "kB", "KB", "MB", "GB", "TB",
                                                  "GB/s", "GiB/s", "MB/s",  "MiB/s", "TB/s", "ms", "us", "ns", "s"};
    return std::find(std::begin(kUnits), std::end(kUnits), word) != std::end(kUnits);
}

// The words of a paragraph, a number and its unit one word ("352.38 MiB"):
// a line never ends with a number whose unit starts the next.
std::vector<std::string> words_of(std::string_view paragraph) {
    std::vector<std::string> words;
    for (std::string_view word : split(paragraph, ' ')) {
        if (word.empty()) continue;
        if (!words.empty() && std::isdigit(static_cast<unsigned char>(words.back().back())) && is_unit_word(word))
            words.back().append(" ").append(word);
        else
            words.emplace_back(word);
    }
    return words;
}

}  // namespace

std::string wrap_words(std::string_view text, std::size_t width, std::size_t indent) {
    if (width == 0) return std::string(text);  // no width known (a pipe): lines as they are
    std::string out;
    std::size_t column = 0;
    bool paragraph_start = true;
    for (std::string_view paragraph : split(text, '\n')) {
        if (!paragraph_start) {
            out += '\n';
            out.append(indent, ' ');
            column = indent;
        }
        bool line_empty = true;
        for (const std::string& word : words_of(paragraph)) {
            if (!line_empty && column + 1 + display_width(word) > width) {
                out += '\n';
                out.append(indent, ' ');
                column = indent;
                line_empty = true;
            }
            if (!line_empty) {
                out += ' ';
                ++column;
            }
            out += word;
            column += display_width(word);
            line_empty = false;
        }
        paragraph_start = false;
    }
    return out;
}

namespace {

// One paragraph of wrap_after.
std::string wrapped_paragraph(const std::string& text, std::size_t columns, char after) {
    std::string out, line;
    auto flush = [&] {
        if (line.empty()) return;
        out += (out.empty() ? "" : "\n") + line;
        line.clear();
    };
    for (std::size_t start = 0; start < text.size();) {
        // The next `after` outside brackets: a list such as
        // roundup_power2_divisions:[256:1,512:2,>:8] is one item.
        std::size_t end = start;
        for (int depth = 0; end < text.size() && (text[end] != after || depth > 0); ++end)
            depth += text[end] == '[' ? 1 : text[end] == ']' && depth > 0 ? -1 : 0;
        end = std::min(end + 1, text.size());
        const std::string piece = text.substr(start, end - start);
        if (!line.empty() && display_width(line) + display_width(piece) > columns) flush();
        line += piece;
        start = end;
    }
    flush();
    return out;
}

}  // namespace

std::string indented(const std::string& text, const std::string& indent, std::size_t more) {
    std::string out = indent;
    for (char c : text) {
        out += c;
        if (c == '\n') out += indent + std::string(more, ' ');
    }
    return out;
}

std::size_t widest_line(std::string_view text) {
    std::size_t widest = 0;
    for (std::size_t start = 0; start <= text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        widest = std::max(widest, display_width(text.substr(start, end - start)));
        start = end + 1;
    }
    return widest;
}

std::string wrap_after(const std::string& text, std::size_t columns, char after) {
    std::string out;
    for (std::size_t start = 0; start <= text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        if (start > 0) out += '\n';
        out += wrapped_paragraph(text.substr(start, end - start), columns, after);
        start = end + 1;
    }
    return out;
}

namespace {

// `piece` in lines of at most `width` columns: whole where it fits, else
// cut at the width (a word longer than a line: a path, a check id), as a
// terminal would wrap it, but within the indent.
std::string broken_to(std::string_view piece, std::size_t width) {
    std::string out;
    while (display_width(piece) > width) {
        std::size_t cut = prefix_within(piece, width);
        if (cut == 0) cut = prefix_within(piece, 2);  // a wide character on a 1-column line: one per line
        out += std::string(piece.substr(0, cut)) + '\n';
        piece.remove_prefix(cut);
    }
    return out + std::string(piece);
}

}  // namespace

std::string cut_lines(const std::string& text, std::size_t columns) {
    std::string out;
    for (std::string_view line : split(text, '\n')) out += (out.empty() && line.data() == text.data() ? "" : "\n") + broken_to(line, columns);
    return out;
}

namespace {

// A piece of a wrapped line with no space to break at (a setting, a path)
// within `room`: broken after its commas, a part still too wide cut, its
// lines after the first 2 further in than its own indent.
std::string fit_unbroken(std::string_view piece, std::size_t room) {
    const std::size_t own = std::min(piece.find_first_not_of(' '), piece.size());
    const std::size_t inner = room > own + 2 ? room - own - 2 : 1;
    const std::string parts = wrap_after(std::string(piece.substr(own)), inner, ',');
    std::string lines;
    for (std::string_view part : split(parts, '\n')) lines += (lines.empty() ? "" : "\n") + broken_to(part, inner);
    return indented(lines, std::string(own, ' '), 2);
}

}  // namespace

std::string fit_prose(std::string_view text, std::size_t columns) {
    std::string out;
    for (std::string_view line : split(text, '\n')) {
        if (!out.empty() || line.data() != text.data()) out += '\n';
        if (display_width(line) <= columns) {
            out += line;
            continue;
        }
        // Its indent kept, the lines after its first two further in.
        const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
        const std::string indent(lead, ' ');
        const std::size_t room = columns > lead + 2 ? columns - lead : 2;
        const std::string words = wrap_words(line.substr(lead), room, 2);
        std::string piece_out;
        for (std::string_view piece : split(words, '\n')) {
            if (!piece_out.empty()) piece_out += '\n';
            piece_out += display_width(piece) > room ? fit_unbroken(piece, room) : std::string(piece);
        }
        out += indented(piece_out, indent, 0);
    }
    return out;
}

std::string text_after_prefix(std::string_view prefix, std::string_view text, std::size_t columns) {
    const std::string fitted = fit_prose(std::string(prefix) + std::string(text), columns);
    if (fitted.compare(0, prefix.size(), prefix) == 0) return fitted.substr(prefix.size());
    // The text's first word did not fit after the prefix (a long path): the
    // prefix ends its line, and the text starts on the next (its space became
    // the line break). Cutting the prefix's length off would eat the break
    // and put the next line's indent after the prefix, past the width.
    const std::size_t bare = prefix.find_last_not_of(' ') + 1;
    return fitted.substr(std::min(bare, fitted.size()));
}

}  // namespace gpumem::cli
