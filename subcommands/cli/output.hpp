// The one output layer. A command's report() turns its typed results into a
// Report through column tables (Column<Row>: a key, a header, a kind and how
// to read the value from a row), declared once per result type; this file
// renders a Report as an aligned table, one JSON document, CSV or bare
// values, and derives each command's JSON schema from the same columns.
// Rendering returns strings: only writer.cpp touches stdout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <functional>
#include <initializer_list>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/launcher.hpp"
#include "base/name_table.hpp"
#include "base/sizes.hpp"
#include "cli/terminal.hpp"

namespace gpumem::cli {

// JSON documents keep keys in the order they were set.
using Json = nlohmann::ordered_json;

enum class Format { table, json, csv, value, prometheus, nagios, npd };

// A set of formats: those a command offers beyond the ones every command
// takes (CommandDefinition::formats).
class Formats {
public:
    constexpr Formats() noexcept = default;
    constexpr Formats(std::initializer_list<Format> formats) noexcept {
        for (Format f : formats) bits_ |= bit(f);
    }
    constexpr bool has(Format format) const noexcept { return (bits_ & bit(format)) != 0; }

private:
    static constexpr unsigned bit(Format format) noexcept { return 1U << static_cast<unsigned>(format); }
    unsigned bits_ = 0;
};

// What a format is, beside its name and help: a row each in kFormats
// (output.cpp), so that a new format is its row and its case in render().
struct FormatSpec {
    Format format = Format::table;
    // Offered by every command; else only by a command whose definition
    // names it (CommandDefinition::formats), a usage error elsewhere.
    bool every_command = true;
    // All of stdout is one document, written once (JSON, an exposition, a
    // plugin's line): a failure writes no partial results before its own.
    bool one_document = false;
    // A monitoring plugin's format: report() fills Report::plugin, one line
    // and its own exit status. A run that reached no verdict (a usage error,
    // no GPU) writes plugin_error's line instead and exits plugin_unknown.
    std::string (*plugin_error)(const Error& error) = nullptr;
    int plugin_unknown = 0;
    constexpr bool plugin() const noexcept { return plugin_error != nullptr; }
};
extern const NameTable<FormatSpec> kFormats;
const FormatSpec& format_spec(Format format) noexcept;
std::string_view format_name(Format format) noexcept;

// The width of human output where none is known (a pipe, a file, a test's
// render()): OutputOptions::columns.
inline constexpr std::size_t kTableColumns = 100;

struct OutputOptions {
    Format format = Format::table;
    Unit unit = Unit::automatic;
    bool header = true;
    bool compact_json = false;  // one document per line (loops)
    // Table format: the width every line keeps within, the terminal's on a
    // terminal, kTableColumns in a pipe or a file (terminal_columns()).
    // Prose (Report::text_before, text_after) wraps at words; a table drops
    // its least useful columns (Table::drop_order), wraps its wrapping
    // columns, else turns into records.
    std::size_t columns = kTableColumns;
    // --wide: every column of every table, as wide as it gets (prose still
    // wraps at `columns`).
    bool wide = false;
    // The terminals the run writes to (check_globals sets it once, from
    // terminal_screen(); `columns` is its stdout_columns): where progress,
    // warnings, charts and the lines a command writes to stderr take their
    // width and their characters from.
    Screen screen{};
};

// How a value is shown. JSON numbers keep their base unit: bytes as bytes,
// bandwidth (held as bytes/s) as GB/s (the key says so), times in the key's
// unit. list, record and records exist in JSON only.
enum class FieldKind { text, integer, real, bytes, bandwidth, percent, boolean, list, record, records };

struct Field {
    std::string_view key;     // JSON key and CSV header
    std::string_view header;  // table header
    FieldKind kind = FieldKind::text;
    int decimals = 2;         // real and percent
    // Table format: a text column whose cells break into lines after this
    // character (else anywhere) when the table would be wider than
    // OutputOptions::columns; 0: never.
    char wrap_after = 0;
};

struct Record;
using RecordList = std::vector<Record>;
// One value: a scalar of a table cell or a JSON field, or (JSON only) a list
// of numbers (reals or integers) or strings, a nested record or a list of records.
using Cell = std::variant<std::monostate, std::string, std::int64_t, std::uint64_t, double, bool, std::vector<double>,
                          std::vector<std::string>, std::shared_ptr<const Record>, std::shared_ptr<const RecordList>,
                          std::vector<std::uint64_t>>;

// Keys and values in order; rendered as a JSON object.
struct Record {
    std::vector<std::pair<Field, Cell>> entries;
    void add(const Field& field, Cell value) { entries.emplace_back(field, std::move(value)); }
    bool empty() const noexcept { return entries.empty(); }
};
Cell record_cell(Record record);
Cell records_cell(RecordList records);

struct Table {
    std::string_view key;  // name of the JSON array
    std::vector<Field> fields;
    std::vector<std::vector<Cell>> rows;
    // Table format: each row as a block, its first cell on a line of its own
    // and every other field below it as "header: value", wrapped at words
    // within OutputOptions::columns; for lists whose columns cannot share a
    // line (--list checks). JSON, CSV and values are the same either way.
    // A table that is still wider than the width after drop_order and its
    // wrapping columns turns into records too (not with --wide).
    bool as_records = false;
    // Table format: the keys of the columns left out, in this order, while
    // the table is wider than OutputOptions::columns: the least useful
    // first. A line under the table names those left out; --wide and the
    // machine formats keep them.
    std::vector<std::string_view> drop_order;
    // Table format: the last field on lines of its own under each row (its
    // header under the others'), indented and wrapped after its wrap_after
    // within the width: for a text too long to share a line with the figures.
    bool last_below = false;

