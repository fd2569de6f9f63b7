#include "core/kernel_log.hpp"

#include <fcntl.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/sizes.hpp"

namespace gpumem {

XidScan read_kernel_log_file(const std::string& path) {
    const std::string what = "--kernel-log " + path;
    if (path.empty()) throw UsageError("--kernel-log: empty file name");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw UsageError(what + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw UsageError(what + ": is a directory, not a kernel log (save one with dmesg > FILE)");
    // A FIFO, /dev/zero or /dev/kmsg could block or never end: refused unopened.
    if (!S_ISREG(st.st_mode))
        throw UsageError(what + ": not a regular file (a saved kernel log: dmesg > FILE, or journalctl -k -o short-iso > FILE; "
                                "leave --kernel-log out to read the live log)");
    // /proc/kmsg is a "regular file" whose read waits for the next message
    // and takes it from syslog: nothing under /proc is a saved log.
    struct statfs fs {};
    constexpr long kProcSuperMagic = 0x9fa0;
    if (::statfs(path.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == kProcSuperMagic)
        throw UsageError(what + ": a live file of /proc, not a saved kernel log (dmesg > FILE saves one; leave --kernel-log "
                                "out to read the live log)");
    if (static_cast<std::uint64_t>(st.st_size) > kKernelLogMaxBytes)
        throw UsageError(what + ": " + format_bytes(static_cast<std::uint64_t>(st.st_size)) + " is larger than a kernel log can be (at most " +
                         format_bytes(kKernelLogMaxBytes) + ")");
    // Non-blocking: a file that would make a read wait (a live log of some
    // other file system) is refused rather than waited on.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw UsageError(what + ": " + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    XidScanner scanner(path);
    std::string pending;
    std::vector<char> buffer(1 << 16);
    std::uint64_t total = 0;
    for (;;) {
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) {
            throw_if_interrupted();
            continue;
        }
        if (n < 0 && errno == EAGAIN)
            throw UsageError(what + ": a read would wait for more (a live log, not a saved one: dmesg > FILE saves one)");
        if (n < 0) throw UsageError(what + ": " + std::strerror(errno));
        const auto got = static_cast<std::size_t>(n);
        if (got == 0) break;
        total += got;
        // The file grew past the limit while it was read: the same refusal.
        if (total > kKernelLogMaxBytes) throw UsageError(what + ": larger than a kernel log can be (at most " + format_bytes(kKernelLogMaxBytes) + ")");
        std::string_view chunk(buffer.data(), got);
        if (chunk.find('\0') != std::string_view::npos)
            throw UsageError(what + ": a binary file, not a text kernel log (journalctl -k -o short-iso > FILE writes one)");
        while (!chunk.empty()) {
            const std::size_t nl = chunk.find('\n');
            if (nl == std::string_view::npos) {
                pending.append(chunk);
                break;
            }
            pending.append(chunk.substr(0, nl));
            scanner.add_line(pending);
            pending.clear();
            chunk.remove_prefix(nl + 1);
        }
        if (pending.size() > kKernelLogMaxLine)
            throw UsageError(what + ": a line longer than " + format_bytes(kKernelLogMaxLine) + ": not a kernel log");
    }
    if (!pending.empty()) scanner.add_line(pending);
    return scanner.finish();
}


namespace {

// klogctl's actions (sys/klog.h leaves them unnamed).
constexpr int kSyslogReadAll = 3, kSyslogSizeBuffer = 10;

XidScan read_klogctl() {
    XidScan scan;
    scan.source = "klogctl";
    const int size = klogctl(kSyslogSizeBuffer, nullptr, 0);
    if (size < 0) {
        scan.why_unreadable = std::string("the kernel log cannot be read: klogctl: ") + std::strerror(errno);
        return scan;
    }
    std::string text(static_cast<std::size_t>(size) + 1, '\0');
    const int got = klogctl(kSyslogReadAll, text.data(), static_cast<int>(text.size()));
    if (got < 0) {
        scan.why_unreadable = std::string("the kernel log cannot be read: klogctl: ") + std::strerror(errno) +
                              (errno == EPERM ? " (needs root, or kernel.dmesg_restrict=0)" : "");
        return scan;
    }
    text.resize(static_cast<std::size_t>(got));
    return scan_kernel_log_text(text, "klogctl");
}

}  // namespace

XidScan read_live_kernel_log() {
    const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return read_klogctl();  // some containers have no /dev/kmsg
        XidScan scan;
        scan.source = "/dev/kmsg";
        scan.why_unreadable = std::string("the kernel log cannot be read: /dev/kmsg: ") + std::strerror(errno) +
                              (errno == EPERM || errno == EACCES ? " (needs root, or kernel.dmesg_restrict=0; or give --kernel-log FILE)" : "");
        return scan;
    }
    XidScanner scanner("/dev/kmsg");
    std::string error;
    // One record per read; a fresh descriptor starts at the oldest record.
    // The buffer is finite, but a busy kernel writes on: stop after this many.
    char record[8192];
    for (std::uint64_t n = 0; n < 10'000'000; ++n) {
        const ssize_t got = ::read(fd, record, sizeof record);
        if (got > 0) {
            std::string_view r(record, static_cast<std::size_t>(got));
            scanner.add_line(r.substr(0, r.find('\n')));  // continuation lines (" SUBSYSTEM=...") follow the first
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno == EPIPE) continue;  // records overwritten while read: go on with the next
        if (got < 0 && errno != EAGAIN) error = std::strerror(errno);
        break;
    }
    ::close(fd);
    XidScan scan = scanner.finish();
    if (!error.empty()) scan.why_unreadable = "the kernel log cannot be read: /dev/kmsg: " + error;
    return scan;
}


XidClock xid_clock_now() {
    timespec mono{}, real{};
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &real);
    return XidClock{static_cast<double>(mono.tv_sec) + static_cast<double>(mono.tv_nsec) / 1e9, static_cast<std::int64_t>(real.tv_sec)};
}


}  // namespace gpumem
