#include "cli/svg.hpp"

#include <cmath>
#include <cstdio>

namespace gpumem::cli {
namespace {

// The length of the UTF-8 sequence starting at `s[i]` when it is valid, else 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    std::size_t n = 0;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3;
    else if (c >= 0xF0 && c <= 0xF4) n = 4;
    if (n == 0 || i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
    return n;
}

}  // namespace

std::string xml_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c >= 0x80) {
            const std::size_t n = utf8_length(text, i);
            if (n == 0) {
                out += '?';
                ++i;
            } else {
                out.append(text.substr(i, n));
                i += n;
            }
            continue;
        }
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out += (c < 0x20 && c != '\t' && c != '\n') || c == 0x7F ? '?' : static_cast<char>(c);
        }
        ++i;
    }
    return out;
}

std::string svg_number(double value) {
    if (!std::isfinite(value)) return "0";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
    std::string s = buffer;
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    if (s == "-0") s = "0";
    return s;
}

SvgWriter::SvgWriter(double width, double height) : out_("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n") {
    open("svg", {{"xmlns", "http://www.w3.org/2000/svg"},
                 {"width", svg_number(width)},
                 {"height", svg_number(height)},
                 {"viewBox", "0 0 " + svg_number(width) + " " + svg_number(height)}});
}

void SvgWriter::start_tag(std::string_view tag, const SvgAttributes& attributes) {
    out_ += std::string(open_.size(), ' ');
    out_ += '<';
    out_ += tag;
    for (const auto& [name, value] : attributes) {
        out_ += ' ';
        out_ += name;
        out_ += "=\"";
        out_ += xml_escape(value);
        out_ += '"';
    }
}

void SvgWriter::open(std::string_view tag, const SvgAttributes& attributes) {
    start_tag(tag, attributes);
    out_ += ">\n";
    open_.emplace_back(tag);
}

void SvgWriter::close() {
    if (open_.empty()) return;
    const std::string tag = std::move(open_.back());
    open_.pop_back();
    out_ += std::string(open_.size(), ' ') + "</" + tag + ">\n";
}

void SvgWriter::empty(std::string_view tag, const SvgAttributes& attributes) {
    start_tag(tag, attributes);
    out_ += "/>\n";
}

void SvgWriter::text(std::string_view tag, const SvgAttributes& attributes, std::string_view content) {
    start_tag(tag, attributes);
    out_ += '>';
    out_ += xml_escape(content);
    out_ += "</";
    out_ += tag;
    out_ += ">\n";
}

std::string SvgWriter::finish() {
    while (!open_.empty()) close();
    return std::move(out_);
}

}  // namespace gpumem::cli
