#include "cli/output.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "base/text.hpp"
#include "cli/width.hpp"
#include "version.hpp"

namespace gpumem::cli {
namespace {

std::string csv_escape(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

// Numbers in text cells: 0 for what is not a number.
double as_double(const Cell& cell) {
    const double v = cell_number(cell);
    return std::isnan(v) ? 0 : v;
}

Json record_json(const Record& record) {
    Json obj = Json::object();
    for (const auto& [field, value] : record.entries) obj[std::string(field.key)] = cell_json(value, field);
    return obj;
}

constexpr auto kReplaceInvalidUtf8 = nlohmann::ordered_json::error_handler_t::replace;

std::string dump(const Json& doc, bool compact) {
    return (compact ? doc.dump(-1, ' ', false, kReplaceInvalidUtf8) : doc.dump(2, ' ', false, kReplaceInvalidUtf8)) + "\n";
}

}  // namespace

Cell record_cell(Record record) { return std::make_shared<const Record>(std::move(record)); }
Cell records_cell(RecordList records) { return std::make_shared<const RecordList>(std::move(records)); }

bool Report::has_rows() const noexcept {
    return std::any_of(tables.begin(), tables.end(), [](const Table& t) { return !t.rows.empty(); });
}

double cell_number(const Cell& cell) noexcept {
    if (auto p = std::get_if<double>(&cell)) return *p;
    if (auto p = std::get_if<std::uint64_t>(&cell)) return static_cast<double>(*p);
    if (auto p = std::get_if<std::int64_t>(&cell)) return static_cast<double>(*p);
    return std::nan("");
}

Json cell_json(const Cell& cell, const Field& field) {
    if (std::holds_alternative<std::monostate>(cell)) return nullptr;
    if (auto p = std::get_if<std::string>(&cell)) return *p;
    if (auto p = std::get_if<bool>(&cell)) return *p;
    if (auto p = std::get_if<std::vector<std::string>>(&cell)) return *p;
    if (auto p = std::get_if<std::vector<std::uint64_t>>(&cell)) return *p;
    if (auto p = std::get_if<std::vector<double>>(&cell)) {
        Json list = Json::array();
        for (double v : *p) list.push_back(std::isfinite(v) ? Json(v) : Json(nullptr));
        return list;
    }
    if (auto p = std::get_if<std::shared_ptr<const Record>>(&cell)) return *p ? record_json(**p) : Json(nullptr);
    if (auto p = std::get_if<std::shared_ptr<const RecordList>>(&cell)) {
        Json list = Json::array();
        if (*p)
            for (const Record& r : **p) list.push_back(record_json(r));
        return list;
    }
    if (field.kind == FieldKind::bandwidth) {  // GB/s, whichever type holds the bytes/s
        const double v = cell_number(cell);
        return std::isfinite(v) ? Json(v / 1e9) : Json(nullptr);
    }
    if (auto p = std::get_if<std::uint64_t>(&cell)) return *p;
    if (auto p = std::get_if<std::int64_t>(&cell)) return *p;
    const double v = std::get<double>(cell);
    if (!std::isfinite(v)) return nullptr;
    return v;
}

namespace {

// Machine-format number of bytes in a unit: whole numbers up to MiB/MB (as
// nvidia-smi prints MiB), three decimals above.
std::string bytes_plain(std::uint64_t bytes, Unit unit) {
    if (unit == Unit::automatic || unit == Unit::B) return std::to_string(bytes);
    if (unit_bytes(unit) <= (1ULL << 20)) return std::to_string(bytes / unit_bytes(unit));
    return format_decimal(bytes_in_unit(bytes, unit), 3);
}

// Lists and records in a table or CSV cell (not used by any table today).
std::string nested_text(const Cell& cell) {
    if (auto p = std::get_if<std::vector<std::string>>(&cell)) {
        std::string s;
        for (const auto& v : *p) s += (s.empty() ? "" : ";") + v;
        return s;
    }
    if (auto p = std::get_if<std::vector<double>>(&cell)) {
        std::string s;
        for (double v : *p) s += (s.empty() ? "" : ";") + format_decimal(v, 6);
        return s;
    }
    return cell_json(cell, Field{}).dump();
}

bool is_nested(const Cell& cell) noexcept { return cell.index() >= 6; }

}  // namespace

namespace {

std::string usage_prefix(const Error& error) { return error.status() == ExitStatus::usage_error ? "usage error: " : ""; }
std::string nagios_unknown(const Error& error) { return "GPUMEM UNKNOWN - " + usage_prefix(error) + one_line(error.what()) + "\n"; }
std::string npd_unknown(const Error& error) { return npd_line("UNKNOWN " + usage_prefix(error) + error.what()) + "\n"; }

// Every format: name, what it is to the runner, help.
constexpr Named<FormatSpec> kFormatRows[] = {
    {"table", {Format::table}, "an aligned table for people (the default)"},
    {"json", {Format::json, true, true}, "one JSON document (JSON Lines when repeating)"},
    {"csv", {Format::csv}, "CSV with a header line, units in the headers"},
    {"value", {Format::value}, "bare tab-separated values of the first table, for shell variables"},
    {"prometheus", {Format::prometheus, false, true},
     "Prometheus text exposition, for node_exporter's textfile collector (info, check)"},
    {"nagios", {Format::nagios, false, true, nagios_unknown, 3},
     "a Nagios plugin's status line with performance data, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (check)"},
    {"npd", {Format::npd, false, true, npd_unknown, 2},
     "a node-problem-detector custom plugin's line of at most 80 bytes, exit 0 OK, 1 a problem, 2 unknown (check)"},
};

}  // namespace

const NameTable<FormatSpec> kFormats{"format", kFormatRows};

const FormatSpec& format_spec(Format format) noexcept {
    for (const Named<FormatSpec>& row : kFormats)
        if (row.value.format == format) return row.value;
    return kFormatRows[0].value;
}

std::string_view format_name(Format format) noexcept {
    for (const Named<FormatSpec>& row : kFormats)
        if (row.value.format == format) return row.name;
    return "?";
}

std::string cell_text(const Cell& cell, const Field& field, Unit unit) {
    if (std::holds_alternative<std::monostate>(cell)) return "-";
    if (is_nested(cell)) return nested_text(cell);
    if (auto p = std::get_if<std::string>(&cell)) return *p;
    if (auto p = std::get_if<bool>(&cell)) return *p ? "yes" : "no";
    switch (field.kind) {
        case FieldKind::bytes: return format_bytes(static_cast<std::uint64_t>(std::round(std::max(0.0, as_double(cell)))), unit);
        case FieldKind::bandwidth: return format_bandwidth(as_double(cell), unit);
        case FieldKind::percent: return format_decimal(as_double(cell), field.decimals) + "%";
        case FieldKind::real: return format_decimal(as_double(cell), field.decimals);
        default: break;
    }
    if (auto p = std::get_if<std::uint64_t>(&cell)) return std::to_string(*p);
    if (auto p = std::get_if<std::int64_t>(&cell)) return std::to_string(*p);
    return format_decimal(as_double(cell), field.decimals);
}

std::string cell_plain(const Cell& cell, const Field& field, Unit unit) {
    if (std::holds_alternative<std::monostate>(cell)) return "";
    if (is_nested(cell)) return nested_text(cell);
    if (auto p = std::get_if<std::string>(&cell)) return *p;
    if (auto p = std::get_if<bool>(&cell)) return *p ? "true" : "false";
    switch (field.kind) {
        case FieldKind::bytes:
            if (auto p = std::get_if<std::uint64_t>(&cell)) return bytes_plain(*p, unit);
            return bytes_plain(static_cast<std::uint64_t>(std::round(std::max(0.0, as_double(cell)))), unit);
        case FieldKind::bandwidth: return format_decimal(bandwidth_in_unit(as_double(cell), unit), 3);
        case FieldKind::percent:
        case FieldKind::real: return format_decimal(as_double(cell), std::max(field.decimals, 3));
        default: break;
    }
    if (auto p = std::get_if<std::uint64_t>(&cell)) return std::to_string(*p);
    if (auto p = std::get_if<std::int64_t>(&cell)) return std::to_string(*p);
    return format_decimal(as_double(cell), 6);
}

std::string csv_header(const Field& field, Unit unit) {
    if (field.kind == FieldKind::bytes && unit != Unit::automatic && unit != Unit::B)
        return std::string(field.key) + " [" + unit_name(unit) + "]";
    if (field.kind == FieldKind::bandwidth) return std::string(field.key) + " [" + bandwidth_unit_name(unit) + "]";
    return std::string(field.key);
}

namespace {

// A row's cells as lines: a wrapped cell's lines below the row's first,
// the other cells empty there.
std::vector<std::vector<std::string>> row_lines(const std::vector<std::string>& texts) {
    std::vector<std::vector<std::string>> lines;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        std::size_t k = 0;
        for (std::size_t start = 0;; ++k) {
            const std::size_t end = texts[i].find('\n', start);
            if (lines.size() <= k) lines.emplace_back(texts.size());
            lines[k][i] = texts[i].substr(start, end == std::string::npos ? std::string::npos : end - start);
            if (end == std::string::npos) break;
            start = end + 1;
        }
    }
    return lines;
}

// Columns `width` side by side, two spaces apart.
std::size_t total_width(const std::vector<std::size_t>& width) {
    std::size_t total = width.empty() ? 0 : 2 * (width.size() - 1);
    for (std::size_t x : width) total += x;
    return total;
}

// The wrapping columns among `fields` (Field::wrap_after) narrowed, the
// widest first, to keep the table within `limit` (none below 10 columns);
// `width` and `cells` as rendered.
void wrap_table_cells(const std::vector<const Field*>& fields, std::size_t limit, std::vector<std::size_t>& width,
                      std::vector<std::vector<std::string>>& cells) {
    constexpr std::size_t kNarrowest = 10;
    const std::size_t count = fields.size();
    // A column narrowed again is wrapped anew from its cells as they were,
    // not from lines an earlier pass already broke.
    const std::vector<std::vector<std::string>> unwrapped = cells;
    for (;;) {
        const std::size_t total = total_width(width);
        if (total <= limit) return;
        // The widest column that may still wrap narrower.
        std::size_t w = count;
        for (std::size_t i = 0; i < count; ++i)
            if (fields[i]->wrap_after != 0 && width[i] > kNarrowest && (w == count || width[i] > width[w])) w = i;
        if (w == count) return;
        const std::size_t columns = std::max(kNarrowest, width[w] - std::min(width[w], total - limit));
        const std::size_t before = width[w];
        width[w] = display_width(fields[w]->header);
        for (std::size_t r = 0; r < cells.size(); ++r) {
            std::string& cell = cells[r][w];
            cell = wrap_after(unwrapped[r][w], columns, fields[w]->wrap_after);
            width[w] = std::max(width[w], widest_line(cell));
        }
        if (width[w] >= before) return;  // a word longer than the room: no narrower
    }
}

// Table::as_records: a row a block, "header: value" lines under its first
// cell, within `limit`.
void render_records(std::ostream& out, const Table& table, const OutputOptions& options, std::size_t limit) {
    const std::string indent(4, ' ');
    const std::size_t room = limit - std::min(limit, indent.size());
    bool first = true;
    for (const auto& row : table.rows) {
        if (!first) out << '\n';
        first = false;
        for (std::size_t i = 0; i < table.fields.size() && i < row.size(); ++i) {
            const Field& field = table.fields[i];
            const std::string text = cell_text(row[i], field, options.unit);
            if (i == 0) {
                out << fit_prose(text, limit) << '\n';
            } else if (!text.empty()) {
                // Wrapped within the room after the indent, where the field
                // breaks (words, else after its character); continuation
                // lines two further in.
                const std::string line = std::string(field.header) + ": " + text;
                if (field.wrap_after == 0 || field.wrap_after == ' ')
                    out << indented(cut_lines(wrap_words(line, room, 2), room), indent, 0) << '\n';
                else {
                    // The value below its header when an item of it would not fit beside it.
                    const std::size_t narrower = room - std::min<std::size_t>(room, 2);
                    std::string lines = wrap_after(line, narrower, field.wrap_after);
                    if (widest_line(lines) > narrower) lines = std::string(field.header) + ":\n" + wrap_after(text, narrower, field.wrap_after);
                    out << indented(cut_lines(lines, narrower), indent, 2) << '\n';
                }
            }
        }
    }
}

// The columns `shown` (indices of the table's fields) of every row's
// texts, their widths, the wrapping ones narrowed to keep within `limit`.
struct TableLayout {
    std::vector<const Field*> fields;
    std::vector<std::size_t> width;
    std::vector<std::vector<std::string>> cells;
};
TableLayout lay_out(const Table& table, const std::vector<std::vector<std::string>>& texts, const std::vector<std::size_t>& shown,
                    std::size_t limit) {
    TableLayout t;
    for (std::size_t i : shown) {
        t.fields.push_back(&table.fields[i]);
        t.width.push_back(display_width(table.fields[i].header));
    }
    for (const auto& row : texts) {
        std::vector<std::string> cells;
        for (std::size_t k = 0; k < shown.size(); ++k) {
            cells.push_back(row[shown[k]]);
            t.width[k] = std::max(t.width[k], widest_line(cells.back()));
        }
        t.cells.push_back(std::move(cells));
    }
    wrap_table_cells(t.fields, limit, t.width, t.cells);
    return t;
}

// One table, its columns aligned (a wrapped cell over several lines),
// within options.columns: its least useful columns left out (drop_order)
// while it is wider, then as records; --wide: every column, however wide.
void render_table(std::ostream& out, const Table& table, const OutputOptions& options) {
    const std::size_t limit = options.columns;
    if (table.as_records) return render_records(out, table, options, limit);
    // Table::last_below: the last field is not a column.
    const std::size_t count = table.fields.size() - (table.last_below && !table.fields.empty() ? 1 : 0);
    const std::string below_indent(4, ' ');
    std::vector<std::vector<std::string>> texts;
    std::vector<std::string> below;
    for (const auto& row : table.rows) {
        std::vector<std::string> cells;
        for (std::size_t i = 0; i < count; ++i) cells.push_back(i < row.size() ? cell_text(row[i], table.fields[i], options.unit) : "");
        texts.push_back(std::move(cells));
        if (count < table.fields.size()) {
            const Field& field = table.fields.back();
            const std::string text = count < row.size() ? cell_text(row[count], field, options.unit) : "";
            // Each of its lines (a text may hold several) wrapped, going on
            // two further in.
            const std::size_t room = limit - std::min(limit, below_indent.size() + 2);
            std::string lines;
            for (std::string_view line : split(text, '\n')) {
                const std::string piece(line);
                const std::string wrapped = field.wrap_after == 0 || field.wrap_after == ' ' ? wrap_words(piece, room)
                                                                                              : wrap_after(piece, room, field.wrap_after);
                lines += (lines.empty() ? "" : "\n") + indented(cut_lines(wrapped, room), "", 2);
            }
            below.push_back(lines);
        }
    }
    std::vector<std::size_t> shown(count);
    for (std::size_t i = 0; i < count; ++i) shown[i] = i;
    const std::size_t room = options.wide ? std::numeric_limits<std::size_t>::max() : limit;
    TableLayout layout = lay_out(table, texts, shown, room);
    std::vector<std::string> left_out;
    for (std::string_view key : table.drop_order) {
        if (options.wide || total_width(layout.width) <= limit) break;
        const auto it = std::find_if(shown.begin(), shown.end(), [&](std::size_t i) { return table.fields[i].key == key; });
        if (it == shown.end()) continue;
        // By its header, or by its key where the header is not its own (p90 of alloc and of free).
        const Field& field = table.fields[*it];
        const auto same = std::count_if(table.fields.begin(), table.fields.end(), [&](const Field& f) { return f.header == field.header; });
        left_out.emplace_back(same == 1 ? field.header : field.key);
        shown.erase(it);
        layout = lay_out(table, texts, shown, limit);
    }
    if (!options.wide && total_width(layout.width) > limit) return render_records(out, table, options, limit);
    auto emit_line = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const bool left = layout.fields[i]->kind == FieldKind::text;
            const std::string pad(layout.width[i] - std::min(layout.width[i], display_width(cells[i])), ' ');
            if (i) line += "  ";
            line += left ? cells[i] + pad : pad + cells[i];
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
    };
    auto emit = [&](const std::vector<std::string>& cells) {
        for (const auto& line : row_lines(cells)) emit_line(line);
    };
    if (options.header) {
        std::vector<std::string> headers;
        for (const Field* field : layout.fields) headers.emplace_back(field->header);
        emit(headers);
        if (count < table.fields.size()) out << below_indent << table.fields.back().header << '\n';
    }
    for (std::size_t r = 0; r < layout.cells.size(); ++r) {
        emit(layout.cells[r]);
        if (r < below.size() && !below[r].empty()) out << indented(below[r], below_indent, 0) << '\n';
    }
    if (!left_out.empty())
        out << fit_prose("(" + join(left_out) + ": left out at " + std::to_string(limit) + " columns; --wide or --json shows " +
                             (left_out.size() == 1 ? "it" : "them") + ")",
                         limit)
            << '\n';
}

Cell count_cell(const std::optional<unsigned>& value) { return value ? Cell(std::uint64_t{*value}) : Cell(); }

constexpr Column<Origin> kOriginColumns[] = {
    {{"host", "Host", FieldKind::text}, [](const Origin& o) -> Cell { return o.host; }},
    {{"launcher", "Launcher", FieldKind::text},
     [](const Origin& o) -> Cell { return o.launcher.empty() ? Cell() : Cell(std::string(o.launcher)); }, Shown::always, true,
     nullptr, launcher_names},
    {{"job_id", "Job", FieldKind::text}, [](const Origin& o) { return optional_cell(o.job_id); }, Shown::always, true},
    {{"rank", "Rank", FieldKind::integer}, [](const Origin& o) { return count_cell(o.rank); }, Shown::always, true},
    {{"local_rank", "Local rank", FieldKind::integer}, [](const Origin& o) { return count_cell(o.local_rank); }, Shown::always,
     true},
    {{"world_size", "Ranks", FieldKind::integer}, [](const Origin& o) { return count_cell(o.world_size); }, Shown::always, true},
};

}  // namespace

