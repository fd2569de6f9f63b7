// gpumem report: merges gpumem JSON documents (files, folders, globs, stdin) from
// many hosts and ranks into one fleet table, flags GPUs well below the
// median of their model and failed checks, and exits 7 when anything failed.
// It never touches a driver: it runs anywhere the documents are.
#include <unistd.h>

#include "base/errors.hpp"
#include "cli/output.hpp"
#include "cli/commands.hpp"
#include "core/fleet_input.hpp"
#include "report/report.hpp"

namespace gpumem::cli {
namespace {

struct ReportOptionsCli {
    std::vector<std::string> inputs;
    double outlier_fraction = 0.10;
    bool strict = false;
    bool drain_list = false;
};

void add_options(CLI::App& sub, ReportOptionsCli& o) {
    sub.add_option("INPUT", o.inputs,
                   "gpumem JSON documents or JSON Lines, gzipped or not: FILE, DIR (its *.json, *.jsonl and their .gz), "
                   "a quoted glob PATTERN (expanded by gpumem), or - for stdin (the default)")
        ->type_name("FILE|DIR|PATTERN|-");
    add_value_option(sub, "--outlier-fraction", o.outlier_fraction,
                     "Flag a GPU whose figure is more than this share below the median of its model's GPUs (0 < F < 1)",
                     ValueKind::fraction, 0.0, 1.0)
        ->capture_default_str()
        ->default_str("0.1");
    sub.add_flag("--strict", o.strict, "A warned check, or one that could not run, counts as failed (as check --strict does)");
    sub.add_flag("--drain-list", o.drain_list,
                 "Print only the nodes to drain, one 'HOST<TAB>REMEDIATION: reason' line each (with --json: a \"drain\" array)");
}

ReportRequest check(const ReportOptionsCli& o, const Globals& /*globals*/) {
    if (!(o.outlier_fraction > 0.0 && o.outlier_fraction < 1.0))
        throw UsageError("--outlier-fraction must be above 0 and below 1 (0.1: 10% below the median)");
    for (const std::string& input : o.inputs)
        if (input.empty()) throw UsageError("an empty input name (give FILE, a PATTERN or -)");
    return {o.inputs, {o.outlier_fraction, o.strict}, o.drain_list};
}

void execute(const ReportRequest& q, ReportResults& results, Session& session) {
    // Waiting on a terminal for documents nobody will type would look hung.
    if (q.inputs.empty() && isatty(STDIN_FILENO) == 1)
        throw UsageError("no input: name FILEs or PATTERNs, or pipe documents to stdin");
    results.options = q.options;
    results.fleet = fleet::read_fleet(q.inputs, kSchemaVersion, q.options);
    results.merged = true;
    // Nothing read is nothing passed: a script that globbed the wrong folder
    // (reuse-sim documents, say) must not be told the fleet is fine. The
    // notes (stderr) say what each document was.
    if (results.fleet.rows.empty()) {
        const std::size_t n = results.fleet.documents.size();
        throw UsageError("no GPU rows in " + std::to_string(n) + (n == 1 ? " document" : " documents") +
                         ": report reads the GPUs of " + fleet::gpu_commands_text() +
                         " documents, and every error document; name the files or folders gpumem check wrote");
    }
    const Format format = session.output().format;
    if (q.drain_list && (format == Format::table || format == Format::value)) {
        session.write(drain_list_text(results.fleet));
        session.final_document_written();
    }
    if (results.fleet.failed()) throw CheckFailedError(fleet_failure_summary(results.fleet));
}

}  // namespace

constexpr CommandDefinition kReportCommand{
    [] { return make_command(CommandFunctions<ReportOptionsCli, ReportRequest, ReportResults>{add_options, check, execute, fleet_report}); },
    report_schema,
    {},
    {},
    "-d selects devices, and report reads documents: filter them (e.g. with jq) instead"};

}  // namespace gpumem::cli
