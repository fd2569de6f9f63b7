#include "process/file_descriptor.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/errors.hpp"

namespace gpumem::process {

void FileDescriptor::reset() noexcept {
    // close() is not retried on EINTR: on Linux the descriptor is gone either way.
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

Pipe make_pipe() {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
    return Pipe{FileDescriptor(ends[0]), FileDescriptor(ends[1])};
}

FileDescriptor open_output_file(const std::string& path) {
    if (path.empty()) return {};
    FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd.valid()) throw Error(path + ": cannot write the program's output there: " + std::strerror(errno));
    return fd;
}

}  // namespace gpumem::process
