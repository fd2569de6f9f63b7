// A restricted unpickler for PyTorch memory snapshots: it builds plain values
// only (None, booleans, integers, floats, str, bytes, lists, tuples, sets,
// dicts) from pickle protocols 2 to 5, as Python's pickle.dump writes
// torch.cuda.memory._snapshot(). Every opcode that would import a module,
// call a function or build an object (GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
// INST, OBJ, NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4, out-of-band
// buffers) is refused: a snapshot from elsewhere cannot run code here.
//
// Memory follows the input's size: every opcode makes at most one value, a
// string's or a frame's length is checked against the bytes left before
// anything is allocated, memo indices far beyond the memo's size go to a
// sparse table instead of a vector sized by them, and the depth of MARKs and
// the stack are bounded. Errors are UsageError "FILE: offset N: reason".
// Pure logic: no CUDA, no printing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpumem::reuse_sim::pickle {

enum class Kind : std::uint8_t {
    none,
    boolean,
    integer,           // fits in int64
    unsigned_integer,  // 2^63 .. 2^64-1
    big_integer,       // beyond 64 bits: kept only as "too large"
    real,
    text,
    bytes,
    list,
    tuple,
    set,
    dict,
};

// A value: scalars inline, strings and containers by index into the
// Document, so that memo references share (as pickle's memo does) instead
// of copying, and no destructor recurses through a deep nesting.
struct Value {
    Kind kind = Kind::none;
    std::uint64_t bits = 0;  // integer (two's complement), unsigned, boolean, double's bits, or an index
};

class Document {
public:
    const Value& root() const noexcept { return root_; }

    // Typed views; each returns false (or an empty view) for another kind.
    bool as_u64(const Value& v, std::uint64_t& out) const noexcept;
    bool as_i64(const Value& v, std::int64_t& out) const noexcept;
    bool as_double(const Value& v, double& out) const noexcept;  // floats and integers
    bool as_bool(const Value& v, bool& out) const noexcept;
    bool as_text(const Value& v, std::string_view& out) const noexcept;
    // The items of a list, tuple or set; the keys and values, alternating, of a dict.
    bool items(const Value& v, const Value*& first, std::size_t& count) const noexcept;
    // A dict's value for a text key (the last one, as in Python); null when
    // absent or `dict` is not a dict.
    const Value* get(const Value& dict, std::string_view key) const noexcept;
    // Where the container `v` began in the input (for messages).
    std::uint64_t offset_of(const Value& v) const noexcept;
    // "dict", "list", "int"...: Python's names, for messages.
    static const char* kind_name(Kind kind) noexcept;

private:
    friend class Unpickler;
    struct Container {
        std::vector<Value> items;
        std::uint64_t offset = 0;
    };
    Value root_;
    std::vector<std::string> strings_;
    std::vector<Container> containers_;
};

// Unpickles `data`; `name` leads every error message. Throws UsageError.
Document unpickle(std::string_view data, const std::string& name);

// Whether `data` starts like a pickle of protocol 2 or later (PROTO, 0x80).
inline bool looks_like_pickle(std::string_view data) noexcept { return !data.empty() && static_cast<unsigned char>(data[0]) == 0x80; }

}  // namespace gpumem::reuse_sim::pickle
