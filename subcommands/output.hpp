// The one output layer: subcommands fill a Report with typed cells and this
// renders it as an aligned table, one JSON document, CSV or bare values.
// Rendering returns strings; only main and the loop writers touch stdout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/sizes.hpp"

namespace gpumem::cli {

// JSON documents keep keys in the order they were set.
using Json = nlohmann::ordered_json;

enum class Format { table, json, csv, value };
Format parse_format(const std::string& text);  // throws UsageError

struct OutputOptions {
    Format format = Format::table;
    Unit unit = Unit::automatic;
    bool header = true;
    bool compact_json = false;  // one document per line (loops)
};

// How a cell is shown. JSON numbers keep their base unit: bytes, bytes/s is
// shown as GB/s (the key says so), times as the key's unit.
enum class FieldKind { text, integer, real, bytes, bandwidth, percent, boolean };

struct Field {
    std::string key;     // JSON key and CSV header
    std::string header;  // table header
    FieldKind kind = FieldKind::text;
    int decimals = 2;    // for real and percent
};

using Cell = std::variant<std::monostate, std::string, std::int64_t, std::uint64_t, double, bool>;

struct Table {
    std::string key;  // name of the JSON array
    std::vector<Field> fields;
    std::vector<std::vector<Cell>> rows;

    void add_row(std::vector<Cell> row) { rows.push_back(std::move(row)); }
};

struct Report {
    std::string command;
    std::vector<Table> tables;
    Json extra = Json::object();  // merged into the JSON document
    std::vector<std::string> text_before;  // table mode: lines printed above the tables
    std::vector<std::string> text_after;   // table mode: lines printed below the tables
    std::vector<std::string> warnings;     // JSON: "warnings" array (also logged to stderr)
};

std::string render(const Report& report, const OutputOptions& options);
// The JSON document for a failure, with whatever the report already holds.
std::string render_json_error(const Report& report, const Error& error, const OutputOptions& options);
Json report_to_json(const Report& report);

// Cell rendered for humans / for machines (CSV and value).
std::string cell_text(const Cell& cell, const Field& field, Unit unit);
std::string cell_plain(const Cell& cell, const Field& field, Unit unit);
// Header of a field in CSV, with the unit where it is not the base unit.
std::string csv_header(const Field& field, Unit unit);

inline constexpr int kSchemaVersion = 1;

}  // namespace gpumem::cli
