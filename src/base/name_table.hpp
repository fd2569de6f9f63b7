// Tables of names: every list of names gpumem accepts (copy directions,
// reuse-sim strategies, info fields, allocation APIs, growth rules, host
// memory kinds...) is one constexpr array of rows, and parsing, messages,
// help texts, `gpumem --list` and the completions all read that array. A row
// is a name, a value (an enum, or a struct describing the entry) and a one
// line description. Adding a name is adding a row.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.hpp"

namespace gpumem {

// The one suggestion rule for every mistyped name (commands, options, list
// names, checks, knobs, strategies, directions...): the candidate nearest to
// `name` by edit distance (a swap of two neighbours counts once, case
// ignored), if it is near enough to be what was meant: at most 1 edit for
// names up to 5 characters, 2 up to 8, 3 beyond, and fewer edits than half
// the name's characters (so '-x' is not taken for '-h', nor 'se' for 'sm':
// a name that short is as near to every other). An option's leading dashes
// are no part of its name here: '--file' is 4 letters, 2 edits from
// '--wide', and not near it. Ties go to the first candidate, so a table's
// order decides. Empty when nothing is near.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
    const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
    // Optimal string alignment over three rolling rows.
    std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
                current[j] = std::min(current[j], before[j - 2] + 1);
        }
        before.swap(previous);
        previous.swap(current);
    }
    return previous[b.size()];
}

inline std::string_view without_dashes(std::string_view name) {
    return name.substr(std::min(name.find_first_not_of('-'), name.size()));
}

template <typename Names>
std::string_view closest_name(std::string_view name, const Names& candidates) {
    const std::string_view bare = without_dashes(name);
    const std::size_t allowed = bare.size() <= 5 ? 1 : bare.size() <= 8 ? 2 : 3;
    std::string_view best;
    std::size_t best_distance = allowed + 1;
    for (const auto& candidate : candidates) {
        const std::string_view c(candidate);
        if (c.empty() || c == name) continue;
        // The dashes as given count: '-level' is one edit from '--level'.
        const std::size_t dashes = edit_distance(name.substr(0, name.size() - bare.size()), c.substr(0, c.size() - without_dashes(c).size()));
        const std::size_t d = edit_distance(bare, without_dashes(c)) + dashes;
        if (d * 2 >= std::max<std::size_t>(bare.size(), 1)) continue;
        if (d < best_distance) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

// "; did you mean 'info'?" when a candidate is near, else "".
template <typename Names>
std::string did_you_mean(std::string_view name, const Names& candidates) {
    const std::string_view best = closest_name(name, candidates);
    if (best.empty()) return {};
    return "; did you mean '" + std::string(best) + "'?";
}

// Up to `count` of `candidates` nearest to `name`, the nearest first: those
// that start with it, then those that hold it, then by edit distance; ties
// in the candidates' order. For an error's suggestions.
template <typename Names>
std::vector<std::string_view> nearest_names(std::string_view name, const Names& candidates, std::size_t count) {
    const std::string wanted = [&] {
        std::string s(name);
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    }();
    struct Ranked {
        int bucket;
        std::size_t distance, order;
        std::string_view name;
    };
    std::vector<Ranked> ranked;
    for (const auto& candidate : candidates) {
        const std::string_view c(candidate);
        if (c.empty() || std::any_of(ranked.begin(), ranked.end(), [c](const Ranked& r) { return r.name == c; })) continue;
        std::string lowered(c);
        for (char& ch : lowered) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        const std::size_t at = wanted.empty() ? std::string::npos : lowered.find(wanted);
        ranked.push_back({at == 0 ? 0 : at != std::string::npos ? 1 : 2, edit_distance(name, c), ranked.size(), c});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
        return a.bucket != b.bucket ? a.bucket < b.bucket : a.distance < b.distance;
    });
    std::vector<std::string_view> out;
    for (std::size_t i = 0; i < ranked.size() && i < count; ++i) out.push_back(ranked[i].name);
    return out;
}

// The longest list of names an error spells out whole; a longer one is
// named by the few nearest the name given, as many as keep the suggestion
// within kSuggestionColumns (one at least), and the command that lists all.
inline constexpr std::size_t kNamesInMessage = 60;
inline constexpr std::size_t kSuggestionColumns = 50;
inline constexpr std::size_t kSuggestedNames = 3;

// "a, b or c".
inline std::string names_or(const std::vector<std::string_view>& names) {
    std::string text;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
        text += names[i];
    }
    return text;
}