Record origin_record(const Origin& origin) { return make_record(Columns<Origin>(kOriginColumns), origin); }

const FieldSchemaSet& origin_schema() { return nested_schema<kOriginColumns>(); }

namespace {

Json table_row_json(const Table& table, const std::vector<Cell>& row) {
    Json obj = Json::object();
    for (std::size_t i = 0; i < table.fields.size() && i < row.size(); ++i)
        obj[std::string(table.fields[i].key)] = cell_json(row[i], table.fields[i]);
    return obj;
}

}  // namespace

namespace {

// The members of a document in order: a table's value is its rows, made
// when written. The one list both the DOM and the streamed text come from.
struct DocumentMember {
    std::string key;
    Json value;
    const Table* table = nullptr;
};

std::vector<DocumentMember> document_members(const Report& report, const Json* error) {
    std::vector<DocumentMember> members;
    members.push_back({"schema_version", kSchemaVersion});
    members.push_back({"tool", "gpumem"});
    members.push_back({"version", GPUMEM_VERSION});
    members.push_back({"command", report.command});
    members.push_back({"ok", error == nullptr});
    if (!report.origin.empty()) members.push_back({"origin", record_json(report.origin)});
    for (const Table& table : report.tables) members.push_back({std::string(table.key), nullptr, &table});
    for (const auto& [field, value] : report.fields.entries) members.push_back({std::string(field.key), cell_json(value, field)});
    if (!report.warnings.empty()) members.push_back({"warnings", report.warnings});
    if (error != nullptr) members.push_back({"error", *error});
    return members;
}

// The DOM of the members; a key given twice is one member, where it came
// first, holding the last value.
Json members_json(const std::vector<DocumentMember>& members) {
    Json doc = Json::object();
    for (const DocumentMember& m : members) {
        if (m.table == nullptr) {
            doc[m.key] = m.value;
            continue;
        }
        Json rows = Json::array();
        for (const auto& row : m.table->rows) rows.push_back(table_row_json(*m.table, row));
        doc[m.key] = std::move(rows);
    }
    return doc;
}

}  // namespace

