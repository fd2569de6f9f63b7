// A file descriptor owned by one object: closed when it goes, moved, never
// copied. The process layer's pipes and output files, so that no error path
// has to remember which descriptors it opened.
#pragma once

#include <string>
#include <utility>

namespace gpumem::process {

class FileDescriptor {
public:
    FileDescriptor() noexcept = default;
    explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
    ~FileDescriptor() { reset(); }
    FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    FileDescriptor& operator=(FileDescriptor&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;

    int get() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }
    // Closes it now (a pipe's writing end, so that the reader sees its end).
    void reset() noexcept;

private:
    int fd_ = -1;
};

// Both ends of a close-on-exec pipe. Throws gpumem::Error when none can be made.
struct Pipe {
    FileDescriptor read, write;
};
Pipe make_pipe();

// The file a program's output goes to (created or emptied, mode 0600,
// close-on-exec); none for an empty path. Throws gpumem::Error naming the
// file where it cannot be written.
FileDescriptor open_output_file(const std::string& path);

}  // namespace gpumem::process