// "strategy" -> "strategies", "info field" -> "info fields".
inline std::string plural(std::string_view what) {
    if (what.size() > 1 && what.back() == 'y' && std::string_view("aeiou").find(what[what.size() - 2]) == std::string_view::npos)
        return std::string(what.substr(0, what.size() - 1)) + "ies";
    return std::string(what) + "s";
}

// What an error says a name may be: "expected a, b or c" while the names
// (the first `count` of `candidates`, a table's own) fit in kNamesInMessage;
// else "nearest: free, bar1_free; gpumem --list fields", the suggestions
// those nearest `name` among `candidates` (a table's aliases too), `all_by`
// the command that lists them (empty: every name spelt out).
template <typename Names>
std::string expected_names(std::string_view name, const Names& candidates, std::size_t count, std::string_view all_by) {
    std::vector<std::string_view> own;
    for (const auto& candidate : candidates)
        if (own.size() < count) own.emplace_back(candidate);
    const std::string all = names_or(own);
    if (all.size() <= kNamesInMessage || all_by.empty()) return "expected " + all;
    std::string text;
    for (std::string_view near : nearest_names(name, candidates, kSuggestedNames)) {
        std::string longer = text.empty() ? "nearest: " + std::string(near) : text + ", " + std::string(near);
        if (!text.empty() && longer.size() + 2 + all_by.size() > kSuggestionColumns) break;
        text = std::move(longer);
    }
    return text + "; " + std::string(all_by);
}

// Whether a message names its names by expected_names' long form (a
// suggestion and where the rest are), not all of them.
inline bool suggests_names(std::string_view message) { return message.find("; gpumem --list") != std::string_view::npos; }

template <typename T>
struct Named {
    std::string_view name;
    T value;
    std::string_view help;  // one line, no trailing period
};

// How a comma list may be written (NameTable::parse_list).
struct ListRules {
    bool allow_all = true;         // `all` stands for every entry (alone)
    bool allow_repeats = false;    // a name given twice is kept once instead of refused; `all`
                                   // may then stand among other names, for every entry not named before it
    bool allow_empty = false;      // an empty list is an empty result instead of an error
};

template <typename T>
class NameTable {
public:
    // `list`: what `gpumem --list` calls it, named by errors whose list of
    // names is too long to spell out (expected_names).
    template <std::size_t N>
    constexpr NameTable(std::string_view what, const Named<T> (&rows)[N], std::string_view list = {}) noexcept
        : what_(what), list_(list), rows_(rows), size_(N) {}

