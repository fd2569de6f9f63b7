#include "reuse_sim/trace_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/text.hpp"
#include "reuse_sim/pickle_reader.hpp"
#include "reuse_sim/snapshot_reader.hpp"

namespace gpumem::reuse_sim {

namespace {

constexpr Named<TraceFormat> kTraceFormatRows[] = {
    {"auto", TraceFormat::automatic, "a snapshot by its first byte, else gpumem or rmm by the header line"},
    {"gpumem", TraceFormat::gpumem, "gpumem's CSV: action,id,size,stream,tag (tests/TRACE_FORMAT.md)"},
    {"rmm", TraceFormat::rmm, "RAPIDS RMM logging_resource_adaptor CSV: Thread,Time,Action,Pointer,Size,Stream"},
    {"snapshot", TraceFormat::snapshot, "PyTorch memory snapshot: the pickle of torch.cuda.memory._snapshot()"},
};

// open(2) that waits for a FIFO's writer as long as it takes, but not past
// Ctrl-C: the handlers gpumem installs interrupt the wait (EINTR).
int open_for_reading(const std::string& path) {
    for (;;) {
        throw_if_interrupted();
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) return fd;
        if (errno != EINTR) throw UsageError(path + ": cannot open trace: " + std::strerror(errno));
    }
}

void write_all(int fd, const char* data, std::size_t bytes, const std::string& what) {
    while (bytes > 0) {
        const ssize_t n = ::write(fd, data, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error(what + ": " + std::strerror(n < 0 ? errno : ENOSPC));
        data += n;
        bytes -= static_cast<std::size_t>(n);
    }
}

// An unlinked temporary file: gone when its descriptor is closed.
int unlinked_temporary_file(const std::string& what) {
    const char* dir = std::getenv("TMPDIR");
    std::string name = std::string(dir && *dir ? dir : "/tmp") + "/gpumem-trace-XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw Error(what + ": cannot create a temporary file in " + name.substr(0, name.rfind('/')) + ": " + std::strerror(errno));
    ::unlink(name.c_str());
    return fd;
}

}  // namespace

const NameTable<TraceFormat> kTraceFormats{"trace format", kTraceFormatRows};

// ---------------------------------------------------------------- LineReader

LineReader::LineReader(const std::string& path, bool rereadable) : path_(path) {
    constexpr std::size_t kLargeBuffer = 1 << 20;
    std::size_t buffer_bytes = kLargeBuffer;
    if (path == "-") {
        fd_ = STDIN_FILENO;
        path_ = "<stdin>";
    } else {
        fd_ = open_for_reading(path);
        owns_fd_ = true;
    }
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
        // Standard input may be a regular file read from an offset: only
        // files opened here seek back to their start.
        seekable_ = owns_fd_;
        // A small regular file needs no 1 MiB block: one read holds it. This
        // keeps a reader of a short trace (tests, the fuzzer) from zeroing a
        // megabyte.
        if (st.st_size >= 0 && static_cast<std::uint64_t>(st.st_size) < kLargeBuffer)
            buffer_bytes = std::max<std::size_t>(static_cast<std::size_t>(st.st_size) + 1, 4096);
    } else if (owns_fd_ && S_ISDIR(st.st_mode)) {
        ::close(fd_);
        throw UsageError(path + ": cannot read a trace from a directory");
    }
    if (rereadable && !seekable_) spool_fd_ = unlinked_temporary_file(path_);
    buffer_.resize(buffer_bytes);
}

