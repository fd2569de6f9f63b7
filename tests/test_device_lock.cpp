// The per-GPU lock between gpumem processes (core/device_lock) and the
// review of a check's outcome beside other processes (bench/check_contention),
// without a GPU: a child process holds the lock as another gpumem would.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/check_contention.hpp"
#include "core/device_lock.hpp"

using namespace gpumem;

namespace {

// A lock directory of the test's own.
std::string lock_dir() {
    static const std::string dir = [] {
        char templ[] = "/tmp/gpumem-lock-test-XXXXXX";
        const char* made = ::mkdtemp(templ);
        REQUIRE(made != nullptr);
        ::setenv("GPUMEM_LOCK_DIR", made, 1);
        return std::string(made);
    }();
    return dir;
}

DeviceIdentity gpu(unsigned bus) {
    DeviceIdentity d;
    d.pci.bus = bus;
    d.uuid = "GPU-test-" + std::to_string(bus);
    return d;
}

// A child that takes the lock file of `device` as another gpumem would, then
// waits to be killed; returns its pid once it holds the lock.
pid_t hold_in_child(const DeviceIdentity& device) {
    const std::string path = device_lock_path(device);
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0666);
        if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
        const std::string text = "pid " + std::to_string(::getpid()) + ": gpumem check -d 0\n";
        if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0) ::_exit(1);
        if (::write(ready[1], "x", 1) != 1) ::_exit(1);
        for (;;) ::pause();
    }
    ::close(ready[1]);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    return pid;
}

void end_child(pid_t pid) {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
}

}  // namespace

TEST_CASE("device lock: keyed by the PCI address, in GPUMEM_LOCK_DIR") {
    const std::string dir = lock_dir();
    CHECK(device_lock_directory() == dir);
    DeviceIdentity a = gpu(0x18);
    const std::string path = device_lock_path(a);
    CHECK(path == dir + "/gpu-0000_18_00.0.lock");
    a.cuda_index = DeviceId{3};  // CUDA_VISIBLE_DEVICES renumbers: the file does not change
    a.pci.function = 1;
    CHECK(device_lock_path(a) == path);
}

TEST_CASE("device lock: a free lock is taken at once, and held for the rest of the process") {
    lock_dir();
    const DeviceLockResult r = lock_device(gpu(0x20), 0, nullptr);
    CHECK(r.acquired);
    CHECK(r.waited == 0);  // free at the first try: not waited for
    CHECK(r.holder.empty());
    const DeviceLockResult again = lock_device(gpu(0x20), 0, nullptr);
    CHECK(again.acquired);
}

TEST_CASE("device lock: another holder is waited for up to the timeout, named, and its death frees the lock") {
    lock_dir();
    const DeviceIdentity d = gpu(0x30);
    const pid_t holder = hold_in_child(d);
    int calls = 0;
    const DeviceLockResult refused = lock_device(d, 0.4, [&](double, const std::string&) { ++calls; });
    CHECK_FALSE(refused.acquired);
    CHECK(refused.waited >= 0.4);
    CHECK(refused.waited < 2.0);
    CHECK(calls > 0);  // progress while waiting
    CHECK(refused.holder == "pid " + std::to_string(holder) + ": gpumem check -d 0");
    CHECK(holder_pid(refused.holder) == static_cast<unsigned>(holder));
    CHECK(holder_pid("another process") == 0);
    const std::string message = lock_refusal(d, refused);
    CHECK(message.find("GPU GPU-test-48 is locked by pid " + std::to_string(holder) + ": gpumem check -d 0 (waited 0.") == 0);
    // The kernel drops the lock of a process that dies, however it dies.
    std::thread killer([holder] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        end_child(holder);
    });
    const DeviceLockResult taken = lock_device(d, 10, nullptr);
    killer.join();
    CHECK(taken.acquired);
    CHECK(taken.waited >= 0.2);
    CHECK(taken.waited < 5.0);
}

TEST_CASE("device lock: several GPUs, each waited for within one timeout") {
    lock_dir();
    const DeviceIdentity free_gpu = gpu(0x40), busy = gpu(0x41);
    const pid_t holder = hold_in_child(busy);
    const std::vector<DeviceLockResult> r = lock_devices({busy, free_gpu}, 0.3, nullptr);
    end_child(holder);
    REQUIRE(r.size() == 2);
    CHECK_FALSE(r[0].acquired);
    CHECK(r[1].acquired);
}