Json report_to_json(const Report& report) { return members_json(document_members(report, nullptr)); }

namespace {

// A Nagios plugin's output: its status line, ended by a newline.
std::string nagios_text(const Report& report) {
    if (!report.plugin) return "";
    const std::string& text = report.plugin->text;
    return text.empty() || text.back() != '\n' ? text + "\n" : text;
}

// A node-problem-detector plugin's output: its one line, ended by a newline
// (NPD trims it before cutting at max_output_length).
std::string npd_text(const Report& report) { return report.plugin ? npd_line(report.plugin->text) + "\n" : ""; }

}  // namespace

namespace {

// A JSON member's value as nlohmann prints it `depth` levels in: every line
// after the first indented by two spaces a level (a string holds no raw
// newline, so each one is the printer's).
void append_nested(std::string& out, const Json& value, bool compact, int depth) {
    const std::string text = compact ? value.dump(-1, ' ', false, kReplaceInvalidUtf8) : value.dump(2, ' ', false, kReplaceInvalidUtf8);
    if (compact) {
        out += text;
        return;
    }
    const std::string indent(static_cast<std::size_t>(2 * depth), ' ');
    for (char c : text) {
        out += c;
        if (c == '\n') out += indent;
    }
}

// report_to_json's document, printed as dump() prints it, a member at a
// time and each table a row at a time; handed to `sink` about every MiB.
void stream_json(const Report& report, bool compact, const TextSink& sink, const Json* error = nullptr) {
    const std::vector<DocumentMember> members = document_members(report, error);
    // A key given twice: the DOM says where it stands and what it holds.
    std::vector<std::string> keys;
    keys.reserve(members.size());
    for (const DocumentMember& m : members) keys.push_back(m.key);
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) {
        sink(dump(members_json(members), compact));
        return;
    }
    std::string out = compact ? "{" : "{\n";
    constexpr std::size_t kChunk = 1U << 20;
    for (std::size_t m = 0; m < members.size(); ++m) {
        if (m > 0) out += compact ? "," : ",\n";
        if (!compact) out += "  ";
        out += Json(members[m].key).dump(-1, ' ', false, kReplaceInvalidUtf8);
        out += compact ? ":" : ": ";
        const Table* table = members[m].table;
        if (table == nullptr) {
            append_nested(out, members[m].value, compact, 1);
            continue;
        }
        if (table->rows.empty()) {
            out += "[]";
            continue;
        }
        out += compact ? "[" : "[\n";
        for (std::size_t r = 0; r < table->rows.size(); ++r) {
            if (r > 0) out += compact ? "," : ",\n";
            if (!compact) out += "    ";
            append_nested(out, table_row_json(*table, table->rows[r]), compact, 2);
            if (out.size() >= kChunk) {
                sink(out);
                out.clear();
            }
        }
        out += compact ? "]" : "\n  ]";
    }
    out += compact ? "}\n" : "\n}\n";
    sink(out);
}

}  // namespace