    void add_row(std::vector<Cell> row) { rows.push_back(std::move(row)); }
};

// Prometheus text exposition (format 0.0.4, what node_exporter's textfile
// collector reads). A command that offers `--format prometheus` fills
// Report::metrics in report(); the renderer adds the origin's labels (host,
// job_id, rank...) to every sample and writes # HELP and # TYPE once per family.
enum class MetricType { gauge, counter };
struct MetricSample {
    std::vector<std::pair<std::string, std::string>> labels;  // name, value (escaped by the renderer)
    double value = 0;
};
struct MetricFamily {
    std::string name;  // gpumem_memory_free_bytes: base units, Prometheus conventions
    std::string help;
    MetricType type = MetricType::gauge;
    std::vector<MetricSample> samples;
};

struct Report {
    std::string command;
    std::vector<Table> tables;
    Record fields;                         // JSON: top-level keys after the tables
    std::vector<std::string> text_before;  // table mode: lines printed above the tables
    std::vector<std::string> text_after;   // table mode: lines printed below the tables
    std::vector<std::string> warnings;     // JSON: "warnings" array (also logged to stderr)
    // JSON: "origin", after "ok", when not empty: the host, and the launcher's
    // rank and job, of the process that wrote the document (origin_record).
    // The runner fills it; commands leave it alone.
    Record origin;
    // --format prometheus: the metric families (commands that offer it only).
    std::vector<MetricFamily> metrics;
    // The origin as labels for every sample; the runner fills it with origin.
    std::vector<std::pair<std::string, std::string>> metric_labels;
    // A monitoring plugin's output and its exit status.
    struct PluginOutput {
        int status = 3;
        std::string text;
    };
    // A plugin format's (FormatSpec::plugin; the commands that offer it
    // fill it for that format only): --format nagios, one status line with
    // performance data, 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN; --format
    // npd, node-problem-detector's custom plugin contract, one line of at
    // most kNpdLineBytes, 0 OK, 1 a problem, 2 unknown.
    std::optional<PluginOutput> plugin;
    // --plot FILE.svg (commands that offer it): the picture and where it
    // goes. The runner writes it before the document, so that a failure to
    // write it is the run's error (one JSON document, also then).
    struct PlotFile {
        std::string option;  // "--plot", for its errors
        std::string path;
        std::string svg;
        // Nothing to draw (no GPU, nothing measured): not written, so that
        // a run that failed leaves the file as it was (plot_file, plot.hpp).
        bool nothing_drawn = false;
    };
    std::optional<PlotFile> plot;

