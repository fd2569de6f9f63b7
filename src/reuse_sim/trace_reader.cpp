#include "reuse_sim/trace_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/errors.hpp"

namespace gpumem::reuse_sim {

TraceFormat parse_trace_format(std::string_view text) {
    if (text == "auto") return TraceFormat::automatic;
    if (text == "gpumem") return TraceFormat::gpumem;
    if (text == "rmm") return TraceFormat::rmm;
    throw UsageError("unknown trace format '" + std::string(text) + "' (expected auto, gpumem or rmm)");
}

const char* trace_format_name(TraceFormat format) noexcept {
    switch (format) {
        case TraceFormat::gpumem: return "gpumem";
        case TraceFormat::rmm: return "rmm";
        default: return "auto";
    }
}

// ---------------------------------------------------------------- LineReader

LineReader::LineReader(const std::string& path) : path_(path) {
    constexpr std::size_t kLargeBuffer = 1 << 20;
    std::size_t buffer_bytes = kLargeBuffer;
    if (path == "-") {
        file_ = stdin;
        path_ = "<stdin>";
    } else {
        file_ = std::fopen(path.c_str(), "rb");
        if (!file_) throw UsageError(path + ": cannot open trace: " + std::strerror(errno));
        owns_file_ = true;
        // A small regular file needs no 1 MiB block: one read holds it. This
        // keeps a reader of a short trace (tests, the fuzzer, format
        // detection, which opens the file again) from zeroing a megabyte.
        struct stat st {};
        if (fstat(fileno(file_), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
            static_cast<std::uint64_t>(st.st_size) < kLargeBuffer)
            buffer_bytes = std::max<std::size_t>(static_cast<std::size_t>(st.st_size) + 1, 4096);
    }
    buffer_.resize(buffer_bytes);
}

LineReader::~LineReader() {
    if (owns_file_ && file_) std::fclose(file_);
}

bool LineReader::refill() {
    if (eof_) return false;
    if (begin_ > 0) {  // keep the partial line at the front
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a line longer than the buffer
    const std::size_t n = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, file_);
    if (n == 0) {
        if (std::ferror(file_)) throw UsageError(path_ + ": read error: " + std::strerror(errno));
        eof_ = true;
        return false;
    }
    end_ += n;
    return true;
}

bool LineReader::next(std::string_view& line) {
    for (;;) {
        const char* start = buffer_.data() + begin_;
        const void* nl = std::memchr(start, '\n', end_ - begin_);
        if (nl) {
            std::size_t len = static_cast<const char*>(nl) - start;
            begin_ += len + 1;
            if (len > 0 && start[len - 1] == '\r') --len;
            line = std::string_view(start, len);
            ++line_number_;
            return true;
        }
        if (!refill()) {
            if (begin_ == end_) return false;
            // Last line without a newline.
            const char* s = buffer_.data() + begin_;
            std::size_t len = end_ - begin_;
            begin_ = end_;
            if (len > 0 && s[len - 1] == '\r') --len;
            line = std::string_view(s, len);
            ++line_number_;
            return true;
        }
    }
}

bool LineReader::rewind() {
    if (!owns_file_) return false;
    if (std::fseek(file_, 0, SEEK_SET) != 0) return false;
    std::clearerr(file_);
    begin_ = end_ = 0;
    eof_ = false;
    line_number_ = 0;
    return true;
}

// ------------------------------------------------------------------ TagTable

namespace {

std::uint64_t hash_text(std::string_view s) noexcept {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

}  // namespace

std::uint32_t TagTable::intern(std::string_view name) {
    if (slots_.empty()) slots_.assign(64, kNoTag);
    std::size_t mask = slots_.size() - 1;
    std::size_t i = hash_text(name) & mask;
    while (slots_[i] != kNoTag) {
        if (names_[slots_[i]] == name) return slots_[i];
        i = (i + 1) & mask;
    }
    const auto index = static_cast<std::uint32_t>(names_.size());
    names_.emplace_back(name);
    slots_[i] = index;
    if (names_.size() * 2 > slots_.size()) {
        slots_.assign(slots_.size() * 2, kNoTag);
        mask = slots_.size() - 1;
        for (std::uint32_t k = 0; k < names_.size(); ++k) {
            std::size_t j = hash_text(names_[k]) & mask;
            while (slots_[j] != kNoTag) j = (j + 1) & mask;
            slots_[j] = k;
        }
    }
    return index;
}

// ------------------------------------------------------------------- parsing

namespace {

constexpr std::string_view kGpumemHeader = "action,id,size,stream,tag";
constexpr std::string_view kRmmHeader = "Thread,Time,Action,Pointer,Size,Stream";

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool is_skippable(std::string_view line) {
    if (!line.empty() && line.front() != ' ' && line.front() != '\t' && line.front() != '#') return false;  // the usual case
    const std::string_view t = trim(line);
    return t.empty() || t.front() == '#';
}

// One pass over a well-formed gpumem line ("alloc,ID,SIZE,STREAM,TAG" or
// "free,ID,[SIZE],[STREAM],[TAG]" with plain digits): the common case, at a
// fraction of the careful parser's cost. Anything unusual (spaces, huge
// numbers, errors) returns false and goes through the careful parser, which
// also words the error message.
bool parse_gpumem_fast(std::string_view line, Event& e, std::string_view& tag) {
    const char* p = line.data();
    const char* const end = p + line.size();
    if (line.size() > 6 && std::memcmp(p, "alloc,", 6) == 0) {
        e.kind = EventKind::alloc;
        p += 6;
    } else if (line.size() > 5 && std::memcmp(p, "free,", 5) == 0) {
        e.kind = EventKind::free;
        p += 5;
    } else {
        return false;
    }
    // Digits up to a comma; at most 19 of them, which cannot overflow.
    auto field = [&p, end](std::uint64_t& out, bool& present) {
        const char* const start = p;
        std::uint64_t v = 0;
        while (p < end && static_cast<unsigned char>(*p - '0') < 10) {
            v = v * 10 + static_cast<std::uint64_t>(*p - '0');
            ++p;
        }
        if (p - start > 19 || p == end || *p != ',') return false;
        ++p;
        present = p - 1 != start;
        out = v;
        return true;
    };
    bool present = false;
    if (!field(e.id, present) || !present) return false;
    if (!field(e.size, present)) return false;
    if (e.kind == EventKind::alloc && e.size == 0) return false;
    if (!field(e.stream, present)) return false;
    tag = std::string_view(p, static_cast<std::size_t>(end - p));
    return tag.find(',') == std::string_view::npos;
}

// Splits on commas into at most `max` fields; returns the number found (which
// may exceed max: then the remaining text is not split further).
std::size_t split_fields(std::string_view line, std::string_view* fields, std::size_t max) {
    std::size_t n = 0;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = line.find(',', start);
        if (n == max) return max + 1;
        if (comma == std::string_view::npos) {
            fields[n++] = line.substr(start);
            return n;
        }
        fields[n++] = line.substr(start, comma - start);
        start = comma + 1;
    }
}

bool parse_decimal(std::string_view s, std::uint64_t& out) {
    s = trim(s);
    if (s.empty() || s.size() > 20) return false;
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    out = v;
    return true;
}

// "0x7f00", "7f00" with 0x optional, or "(nil)"/"0" forms for null.
bool parse_hex(std::string_view s, std::uint64_t& out) {
    s = trim(s);
    if (s == "(nil)" || s == "nullptr") {
        out = 0;
        return true;
    }
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
    if (s.empty() || s.size() > 16) return false;
    std::uint64_t v = 0;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return false;
        v = (v << 4) | static_cast<std::uint64_t>(d);
    }
    out = v;
    return true;
}

std::string quoted(std::string_view s) {
    std::string out = "'";
    out.append(s.substr(0, 60));
    if (s.size() > 60) out += "...";
    return out + "'";
}

class CsvTraceSource : public EventSource {
public:
    explicit CsvTraceSource(const std::string& path) : reader_(path) {}

    std::string location(std::uint64_t line) const override { return reader_.path() + ":" + std::to_string(line); }
    bool rewind() override {
        if (!reader_.rewind()) return false;
        header_seen_ = false;
        return true;
    }

protected:
    [[noreturn]] void fail(const std::string& what) const {
        throw UsageError(location(reader_.line_number()) + ": " + what);
    }
    // Next line that is not blank or a comment; checks the header first.
    bool next_data_line(std::string_view& line, std::string_view header, const char* format_name) {
        while (reader_.next(line)) {
            if (is_skippable(line)) continue;
            if (!header_seen_) {
                if (trim(line) != header)
                    fail(std::string("expected the ") + format_name + " header '" + std::string(header) + "', found " +
                         quoted(line));
                header_seen_ = true;
                continue;
            }
            return true;
        }
        if (!header_seen_) fail(std::string("empty trace: no ") + format_name + " header");
        return false;
    }

    LineReader reader_;
    bool header_seen_ = false;
};

class GpumemCsvSource final : public CsvTraceSource {
public:
    using CsvTraceSource::CsvTraceSource;

    std::string description() const override { return reader_.path() + " (gpumem CSV)"; }
    std::string tag_name(std::uint32_t tag) const override { return tag == kNoTag ? std::string() : tags_.name(tag); }

    bool next(Event& e) override {
        std::string_view line;
        if (!next_data_line(line, kGpumemHeader, "gpumem trace")) return false;
        std::string_view fast_tag;
        if (parse_gpumem_fast(line, e, fast_tag)) {
            e.tag = fast_tag.empty() ? kNoTag : tags_.intern(fast_tag);
            e.line = reader_.line_number();
            return true;
        }
        std::string_view f[5];
        const std::size_t n = split_fields(line, f, 5);
        if (n != 5)
            fail("expected 5 fields (action,id,size,stream,tag), found " + (n > 5 ? std::string("more") : std::to_string(n)));
        const std::string_view action = trim(f[0]);
        if (action == "alloc") e.kind = EventKind::alloc;
        else if (action == "free") e.kind = EventKind::free;
        else fail("unknown action " + quoted(action) + " (expected alloc or free)");
        if (!parse_decimal(f[1], e.id)) fail("id: expected an unsigned integer, found " + quoted(f[1]));
        e.size = 0;
        if (!trim(f[2]).empty() && !parse_decimal(f[2], e.size)) fail("size: expected bytes as an unsigned integer, found " + quoted(f[2]));
        if (e.kind == EventKind::alloc && e.size == 0) fail("alloc needs a size of at least 1 byte");
        e.stream = 0;
        if (!trim(f[3]).empty() && !parse_decimal(f[3], e.stream)) fail("stream: expected an unsigned integer, found " + quoted(f[3]));
        const std::string_view tag = f[4];
        e.tag = tag.empty() ? kNoTag : tags_.intern(tag);
        e.line = reader_.line_number();
        return true;
    }

private:
    TagTable tags_;
};

class RmmCsvSource final : public CsvTraceSource {
public:
    using CsvTraceSource::CsvTraceSource;

    std::string description() const override { return reader_.path() + " (RMM log CSV)"; }
    std::uint64_t skipped() const override { return failures_; }
    bool rewind() override {
        failures_ = 0;
        return CsvTraceSource::rewind();
    }

    bool next(Event& e) override {
        std::string_view line;
        for (;;) {
            if (!next_data_line(line, kRmmHeader, "RMM log")) return false;
            std::string_view f[6];
            const std::size_t n = split_fields(line, f, 6);
            if (n != 6)
                fail("expected 6 fields (Thread,Time,Action,Pointer,Size,Stream), found " +
                     (n > 6 ? std::string("more") : std::to_string(n)));
            const std::string_view action = trim(f[2]);
            if (action == "allocate failure") {
                // The program asked and RMM refused: nothing was live, so
                // nothing can be replayed; counted for the report.
                ++failures_;
                continue;
            }
            if (action == "allocate") e.kind = EventKind::alloc;
            else if (action == "free") e.kind = EventKind::free;
            else fail("unknown action " + quoted(action) + " (expected allocate, allocate failure or free)");
            if (!parse_hex(f[3], e.id)) fail("Pointer: expected a hexadecimal address, found " + quoted(f[3]));
            if (!parse_decimal(f[4], e.size)) fail("Size: expected bytes as an unsigned integer, found " + quoted(f[4]));
            if (e.kind == EventKind::alloc && e.size == 0) fail("allocate needs a size of at least 1 byte");
            if (!parse_hex(f[5], e.stream)) fail("Stream: expected a hexadecimal stream handle, found " + quoted(f[5]));
            e.tag = kNoTag;
            e.line = reader_.line_number();
            return true;
        }
    }

private:
    std::uint64_t failures_ = 0;
};

}  // namespace

TraceFormat detect_trace_format(const std::string& path) {
    LineReader reader(path);
    std::string_view line;
    while (reader.next(line)) {
        if (is_skippable(line)) continue;
        const std::string_view t = trim(line);
        if (t == kGpumemHeader) return TraceFormat::gpumem;
        if (t == kRmmHeader) return TraceFormat::rmm;
        throw UsageError(reader.path() + ":" + std::to_string(reader.line_number()) +
                         ": unrecognised trace header " + quoted(t) + " (expected '" + std::string(kGpumemHeader) +
                         "' or '" + std::string(kRmmHeader) + "')");
    }
    throw UsageError(reader.path() + ": empty trace: no header line");
}

// ---------------------------------------------------------------- writing

GpumemTraceWriter::GpumemTraceWriter(const std::string& path) : path_(path), buffer_(1 << 16) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) throw UsageError(path + ": cannot create trace: " + std::strerror(errno));
    static const char header[] = "# gpumem-trace v1\naction,id,size,stream,tag\n";
    append(header, sizeof header - 1);
}