void render_to(const Report& report, const OutputOptions& options, const TextSink& sink) {
    if (options.format == Format::json) {
        stream_json(report, options.compact_json, sink);
        return;
    }
    sink(render(report, options));
}

std::string render(const Report& report, const OutputOptions& options) {
    std::ostringstream out;
    switch (options.format) {
        case Format::json: {
            stream_json(report, options.compact_json, [&out](std::string_view text) { out << text; });
            break;
        }
        case Format::csv: {
            bool first_table = true;
            for (const Table& table : report.tables) {
                if (!first_table) out << '\n';
                first_table = false;
                if (options.header) {
                    for (std::size_t i = 0; i < table.fields.size(); ++i)
                        out << (i ? "," : "") << csv_escape(csv_header(table.fields[i], options.unit));
                    out << '\n';
                }
                for (const auto& row : table.rows) {
                    for (std::size_t i = 0; i < table.fields.size(); ++i)
                        out << (i ? "," : "") << csv_escape(i < row.size() ? cell_plain(row[i], table.fields[i], options.unit) : "");
                    out << '\n';
                }
            }
            break;
        }
        case Format::prometheus: out << render_prometheus(report, 0); break;
        case Format::nagios: out << nagios_text(report); break;
        case Format::npd: out << npd_text(report); break;
        case Format::value: {
            // Bare values of the first table, tab-separated, one row per line.
            if (report.tables.empty()) break;
            const Table& table = report.tables.front();
            for (const auto& row : table.rows) {
                for (std::size_t i = 0; i < table.fields.size(); ++i)
                    out << (i ? "\t" : "") << (i < row.size() ? cell_plain(row[i], table.fields[i], options.unit) : "");
                out << '\n';
            }
            break;
        }
        case Format::table: {
            // Prose within the width, as the tables are.
            for (const std::string& line : report.text_before) out << fit_prose(line, options.columns) << '\n';
            bool first_table = true;
            for (const Table& table : report.tables) {
                if (!first_table) out << '\n';
                first_table = false;
                render_table(out, table, options);
            }
            for (const std::string& line : report.text_after) out << fit_prose(line, options.columns) << '\n';
            break;
        }
    }
    return out.str();
}


