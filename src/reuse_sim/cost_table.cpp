#include "reuse_sim/cost_table.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/text.hpp"

namespace gpumem::reuse_sim {

using Json = nlohmann::ordered_json;

double CostCurve::at(std::uint64_t bytes) const noexcept {
    if (points.empty()) return 0;
    if (points.size() == 1) return points.front().median_us;
    const double x = std::log(static_cast<double>(std::max<std::uint64_t>(bytes, 1)));
    // Segment containing x, or the first/last one to extend.
    std::size_t i = 0;
    while (i + 2 < points.size() && bytes > points[i + 1].bytes) ++i;
    const CostPoint& a = points[i];
    const CostPoint& b = points[i + 1];
    const double xa = std::log(static_cast<double>(a.bytes));
    const double xb = std::log(static_cast<double>(b.bytes));
    const double t = (x - xa) / (xb - xa);
    return std::max(0.0, a.median_us + t * (b.median_us - a.median_us));
}

const CostCurve* CostTable::find(const std::string& api, const std::string& operation) const noexcept {
    const auto a = apis.find(api);
    if (a == apis.end()) return nullptr;
    const auto o = a->second.find(operation);
    return o == a->second.end() ? nullptr : &o->second;
}

namespace {

constexpr std::uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

CostCurve curve(std::initializer_list<CostPoint> points) { return CostCurve{std::vector<CostPoint>(points)}; }

// The operations the simulator looks up; a file lacking one gets the built-in curve.
const std::vector<std::pair<std::string, std::string>>& used_curves() {
    static const std::vector<std::pair<std::string, std::string>> used = {
        {"device", "alloc"}, {"device", "free"}, {"async", "alloc"}, {"async", "free"},
        {"async_grow", "alloc"}, {"async_grow", "free"}, {"memset", "set"},
    };
    return used;
}

}  // namespace

CostTable default_cost_table() {
    CostTable t;
    t.device = "NVIDIA H200";
    t.source =
        "built-in: medians measured on an NVIDIA H200 (driver 580.159.04, CUDA 13.0); memset small sizes and the "
        "split of async_grow are estimates";
    // cudaMalloc / cudaFree, plain runtime calls.
    t.apis["device"]["alloc"] = curve({{4 * KiB, 35}, {1 * MiB, 34}, {16 * MiB, 81}, {256 * MiB, 83}, {1 * GiB, 129}});
    t.apis["device"]["free"] = curve({{4 * KiB, 28}, {1 * MiB, 27}, {16 * MiB, 39}, {256 * MiB, 105}, {1 * GiB, 320}});
    // cudaMallocHost / cudaFreeHost.
    t.apis["host"]["alloc"] = curve({{4 * KiB, 450}, {1 * MiB, 440}, {16 * MiB, 3500}, {256 * MiB, 82000}, {1 * GiB, 334000}});
    t.apis["host"]["free"] = curve({{4 * KiB, 200}, {1 * MiB, 190}, {16 * MiB, 1300}, {256 * MiB, 21000}, {1 * GiB, 88000}});
    // cudaMallocAsync + cudaFreeAsync served by the pool: about 1 us the pair.
    t.apis["async"]["alloc"] = curve({{4 * KiB, 0.5}});
    t.apis["async"]["free"] = curve({{4 * KiB, 0.5}});
    // The whole cycle with the pool released each time (alloc + free + sync)
    // measured 55 us small to 1.1 ms at 1 GiB; charged to the growth, the
    // release at the synchronization is free in this table.
    t.apis["async_grow"]["alloc"] = curve({{4 * KiB, 54}, {1 * GiB, 1099}});
    t.apis["async_grow"]["free"] = curve({{4 * KiB, 0}});
    // cudaMemset: 4502 GB/s measured at 1 GiB; small sizes assume ~2 us of launch.
    t.apis["memset"]["set"] = curve({{4 * KiB, 2.0}, {16 * MiB, 5.7}, {256 * MiB, 61.6}, {1 * GiB, 240.5}});
    return t;
}

std::string cost_table_to_json(const CostTable& table) {
    Json doc = Json::object();
    doc["schema_version"] = kCostTableSchemaVersion;
    doc["kind"] = kCostTableKind;
    doc["device"] = table.device;
    doc["source"] = table.source;
    Json apis = Json::object();
    for (const auto& [api, ops] : table.apis) {
        Json jops = Json::object();
        for (const auto& [op, c] : ops) {
            Json points = Json::array();
            for (const CostPoint& p : c.points) points.push_back({{"bytes", p.bytes}, {"median_us", p.median_us}});
            jops[op] = std::move(points);
        }
        apis[api] = std::move(jops);
    }
    doc["apis"] = std::move(apis);
    return doc.dump(2) + "\n";
}

namespace {

// nlohmann's message in words: "[json.exception.parse_error.101] parse error
// at line 1, column 2: syntax error while parsing object key - unexpected end
// of input; expected string literal" reads "at line 1, column 2: unexpected
// end of input; expected string literal"; what it quotes of the file, bytes
// of a binary file included, stays off the terminal.
std::string json_fault(std::string what) {
    if (const std::size_t bracket = what.find("] "); what.rfind("[json.exception.", 0) == 0 && bracket != std::string::npos)
        what.erase(0, bracket + 2);
    if (what.rfind("parse error ", 0) == 0) what.erase(0, 12);
    if (const std::size_t syntax = what.find("syntax error while parsing "); syntax != std::string::npos)
        if (const std::size_t dash = what.find(" - ", syntax); dash != std::string::npos) what.erase(syntax, dash + 3 - syntax);
    if (what.rfind("at ", 0) != 0) what = "(" + what + ")";
    return printable(what, 200);
}

}  // namespace

CostTable parse_cost_table(const std::string& text, const std::string& name, std::vector<std::string>* missing) {
    auto bad = [&name](const std::string& what) { return UsageError(name + ": not a gpumem cost table: " + what); };
    Json doc;
    try {
        doc = Json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        // Not only parse_error: a number too large for a double (1e400) is
        // out_of_range while parsing, and just as much the file's fault.
        throw UsageError(name + ": invalid JSON " + json_fault(e.what()) +
                         " (a cost table is the JSON that gpumem alloc-test latency --save-costs FILE writes)");
    }
    if (!doc.is_object()) throw bad("the document is not an object");
    if (!doc.contains("kind") || doc["kind"] != kCostTableKind) throw bad("\"kind\" is not \"gpumem-cost-table\"");
    if (!doc.contains("schema_version") || !doc["schema_version"].is_number_integer())
        throw bad("no integer \"schema_version\"");
    if (doc["schema_version"].get<long long>() != kCostTableSchemaVersion)
        throw bad("schema_version " + doc["schema_version"].dump() + " (this gpumem reads " +
                  std::to_string(kCostTableSchemaVersion) + ")");
    if (!doc.contains("apis") || !doc["apis"].is_object()) throw bad("no \"apis\" object");
    CostTable t;
    t.device = doc.contains("device") && doc["device"].is_string() ? doc["device"].get<std::string>() : std::string("unknown device");
    // What measured the table, as its writer said; else where it was read from.
    t.source = doc.contains("source") && doc["source"].is_string() ? doc["source"].get<std::string>() : name;
    for (auto api = doc["apis"].begin(); api != doc["apis"].end(); ++api) {
        if (!api.value().is_object()) throw bad("apis." + api.key() + " is not an object");
        for (auto op = api.value().begin(); op != api.value().end(); ++op) {
            const std::string where = "apis." + api.key() + "." + op.key();
            if (!op.value().is_array() || op.value().empty()) throw bad(where + " is not a non-empty array");
            CostCurve c;
            for (const Json& p : op.value()) {
                if (!p.is_object() || !p.contains("bytes") || !p.contains("median_us") ||
                    !p["bytes"].is_number_unsigned() || !p["median_us"].is_number())
                    throw bad(where + ": each point needs \"bytes\" (a positive integer) and \"median_us\" (a number)");
                const std::uint64_t bytes = p["bytes"].get<std::uint64_t>();
                const double us = p["median_us"].get<double>();
                if (bytes == 0) throw bad(where + ": \"bytes\" must be positive");
                if (!(us >= 0) || !std::isfinite(us)) throw bad(where + ": \"median_us\" must be a finite number >= 0");
                if (!c.points.empty() && bytes <= c.points.back().bytes)
                    throw bad(where + ": points must be in ascending order of \"bytes\"");
                c.points.push_back({bytes, us});
            }
            t.apis[api.key()][op.key()] = std::move(c);
        }
    }
    const CostTable builtin = default_cost_table();
    for (const auto& [api, op] : used_curves()) {
        if (t.find(api, op)) continue;
        t.apis[api][op] = *builtin.find(api, op);
        if (missing) {
            std::string name = api;
            name += '.';
            name += op;
            missing->push_back(std::move(name));
        }
    }
    return t;
}

CostTable read_cost_table(const std::string& path, std::vector<std::string>* missing) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError(path + ": cannot open cost table");
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_cost_table(ss.str(), path, missing);
}

void write_cost_table(const std::string& path, const CostTable& table) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot write cost table");
    out << cost_table_to_json(table);
    out.flush();
    if (!out) throw Error(path + ": error writing cost table");
}

CostModel::CostModel(const CostTable& table)
    : table_(table),
      device_alloc_(table_.find("device", "alloc")),
      device_free_(table_.find("device", "free")),
      async_alloc_(table_.find("async", "alloc")),
      async_free_(table_.find("async", "free")),
      pool_grow_(table_.find("async_grow", "alloc")),
      pool_release_(table_.find("async_grow", "free")),
      memset_(table_.find("memset", "set")) {}

}  // namespace gpumem::reuse_sim
