// Runs the gpumem binary (path in $GPUMEM_BIN), or any program, with
// arguments and environment changes, and captures its exit status, stdout and
// stderr; start_* runs it in the background (Started: signal it, wait with a
// deadline, read its stdout line by line while it runs).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

struct RunResult {
    int status = -1;
    std::string out, err;
    int stderr_lines() const {
        int n = 0;
        for (char c : err) n += c == '\n';
        return n;
    }
};

inline std::string gpumem_binary() {
    const char* bin = std::getenv("GPUMEM_BIN");
    if (!bin) throw std::runtime_error("GPUMEM_BIN is not set");
    return bin;
}

inline std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Where a started program's stdout goes.
struct StdoutTo {
    enum class Kind { file, pipe, path, closed_pipe };
    Kind kind = Kind::file;
    std::string path;  // Kind::path
    static StdoutTo file() { return {}; }  // a temporary file, read at the end
    static StdoutTo pipe() { return {Kind::pipe, {}}; }  // read while it runs (read_line, read_rest)
    static StdoutTo to(std::string p) { return {Kind::path, std::move(p)}; }  // such as /dev/full
    static StdoutTo closed_pipe() { return {Kind::closed_pipe, {}}; }  // a pipe whose reader is gone: EPIPE
};

// A program started in the background, its stderr going to a temporary
// file and its stdout to another, or to a pipe read while it runs
// (read_line, read_rest). wait() collects the exit status and the output;
// a child still running when its Started goes away is killed and reaped.
class Started {
public:
    Started() = default;
    Started(const Started&) = delete;
    Started& operator=(const Started&) = delete;
    Started(Started&& other) noexcept { *this = std::move(other); }
    Started& operator=(Started&& other) noexcept {
        std::swap(pid_, other.pid_);
        std::swap(status_, other.status_);
        std::swap(out_fd_, other.out_fd_);
        out_path_.swap(other.out_path_);
        err_path_.swap(other.err_path_);
        buffer_.swap(other.buffer_);
        return *this;
    }
    ~Started() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        if (out_fd_ >= 0) close(out_fd_);
        if (!out_path_.empty()) unlink(out_path_.c_str());
        if (!err_path_.empty()) unlink(err_path_.c_str());
    }

    pid_t pid() const noexcept { return pid_; }
    void signal(int sig) const {
        if (pid_ > 0) kill(pid_, sig);
    }
    // Still running? (An exited child stays unreaped until a wait.)
    bool running() const {
        if (pid_ <= 0) return false;
        siginfo_t info{};
        if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
        return info.si_pid == 0;
    }
    // Waits up to `seconds` for the exit: the status (128 + signal if
    // killed), or -1 when it did not end in time, and then it is killed.
    int wait_within(double seconds) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        while (pid_ > 0) {
            int wstatus = 0;
            if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
                pid_ = -1;
                status_ = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
                break;
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                kill(pid_, SIGKILL);
                waitpid(pid_, nullptr, 0);
                pid_ = -1;
                status_ = -1;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return status_;
    }
    // Waits for the exit, however long; the status and everything printed.
    RunResult wait() {
        if (pid_ > 0) {
            int wstatus = 0;
            while (waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
            }
            status_ = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
            pid_ = -1;
        }
        RunResult r;
        r.status = status_;
        r.out = out_fd_ >= 0 ? read_rest() : out_path_.empty() ? std::string() : slurp(out_path_);
        r.err = err();
        return r;
    }
    std::string err() const { return slurp(err_path_); }
    // Without a stdout pipe: what it has printed so far.
    std::string out_so_far() const { return slurp(out_path_); }

    // With a stdout pipe: the next line, or "" when none came within `seconds`.
    std::string read_line(double seconds) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        while (true) {
            const auto nl = buffer_.find('\n');
            if (nl != std::string::npos) {
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return line;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || out_fd_ < 0) return "";
            pollfd p{out_fd_, POLLIN, 0};
            if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
            char chunk[4096];
            const ssize_t n = read(out_fd_, chunk, sizeof chunk);
            if (n <= 0) return "";
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
    }
    // With a stdout pipe: everything not read yet, until the pipe closes.
    std::string read_rest() {
        char chunk[4096];
        ssize_t n;
        while (out_fd_ >= 0 && (n = read(out_fd_, chunk, sizeof chunk)) > 0) buffer_.append(chunk, static_cast<std::size_t>(n));
        std::string rest;
        rest.swap(buffer_);
        return rest;
    }

