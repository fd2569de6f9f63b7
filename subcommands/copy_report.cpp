#include "copy_report.hpp"

#include <algorithm>
#include <map>

namespace gpumem::cli {
namespace {

bool any_of_results(const std::vector<CopyResult>& results, bool (*pred)(const CopyResult&)) {
    return std::any_of(results.begin(), results.end(), pred);
}

std::string host_label(const CopyResult& r) { return r.host_kind ? host_memory_kind_name(*r.host_kind) : ""; }

// Results drawn as one chart: everything but the size.
std::string series_key(const CopyResult& r) {
    return to_string(r.device) + "|" + (r.peer ? to_string(*r.peer) : "-") + "|" + (r.peer_access ? (*r.peer_access ? "1" : "0") : "-") +
           "|" + r.flow + "|" + host_label(r) + "|" + copy_engine_name(r.engine);
}

std::string series_title(const CopyResult& r) {
    std::string t = "bandwidth by size: " + r.flow;
    if (r.direction == CopyDirection::p2p) {
        t += " " + to_string(r.device) + " -> " + to_string(r.peer.value()) + ", peer access " +
             (r.peer_access.value_or(false) ? "on" : "off");
    } else {
        t += ", device " + to_string(r.device);
    }
    if (r.host_kind) t += ", " + host_label(r);
    return t + ", " + copy_engine_name(r.engine);
}

}  // namespace

std::string describe_copy(const CopyResult& r) {
    std::string d = "device " + to_string(r.device) + " " + r.flow;
    if (r.direction == CopyDirection::p2p)
        d += " to device " + to_string(r.peer.value()) + " (peer access " + (r.peer_access.value_or(false) ? "on" : "off") + ", ";
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

Report build_copy_report(const std::vector<CopyResult>& results, const CopyReportStyle& style) {
    Report report;
    report.command = "copy";
    const bool human = style.format == Format::table;
    const bool p2p = any_of_results(results, [](const CopyResult& r) { return r.direction == CopyDirection::p2p; });

    Table table;
    table.key = "results";
    std::vector<Field>& f = table.fields;
    f.push_back({"device", "dev", FieldKind::integer});
    if (p2p) {
        f.push_back({"peer", "peer", FieldKind::integer});
        f.push_back({"peer_access", "peer access", FieldKind::boolean});
    }
    f.push_back({"direction", "direction", FieldKind::text});
    f.push_back({"host_memory", "host memory", FieldKind::text});
    f.push_back({"engine", "engine", FieldKind::text});
    f.push_back({"bytes", "size", FieldKind::bytes});
    if (!human) {
        f.push_back({"iterations", "iterations", FieldKind::integer});
        f.push_back({"samples", "samples", FieldKind::integer});
        f.push_back({"warmup", "warmup", FieldKind::integer});
        f.push_back({"timing", "timing", FieldKind::text});
    }
    f.push_back({"median_us", "time us", FieldKind::real, 2});
    f.push_back({"median_gbps", "median", FieldKind::bandwidth});
    f.push_back({"min_gbps", "min", FieldKind::bandwidth});
    f.push_back({"max_gbps", "max", FieldKind::bandwidth});
    f.push_back({"cv_percent", "cv", FieldKind::percent, 2});
    f.push_back({"verified", "verified", FieldKind::text});
    if (!human) {
        f.push_back({"mismatches", "mismatches", FieldKind::integer});
        f.push_back({"first_bad_offset", "first bad offset", FieldKind::integer});
        f.push_back({"huge_pages", "huge pages", FieldKind::boolean});
        f.push_back({"skipped", "skipped", FieldKind::text});
    }

    Json details = Json::array();
    for (const CopyResult& r : results) {
        const CopyFigures fig = copy_figures(r);
        const bool m = r.measured();
        std::vector<Cell> row;
        for (const Field& field : f) {
            const std::string_view k = field.key;
            if (k == "device") row.push_back(static_cast<std::int64_t>(r.device.ordinal()));
            else if (k == "peer") row.push_back(r.peer ? Cell(static_cast<std::int64_t>(r.peer->ordinal())) : Cell());
            else if (k == "peer_access") row.push_back(r.peer_access ? Cell(*r.peer_access) : Cell());
            else if (k == "direction") row.push_back(r.flow);
            else if (k == "host_memory") row.push_back(r.host_kind ? Cell(host_label(r)) : Cell());
            else if (k == "engine") row.push_back(std::string(copy_engine_name(r.engine)));
            else if (k == "bytes") row.push_back(static_cast<std::uint64_t>(r.bytes));
            else if (k == "iterations") row.push_back(m ? Cell(static_cast<std::int64_t>(r.iterations)) : Cell());
            else if (k == "samples") row.push_back(m ? Cell(static_cast<std::int64_t>(r.seconds.size())) : Cell());
            else if (k == "warmup") row.push_back(m ? Cell(static_cast<std::int64_t>(r.warmup)) : Cell());
            else if (k == "timing") row.push_back(m ? Cell(std::string(copy_timing_name(r.timing))) : Cell());
            else if (k == "median_us") row.push_back(m ? Cell(fig.seconds.median * 1e6) : Cell());
            else if (k == "median_gbps") row.push_back(m ? Cell(fig.median_bps) : Cell());
            else if (k == "min_gbps") row.push_back(m ? Cell(fig.min_bps) : Cell());
            else if (k == "max_gbps") row.push_back(m ? Cell(fig.max_bps) : Cell());
            else if (k == "cv_percent") row.push_back(m ? Cell(fig.cv * 100.0) : Cell());
            else if (k == "verified")
                row.push_back(!r.verification.checked ? std::string(m ? "no" : "-")
                                                      : std::string(r.verification.ok() ? "ok" : "FAILED"));
            else if (k == "mismatches")
                row.push_back(r.verification.checked ? Cell(static_cast<std::uint64_t>(r.verification.mismatched_words)) : Cell());
            else if (k == "first_bad_offset")
                row.push_back(r.verification.first_bad_offset ? Cell(static_cast<std::uint64_t>(*r.verification.first_bad_offset)) : Cell());
            else if (k == "huge_pages") row.push_back(r.host_huge_pages ? Cell(*r.host_huge_pages) : Cell());
            else if (k == "skipped") row.push_back(r.skipped.empty() ? Cell() : Cell(r.skipped));
            else row.push_back(Cell());
        }
        table.add_row(std::move(row));
        Json samples = Json::array();
        for (double s : r.seconds) samples.push_back(s * 1e6);
        Json detail = {{"device", r.device.ordinal()}, {"direction", r.flow}, {"bytes", r.bytes}};
        if (r.direction == CopyDirection::p2p) {
            detail["peer"] = r.peer.value().ordinal();
            detail["peer_access"] = r.peer_access.value_or(false);
        }
        detail["samples_us"] = samples;
        details.push_back(std::move(detail));
    }
    report.tables.push_back(std::move(table));

    // Notes: what a reader of the numbers must know, in every format.
    std::vector<std::string> notes;
    if (any_of_results(results, [](const CopyResult& r) { return r.direction == CopyDirection::d2d; }))
        notes.push_back("d2d counts each byte once: the copy reads and writes it, so device memory moves twice as many bytes");
    if (any_of_results(results, [](const CopyResult& r) { return r.direction == CopyDirection::bidir; }))
        notes.push_back("bidir: h2d and d2h run at the same time on two streams; each row is one direction's own rate");
    if (any_of_results(results, [](const CopyResult& r) { return r.measured() && r.timing == CopyTiming::host_clock; }))
        notes.push_back("host-clock rows: the driver performs these copies synchronously (pageable staging, host to host, "
                        "peer copies without peer access), so the host clock times the same loop of copies");
    for (const CopyResult& r : results)
        if (!r.skipped.empty()) {
            const std::string n = describe_copy(r) + ": not measured: " + r.skipped;
            if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
        }

    report.extra["bandwidth_note"] =
        "GB/s = 1e9 bytes/s; each sample's bandwidth is the bytes of one copy over its time per copy; median, min and max over samples";
    report.extra["notes"] = notes;
    report.extra["details"] = details;

    if (!human) return report;
    if (style.chart) {
        // Series in order of first appearance; a chart for each with two sizes or more.
        std::vector<std::string> order;
        std::map<std::string, std::vector<const CopyResult*>> series;
        for (const CopyResult& r : results) {
            const std::string key = series_key(r);
            if (!series.count(key)) order.push_back(key);
            series[key].push_back(&r);
        }
        for (const std::string& key : order) {
            const auto& rows = series[key];
            if (rows.size() < 2) continue;
            std::vector<ChartBar> bars;
            for (const CopyResult* r : rows) {
                const double bw = r->measured() ? copy_figures(*r).median_bps : 0.0;
                bars.push_back({format_bytes(r->bytes), bw,
                                r->measured() ? format_bandwidth(bw, style.unit) : std::string("-")});
            }
            report.text_after.push_back("");
            for (std::string& line : render_bar_chart(series_title(*rows.front()), bars, style.chart_style))
                report.text_after.push_back(std::move(line));
        }
    }
    if (!notes.empty()) report.text_after.push_back("");
    for (const std::string& n : notes) report.text_after.push_back("note: " + n);
    return report;
}

}  // namespace gpumem::cli