std::string render_plugin_error(const Report& report, const Error& error, Format format) {
    if (report.plugin) return render(report, OutputOptions{format});
    const FormatSpec& spec = format_spec(format);
    return spec.plugin() ? spec.plugin_error(error) : "";
}

std::string npd_line(std::string_view text) {
    std::string line = one_line(std::string(trim(text)));
    for (char& c : line)
        if (c == '\t') c = ' ';
    if (line.size() <= kNpdLineBytes) return line;
    // Room for "...", cut at a character's first byte: never inside a UTF-8
    // sequence (a continuation byte is 10xxxxxx), which would leave bad UTF-8.
    std::size_t cut = kNpdLineBytes - 3;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0U) == 0x80U) --cut;
    line.resize(cut);
    return line + "...";
}

void render_json_error_to(const Report& report, const Error& error, const OutputOptions& options, const TextSink& sink) {
    const Json what = {{"status", static_cast<int>(error.status())}, {"code", exit_status_name(error.status())}, {"message", error.what()}};
    stream_json(report, options.compact_json, sink, &what);
}

std::string render_json_error(const Report& report, const Error& error, const OutputOptions& options) {
    std::string text;
    render_json_error_to(report, error, options, [&text](std::string_view piece) { text += piece; });
    return text;
}

}  // namespace gpumem::cli