TEST_CASE("device lock: one directory for every user, whatever their environment says") {
    lock_dir();
    const std::string saved = std::getenv("GPUMEM_LOCK_DIR");
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    const char* tmp = std::getenv("TMPDIR");
    const std::string saved_xdg = xdg ? xdg : "", saved_tmp = tmp ? tmp : "";
    ::unsetenv("GPUMEM_LOCK_DIR");
    struct stat st {};
    const bool run_gpumem_existed = ::stat("/run/gpumem", &st) == 0;
    // Two users' environments: per-user runtime and temporary folders.
    ::setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
    ::setenv("TMPDIR", "/tmp/user-a", 1);
    const std::string first = device_lock_directory();
    ::setenv("XDG_RUNTIME_DIR", "/run/user/0", 1);
    ::setenv("TMPDIR", "/tmp/user-b", 1);
    const std::string second = device_lock_directory();
    ::setenv("GPUMEM_LOCK_DIR", saved.c_str(), 1);
    saved_xdg.empty() ? ::unsetenv("XDG_RUNTIME_DIR") : ::setenv("XDG_RUNTIME_DIR", saved_xdg.c_str(), 1);
    saved_tmp.empty() ? ::unsetenv("TMPDIR") : ::setenv("TMPDIR", saved_tmp.c_str(), 1);
    CHECK(first == second);
    CHECK((first == "/run/gpumem" || first == "/run/lock/gpumem" || first == "/tmp/gpumem"));
    // /run/gpumem is the package's to make (tmpfiles.d), never root's gpumem's:
    // root would lock there and a user, who cannot make it, elsewhere.
    if (!run_gpumem_existed) CHECK(::stat("/run/gpumem", &st) != 0);
}

// A lock file another user made, in a sticky folder writable by all (as
// /run/gpumem is), is still locked: under fs.protected_regular an O_CREAT
// open of it fails even for root, and a lock that is not opened is not taken.
TEST_CASE("device lock: another user's lock file is waited for, not skipped") {
    if (::geteuid() != 0) {
        MESSAGE("not root: another user cannot be made here; the case runs in CI, which runs as root");
        return;
    }
    char templ[] = "/tmp/gpumem-lock-users-XXXXXX";
    REQUIRE(::mkdtemp(templ) != nullptr);
    REQUIRE(::chmod(templ, 01777) == 0);
    const std::string saved = std::getenv("GPUMEM_LOCK_DIR") ? std::getenv("GPUMEM_LOCK_DIR") : lock_dir();
    ::setenv("GPUMEM_LOCK_DIR", templ, 1);
    const DeviceIdentity d = gpu(0x50);
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t other = ::fork();
    REQUIRE(other >= 0);
    if (other == 0) {
        // "nobody" takes the lock with gpumem's own code, as its gpumem would.
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
        if (!lock_device(d, 0, nullptr).acquired) ::_exit(1);
        if (::write(ready[1], "x", 1) != 1) ::_exit(1);
        for (;;) ::pause();
    }
    ::close(ready[1]);
    char c = 0;
    const bool held = ::read(ready[0], &c, 1) == 1;
    ::close(ready[0]);
    const DeviceLockResult refused = lock_device(d, 0.2, nullptr);
    end_child(other);
    const DeviceLockResult taken = lock_device(d, 5, nullptr);
    ::setenv("GPUMEM_LOCK_DIR", saved.c_str(), 1);
    REQUIRE(held);
    CHECK_FALSE(refused.acquired);
    CHECK(holder_pid(refused.holder) == static_cast<unsigned>(other));
    CHECK(taken.acquired);
    CHECK(taken.holder.find("not locked") == std::string::npos);
}

