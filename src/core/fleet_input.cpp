// gpumem report's inputs: files, folders, globs and stdin, gzip-compressed
// or not, cut into JSON values by a scanner that needs no whole file in
// memory (a pretty-printed document spans lines; JSON Lines hold one per
// line; both may follow each other). Worker threads take the sources in
// turn, each reading, cutting and parsing its own; their documents are
// merged in input order, so a fleet of 100 000 documents in 12 500 files is
// read on every core and held as its rows only.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "base/interrupt.hpp"
#include "core/fleet_input.hpp"

namespace gpumem::fleet {
namespace {

// Documents of one source, in order: a source gives one part or several
// (a big file), merged in (source, part) order; an error ends its source.
struct Part {
    std::size_t source = 0, index = 0;
    bool last = false;
    std::vector<Document> documents;
    std::exception_ptr error;  // nothing of the fleet after it is merged
};

// A source's documents are handed over in parts of this many, so that a
// single huge file (a loop's JSON Lines, stdin) is merged as it is read.
constexpr std::size_t kPartDocuments = 256;

UsageError at(std::string_view name, const LineError& e) {
    return UsageError(std::string(name) + ":" + std::to_string(e.line()) + ": " + e.what());
}

// Cuts a byte stream into top-level JSON values without parsing them: it
// tracks strings, escapes and bracket depth only, so that each value can be
// parsed alone and bounded in size and depth before it is.
class ValueScanner {
public:
    // Called with each value and the line it starts on.
    template <typename Sink>
    void feed(std::string_view bytes, Sink&& sink) {
        buffer_.append(bytes.data(), bytes.size());
        scan(sink);
        // Keep only the value still open.
        if (open_) {
            buffer_.erase(0, start_);
            pos_ -= start_;
            start_ = 0;
        } else {
            buffer_.clear();
            pos_ = 0;
        }
    }
    // End of input: a value still open was cut short, but a bare token (42) ends here.
    template <typename Sink>
    void finish(Sink&& sink) {
        if (open_ && token_) return emit(pos_, sink);
        if (open_)
            throw LineError(line_, "truncated document: the input ends inside the document that starts on line " +
                                       std::to_string(start_line_));
    }
    std::size_t values() const noexcept { return values_; }

private:
    static bool space(char c) noexcept { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

    // The bytes that matter outside strings: quotes, brackets and newlines.
    static constexpr std::array<unsigned char, 256> kStructure = [] {
        std::array<unsigned char, 256> t{};
        for (const char c : {'"', '\n', '{', '[', '}', ']'}) t[static_cast<unsigned char>(c)] = 1;
        return t;
    }();

    // The bytes from pos_ on, skipping runs of bytes that change nothing.
    // It counts no line inside a string: a raw newline there is malformed
    // JSON, refused with its own line when that document is parsed.
    template <typename Sink>
    void scan(Sink& sink) {
        const char* data = buffer_.data();
        const std::size_t size = buffer_.size();
        std::size_t i = pos_;
        while (i < size) {
            if (!open_) {
                const char c = data[i];
                if (space(c)) {
                    line_ += c == '\n';
                    ++i;
                    continue;
                }
                open_ = true;
                start_ = i;
                start_line_ = line_;
                token_ = c != '{' && c != '[';
            }
            if (token_) {
                while (i < size && !space(data[i])) ++i;
                if (i < size) emit(i, sink);
                continue;
            }
            if (in_string_) {
                i = skip_string(data, i, size);
                continue;
            }
            while (i < size && kStructure[static_cast<unsigned char>(data[i])] == 0) ++i;  // the bytes that change nothing
            if (i == size) break;
            const char c = data[i++];
            if (c == '"') {
                in_string_ = true;
            } else if (c == '\n') {
                ++line_;
            } else if (c == '{' || c == '[') {
                if (++depth_ > kMaxDocumentDepth)
                    throw LineError(line_, "nested deeper than " + std::to_string(kMaxDocumentDepth) +
                                               " levels (no gpumem document is)");
            } else if (--depth_ == 0) {  // } or ]
                emit(i, sink);
            }
        }
        pos_ = i;
        if (open_) check_size(i);
    }

    // Inside a string at i: where scanning goes on (past its closing quote, or the end).
    std::size_t skip_string(const char* data, std::size_t i, std::size_t size) {
        if (escaped_) {
            escaped_ = false;
            return i + 1;
        }
        // Strings are short (keys, names): a loop beats two memchr calls.
        while (i < size && data[i] != '"' && data[i] != '\\') ++i;
        if (i == size) return size;
        if (data[i] == '\\') {
            // The escaped byte may be in the next read.
            if (i + 2 > size) escaped_ = true;
            return std::min(i + 2, size);
        }
        in_string_ = false;
        return i + 1;
    }

    void check_size(std::size_t end) const {
        if (end - start_ > kMaxDocumentBytes)
            throw LineError(start_line_, "a document of more than " + std::to_string(kMaxDocumentBytes >> 20) +
                                             " MiB (gpumem writes kilobytes; is this a gpumem document?)");
    }

    template <typename Sink>
    void emit(std::size_t end, Sink& sink) {
        check_size(end);
        sink(std::string_view(buffer_.data() + start_, end - start_), start_line_);
        ++values_;
        open_ = token_ = false;
        depth_ = 0;
    }

    std::string buffer_;
    std::size_t pos_ = 0, start_ = 0;
    std::size_t line_ = 1, start_line_ = 1, values_ = 0;
    int depth_ = 0;
    bool open_ = false, token_ = false, in_string_ = false, escaped_ = false;
};

UsageError empty_input(std::string_view name) {
    return UsageError(std::string(name) + ": empty: no JSON document in it");
}

// One input to read: a path, or stdin.
struct Source {
    std::string name;  // as messages and "source" name it
    std::string path;  // empty: stdin
};

std::string errno_text(int error) { return std::strerror(error); }

bool is_directory(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The same file twice (a glob and a name): read once, or its GPUs would count twice.
bool first_time(const std::string& path, std::set<std::pair<dev_t, ino_t>>& seen) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) throw UsageError(path + ": " + errno_text(errno));
    return seen.insert({st.st_dev, st.st_ino}).second;
}

const char* file_kind(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

bool ends_with(std::string_view text, std::string_view tail) {
    return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

// What a folder's documents are called: check, info and loop outputs.
bool document_file_name(std::string_view name) {
    if (ends_with(name, ".gz")) name.remove_suffix(3);
    return !name.empty() && name.front() != '.' && (ends_with(name, ".json") || ends_with(name, ".jsonl"));
}

// A folder: its *.json and *.jsonl files (and their .gz), in name order;
// not its subfolders (a fleet's folder of results is flat).
void add_directory(const std::string& dir, std::vector<Source>& sources, std::set<std::pair<dev_t, ino_t>>& seen,
                   std::vector<std::string>& notes) {
    DIR* d = opendir(dir.c_str());
    if (!d) throw UsageError(dir + ": " + errno_text(errno));
    std::vector<std::string> names;
    while (const dirent* e = readdir(d))
        if (document_file_name(e->d_name)) names.emplace_back(e->d_name);
    closedir(d);
    std::sort(names.begin(), names.end(), natural_less);
    const std::string prefix = ends_with(dir, "/") ? dir : dir + "/";
    std::size_t files = 0;
    for (const std::string& name : names) {
        const std::string path = prefix + name;
        struct stat st {};
        if (stat(path.c_str(), &st) != 0) throw UsageError(path + ": " + errno_text(errno));
        if (S_ISDIR(st.st_mode)) continue;
        // A FIFO, socket or device among a folder's results was not written
        // by gpumem, and reading it could wait for ever: skipped, and said.
        if (!S_ISREG(st.st_mode)) {
            notes.push_back(path + ": skipped: " + file_kind(st.st_mode) + ", not a regular file (name it alone to read it)");
            continue;
        }
        ++files;
        if (first_time(path, seen)) sources.push_back({path, path});
    }
    if (files == 0) throw UsageError(dir + ": a folder with no *.json or *.jsonl file (nor their .gz)");
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
        if (is_directory(path)) continue;  // a pattern such as results/* may match folders too
        ++files;
        if (first_time(path, seen)) sources.push_back({path, path});
    }
    if (files == 0) throw UsageError("'" + pattern + "': no file matches");
}

std::vector<Source> expand(const std::vector<std::string>& inputs, std::vector<std::string>& notes) {
    std::vector<Source> sources;
    std::set<std::pair<dev_t, ino_t>> seen;
    bool stdin_named = false;
    for (const std::string& input : inputs) {
        if (input.empty()) throw UsageError("an empty file name");
        if (input == "-") {
            if (stdin_named) throw UsageError("'-' (stdin) named twice");
            stdin_named = true;
            sources.push_back({"stdin", ""});
            continue;
        }
        struct stat st {};
        // A file whose name holds * or ? is still that file.
        const bool exists = stat(input.c_str(), &st) == 0;
        if (!exists && has_glob_characters(input)) {
            add_glob(input, sources, seen);
            continue;
        }
        if (!exists) throw UsageError(input + ": " + errno_text(errno));
        if (S_ISDIR(st.st_mode)) {
            add_directory(input, sources, seen, notes);
            continue;
        }
        if (first_time(input, seen)) sources.push_back({input, input});
    }
    if (inputs.empty()) sources.push_back({"stdin", ""});
    return sources;
}

// zlib, loaded when a gzip input first needs it: the binary links no
// libz, so that it runs where only the driver and the C/C++ runtime are
// (zlib1g is on every Debian system, and the package depends on it).
struct Zlib {
    decltype(&inflateInit2_) init = nullptr;
    decltype(&inflate) step = nullptr;
    decltype(&inflateEnd) end = nullptr;
    std::string why_missing;
};

const Zlib& zlib() {
    static const Zlib z = [] {
        Zlib loaded;
        void* lib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* e = dlerror();
            loaded.why_missing = e ? e : "libz.so.1 not found";
            return loaded;
        }
        loaded.init = reinterpret_cast<decltype(&inflateInit2_)>(dlsym(lib, "inflateInit2_"));
        loaded.step = reinterpret_cast<decltype(&inflate)>(dlsym(lib, "inflate"));
        loaded.end = reinterpret_cast<decltype(&inflateEnd)>(dlsym(lib, "inflateEnd"));
        if (!loaded.init || !loaded.step || !loaded.end) loaded.why_missing = "libz.so.1 lacks inflate";
        return loaded;
    }();
    return z;
}

// A read of `fd` that Ctrl-C and SIGTERM end (InterruptedError) even when
// nothing is written: a pipe, a FIFO or a terminal is polled in short
// steps, since the signal may reach another thread than the one reading
// and no read of that thread would return EINTR. Regular files do not block.
ssize_t read_interruptibly(int fd, char* into, std::size_t bytes, const std::string& name) {
    constexpr int kPollMs = 100;
    for (;;) {
        throw_if_interrupted();
        pollfd p{fd, POLLIN, 0};
        const int ready = poll(&p, 1, kPollMs);
        if (ready < 0 && errno != EINTR) throw UsageError(name + ": " + errno_text(errno));
        if (ready <= 0) continue;
        const ssize_t n = read(fd, into, bytes);
        if (n >= 0) return n;
        if (errno == EINTR || errno == EAGAIN) continue;  // a FIFO opened without waiting has no data yet
        throw UsageError(name + ": " + errno_text(errno));
    }
}

// Opens an input for reading without waiting for a FIFO's writer (open(2)
// of a FIFO blocks until one comes, and no signal of another thread ends
// it); the reads poll instead.
int open_input(const std::string& path) {
    for (;;) {
        const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0 || errno != EINTR) return fd;
    }
}

// Reads a file descriptor to its end, inflating gzip (one member or several,
// as `cat a.gz b.gz` makes) where the bytes start with gzip's magic.
class ByteReader {
public:
    ByteReader(int fd, std::string name) : fd_(fd), name_(std::move(name)), raw_(1u << 17, '\0') {}
    ~ByteReader() {
        if (inflating_) zlib().end(&z_);
    }
    ByteReader(const ByteReader&) = delete;
    ByteReader& operator=(const ByteReader&) = delete;

