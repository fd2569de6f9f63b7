// A small, strict JSON reader for gpumem report's hot path (issue 29): one
// document into a flat array of values whose strings point into the
// source text where they hold no escape. nlohmann::json builds a DOM of
// maps and strings for every key at about 50 MB/s; this reads the same
// documents several times faster, so that 100 000 check documents merge in
// seconds. It accepts exactly RFC 8259 JSON (UTF-8 checked, no trailing
// commas, no comments); a number that a double cannot hold is refused by
// name rather than read as infinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace gpumem::fastjson {

enum class Type : std::uint8_t { null, boolean, integer, unsigned_integer, real, string, array, object };

// nlohmann's names for the types, for messages that read the same as before.
const char* type_name(Type t) noexcept;

struct Value {
    Type type = Type::null;
    bool boolean = false;
    std::int64_t integer = 0;
    std::uint64_t unsigned_integer = 0;
    double real = 0;
    std::string_view text;  // a string's (decoded) bytes
    std::string_view key;   // an object member's key
    std::uint32_t first = 0, count = 0;  // an array's or object's children in Document::values

    bool is_null() const noexcept { return type == Type::null; }
    bool is_string() const noexcept { return type == Type::string; }
    bool is_boolean() const noexcept { return type == Type::boolean; }
    bool is_array() const noexcept { return type == Type::array; }
    bool is_object() const noexcept { return type == Type::object; }
    bool is_number() const noexcept { return type == Type::integer || type == Type::unsigned_integer || type == Type::real; }
    // Whole numbers as nlohmann types them: a minus sign makes it signed.
    bool is_integer() const noexcept { return type == Type::integer || type == Type::unsigned_integer; }
    double number() const noexcept {
        return type == Type::real ? real : type == Type::integer ? static_cast<double>(integer) : static_cast<double>(unsigned_integer);
    }
};

// Where and why a text is not JSON; `offset` is the byte where reading stopped.
struct Fault {
    std::size_t offset = 0;
    std::string reason;
};

class Document {
public:
    // Parses `text` (which must outlive the document). Returns false with
    // `fault` set when the text is not one JSON value, or nests deeper than
    // `max_depth`.
    bool parse(std::string_view text, int max_depth, Fault& fault);

    const Value& root() const noexcept { return values_.back(); }
    const Value& child(const Value& container, std::size_t i) const noexcept { return values_[container.first + i]; }
    // An object's member, or nullptr; the last one where a key repeats (as nlohmann keeps).
    const Value* find(const Value& object, std::string_view key) const noexcept;

private:
    friend class Parser;
    std::vector<Value> values_;     // children before their parents; the root last
    std::deque<std::string> decoded_;  // strings with escapes, decoded (stable addresses)
};

}  // namespace gpumem::fastjson
