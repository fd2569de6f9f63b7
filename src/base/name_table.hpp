// Tables of names: every list of names gpumem accepts (copy directions,
// reuse-sim strategies, info fields, allocation APIs, growth rules, host
// memory kinds...) is one constexpr array of rows, and parsing, messages,
// help texts, `gpumem --list` and the completions all read that array. A row
// is a name, a value (an enum, or a struct describing the entry) and a one
// line description. Adding a name is adding a row.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.hpp"

namespace gpumem {

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
    template <std::size_t N>
    constexpr NameTable(std::string_view what, const Named<T> (&rows)[N]) noexcept : what_(what), rows_(rows), size_(N) {}

    // What a name names, for messages: "copy direction".
    constexpr std::string_view what() const noexcept { return what_; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr const Named<T>* begin() const noexcept { return rows_; }
    constexpr const Named<T>* end() const noexcept { return rows_ + size_; }

    const Named<T>* find(std::string_view name) const noexcept {
        for (const Named<T>& row : *this)
            if (row.name == name) return &row;
        return nullptr;
    }

    // The row named `name`; UsageError "unknown copy direction 'x' (expected a, b or c)".
    const Named<T>& row(std::string_view name) const {
        if (const Named<T>* found = find(name)) return *found;
        throw UsageError("unknown " + std::string(what_) + " '" + std::string(name) + "' (expected " + names() + ")");
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
            throw UsageError("empty list of " + std::string(what_) + "s (expected " + names() + (rules.allow_all ? ", or all)" : ")"));
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