    bool has_rows() const noexcept;
};

// ---------------------------------------------------------------------------
// Column tables: a result type described once, read by report() and schema().

// Where a column appears: in every format, only in the human table, or only
// in machine formats (JSON, CSV, value).
enum class Shown { always, table_only, machine_only };

template <typename Row>
struct Column {
    Field field;
    Cell (*get)(const Row&);
    Shown shown = Shown::always;
    bool omit_null = false;  // records: leave the key out when the value is null
    // Fields of the nested record(s), for the schema (FieldKind::record/records).
    const struct FieldSchemaSet& (*nested)() = nullptr;
    // The values a text field takes, for the schema (a name table's names).
    std::vector<std::string_view> (*values)() = nullptr;
};

// A column table without its row type: what the schema is made from.
struct FieldSchema {
    Field field;
    bool omit_null = false;
    const struct FieldSchemaSet& (*nested)() = nullptr;
    std::vector<std::string_view> (*values)() = nullptr;
};
struct FieldSchemaSet {
    std::vector<FieldSchema> fields;
    // An object whose data name more keys than `fields` (a strategy's own
    // figures): the kind of their values. None: no other keys.
    std::optional<FieldKind> other_keys;
};

template <typename Row>
class Columns {
public:
    template <std::size_t N>
    constexpr Columns(const Column<Row> (&columns)[N]) noexcept : columns_(columns), size_(N) {}  // NOLINT(google-explicit-constructor)
    constexpr const Column<Row>* begin() const noexcept { return columns_; }
    constexpr const Column<Row>* end() const noexcept { return columns_ + size_; }

    FieldSchemaSet schema(Format format = Format::json) const {
        FieldSchemaSet set;
        for (const Column<Row>& c : *this)
            if (shown_in(c.shown, format)) set.fields.push_back({c.field, c.omit_null, c.nested, c.values});
        return set;
    }

