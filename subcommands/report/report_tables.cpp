// gpumem report's tables: the fleet (a row per GPU, or per rank that found
// none), outliers, every figure against its model's median, a summary per
// model and per model's figure, and the documents read; and its schema.
#include <algorithm>
#include <string>
#include <vector>

#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/commands.hpp"
#include "report/report.hpp"

namespace gpumem::cli {
namespace {

using fleet::DocumentRow;
using fleet::FigureRow;
using fleet::GpuRow;
using fleet::ModelFigure;
using fleet::ModelSummary;

Cell count_cell(const std::optional<std::uint64_t>& v) { return optional_cell(v); }
Cell size_cell(std::size_t n) { return std::uint64_t{n}; }
std::vector<std::string_view> verdict_names() { return fleet::kVerdicts.name_list(); }
std::vector<std::string_view> status_names() { return fleet::kRowStatuses.name_list(); }
std::vector<std::string_view> remediation_names() { return fleet::kRemediations.name_list(); }
using fleet::NodeRow;

// The table's one column of what is wrong with a row.
std::string problems_text(const GpuRow& r) {
    std::vector<std::string> parts;
    if (!r.error_codes.empty()) parts.push_back("error: " + join(r.error_codes));
    if (!r.failed_checks.empty()) parts.push_back("failed: " + join(r.failed_checks));
    if (!r.unknown_checks.empty()) parts.push_back("could not run: " + join(r.unknown_checks));
    if (!r.outliers.empty()) parts.push_back("outlier: " + join(r.outliers));
    if (!r.warned_checks.empty()) parts.push_back("warned: " + join(r.warned_checks));
    return join(parts, "; ");
}

constexpr Column<GpuRow> kGpuColumns[] = {
    {{"host", "host", FieldKind::text}, [](const GpuRow& r) -> Cell { return r.host.empty() ? Cell() : Cell(r.host); }},
    {{"index", "gpu", FieldKind::integer}, [](const GpuRow& r) { return optional_cell(r.index); }},
    {{"name", "model", FieldKind::text}, [](const GpuRow& r) { return optional_cell(r.name); }},
    {{"uuid", "uuid", FieldKind::text}, [](const GpuRow& r) { return optional_cell(r.uuid); }},
    {{"job_id", "job", FieldKind::text}, [](const GpuRow& r) { return optional_cell(r.job_id); }},
    {{"rank", "rank", FieldKind::integer}, [](const GpuRow& r) { return count_cell(r.rank); }},
    {{"local_rank", "local", FieldKind::integer}, [](const GpuRow& r) { return count_cell(r.local_rank); }, Shown::machine_only},
    {{"status", "status", FieldKind::text},
     [](const GpuRow& r) -> Cell { return std::string(fleet::kRowStatuses.name_of(r.status)); }, Shown::always, false, nullptr,
     status_names},
    {{"verdict", "check", FieldKind::text},
     [](const GpuRow& r) -> Cell { return r.verdict ? Cell(std::string(fleet::kVerdicts.name_of(*r.verdict))) : Cell(); },
     Shown::always, false, nullptr, verdict_names},
    {{"remediation", "remedy", FieldKind::text},
     [](const GpuRow& r) -> Cell { return std::string(fleet::kRemediations.name_of(r.remediation)); }, Shown::always, false, nullptr,
     remediation_names},
    {{"free", "free", FieldKind::bytes}, [](const GpuRow& r) { return count_cell(r.free); }},
    {{"total", "total", FieldKind::bytes}, [](const GpuRow& r) { return count_cell(r.total); }},
    {{"problems", "problems", FieldKind::text, 2, ' '}, [](const GpuRow& r) -> Cell { return problems_text(r); }, Shown::table_only},
    {{"failed_checks", "", FieldKind::list}, [](const GpuRow& r) -> Cell { return r.failed_checks; }, Shown::machine_only},
    {{"warned_checks", "", FieldKind::list}, [](const GpuRow& r) -> Cell { return r.warned_checks; }, Shown::machine_only},
    {{"unknown_checks", "", FieldKind::list}, [](const GpuRow& r) -> Cell { return r.unknown_checks; }, Shown::machine_only},
    {{"outliers", "", FieldKind::list}, [](const GpuRow& r) -> Cell { return r.outliers; }, Shown::machine_only},
    {{"error_codes", "", FieldKind::list}, [](const GpuRow& r) -> Cell { return r.error_codes; }, Shown::machine_only},
    {{"errors", "", FieldKind::list}, [](const GpuRow& r) -> Cell { return r.errors; }, Shown::machine_only},
    {{"commands", "", FieldKind::list}, [](const GpuRow& r) -> Cell { return r.commands; }, Shown::machine_only},
    {{"sources", "", FieldKind::list}, [](const GpuRow& r) -> Cell { return r.sources; }, Shown::machine_only},
};

constexpr Column<NodeRow> kNodeColumns[] = {
    {{"host", "host", FieldKind::text}, [](const NodeRow& n) -> Cell { return n.host.empty() ? Cell() : Cell(n.host); }},
    // Rows, not GPUs: a rank that found no GPU is a row of its host too.
    {{"rows", "rows", FieldKind::integer}, [](const NodeRow& n) { return size_cell(n.gpus + n.ranks); }},
    {{"status", "status", FieldKind::text},
     [](const NodeRow& n) -> Cell { return std::string(fleet::kRowStatuses.name_of(n.status)); }, Shown::always, false, nullptr,
     status_names},
    {{"remediation", "remedy", FieldKind::text},
     [](const NodeRow& n) -> Cell { return std::string(fleet::kRemediations.name_of(n.remediation)); }, Shown::always, false, nullptr,
     remediation_names},
    {{"drain", "drain", FieldKind::boolean}, [](const NodeRow& n) -> Cell { return n.drain; }},
    {{"reason", "reason", FieldKind::text, 2, ' '}, [](const NodeRow& n) -> Cell { return n.reason.empty() ? Cell() : Cell(n.reason); }},
};

// The drain list: a node to drain per row, for scripts.
constexpr Column<NodeRow> kDrainColumns[] = {
    {{"host", "host", FieldKind::text}, [](const NodeRow& n) -> Cell { return n.host.empty() ? Cell() : Cell(n.host); }},
    {{"reason", "reason", FieldKind::text}, [](const NodeRow& n) -> Cell { return n.reason; }},
};

std::vector<NodeRow> drained(const fleet::Fleet& f) {
    std::vector<NodeRow> out;
    for (const NodeRow& n : f.nodes)
        if (n.drain) out.push_back(n);
    return out;
}

// A figure row with its GPU's row, for the columns that name the GPU.
struct FigureView {
    const GpuRow* gpu;
    const FigureRow* figure;
};

constexpr Column<FigureView> kFigureColumns[] = {
    {{"host", "host", FieldKind::text}, [](const FigureView& v) -> Cell { return v.gpu->host.empty() ? Cell() : Cell(v.gpu->host); }},
    {{"index", "gpu", FieldKind::integer}, [](const FigureView& v) { return optional_cell(v.gpu->index); }},
    {{"uuid", "uuid", FieldKind::text}, [](const FigureView& v) { return optional_cell(v.gpu->uuid); }},
    {{"name", "model", FieldKind::text}, [](const FigureView& v) { return optional_cell(v.gpu->name); }, Shown::machine_only},
    {{"rank", "rank", FieldKind::integer}, [](const FigureView& v) { return count_cell(v.gpu->rank); }, Shown::machine_only},
    {{"figure", "figure", FieldKind::text}, [](const FigureView& v) -> Cell { return v.figure->figure.name; }},
    {{"value", "value", FieldKind::real, 2}, [](const FigureView& v) -> Cell { return v.figure->figure.value; }},
    {{"median", "median", FieldKind::real, 2}, [](const FigureView& v) -> Cell { return v.figure->median; }},
    {{"unit", "unit", FieldKind::text}, [](const FigureView& v) -> Cell { return v.figure->figure.unit; }},
    {{"below_percent", "below", FieldKind::percent, 1}, [](const FigureView& v) -> Cell { return 100.0 * v.figure->below(); }},
    {{"peers", "of GPUs", FieldKind::integer}, [](const FigureView& v) { return size_cell(v.figure->peers); }},
    {{"outlier", "outlier", FieldKind::boolean}, [](const FigureView& v) -> Cell { return v.figure->outlier; },
     Shown::machine_only},
};

constexpr Column<ModelSummary> kModelColumns[] = {
    {{"name", "model", FieldKind::text}, [](const ModelSummary& m) -> Cell { return m.name; }},
    {{"gpus", "GPUs", FieldKind::integer}, [](const ModelSummary& m) { return size_cell(m.gpus); }},
    {{"checked", "checked", FieldKind::integer}, [](const ModelSummary& m) { return size_cell(m.checked); }},
    {{"passed", "passed", FieldKind::integer}, [](const ModelSummary& m) { return size_cell(m.passed); }},
    {{"warned", "warned", FieldKind::integer}, [](const ModelSummary& m) { return size_cell(m.warned); }},
    {{"failed", "failed", FieldKind::integer}, [](const ModelSummary& m) { return size_cell(m.failed); }},
    {{"unknown", "unknown", FieldKind::integer}, [](const ModelSummary& m) { return size_cell(m.unknown); }},
    {{"outliers", "outliers", FieldKind::integer}, [](const ModelSummary& m) { return size_cell(m.outliers); }},
    {{"errors", "errors", FieldKind::integer}, [](const ModelSummary& m) { return size_cell(m.errors); }},
};

constexpr Column<ModelFigure> kModelFigureColumns[] = {
    {{"name", "model", FieldKind::text}, [](const ModelFigure& m) -> Cell { return m.model; }},
    {{"figure", "figure", FieldKind::text}, [](const ModelFigure& m) -> Cell { return m.figure; }},
    {{"count", "GPUs", FieldKind::integer}, [](const ModelFigure& m) { return size_cell(m.count); }},
    {{"median", "median", FieldKind::real, 2}, [](const ModelFigure& m) -> Cell { return m.median; }},
    {{"min", "min", FieldKind::real, 2}, [](const ModelFigure& m) -> Cell { return m.min; }},
    {{"max", "max", FieldKind::real, 2}, [](const ModelFigure& m) -> Cell { return m.max; }},
    {{"unit", "unit", FieldKind::text}, [](const ModelFigure& m) -> Cell { return m.unit; }},
    {{"outliers", "outliers", FieldKind::integer}, [](const ModelFigure& m) { return size_cell(m.outliers); }},
};

constexpr Column<DocumentRow> kDocumentColumns[] = {
    {{"source", "source", FieldKind::text}, [](const DocumentRow& d) -> Cell { return d.source; }},
    {{"command", "command", FieldKind::text}, [](const DocumentRow& d) -> Cell { return d.command; }},
    {{"ok", "ok", FieldKind::boolean}, [](const DocumentRow& d) -> Cell { return d.ok; }},
    {{"error_code", "error", FieldKind::text}, [](const DocumentRow& d) { return optional_cell(d.error_code); }},
    {{"host", "host", FieldKind::text},
     [](const DocumentRow& d) -> Cell { return d.origin.host.empty() ? Cell() : Cell(d.origin.host); }},
    {{"job_id", "job", FieldKind::text}, [](const DocumentRow& d) { return optional_cell(d.origin.job_id); }},
    {{"rank", "rank", FieldKind::integer}, [](const DocumentRow& d) { return count_cell(d.origin.rank); }},
    {{"local_rank", "local", FieldKind::integer}, [](const DocumentRow& d) { return count_cell(d.origin.local_rank); }},
    {{"gpus", "GPUs", FieldKind::integer}, [](const DocumentRow& d) { return size_cell(d.gpus); }},
};

constexpr Column<ReportResults> kFieldColumns[] = {
    {{"verdict", "", FieldKind::text},
     [](const ReportResults& r) -> Cell { return std::string(r.fleet.failed() ? "fail" : "pass"); }},
    {{"problems", "", FieldKind::list}, [](const ReportResults& r) -> Cell { return r.fleet.problems; }},
    {{"outlier_fraction", "", FieldKind::real}, [](const ReportResults& r) -> Cell { return r.options.outlier_fraction; }},
    {{"strict", "", FieldKind::boolean}, [](const ReportResults& r) -> Cell { return r.options.strict; }},
};

std::vector<FigureView> figure_views(const fleet::Fleet& f, bool outliers_only) {
    std::vector<FigureView> views;
    for (const FigureRow& row : f.figures)
        if (!outliers_only || row.outlier) views.push_back({&f.rows[row.row], &row});
    return views;
}

// "1 document", "2 documents".
std::string counted(std::size_t n, const char* noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// "2 documents, 0 GPUs and 2 ranks that found no GPU on 1 host".
std::string fleet_size_line(const fleet::Fleet& f) {
    std::size_t gpus = 0, ranks = 0;
    for (const NodeRow& n : f.nodes) {
        gpus += n.gpus;
        ranks += n.ranks;
    }
    std::string line = counted(f.documents.size(), "document") + ", " + counted(gpus, "GPU");
    if (ranks) line += " and " + counted(ranks, "rank") + " that found no GPU";
    return line + " on " + counted(f.nodes.size(), "host");
}

// The table format: the fleet, its outliers and the per-model summaries;
// every figure and every document are for the machine formats.
void add_text(Report& r, const fleet::Fleet& f) {
    r.text_before.push_back(fleet_size_line(f));
    r.text_after.emplace_back("");
    if (!f.failed()) {
        r.text_after.emplace_back("verdict: pass");
        return;
    }
    r.text_after.push_back("verdict: fail (" + counted(f.problems.size(), "problem") + ")");
    for (const std::string& line : f.problems) r.text_after.push_back("  " + line);
}

}  // namespace

std::string fleet_failure_summary(const fleet::Fleet& f) {
    std::size_t errors = 0, failed = 0, outliers = 0;
    for (const GpuRow& r : f.rows) {
        errors += r.status == fleet::RowStatus::error;
        failed += r.status == fleet::RowStatus::fail;
        outliers += !r.outliers.empty();
    }
    std::vector<std::string> parts;
    if (failed) parts.push_back(std::to_string(failed) + " failed a check");
    if (outliers) parts.push_back(std::to_string(outliers) + " with an outlier");
    if (errors) parts.push_back(std::to_string(errors) + " could not run");
    // One line within a pipe's 100 columns after "gpumem: error: ": the
    // first problem where it fits, else how many (the report lists them).
    constexpr std::size_t kRoom = 100 - 15;
    const std::string text = "report: of " + counted(f.rows.size(), "row") + ", " + join(parts);
    std::string first = ": " + f.problems.front();
    if (f.problems.size() > 1) first += " (and " + std::to_string(f.problems.size() - 1) + " more)";
    return text.size() + first.size() <= kRoom ? text + first : text + "; " + counted(f.problems.size(), "problem");
}

std::string drain_list_text(const fleet::Fleet& f) {
    std::string text;
    for (const NodeRow& n : drained(f)) text += (n.host.empty() ? "-" : n.host) + "\t" + one_line(n.reason) + "\n";
    return text;
}

Report fleet_report(const ReportRequest& request, const ReportResults& results, const OutputOptions& output) {
    Report r;
    r.command = "report";
    if (!results.merged) return r;  // bad input: no part of a fleet is reported
    const fleet::Fleet& f = results.fleet;
    r.warnings = f.notes;  // inputs skipped
    const bool table = output.format == Format::table;
    if (request.drain_list) {
        // Only the nodes to drain; table and value formats are written by
        // execute as host<TAB>reason lines (drain_list_text).
        if (table || output.format == Format::value) return r;
        r.tables.push_back(make_table("drain", Columns<NodeRow>(kDrainColumns), drained(f), output.format));
        return r;
    }
    // Table format: each table's least useful columns left out first where
    // the terminal is narrower than it (--wide and --json keep them).
    const auto add = [&r](Table t, std::vector<std::string_view> drop_order) {
        t.drop_order = std::move(drop_order);
        r.tables.push_back(std::move(t));
    };
    add(make_table("gpus", Columns<GpuRow>(kGpuColumns), f.rows, output.format), {"uuid", "job_id", "rank", "total", "name", "free"});
    add(make_table("nodes", Columns<NodeRow>(kNodeColumns), f.nodes, output.format), {});
    const std::vector<FigureView> outliers = figure_views(f, true);
    if (!table || !outliers.empty()) add(make_table("outliers", Columns<FigureView>(kFigureColumns), outliers, output.format), {"uuid", "peers"});
    if (!table) r.tables.push_back(make_table("figures", Columns<FigureView>(kFigureColumns), figure_views(f, false), output.format));
    if (!table || !f.models.empty())
        add(make_table("models", Columns<ModelSummary>(kModelColumns), f.models, output.format), {"warned", "unknown", "errors", "checked"});
    if (!table || !f.model_figures.empty())
        add(make_table("model_figures", Columns<ModelFigure>(kModelFigureColumns), f.model_figures, output.format), {"min", "max", "count"});
    if (!table) r.tables.push_back(make_table("documents", Columns<DocumentRow>(kDocumentColumns), f.documents, output.format));
    r.fields = make_record(Columns<ReportResults>(kFieldColumns), results);
    if (table) add_text(r, f);
    return r;
}

DocumentSchema report_schema() {
    return {"report",
            {{"gpus", Columns<GpuRow>(kGpuColumns).schema()},
             {"nodes", Columns<NodeRow>(kNodeColumns).schema()},
             {"drain", Columns<NodeRow>(kDrainColumns).schema()},
             {"outliers", Columns<FigureView>(kFigureColumns).schema()},
             {"figures", Columns<FigureView>(kFigureColumns).schema()},
             {"models", Columns<ModelSummary>(kModelColumns).schema()},
             {"model_figures", Columns<ModelFigure>(kModelFigureColumns).schema()},
             {"documents", Columns<DocumentRow>(kDocumentColumns).schema()}},
            Columns<ReportResults>(kFieldColumns).schema()};
}

}  // namespace gpumem::cli
