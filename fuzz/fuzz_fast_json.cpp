// The fast JSON reader of gpumem report (src/base/fast_json.cpp) against
// nlohmann::json, the reference it replaced on that path: on any input they
// must agree on accepting it (except a number no double holds, which the
// fast reader refuses by name and nlohmann throws out_of_range for), and on
// every value of what both accept. Then the document reader on the same
// bytes: only gpumem's own errors may come out.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "base/fast_json.hpp"
#include "base/fleet.hpp"
#include "core/fleet_input.hpp"
#include "fuzz_common.hpp"

namespace {

using gpumem::fastjson::Type;
using gpumem::fastjson::Value;

void same(const gpumem::fastjson::Document& doc, const Value& v, const nlohmann::json& j) {
    switch (v.type) {
        case Type::null: if (!j.is_null()) std::abort(); break;
        case Type::boolean: if (!j.is_boolean() || j.get<bool>() != v.boolean) std::abort(); break;
        case Type::integer: if (!j.is_number_integer() || j.is_number_unsigned() || j.get<std::int64_t>() != v.integer) std::abort(); break;
        case Type::unsigned_integer: if (!j.is_number_unsigned() || j.get<std::uint64_t>() != v.unsigned_integer) std::abort(); break;
        case Type::real:
            if (!j.is_number_float()) std::abort();
            if (j.get<double>() != v.real && !(std::isnan(v.real) && std::isnan(j.get<double>()))) std::abort();
            break;
        case Type::string: if (!j.is_string() || j.get<std::string>() != v.text) std::abort(); break;
        case Type::array:
            if (!j.is_array() || j.size() != v.count) std::abort();
            for (std::size_t i = 0; i < v.count; ++i) same(doc, doc.child(v, i), j[i]);
            break;
        case Type::object: {
            if (!j.is_object()) std::abort();
            for (std::size_t i = 0; i < v.count; ++i) {
                const Value& m = doc.child(v, i);
                // A repeated key: both keep the last.
                if (doc.find(v, m.key) != &m) continue;
                const auto it = j.find(std::string(m.key));
                if (it == j.end()) std::abort();
                same(doc, m, *it);
            }
            break;
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    const std::string text(reinterpret_cast<const char*>(data), size);
    // nlohmann ends its input at a NUL byte (outside a string, where the
    // fast reader calls it text after the document; inside, both refuse it).
    const std::string prefix = text.substr(0, text.find('\0'));
    gpumem::fastjson::Document doc;
    gpumem::fastjson::Fault fault;
    // Deeper than this is refused (report allows 64); nlohmann has no bound.
    const bool fast = doc.parse(prefix, 256, fault);
    if (!fast && fault.reason == "nested too deep") return 0;
    nlohmann::json j;
    bool reference = true, out_of_range = false;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error&) {
        reference = false;
    } catch (const nlohmann::json::out_of_range&) {
        reference = false;
        out_of_range = true;
    }
    if (fast != reference && !(out_of_range && fault.reason == "number out of range")) std::abort();
    if (fast) same(doc, doc.root(), j);
    fuzz_expect_only_gpumem_errors([&] { (void)gpumem::fleet::read_text("fuzz.json", text, 1); });
    return 0;
}
