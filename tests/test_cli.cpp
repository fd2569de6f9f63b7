// CLI tests: run the gpumem binary ($GPUMEM_BIN) and check exit status,
// stdout and stderr. They need no GPU; the no-driver checks run only where no
// driver is installed and are skipped elsewhere.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "version.hpp"

using nlohmann::json;
using Args = std::vector<std::string>;

namespace {

// Every subcommand that needs a GPU, each with the arguments of a minimal
// valid run. Add new subcommands here: the no-driver checks below cover them.
const std::vector<Args>& gpu_commands() {
    static const std::vector<Args> commands = {
        {"info"},
    };
    return commands;
}

// Whether the CUDA driver library can be loaded at all.
bool driver_present() {
    static const bool present = [] {
        void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (lib) dlclose(lib);
        return lib != nullptr;
    }();
    return present;
}

std::string joined(const Args& args) {
    std::string s;
    for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
    return s;
}

Args with(Args args, const Args& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// A failure as the conventions want it: one "gpumem: error:" line on stderr.
void check_one_error_line(const RunResult& r) {
    CHECK(r.stderr_lines() == 1);
    CHECK(r.err.rfind("gpumem: error: ", 0) == 0);
    CHECK((!r.err.empty() && r.err.back() == '\n'));
    CHECK(r.err.find('\x1b') == std::string::npos);  // no colour codes when not on a terminal
}

// stdout holds exactly one JSON document with ok:false and the exit status.
void check_json_error(const RunResult& r, int status) {
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));  // json::parse rejects trailing documents
    REQUIRE(doc.is_object());
    CHECK(doc.at("schema_version") == 1);
    CHECK(doc.at("tool") == "gpumem");
    CHECK(doc.at("ok") == false);
    CHECK(doc.at("error").at("status") == status);
    CHECK(doc.at("error").at("status").is_number_integer());
    CHECK(doc.at("error").at("code").is_string());
    CHECK_FALSE(doc.at("error").at("message").get<std::string>().empty());
}

// Usage errors: bad flags, sizes, device specs, formats, units, conflicting flags.
const std::vector<Args>& usage_errors() {
    static const std::vector<Args> cases = {
        {},                                   // no subcommand
        {"no-such-subcommand"},
        {"--no-such-flag", "info"},
        {"info", "--no-such-flag"},
        {"info", "stray-argument"},
        {"-d"},                               // missing value
        {"info", "--min-free", "abc"},        // bad size
        {"info", "--pick", "1", "--min-free", "abc"},
        {"info", "--pick", "1", "--min-free", "-5GiB"},
        {"info", "--pick", "1", "--min-free", "12XB"},
        {"info", "--pick", "0"},
        {"info", "--pick", "two"},
        {"info", "--loop", "0"},
        {"info", "--loop", "abc"},
        {"info", "--loop", "1", "--count", "0"},
        {"info", "--query", "no_such_field"},
        {"info", "-d", "foo"},                // bad device specs
        {"info", "-d", "-1"},
        {"info", "-d", ""},                  // given but empty: not the default "all"
        {"info", "--device="},
        {"info", "-d", "0,"},
        {"info", "-d", "all,0"},
        {"info", "-d", "1,1"},
        {"info", "-d", "GPU-xyz"},
        {"info", "-d", "GPU-"},
        {"info", "-d", "0000:18:00.9"},
        {"-d", "1.5", "info"},
        {"--format", "xml", "info"},          // bad --format / --units
        {"--format", "JSON", "info"},
        {"--format=yaml", "info"},
        {"--units", "mibs", "info"},
        {"--units", "parsecs", "info"},
        {"info", "--units", "Gi"},
        {"info", "--count", "3"},             // conflicting flags (--json --csv: below)
        {"info", "--min-free", "10GiB"},
        {"info", "--pick", "1", "--loop", "1"},
    };
    return cases;
}

}  // namespace

TEST_CASE("cli: --help prints usage on stdout and exits 0") {
    for (const Args& args : {Args{"--help"}, Args{"-h"}}) {
        CAPTURE(joined(args));
        const auto r = run_gpumem(args);
        CHECK(r.status == 0);
        CHECK(r.out.find("Usage: gpumem") != std::string::npos);
        CHECK(r.out.find("--device") != std::string::npos);
        CHECK(r.out.find("Exit status") != std::string::npos);
        for (const Args& command : gpu_commands()) CHECK(r.out.find(command.front()) != std::string::npos);
        CHECK(r.err.empty());
    }
}