    // The next bytes; empty at the end.
    std::string_view next() {
        for (;;) {
            if (!gzip_ && have_ > 0) return take_raw();
            if (gzip_ && z_.avail_in > 0) {
                std::string_view out = inflate_some();
                if (!out.empty()) return out;
                continue;
            }
            if (!fill()) {
                if (gzip_ && inflating_ && !member_done_)
                    throw UsageError(name_ + ": truncated gzip data (the file ends inside its compressed stream)");
                return {};
            }
        }
    }

private:
    bool fill() {
        const ssize_t n = read_interruptibly(fd_, raw_.data(), raw_.size(), name_);
        if (n == 0) return false;
        have_ = static_cast<std::size_t>(n);
        if (first_) {
            first_ = false;
            gzip_ = have_ >= 2 && static_cast<unsigned char>(raw_[0]) == 0x1f && static_cast<unsigned char>(raw_[1]) == 0x8b;
        }
        if (gzip_) {
            z_.next_in = reinterpret_cast<Bytef*>(raw_.data());
            z_.avail_in = static_cast<uInt>(have_);
        }
        return true;
    }
    std::string_view take_raw() {
        const std::size_t n = have_;
        have_ = 0;
        return {raw_.data(), n};
    }
    std::string_view inflate_some() {
        if (!inflating_) {
            z_.zalloc = Z_NULL;
            z_.zfree = Z_NULL;
            z_.opaque = Z_NULL;
            const Bytef* in = z_.next_in;
            const uInt avail = z_.avail_in;
            const Zlib& lib = zlib();
            if (!lib.init) throw Error(name_ + ": gzip data, and zlib cannot be loaded to read it (" + lib.why_missing + ")");
            if (lib.init(&z_, 16 + MAX_WBITS, ZLIB_VERSION, static_cast<int>(sizeof(z_stream))) != Z_OK)
                throw Error(name_ + ": zlib: cannot start inflating");
            z_.next_in = const_cast<Bytef*>(in);
            z_.avail_in = avail;
            inflating_ = true;
            member_done_ = false;
        }
        out_.resize(1u << 18);
        z_.next_out = reinterpret_cast<Bytef*>(out_.data());
        z_.avail_out = static_cast<uInt>(out_.size());
        const int rc = zlib().step(&z_, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
            throw UsageError(name_ + ": not valid gzip data (zlib: " + (z_.msg ? z_.msg : "error " + std::to_string(rc)) + ")");
        const std::size_t produced = out_.size() - z_.avail_out;
        if (rc == Z_STREAM_END) {
            // Another member may follow.
            zlib().end(&z_);
            inflating_ = false;
            member_done_ = true;
        }
        return {out_.data(), produced};
    }

    int fd_;
    std::string name_;
    std::string raw_, out_;
    std::size_t have_ = 0;
    bool first_ = true, gzip_ = false, inflating_ = false, member_done_ = true;
    z_stream z_{};
};

// The CPUs this process may run on (a Slurm step's or a cgroup's share).
unsigned usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
    return std::max(1u, std::thread::hardware_concurrency());
}

// The pipeline: each worker takes the next source, reads, cuts and parses
// it, and hands its documents over in parts; parts are merged in (source,
// part) order by whichever thread completes the next one. A worker ahead of
// the merge waits when too many parts are pending; the one reading the
// source being merged never waits, so the merge always moves on.
class Pipeline {
public:
    Pipeline(const std::vector<Source>& sources, int max_schema_version, unsigned threads)
        : sources_(sources), max_schema_version_(max_schema_version) {
        const unsigned n = std::max(1u, std::min<unsigned>(threads ? threads : std::min(usable_cpus(), 16u),
                                                             static_cast<unsigned>(sources.size())));
        max_pending_ = std::size_t{4} * n;
        for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
    }
    ~Pipeline() { join(); }
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    // Waits for every source, then gives the fleet or the first fault in input order.
    Fleet finish(const ReportOptions& options) {
        join();
        if (error_) std::rethrow_exception(error_);
        return merger_.finish(options);
    }

private:
    void join() {
        for (std::thread& t : workers_)
            if (t.joinable()) t.join();
    }

