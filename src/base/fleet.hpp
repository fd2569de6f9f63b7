// gpumem report's pure logic: gpumem JSON documents from many hosts and
// ranks (check, info, copy, memset, any command's error document), read
// into what each says about each GPU, then merged into one fleet: a row per
// GPU (or per rank that could not run), outliers against the median of the
// GPUs of the same model, and a summary per model. No I/O here but
// fleet_input.cpp's; the command (subcommands/report.cpp) renders it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check_plan.hpp"
#include "base/name_table.hpp"

namespace gpumem::fleet {

// A check's verdict, as `gpumem check` writes it: check's own table.
using gpumem::kVerdicts;
using gpumem::Verdict;
using gpumem::kRemediations;
using gpumem::Remediation;

// A fleet row's status, worst first: what an operator looks at first.
// unknown: a check could not run (and none failed).
enum class RowStatus { error, fail, unknown, outlier, warn, ok };
extern const NameTable<RowStatus> kRowStatuses;

// The "origin" stamp of a document: who wrote it.
struct DocOrigin {
    std::string host;  // empty: the document has no origin (gpumem before origin stamps)
    std::string launcher;
    std::optional<std::string> job_id;
    std::optional<std::uint64_t> rank, local_rank, world_size;
};

// A higher-is-better figure, comparable between GPUs of one model.
struct Figure {
    std::string name;  // "copy.h2d" (a check), "copy.h2d (pinned, ce, 256 MiB)" (a copy result)
    double value = 0;
    std::string unit;
};

struct CheckResult {
    std::string check;
    Verdict verdict = Verdict::pass;
    // The document's, or for a document without one (gpumem before
    // remediations) the check's default for its verdict.
    Remediation remediation = Remediation::none;
    // Whether this gpumem has a row for the id (a renamed or newer check has
    // none: counted as written, and named once in the fleet's notes).
    bool known = true;
};

// What one document says about one GPU.
struct GpuFacts {
    std::optional<std::int64_t> index;  // CUDA index in the writer's process
    std::optional<std::string> uuid, name;
    std::optional<std::uint64_t> free, total;
    std::optional<Verdict> verdict;  // check's devices table
    std::vector<CheckResult> checks;
    std::vector<Figure> figures;
};

struct DocError {
    std::int64_t status = 1;
    std::string code, message;
};

// One input document, read.
struct Document {
    std::string source;  // "FILE:LINE" where it starts
    std::string command;
    DocOrigin origin;
    std::optional<DocError> error;  // ok: false
    bool strict = false;            // check --strict: its warnings failed that run
    std::vector<GpuFacts> gpus;
};

// The largest document read (gpumem's are kilobytes; a loop's JSON Lines
// are a document per line) and the deepest nesting accepted: input beyond
// either is refused before it costs memory or stack.
inline constexpr std::size_t kMaxDocumentBytes = 16u << 20;
inline constexpr int kMaxDocumentDepth = 64;

// Parses and reads one JSON value `text` that starts on line `line` of its
// source. Throws LineError: malformed JSON (the line of the fault), not a
// gpumem document, a report's own document, a schema_version newer than
// `max_schema_version`, a key of the wrong type.
Document parse_document(std::string_view text, std::size_t line, int max_schema_version);
// Whether report reads GPUs from a document of `command` (check, info,
// copy, memset), and those commands in words: "check, info, copy and memset".
bool reads_gpus_of(std::string_view command) noexcept;
std::string gpu_commands_text();

// A fault in the input at a line of its source; the reader adds the source.
class LineError : public UsageError {
public:
    LineError(std::size_t line, const std::string& reason) : UsageError(reason), line_(line) {}
    std::size_t line() const noexcept { return line_; }

private:
    std::size_t line_;
};

struct ReportOptions {
    double outlier_fraction = 0.10;  // flag a figure this fraction below its model's median
    bool strict = false;             // warned checks count as failed
};

// One row of the fleet table: a GPU, or a rank whose documents name none.
struct GpuRow {
    std::string host;
    std::optional<std::int64_t> index;
    std::optional<std::string> uuid, name;
    std::optional<std::string> job_id;
    std::optional<std::uint64_t> rank, local_rank;
    std::optional<Verdict> verdict;  // worst check verdict; none: no check document
    std::vector<std::string> failed_checks, warned_checks, unknown_checks, outliers;
    // The checks that ask for something, with what (first the worst).
    std::vector<std::pair<std::string, Remediation>> remedies;
    // The worst of them; at least drain for a row that failed, could not be
    // checked or judged, or is an outlier.
    Remediation remediation = Remediation::none;
    std::optional<std::uint64_t> free, total;
    std::vector<std::string> error_codes, errors;  // "command: message"
    std::vector<std::string> commands, sources;
    std::vector<Figure> figures;  // the last document's value of each
    RowStatus status = RowStatus::ok;
};

// A figure of a row against its model's median.
struct FigureRow {
    std::size_t row = 0;  // index into Fleet::rows
    Figure figure;
    double median = 0;
    std::size_t peers = 0;  // GPUs of the model with this figure
    bool outlier = false;
    double below() const noexcept { return median > 0 ? 1.0 - figure.value / median : 0.0; }
};

struct ModelSummary {
    std::string name;
    std::size_t gpus = 0, checked = 0, passed = 0, warned = 0, failed = 0, unknown = 0, outliers = 0, errors = 0;
};

struct ModelFigure {
    std::string model, figure, unit;
    std::size_t count = 0, outliers = 0;
    double median = 0, min = 0, max = 0;
};

// A host: its GPUs' worst remediation, and whether to drain it (anything
// from drain up), with a one-line reason.
struct NodeRow {
    std::string host;
    std::size_t gpus = 0;   // rows of a GPU
    std::size_t ranks = 0;  // rows of a rank that found no GPU (its error documents)
    RowStatus status = RowStatus::ok;  // its worst row's
    Remediation remediation = Remediation::none;
    bool drain = false;
    std::string reason;  // "reset-gpu: GPU 0 nvml.remapped_rows.pending (reset-gpu); GPU 3 copy.h2d (drain)"
};

struct DocumentRow {
    std::string source, command;
    bool ok = true;
    std::optional<std::string> error_code;
    DocOrigin origin;
    std::size_t gpus = 0;
};

struct Fleet {
    std::vector<GpuRow> rows;
    std::vector<FigureRow> figures;
    std::vector<ModelSummary> models;
    std::vector<ModelFigure> model_figures;
    std::vector<DocumentRow> documents;
    std::vector<NodeRow> nodes;  // by host, in the rows' order
    std::vector<std::string> problems;  // one line each; none: the fleet passed
    // Warnings for stderr (and the JSON "warnings"), one line each: inputs
    // skipped (a FIFO in a folder), documents that name no GPU (a reuse-sim
    // document), check ids this gpumem does not know (once per id).
    std::vector<std::string> notes;
    bool failed() const noexcept { return !problems.empty(); }
};

// Documents merged as they are read, in input order (later documents'
// figures win); it keeps a row per GPU, not the documents.
class FleetMerger {
public:
    FleetMerger();
    ~FleetMerger();
    FleetMerger(const FleetMerger&) = delete;
    FleetMerger& operator=(const FleetMerger&) = delete;
    void add(Document&& d);
    // The fleet, once every document is in.
    Fleet finish(const ReportOptions& options);

private:
    class State;
    std::unique_ptr<State> state_;
};

// The fleet of `documents`, in input order (later documents' figures win).
Fleet merge_fleet(const std::vector<Document>& documents, const ReportOptions& options);

// "node2" < "node10": host names compared with their numbers as numbers.
bool natural_less(std::string_view a, std::string_view b) noexcept;


}  // namespace gpumem::fleet
