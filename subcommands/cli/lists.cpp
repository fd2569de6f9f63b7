#include "cli/lists.hpp"

#include "base/alloc_plan.hpp"
#include "base/copy_plan.hpp"
#include "base/errors.hpp"
#include "base/memory_policy.hpp"
#include "base/sizes.hpp"
#include "bench/alloc_apis.hpp"
#include "bench/alloc_modes.hpp"
#include "check/check_report.hpp"
#include "cli/commands.hpp"
#include "info/info_fields.hpp"
#include "reuse_sim/strategy.hpp"
#include "reuse_sim/trace_reader.hpp"
#include "reuse_sim/tuner.hpp"
#include "reuse_sim/workloads.hpp"

namespace gpumem::cli {

const std::vector<ListEntry>& name_lists() {
    static const std::vector<ListEntry> lists = {
        {"commands", "gpumem COMMAND", command_list},
        {"formats", "--format", [] { return view_of(kFormats); }},
        {"units", "--units", [] { return view_of(kUnits); }},
        {"directions", "copy DIRECTION", [] { return view_of(kCopyDirections); }},
        {"engines", "copy --engine", [] { return view_of(kCopyEngines); }},
        {"targets", "memset --target", memset_targets},
        {"widths", "memset --width", memset_widths},
        {"host-memory", "memset, copy --host-memory", [] { return view_of(kHostMemoryKinds); }},
        {"growth", "alloc-test churn, reuse-sim --growth", [] { return view_of(kGrowthRules); }},
        {"apis", "alloc-test latency, churn --api", [] { return view_of(kAllocApis); }},
        {"patterns", "alloc-test fill --pattern", [] { return view_of(kPatterns); }},
        {"via", "alloc-test churn --via", [] { return view_of(kChurnVias); }},
        {"fields", "info --query", info_fields_view},
        {"checks", "check --threshold", check_list},
        {"levels", "check --level", check_level_list},
        {"xids", "check (xid.events)", xid_list},
        {"verdicts", "check's verdicts", [] { return view_of(kVerdicts); }},
        {"remediations", "check's remediations", [] { return view_of(kRemediations); }},
        {"strategies", "reuse-sim --strategy", [] { return view_of(reuse_sim::kStrategies); }},
        {"workloads", "reuse-sim --workload", [] { return view_of(reuse_sim::kWorkloads); }},
        {"trace-formats", "reuse-sim --trace-format", [] { return view_of(reuse_sim::kTraceFormats); }},
        {"knobs", "reuse-sim --sweep", [] { return view_of(reuse_sim::kKnobs); }},
    };
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
    std::string known;
    for (std::string_view n : names) known += (known.empty() ? "" : ", ") + std::string(n);
    throw UsageError("--list: unknown list '" + std::string(name) + "' (known: " + known + ")" + did_you_mean(name, names));
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
    // Every check with its levels, default threshold, remediation and source.
    if (list == "checks") {
        report.tables.push_back(check_list_table());
        return report;
    }
    if (list == "xids") {
        report.tables.push_back(xid_list_table(format));
        return report;
    }
    for (const ListEntry& e : name_lists()) {
        if (e.name != list) continue;
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