    void work() {
        for (;;) {
            std::size_t source = 0;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (next_source_ >= sources_.size() || error_) return;
                source = next_source_++;
            }
            read_source(source);
        }
    }

    void read_source(std::size_t index) {
        const Source& source = sources_[index];
        Part part;
        part.source = index;
        const int fd = source.path.empty() ? STDIN_FILENO : open_input(source.path);
        try {
            if (fd < 0) throw UsageError(source.name + ": " + errno_text(errno));
            ValueScanner scanner;
            auto sink = [&](std::string_view text, std::size_t line) {
                Document doc = parse_document(text, line, max_schema_version_);
                doc.source = source.name + ":" + std::to_string(line);
                part.documents.push_back(std::move(doc));
                if (part.documents.size() >= kPartDocuments) deliver(part);
            };
            ByteReader reader(fd, source.name);
            for (std::string_view bytes = reader.next(); !bytes.empty(); bytes = reader.next()) {
                scanner.feed(bytes, sink);
                if (stopped()) break;
            }
            scanner.finish(sink);
            if (scanner.values() == 0) throw empty_input(source.name);
        } catch (const LineError& e) {
            part.error = std::make_exception_ptr(at(source.name, e));
        } catch (...) {
            part.error = std::current_exception();
        }
        if (fd > STDIN_FILENO) close(fd);
        part.last = true;
        deliver(part);
    }

