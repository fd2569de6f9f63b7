// reuse-sim --plot: what the jobs' pictures share (reuse_sim_common.hpp):
// memory over the run as lines with their bands, the OOMs, the cap. Each
// job draws its own picture (replay_plot, tune_plot, max_batch_plot) from
// its typed results alone.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/sizes.hpp"
#include "reuse_sim/reuse_sim_common.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

constexpr int kLiveColour = 6;

// At most this many crosses a lane, where its requests were refused.
constexpr std::size_t kMostCrosses = 40;

}  // namespace

std::string base_name(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string plot_setting_name(const rs::TorchOptions& options) {
    const std::string conf = rs::alloc_conf(options);
    return conf.empty() ? "PyTorch's defaults" : conf;
}

std::string cap_text(std::uint64_t capacity) { return capacity == rs::kUnlimited ? "no cap" : "cap " + format_bytes(capacity); }

// The lanes of `timeline` as lines (the most reserved in each point, a band
// down to the least), the live bytes, and a cross where a lane's requests
// were refused (kMostCrosses a lane at most).
void add_timeline(Plot& plot, const rs::Timeline& timeline, const std::vector<std::string>& names) {
    const std::size_t points = timeline.points();
    for (std::size_t l = 0; l < timeline.lanes(); ++l) {
        PlotSeries s;
        s.label = "reserved: " + names[l];
        s.colour = static_cast<int>(l);
        for (std::size_t p = 0; p < points; ++p) {
            s.x.push_back(static_cast<double>(timeline.first_event(p) + 1));
            s.y.push_back(static_cast<double>(timeline.reserved(p, l)));
            s.y_low.push_back(static_cast<double>(timeline.reserved_min(p, l)));
        }
        plot.series.push_back(std::move(s));
    }
    PlotSeries live;
    live.label = "live: bytes the program's requests hold";
    live.colour = kLiveColour;
    live.dashed = true;
    for (std::size_t p = 0; p < points; ++p) {
        live.x.push_back(static_cast<double>(timeline.first_event(p) + 1));
        live.y.push_back(static_cast<double>(timeline.live(p)));
        live.y_low.push_back(static_cast<double>(timeline.live_min(p)));
    }
    plot.series.push_back(std::move(live));
    // A run that keeps running out of memory refuses requests in most
    // stretches: a cross in each would be a band that hides the line and
    // the cap's label. At most kMostCrosses a lane, evenly apart (the
    // first where it began; the notes count them all).
    const std::size_t apart = std::max<std::size_t>(1, points / kMostCrosses);
    for (std::size_t l = 0; l < timeline.lanes(); ++l) {
        std::uint64_t before = 0;
        std::optional<std::size_t> last;
        for (std::size_t p = 0; p < points; ++p) {
            const std::uint64_t refused = timeline.refusals(p, l);
            if (refused > before && (!last || p - *last >= apart)) {
                plot.markers.push_back({static_cast<double>(timeline.first_event(p) + 1), static_cast<double>(timeline.reserved(p, l)),
                                        MarkerShape::cross, static_cast<int>(l), names[l] + ": out of memory (a request refused)", ""});
                last = p;
            }
            before = refused;
        }
    }
}

void add_cap(Plot& plot, std::uint64_t capacity) {
    if (capacity != rs::kUnlimited) plot.rules.push_back({false, static_cast<double>(capacity), cap_text(capacity), -2});
}

std::string band_note(const rs::Timeline& timeline, std::uint64_t events) {
    return "each line is the most reserved within each of " + std::to_string(timeline.points()) + " stretches of the " +
           rs::group_digits(events) + " events; its band reaches down to the least";
}

std::string recorded_on(const std::optional<std::string>& device) {
    return device ? " (recorded on " + *device + ")" : "";
}

}  // namespace gpumem::cli
