// The whole command line: argv in, exit status out, no GPU calls. The input
// is split at NUL bytes into arguments after "gpumem"; run_gpumem parses them
// with RunMode::parse_only (every check a run makes before its first driver
// call, then return). What gpumem prints goes to in-memory files (memfd), so
// the target can hold each outcome to gpumem's documented contract:
//   - the exit status is 0 or 2 (1 would mean an internal error escaped);
//   - a failure writes exactly one line to stderr, "gpumem: error: ...";
//   - on a failure stdout is empty, or exactly one JSON document with an
//     "error" object when --json was asked for (and it must be, then, unless
//     another format was asked for too: that contradiction writes none);
//   - a success without --help/--version prints nothing on stderr.
// Run it with -close_fd_mask=3 (fuzz/run.sh does): libFuzzer then keeps its
// own output, and the sanitizers' reports, on a copy of the real stderr. To
// see why an input is a finding, run the target on it without the mask.
#include <sanitizer/common_interface_defs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"

namespace {

struct CapturedFile {
    int fd = -1;
    void attach(int target_fd, const char* name) {
        fd = memfd_create(name, 0);
        if (fd < 0 || dup2(fd, target_fd) < 0) std::abort();
    }
    void reset() const {
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) std::abort();
    }
    std::string read_all() const {
        std::string text;
        char block[4096];
        for (off_t at = 0;;) {
            const ssize_t n = pread(fd, block, sizeof block, at);
            if (n <= 0) break;
            text.append(block, static_cast<std::size_t>(n));
            at += n;
        }
        return text;
    }
};

CapturedFile captured_stdout, captured_stderr;
int real_stderr = -1;  // where findings are described

bool is_dev_null(int fd) {
    struct stat a {}, b {};
    return fstat(fd, &a) == 0 && stat("/dev/null", &b) == 0 && a.st_rdev == b.st_rdev && S_ISCHR(a.st_mode);
}

// Sets the real stderr aside before fd 2 becomes a memfd. Under
// -close_fd_mask=2 fd 2 is /dev/null already and libFuzzer has pointed the
// sanitizers at its own copy; when a finding is replayed without the mask
// (`fuzz_command_line crash-...`), the sanitizers are pointed at ours.
void set_real_stderr_aside() {
    real_stderr = dup(STDERR_FILENO);
    if (real_stderr >= 0 && !is_dev_null(real_stderr))
        __sanitizer_set_report_fd(reinterpret_cast<void*>(static_cast<std::intptr_t>(real_stderr)));
}

[[noreturn]] void finding(const char* what, const std::vector<std::string>& args, int status,
                          const std::string& out, const std::string& err) {
    std::string message = std::string("fuzz finding: ") + what + " (exit " + std::to_string(status) + ")\nargv: gpumem";
    for (const std::string& a : args) message += " '" + a + "'";
    message += "\nstdout: " + out.substr(0, 2000) + "\nstderr: " + err.substr(0, 2000) + "\n";
    if (real_stderr >= 0) (void)!write(real_stderr, message.data(), message.size());
    std::abort();
}

bool has_arg(const std::vector<std::string>& args, std::string_view wanted) {
    for (const std::string& a : args)
        if (a == wanted) return true;
    return false;
}

// Formats that contradict --json (the documented rule: --json with another
// format is a usage error that writes no document, since a script that asked
// for two formats cannot be trusted to read either).
bool other_format_asked(const std::vector<std::string>& args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string format;
        if (a == "--csv") return true;
        if (a.rfind("--format=", 0) == 0) format = a.substr(9);
        if (a == "--format" && i + 1 < args.size()) format = args[i + 1];
        if (format == "table" || format == "csv" || format == "value") return true;
    }
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    if (size > 4096) return 0;
    static bool attached = false;
    if (!attached) {  // after libFuzzer has set its own output aside (-close_fd_mask)
        set_real_stderr_aside();
        captured_stdout.attach(STDOUT_FILENO, "gpumem-fuzz-stdout");
        captured_stderr.attach(STDERR_FILENO, "gpumem-fuzz-stderr");
        attached = true;
    }

    std::vector<std::string> args;
    std::string current;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0) {
            args.push_back(current);
            current.clear();
        } else {
            current += static_cast<char>(data[i]);
        }
    }
    if (!current.empty() || args.empty()) args.push_back(current);
    if (args.size() > 64) return 0;

    std::vector<char*> argv;
    std::string name = "gpumem";
    argv.push_back(name.data());
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    captured_stdout.reset();
    captured_stderr.reset();
    const int status = gpumem::cli::run_gpumem(static_cast<int>(argv.size() - 1), argv.data(),
                                               gpumem::cli::RunMode::parse_only);
    std::fflush(stdout);
    std::fflush(stderr);
    const std::string out = captured_stdout.read_all();
    const std::string err = captured_stderr.read_all();

    // Words after the first `--` are the program's (reuse-sim record's), never gpumem's own options.
    const std::vector<std::string> own(args.begin(), std::find(args.begin(), args.end(), "--"));
    if (status != 0 && status != 2) finding("exit status other than 0 or 2", args, status, out, err);
    if (status == 2) {
        if (err.rfind("gpumem: error: ", 0) != 0 || err.back() != '\n' || err.find('\n') != err.size() - 1)
            finding("a usage error is not exactly one 'gpumem: error:' line on stderr", args, status, out, err);
        const bool json_asked = (has_arg(own, "--json") || has_arg(own, "--format=json")) && !other_format_asked(own);
        if (json_asked && out.empty()) finding("--json, but no JSON error document", args, status, out, err);
        if (!out.empty()) {
            const auto doc = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
            if (doc.is_discarded() || !doc.is_object() || !doc.contains("error") || !doc["error"].is_object() ||
                doc["error"].value("status", -1) != 2)
                finding("stdout of a failure is not one JSON error document", args, status, out, err);
        }
    } else if (!err.empty() && !has_arg(own, "--help") && !has_arg(own, "-h") && !has_arg(own, "--help-all")) {
        finding("success, yet something on stderr", args, status, out, err);
    }
    return 0;
}
