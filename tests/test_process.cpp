// The process layer (src/process): shell exit statuses, descriptors owned by
// RAII, the temporary directory, and run_child's failure paths leaking no
// descriptor.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "base/errors.hpp"
#include "process/child.hpp"
#include "process/file_descriptor.hpp"
#include "process/temporary_directory.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpumem;

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

std::size_t open_descriptors() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// Sets TMPDIR for one scope, and puts the old value back.
class TmpdirSetting {
public:
    explicit TmpdirSetting(const std::string& value) {
        if (const char* old = std::getenv("TMPDIR")) old_ = old;
        ::setenv("TMPDIR", value.c_str(), 1);
    }
    ~TmpdirSetting() {
        if (old_) ::setenv("TMPDIR", old_->c_str(), 1);
        else ::unsetenv("TMPDIR");
    }
    TmpdirSetting(const TmpdirSetting&) = delete;
    TmpdirSetting& operator=(const TmpdirSetting&) = delete;

private:
    std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("process: a wait status as a shell reports it") {
    CHECK(process::shell_exit_status(7 << 8) == 7);
    CHECK(process::shell_exit_status(0) == 0);
    CHECK(process::shell_exit_status(SIGTERM) == 143);
    CHECK(process::shell_exit_status(SIGKILL) == 137);
}

TEST_CASE("process: a FileDescriptor closes what it owns once, and a move hands it on") {
    int raw = -1;
    {
        process::FileDescriptor fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        raw = fd.get();
        REQUIRE(fd.valid());
        process::FileDescriptor moved(std::move(fd));
        CHECK_FALSE(fd.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
        CHECK(moved.get() == raw);
        CHECK(is_open(raw));
    }
    CHECK_FALSE(is_open(raw));

    process::Pipe pipe = process::make_pipe();
    CHECK((::fcntl(pipe.read.get(), F_GETFD) & FD_CLOEXEC) != 0);
    CHECK((::fcntl(pipe.write.get(), F_GETFD) & FD_CLOEXEC) != 0);
    const int read_end = pipe.read.get();
    pipe.write.reset();
    char byte = 0;
    CHECK(::read(read_end, &byte, 1) == 0);  // the writer closed: end of file, not a wait
}

TEST_CASE("process: a TemporaryDirectory is private, named for its purpose, and goes with what it holds") {
    std::string path;
    {
        const process::TemporaryDirectory dir("unit");
        path = dir.path();
        CHECK(fs::path(path).filename().string().rfind("gpumem-unit-", 0) == 0);
        struct stat st {};
        REQUIRE(::stat(path.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0700);
        fs::create_directories(path + "/a/b");
        std::ofstream(path + "/a/b/file") << "x";
    }
    CHECK_FALSE(fs::exists(path));
}

TEST_CASE("process: no temporary directory where TMPDIR cannot hold one: one error naming it and the way out") {
    const TmpdirSetting missing("/nonexistent/gpumem-tmp");
    try {
        const process::TemporaryDirectory dir("unit");
        FAIL("made a directory under a missing TMPDIR");
    } catch (const Error& e) {
        const std::string what = e.what();
        CHECK(what.find("/nonexistent/gpumem-tmp/gpumem-unit-") == 0);
        CHECK(what.find("set TMPDIR") != std::string::npos);
    }
}

TEST_CASE("process: run_child's failures leave no descriptor open") {
    const std::size_t before = open_descriptors();
    process::ChildOptions options;
    options.output_file = "/nonexistent/dir/out.log";
    CHECK_THROWS_AS(process::run_child({"true"}, options), Error);
    CHECK(open_descriptors() == before);

    options.output_file.clear();
    const process::ChildExit missing = process::run_child({"/nonexistent/program"}, options);
    CHECK(missing.exit_status == 127);
    REQUIRE(missing.start_error);
    CHECK(missing.start_error->find("cannot run /nonexistent/program") == 0);
    CHECK(open_descriptors() == before);

    const fs::path log = fs::temp_directory_path() / ("gpumem-test-process-" + std::to_string(::getpid()) + ".log");
    options.output_file = log.string();
    const process::ChildExit ran = process::run_child({"sh", "-c", "echo out; echo err >&2; exit 3"}, options);
    CHECK(ran.exit_status == 3);
    CHECK_FALSE(ran.start_error);
    std::string text;
    {
        std::ifstream in(log);  // closed before the count below
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    CHECK(text == "out\nerr\n");
    CHECK(open_descriptors() == before);
    fs::remove(log);
}

namespace {

// Every process of the group gone (its orphans reaped by init, a moment
// after they die), within 2 s.
bool group_gone(int group) {
    for (int i = 0; i < 200; ++i) {
        if (::kill(-group, 0) == -1) return true;
        ::usleep(10 * 1000);
    }
    return false;
}

// Its exit, polled until it ends, for 5 s at most.
std::optional<process::ChildExit> ended_within_5s(process::RunningChild& child) {
    std::optional<process::ChildExit> exit;
    for (int i = 0; i < 500 && !exit; ++i) {
        exit = child.poll();
        if (!exit) ::usleep(10 * 1000);
    }
    return exit;
}

}  // namespace

TEST_CASE("process: RunningChild runs side by side, each polled; stopped, its whole group goes; a move hands it on") {
    const std::size_t before = open_descriptors();
    process::ChildOptions quiet;
    quiet.output_file = "/dev/null";
    // Two at once: the quick one ends first, the slow one is still going.
    process::RunningChild quick({"sh", "-c", "exit 3"}, quiet);
    process::RunningChild slow({"sh", "-c", "sleep 30 & wait"}, quiet);
    const std::optional<process::ChildExit> done = ended_within_5s(quick);
    REQUIRE(done);
    CHECK(done->exit_status == 3);
    CHECK_FALSE(done->interrupted);
    CHECK(quick.poll()->exit_status == 3);  // once ended, the same
    CHECK_FALSE(slow.poll());
    // Moved, then stopped: its group (the shell and its sleep) is gone.
    process::RunningChild moved = std::move(slow);
    const int group = moved.pid();
    const process::ChildExit stopped = moved.stop();
    CHECK(stopped.interrupted);
    CHECK(group_gone(group));
    // A start that fails: exit 127 with the reason, as run_child's.
    process::RunningChild missing({"/nonexistent/program"}, quiet);
    const std::optional<process::ChildExit> gone = ended_within_5s(missing);
    REQUIRE(gone);
    CHECK(gone->exit_status == 127);
    CHECK(gone->start_error.has_value());
    CHECK(open_descriptors() == before);
}

TEST_CASE("process: a RunningChild dropped while it runs takes its group with it") {
    process::ChildOptions quiet;
    quiet.output_file = "/dev/null";
    int group = 0;
    {
        process::RunningChild child({"sh", "-c", "sleep 30 & wait"}, quiet);
        group = child.pid();
        CHECK(::kill(-group, 0) == 0);
    }
    CHECK(group_gone(group));
}
