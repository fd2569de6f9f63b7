#include "core/device_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include "base/interrupt.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"

namespace gpumem {
namespace {

using Clock = std::chrono::steady_clock;

// An open lock file; closing it is what releases the flock.
class LockFile {
public:
    explicit LockFile(int fd) noexcept : fd_(fd) {}
    LockFile(const LockFile&) = delete;
    LockFile& operator=(const LockFile&) = delete;
    LockFile(LockFile&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    LockFile& operator=(LockFile&&) = delete;
    ~LockFile() noexcept {
        if (fd_ >= 0) ::close(fd_);
    }
    int fd() const noexcept { return fd_; }

private:
    int fd_;
};

// The locks this process holds, by path, until it ends.
std::mutex& held_mutex() {
    static std::mutex m;
    return m;
}
// Never destroyed: the kernel closes the files when the process ends, after
// the CUDA runtime has torn its contexts down, so that the next holder finds
// none of this process's memory on the GPU.
std::map<std::string, LockFile>& held() {
    static auto* locks = new std::map<std::string, LockFile>();  // NOLINT(cppcoreguidelines-owning-memory): see above
    return *locks;
}

// A directory every user's gpumem can create lock files in: sticky and
// writable by all, as /run/lock and /tmp are. Made so when absent (chmod:
// past the umask).
bool shared_directory(const std::string& dir) {
    if (::mkdir(dir.c_str(), 01777) == 0) {
        ::chmod(dir.c_str(), 01777);
    } else if (errno != EEXIST) {
        return false;
    }
    return ::access(dir.c_str(), W_OK | X_OK) == 0;
}

// Opens a lock file without O_CREAT when it exists: under
// fs.protected_regular (systemd's default) an O_CREAT open of another user's
// file in a sticky directory fails, root's included, and a lock that cannot
// be opened would not be taken. Read-only is enough for flock(2); only the
// holder's name then goes unwritten.
int open_lock_file(const std::string& path) {
    for (int attempt = 0; attempt < 3; ++attempt) {
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno == EACCES) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0 || errno != ENOENT) return fd;
        fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            ::fchmod(fd, 0666);  // past the umask: the next user's gpumem writes its name too
            return fd;
        }
        if (errno != EEXIST) return fd;  // another process created it in between: open it as it is
    }
    return -1;
}

std::string own_command() {
    std::string text;
    if (std::FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
        char buffer[512];
        const std::size_t got = std::fread(buffer, 1, sizeof buffer, f);
        std::fclose(f);
        text.assign(buffer, got);
        std::replace(text.begin(), text.end(), '\0', ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    const std::size_t slash = text.substr(0, text.find(' ')).rfind('/');
    if (slash != std::string::npos) text.erase(0, slash + 1);  // "gpumem check", not the build path
    return one_line(text.empty() ? "gpumem" : text);
}

// What the holder wrote into the file: "pid 123: gpumem check -d 0".
std::string read_holder(int fd) {
    char buffer[600];
    const ssize_t got = ::pread(fd, buffer, sizeof buffer - 1, 0);
    if (got <= 0) return "another process (it has not written its name yet)";
    std::string text(buffer, static_cast<std::size_t>(got));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return one_line(text);
}

void write_holder(int fd) {
    const std::string text = "pid " + std::to_string(::getpid()) + ": " + own_command() + "\n";
    if (::ftruncate(fd, 0) != 0) return;  // the lock holds all the same; only the waiters' message is poorer
    const ssize_t wrote = ::pwrite(fd, text.data(), text.size(), 0);
    (void)wrote;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

std::string device_lock_directory() {
    if (const char* dir = std::getenv("GPUMEM_LOCK_DIR"); dir && *dir) return dir;
    // The same directory for every user and for root, whatever the
    // environment says (no $XDG_RUNTIME_DIR or $TMPDIR: those differ per
    // user, and two checks that do not see each other's lock measure each
    // other's traffic). /run/gpumem is made at boot by the package's
    // tmpfiles.d entry; gpumem does not create it, so that root and a user
    // never pick different directories on one machine.
    struct stat st {};
    if (::stat("/run/gpumem", &st) == 0 && S_ISDIR(st.st_mode)) return "/run/gpumem";
    // /run/lock only where every user may make folders in it (Debian's 1777;
    // some systems keep it root's): else root alone would lock there.
    if (::stat("/run/lock", &st) == 0 && (st.st_mode & 01777) == 01777 && shared_directory("/run/lock/gpumem")) return "/run/lock/gpumem";
    shared_directory("/tmp/gpumem");
    return "/tmp/gpumem";
}

std::string device_lock_path(const DeviceIdentity& device) {
    // The PCI address is what NVML and CUDA agree on under any
    // CUDA_VISIBLE_DEVICES; the function is left out (one GPU, one device).
    PciAddress pci = device.pci;
    pci.function = 0;
    std::string name = "gpu-" + pci.to_string() + ".lock";
    std::replace(name.begin(), name.end(), ':', '_');
    return device_lock_directory() + "/" + name;
}

DeviceLockResult lock_device(const DeviceIdentity& device, double timeout, const LockWaitFn& on_wait) {
    DeviceLockResult r;
    r.path = device_lock_path(device);
    const std::lock_guard<std::mutex> guard(held_mutex());
    if (held().count(r.path) != 0) {
        r.acquired = true;
        return r;
    }
    LockFile file(open_lock_file(r.path));
    if (file.fd() < 0) {
        r.acquired = true;
        r.holder = "not locked: " + r.path + ": " + std::strerror(errno);
        return r;
    }
    const auto start = Clock::now();
    while (::flock(file.fd(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            r.acquired = true;
            r.holder = "not locked: flock " + r.path + ": " + std::strerror(errno);
            return r;
        }
        r.holder = read_holder(file.fd());
        r.waited = seconds_since(start);
        if (r.waited >= timeout) return r;
        throw_if_interrupted();
        if (on_wait) on_wait(r.waited, r.holder);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // A lock taken at the first try was not waited for, however long flock took.
    r.waited = r.holder.empty() ? 0 : seconds_since(start);
    r.acquired = true;
    write_holder(file.fd());
    held().emplace(r.path, std::move(file));
    return r;
}

std::vector<DeviceLockResult> lock_devices(const std::vector<DeviceIdentity>& devices, double timeout, const LockWaitFn& on_wait) {
    std::vector<std::size_t> order(devices.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return devices[a].pci < devices[b].pci; });
    std::vector<DeviceLockResult> results(devices.size());
    const auto start = Clock::now();
    for (std::size_t i : order) results[i] = lock_device(devices[i], std::max(0.0, timeout - seconds_since(start)), on_wait);
    return results;
}

unsigned holder_pid(const std::string& holder) noexcept {
    if (holder.rfind("pid ", 0) != 0) return 0;
    unsigned pid = 0;
    for (std::size_t i = 4; i < holder.size() && holder[i] >= '0' && holder[i] <= '9' && pid < 100000000; ++i)
        pid = pid * 10 + static_cast<unsigned>(holder[i] - '0');
    return pid;
}

std::string lock_refusal(const DeviceIdentity& device, const DeviceLockResult& r) {
    const std::string name = device.uuid.empty() ? device.pci.to_string() : device.uuid;
    return "GPU " + name + " is locked by " + r.holder + " (waited " + format_decimal(r.waited, 1) + " s, --lock-timeout; lock " + r.path + ")";
}

}  // namespace gpumem
