// A report's human output as terminals 80 and 100 columns wide show it: no
// line wider (issue 45). For the suites that render reports from fixtures,
// the GPU commands' among them, which cannot run without a GPU. Include
// after doctest.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>

#include "cli/output.hpp"
#include "cli/width.hpp"

// Renders `report` in the table format at 80 and 100 columns; CHECKs every
// line of each within its width. `output` gives the units and header.
inline void check_widths(const gpumem::cli::Report& report, gpumem::cli::OutputOptions output = {}) {
    output.format = gpumem::cli::Format::table;
    for (const std::size_t columns : {std::size_t{80}, std::size_t{100}}) {
        CAPTURE(columns);
        output.columns = columns;
        const std::string text = gpumem::cli::render(report, output);
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);) {
            CAPTURE(line);
            CHECK(gpumem::cli::display_width(line) <= columns);
        }
    }
}