TEST_CASE("cli: SUBCOMMAND --help prints that subcommand's usage and exits 0") {
    for (const Args& command : gpu_commands()) {
        CAPTURE(command.front());
        const auto r = run_gpumem({command.front(), "--help"});
        CHECK(r.status == 0);
        CHECK(r.out.find("Usage: gpumem " + command.front()) != std::string::npos);
        CHECK(r.err.empty());
    }
    const auto info = run_gpumem({"info", "--help"});
    for (const char* option : {"--query", "--processes", "--pick", "--min-free", "--loop", "--count"}) {
        CAPTURE(option);
        CHECK(info.out.find(option) != std::string::npos);
    }
}

TEST_CASE("cli: --version prints the version on stdout and exits 0") {
    for (const Args& args : {Args{"--version"}, Args{"-V"}}) {
        CAPTURE(joined(args));
        const auto r = run_gpumem(args);
        CHECK(r.status == 0);
        CHECK(r.out.rfind(std::string("gpumem ") + GPUMEM_VERSION + "\n", 0) == 0);
        CHECK(r.out.find("CUDA runtime") != std::string::npos);
        CHECK(r.out.find("NVIDIA driver") != std::string::npos);
        CHECK(r.err.empty());
    }
}

TEST_CASE("cli: usage errors exit 2 with one stderr line and nothing on stdout") {
    for (const Args& args : usage_errors()) {
        CAPTURE(joined(args));
        const auto r = run_gpumem(args);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        check_one_error_line(r);
    }
}

TEST_CASE("cli: usage errors with --json print one JSON document with ok:false") {
    for (const Args& base : usage_errors()) {
        for (const Args& json_flag : {Args{"--json"}, Args{"--format", "json"}, Args{"--format=json"}}) {
            // --format json would conflict with the --format the case tests.
            const bool has_format = std::any_of(base.begin(), base.end(), [](const std::string& a) { return a.rfind("--format", 0) == 0; });
            if (has_format && json_flag.front() != "--json") continue;
            const Args args = with(base, json_flag);
            CAPTURE(joined(args));
            const auto r = run_gpumem(args);
            CHECK(r.status == 2);
            check_one_error_line(r);
            check_json_error(r, 2);
            if (r.status == 2) CHECK(json::parse(r.out).at("error").at("code") == "usage_error");
        }
    }
}

TEST_CASE("cli: formats that contradict each other are a usage error with no document in any format") {
    // The user asked for two formats; neither is honoured, stdout stays empty.
    for (const Args& args : {Args{"--json", "--csv", "info"}, Args{"info", "--csv", "--json"}, Args{"--json", "--csv", "reuse-sim", "replay"},
                             Args{"--json", "--format", "csv", "reuse-sim", "replay"}, Args{"--format=table", "--json", "memset"}}) {
        CAPTURE(joined(args));
        const auto r = run_gpumem(args);
        CHECK(r.status == 2);
        check_one_error_line(r);
        CHECK(r.out.empty());
    }
}

TEST_CASE("cli: the error message names what was wrong") {
    CHECK(run_gpumem({"info", "--min-free", "abc"}).err.find("abc") != std::string::npos);
    CHECK(run_gpumem({"info", "-d", "foo"}).err.find("'foo'") != std::string::npos);
    CHECK(run_gpumem({"--format", "xml", "info"}).err.find("xml") != std::string::npos);
    CHECK(run_gpumem({"--units", "mibs", "info"}).err.find("mibs") != std::string::npos);
    CHECK(run_gpumem({"--json", "--csv", "info"}).err.find("--csv") != std::string::npos);
    CHECK(run_gpumem({"info", "--count", "3"}).err.find("--loop") != std::string::npos);
    const auto r = run_gpumem({"info", "-d", "GPU-xyz", "--json"});
    CHECK(json::parse(r.out).at("error").at("message").get<std::string>().find("GPU-xyz") != std::string::npos);
}

TEST_CASE("cli: --list documents carry their origin and their command, on success and failure") {
    for (const Args& args : {Args{"--list", "--json"}, Args{"--list", "checks", "--json"}, Args{"--list", "bogus", "--json"}}) {
        CAPTURE(joined(args));
        const auto r = run_gpumem(args);
        const json doc = json::parse(r.out);
        CHECK(doc.at("command") == "list");
        REQUIRE(doc.contains("origin"));
        CHECK(doc.at("origin").is_object());
        CHECK(doc.at("origin").contains("host"));
    }
    CHECK(json::parse(run_gpumem({"--schema", "bogus", "--json"}).out).at("command") == "schema");
}