    bool stopped() {
        std::lock_guard<std::mutex> lock(mutex_);
        return error_ != nullptr;
    }

    // Hands `part` over (and starts the next part of its source afresh).
    void deliver(Part& part) {
        auto next = std::make_unique<Part>();
        next->source = part.source;
        next->index = part.index + 1;
        std::swap(*next, part);  // part: the fresh one; next: the one handed over
        std::unique_lock<std::mutex> lock(mutex_);
        space_.wait(lock, [&] { return pending_.size() < max_pending_ || next->source == merge_source_ || error_; });
        pending_.push_back(std::move(next));
        merge_ready(lock);
    }

    // Merges the parts that come next in input order; one thread at a time.
    void merge_ready(std::unique_lock<std::mutex>& lock) {
        if (merging_) return;
        merging_ = true;
        for (;;) {
            const auto it = std::find_if(pending_.begin(), pending_.end(), [this](const std::unique_ptr<Part>& p) {
                return p->source == merge_source_ && p->index == merge_part_;
            });
            if (it == pending_.end()) break;
            std::unique_ptr<Part> p = std::move(*it);
            pending_.erase(it);
            const bool merge = !error_;
            lock.unlock();
            if (merge)
                for (Document& d : p->documents) merger_.add(std::move(d));
            lock.lock();
            if (p->error && !error_) error_ = p->error;
            if (p->last) {
                ++merge_source_;
                merge_part_ = 0;
            } else {
                ++merge_part_;
            }
            space_.notify_all();
        }
        merging_ = false;
    }

