// The one help formatter of every gpumem help page: each fits the terminal
// (at most 100 columns, wrapped at words), an option keeps one line of
// description (the first clause of a long one: the man page has the rest),
// a subcommand's page also lists the global options it takes, in their own
// group (by name only on a page that would pass kHelpLines), and the exit-status table is printed once, on the top-level page.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace gpumem::cli {

// The widest a help page or a list gets, whatever the terminal.
inline constexpr std::size_t kHelpColumns = 100;
// The most lines a command's help page takes: a longer one names the global
// options without their descriptions.
inline constexpr std::size_t kHelpLines = 60;
// The group the global options (-d, --json, --format, --units...) stand in.
inline constexpr const char* kGlobalGroup = "Global options";

// An option's description cut to its first clause when it does not fit
// `room` columns: up to the first "; " or ". " (pure; help shows one line).
std::string short_description(const std::string& description, std::size_t room);

// The end of the help of a positional that must be given though CLI11 may
// not require it (another spelling gives it too: alloc-test hold's TOTAL, or
// --total): the usage line shows it without the brackets of an optional one.
inline constexpr std::string_view kRequiredPositional = " (required)";

class HelpFormatter final : public CLI::Formatter {
public:
    // `columns`: the terminal's width, measured once (terminal_screen());
    // a page uses at most kHelpColumns of it.
    explicit HelpFormatter(std::size_t columns) : columns_(std::min(columns, kHelpColumns)) { column_width(30); }
    std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;
    std::string make_option(const CLI::Option* opt, bool is_positional) const override;
    std::string make_option_opts(const CLI::Option* opt) const override;
    std::string make_option_usage(const CLI::Option* opt) const override;
    std::string make_subcommand(const CLI::App* sub) const override;
    std::string make_description(const CLI::App* app) const override;
    std::string make_footer(const CLI::App* app) const override;

private:
    std::size_t columns_;
};

}  // namespace gpumem::cli