    static bool shown_in(Shown shown, Format format) noexcept {
        return shown == Shown::always || (shown == Shown::table_only) == (format == Format::table);
    }

private:
    const Column<Row>* columns_;
    std::size_t size_;
};

// A column table's schema, built once: what a Column's `nested` points at
// for a record or a list of records.
template <const auto& kColumns>
const FieldSchemaSet& nested_schema() {
    static const FieldSchemaSet set = Columns(kColumns).schema();
    return set;
}

// A table of `rows` through `columns`, for `format`; `keep` may drop columns
// (those that mean nothing for these rows, such as peer columns without p2p).
template <typename Row, typename Keep>
Table make_table(std::string_view key, const Columns<Row>& columns, const std::vector<Row>& rows, Format format, Keep keep) {
    Table table;
    table.key = key;
    std::vector<const Column<Row>*> used;
    for (const Column<Row>& c : columns)
        if (Columns<Row>::shown_in(c.shown, format) && keep(c.field)) {
            used.push_back(&c);
            table.fields.push_back(c.field);
        }
    table.rows.reserve(rows.size());
    for (const Row& row : rows) {
        std::vector<Cell> cells;
        cells.reserve(used.size());
        for (const Column<Row>* c : used) cells.push_back(c->get(row));
        table.rows.push_back(std::move(cells));
    }
    return table;
}
template <typename Row>
Table make_table(std::string_view key, const Columns<Row>& columns, const std::vector<Row>& rows, Format format) {
    return make_table(key, columns, rows, format, [](const Field&) { return true; });
}

// The fields of `value` through `columns` (machine columns), as a record.
template <typename T>
Record make_record(const Columns<T>& columns, const T& value) {
    Record record;
    for (const Column<T>& c : columns) {
        if (!Columns<T>::shown_in(c.shown, Format::json)) continue;
        Cell cell = c.get(value);
        if (c.omit_null && std::holds_alternative<std::monostate>(cell)) continue;
        record.add(c.field, std::move(cell));
    }
    return record;
}
template <typename T>
RecordList make_records(const Columns<T>& columns, const std::vector<T>& values) {
    RecordList list;
    list.reserve(values.size());
    for (const T& v : values) list.push_back(make_record(columns, v));
    return list;
}
// Adds every field of `value` to `record`.
template <typename T>
void add_fields(Record& record, const Columns<T>& columns, const T& value) {
    for (auto& entry : make_record(columns, value).entries) record.entries.push_back(std::move(entry));
}

// ---------------------------------------------------------------------------
// A command's document, for `gpumem --schema` and the man page check.

struct DocumentSchema {
    std::string command;
    std::vector<std::pair<std::string_view, FieldSchemaSet>> tables;  // JSON arrays of rows
    FieldSchemaSet fields;                                            // top-level keys
};
// JSON Schema (draft 2020-12) of a command's document, success and failure.
Json schema_json(const DocumentSchema& schema);

// The origin stamp as a document's "origin" record (present fields only),
// and its fields for the schema.
Record origin_record(const Origin& origin);
const FieldSchemaSet& origin_schema();

// ---------------------------------------------------------------------------
// Rendering

std::string render(const Report& report, const OutputOptions& options);
// render() in pieces, each passed to `sink` as it is made: a JSON document
// is written a table row at a time, so that a report of 100 000 GPUs never
// exists as one DOM or one string (report --json held 3.3 GiB that way).
// The text is byte for byte render()'s.
using TextSink = std::function<void(std::string_view)>;
void render_to(const Report& report, const OutputOptions& options, const TextSink& sink);
// A plugin format's answer to an error: the report's own line where it has
// one (a check that failed is CRITICAL), else the format's line for a run
// with no verdict: --format nagios "GPUMEM UNKNOWN - message" (usage errors
// included, as the plugin guidelines ask), --format npd "UNKNOWN message".
std::string render_plugin_error(const Report& report, const Error& error, Format format);
// node-problem-detector cuts a plugin's stdout at max_output_length bytes,
// 80 by default: --format npd's line fits in it whole.
inline constexpr std::size_t kNpdLineBytes = 80;
// `text` on one line and within kNpdLineBytes: cut at a UTF-8 character's
// start, ended by "..." when cut.
std::string npd_line(std::string_view text);
// The report's metrics in the text exposition format, with gpumem_run_success
// (1, or 0 on failure) and gpumem_run_exit_status, so that a textfile
// collector's file says that the run failed as well as what it measured.
std::string render_prometheus(const Report& report, int exit_status);
// A metric or label name made legal: [a-zA-Z_:][a-zA-Z0-9_:]*, others as '_'.
std::string metric_name(std::string_view text);
// The JSON document for a failure, with whatever the report already holds.
std::string render_json_error(const Report& report, const Error& error, const OutputOptions& options);
// The same, a table row at a time (report --json of a fleet with a failure
// is an error document too).
void render_json_error_to(const Report& report, const Error& error, const OutputOptions& options, const TextSink& sink);
Json report_to_json(const Report& report);
Json cell_json(const Cell& cell, const Field& field);

// Cell rendered for humans / for machines (CSV and value).
std::string cell_text(const Cell& cell, const Field& field, Unit unit);
std::string cell_plain(const Cell& cell, const Field& field, Unit unit);
// A number held by a cell, whatever its type; NaN for non-numbers.
double cell_number(const Cell& cell) noexcept;
// Header of a field in CSV, with the unit where it is not the base unit.
std::string csv_header(const Field& field, Unit unit);

// Cell helpers for report code: nullopt becomes null.
template <typename T>
Cell optional_cell(const std::optional<T>& value) {
    return value ? Cell(*value) : Cell();
}

// Goes up when a key of any document changes meaning or goes away (gpumem
// --schema lists every key); new keys alone leave it.
inline constexpr int kSchemaVersion = 1;

}  // namespace gpumem::cli
