#include "reuse_sim/pickle_reader.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "base/errors.hpp"

namespace gpumem::reuse_sim::pickle {

namespace {

// Real snapshots nest a few levels (dict, list, list, dict, list of frames)
// and batch APPENDS and SETITEMS by 1,000 items: these bounds are far above
// them and far below what would exhaust memory.
constexpr std::size_t kMaxMarks = 1000;
constexpr std::size_t kMaxStack = std::size_t{1} << 22;

// The opcodes that would run code, with their names for the message.
struct Refused {
    unsigned char opcode;
    const char* name;
};
constexpr Refused kRefused[] = {
    {'c', "GLOBAL"},         {0x93, "STACK_GLOBAL"}, {'R', "REDUCE"},    {'b', "BUILD"},      {'i', "INST"},
    {'o', "OBJ"},            {0x81, "NEWOBJ"},       {0x92, "NEWOBJ_EX"}, {'P', "PERSID"},     {'Q', "BINPERSID"},
    {0x82, "EXT1"},          {0x83, "EXT2"},         {0x84, "EXT4"},     {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
};
// Protocol 0's text opcodes: pickle.dump never writes them from protocol 2 on.
constexpr const char kTextOpcodes[] = "ILSVFpg";

std::string hex_byte(unsigned char b) {
    static const char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

}  // namespace

// ------------------------------------------------------------------ Document

bool Document::as_u64(const Value& v, std::uint64_t& out) const noexcept {
    if (v.kind == Kind::unsigned_integer || (v.kind == Kind::integer && static_cast<std::int64_t>(v.bits) >= 0)) {
        out = v.bits;
        return true;
    }
    return false;
}

bool Document::as_i64(const Value& v, std::int64_t& out) const noexcept {
    if (v.kind != Kind::integer) return false;
    out = static_cast<std::int64_t>(v.bits);
    return true;
}

bool Document::as_double(const Value& v, double& out) const noexcept {
    if (v.kind == Kind::real) {
        std::memcpy(&out, &v.bits, sizeof out);
        return true;
    }
    if (v.kind == Kind::integer) out = static_cast<double>(static_cast<std::int64_t>(v.bits));
    else if (v.kind == Kind::unsigned_integer) out = static_cast<double>(v.bits);
    else return false;
    return true;
}

bool Document::as_bool(const Value& v, bool& out) const noexcept {
    if (v.kind != Kind::boolean) return false;
    out = v.bits != 0;
    return true;
}

bool Document::as_text(const Value& v, std::string_view& out) const noexcept {
    if (v.kind != Kind::text) return false;
    out = strings_[v.bits];
    return true;
}

bool Document::items(const Value& v, const Value*& first, std::size_t& count) const noexcept {
    if (v.kind != Kind::list && v.kind != Kind::tuple && v.kind != Kind::set && v.kind != Kind::dict) return false;
    const std::vector<Value>& items = containers_[v.bits].items;
    first = items.data();
    count = items.size();
    return true;
}

const Value* Document::get(const Value& dict, std::string_view key) const noexcept {
    if (dict.kind != Kind::dict) return nullptr;
    const std::vector<Value>& items = containers_[dict.bits].items;
    for (std::size_t i = items.size(); i >= 2; i -= 2) {
        std::string_view k;
        if (as_text(items[i - 2], k) && k == key) return &items[i - 1];
    }
    return nullptr;
}

std::uint64_t Document::offset_of(const Value& v) const noexcept {
    const bool container = v.kind == Kind::list || v.kind == Kind::tuple || v.kind == Kind::set || v.kind == Kind::dict;
    return container ? containers_[v.bits].offset : 0;
}

const char* Document::kind_name(Kind kind) noexcept {
    switch (kind) {
        case Kind::none: return "None";
        case Kind::boolean: return "bool";
        case Kind::integer:
        case Kind::unsigned_integer:
        case Kind::big_integer: return "int";
        case Kind::real: return "float";
        case Kind::text: return "str";
        case Kind::bytes: return "bytes";
        case Kind::list: return "list";
        case Kind::tuple: return "tuple";
        case Kind::set: return "set";
        case Kind::dict: return "dict";
    }
    return "?";
}

// ----------------------------------------------------------------- Unpickler

class Unpickler {
public:
    Unpickler(std::string_view data, const std::string& name) : data_(data), name_(name) {}

    Document run() {
        while (pos_ < data_.size()) {
            opcode_at_ = pos_;
            const auto op = static_cast<unsigned char>(data_[pos_++]);
            if (op == '.') {
                doc_.root_ = pop();
                return std::move(doc_);
            }
            if (!scalar(op) && !text(op) && !container(op) && !memo(op)) refuse(op);
        }
        fail(pos_, "the file is cut short: the pickle ends without its STOP opcode; copy or record the snapshot again");
    }

private:
    [[noreturn]] void fail(std::uint64_t at, const std::string& why) const {
        throw UsageError(name_ + ": offset " + std::to_string(at) + ": " + why);
    }
    [[noreturn]] void fail(const std::string& why) const { fail(opcode_at_, why); }
    // A length past the end: the file is cut short (a copy or a write that
    // stopped), which is what the user has to know and mend.
    [[noreturn]] void cut_short(const char* what, std::uint64_t n) const {
        fail("the file is cut short: its " + std::string(what) + " of " + std::to_string(n) + " bytes runs past the end (" +
             std::to_string(data_.size() - pos_) + " bytes left); copy or record the snapshot again");
    }

    // `n` bytes of the input, checked against what is left.
    std::string_view take(std::uint64_t n, const char* what) {
        if (n > data_.size() - pos_) cut_short(what, n);
        const std::string_view s = data_.substr(pos_, n);
        pos_ += n;
        return s;
    }
    std::uint64_t little_endian(std::size_t bytes, const char* what) {
        const std::string_view s = take(bytes, what);
        std::uint64_t v = 0;
        for (std::size_t i = bytes; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(s[i]);
        return v;
    }

    void push(Value v) {
        if (stack_.size() >= kMaxStack) fail("more than " + std::to_string(kMaxStack) + " values on the stack");
        stack_.push_back(v);
    }
    Value pop() {
        if (stack_.size() <= floor()) fail("the stack is empty (a malformed pickle)");
        const Value v = stack_.back();
        stack_.pop_back();
        return v;
    }
    Value& top() {
        if (stack_.size() <= floor()) fail("the stack is empty (a malformed pickle)");
        return stack_.back();
    }
    std::size_t floor() const noexcept { return marks_.empty() ? 0 : marks_.back(); }
    // The values above the last MARK, which is removed.
    std::vector<Value> pop_mark() {
        if (marks_.empty()) fail("no MARK to collect items from (a malformed pickle)");
        const std::size_t from = marks_.back();
        marks_.pop_back();
        std::vector<Value> items(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
        stack_.resize(from);
        return items;
    }

    Value new_container(Kind kind, std::vector<Value> items = {}) {
        doc_.containers_.push_back(Document::Container{std::move(items), opcode_at_});
        return Value{kind, doc_.containers_.size() - 1};
    }
    Value new_string(Kind kind, std::string_view s) {
        doc_.strings_.emplace_back(s);
        return Value{kind, doc_.strings_.size() - 1};
    }
    Value integer(std::string_view s);  // little-endian two's complement

    bool scalar(unsigned char op);
    bool text(unsigned char op);
    bool container(unsigned char op);
    bool memo(unsigned char op);
    void extend(Value target, std::vector<Value> items);
    void set_items(Value target, std::vector<Value> items);
    void memo_put(std::uint64_t index, const Value& v);
    Value memo_get(std::uint64_t index);
    [[noreturn]] void refuse(unsigned char op) const;

    std::string_view data_;
    const std::string& name_;
    std::size_t pos_ = 0;
    std::size_t opcode_at_ = 0;
    Document doc_;
    std::vector<Value> stack_;
    std::vector<std::size_t> marks_;
    // The memo: dense where MEMOIZE and in-order PUTs fill it, sparse for
    // indices beyond its end (so a PUT of index 2^32-1 costs one entry).
    std::vector<Value> memo_;
    std::unordered_map<std::uint64_t, Value> sparse_memo_;
};

// A BININT, LONG1 or LONG4 payload: little-endian two's complement of any length.
Value Unpickler::integer(std::string_view s) {
    auto byte = [&s](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    if (s.empty()) return Value{Kind::integer, 0};
    const bool negative = (byte(s.size() - 1) & 0x80) != 0;
    const unsigned char fill = negative ? 0xff : 0x00;
    // The shortest two's complement form: drop sign bytes the byte below repeats.
    std::size_t used = s.size();
    while (used > 1 && byte(used - 1) == fill && ((byte(used - 2) & 0x80) != 0) == negative) --used;
    // Nine bytes fit only as a positive number whose ninth byte is the 0 sign byte.
    if (used > 9 || (used == 9 && (negative || byte(8) != 0))) return Value{Kind::big_integer, 0};
    std::uint64_t v = negative ? ~0ULL : 0;  // shifted in from the top: sign extension
    for (std::size_t i = std::min<std::size_t>(used, 8); i-- > 0;) v = (v << 8) | byte(i);
    return Value{used == 9 ? Kind::unsigned_integer : Kind::integer, v};
}

bool Unpickler::scalar(unsigned char op) {
    switch (op) {
        case 0x80: {  // PROTO
            const auto proto = static_cast<unsigned char>(take(1, "PROTO")[0]);
            if (proto > 5) fail("unsupported pickle protocol " + std::to_string(proto) + " (protocols 2 to 5 are read)");
            return true;
        }
        case 0x95: {  // FRAME: only a hint for buffering, but its length must be there
            const std::uint64_t n = little_endian(8, "FRAME");
            if (n > data_.size() - pos_) cut_short("FRAME", n);
            return true;
        }
        case 'N': push(Value{Kind::none, 0}); return true;
        case 0x88: push(Value{Kind::boolean, 1}); return true;
        case 0x89: push(Value{Kind::boolean, 0}); return true;
        case 'J': push(integer(take(4, "BININT"))); return true;
        case 'K': push(Value{Kind::integer, little_endian(1, "BININT1")}); return true;
        case 'M': push(Value{Kind::integer, little_endian(2, "BININT2")}); return true;
        case 0x8a: push(integer(take(little_endian(1, "LONG1"), "LONG1"))); return true;
        case 0x8b: {
            const std::uint64_t n = little_endian(4, "LONG4");
            if (n >> 31) fail("LONG4 with a negative length");
            push(integer(take(n, "LONG4")));
            return true;
        }
        case 'G': {  // BINFLOAT: big-endian
            const std::string_view s = take(8, "BINFLOAT");
            std::uint64_t bits = 0;
            for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
            push(Value{Kind::real, bits});
            return true;
        }
        default: return false;
    }
}

bool Unpickler::text(unsigned char op) {
    switch (op) {
        case 0x8c: push(new_string(Kind::text, take(little_endian(1, "SHORT_BINUNICODE"), "SHORT_BINUNICODE"))); return true;
        case 'X': push(new_string(Kind::text, take(little_endian(4, "BINUNICODE"), "BINUNICODE"))); return true;
        case 0x8d: push(new_string(Kind::text, take(little_endian(8, "BINUNICODE8"), "BINUNICODE8"))); return true;
        case 'U': push(new_string(Kind::text, take(little_endian(1, "SHORT_BINSTRING"), "SHORT_BINSTRING"))); return true;
        case 'T': {
            const std::uint64_t n = little_endian(4, "BINSTRING");
            if (n >> 31) fail("BINSTRING with a negative length");
            push(new_string(Kind::text, take(n, "BINSTRING")));
            return true;
        }
        case 'C': push(new_string(Kind::bytes, take(little_endian(1, "SHORT_BINBYTES"), "SHORT_BINBYTES"))); return true;
        case 'B': push(new_string(Kind::bytes, take(little_endian(4, "BINBYTES"), "BINBYTES"))); return true;
        case 0x8e: push(new_string(Kind::bytes, take(little_endian(8, "BINBYTES8"), "BINBYTES8"))); return true;
        case 0x96: push(new_string(Kind::bytes, take(little_endian(8, "BYTEARRAY8"), "BYTEARRAY8"))); return true;
        default: return false;
    }
}

void Unpickler::extend(Value target, std::vector<Value> items) {
    if (target.kind != Kind::list && target.kind != Kind::set)
        fail(std::string("APPEND to a ") + Document::kind_name(target.kind) + " (only lists and sets take items)");
    std::vector<Value>& into = doc_.containers_[target.bits].items;
    into.insert(into.end(), items.begin(), items.end());
}

void Unpickler::set_items(Value target, std::vector<Value> items) {
    if (target.kind != Kind::dict) fail(std::string("SETITEM on a ") + Document::kind_name(target.kind) + ", not a dict");
    if (items.size() % 2 != 0) fail("SETITEMS with a key and no value");
    std::vector<Value>& into = doc_.containers_[target.bits].items;
    into.insert(into.end(), items.begin(), items.end());
}

bool Unpickler::container(unsigned char op) {
    switch (op) {
        case '(':
            if (marks_.size() >= kMaxMarks) fail("nested deeper than " + std::to_string(kMaxMarks) + " MARKs");
            marks_.push_back(stack_.size());
            return true;
        case '0': pop(); return true;
        case '1': pop_mark(); return true;
        case '2': push(top()); return true;
        case ']': push(new_container(Kind::list)); return true;
        case '}': push(new_container(Kind::dict)); return true;
        case ')': push(new_container(Kind::tuple)); return true;
        case 0x8f: push(new_container(Kind::set)); return true;
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
            const std::size_t n = op - 0x84u;
            if (stack_.size() < floor() + n) fail("TUPLE" + std::to_string(n) + " on a stack of fewer items");
            std::vector<Value> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
            stack_.resize(stack_.size() - n);
            push(new_container(Kind::tuple, std::move(items)));
            return true;
        }
        case 't': push(new_container(Kind::tuple, pop_mark())); return true;
        case 'l': push(new_container(Kind::list, pop_mark())); return true;
        case 'd': {
            std::vector<Value> items = pop_mark();
            if (items.size() % 2 != 0) fail("DICT with a key and no value");
            push(new_container(Kind::dict, std::move(items)));
            return true;
        }
        case 0x91: push(new_container(Kind::set, pop_mark())); return true;  // FROZENSET
        case 'a': { const Value v = pop(); extend(top(), {v}); return true; }
        case 'e': case 0x90: { std::vector<Value> items = pop_mark(); extend(top(), std::move(items)); return true; }
        case 's': { const Value v = pop(); const Value k = pop(); set_items(top(), {k, v}); return true; }
        case 'u': { std::vector<Value> items = pop_mark(); set_items(top(), std::move(items)); return true; }
        default: return false;
    }
}

void Unpickler::memo_put(std::uint64_t index, const Value& v) {
    if (index < memo_.size()) {
        memo_[index] = v;
        return;
    }
    if (index > memo_.size()) {
        sparse_memo_[index] = v;
        return;
    }
    memo_.push_back(v);
    // Indices put out of order earlier may now continue the dense part.
    for (auto it = sparse_memo_.find(memo_.size()); it != sparse_memo_.end(); it = sparse_memo_.find(memo_.size())) {
        memo_.push_back(it->second);
        sparse_memo_.erase(it);
    }
}

Value Unpickler::memo_get(std::uint64_t index) {
    if (index < memo_.size()) return memo_[index];
    const auto it = sparse_memo_.find(index);
    if (it == sparse_memo_.end()) fail("memo index " + std::to_string(index) + " was never stored (" + std::to_string(memo_.size() + sparse_memo_.size()) + " entries)");
    return it->second;
}

bool Unpickler::memo(unsigned char op) {
    switch (op) {
        case 0x94: memo_put(memo_.size() + sparse_memo_.size(), top()); return true;  // MEMOIZE: memo[len(memo)]
        case 'q': memo_put(little_endian(1, "BINPUT"), top()); return true;
        case 'r': memo_put(little_endian(4, "LONG_BINPUT"), top()); return true;
        case 'h': push(memo_get(little_endian(1, "BINGET"))); return true;
        case 'j': push(memo_get(little_endian(4, "LONG_BINGET"))); return true;
        default: return false;
    }
}

void Unpickler::refuse(unsigned char op) const {
    for (const Refused& r : kRefused)
        if (r.opcode == op)
            fail(std::string("refusing opcode ") + r.name + " (" + hex_byte(op) +
                 "): it would import or call code, and a memory snapshot holds plain values only");
    if (op != 0 && std::strchr(kTextOpcodes, op))
        fail(std::string("protocol 0 opcode '") + static_cast<char>(op) + "': save the snapshot with pickle protocol 2 or later");
    fail("unknown opcode " + hex_byte(op) + " (not a pickle, or a corrupt one)");
}

Document unpickle(std::string_view data, const std::string& name) { return Unpickler(data, name).run(); }

}  // namespace gpumem::reuse_sim::pickle
