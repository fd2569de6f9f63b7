// One gpumem JSON document read into what it says about each GPU: the
// envelope (tool, command, ok, error, origin) is checked for every command;
// check, info, copy and memset give GPUs and figures; other commands' documents
// count for their errors only. A key of the wrong type is bad input: a
// report must not quietly drop what it cannot read.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/fast_json.hpp"

#include "base/fleet.hpp"
#include "base/sizes.hpp"

namespace gpumem::fleet {

constexpr Named<RowStatus> kRowStatusRows[] = {
    {"error", RowStatus::error, "a document of it is an error document (the command could not run)"},
    {"fail", RowStatus::fail, "a check failed (or, with --strict, warned or could not run)"},
    {"unknown", RowStatus::unknown, "a check could not run (unknown verdict), none failed: the GPU is not known to be fit"},
    {"outlier", RowStatus::outlier, "a figure is more than --outlier-fraction below its model's median"},
    {"warn", RowStatus::warn, "a check warned"},
    {"ok", RowStatus::ok, "none of the above"},
};
const NameTable<RowStatus> kRowStatuses{"row status", kRowStatusRows};

namespace {

using fastjson::Value;

// Typed reads: `where` names the key in messages ("devices[2].free").
[[noreturn]] void wrong(const std::string& where, const char* expected) {
    throw UsageError(where + ": expected " + expected);
}

// The document being read: its values are ranges of one array.
thread_local const fastjson::Document* tls_json = nullptr;

const Value* member(const Value& object, const char* key) {
    const Value* v = tls_json->find(object, key);
    return v == nullptr || v->is_null() ? nullptr : v;
}

const Value& at(const Value& array, std::size_t i) { return tls_json->child(array, i); }

std::optional<std::string> text_at(const Value& object, const char* key, const std::string& where) {
    const Value* v = member(object, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong(where + key, "a string");
    return std::string(v->text);
}

std::optional<double> number_at(const Value& object, const char* key, const std::string& where) {
    const Value* v = member(object, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong(where + key, "a number");
    return v->number();
}

std::optional<std::int64_t> integer_at(const Value& object, const char* key, const std::string& where) {
    const Value* v = member(object, key);
    if (!v) return std::nullopt;
    if (!v->is_integer()) wrong(where + key, "an integer");
    // An unsigned value beyond int64 would wrap to a negative index or status.
    if (v->type == fastjson::Type::unsigned_integer && v->unsigned_integer > static_cast<std::uint64_t>(INT64_MAX))
        wrong(where + key, "an integer below 2^63");
    return v->type == fastjson::Type::integer ? v->integer : static_cast<std::int64_t>(v->unsigned_integer);
}

std::optional<std::uint64_t> count_at(const Value& object, const char* key, const std::string& where) {
    const Value* v = member(object, key);
    if (!v) return std::nullopt;
    if (v->type != fastjson::Type::unsigned_integer) wrong(where + key, "a whole number, 0 or more (below 2^64)");
    return v->unsigned_integer;
}

// The rows of the table `key` (absent: none; a failure may stop before it).
const Value& rows_at(const Value& doc, const char* key) {
    static const Value none = [] {
        Value v;
        v.type = fastjson::Type::array;
        return v;
    }();
    const Value* v = member(doc, key);
    if (!v) return none;
    if (!v->is_array()) wrong(key, "an array of rows");
    for (std::size_t i = 0; i < v->count; ++i)
        if (!at(*v, i).is_object()) wrong(std::string(key) + "[" + std::to_string(i) + "]", "an object");
    return *v;
}

std::string row_where(const char* table, std::size_t i) { return std::string(table) + "[" + std::to_string(i) + "]."; }

DocOrigin read_origin(const Value& doc) {
    DocOrigin o;
    const Value* v = member(doc, "origin");
    if (!v) return o;
    if (!v->is_object()) wrong("origin", "an object");
    const std::optional<std::string> host = text_at(*v, "host", "origin.");
    if (!host || host->empty()) wrong("origin.host", "a host name");
    o.host = *host;
    o.launcher = text_at(*v, "launcher", "origin.").value_or("");
    o.job_id = text_at(*v, "job_id", "origin.");
    o.rank = count_at(*v, "rank", "origin.");
    o.local_rank = count_at(*v, "local_rank", "origin.");
    o.world_size = count_at(*v, "world_size", "origin.");
    return o;
}

std::optional<DocError> read_error(const Value& doc, bool ok) {
    if (ok) return std::nullopt;
    const Value* e = member(doc, "error");
    if (!e || !e->is_object()) wrong("error", "an object (the document says \"ok\": false)");
    DocError error;
    error.status = integer_at(*e, "status", "error.").value_or(-1);
    if (error.status < 0 || error.status > 255) wrong("error.status", "an exit status (0 to 255)");
    error.code = text_at(*e, "code", "error.").value_or("");
    error.message = text_at(*e, "message", "error.").value_or("");
    return error;
}

// The envelope every gpumem document has.
Document read_envelope(const Value& doc, int max_schema_version) {
    if (!doc.is_object())
        throw UsageError(std::string("not a gpumem document: a JSON ") + fastjson::type_name(doc.type) + ", not an object");
    const Value* tool = member(doc, "tool");
    if (!tool || !tool->is_string() || tool->text != "gpumem") throw UsageError("not a gpumem document (no \"tool\": \"gpumem\")");
    const std::optional<std::int64_t> version = integer_at(doc, "schema_version", "");
    if (!version) wrong("schema_version", "an integer");
    if (*version > max_schema_version)
        throw UsageError("schema_version " + std::to_string(*version) + ": written by a newer gpumem (this one reads up to " +
                         std::to_string(max_schema_version) + ")");
    Document d;
    // An error found before the command was known (an unknown command, a
    // bad global option) has an empty command: still a gpumem document.
    const std::optional<std::string> command = text_at(doc, "command", "");
    if (!command) wrong("command", "a command name");
    d.command = *command;
    if (d.command == "report")
        throw UsageError("a report's own document: give report the documents it was made from");
    const Value* ok = member(doc, "ok");
    if (!ok || !ok->is_boolean()) wrong("ok", "true or false");
    d.error = read_error(doc, ok->boolean);
    d.origin = read_origin(doc);
    return d;
}

// The GPU of a row: one entry per UUID, or per CUDA index where the row
// names no UUID (copy's results; memset's results beside its details).
GpuFacts& gpu_of(Document& d, const std::optional<std::int64_t>& index, const std::optional<std::string>& uuid,
                 const std::string& where) {
    if (!index && !uuid) wrong(where + "index", "a device index or a uuid");
    for (GpuFacts& g : d.gpus) {
        const bool same = uuid && g.uuid ? *g.uuid == *uuid : index && g.index && *g.index == *index;
        if (!same) continue;
        if (uuid) g.uuid = uuid;
        if (index && !g.index) g.index = index;
        return g;
    }
    d.gpus.push_back(GpuFacts{index, uuid, std::nullopt, std::nullopt, std::nullopt, std::nullopt, {}, {}});
    return d.gpus.back();
}

GpuFacts& identified_gpu(Document& d, const Value& row, const std::string& where, const char* index_key) {
    GpuFacts& g = gpu_of(d, integer_at(row, index_key, where), text_at(row, "uuid", where), where);
    if (auto name = text_at(row, "name", where)) g.name = name;
    return g;
}

Verdict verdict_at(const Value& row, const std::string& where) {
    const std::optional<std::string> v = text_at(row, "verdict", where);
    if (!v) wrong(where + "verdict", ("one of " + kVerdicts.names()).c_str());
    const Named<Verdict>* found = kVerdicts.find(*v);
    if (!found) throw UsageError(where + "verdict: '" + *v + "' is not a verdict (expected " + kVerdicts.names() + ")");
    return found->value;
}

Verdict worse(std::optional<Verdict> a, Verdict b) { return a ? gpumem::worse(*a, b) : b; }

// A check's remediation: the document's, or where it has none (gpumem
// before remediations) the check's default for its verdict; none for a
// check this build does not know (`row` null).
Remediation remediation_at(const Value& row, const Named<CheckKind>* check, Verdict verdict, const std::string& where) {
    if (const std::optional<std::string> r = text_at(row, "remediation", where)) {
        const Named<Remediation>* found = kRemediations.find(*r);
        if (!found)
            throw UsageError(where + "remediation: '" + *r + "' is not a remediation (expected " + kRemediations.names() + ")");
        return found->value;
    }
    return check ? remediation_for(check->value, verdict) : Remediation::none;
}

void read_check(const Value& doc, Document& d) {
    const Value* strict = member(doc, "strict");
    if (strict && !strict->is_boolean()) wrong("strict", "true or false");
    d.strict = strict && strict->boolean;
    const Value& devices = rows_at(doc, "devices");
    for (std::size_t i = 0; i < devices.count; ++i) {
        const std::string where = row_where("devices", i);
        GpuFacts& g = identified_gpu(d, at(devices, i), where, "index");
        g.verdict = worse(g.verdict, verdict_at(at(devices, i), where));
    }
    const Value& checks = rows_at(doc, "checks");
    for (std::size_t i = 0; i < checks.count; ++i) {
        const Value& row = at(checks, i);
        const std::string where = row_where("checks", i);
        GpuFacts& g = identified_gpu(d, row, where, "index");
        const std::optional<std::string> id = text_at(row, "check", where);
        if (!id || id->empty()) wrong(where + "check", "a check's name");
        const Verdict verdict = verdict_at(row, where);
        // Looked up without throwing: an unknown id is named once per fleet,
        // not a message built and dropped per row.
        const Named<CheckKind>* known = find_check_row(*id);
        g.checks.push_back({*id, verdict, remediation_at(row, known, verdict, where), known != nullptr});
        g.verdict = worse(g.verdict, verdict);
        const auto value = number_at(row, "value", where);
        const auto comparison = text_at(row, "comparison", where);
        // Only a figure judged higher-is-better is compared with its peers.
        if (value && comparison == std::string(">="))
            g.figures.push_back({*id, *value, text_at(row, "unit", where).value_or("")});
    }
}

void read_info(const Value& doc, Document& d) {
    const Value& devices = rows_at(doc, "devices");
    for (std::size_t i = 0; i < devices.count; ++i) {
        const std::string where = row_where("devices", i);
        GpuFacts& g = identified_gpu(d, at(devices, i), where, "index");
        if (auto free = count_at(at(devices, i), "free", where)) g.free = free;
        if (auto total = count_at(at(devices, i), "total", where)) g.total = total;
    }
}

// A figure keeps the minimum over rows of the same name: a copy to several
// peers counts by its slowest link, the one an operator has to find.
void add_min_figure(GpuFacts& g, Figure figure) {
    for (Figure& f : g.figures)
        if (f.name == figure.name) {
            f.value = std::min(f.value, figure.value);
            return;
        }
    g.figures.push_back(std::move(figure));
}

void read_copy(const Value& doc, Document& d) {
    const Value& results = rows_at(doc, "results");
    for (std::size_t i = 0; i < results.count; ++i) {
        const Value& row = at(results, i);
        const std::string where = row_where("results", i);
        GpuFacts& g = identified_gpu(d, row, where, "device");
        const auto gbps = number_at(row, "median_gbps", where);
        const auto direction = text_at(row, "direction", where);
        const auto bytes = count_at(row, "bytes", where);
        if (!gbps || !direction || !bytes) continue;  // skipped, not measured
        std::string name = "copy." + *direction + " (";
        if (auto memory = text_at(row, "host_memory", where)) name += *memory + ", ";
        name += text_at(row, "engine", where).value_or("?") + ", " + format_bytes(*bytes);
        const Value* access = member(row, "peer_access");
        if (access && access->is_boolean() && !access->boolean) name += ", no peer access";
        add_min_figure(g, {name + ")", *gbps, "GB/s"});
    }
}

void read_memset(const Value& doc, Document& d) {
    // details name each device's UUID and model; results hold the figures.
    const Value& details = rows_at(doc, "details");
    for (std::size_t i = 0; i < details.count; ++i) identified_gpu(d, at(details, i), row_where("details", i), "device");
    const Value& results = rows_at(doc, "results");
    for (std::size_t i = 0; i < results.count; ++i) {
        const Value& row = at(results, i);
        const std::string where = row_where("results", i);
        if (text_at(row, "target", where).value_or("device") != "device") continue;  // host memory: the CPU's figure
        GpuFacts& g = gpu_of(d, integer_at(row, "device", where), std::nullopt, where);
        const auto gbps = number_at(row, "bandwidth_gbps", where);
        const auto bytes = count_at(row, "bytes", where);
        const auto width = integer_at(row, "width_bits", where);
        if (!gbps || !bytes) continue;
        add_min_figure(g, {"memset (" + std::to_string(width.value_or(8)) + "-bit, " + format_bytes(*bytes) + ")", *gbps, "GB/s"});
    }
}

std::size_t error_line(std::string_view text, std::size_t line, std::size_t byte) {
    const std::size_t end = std::min(text.size(), byte > 0 ? byte - 1 : 0);
    return line + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

// nlohmann's message without its prefix and its own (slice-relative) position.
std::string parse_reason(const std::string& what) {
    const std::size_t at = what.find(": ");
    std::string reason = at == std::string::npos ? what : what.substr(at + 2);
    // nlohmann quotes what it last read: bytes of a binary file stay off the terminal.
    for (char& c : reason)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    if (reason.rfind("syntax error while parsing ", 0) == 0) reason.erase(0, 27);
    return "malformed JSON: " + reason;
}

// Where the fast reader stopped: nlohmann's words for the same fault where
// it has some (the messages gpumem always gave), else the reader's own.
LineError parse_fault(std::string_view text, std::size_t line, const fastjson::Fault& fault) {
    try {
        const nlohmann::json unused = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        return LineError(error_line(text, line, e.byte), parse_reason(e.what()));
    } catch (const nlohmann::json::exception&) {
        // out_of_range (a number beyond a double): the reader's message names it.
    }
    const std::size_t end = std::min(fault.offset, text.size());
    std::size_t token = end;
    while (token < text.size() && std::string_view(",]} \t\r\n").find(text[token]) == std::string_view::npos) ++token;
    std::string what = fault.reason;
    if (fault.reason == std::string("number out of range"))
        what += ": " + std::string(text.substr(end, std::min<std::size_t>(token - end, 40))) + " (beyond a double)";
    return LineError(error_line(text, line, end + 1), "malformed JSON: " + what);
}

// The commands whose documents name GPUs, and their readers; any other
// command's document counts for its error only.
using Reader = void (*)(const Value&, Document&);
constexpr std::pair<std::string_view, Reader> kReaders[] = {
    {"check", read_check}, {"info", read_info}, {"copy", read_copy}, {"memset", read_memset}};

}  // namespace

bool reads_gpus_of(std::string_view command) noexcept {
    return std::any_of(std::begin(kReaders), std::end(kReaders), [command](const auto& r) { return r.first == command; });
}

std::string gpu_commands_text() {
    std::string text;
    constexpr std::size_t n = std::size(kReaders);
    for (std::size_t i = 0; i < n; ++i) text += (i == 0 ? "" : i + 1 == n ? " and " : ", ") + std::string(kReaders[i].first);
    return text;
}

Document parse_document(std::string_view text, std::size_t line, int max_schema_version) {
    // One reader per thread, reused: its arrays keep their capacity.
    thread_local fastjson::Document json;
    fastjson::Fault fault;
    if (!json.parse(text, kMaxDocumentDepth, fault)) throw parse_fault(text, line, fault);
    tls_json = &json;
    try {
        const Value& doc = json.root();
        Document d = read_envelope(doc, max_schema_version);
        for (const auto& [command, read] : kReaders)
            if (d.command == command) read(doc, d);
        return d;
    } catch (const LineError&) {
        throw;
    } catch (const UsageError& e) {
        throw LineError(line, e.what());
    }
}

}  // namespace gpumem::fleet
