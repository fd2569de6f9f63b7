#include "copy/copy_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "base/check_plan.hpp"

namespace gpumem::cli {
namespace {

std::string host_label(const CopyResult& r) { return r.host_kind ? host_memory_kind_name(*r.host_kind) : ""; }

std::string peer_access_text(const CopyResult& r) { return r.peer_access.value_or(false) ? "on" : "off"; }

// Results drawn as one chart: everything but the size.
std::string series_key(const CopyResult& r) {
    return to_string(r.device) + "|" + (r.peer ? to_string(*r.peer) : "-") + "|" + (r.peer_access ? (*r.peer_access ? "1" : "0") : "-") +
           "|" + r.flow + "|" + host_label(r) + "|" + copy_engine_name(r.engine);
}

std::string series_title(const CopyResult& r) {
    std::string t = "bandwidth by size: " + r.flow;
    if (r.direction.uses_peer())
        t += " " + to_string(r.device) + " -> " + to_string(r.peer.value()) + ", peer access " + peer_access_text(r);
    else
        t += ", device " + to_string(r.device);
    if (r.host_kind) t += ", " + host_label(r);
    return t + ", " + copy_engine_name(r.engine);
}

// A figure of a measured row, or null for a row that was not measured.
Cell measured_cell(const CopyResult& r, double (*figure)(const CopyFigures&)) {
    return r.measured() ? Cell(figure(copy_figures(r))) : Cell();
}

std::vector<std::string_view> engine_names() { return kCopyEngines.name_list(); }
std::vector<std::string_view> host_memory_names() { return kHostMemoryKinds.name_list(); }
std::vector<std::string_view> timing_names() { return kCopyTimings.name_list(); }
std::vector<std::string_view> peer_direction_names() {
    std::vector<std::string_view> names;
    for (const Named<CopyDirection>& row : kCopyDirections)
        if (row.value.uses_peer()) names.push_back(row.name);
    return names;
}

// The results table. The peer columns are kept only for peer directions
// (kept_for) and so are not required in the schema (omit_null).
constexpr Column<CopyResult> kResultColumns[] = {
    {{"device", "dev", FieldKind::integer}, [](const CopyResult& r) -> Cell { return std::int64_t{r.device.ordinal()}; }},
    {{"peer", "peer", FieldKind::integer},
     [](const CopyResult& r) -> Cell { return r.peer ? Cell(std::int64_t{r.peer->ordinal()}) : Cell(); }, Shown::always, true},
    {{"peer_access", "peer access", FieldKind::boolean}, [](const CopyResult& r) -> Cell { return optional_cell(r.peer_access); },
     Shown::always, true},
    {{"direction", "direction", FieldKind::text}, [](const CopyResult& r) -> Cell { return r.flow; }, Shown::always, false,
     nullptr, copy_flow_names},
    {{"host_memory", "host memory", FieldKind::text},
     [](const CopyResult& r) -> Cell { return r.host_kind ? Cell(host_label(r)) : Cell(); }, Shown::always, false, nullptr,
     host_memory_names},
    {{"engine", "engine", FieldKind::text}, [](const CopyResult& r) -> Cell { return copy_engine_name(r.engine); }, Shown::always,
     false, nullptr, engine_names},
    {{"bytes", "size", FieldKind::bytes}, [](const CopyResult& r) -> Cell { return r.bytes; }},
    {{"iterations", "iterations", FieldKind::integer},
     [](const CopyResult& r) -> Cell { return r.measured() ? Cell(std::int64_t{r.iterations}) : Cell(); }, Shown::machine_only},
    {{"samples", "samples", FieldKind::integer},
     [](const CopyResult& r) -> Cell { return r.measured() ? Cell(static_cast<std::int64_t>(r.seconds.size())) : Cell(); },
     Shown::machine_only},
    {{"warmup", "warmup", FieldKind::integer},
     [](const CopyResult& r) -> Cell { return r.measured() ? Cell(std::int64_t{r.warmup}) : Cell(); }, Shown::machine_only},
    {{"timing", "timing", FieldKind::text},
     [](const CopyResult& r) -> Cell { return r.measured() ? Cell(copy_timing_name(r.timing)) : Cell(); }, Shown::machine_only,
     false, nullptr, timing_names},
    {{"median_us", "time us", FieldKind::real, 2},
     [](const CopyResult& r) -> Cell { return measured_cell(r, [](const CopyFigures& f) { return f.seconds.median * 1e6; }); }},
    {{"median_gbps", "median", FieldKind::bandwidth},
     [](const CopyResult& r) -> Cell { return measured_cell(r, [](const CopyFigures& f) { return f.median_bps; }); }},
    {{"min_gbps", "min", FieldKind::bandwidth},
     [](const CopyResult& r) -> Cell { return measured_cell(r, [](const CopyFigures& f) { return f.min_bps; }); }},
    {{"max_gbps", "max", FieldKind::bandwidth},
     [](const CopyResult& r) -> Cell { return measured_cell(r, [](const CopyFigures& f) { return f.max_bps; }); }},
    {{"cv_percent", "cv", FieldKind::percent, 2},
     [](const CopyResult& r) -> Cell { return measured_cell(r, [](const CopyFigures& f) { return f.cv * 100.0; }); }},
    {{"verified", "verified", FieldKind::text},
     [](const CopyResult& r) -> Cell {
         if (!r.verification.checked) return std::string(r.measured() ? "no" : "-");
         return std::string(r.verification.ok() ? "ok" : "FAILED");
     }},
    {{"mismatches", "mismatches", FieldKind::integer},
     [](const CopyResult& r) -> Cell { return r.verification.checked ? Cell(r.verification.mismatched_words) : Cell(); },
     Shown::machine_only},
    {{"first_bad_offset", "first bad offset", FieldKind::integer},
     [](const CopyResult& r) -> Cell { return optional_cell(r.verification.first_bad_offset); }, Shown::machine_only},
    {{"huge_pages", "huge pages", FieldKind::boolean}, [](const CopyResult& r) -> Cell { return optional_cell(r.host_huge_pages); },
     Shown::machine_only},
    {{"skipped", "skipped", FieldKind::text},
     [](const CopyResult& r) -> Cell { return r.skipped.empty() ? Cell() : Cell(r.skipped); }, Shown::machine_only},
};

// Each row's samples; peer keys only on peer rows.
constexpr Column<CopyResult> kDetailColumns[] = {
    {{"device", "", FieldKind::integer}, [](const CopyResult& r) -> Cell { return std::int64_t{r.device.ordinal()}; }},
    {{"direction", "", FieldKind::text}, [](const CopyResult& r) -> Cell { return r.flow; }},
    {{"bytes", "", FieldKind::bytes}, [](const CopyResult& r) -> Cell { return r.bytes; }},
    {{"peer", "", FieldKind::integer},
     [](const CopyResult& r) -> Cell { return r.direction.uses_peer() && r.peer ? Cell(std::int64_t{r.peer->ordinal()}) : Cell(); },
     Shown::always, true},
    {{"peer_access", "", FieldKind::boolean},
     [](const CopyResult& r) -> Cell { return r.direction.uses_peer() ? Cell(r.peer_access.value_or(false)) : Cell(); },
     Shown::always, true},
    {{"samples_us", "", FieldKind::list},
     [](const CopyResult& r) -> Cell {
         std::vector<double> us;
         for (double s : r.seconds) us.push_back(s * 1e6);
         return us;
     }},
};

constexpr Column<PinnedCpus> kAffinityColumns[] = {
    {{"device", "", FieldKind::integer}, [](const PinnedCpus& p) -> Cell { return std::int64_t{p.device.ordinal()}; }},
    {{"cpus", "", FieldKind::text}, [](const PinnedCpus& p) -> Cell { return p.cpus; }},
};

constexpr Column<P2pMatrixRow> kMatrixRowColumns[] = {
    {{"source", "", FieldKind::integer}, [](const P2pMatrixRow& r) -> Cell { return std::int64_t{r.source.ordinal()}; }},
    {{"gbps", "", FieldKind::list},
     [](const P2pMatrixRow& r) -> Cell {
         std::vector<double> gbps;  // NaN is written as null
         for (const auto& bps : r.median_bps) gbps.push_back(bps ? *bps / 1e9 : std::nan(""));
         return gbps;
     }},
};

constexpr auto matrix_row_schema = nested_schema<kMatrixRowColumns>;

constexpr Column<P2pMatrix> kMatrixColumns[] = {
    {{"direction", "", FieldKind::text}, [](const P2pMatrix& m) -> Cell { return m.direction; }, Shown::always, false, nullptr,
     peer_direction_names},
    {{"peer_access", "", FieldKind::boolean}, [](const P2pMatrix& m) -> Cell { return m.peer_access; }},
    {{"engine", "", FieldKind::text}, [](const P2pMatrix& m) -> Cell { return copy_engine_name(m.engine); }, Shown::always, false,
     nullptr, engine_names},
    {{"bytes", "", FieldKind::bytes}, [](const P2pMatrix& m) -> Cell { return m.bytes; }},
    {{"rows", "", FieldKind::records},
     [](const P2pMatrix& m) -> Cell { return records_cell(make_records(Columns<P2pMatrixRow>(kMatrixRowColumns), m.rows)); },
     Shown::always, false, matrix_row_schema},
};

constexpr auto detail_schema = nested_schema<kDetailColumns>;
constexpr auto affinity_schema = nested_schema<kAffinityColumns>;
constexpr auto matrix_schema = nested_schema<kMatrixColumns>;

constexpr const char* kBandwidthNote =
    "GB/s = 1e9 bytes/s; each sample's bandwidth is the bytes of one copy over its time per copy; median, min and max over samples";

// The document's fields beyond the results table.
struct CopyDocument {
    const CopyResults& results;
    const CopyReportStyle& style;
    std::vector<std::string> notes;
    std::vector<P2pMatrix> matrices;
};

constexpr Column<CopyDocument> kDocumentColumns[] = {
    {{"bandwidth_note", "", FieldKind::text}, [](const CopyDocument&) -> Cell { return std::string(kBandwidthNote); }},
    {{"notes", "", FieldKind::list}, [](const CopyDocument& d) -> Cell { return d.notes; }},
    {{"details", "", FieldKind::records},
     [](const CopyDocument& d) -> Cell { return records_cell(make_records(Columns<CopyResult>(kDetailColumns), d.results.rows)); },
     Shown::always, false, detail_schema},
    {{"cpu_affinity", "", FieldKind::records},
     [](const CopyDocument& d) -> Cell {
         return records_cell(make_records(Columns<PinnedCpus>(kAffinityColumns), d.results.cpu_affinity));
     },
     Shown::always, false, affinity_schema},
    {{"expect_min_gbps", "", FieldKind::real}, [](const CopyDocument& d) -> Cell { return optional_cell(d.style.expect_min_gbps); },
     Shown::always, true},
    {{"p2p_matrix", "", FieldKind::records},
     [](const CopyDocument& d) -> Cell { return records_cell(make_records(Columns<P2pMatrix>(kMatrixColumns), d.matrices)); },
     Shown::always, false, matrix_schema},
};

// What a reader of the numbers must know, in every format: each direction's
// own note, how host-clock rows were timed, and why a row was not measured.
std::vector<std::string> copy_notes(const std::vector<CopyResult>& results) {
    std::vector<std::string> notes;
    auto add = [&notes](const std::string& n) {
        if (!n.empty() && std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
    };
    for (const CopyResult& r : results) add(std::string(r.direction.note));
    auto host_clock = [](const CopyResult& r) { return r.measured() && r.timing == CopyTiming::host_clock; };
    if (std::any_of(results.begin(), results.end(), host_clock))
        add("host-clock rows: the driver performs these copies synchronously (pageable staging, host to host, "
            "peer copies without peer access), so the host clock times the same loop of copies");
    for (const CopyResult& r : results)
        if (!r.skipped.empty()) add(describe_copy(r) + ": not measured: " + r.skipped);
    return notes;
}

// A bar chart for each series with two sizes or more, in order of first appearance.
std::vector<std::string> sweep_charts(const std::vector<CopyResult>& results, const CopyReportStyle& style, Unit unit) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const CopyResult*>> series;
    for (const CopyResult& r : results) {
        const std::string key = series_key(r);
        if (!series.count(key)) order.push_back(key);
        series[key].push_back(&r);
    }
    std::vector<std::string> lines;
    for (const std::string& key : order) {
        const auto& rows = series[key];
        if (rows.size() < 2) continue;
        std::vector<ChartBar> bars;
        for (const CopyResult* r : rows) {
            const double bw = r->measured() ? copy_figures(*r).median_bps : 0.0;
            bars.push_back({format_bytes(r->bytes), bw, r->measured() ? format_bandwidth(bw, unit) : std::string("-")});
        }
        lines.emplace_back();
        for (std::string& line : render_bar_chart(series_title(*rows.front()), bars, style.chart_style)) lines.push_back(std::move(line));
    }
    return lines;
}

// Matrices are printed when they say more than the rows: more than one
// ordered pair of devices was measured.
bool matrices_worth_printing(const std::vector<CopyResult>& results) {
    std::vector<std::pair<int, int>> pairs;
    for (const CopyResult& r : results)
        if (r.peer) pairs.emplace_back(r.device.ordinal(), r.peer->ordinal());
    std::sort(pairs.begin(), pairs.end());
    return std::unique(pairs.begin(), pairs.end()) - pairs.begin() > 1;
}

}  // namespace

std::string describe_copy(const CopyResult& r) {
    std::string d = "device " + to_string(r.device) + " " + r.flow;
    if (r.direction.uses_peer())
        d += " to device " + to_string(r.peer.value()) + " (peer access " + peer_access_text(r) + ", ";
    else
        d += " (";
    if (r.host_kind) d += host_label(r) + ", ";
    return d + copy_engine_name(r.engine) + ") " + format_bytes(r.bytes);
}

std::vector<const CopyResult*> copies_below(const std::vector<CopyResult>& results, double gbps) {
    std::vector<const CopyResult*> below;
    for (const CopyResult& r : results)
        if (r.measured() && copy_figures(r).median_bps < gbps * 1e9) below.push_back(&r);
    return below;
}

std::vector<const CopyResult*> failed_verifications(const std::vector<CopyResult>& results) {
    std::vector<const CopyResult*> failed;
    for (const CopyResult& r : results)
        if (r.verification.checked && !r.verification.ok()) failed.push_back(&r);
    return failed;
}

std::vector<P2pMatrix> p2p_matrices(const std::vector<CopyResult>& results) {
    std::vector<DeviceId> devices;
    for (const CopyResult& r : results)
        if (r.peer)
            for (DeviceId id : {r.device, *r.peer})
                if (std::find(devices.begin(), devices.end(), id) == devices.end()) devices.push_back(id);
    std::sort(devices.begin(), devices.end());
    auto index_of = [&devices](DeviceId id) {
        return static_cast<std::size_t>(std::find(devices.begin(), devices.end(), id) - devices.begin());
    };
    std::vector<P2pMatrix> matrices;
    for (const CopyResult& r : results) {
        if (!r.peer) continue;
        const bool access = r.peer_access.value_or(false);
        auto same = [&](const P2pMatrix& m) {
            return std::tie(m.direction, m.peer_access, m.engine, m.bytes) == std::tie(r.flow, access, r.engine, r.bytes);
        };
        auto found = std::find_if(matrices.begin(), matrices.end(), same);
        if (found == matrices.end()) {
            P2pMatrix m{r.flow, access, r.engine, r.bytes, devices, {}};
            for (DeviceId source : devices) m.rows.push_back({source, std::vector<std::optional<double>>(devices.size())});
            matrices.push_back(std::move(m));
            found = matrices.end() - 1;
        }
        std::optional<double>& cell = found->rows[index_of(r.device)].median_bps[index_of(*r.peer)];
        if (r.measured() && !cell) cell = copy_figures(r).median_bps;
    }
    return matrices;
}

std::vector<std::string> render_p2p_matrix(const P2pMatrix& m, Unit unit, std::size_t columns) {
    std::vector<std::string> lines = {m.direction + " matrix, median " + bandwidth_unit_name(unit) +
                                      ", source device per row, destination per column: peer access " +
                                      (m.peer_access ? "on" : "off") + ", " + copy_engine_name(m.engine) + ", " + format_bytes(m.bytes)};
    // A column of source labels, then a right-aligned column per destination.
    std::vector<std::vector<std::string>> cells(1, std::vector<std::string>{""});
    for (DeviceId d : m.devices) cells[0].push_back(to_string(d));
    for (const P2pMatrixRow& row : m.rows) {
        cells.push_back({to_string(row.source)});
        for (const auto& bps : row.median_bps) cells.back().push_back(bps ? format_decimal(bandwidth_in_unit(*bps, unit), 2) : "-");
    }
    std::size_t label = 0, width = 0;
    for (const auto& line : cells) {
        label = std::max(label, line[0].size());
        for (std::size_t i = 1; i < line.size(); ++i) width = std::max(width, line[i].size());
    }
    const std::size_t destinations = m.devices.size();
    // Two spaces between columns where the whole grid fits, else one; where
    // even that does not fit, as many destinations a block as fit (one at least).
    const std::size_t gap = label + destinations * (width + 2) <= columns ? 2 : 1;
    const std::size_t room = columns > label ? columns - label : 0;
    const std::size_t per_block = std::max<std::size_t>(1, std::min(destinations, room / (width + gap)));
    for (std::size_t first = 0; first < destinations; first += per_block) {
        const std::size_t last = std::min(destinations, first + per_block);
        if (per_block < destinations)
            lines.push_back("destinations " + cells[0][first + 1] + " to " + cells[0][last] + ":");
        for (const auto& line : cells) {
            std::string text = line[0] + std::string(label - line[0].size(), ' ');
            for (std::size_t i = first + 1; i <= last; ++i) text += std::string(gap + width - line[i].size(), ' ') + line[i];
            lines.push_back(text);
        }
    }
    return lines;
}

Report build_copy_report(const CopyResults& results, const CopyReportStyle& style, const OutputOptions& output) {
    Report report;
    report.command = "copy";
    const bool peers =
        std::any_of(results.rows.begin(), results.rows.end(), [](const CopyResult& r) { return r.direction.uses_peer(); });
    report.tables.push_back(make_table("results", Columns<CopyResult>(kResultColumns), results.rows, output.format,
                                       [peers](const Field& f) { return peers || (f.key != "peer" && f.key != "peer_access"); }));
    // A narrow terminal keeps what was copied and the median rate (--wide and --json the rest).
    report.tables.back().drop_order = {"min_gbps", "max_gbps", "median_us", "verified", "host_memory", "cv_percent", "engine"};
    const CopyDocument document{results, style, copy_notes(results.rows), p2p_matrices(results.rows)};
    report.fields = make_record(Columns<CopyDocument>(kDocumentColumns), document);
    if (style.plot) report.plot = plot_file(*style.plot, copy_sweep_plot(results));
    if (output.format != Format::table) return report;

    if (style.chart) report.text_after = sweep_charts(results.rows, style, output.unit);
    if (matrices_worth_printing(results.rows))
        for (const P2pMatrix& m : document.matrices) {
            report.text_after.emplace_back();
            for (std::string& line : render_p2p_matrix(m, output.unit, output.columns)) report.text_after.push_back(std::move(line));
        }
    if (!document.notes.empty()) report.text_after.emplace_back();
    for (const std::string& n : document.notes) report.text_after.push_back("note: " + n);
    return report;
}

namespace {

const CopyDevice* find_device(const CopyResults& results, DeviceId id) {
    for (const CopyDevice& d : results.devices)
        if (d.id == id) return &d;
    return nullptr;
}

// A series' name in the legend: what differs between the run's series.
std::string sweep_series_label(const CopyResult& r, bool several_devices) {
    std::string label = r.flow;
    if (r.direction.uses_peer()) label += " " + to_string(r.device) + "->" + to_string(r.peer.value()) + ", peer access " + peer_access_text(r);
    else if (several_devices) label += ", device " + to_string(r.device);
    if (r.host_kind) label += ", " + host_label(r);
    if (r.engine != CopyEngine::ce) label += ", " + copy_engine_name(r.engine);
    return label;
}

// The reference a direction's copies are held to, where it has one: the
// PCIe link for copies between host and device, half the peak memory
// bandwidth for a device's copy to itself (each byte read and written).
std::optional<PlotRule> reference_rule(const CopyResult& r, const CopyDevice* d) {
    if (d == nullptr) return std::nullopt;
    const bool over_pcie = r.direction.uses_host_memory() && !(r.direction.source == BufferKind::host && r.direction.destination == BufferKind::host);
    if (over_pcie && d->pcie_generation && d->pcie_width)
        if (const auto ref = pcie_reference(d->pcie_generation, d->pcie_width))
            return PlotRule{false, ref->value, "device " + to_string(d->id) + " " + ref->name + " per direction", -2};
    if (!r.direction.uses_host_memory() && !r.direction.uses_peer() && d->peak_memory_bps)
        if (const auto ref = peak_reference(d->peak_memory_bps, ThresholdRule::copy_fraction))
            return PlotRule{false, ref->value, "device " + to_string(d->id) + ": half its peak memory bandwidth, " + format_decimal(ref->value, 1) + " GB/s", -2};
    return std::nullopt;
}

}  // namespace

Plot copy_sweep_plot(const CopyResults& results) {
    Plot plot;
    plot.x = {"copy size", AxisScale::log2, AxisValues::bytes, false};
    plot.y = {"median bandwidth (GB/s)", AxisScale::linear, AxisValues::number, true};
    std::vector<DeviceId> devices;
    for (const CopyResult& r : results.rows)
        if (std::find(devices.begin(), devices.end(), r.device) == devices.end()) devices.push_back(r.device);
    std::vector<std::string> order;
    std::map<std::string, std::size_t> index;
    for (const CopyResult& r : results.rows) {
        const std::string key = series_key(r);
        if (!index.count(key)) {
            index[key] = plot.series.size();
            order.push_back(key);
            PlotSeries s;
            s.label = sweep_series_label(r, devices.size() > 1);
            plot.series.push_back(std::move(s));
            if (std::optional<PlotRule> rule = reference_rule(r, find_device(results, r.device)))
                if (std::none_of(plot.rules.begin(), plot.rules.end(), [&](const PlotRule& p) { return p.label == rule->label; }))
                    plot.rules.push_back(std::move(*rule));
        }
        if (!r.measured()) continue;
        PlotSeries& s = plot.series[index[key]];
        s.x.push_back(static_cast<double>(r.bytes));
        s.y.push_back(copy_figures(r).median_bps / 1e9);
    }
    // Where the sweep has one size per series, the lines are single points: marks.
    for (PlotSeries& s : plot.series) s.points = s.x.size() < 2;
    std::string directions, names;
    for (const CopyResult& r : results.rows) {
        const std::string name = copy_direction_name(r.direction);
        if (directions.find(name) == std::string::npos) directions += (directions.empty() ? "" : ", ") + name;
    }
    for (DeviceId id : devices) {
        const CopyDevice* d = find_device(results, id);
        const std::string name = "device " + to_string(id) + (d && !d->name.empty() ? " (" + d->name + ")" : "");
        names += (names.empty() ? "" : ", ") + name;
    }
    plot.title = "gpumem copy " + directions + ": bandwidth by size on " + (names.empty() ? std::string("no device") : names);
    std::size_t samples = 0;
    for (const CopyResult& r : results.rows) samples = std::max(samples, r.seconds.size());
    plot.subtitle = "median of " + std::to_string(samples) + " timed samples per size; GB/s = 1e9 bytes/s";
    for (const CopyResult& r : results.rows)
        if (!r.skipped.empty()) {
            plot.notes.push_back(describe_copy(r) + ": not measured: " + r.skipped);
            break;
        }
    return plot;
}

DocumentSchema copy_document_schema() {
    return {"copy", {{"results", Columns<CopyResult>(kResultColumns).schema()}}, Columns<CopyDocument>(kDocumentColumns).schema()};
}

}  // namespace gpumem::cli