    // What a name names, for messages: "copy direction".
    constexpr std::string_view what() const noexcept { return what_; }
    // Its name for `gpumem --list` (empty: none given).
    constexpr std::string_view list() const noexcept { return list_; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr const Named<T>* begin() const noexcept { return rows_; }
    constexpr const Named<T>* end() const noexcept { return rows_ + size_; }

    const Named<T>* find(std::string_view name) const noexcept {
        for (const Named<T>& row : *this)
            if (row.name == name) return &row;
        return nullptr;
    }

    // The row named `name`; UsageError "unknown copy direction 'x' (expected a, b or c)",
    // with "; did you mean 'b'?" after it when a name is near.
    const Named<T>& row(std::string_view name) const {
        if (const Named<T>* found = find(name)) return *found;
        throw UsageError(unknown_message(name));
    }
    std::string unknown_message(std::string_view name) const {
        const std::string expected_text = expected(name);
        // The long form's suggestions start with the nearest name: no "did you mean" after it.
        return "unknown " + std::string(what_) + " '" + std::string(name) + "' (" + expected_text + ")" +
               (suggests_names(expected_text) ? std::string() : did_you_mean(name, name_list()));
    }
    // "expected a, b or c", or for a long list the names nearest `name` and
    // where the others are (expected_names).
    std::string expected(std::string_view name) const {
        return expected_names(name, name_list(), size_, list_.empty() ? std::string() : "gpumem --list " + std::string(list_));
    }
    T parse(std::string_view name) const { return row(name).value; }

    // The name of a value (enum tables); "?" when no row holds it.
    std::string_view name_of(const T& value) const noexcept {
        for (const Named<T>& row : *this)
            if (row.value == value) return row.name;
        return "?";
    }
    const Named<T>* find_value(const T& value) const noexcept {
        for (const Named<T>& row : *this)
            if (row.value == value) return &row;
        return nullptr;
    }

    // "a, b or c" (or with another last separator: "a, b, c" with ", ").
    std::string names(std::string_view last = " or ") const {
        std::string text;
        for (std::size_t i = 0; i < size_; ++i) {
            if (i > 0) text += i + 1 == size_ ? last : std::string_view(", ");
            text += rows_[i].name;
        }
        return text;
    }
    std::vector<std::string_view> name_list() const {
        std::vector<std::string_view> list;
        list.reserve(size_);
        for (const Named<T>& row : *this) list.push_back(row.name);
        return list;
    }
    std::vector<T> values() const {
        std::vector<T> list;
        list.reserve(size_);
        for (const Named<T>& row : *this) list.push_back(row.value);
        return list;
    }

    // A comma list of names ("a,b" or "a, b"), or `all`.
    std::vector<T> parse_list(std::string_view text, ListRules rules = {}) const {
        std::vector<const Named<T>*> chosen;
        parse_list_into(text, rules, chosen);
        return finish_list(chosen, rules);
    }
    // Several items, each itself a comma list (an option given repeatedly).
    std::vector<T> parse_list(const std::vector<std::string>& items, ListRules rules = {}) const {
        std::vector<const Named<T>*> chosen;
        for (const std::string& item : items) parse_list_into(item, rules, chosen);
        return finish_list(chosen, rules);
    }

private:
    static std::string_view trimmed(std::string_view s) noexcept {
        while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
        while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
        return s;
    }

    void parse_list_into(std::string_view text, const ListRules& rules, std::vector<const Named<T>*>& chosen) const {
        if (trimmed(text).empty()) {
            if (rules.allow_empty) return;
            throw UsageError("empty list of " + plural(what_) + " (" + expected("") + (rules.allow_all ? ", or all)" : ")"));
        }
        std::size_t start = 0;
        for (;;) {
            const std::size_t comma = text.find(',', start);
            const std::string_view item = trimmed(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
            if (item.empty()) throw UsageError("empty " + std::string(what_) + " name in '" + std::string(text) + "'");
            if (item == "all" && rules.allow_all) {
                chosen.push_back(nullptr);  // marks `all`
            } else {
                const Named<T>* row_found = &row(item);
                for (const Named<T>* c : chosen)
                    if (c == row_found && !rules.allow_repeats)
                        throw UsageError(std::string(what_) + " '" + std::string(item) + "' named twice");
                chosen.push_back(row_found);
            }
            if (comma == std::string_view::npos) break;
            start = comma + 1;
        }
    }

    std::vector<T> finish_list(const std::vector<const Named<T>*>& chosen, const ListRules& rules) const {
        bool all = false;
        for (const Named<T>* c : chosen) all = all || c == nullptr;
        if (all && chosen.size() > 1 && !rules.allow_repeats)
            throw UsageError("'all' cannot be combined with other " + std::string(what_) + " names");
        // In order, each row once; `all` (nullptr) adds every row where it stands.
        std::vector<T> list;
        std::vector<const Named<T>*> seen;
        auto add = [&](const Named<T>* row) {
            for (const Named<T>* s : seen)
                if (s == row) return;
            seen.push_back(row);
            list.push_back(row->value);
        };
        for (const Named<T>* c : chosen) {
            if (c != nullptr) {
                add(c);
            } else {
                for (const Named<T>& row : *this) add(&row);
            }
        }
        return list;
    }

    std::string_view what_;
    std::string_view list_;
    const Named<T>* rows_;
    std::size_t size_;
};

// A table seen without its value type: what `gpumem --list` prints and the
// completions offer.
struct NameListView {
    std::string_view what;
    std::vector<std::pair<std::string_view, std::string_view>> rows;  // name, help
};

template <typename T>
NameListView view_of(const NameTable<T>& table) {
    NameListView view{table.what(), {}};
    for (const Named<T>& row : table) view.rows.emplace_back(row.name, row.help);
    return view;
}

}  // namespace gpumem