private:
    friend Started start_program(const std::string&, const std::vector<std::string>&, const std::vector<std::string>&,
                                 StdoutTo);
    pid_t pid_ = -1;
    int status_ = -1;
    int out_fd_ = -1;  // read end of the stdout pipe, or -1
    std::string out_path_, err_path_;
    std::string buffer_;  // read from the pipe, not yet returned
};

// env_overrides: "NAME=value" to set, "NAME" alone to unset. stdin is /dev/null.
// stdout_pipe: stdout goes to a pipe that read_line/read_rest read while the
// program runs, instead of a file.
inline Started start_program(const std::string& bin, const std::vector<std::string>& args,
                             const std::vector<std::string>& env_overrides, StdoutTo stdout_to) {
    Started started;
    char out_path[] = "/tmp/gpumem-test-outXXXXXX";
    char err_path[] = "/tmp/gpumem-test-errXXXXXX";
    int out_pipe[2] = {-1, -1};
    int out_fd = -1;
    const bool stdout_pipe = stdout_to.kind == StdoutTo::Kind::pipe;
    if (stdout_pipe) {
        if (pipe(out_pipe) != 0) throw std::runtime_error("pipe failed");
        out_fd = out_pipe[1];
        started.out_fd_ = out_pipe[0];
    } else if (stdout_to.kind == StdoutTo::Kind::closed_pipe) {
        if (pipe(out_pipe) != 0) throw std::runtime_error("pipe failed");
        close(out_pipe[0]);  // the reader went away before the first write
        out_fd = out_pipe[1];
    } else if (stdout_to.kind == StdoutTo::Kind::path) {
        out_fd = open(stdout_to.path.c_str(), O_WRONLY | O_CLOEXEC);
        if (out_fd < 0) throw std::runtime_error("cannot open " + stdout_to.path);
    } else {
        out_fd = mkstemp(out_path);
        started.out_path_ = out_path;
    }
    const int err_fd = mkstemp(err_path);
    started.err_path_ = err_path;
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    for (const std::string& o : env_overrides) {
        const auto eq = o.find('=');
        const std::string name = o.substr(0, eq);
        for (auto it = env_strings.begin(); it != env_strings.end();)
            it = it->rfind(name + "=", 0) == 0 ? env_strings.erase(it) : it + 1;
        if (eq != std::string::npos) env_strings.push_back(o);
    }
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings{bin};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    if (stdout_pipe) posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
    if (posix_spawn(&started.pid_, bin.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) started.pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(out_fd);
    close(err_fd);
    return started;
}

inline Started start_program(const std::string& bin, const std::vector<std::string>& args,
                             const std::vector<std::string>& env_overrides = {}, bool stdout_pipe = false) {
    return start_program(bin, args, env_overrides, stdout_pipe ? StdoutTo::pipe() : StdoutTo::file());
}

inline RunResult run_program(const std::string& bin, const std::vector<std::string>& args,
                             const std::vector<std::string>& env_overrides = {}) {
    return start_program(bin, args, env_overrides).wait();
}

// env_overrides: "NAME=value" to set, "NAME" alone to unset.
inline RunResult run_gpumem(const std::vector<std::string>& args, const std::vector<std::string>& env_overrides = {}) {
    return run_program(gpumem_binary(), args, env_overrides);
}

inline Started start_gpumem(const std::vector<std::string>& args, const std::vector<std::string>& env_overrides = {},
                            bool stdout_pipe = false) {
    return start_program(gpumem_binary(), args, env_overrides, stdout_pipe);
}

// Runs gpumem with stdout sent elsewhere (/dev/full, a closed pipe).
inline RunResult run_gpumem_to(const StdoutTo& stdout_to, const std::vector<std::string>& args,
                               const std::vector<std::string>& env_overrides = {}) {
    return start_program(gpumem_binary(), args, env_overrides, stdout_to).wait();
}

// gpumem with its stdout on a terminal `columns` wide (a pseudo-terminal,
// newlines as written), stdin on /dev/null: what a person sees. stderr on
// the same terminal with `stderr_too` (its lines among stdout's, in `out`),
// else on /dev/null. env_overrides as for run_gpumem.
inline RunResult run_on_terminal(const std::vector<std::string>& args, int columns, const std::vector<std::string>& env_overrides = {},
                                 bool stderr_too = false) {
    RunResult result;
    const int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) throw std::runtime_error("no pseudo-terminal");
    const int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    if (slave < 0) throw std::runtime_error("cannot open the pseudo-terminal");
    winsize size{};
    size.ws_col = static_cast<unsigned short>(columns);
    size.ws_row = 50;
    ioctl(slave, TIOCSWINSZ, &size);
    termios mode{};
    tcgetattr(slave, &mode);
    mode.c_oflag &= ~static_cast<tcflag_t>(OPOST);  // "\n" stays "\n"
    tcsetattr(slave, TCSANOW, &mode);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    for (const std::string& o : env_overrides) {
        const std::string name = o.substr(0, o.find('='));
        env_strings.erase(std::remove_if(env_strings.begin(), env_strings.end(),
                                         [&name](const std::string& e) { return e.rfind(name + "=", 0) == 0; }),
                          env_strings.end());
        if (o.find('=') != std::string::npos) env_strings.push_back(o);
    }
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings{gpumem_binary()};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, slave, 1);
    if (stderr_too) posix_spawn_file_actions_adddup2(&actions, slave, 2);
    else posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&actions, master);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(slave);
    if (spawned != 0) {
        close(master);
        throw std::runtime_error("cannot start " + argv_strings[0]);
    }
    char buffer[4096];
    for (ssize_t n; (n = read(master, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR);)
        if (n > 0) result.out.append(buffer, static_cast<std::size_t>(n));
    close(master);
    int status = 0;
    waitpid(pid, &status, 0);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

// Columns a line takes on a terminal: a column per UTF-8 character, as the
// terminal draws it: a "\r" returns to column 0 (a progress line redrawn
// in place is as wide as its widest drawing, not their sum) and an escape
// sequence (ESC [ ... letter: erase line, colour) takes none.
inline std::size_t line_columns(const std::string& line) {
    std::size_t widest = 0, n = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(line[i]);
        if (c == '\r') {
            n = 0;
        } else if (c == 0x1B && i + 1 < line.size() && line[i + 1] == '[') {
            i += 2;
            while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;
        } else if ((c & 0xC0U) != 0x80U) {
            widest = std::max(widest, ++n);
        }
    }
    return widest;
}

