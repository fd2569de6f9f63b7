#include "legacy.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/text.hpp"
#include "core/cuda_devices.hpp"

namespace gpumem::cli {

DeviceSpec chosen_device_spec(const LegacyGlobals& g, const char* fallback) {
    if (g.device_spec) return *g.device_spec;
    return parse_device_spec(g.device_given ? g.device : std::string(fallback));
}

std::vector<DeviceIdentity> resolve_cuda_devices(const LegacyGlobals& g, const char* fallback) {
    return select_cuda_devices(chosen_device_spec(g, fallback));
}

bool progress_enabled(const LegacyGlobals& g) { return !g.quiet && isatty(STDERR_FILENO) == 1; }

void setup_legacy(const std::string& /*name*/, CLI::App& /*app*/, CLI::App& /*sub*/, LegacyContext& /*legacy*/, bool /*full*/) {
    // Every command follows the Command contract now: none is set up here.
}

int run_legacy(LegacyContext& legacy, const Globals& globals, bool parse_only, bool json) {
    Context& ctx = legacy.ctx;
    ctx.output = globals.output;
    ctx.globals.quiet = globals.quiet;
    if (globals.device) {
        ctx.globals.device = globals.device->text;
        ctx.globals.device_given = true;
        ctx.globals.device_spec = globals.device;
    }
    if (parse_only) return 0;
    install_interrupt_handlers();
    try {
        ctx.run();
        ctx.report.origin = origin_record(globals.origin);  // run() may have replaced the report
        if (!ctx.printed) write_stdout(render(ctx.report, ctx.output));
        return 0;
    } catch (const Error& e) {
        ctx.report.origin = origin_record(globals.origin);
        const bool json_out = json || ctx.output.format == Format::json;
        if (!json_out && !ctx.printed && ctx.report.has_rows() && dynamic_cast<const OutputError*>(&e) == nullptr)
            write_stdout(render(ctx.report, ctx.output));
        std::fprintf(stderr, "gpumem: error: %s\n", one_line(e.what()).c_str());
        if (json_out && dynamic_cast<const OutputError*>(&e) == nullptr) {
            try {
                write_stdout(render_json_error(ctx.report, e, ctx.output));
            } catch (const OutputError&) {  // the error's own status stands
            }
        }
        return static_cast<int>(e.status());
    }
}

}  // namespace gpumem::cli
