#include "cli/lists.hpp"

#include "base/errors.hpp"
#include "cli/commands.hpp"

namespace gpumem::cli {

const std::vector<ListEntry>& name_lists() {
    static const std::vector<ListEntry> lists = [] {
        std::vector<ListEntry> all = {
            {"commands", "gpumem COMMAND", command_list},
            {"formats", "--format", [] { return view_of(kFormats); }},
            {"units", "--units", [] { return view_of(kUnits); }},
        };
        for (const ListEntry& e : command_lists()) all.push_back(e);
        return all;
    }();
    return lists;
}

namespace {

// One rule for every list name: its plural as --list shows it, or its
// singular (`--list check`, `--list strategy`, `--list host-memory`).
std::string_view list_named(std::string_view name) {
    for (const ListEntry& e : name_lists()) {
        const std::string_view n = e.name;
        if (n == name) return n;
        const bool plural = n.size() > 1 && n.back() == 's';
        const bool ies = n.size() > 3 && n.substr(n.size() - 3) == "ies";
        if (plural && n.substr(0, n.size() - 1) == name) return n;
        if (ies && name.size() > 1 && name.back() == 'y' && n.substr(0, n.size() - 3) == name.substr(0, name.size() - 1)) return n;
    }
    std::vector<std::string_view> names;
    for (const ListEntry& e : name_lists()) names.push_back(e.name);
    const std::string expected = expected_names(name, names, names.size(), "gpumem --list");
    throw UsageError("--list: unknown list '" + std::string(name) + "' (" + expected + ")" +
                     (suggests_names(expected) ? std::string() : did_you_mean(name, names)));
}

}  // namespace

Report list_report(std::string_view name, Format format) {
    Report report;
    report.command = "list";
    if (name.empty()) {
        Table table;
        table.key = "lists";
        table.fields = {{"list", "list", FieldKind::text}, {"names", "names of", FieldKind::text}, {"used_by", "used by", FieldKind::text}};
        for (const ListEntry& e : name_lists())
            table.add_row({std::string(e.name), std::string(e.view().what), std::string(e.used_by)});
        report.tables.push_back(std::move(table));
        return report;
    }
    const std::string_view list = list_named(name);
    for (const ListEntry& e : name_lists()) {
        if (e.name != list) continue;
        if (e.table) {
            report.tables.push_back(e.table(format));
            return report;
        }
        const NameListView view = e.view();
        Table table;
        table.key = "names";
        // The description breaks at spaces to keep the list within 100 columns.
        table.fields = {{"name", "name", FieldKind::text}, {"description", "description", FieldKind::text, 2, ' '}};
        for (const auto& [n, help] : view.rows) table.add_row({std::string(n), std::string(help)});
        report.tables.push_back(std::move(table));
        return report;
    }
    return report;
}

}  // namespace gpumem::cli
