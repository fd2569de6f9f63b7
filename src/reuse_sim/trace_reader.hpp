// Streaming readers for allocation traces: gpumem's own CSV format
// (tests/TRACE_FORMAT.md) and RAPIDS RMM's logging_resource_adaptor CSV.
// They hold one buffered block of the file and the table of tag names, never
// the whole trace. Malformed lines throw UsageError "file:line: what".
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reuse_sim/events.hpp"

namespace gpumem::reuse_sim {

enum class TraceFormat { automatic, gpumem, rmm };

TraceFormat parse_trace_format(std::string_view text);  // "auto", "gpumem", "rmm"; throws UsageError
const char* trace_format_name(TraceFormat format) noexcept;

// Reads a file (or standard input for "-") line by line through a large
// buffer. Lines are returned without their end of line ("\n" or "\r\n").
class LineReader {
public:
    explicit LineReader(const std::string& path);  // throws UsageError when it cannot be opened
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    bool next(std::string_view& line);
    std::uint64_t line_number() const noexcept { return line_number_; }
    bool rewind();
    const std::string& path() const noexcept { return path_; }

private:
    bool refill();

    std::string path_;
    std::FILE* file_ = nullptr;
    bool owns_file_ = false;
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

// Writes events as a gpumem trace (CSV v1). Sync points, for which the
// format has no action, become "# sync" comment lines (readers skip them).
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

// Opens `path` ("-": standard input) in `format`; automatic looks at the
// header line. Throws UsageError for unreadable files and unknown headers.
std::unique_ptr<EventSource> open_trace(const std::string& path, TraceFormat format);

// The format `path` holds, judged by its first line that is not a comment.
TraceFormat detect_trace_format(const std::string& path);

}  // namespace gpumem::reuse_sim