GpumemTraceWriter::~GpumemTraceWriter() {
    if (file_) std::fclose(file_);
}

void GpumemTraceWriter::append(const char* data, std::size_t n) {
    if (used_ + n > buffer_.size()) flush_buffer();
    if (n > buffer_.size()) buffer_.resize(n);
    std::memcpy(buffer_.data() + used_, data, n);
    used_ += n;
}

void GpumemTraceWriter::flush_buffer() {
    if (used_ && std::fwrite(buffer_.data(), 1, used_, file_) != used_)
        throw Error(path_ + ": error writing trace: " + std::strerror(errno));
    used_ = 0;
}

void GpumemTraceWriter::write(const Event& e, std::string_view tag) {
    auto number = [this](std::uint64_t v) {
        char digits[24];
        const auto r = std::to_chars(digits, digits + sizeof digits, v);
        append(digits, static_cast<std::size_t>(r.ptr - digits));
    };
    switch (e.kind) {
        case EventKind::sync:
            append("# sync\n", 7);
            return;
        case EventKind::alloc:
            append("alloc,", 6);
            number(e.id);
            append(",", 1);
            number(e.size);
            append(",", 1);
            number(e.stream);
            append(",", 1);
            append(tag.data(), tag.size());
            append("\n", 1);
            return;
        case EventKind::free:
            append("free,", 5);
            number(e.id);
            append(",,,\n", 4);
            return;
    }
}

void GpumemTraceWriter::close() {
    flush_buffer();
    const bool failed = std::fclose(file_) != 0;
    file_ = nullptr;
    if (failed) throw Error(path_ + ": error writing trace: " + std::strerror(errno));
}

std::unique_ptr<EventSource> open_trace(const std::string& path, TraceFormat format) {
    if (format == TraceFormat::automatic) {
        if (path == "-") throw UsageError("--trace - (standard input) needs --trace-format gpumem or rmm");
        format = detect_trace_format(path);
    }
    if (format == TraceFormat::rmm) return std::make_unique<RmmCsvSource>(path);
    return std::make_unique<GpumemCsvSource>(path);
}

}  // namespace gpumem::reuse_sim