LineReader::LineReader(LineReader&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      owns_fd_(std::exchange(other.owns_fd_, false)),
      seekable_(other.seekable_),
      spool_fd_(std::exchange(other.spool_fd_, -1)),
      started_(other.started_),
      buffer_(std::move(other.buffer_)),
      begin_(other.begin_),
      end_(other.end_),
      eof_(other.eof_),
      line_number_(other.line_number_) {}

LineReader::~LineReader() {
    if (owns_fd_ && fd_ >= 0) ::close(fd_);
    if (spool_fd_ >= 0 && spool_fd_ != fd_) ::close(spool_fd_);
}

// Up to `bytes` from the input: 0 at its end. A read that a signal
// interrupts is retried, unless the signal was Ctrl-C or SIGTERM.
std::size_t LineReader::read_some(char* into, std::size_t bytes) {
    for (;;) {
        const ssize_t n = ::read(fd_, into, bytes);
        if (n >= 0) return static_cast<std::size_t>(n);
        if (errno != EINTR) throw UsageError(path_ + ": read error: " + std::strerror(errno));
        throw_if_interrupted();
    }
}

// Rereadable input that cannot seek: what was read goes to the spool too.
void LineReader::keep(const char* data, std::size_t bytes) {
    if (spool_fd_ >= 0 && spool_fd_ != fd_) write_all(spool_fd_, data, bytes, path_ + ": keeping a copy to read it again");
}

bool LineReader::refill() {
    if (eof_) return false;
    started_ = true;
    if (begin_ > 0) {  // keep the partial line at the front
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (end_ == buffer_.size()) {  // a line longer than the buffer
        if (buffer_.size() >= kMaxTraceLineBytes)
            throw UsageError(path_ + ":" + std::to_string(line_number_ + 1) + ": a line longer than " +
                             std::to_string(kMaxTraceLineBytes >> 20) +
                             " MiB, the limit for one line of a trace (a binary file, or input that never ends a line?)");
        buffer_.resize(std::min(buffer_.size() * 2, kMaxTraceLineBytes));
    }
    const std::size_t n = read_some(buffer_.data() + end_, buffer_.size() - end_);
    if (n == 0) {
        eof_ = true;
        return false;
    }
    keep(buffer_.data() + end_, n);
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

int LineReader::peek_byte() {
    if (begin_ == end_ && !refill()) return -1;
    return static_cast<unsigned char>(buffer_[begin_]);
}

std::string_view LineReader::peek(std::size_t n) {
    while (end_ - begin_ < n && refill()) {
    }
    return std::string_view(buffer_.data() + begin_, std::min(n, end_ - begin_));
}

std::string LineReader::read_rest(std::uint64_t limit) {
    const auto too_large = [&] {
        return UsageError(path_ + ": more than " + std::to_string(limit >> 30) + " GiB, the limit for a snapshot read whole" +
                          " (input that never ends?)");
    };
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > limit) throw too_large();
    std::string all(buffer_.data() + begin_, end_ - begin_);
    begin_ = end_;
    started_ = true;
    std::vector<char> chunk(1 << 20);
    while (!eof_) {
        if (all.size() > limit) throw too_large();
        const std::size_t n = read_some(chunk.data(), chunk.size());
        if (n == 0) eof_ = true;
        all.append(chunk.data(), n);
    }
    if (all.size() > limit) throw too_large();
    return all;
}

void LineReader::read_rest_into_spool() {
    std::vector<char> chunk(1 << 16);
    while (!eof_) {
        const std::size_t n = read_some(chunk.data(), chunk.size());
        if (n == 0) eof_ = true;
        keep(chunk.data(), n);
    }
}

bool LineReader::rewind() {
    if (!started_) return true;  // nothing read yet
    if (spool_fd_ >= 0 && spool_fd_ != fd_) {
        // From now on the copy is the input: read what is left of the
        // original into it first, then let the original go.
        read_rest_into_spool();
        if (owns_fd_) ::close(fd_);
        fd_ = spool_fd_;
        owns_fd_ = true;
        seekable_ = true;
    }
    if (!seekable_ || ::lseek(fd_, 0, SEEK_SET) != 0) return false;
    begin_ = end_ = 0;
    eof_ = false;
    line_number_ = 0;
    started_ = false;
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

// A field or line in a message: a binary file's bytes as \xNN, never raw.
std::string quoted(std::string_view s) { return "'" + printable(s, 60) + "'"; }

class CsvTraceSource : public EventSource {
public:
    // `header_seen`: the reader stands after the header (format detection read it).
    CsvTraceSource(LineReader reader, bool header_seen) : reader_(std::move(reader)), header_seen_(header_seen) {}

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
    // With sync_comments_, a "# sync" comment after the header (what gpumem
    // wrote for sync points before version 2) reads as a sync line.
    bool next_data_line(std::string_view& line, std::string_view header, const char* format_name) {
        while (reader_.next(line)) {
            if (is_skippable(line)) {
                if (sync_comments_ && header_seen_ && trim(line) == "# sync") {
                    line = "sync,,,,";
                    return true;
                }
                continue;
            }
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
    bool sync_comments_ = false;
};

// The actions of a gpumem trace and which fields each takes.
enum class Field : std::uint8_t { none, optional, required };
struct ActionRow {
    std::string_view name;
    EventKind kind;
    Field id, size, stream, tag;  // size "required": at least 1 byte
};
constexpr ActionRow kActions[] = {
    {"alloc", EventKind::alloc, Field::required, Field::required, Field::optional, Field::optional},
    {"free", EventKind::free, Field::required, Field::optional, Field::optional, Field::optional},
    {"sync", EventKind::sync, Field::none, Field::none, Field::none, Field::none},
    {"empty_cache", EventKind::empty_cache, Field::none, Field::none, Field::none, Field::none},
    {"oom", EventKind::oom, Field::none, Field::required, Field::optional, Field::optional},
    // The settings' text in the tag, its commas written as ';' (a CSV field).
    {"settings", EventKind::settings, Field::none, Field::none, Field::none, Field::required},
    {"pool_release", EventKind::pool_release, Field::required, Field::optional, Field::none, Field::none},
    {"segment_alloc", EventKind::segment_alloc, Field::optional, Field::required, Field::optional, Field::none},
    {"segment_free", EventKind::segment_free, Field::optional, Field::required, Field::optional, Field::none},
    {"segment_map", EventKind::segment_map, Field::optional, Field::required, Field::optional, Field::none},
    {"segment_unmap", EventKind::segment_unmap, Field::optional, Field::required, Field::optional, Field::none},
};

const ActionRow& action_row(EventKind kind) {
    for (const ActionRow& row : kActions)
        if (row.kind == kind) return row;
    return kActions[0];
}

// A gpumem trace read through the fast path for well-formed alloc and free
// lines and a careful one (with the messages) for everything else.
class GpumemCsvSource final : public CsvTraceSource {
public:
    GpumemCsvSource(LineReader reader, bool header_seen) : CsvTraceSource(std::move(reader), header_seen) { sync_comments_ = true; }

    std::string description() const override { return reader_.path() + " (gpumem CSV)"; }
    std::string format() const override { return "gpumem"; }
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
        parse_careful(line, e);
        e.line = reader_.line_number();
        return true;
    }

private:
    const ActionRow& action(std::string_view name) const {
        for (const ActionRow& row : kActions)
            if (row.name == name) return row;
        std::string names;
        for (const ActionRow& row : kActions) names += (names.empty() ? "" : ", ") + std::string(row.name);
        fail("unknown action " + quoted(name) + " (expected " + names + ")");
    }
    // A numeric field: empty is `fallback` where the action allows it.
    std::uint64_t number(std::string_view text, Field rule, const ActionRow& row, const char* name, const char* expected,
                         std::uint64_t fallback = 0) const {
        const bool empty = trim(text).empty();
        if (rule == Field::none && !empty) fail(std::string(row.name) + " takes no " + name + ", found " + quoted(text));
        if (empty) {
            if (rule == Field::required) fail(std::string(row.name) + " needs " + (std::string(name) == "size" ? "a size of at least 1 byte" : std::string("an ") + name));
            return fallback;
        }
        std::uint64_t v = 0;
        if (!parse_decimal(text, v)) fail(std::string(name) + ": expected " + expected + ", found " + quoted(text));
        return v;
    }

    void parse_careful(std::string_view line, Event& e) {
        std::string_view f[5];
        const std::size_t n = split_fields(line, f, 5);
        if (n != 5)
            fail("expected 5 fields (action,id,size,stream,tag), found " + (n > 5 ? std::string("more") : std::to_string(n)));
        const ActionRow& row = action(trim(f[0]));
        e.kind = row.kind;
        e.id = number(f[1], row.id, row, "id", "an unsigned integer");
        e.size = number(f[2], row.size, row, "size", "bytes as an unsigned integer");
        if (row.size == Field::required && e.size == 0) fail(std::string(row.name) + " needs a size of at least 1 byte");
        e.stream = number(f[3], row.stream, row, "stream", "an unsigned integer");
        if (row.tag == Field::none && !f[4].empty()) fail(std::string(row.name) + " takes no tag, found " + quoted(f[4]));
        if (row.tag == Field::required && trim(f[4]).empty()) fail(std::string(row.name) + " needs its text in the tag field");
        if (e.kind == EventKind::settings) {
            std::string text(trim(f[4]));
            std::replace(text.begin(), text.end(), ';', ',');
            e.tag = tags_.intern(text);
            return;
        }
        e.tag = f[4].empty() || row.tag == Field::none ? kNoTag : tags_.intern(f[4]);
    }

    TagTable tags_;
};

class RmmCsvSource final : public CsvTraceSource {
public:
    using CsvTraceSource::CsvTraceSource;

    std::string description() const override { return reader_.path() + " (RMM log CSV)"; }
    std::string format() const override { return "rmm"; }
    std::uint64_t skipped() const override { return failures_; }
    std::string skipped_what() const override { return "'allocate failure' lines of the trace"; }
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


// The format named by the first byte of `reader` (a pickle's PROTO opcode)
// or by its first line that is not a comment, which it reads.
TraceFormat read_format_header(LineReader& reader) {
    if (reader.peek_byte() == 0x80) return TraceFormat::snapshot;
    std::string_view line;
    while (reader.next(line)) {
        if (is_skippable(line)) continue;
        const std::string_view t = trim(line);
        if (t == kGpumemHeader) return TraceFormat::gpumem;
        if (t == kRmmHeader) return TraceFormat::rmm;
        if (looks_binary(line))
            throw UsageError(reader.path() + ": binary data, not a trace (expected a CSV trace whose first line is '" +
                             std::string(kGpumemHeader) + "' or '" + std::string(kRmmHeader) +
                             "', or a PyTorch snapshot pickle): give --trace a trace file");
        throw UsageError(reader.path() + ":" + std::to_string(reader.line_number()) +
                         ": unrecognised trace header " + quoted(t) + " (expected '" + std::string(kGpumemHeader) +
                         "' or '" + std::string(kRmmHeader) + "', or a PyTorch snapshot pickle)");
    }
    throw UsageError(reader.path() + ": empty trace: no header line");
}

}  // namespace

TraceFormat detect_trace_format(const std::string& path) {
    LineReader reader(path);
    return read_format_header(reader);
}

// ---------------------------------------------------------------- writing

GpumemTraceWriter::GpumemTraceWriter(const std::string& path) : path_(path), buffer_(1 << 16) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) throw UsageError(path + ": cannot create trace: " + std::strerror(errno));
    static const char header[] = "# gpumem-trace v2\naction,id,size,stream,tag\n";
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
    const ActionRow& row = action_row(e.kind);
    append(row.name.data(), row.name.size());
    append(",", 1);
    // Each field as the action takes it; a free names its id alone.
    if (row.id != Field::none) number(e.id);
    append(",", 1);
    if (row.size == Field::required || (e.kind == EventKind::pool_release && e.size != 0)) number(e.size);
    append(",", 1);
    if (row.stream != Field::none && e.kind != EventKind::free) number(e.stream);
    append(",", 1);
    if (e.kind == EventKind::settings) {
        std::string text(tag);
        std::replace(text.begin(), text.end(), ',', ';');
        append(text.data(), text.size());
    } else if (row.tag != Field::none && e.kind != EventKind::free) {
        append(tag.data(), tag.size());
    }
    append("\n", 1);
}

void GpumemTraceWriter::close() {
    flush_buffer();
    const bool failed = std::fclose(file_) != 0;
    file_ = nullptr;
    if (failed) throw Error(path_ + ": error writing trace: " + std::strerror(errno));
}

std::unique_ptr<EventSource> open_trace(const std::string& path, TraceFormat format, bool rereadable,
                                        std::optional<std::uint32_t> snapshot_device, const RecordedCalls* calls) {
    LineReader reader(path, rereadable);
    const bool detected = format == TraceFormat::automatic;
    if (detected) format = read_format_header(reader);
    // A snapshot is one pickled object: read whole, once; it rewinds in memory.
    if (format == TraceFormat::snapshot) {
        // A pickle of protocol 2 to 5, known by its first two bytes before
        // the rest is read (/dev/zero is not read to the limit).
        const std::string_view start = reader.peek(2);
        if (start.size() < 2 || static_cast<unsigned char>(start[0]) != 0x80 || start[1] < 2 || start[1] > 5)
            throw UsageError(reader.path() + ": not a PyTorch snapshot: a pickle of protocol 2 to 5 starts with bytes 0x80 0x02..0x05");
        return open_snapshot(reader.path(), reader.read_rest(kMaxSnapshotBytes), snapshot_device, calls);
    }
    if (format == TraceFormat::rmm) return std::make_unique<RmmCsvSource>(std::move(reader), detected);
    return std::make_unique<GpumemCsvSource>(std::move(reader), detected);
}

}  // namespace gpumem::reuse_sim
