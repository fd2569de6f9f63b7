// The strict JSON reader of fast_json.hpp: recursive descent over the
// bytes, children gathered on a stack and moved next to each other when
// their container closes, so that a container is a range of the array.
#include "base/fast_json.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace gpumem::fastjson {

const char* type_name(Type t) noexcept {
    switch (t) {
        case Type::null: return "null";
        case Type::boolean: return "boolean";
        case Type::string: return "string";
        case Type::array: return "array";
        case Type::object: return "object";
        default: return "number";
    }
}

const Value* Document::find(const Value& object, std::string_view key) const noexcept {
    const Value* found = nullptr;
    for (std::uint32_t i = 0; i < object.count; ++i) {
        const std::string_view k = values_[object.first + i].key;
        // The first byte before memcmp: keys are short and most differ there.
        if (k.size() == key.size() && (k.empty() || (k[0] == key[0] && k == key))) found = &values_[object.first + i];
    }
    return found;
}

// Thrown inside the parser only; parse() turns it into a Fault.
struct Stop {
    std::size_t offset;
    const char* reason;
};

class Parser {
public:
    Parser(Document& doc, std::string_view text, int max_depth) : doc_(doc), p_(text.data()), end_(text.data() + text.size()),
                                                                    begin_(text.data()), max_depth_(max_depth) {}

    void run() {
        // A UTF-8 byte order mark, which nlohmann skips too.
        if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;
        skip_space();
        value(0);
        skip_space();
        if (p_ != end_) stop("unexpected text after the document");
        doc_.values_.push_back(stack_.back());
    }

private:
    [[noreturn]] void stop(const char* reason) const { throw Stop{static_cast<std::size_t>(p_ - begin_), reason}; }

    void skip_space() noexcept {
        while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    }

    void value(int depth) {
        if (p_ == end_) stop("unexpected end of input");
        switch (*p_) {
            case '{': return container(depth, true);
            case '[': return container(depth, false);
            case '"': {
                Value v;
                v.type = Type::string;
                v.text = string();
                return stack_.push_back(v);
            }
            case 't': return literal("true", Type::boolean, true);
            case 'f': return literal("false", Type::boolean, false);
            case 'n': return literal("null", Type::null, false);
            default: return number();
        }
    }

