#include "cli/writer.hpp"

#include <stdio_ext.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

namespace gpumem::cli {

void write_stdout(std::string_view text) {
    errno = 0;
    const std::size_t written = text.empty() ? 0 : std::fwrite(text.data(), 1, text.size(), stdout);
    if (written == text.size() && std::fflush(stdout) == 0) return;
    const int error = errno != 0 ? errno : EIO;
    // Drop what stdio still holds, so that exit() does not try it again.
    __fpurge(stdout);
    std::clearerr(stdout);
    if (error == EPIPE) throw StdoutClosed();
    throw OutputError(std::string("writing output: ") + std::strerror(error));
}

namespace {

std::string folder_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The longest file name the folder's file system takes (NAME_MAX, 255 on
// Linux's; pathconf where it says otherwise).
std::size_t longest_name(const std::string& folder) {
    errno = 0;
    const long most = ::pathconf(folder.c_str(), _PC_NAME_MAX);
    return most > 0 ? static_cast<std::size_t>(most) : NAME_MAX;
}

// A new, empty temporary file beside `path` (its name hidden), open for
// writing. Its name is "." + the file's own + ".XXXXXX", the file's cut
// short where that would pass the longest name the folder takes: a legal
// 250-byte name has a legal temporary too.
int temporary_beside(const std::string& path, std::string& name) {
    const std::string folder = folder_of(path);
    std::string base = base_of(path);
    constexpr std::size_t kAdded = 8;  // "." before, ".XXXXXX" after
    const std::size_t most = longest_name(folder);
    if (base.size() + kAdded > most) base.resize(most > kAdded ? most - kAdded : 1);
    name = folder + "/." + base + ".XXXXXX";
    return ::mkstemp(name.data());
}

bool same_file(const struct stat& a, const std::string& other) {
    struct stat b {};
    return !other.empty() && ::stat(other.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

const char* file_kind_in_words(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

void check_output_file(const std::string& option, const std::string& path, const std::vector<std::string>& inputs) {
    const std::string shown = option + " '" + path + "'";
    if (path.empty()) throw UsageError(option + " needs a file name");
    if (path.back() == '/') throw UsageError(shown + ": names a directory; " + option + " writes a file");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (!S_ISREG(st.st_mode))
            throw UsageError(shown + ": " + file_kind_in_words(st.st_mode) + "; " + option + " writes a new file or replaces a regular one");
        if (same_file(st, "/proc/self/exe")) throw UsageError(shown + ": is gpumem's own program; it would be replaced");
        for (const std::string& input : inputs)
            if (same_file(st, input)) {
                std::string refusal = shown;
                refusal += ": is '";
                refusal += input;
                refusal += "', which this run reads; it would be replaced";
                throw UsageError(refusal);
            }
    }
    const std::string folder = folder_of(path);
    struct stat dir {};
    if (::stat(folder.c_str(), &dir) != 0) throw UsageError(shown + ": folder '" + folder + "': " + std::strerror(errno));
    if (!S_ISDIR(dir.st_mode)) throw UsageError(shown + ": '" + folder + "' is not a directory");
    // The file's own name, not the folder, when it is too long: the
    // probe's name below would be refused for it and blame the folder.
    if (const std::size_t most = longest_name(folder); base_of(path).size() > most)
        throw UsageError(shown + ": its name is " + std::to_string(base_of(path).size()) + " bytes; the file system of '" + folder +
                         "' takes names of at most " + std::to_string(most));
    std::string probe;
    const int fd = temporary_beside(path, probe);
    if (fd < 0) throw UsageError(shown + ": cannot write in '" + folder + "': " + std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
}

void check_plot_file(const std::string& path, const std::vector<std::string>& inputs) {
    check_output_file("--plot", path, inputs);
    // The picture is SVG, whatever the name says: a viewer goes by the
    // name, and out.png holding SVG would be refused or shown as text.
    const std::string base = base_of(path);
    const std::size_t dot = base.rfind('.');
    std::string extension = dot == std::string::npos || dot == 0 ? std::string() : base.substr(dot);
    std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (extension != ".svg")
        throw UsageError("--plot '" + path + "': --plot draws an SVG picture: name the file FILE.svg" +
                         (extension.empty() ? std::string() : " (not " + base.substr(dot) + ")"));
}

std::optional<std::string> check_sweep_plot(const std::optional<std::string>& plot, bool sweep) {
    if (!plot) return std::nullopt;
    if (!sweep) throw UsageError("--plot draws bandwidth against size: give --sizes (a sweep)");
    check_plot_file(*plot);
    return plot;
}

void write_file_atomically(const std::string& option, const std::string& path, std::string_view text) {
    const std::string shown = option + " '" + path + "'";
    std::string name;
    const int fd = temporary_beside(path, name);
    if (fd < 0) throw Error(shown + ": " + std::strerror(errno));
    auto fail = [&](int error) {
        ::close(fd);
        ::unlink(name.c_str());
        throw Error(shown + ": " + std::strerror(error));
    };
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(n < 0 ? errno : EIO);
        done += static_cast<std::size_t>(n);
    }
    // mkstemp's 0600 would hide a picture from the other users of a shared folder.
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) fail(errno);
    if (::close(fd) != 0) {
        const int error = errno;
        ::unlink(name.c_str());
        throw Error(shown + ": " + std::strerror(error));
    }
    if (::rename(name.c_str(), path.c_str()) != 0) {
        const int error = errno;
        ::unlink(name.c_str());
        throw Error(shown + ": " + std::strerror(error));
    }
}

void ignore_sigpipe() noexcept { std::signal(SIGPIPE, SIG_IGN); }

}  // namespace gpumem::cli
