// The text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): one
// # HELP and one # TYPE line per family, then its samples; label values
// escape backslash, double quote and newline; HELP text escapes backslash
// and newline. Checked by promtool and prometheus_client's parser in
// tests/prometheus-check.sh.
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "cli/output.hpp"

namespace gpumem::cli {
namespace {

std::string escape(std::string_view text, bool quote) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '"' && quote) out += "\\\"";
        else out += c;
    }
    return out;
}

std::string number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    // Integers exactly (byte counts up to 2^53); others with round-trip precision.
    if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.0f", v);
        return buf;
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

// Label names, unlike metric names, take no ':' ([a-zA-Z_][a-zA-Z0-9_]*).
std::string label_name(std::string_view text) {
    std::string out = metric_name(text);
    for (char& c : out)
        if (c == ':') c = '_';
    return out;
}

void write_sample(std::ostringstream& out, const std::string& name, const MetricSample& sample,
                  const std::vector<std::pair<std::string, std::string>>& common) {
    out << name;
    // A label set by the sample wins over the origin's label of the same name.
    std::vector<std::pair<std::string, std::string>> labels = sample.labels;
    for (const auto& [key, value] : common) {
        bool taken = false;
        for (const auto& own : sample.labels) taken = taken || own.first == key;
        if (!taken) labels.emplace_back(key, value);
    }
    if (!labels.empty()) {
        out << '{';
        for (std::size_t i = 0; i < labels.size(); ++i)
            out << (i ? "," : "") << label_name(labels[i].first) << "=\"" << escape(labels[i].second, true) << '"';
        out << '}';
    }
    out << ' ' << number(sample.value) << '\n';
}

}  // namespace

std::string metric_name(std::string_view text) {
    std::string out(text);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const char c = out[i];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (i > 0 && c >= '0' && c <= '9');
        if (!ok) out[i] = '_';
    }
    return out.empty() ? "_" : out;
}

std::string render_prometheus(const Report& report, int exit_status) {
    std::vector<MetricFamily> families = report.metrics;
    const std::vector<std::pair<std::string, std::string>> command{{"command", report.command}};
    families.push_back({"gpumem_run_success", "Whether the gpumem run that wrote these metrics succeeded (1) or failed (0).",
                        MetricType::gauge, {{command, exit_status == 0 ? 1.0 : 0.0}}});
    families.push_back({"gpumem_run_exit_status", "The exit status of the gpumem run that wrote these metrics (see gpumem(1)).",
                        MetricType::gauge, {{command, static_cast<double>(exit_status)}}});
    // A family is written once, in the order first seen, even when a report
    // adds its samples in several places.
    std::vector<std::string> order;
    std::map<std::string, MetricFamily> merged;
    for (MetricFamily& f : families) {
        const std::string name = metric_name(f.name);
        auto [it, fresh] = merged.try_emplace(name, f);
        if (fresh) order.push_back(name);
        else it->second.samples.insert(it->second.samples.end(), f.samples.begin(), f.samples.end());
    }
    std::ostringstream out;
    for (const std::string& name : order) {
        const MetricFamily& f = merged.at(name);
        out << "# HELP " << name << ' ' << escape(f.help, false) << '\n';
        out << "# TYPE " << name << ' ' << (f.type == MetricType::counter ? "counter" : "gauge") << '\n';
        for (const MetricSample& s : f.samples) write_sample(out, name, s, report.metric_labels);
    }
    return out.str();
}

}  // namespace gpumem::cli