    void literal(const char* word, Type type, bool flag) {
        const std::size_t n = std::strlen(word);
        if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) stop("invalid literal");
        p_ += n;
        Value v;
        v.type = type;
        v.boolean = flag;
        stack_.push_back(v);
    }

    void container(int depth, bool object) {
        if (depth + 1 > max_depth_) stop("nested too deep");
        ++p_;
        const std::size_t base = stack_.size();
        skip_space();
        const char close = object ? '}' : ']';
        if (p_ != end_ && *p_ == close) {
            ++p_;
        } else {
            for (;;) {
                std::string_view key;
                if (object) {
                    if (p_ == end_ || *p_ != '"') stop("expected a string key");
                    key = string();
                    skip_space();
                    if (p_ == end_ || *p_ != ':') stop("expected ':'");
                    ++p_;
                    skip_space();
                }
                value(depth + 1);
                stack_.back().key = key;
                skip_space();
                if (p_ == end_) stop("unexpected end of input");
                if (*p_ == ',') {
                    ++p_;
                    skip_space();
                    continue;
                }
                if (*p_ != close) stop(object ? "expected ',' or '}'" : "expected ',' or ']'");
                ++p_;
                break;
            }
        }
        Value v;
        v.type = object ? Type::object : Type::array;
        v.first = static_cast<std::uint32_t>(doc_.values_.size());
        v.count = static_cast<std::uint32_t>(stack_.size() - base);
        doc_.values_.insert(doc_.values_.end(), stack_.begin() + static_cast<std::ptrdiff_t>(base), stack_.end());
        stack_.resize(base);
        stack_.push_back(v);
    }

    // A string at p_ (on its quote); its bytes in the source where it has no escape.
    std::string_view string() {
        const char* start = ++p_;
        for (;;) {
            if (p_ == end_) stop("unterminated string");
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') break;
            if (c == '\\') return escaped(start);
            if (c < 0x20) stop("control character in a string");
            if (c >= 0x80) {
                utf8();
                continue;
            }
            ++p_;
        }
        const std::string_view s(start, static_cast<std::size_t>(p_ - start));
        ++p_;
        return s;
    }

    // One UTF-8 sequence at p_: well-formed, shortest form, no surrogates.
    void utf8() {
        const auto c = static_cast<unsigned char>(*p_);
        // Lead bytes: C2-DF one more byte, E0-EF two, F0-F4 three; 80-C1 and
        // F5-FF never lead a sequence.
        const int n = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xc2 && c <= 0xdf ? 1 : -1;
        if (n < 0 || end_ - p_ <= n) stop("invalid UTF-8 in a string");
        const auto c1 = static_cast<unsigned char>(p_[1]);
        const bool first_ok = (c == 0xe0 && c1 >= 0xa0) || (c == 0xed && c1 < 0xa0) || (c == 0xf0 && c1 >= 0x90) ||
                              (c == 0xf4 && c1 < 0x90) || (c != 0xe0 && c != 0xed && c != 0xf0 && c != 0xf4);
        if (!first_ok) stop("invalid UTF-8 in a string");
        for (int i = 1; i <= n; ++i)
            if ((static_cast<unsigned char>(p_[i]) & 0xc0) != 0x80) stop("invalid UTF-8 in a string");
        p_ += n + 1;
    }

    unsigned hex4() {
        if (end_ - p_ < 4) stop("invalid \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = *p_++;
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
            else stop("invalid \\u escape");
        }
        return v;
    }

    static void put_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        }
    }

    unsigned code_point() {
        unsigned cp = hex4();
        if (cp >= 0xdc00 && cp <= 0xdfff) stop("invalid \\u escape: a lone low surrogate");
        if (cp < 0xd800 || cp > 0xdbff) return cp;
        if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') stop("invalid \\u escape: a lone high surrogate");
        p_ += 2;
        const unsigned low = hex4();
        if (low < 0xdc00 || low > 0xdfff) stop("invalid \\u escape: a lone high surrogate");
        return 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }

    // The rest of a string that holds an escape, decoded into the document.
    std::string_view escaped(const char* start) {
        std::string& out = doc_.decoded_.emplace_back(start, static_cast<std::size_t>(p_ - start));
        for (;;) {
            if (p_ == end_) stop("unterminated string");
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') break;
            if (c < 0x20) stop("control character in a string");
            if (c >= 0x80) {
                const char* from = p_;
                utf8();
                out.append(from, static_cast<std::size_t>(p_ - from));
                continue;
            }
            ++p_;
            if (c != '\\') {
                out += static_cast<char>(c);
                continue;
            }
            if (p_ == end_) stop("unterminated string");
            const char e = *p_++;
            switch (e) {
                case '"': case '\\': case '/': out += e; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': put_utf8(out, code_point()); break;
                default: --p_; stop("invalid escape in a string");
            }
        }
        ++p_;
        return out;
    }

    void digits() {
        if (p_ == end_ || *p_ < '0' || *p_ > '9') stop("invalid number");
        while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }

    void number() {
        const char* start = p_;
        const bool negative = *p_ == '-';
        if (negative) ++p_;
        if (p_ != end_ && *p_ == '0') ++p_;
        else digits();
        bool whole = true;
        if (p_ != end_ && *p_ == '.') {
            ++p_;
            digits();
            whole = false;
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            digits();
            whole = false;
        }
        const std::string token(start, static_cast<std::size_t>(p_ - start));
        Value v;
        if (whole && whole_number(token, negative, v)) return stack_.push_back(v);
        errno = 0;
        v.type = Type::real;
        v.real = std::strtod(token.c_str(), nullptr);
        if (!std::isfinite(v.real)) {
            p_ = start;
            stop("number out of range");
        }
        stack_.push_back(v);
    }

    // A whole number that 64 bits hold; false: read it as a double (as nlohmann does).
    static bool whole_number(const std::string& token, bool negative, Value& v) {
        errno = 0;
        if (negative) {
            v.integer = std::strtoll(token.c_str(), nullptr, 10);
            v.type = Type::integer;
        } else {
            v.unsigned_integer = std::strtoull(token.c_str(), nullptr, 10);
            v.type = Type::unsigned_integer;
        }
        return errno != ERANGE;
    }

    Document& doc_;
    const char* p_;
    const char* end_;
    const char* begin_;
    int max_depth_;
    std::vector<Value> stack_;
};

bool Document::parse(std::string_view text, int max_depth, Fault& fault) {
    values_.clear();
    decoded_.clear();
    try {
        Parser parser(*this, text, max_depth);
        parser.run();
        return true;
    } catch (const Stop& s) {
        fault = {s.offset, s.reason};
        return false;
    }
}

}  // namespace gpumem::fastjson
