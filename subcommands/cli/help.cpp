#include "cli/help.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "base/text.hpp"
#include "cli/width.hpp"

namespace gpumem::cli {
namespace {

// "  name TYPE" padded to the description column, or alone on its line
// when wider, then `text` wrapped at words within `width`.
std::string two_columns(const std::string& left, const std::string& text, std::size_t column, std::size_t width) {
    std::string out = "  " + left;
    if (text.empty()) return out + "\n";
    if (out.size() + 1 >= column) {
        out += "\n";
        out.append(column, ' ');
    } else {
        out.append(column - out.size(), ' ');
    }
    const std::size_t room = width > column + 20 ? width - column : 20;
    const std::string body = wrap_words(short_description(text, room), room);
    for (char c : body) {
        out += c;
        if (c == '\n') out.append(column, ' ');
    }
    return out + "\n";
}

// The value's name as help shows it. CLI11 appends each validator's own
// description to the type name ("SIZE:SIZE", "TEXT:RANGE", "INT:INT in
// [1 - 4096]", "TEXT:{quick,standard,long}"): one name is kept, the
// validator's where the type said only TEXT, and the choices, under the
// option's own name where the type said only TEXT.
std::string value_label(const CLI::Option* opt) {
    std::string name = opt->get_type_name();
    const std::size_t colon = name.find(':');
    if (colon == std::string::npos) return name;
    std::string head = name.substr(0, colon);
    const std::string tail = name.substr(colon + 1);
    if (tail.empty() || tail.front() != '{') {
        // CLI11's own type (TEXT) says less than the validator's name (SIZE, RANGE).
        const bool one_word = tail.find(' ') == std::string::npos;
        return head == "TEXT" && one_word ? tail : head;
    }
    if (head == "TEXT") {
        head = opt->get_single_name();
        std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return c == '-' ? '_' : std::toupper(c); });
    }
    return head + ":" + tail;
}

const CLI::App* root_of(const CLI::App* app) {
    while (app->get_parent() != nullptr) app = app->get_parent();
    return app;
}

}  // namespace

std::string short_description(const std::string& description, std::size_t room) {
    if (description.size() <= room) return description;
    // The first sentence or clause, preferably one that ends outside
    // brackets; a cut inside them closes what it left open ("(- for standard
    // input; ..." was shown without its ")").
    std::string open;          // the brackets open so far, innermost last
    std::string inside_cut;    // the first cut inside brackets, closed
    for (std::size_t i = 0; i + 1 < description.size(); ++i) {
        const char c = description[i];
        if (c == '(' || c == '[') open += c;
        if ((c == ')' || c == ']') && !open.empty()) open.pop_back();
        if ((c != ';' && c != '.') || description[i + 1] != ' ') continue;
        if (open.empty()) return description.substr(0, i);
        if (inside_cut.empty()) {
            inside_cut = description.substr(0, i);
            for (auto it = open.rbegin(); it != open.rend(); ++it) inside_cut += *it == '(' ? ')' : ']';
        }
    }
    return inside_cut.empty() ? description : inside_cut;
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const {
    std::string page = CLI::Formatter::make_help(app, std::move(name), mode);
    if (app->get_parent() == nullptr || mode == CLI::AppFormatMode::Sub) return page;
    // The global options a subcommand takes are the root's: CLI11 parses them
    // after the subcommand's name too (fallthrough), so its page shows them.
    const CLI::App* root = root_of(app);
    std::vector<const CLI::Option*> globals = root->get_options(
        [](const CLI::Option* opt) { return opt->get_group() == kGlobalGroup && opt->nonpositional(); });
    if (globals.empty()) return page;
    std::string group = "\n" + std::string(kGlobalGroup) + ":\n";
    for (const CLI::Option* opt : globals) group += make_option(opt, false);
    // Before the footer, which ends the page.
    const std::string footer = make_footer(app);
    const std::size_t at = footer.empty() ? std::string::npos : page.rfind(footer);
    std::string body = page.substr(0, at == std::string::npos ? page.size() : at);
    while (!body.empty() && body.back() == '\n') body.pop_back();
    const std::string tail = at == std::string::npos ? std::string() : "\n" + page.substr(at);
    auto lines = [](const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); };
    if (lines(body) + 1 + lines(group) + lines(tail) > kHelpLines) {
        // A long page (reuse-sim's jobs) names the global options only:
        // gpumem --help says what each does.
        std::string names;
        for (const CLI::Option* opt : globals) {
            std::string name = make_option_name(opt, false) + make_option_opts(opt);
            if (const std::size_t choices = name.find(":{"); choices != std::string::npos) name.erase(choices);
            names += (names.empty() ? "" : ", ") + name;
        }
        names += " (gpumem --help says what each does)";
        group = "\n" + std::string(kGlobalGroup) + ":\n";
        const std::string wrapped = wrap_words(names, columns_ - 2);
        for (std::string_view line : split(wrapped, '\n')) group += "  " + std::string(line) + "\n";
    }
    return body + "\n" + group + tail;
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
    std::string left = make_option_name(opt, is_positional) + make_option_opts(opt);
    // Choices too many for one line ({a,b,...} of info's fields) are left to
    // gpumem --list, which the description names.
    const std::size_t open = left.find(":{"), close = left.find('}', open == std::string::npos ? 0 : open);
    if (left.size() + 2 > columns_ && open != std::string::npos && close != std::string::npos) left.erase(open, close + 1 - open);
    return two_columns(left, make_option_desc(opt), get_column_width(), columns_);
}

// CLI11's, without "Needs:" and "Excludes:" lists (the option's description
// and the error say which options go together; reuse-sim's page repeated
// "Excludes: --trace --trace-device" eleven times).
std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
    std::string out;
    if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
    if (opt->get_type_size() != 0) {
        if (!opt->get_type_name().empty()) out += " " + get_label(value_label(opt));
        if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
        if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
        if (opt->get_required()) out += " " + get_label("REQUIRED");
    }
    return out;
}

std::string HelpFormatter::make_option_usage(const CLI::Option* opt) const {
    std::string usage = CLI::Formatter::make_option_usage(opt);
    const std::string& help = opt->get_description();
    const bool required = help.size() >= kRequiredPositional.size() &&
                          help.compare(help.size() - kRequiredPositional.size(), kRequiredPositional.size(), kRequiredPositional) == 0;
    if (required && usage.size() >= 2 && usage.front() == '[' && usage.back() == ']') usage = usage.substr(1, usage.size() - 2);
    return usage;
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
    return two_columns(sub->get_display_name(true), sub->get_description(), get_column_width(), columns_);
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
    const std::string text = app->get_description();
    return text.empty() ? std::string() : wrap_words(text, columns_) + "\n";
}

// The footer is the root's (the exit-status table) or the subcommand's own:
// CLI11 hands the root's to every subcommand, which printed it on every page.
std::string HelpFormatter::make_footer(const CLI::App* app) const {
    std::string footer = app->get_footer();
    if (app->get_parent() != nullptr && app->get_parent()->get_footer() == footer) footer.clear();
    if (footer.empty()) return {};
    std::string out;
    for (std::string_view paragraph : split(footer, '\n')) out += wrap_words(paragraph, columns_) + "\n";
    return out;
}

}  // namespace gpumem::cli