// The lines of `text` wider than `columns`. With `one_word_exempt`, a line
// that is one word (after its indent) is not counted: for text gpumem does
// not lay out itself (the man page through man), where no wrapping can
// shorten it; gpumem's own output cuts such a word at the width (issue 57).
inline std::vector<std::string> lines_wider(const std::string& text, std::size_t columns, bool one_word_exempt = true) {
    std::vector<std::string> wide;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const std::size_t first = line.find_first_not_of(' ');
        const bool one_word = first == std::string::npos || line.find(' ', first) == std::string::npos;
        if (line_columns(line) > columns && !(one_word && one_word_exempt)) wide.push_back(line);
    }
    return wide;
}

// `text` with its wrapped lines joined again: a newline and the spaces that
// indent the line after it become one space (gpumem wraps prose, warnings
// and progress lines within the width, 100 columns in a pipe, and indents
// the lines that go on). For checks of a sentence whatever the width.
inline std::string unwrapped(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\n' && i + 1 < text.size() && text[i + 1] == ' ') {
            while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
            out += ' ';
            continue;
        }
        out += text[i];
    }
    return out;
}

// The lines of stderr that gpumem began ("gpumem: ..."), a wrapped one
// counted once.
inline int gpumem_lines(const std::string& err) {
    int n = 0;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) n += line.rfind("gpumem: ", 0) == 0;
    return n;
}