namespace gpumem::cli {
namespace {

// JSON Schema of one field's value. Every value may be null: a figure that
// was not measured, or that the GPU does not report, is null.
Json value_schema(const FieldSchema& f) {
    Json s = Json::object();
    auto nullable = [](const char* type) { return Json::array({type, "null"}); };
    switch (f.field.kind) {
        case FieldKind::text: s["type"] = nullable("string"); break;
        case FieldKind::integer:
        case FieldKind::bytes: s["type"] = nullable("integer"); break;
        case FieldKind::real:
        case FieldKind::percent:
        case FieldKind::bandwidth: s["type"] = nullable("number"); break;
        case FieldKind::boolean: s["type"] = nullable("boolean"); break;
        case FieldKind::list: s["type"] = "array"; break;
        case FieldKind::record: s["type"] = nullable("object"); break;
        case FieldKind::records: s["type"] = "array"; break;
    }
    if (f.values) {
        Json names = Json::array();
        for (std::string_view v : f.values()) names.push_back(std::string(v));
        names.push_back(nullptr);
        s["enum"] = names;
    }
    const bool header = !f.field.header.empty();
    if (f.field.kind == FieldKind::bytes) s["description"] = "bytes";
    if (f.field.kind == FieldKind::bandwidth) s["description"] = "GB/s (1e9 bytes/s)";
    // One convention: a share in a document is a percentage, 0 to 100 (an
    // option that takes a share reads 0.1 or 10%).
    if (f.field.kind == FieldKind::percent) s["description"] = "percent (0 to 100)";
    if (header && !s.contains("description")) s["description"] = std::string(f.field.header);
    return s;
}

Json object_schema(const FieldSchemaSet& set);

Json field_schema(const FieldSchema& f) {
    Json s = value_schema(f);
    if (f.nested && f.field.kind == FieldKind::record) {
        Json obj = object_schema(f.nested());
        obj["type"] = Json::array({"object", "null"});
        return obj;
    }
    if (f.nested && f.field.kind == FieldKind::records) s["items"] = object_schema(f.nested());
    return s;
}

Json object_schema(const FieldSchemaSet& set) {
    Json props = Json::object(), required = Json::array();
    for (const FieldSchema& f : set.fields) {
        props[std::string(f.field.key)] = field_schema(f);
        if (!f.omit_null) required.push_back(std::string(f.field.key));
    }
    Json others = false;
    if (set.other_keys) others = value_schema(FieldSchema{Field{"", "", *set.other_keys}});
    return {{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", others}};
}

}  // namespace

Json schema_json(const DocumentSchema& schema) {
    Json props = Json::object();
    props["schema_version"] = {{"const", kSchemaVersion}};
    props["tool"] = {{"const", "gpumem"}};
    props["version"] = {{"type", "string"}};
    props["command"] = {{"type", "string"}};
    props["ok"] = {{"type", "boolean"}};
    props["origin"] = object_schema(origin_schema());
    Json required = Json::array({"schema_version", "tool", "version", "command", "ok"});
    for (const auto& [key, set] : schema.tables) props[std::string(key)] = {{"type", "array"}, {"items", object_schema(set)}};
    for (const FieldSchema& f : schema.fields.fields) props[std::string(f.field.key)] = field_schema(f);
    props["warnings"] = {{"type", "array"}, {"items", {{"type", "string"}}}};
    props["error"] = {{"type", "object"},
                      {"properties",
                       {{"status", {{"type", "integer"}}}, {"code", {{"type", "string"}}}, {"message", {{"type", "string"}}}}},
                      {"required", {"status", "code", "message"}}};
    // A failure may stop before any table or field was filled: only the
    // envelope is required; a success also has every table and field.
    return {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
            {"title", "gpumem " + schema.command},
            {"type", "object"},
            {"properties", props},
            {"required", required},
            {"additionalProperties", false}};
}

}  // namespace gpumem::cli
