// The whole command line: parse argv, run the chosen subcommand and map every
// failure to a documented exit status. main() is one call to this; the
// command-line fuzz target calls it with RunMode::parse_only.
#include "app.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "common.hpp"
#include "core/cuda_devices.hpp"
#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "core/nvml.hpp"
#include "version.hpp"

namespace {

std::string one_line(std::string text) {
    for (char& c : text)
        if (c == '\n' || c == '\r') c = ' ';
    return text;
}

// --json must hold for errors found while parsing too, before CLI11 has set
// anything, so look for it in argv directly.
bool json_requested(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json" || a == "--format=json") return true;
        if (a == "--format" && i + 1 < argc && std::string(argv[i + 1]) == "json") return true;
    }
    return false;
}

void setup_logging(const gpumem::cli::GlobalOptions& g) {
    auto logger = std::make_shared<spdlog::logger>("gpumem", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%n: %l: %v");
    spdlog::level::level_enum level = spdlog::level::warn;
    if (g.quiet) level = spdlog::level::err;
    if (g.verbosity == 1) level = spdlog::level::info;
    if (g.verbosity >= 2) level = spdlog::level::debug;
    logger->set_level(level);
    spdlog::set_default_logger(logger);
}

std::string version_text() {
    std::string text = std::string("gpumem ") + GPUMEM_VERSION + "\nCUDA runtime " + gpumem::cuda_runtime_version_string() +
                       " (static)\n";
    std::string why_not;
    if (auto nvml = gpumem::Nvml::open(why_not)) {
        text += "NVIDIA driver " + nvml->driver_version() + " (CUDA " +
                gpumem::format_cuda_version(nvml->cuda_driver_version()) + ")\n";
    } else if (const int v = gpumem::cuda_driver_version_via_runtime(); v > 0) {
        text += "NVIDIA driver with CUDA " + gpumem::format_cuda_version(v) + "\n";
    } else {
        text += "NVIDIA driver: not found\n";
    }
    return text;
}

// The subcommand named on the command line, found before CLI11 parses so
// that only its options need registering; "" when there is none.
std::string invoked_subcommand(int argc, char** argv) {
    static const char* const names[] = {"info", "memset", "copy", "reuse-sim", "alloc-test"};
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];  // not const: `return a` moves
        if (a == "-d" || a == "--device" || a == "--format" || a == "--units") {
            ++i;  // the option's value
            continue;
        }
        if (!a.empty() && a[0] == '-') continue;
        for (const char* name : names)
            if (a == name) return a;
        return "";
    }
    return "";
}

int fail(const gpumem::Error& error, gpumem::cli::Context& ctx, bool json) {
    std::fprintf(stderr, "gpumem: error: %s\n", one_line(error.what()).c_str());
    if (json) gpumem::cli::write_stdout(gpumem::cli::render_json_error(ctx.report, error, ctx.output));
    return static_cast<int>(error.status());
}

int run_command_line(int argc, char** argv, gpumem::cli::RunMode mode) {
    const bool parse_only = mode == gpumem::cli::RunMode::parse_only;
    gpumem::cli::Context ctx;
    CLI::App app{"gpumem: GPU memory operations from the command line: query, allocate, fill, copy, and simulate reuse.",
                 "gpumem"};
    app.footer("Exit status: 0 ok, 1 runtime/CUDA error, 2 usage error, 3 no usable GPU or driver, "
               "4 verification failed, 5 out of memory, 6 below --expect-min, 130 interrupted. See gpumem(1).");
    app.fallthrough();
    app.require_subcommand(0, 1);
    gpumem::cli::setup_global_options(app, ctx.globals);
    bool show_version = false;
    app.add_flag("-V,--version", show_version, "Print the version, the CUDA runtime and the driver, then exit");
    const std::string invoked = invoked_subcommand(argc, argv);
    // info's cost is NVML's start-up (~10 ms): begin it now, beside parsing.
    if (invoked == "info" && !parse_only) gpumem::Nvml::start_opening();
    gpumem::cli::setup_info(app, ctx, invoked == "info");
    gpumem::cli::setup_memset(app, ctx, invoked == "memset");
    gpumem::cli::setup_copy(app, ctx, invoked == "copy");
    gpumem::cli::setup_reuse_sim(app, ctx, invoked == "reuse-sim");
    gpumem::cli::setup_alloc_test(app, ctx, invoked == "alloc-test");

    const bool json = json_requested(argc, argv);
    // Name the subcommand in a JSON error document even when parsing fails.
    ctx.report.command = invoked;
    if (json) ctx.output.format = gpumem::cli::Format::json;
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        gpumem::cli::write_stdout(app.help());
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        gpumem::cli::write_stdout(app.help("", CLI::AppFormatMode::All));
        return 0;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return 0;
        return fail(gpumem::UsageError(std::string(e.what()) + " (see gpumem --help)"), ctx, json);
    } catch (const gpumem::Error& e) {  // thrown by subcommand callbacks that validate combinations
        return fail(e, ctx, json);
    }

    if (show_version) {
        if (!parse_only) gpumem::cli::write_stdout(version_text());  // version_text asks the driver
        return 0;
    }
    setup_logging(ctx.globals);
    try {
        ctx.output = gpumem::cli::resolve_output_options(ctx.globals);
        if (!ctx.run) {
            throw gpumem::UsageError("a subcommand is required: info, memset, copy, alloc-test or reuse-sim (see gpumem --help)");
        }
        if (parse_only) return 0;  // everything before the first driver call has run
        gpumem::install_interrupt_handlers();
        ctx.run();
        if (!ctx.printed) gpumem::cli::write_stdout(gpumem::cli::render(ctx.report, ctx.output));
        return 0;
    } catch (const gpumem::Error& e) {
        // Results measured before the failure still go to stdout in text modes.
        const bool has_rows = std::any_of(ctx.report.tables.begin(), ctx.report.tables.end(),
                                          [](const gpumem::cli::Table& t) { return !t.rows.empty(); });
        if (!json && !ctx.printed && has_rows && ctx.output.format != gpumem::cli::Format::json)
            gpumem::cli::write_stdout(gpumem::cli::render(ctx.report, ctx.output));
        return fail(e, ctx, json || ctx.output.format == gpumem::cli::Format::json);
    } catch (const CLI::ParseError& e) {
        return fail(gpumem::UsageError(e.what()), ctx, json);
    } catch (const std::bad_alloc&) {
        return fail(gpumem::Error("out of host memory"), ctx, json);
    } catch (const std::exception& e) {
        return fail(gpumem::Error(std::string("internal error: ") + e.what()), ctx, json);
    }
}

}  // namespace

namespace gpumem::cli {

// Last resort: an exception that escapes run_command_line (from option
// registration, from a parse callback that throws something other than
// gpumem::Error or CLI11's errors, or from printing an error) would otherwise
// reach std::terminate and abort with a core dump instead of a documented status.
int run_gpumem(int argc, char** argv, RunMode mode) noexcept {
    try {
        return run_command_line(argc, argv, mode);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpumem: error: internal error: %s\n", e.what());
    } catch (...) {
        std::fputs("gpumem: error: internal error: unknown exception\n", stderr);
    }
    return static_cast<int>(gpumem::ExitStatus::runtime_error);
}

}  // namespace gpumem::cli