TEST_CASE("cli: --schema and --list take no --format prometheus or nagios, and say so") {
    for (const char* format : {"prometheus", "nagios"}) {
        const auto schema = run_gpumem({"--schema", "check", "--format", format});
        CAPTURE(schema.err);
        CHECK(schema.status == 2);  // --schema is no plugin: a usage error as any format it does not take (issue 48)
        CHECK(schema.err.find("--schema prints JSON Schema") != std::string::npos);
        CHECK(schema.err.find("offered by") == std::string::npos);
        const auto list = run_gpumem({"--list", "checks", "--format", format});
        CAPTURE(list.err);
        CHECK(list.err.find("--list prints names") != std::string::npos);
    }
}

TEST_CASE("cli: without a driver every GPU subcommand exits 3" * doctest::skip(driver_present())) {
    for (const Args& command : gpu_commands()) {
        for (const Args& extra : {Args{}, Args{"-d", "0"}, Args{"-d", "all"}, Args{"--csv"}, Args{"--format", "value"},
                                  Args{"-q"}}) {
            const Args args = with(command, extra);
            CAPTURE(joined(args));
            const auto r = run_gpumem(args);
            CHECK(r.status == 3);
            CHECK(r.out.empty());
            check_one_error_line(r);
        }
    }
}

// Issue 57: a sweep that measured nothing drew an empty chart ("on no
// device") over the user's file. Nothing to draw: nothing written.
TEST_CASE("cli: without a driver, copy and memset --sizes --plot exit 3 and leave the named file as it was" * doctest::skip(driver_present())) {
    char dir[] = "/tmp/gpumem-plot-kept-XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    const std::string svg = std::string(dir) + "/h2d.svg";
    for (const Args& command : {Args{"copy", "h2d", "--sizes", "4KiB..1GiB"}, Args{"memset", "--sizes", "4KiB..1GiB"}})
        for (const Args& extra : {Args{}, Args{"--json"}}) {
            const Args args = with(with(command, {"--plot", svg}), extra);
            CAPTURE(joined(args));
            {
                std::ofstream keep(svg);
                keep << "keep\n";
            }
            const auto r = run_gpumem(args);
            CHECK(r.status == 3);
            check_one_error_line(r);
            CHECK(slurp(svg) == "keep\n");
            std::size_t files = 0;
            for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.exists() ? 1 : 0;
            CHECK(files == 1);  // no temporary left either
        }
    std::filesystem::remove_all(dir);
}

TEST_CASE("cli: without a driver --json still prints one valid JSON document" * doctest::skip(driver_present())) {
    for (const Args& command : gpu_commands()) {
        for (const Args& json_flag : {Args{"--json"}, Args{"--format", "json"}}) {
            const Args args = with(command, json_flag);
            CAPTURE(joined(args));
            const auto r = run_gpumem(args);
            CHECK(r.status == 3);
            check_one_error_line(r);
            check_json_error(r, 3);
            const json doc = json::parse(r.out);
            CHECK(doc.at("error").at("code") == "no_device");
            CHECK(doc.at("command") == command.front());
        }
    }
}

TEST_CASE("cli: without a driver, bad arguments are still usage errors" * doctest::skip(driver_present())) {
    // Arguments are checked before the driver is looked for.
    for (const Args& command : gpu_commands()) {
        for (const Args& extra : {Args{"-d", "foo"}, Args{"--units", "mibs"}, Args{"--json", "--csv"}}) {
            const Args args = with(command, extra);
            CAPTURE(joined(args));
            CHECK(run_gpumem(args).status == 2);
        }
    }
}

TEST_CASE("cli: with a driver present the no-driver checks are skipped" * doctest::skip(!driver_present())) {
    MESSAGE("libcuda.so.1 loads here: the no-driver checks were skipped; the GPU suites cover this machine");
    // Still a check that can fail: a driver without a usable GPU must give 3, never 0 with no output.
    const auto r = run_gpumem({"info"});
    CHECK((r.status == 0 || r.status == 3));
    if (r.status == 0) CHECK_FALSE(r.out.empty());
}
