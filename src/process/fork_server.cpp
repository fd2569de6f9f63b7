#include "process/fork_server.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "process/file_descriptor.hpp"

namespace gpumem::process {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The last non-empty line of a file: why a server ended.
std::string last_line(const std::string& path) {
    std::istringstream in(read_file(path));
    std::string line, last;
    while (std::getline(in, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    return last;
}

bool send_request(int fd, const std::string& line, int passed_fd) {
    iovec part{const_cast<char*>(line.data()), line.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &passed_fd, sizeof(int));
    ssize_t sent;
    do sent = ::sendmsg(fd, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent != static_cast<ssize_t>(line.size())) return false;  // a line of a few KiB goes whole on a Unix socket
    return true;
}

// The server's one-line reply, within `seconds`; empty on a timeout or a
// closed socket.
std::string read_reply(int fd, int seconds) {
    std::string reply;
    char buffer[256];
    for (int waited = 0; reply.find('\n') == std::string::npos && waited < seconds * 10;) {
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, 100);
        if (ready < 0 && errno != EINTR) break;
        if (ready <= 0) {
            ++waited;
            continue;
        }
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0) break;
        reply.append(buffer, static_cast<std::size_t>(n));
    }
    return reply.substr(0, reply.find('\n'));
}

double steady_seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

ForkServer::ForkServer(const std::string& source, const std::string& interpreter, const std::string& script, std::vector<std::string> environment)
    : dir_("fork-server") {
    const std::string program = dir_.path() + "/fork_server.py";
    {
        std::ofstream out(program);
        out << source;
        if (!out) throw Error(program + ": cannot write the fork server");
    }
    // Its runs, forked twice, come to us when their first parent ends.
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) throw Error(std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + std::strerror(errno));
    ChildOptions options;
    options.environment = std::move(environment);
    options.output_file = dir_.path() + "/server.log";
    started_ = steady_seconds();
    server_.emplace(std::vector<std::string>{interpreter, program, dir_.path(), script}, options);
}

ForkServer::State ForkServer::state() {
    if (state_ != State::importing) return state_;
    const std::string status = read_file(dir_.path() + "/status");
    if (status.rfind("ready ", 0) == 0) {
        state_ = State::ready;
        ready_seconds_ = std::strtod(status.c_str() + 6, nullptr);
    } else if (status.rfind("unfit: ", 0) == 0) {
        state_ = State::unfit;
        why_ = status.substr(7, status.find('\n') - 7);
    } else if (const std::optional<ChildExit> exit = server_->poll()) {
        state_ = State::unfit;
        const std::string last = last_line(dir_.path() + "/server.log");
        why_ = exit->start_error ? *exit->start_error
                                 : "it ended, exit status " + std::to_string(exit->exit_status) + (last.empty() ? "" : " (" + last + ")");
    } else if (steady_seconds() - started_ > kImportLimitSeconds) {
        state_ = State::unfit;
        why_ = "still importing after " + std::to_string(static_cast<int>(kImportLimitSeconds)) + " s";
        server_->stop();
    }
    return state_;
}

std::optional<RunningChild> ForkServer::fork_run(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                                                 const std::string& output_file, const std::string& preload, std::string& why) {
    if (state() != State::ready) {
        why = state_ == State::importing ? "the fork server was still importing" : "the fork server is unfit: " + why_;
        return std::nullopt;
    }
    const FileDescriptor output = open_output_file(output_file);
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) == nullptr) {
        why = std::string("getcwd: ") + std::strerror(errno);
        return std::nullopt;
    }
    const std::string socket_path = dir_.path() + "/socket";
    FileDescriptor connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof address.sun_path) {
        why = "its socket's path is too long";
        return std::nullopt;
    }
    std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
    if (!connection.valid() || ::connect(connection.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        why = std::string("cannot reach the fork server: ") + std::strerror(errno);
        return std::nullopt;
    }
    const nlohmann::json request = {{"argv", argv}, {"env", environment}, {"cwd", cwd}, {"preload", preload}};
    if (!send_request(connection.get(), request.dump() + "\n", output.valid() ? output.get() : STDERR_FILENO)) {
        why = std::string("cannot write to the fork server: ") + std::strerror(errno);
        return std::nullopt;
    }
    const std::string reply = read_reply(connection.get(), 30);
    if (reply.rfind("pid ", 0) != 0) {
        why = reply.empty() ? "the fork server did not answer" : "the fork server: " + reply;
        return std::nullopt;
    }
    char* end = nullptr;
    const long pid = std::strtol(reply.c_str() + 4, &end, 10);
    if (pid <= 0 || *end != '\0') {
        why = "the fork server: " + reply;
        return std::nullopt;
    }
    return RunningChild::adopt(static_cast<int>(pid));
}

}  // namespace gpumem::process
