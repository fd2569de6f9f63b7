#include "output.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

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

double as_double(const Cell& cell) {
    if (auto p = std::get_if<double>(&cell)) return *p;
    if (auto p = std::get_if<std::uint64_t>(&cell)) return static_cast<double>(*p);
    if (auto p = std::get_if<std::int64_t>(&cell)) return static_cast<double>(*p);
    return 0;
}

Json cell_json(const Cell& cell, const Field& field) {
    if (std::holds_alternative<std::monostate>(cell)) return nullptr;
    if (auto p = std::get_if<std::string>(&cell)) return *p;
    if (auto p = std::get_if<bool>(&cell)) return *p;
    if (field.kind == FieldKind::bandwidth) {  // GB/s, whichever type holds the bytes/s
        const double v = as_double(cell);
        return std::isfinite(v) ? Json(v / 1e9) : Json(nullptr);
    }
    if (auto p = std::get_if<std::uint64_t>(&cell)) return *p;
    if (auto p = std::get_if<std::int64_t>(&cell)) return *p;
    const double v = std::get<double>(cell);
    if (!std::isfinite(v)) return nullptr;
    return v;
}

// Machine-format number of bytes in a unit: whole numbers up to MiB/MB (as
// nvidia-smi prints MiB), three decimals above.
std::string bytes_plain(std::uint64_t bytes, Unit unit) {
    if (unit == Unit::automatic || unit == Unit::B) return std::to_string(bytes);
    if (unit_bytes(unit) <= (1ULL << 20)) return std::to_string(bytes / unit_bytes(unit));
    return format_decimal(bytes_in_unit(bytes, unit), 3);
}

}  // namespace

Format parse_format(const std::string& text) {
    if (text == "table") return Format::table;
    if (text == "json") return Format::json;
    if (text == "csv") return Format::csv;
    if (text == "value") return Format::value;
    throw UsageError("unknown format '" + text + "' (expected table, json, csv or value)");
}

std::string cell_text(const Cell& cell, const Field& field, Unit unit) {
    if (std::holds_alternative<std::monostate>(cell)) return "-";
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
        return field.key + " [" + unit_name(unit) + "]";
    if (field.kind == FieldKind::bandwidth) return field.key + " [" + bandwidth_unit_name(unit) + "]";
    return field.key;
}

Json report_to_json(const Report& report) {
    Json doc = Json::object();
    doc["schema_version"] = kSchemaVersion;
    doc["tool"] = "gpumem";
    doc["version"] = GPUMEM_VERSION;
    doc["command"] = report.command;
    doc["ok"] = true;
    for (const Table& table : report.tables) {
        Json rows = Json::array();
        for (const auto& row : table.rows) {
            Json obj = Json::object();
            for (std::size_t i = 0; i < table.fields.size() && i < row.size(); ++i)
                obj[table.fields[i].key] = cell_json(row[i], table.fields[i]);
            rows.push_back(std::move(obj));
        }
        doc[table.key] = std::move(rows);
    }
    for (auto it = report.extra.begin(); it != report.extra.end(); ++it) doc[it.key()] = it.value();
    if (!report.warnings.empty()) doc["warnings"] = report.warnings;
    return doc;
}

std::string render(const Report& report, const OutputOptions& options) {
    std::ostringstream out;
    switch (options.format) {
        case Format::json: {
            const Json doc = report_to_json(report);
            out << (options.compact_json ? doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) : doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) << '\n';
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
            for (const std::string& line : report.text_before) out << line << '\n';
            bool first_table = true;
            for (const Table& table : report.tables) {
                if (!first_table) out << '\n';
                first_table = false;
                std::vector<std::size_t> width(table.fields.size());
                std::vector<std::vector<std::string>> cells;
                for (std::size_t i = 0; i < table.fields.size(); ++i) width[i] = table.fields[i].header.size();
                for (const auto& row : table.rows) {
                    std::vector<std::string> texts;
                    for (std::size_t i = 0; i < table.fields.size(); ++i) {
                        texts.push_back(i < row.size() ? cell_text(row[i], table.fields[i], options.unit) : "");
                        width[i] = std::max(width[i], texts.back().size());
                    }
                    cells.push_back(std::move(texts));
                }
                auto emit = [&](const std::vector<std::string>& texts) {
                    std::string line;
                    for (std::size_t i = 0; i < texts.size(); ++i) {
                        const bool left = table.fields[i].kind == FieldKind::text;
                        const std::string pad(width[i] - std::min(width[i], texts[i].size()), ' ');
                        if (i) line += "  ";
                        line += left ? texts[i] + pad : pad + texts[i];
                    }
                    while (!line.empty() && line.back() == ' ') line.pop_back();
                    out << line << '\n';
                };
                if (options.header) {
                    std::vector<std::string> headers;
                    for (const Field& f : table.fields) headers.push_back(f.header);
                    emit(headers);
                }
                for (const auto& texts : cells) emit(texts);
            }
            for (const std::string& line : report.text_after) out << line << '\n';
            break;
        }
    }
    return out.str();
}

std::string render_json_error(const Report& report, const Error& error, const OutputOptions& options) {
    Json doc = report_to_json(report);
    doc["ok"] = false;
    doc["error"] = {{"status", static_cast<int>(error.status())},
                    {"code", exit_status_name(error.status())},
                    {"message", error.what()}};
    return (options.compact_json ? doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) : doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) + "\n";
}

}  // namespace gpumem::cli
