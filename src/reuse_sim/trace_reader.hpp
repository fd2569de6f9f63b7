// Streaming readers for allocation traces: gpumem's own CSV format
// (tests/TRACE_FORMAT.md) and RAPIDS RMM's logging_resource_adaptor CSV.
// They hold one buffered block of the file and the table of tag names, never
// the whole trace. Malformed lines throw UsageError "file:line: what".
// PyTorch memory snapshots (pickles) are recognised by their first byte and
// read whole by snapshot_reader.hpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/name_table.hpp"
#include "reuse_sim/events.hpp"
#include "reuse_sim/snapshot_reader.hpp"

namespace gpumem::reuse_sim {

enum class TraceFormat { automatic, gpumem, rmm, snapshot };

// What an input may hold, so that one that never ends (a FIFO, a
// character device such as /dev/zero) or a line that never ends is refused
// at once instead of read into memory: a line of a CSV trace, and a PyTorch
// snapshot (read whole: the pickle and the values it holds must fit in memory).
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{1} << 20;
inline constexpr std::uint64_t kMaxSnapshotBytes = std::uint64_t{4} << 30;

// The formats --trace-format takes (gpumem --list trace-formats).
extern const NameTable<TraceFormat> kTraceFormats;

// Reads a file (or standard input for "-") line by line through a large
// buffer, opening it once: a FIFO or a pipe can be read only once, and its
// writer may come late. Lines are returned without their end of line ("\n"
// or "\r\n"). Waiting for a writer or for data ends with InterruptedError on
// Ctrl-C or SIGTERM (with gpumem's handlers installed).
class LineReader {
public:
    // `rereadable`: an input that cannot seek (standard input, a FIFO) is
    // copied, as it is read, to an unlinked temporary file ($TMPDIR, else
    // /tmp) that rewind() then reads. Throws UsageError when `path` cannot
    // be opened.
    explicit LineReader(const std::string& path, bool rereadable = false);
    ~LineReader();
    LineReader(LineReader&& other) noexcept;
    LineReader& operator=(LineReader&&) = delete;
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    // The next line. Throws UsageError for a line longer than
    // kMaxTraceLineBytes, having read no more than that of it.
    bool next(std::string_view& line);
    // The first byte not yet read, without consuming it; -1 at the end.
    int peek_byte();
    // Up to `n` bytes not yet read (fewer at the end), without consuming them.
    std::string_view peek(std::size_t n);
    // Everything not yet read (a snapshot is read whole), without keeping a
    // copy for rewind(). Throws UsageError when it is more than `limit`
    // bytes, before reading a regular file, and as soon as a stream passes it.
    std::string read_rest(std::uint64_t limit);
    std::uint64_t line_number() const noexcept { return line_number_; }
    // Back to the first line; false when the input cannot seek and was not
    // opened rereadable.
    bool rewind();
    const std::string& path() const noexcept { return path_; }

private:
    bool refill();
    std::size_t read_some(char* into, std::size_t bytes);
    void keep(const char* data, std::size_t bytes);
    void read_rest_into_spool();

    std::string path_;
    int fd_ = -1;
    bool owns_fd_ = false;
    bool seekable_ = false;
    int spool_fd_ = -1;  // rereadable input that cannot seek: what was read so far
    bool started_ = false;
    std::vector<char> buffer_;
    std::size_t begin_ = 0, end_ = 0;
    bool eof_ = false;
    std::uint64_t line_number_ = 0;
};

// Interns tag names: the same text always gets the same small index.
class TagTable {
public:
    std::uint32_t intern(std::string_view name);
    const std::string& name(std::uint32_t index) const { return names_[index]; }
    std::size_t size() const noexcept { return names_.size(); }

private:
    std::vector<std::string> names_;
    std::vector<std::uint32_t> slots_;  // open addressing over names_; kNoTag marks empty
};

// Writes events as a gpumem trace (CSV v2): every kind of event has its
// action, so a trace read back replays the same.
class GpumemTraceWriter {
public:
    explicit GpumemTraceWriter(const std::string& path);  // throws UsageError when it cannot be created
    ~GpumemTraceWriter();
    GpumemTraceWriter(const GpumemTraceWriter&) = delete;
    GpumemTraceWriter& operator=(const GpumemTraceWriter&) = delete;
    void write(const Event& event, std::string_view tag);
    void close();  // throws Error on write errors

private:
    void append(const char* data, std::size_t n);
    void flush_buffer();
    std::string path_;
    std::FILE* file_ = nullptr;
    std::vector<char> buffer_;
    std::size_t used_ = 0;
};

// Opens `path` ("-": standard input) once, in `format`; automatic looks at
// the first byte (a pickle: a PyTorch snapshot) and else the header line.
// `rereadable`: the source can rewind even when the input cannot seek
// (LineReader). `snapshot_device`: which device of a snapshot (none: the
// only one with events). `calls`: the recording hook's calls beside a
// snapshot (open_snapshot). Throws UsageError for unreadable files and
// unknown headers.
std::unique_ptr<EventSource> open_trace(const std::string& path, TraceFormat format, bool rereadable = false,
                                        std::optional<std::uint32_t> snapshot_device = std::nullopt,
                                        const RecordedCalls* calls = nullptr);

// The format `path` holds, judged by its first byte and its first line
// that is not a comment.
TraceFormat detect_trace_format(const std::string& path);

}  // namespace gpumem::reuse_sim
