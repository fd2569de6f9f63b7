// gpumem report's inputs: files, globs and stdin, cut into JSON values by a
// scanner that needs no whole file in memory (a pretty-printed document
// spans lines; JSON Lines hold one per line; both may follow each other),
// each value then read by parse_document.
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "base/fleet.hpp"

namespace gpumem::fleet {
namespace {

// Cuts a byte stream into top-level JSON values without parsing them: it
// tracks strings, escapes and bracket depth only, so that each value can be
// parsed alone and bounded in size and depth before it is.
class ValueScanner {
public:
    using Sink = void (*)(void* context, std::string_view text, std::size_t line);
    ValueScanner(Sink sink, void* context) : sink_(sink), context_(context) {}

    void feed(std::string_view bytes) {
        for (const char c : bytes) take(c);
    }
    // End of input: a value still open was cut short.
    void finish() {
        if (token_ && !value_.empty()) return emit();
        if (!value_.empty())
            throw LineError(line_, "truncated document: the input ends inside the document that starts on line " +
                                       std::to_string(start_line_));
    }
    std::size_t values() const noexcept { return values_; }

private:
    void take(char c) {
        if (value_.empty() && !token_) {
            if (c == '\n') ++line_;
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return;
            start_line_ = line_;
            token_ = c != '{' && c != '[';
        }
        if (value_.size() >= kMaxDocumentBytes)
            throw LineError(start_line_, "a document of more than " + std::to_string(kMaxDocumentBytes >> 20) +
                                             " MiB (gpumem writes kilobytes; is this a gpumem document?)");
        if (token_ && (c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
            emit();
            if (c == '\n') ++line_;
            return;
        }
        value_.push_back(c);
        if (c == '\n') ++line_;
        if (!token_) track(c);
    }
    void track(char c) {
        if (in_string_) {
            if (escaped_)
                escaped_ = false;
            else if (c == '\\')
                escaped_ = true;
            else if (c == '"')
                in_string_ = false;
            return;
        }
        if (c == '"') in_string_ = true;
        if (c == '{' || c == '[') {
            if (++depth_ > kMaxDocumentDepth)
                throw LineError(line_, "nested deeper than " + std::to_string(kMaxDocumentDepth) +
                                           " levels (no gpumem document is)");
        }
        if ((c == '}' || c == ']') && --depth_ == 0) emit();
    }
    void emit() {
        sink_(context_, value_, start_line_);
        ++values_;
        value_.clear();
        token_ = false;
        depth_ = 0;
    }

    Sink sink_;
    void* context_;
    std::string value_;
    std::size_t line_ = 1, start_line_ = 1, values_ = 0;
    int depth_ = 0;
    bool token_ = false, in_string_ = false, escaped_ = false;
};

struct Collect {
    std::string_view name;
    int max_schema_version;
    std::vector<Document>* out;
};

void collect(void* context, std::string_view text, std::size_t line) {
    auto& c = *static_cast<Collect*>(context);
    Document doc = parse_document(text, line, c.max_schema_version);
    doc.source = std::string(c.name) + ":" + std::to_string(line);
    c.out->push_back(std::move(doc));
}

UsageError at(std::string_view name, const LineError& e) {
    return UsageError(std::string(name) + ":" + std::to_string(e.line()) + ": " + e.what());
}

UsageError empty_input(std::string_view name) {
    return UsageError(std::string(name) + ": empty: no JSON document in it");
}

// One input to read: a path, or stdin.
struct Source {
    std::string name;  // as messages and "source" name it
    std::string path;  // empty: stdin
};

std::string errno_text(int error) { return std::strerror(error); }

// A path named on the command line, or matched by a glob: a regular file or
// a pipe (<(...)); a directory is refused by name.
bool readable_input(const std::string& path, std::set<std::pair<dev_t, ino_t>>& seen, bool from_glob) {
    struct stat st {};
    if (path.empty()) throw UsageError("an empty file name");
    if (stat(path.c_str(), &st) != 0) throw UsageError(path + ": " + errno_text(errno));
    if (S_ISDIR(st.st_mode)) {
        if (from_glob) return false;  // a pattern such as results/* may match folders too
        throw UsageError(path + ": a directory (give its files, or a quoted glob such as '" + path + "/*.json')");
    }
    // The same file twice (a glob and a name): read once, or its GPUs would count twice.
    return seen.insert({st.st_dev, st.st_ino}).second;
}

bool has_glob_characters(const std::string& text) { return text.find_first_of("*?[") != std::string::npos; }

void add_glob(const std::string& pattern, std::vector<Source>& sources, std::set<std::pair<dev_t, ino_t>>& seen) {
    glob_t matches{};
    const int status = glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    std::vector<std::string> paths(matches.gl_pathv, matches.gl_pathv + (status == 0 ? matches.gl_pathc : 0));
    globfree(&matches);
    if (status == GLOB_NOSPACE) throw Error("glob '" + pattern + "': out of memory");
    if (status == GLOB_ABORTED) throw UsageError("glob '" + pattern + "': a folder of it cannot be read");
    std::size_t files = 0;
    for (const std::string& path : paths) {
        struct stat st {};
        if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
        ++files;
        if (readable_input(path, seen, true)) sources.push_back({path, path});
    }
    if (files == 0) throw UsageError("'" + pattern + "': no file matches");
}

std::vector<Source> expand(const std::vector<std::string>& inputs) {
    std::vector<Source> sources;
    std::set<std::pair<dev_t, ino_t>> seen;
    bool stdin_named = false;
    for (const std::string& input : inputs) {
        if (input == "-") {
            if (stdin_named) throw UsageError("'-' (stdin) named twice");
            stdin_named = true;
            sources.push_back({"stdin", ""});
            continue;
        }
        struct stat st {};
        // A file whose name holds * or ? is still that file.
        if (has_glob_characters(input) && stat(input.c_str(), &st) != 0) {
            add_glob(input, sources, seen);
            continue;
        }
        if (readable_input(input, seen, false)) sources.push_back({input, input});
    }
    if (inputs.empty()) sources.push_back({"stdin", ""});
    return sources;
}

void read_source(const Source& source, int max_schema_version, std::vector<Document>& out) {
    const int fd = source.path.empty() ? STDIN_FILENO : open(source.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw UsageError(source.name + ": " + errno_text(errno));
    Collect context{source.name, max_schema_version, &out};
    ValueScanner scanner(collect, &context);
    std::string buffer(1 << 16, '\0');
    try {
        for (;;) {
            const ssize_t n = read(fd, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw UsageError(source.name + ": " + errno_text(errno));
            if (n == 0) break;
            scanner.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
        }
        scanner.finish();
    } catch (const LineError& e) {
        if (fd != STDIN_FILENO) close(fd);
        throw at(source.name, e);
    } catch (...) {
        if (fd != STDIN_FILENO) close(fd);
        throw;
    }
    if (fd != STDIN_FILENO) close(fd);
    if (scanner.values() == 0) throw empty_input(source.name);
}

}  // namespace

std::vector<Document> read_text(std::string_view name, std::string_view text, int max_schema_version) {
    std::vector<Document> out;
    Collect context{name, max_schema_version, &out};
    ValueScanner scanner(collect, &context);
    try {
        scanner.feed(text);
        scanner.finish();
    } catch (const LineError& e) {
        throw at(name, e);
    }
    if (scanner.values() == 0) throw empty_input(name);
    return out;
}

std::vector<Document> read_inputs(const std::vector<std::string>& inputs, int max_schema_version) {
    std::vector<Document> out;
    for (const Source& source : expand(inputs)) read_source(source, max_schema_version, out);
    return out;
}

}  // namespace gpumem::fleet