// check's engine takes the lock the way every command does: through the
// command's DeviceLocker (cli/lock_wait's GpuLocker), never on its own.
TEST_CASE("device lock: check's device work locks through the command's DeviceLocker") {
    std::vector<CheckDeviceFigures> figures(2);
    figures[0].device = gpu(0x41);
    figures[1].device = gpu(0x42);
    std::vector<DeviceIdentity> asked;
    const DeviceLocker refuse_second = [&](const std::vector<DeviceIdentity>& devices) {
        asked = devices;
        std::vector<DeviceLockResult> results(devices.size());
        results[0].acquired = true;
        results[1].holder = "pid 77: gpumem copy";
        return results;
    };
    int read_again = 0;
    const FiguresReader count_reads = [&read_again] {
        ++read_again;
        return std::vector<CheckDeviceFigures>{};
    };
    lock_check_devices(figures, refuse_second, count_reads);
    CHECK(read_again == 0);  // nobody waited: the figures read before still hold
    REQUIRE(asked.size() == 2);
    CHECK(asked[1].pci.bus == 0x42);
    CHECK(figures[0].why_unlocked.empty());
    CHECK(figures[0].lock_note.empty());
    CHECK(figures[1].why_unlocked.find("not run: ") == 0);
    CHECK(figures[1].why_unlocked.find("pid 77: gpumem copy") != std::string::npos);
    // No locker is a mistake of the command, not a run without the lock.
    CHECK_THROWS_AS(lock_check_devices(figures, DeviceLocker{}, count_reads), std::logic_error);
}

TEST_CASE("contention: an allocation that fails beside another process's memory is unknown; on a free GPU it fails") {
    DeviceContention busy;
    busy.known = true;
    busy.others.push_back(NvmlProcess{4242, "gpumem", 70ULL << 30});
    busy.memory = NvmlMemory{80ULL << 30, 0, 79ULL << 30, 3670016, true};
    const CheckOutcome failed = failed_check("fill.verify", "cudaMalloc of 2 MiB failed: cudaErrorMemoryAllocation");
    REQUIRE(failed.verdict == Verdict::fail);
    const CheckOutcome unknown = review_contention(failed, true, busy, false);
    CHECK(unknown.verdict == Verdict::unknown);
    CHECK(unknown.remediation == Remediation::none);
    CHECK(unknown.reason.find("pid 4242 gpumem (70 GiB)") != std::string::npos);
    CHECK(unknown.reason.find("3.5 MiB free") != std::string::npos);
    CHECK(unknown.reason.find("cudaMalloc of 2 MiB failed") != std::string::npos);
    DeviceContention idle;
    idle.known = true;
    const CheckOutcome still = review_contention(failed, true, idle, false);
    CHECK(still.verdict == Verdict::fail);
    CHECK(still.remediation == failed.remediation);
    DeviceContention not_known;  // NVML could not tell: as measured
    CHECK(review_contention(failed, true, not_known, false).verdict == Verdict::fail);
}

TEST_CASE("contention: a rate beside another compute process is unknown unless --judge-shared") {
    DeviceContention busy;
    busy.known = true;
    busy.others.push_back(NvmlProcess{77, "python", std::nullopt});
    for (const Verdict v : {Verdict::pass, Verdict::warn, Verdict::fail}) {
        CheckOutcome rate = failed_check("memset.bandwidth", "1.00 GiB with cuMemsetD32");
        rate.verdict = v;
        CAPTURE(verdict_name(v));
        const CheckOutcome shared = review_contention(rate, false, busy, false);
        CHECK(shared.verdict == Verdict::unknown);
        CHECK(shared.remediation == Remediation::none);
        CHECK(shared.reason.find("measured while pid 77 python ran on the GPU") == 0);
        CHECK(shared.reason.find("it would " + std::string(verdict_name(v))) != std::string::npos);
        CHECK(review_contention(rate, false, busy, true).verdict == v);  // --judge-shared
        CHECK(review_contention(rate, false, DeviceContention{true, {}, std::nullopt}, false).verdict == v);
    }
    // A p2p pair names the GPU the other process runs on.
    DeviceContention peer = busy;
    peer.where = "GPU 1";
    CHECK(review_contention(failed_check("p2p.0-1", "390 GB/s"), false, peer, false).reason.find("pid 77 python ran on GPU 1:") != std::string::npos);
    // Not a rate: a count is judged as measured.
    CheckOutcome count = failed_check("fill.verify", "1 bad word");
    CHECK(review_contention(count, false, busy, false).verdict == Verdict::fail);
}
