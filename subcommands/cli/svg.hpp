// A small SVG writer: elements, attributes and text escaped as XML, numbers
// written short and locale-free. It knows nothing of plots (plot.cpp lays
// them out); it returns text and touches no file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpumem::cli {

// `text` with &, <, >, " and ' escaped, and characters XML 1.0 forbids
// (control characters but tab and newline, invalid UTF-8 bytes) replaced by
// '?': any label, a file name included, yields a well-formed document.
std::string xml_escape(std::string_view text);

// A coordinate or length: at most two decimals, no exponent, no trailing
// zeros ("12.5", "3", "-0.25"); NaN and infinities as 0.
std::string svg_number(double value);

using SvgAttributes = std::vector<std::pair<std::string_view, std::string>>;

class SvgWriter {
public:
    // The root element, `width` x `height` pixels with a viewBox of the same.
    SvgWriter(double width, double height);
    // <tag a="v"...>: children follow until close().
    void open(std::string_view tag, const SvgAttributes& attributes = {});
    void close();
    // <tag a="v".../>
    void empty(std::string_view tag, const SvgAttributes& attributes);
    // <tag a="v"...>text</tag>
    void text(std::string_view tag, const SvgAttributes& attributes, std::string_view content);
    // The document, every element closed.
    std::string finish();

private:
    void start_tag(std::string_view tag, const SvgAttributes& attributes);
    std::string out_;
    std::vector<std::string> open_;
};

}  // namespace gpumem::cli