    const std::vector<Source>& sources_;
    int max_schema_version_;
    std::size_t max_pending_ = 4;
    std::mutex mutex_;
    std::condition_variable space_;
    std::vector<std::unique_ptr<Part>> pending_;
    std::size_t next_source_ = 0, merge_source_ = 0, merge_part_ = 0;
    bool merging_ = false;
    std::exception_ptr error_;
    FleetMerger merger_;
    std::vector<std::thread> workers_;  // last: started once the rest is ready
};

}  // namespace

std::vector<Document> read_text(std::string_view name, std::string_view text, int max_schema_version) {
    std::vector<Document> out;
    ValueScanner scanner;
    auto sink = [&](std::string_view value, std::size_t line) {
        Document doc = parse_document(value, line, max_schema_version);
        doc.source = std::string(name) + ":" + std::to_string(line);
        out.push_back(std::move(doc));
    };
    try {
        scanner.feed(text, sink);
        scanner.finish(sink);
    } catch (const LineError& e) {
        throw at(name, e);
    }
    if (scanner.values() == 0) throw empty_input(name);
    return out;
}

Fleet read_fleet(const std::vector<std::string>& inputs, int max_schema_version, const ReportOptions& options,
                 unsigned threads) {
    std::vector<std::string> notes;
    const std::vector<Source> sources = expand(inputs, notes);
    Pipeline pipeline(sources, max_schema_version, threads);
    Fleet fleet = pipeline.finish(options);
    fleet.notes.insert(fleet.notes.begin(), notes.begin(), notes.end());
    return fleet;
}

}  // namespace gpumem::fleet
