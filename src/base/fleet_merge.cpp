// The fleet: documents merged into a row per GPU, outliers against the
// median of the GPUs of the same model, a summary per model, and the lines
// that say why the fleet failed.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include "base/fleet.hpp"
#include "base/sizes.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"

namespace gpumem::fleet {
namespace {

std::string opt_text(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "-"; }

// The process a document came from: CUDA indices mean the same GPU only
// within one (a launcher may narrow CUDA_VISIBLE_DEVICES per rank).
std::string context_key(const DocOrigin& o) {
    return o.host + '\n' + o.job_id.value_or("-") + '\n' + opt_text(o.rank) + '\n' + opt_text(o.local_rank);
}

// UUIDs and models by (process, CUDA index), from the documents that name
// both (info, check, memset), for those that name an index only (copy).
using Identities = std::unordered_map<std::string, std::pair<std::string, std::optional<std::string>>>;

void add_unique(std::vector<std::string>& list, const std::string& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

}  // namespace

// Documents merged one at a time, as they are read: what it keeps is a row
// per GPU (and a line per document for the documents table), never the
// documents themselves, except those that name a GPU by CUDA index only
// before any document of their process tied that index to a UUID: those
// wait for the end, when every identity is known.
class FleetMerger::State {
public:
    void add(Document&& d) {
        learn(d);
        const std::size_t slot = documents_.size();
        documents_.push_back({d.source, d.command, !d.error, std::nullopt, d.origin, 0});
        if (!resolve_all(d)) {
            deferred_.emplace_back(slot, std::move(d));
            return;
        }
        merge(d, slot);
    }

    void finish() {
        for (auto& [slot, d] : deferred_) {
            if (!resolve_all(d)) resolve_on_host(d);
            merge(d, slot);
        }
        deferred_.clear();
    }

    // Warnings: the documents that named no GPU, then each check id this
    // gpumem does not know, once, then the documents joined by host.
    std::vector<std::string> notes() const {
        std::vector<std::string> lines;
        for (const DocumentRow& d : documents_)
            if (d.ok && d.gpus == 0) lines.push_back(skipped_note(d));
        for (const UnknownId& u : unknown_ids_) lines.push_back(unknown_id_note(u));
        lines.insert(lines.end(), host_joins_.begin(), host_joins_.end());
        return lines;
    }

    std::vector<GpuRow> rows_;
    std::vector<DocumentRow> documents_;

private:
    // A check id no row of this gpumem's table has, as the documents name it.
    struct UnknownId {
        std::string id, first_source;
        std::size_t documents = 0;
        std::size_t last_slot = SIZE_MAX;  // the document that counted last, so each counts once
    };

    void note_unknown_ids(const Document& d, std::size_t slot) {
        for (const GpuFacts& g : d.gpus)
            for (const CheckResult& c : g.checks) {
                if (c.known) continue;
                const auto [it, added] = unknown_index_.emplace(c.check, unknown_ids_.size());
                if (added) unknown_ids_.push_back({c.check, d.source, 0, SIZE_MAX});
                UnknownId& u = unknown_ids_[it->second];
                if (u.last_slot != slot) ++u.documents;
                u.last_slot = slot;
            }
    }

    static std::string skipped_note(const DocumentRow& d) {
        const std::string what = d.command.empty() ? "gpumem" : d.command;
        const std::string a = std::string_view("aeiou").find(what.front()) == std::string_view::npos ? "a " : "an ";
        if (reads_gpus_of(d.command)) return d.source + ": skipped: " + a + what + " document that names no GPU";
        return d.source + ": skipped: " + a + what + " document names no GPU (report reads the GPUs of " + gpu_commands_text() +
               " documents, and every error document)";
    }

    static std::string unknown_id_note(const UnknownId& u) {
        std::string suggestion = did_you_mean(u.id, kChecks.name_list());
        if (suggestion.empty()) suggestion = " (gpumem --list checks names today's)";
        return u.first_source + ": check '" + u.id + "' is not one this gpumem knows (in " + std::to_string(u.documents) +
               (u.documents == 1 ? " document" : " documents") +
               ": a renamed check, or a newer gpumem's): its verdicts count as written, with the document's remediation or "
               "none" + suggestion;
    }

    void learn(const Document& d) {
        for (const GpuFacts& g : d.gpus) {
            if (!g.index || !g.uuid) continue;
            ids_[context_key(d.origin) + '\n' + std::to_string(*g.index)] = {*g.uuid, g.name};
            if (d.origin.host.empty()) continue;
            const auto [it, added] = host_ids_.try_emplace(d.origin.host + '\n' + std::to_string(*g.index), HostIndex{*g.uuid, g.name, d.source});
            if (!added && it->second.uuid != *g.uuid) it->second.agreed = false;
        }
    }

    // A document from outside any launcher (copy's, which names CUDA
    // indices only) that no document of its own process tied to GPUs: its
    // process saw the node's GPUs as CUDA numbers them, unless its own
    // CUDA_VISIBLE_DEVICES said otherwise. It joins the GPUs the host's
    // other documents name at its indices, where all of them name the same
    // GPU at each index and every index it names is known (else a launcher
    // narrowed the GPUs per rank, and its rows stay its own); a note says
    // so. Two documents of one GPU are then one row, as by UUID.
    void resolve_on_host(Document& d) {
        const DocOrigin& o = d.origin;
        if (o.host.empty() || !o.launcher.empty() || o.job_id || o.rank || o.local_rank) return;
        std::vector<const HostIndex*> found;
        for (const GpuFacts& g : d.gpus) {
            if (g.uuid || !g.index) continue;
            const auto it = host_ids_.find(o.host + '\n' + std::to_string(*g.index));
            if (it == host_ids_.end() || !it->second.agreed) return;
            found.push_back(&it->second);
        }
        if (found.empty()) return;
        std::vector<std::string> sources;
        std::size_t next = 0;
        for (GpuFacts& g : d.gpus) {
            if (g.uuid || !g.index) continue;
            const HostIndex& known = *found[next++];
            g.uuid = known.uuid;
            if (!g.name) g.name = known.name;
            add_unique(sources, known.source);
        }
        host_joins_.push_back(d.source + ": its GPUs are named by CUDA index only, outside any launcher: taken as " + o.host +
                              "'s GPUs at those indices, as " + join(sources) + " names them (a CUDA_VISIBLE_DEVICES of its own "
                              "would make that wrong)");
    }

    // Whether every GPU of `d` has a UUID, or has no index to find one by.
    bool resolve_all(Document& d) const {
        bool all = true;
        for (GpuFacts& g : d.gpus) {
            resolve(d.origin, g);
            all &= g.uuid.has_value() || !g.index;
        }
        return all;
    }

    void merge(const Document& d, std::size_t slot) {
        std::vector<std::size_t> touched;
        bool failed_check = false;
        for (const GpuFacts& g : d.gpus) {
            const std::size_t row = row_for(g.uuid ? "U\n" + d.origin.host + '\n' + *g.uuid
                                                   : "I\n" + context_key(d.origin) + '\n' + std::to_string(g.index.value_or(-1)),
                                            d);
            failed_check |= merge_gpu(rows_[row], g, d.strict);
            touch(row, d, touched);
        }
        note_unknown_ids(d, slot);
        DocumentRow& doc = documents_[slot];
        if (d.error) {
            doc.error_code = d.error->code;
            // A failed check's error document: the failures are the rows' own.
            const bool told = d.error->code == "check_failed" && failed_check;
            if (!told) attach_error(d, touched);
        }
        doc.gpus = touched.size();
    }

    void resolve(const DocOrigin& origin, GpuFacts& g) const {
        if (g.uuid || !g.index) return;
        const auto it = ids_.find(context_key(origin) + '\n' + std::to_string(*g.index));
        if (it == ids_.end()) return;
        g.uuid = it->second.first;
        if (!g.name) g.name = it->second.second;
    }

    std::size_t row_for(const std::string& key, const Document& d) {
        const auto [it, added] = keys_.emplace(key, rows_.size());
        if (added) {
            GpuRow row;
            row.host = d.origin.host;
            rows_.push_back(std::move(row));
        }
        // The rank and job of the last document that has them: a later
        // document from outside any launcher (info on the node) keeps them.
        GpuRow& row = rows_[it->second];
        if (d.origin.rank || d.origin.job_id) {
            row.job_id = d.origin.job_id;
            row.rank = d.origin.rank;
            row.local_rank = d.origin.local_rank;
        }
        return it->second;
    }

    void touch(std::size_t row, const Document& d, std::vector<std::size_t>& touched) {
        if (!d.command.empty()) add_unique(rows_[row].commands, d.command);
        rows_[row].sources.push_back(d.source);
        if (std::find(touched.begin(), touched.end(), row) == touched.end()) touched.push_back(row);
    }

    // Returns whether the document failed a check of this GPU.
    static bool merge_gpu(GpuRow& row, const GpuFacts& g, bool strict_document) {
        if (g.index) row.index = g.index;
        if (g.uuid) row.uuid = g.uuid;
        if (g.name) row.name = g.name;
        if (g.free) row.free = g.free;
        if (g.total) row.total = g.total;
        if (g.verdict) row.verdict = row.verdict ? gpumem::worse(*row.verdict, *g.verdict) : *g.verdict;
        bool failed = g.verdict == Verdict::fail;
        for (const CheckResult& c : g.checks) {
            // A warning failed a --strict check run: the report says so too.
            const bool fail = c.verdict == Verdict::fail || (strict_document && c.verdict == Verdict::warn);
            if (fail) add_unique(row.failed_checks, c.check);
            if (!fail && c.verdict == Verdict::warn) add_unique(row.warned_checks, c.check);
            if (c.verdict == Verdict::unknown) add_unique(row.unknown_checks, c.check);
            if (c.remediation != Remediation::none) {
                auto same = [&c](const auto& r) { return r.first == c.check; };
                const auto it = std::find_if(row.remedies.begin(), row.remedies.end(), same);
                if (it == row.remedies.end())
                    row.remedies.emplace_back(c.check, c.remediation);
                else
                    it->second = worse_remediation(it->second, c.remediation);
            }
            failed |= fail;
        }
        for (const Figure& f : g.figures) {
            auto same = [&f](const Figure& mine) { return mine.name == f.name; };
            const auto it = std::find_if(row.figures.begin(), row.figures.end(), same);
            if (it == row.figures.end())
                row.figures.push_back(f);
            else
                *it = f;  // later documents win: a loop's JSON Lines are in time order
        }
        return failed || (strict_document && g.verdict == Verdict::warn);
    }

    // An error names its GPUs' rows, or, from a process that found none, a
    // row of its own for that rank.
    void attach_error(const Document& d, std::vector<std::size_t>& touched) {
        if (touched.empty()) {
            const std::size_t row = row_for("R\n" + context_key(d.origin), d);
            touch(row, d, touched);
        }
        for (std::size_t row : touched) {
            add_unique(rows_[row].error_codes, d.error->code);
            add_unique(rows_[row].errors, (d.command.empty() ? "gpumem" : d.command) + ": " + d.error->message);
        }
    }

    // What a host's documents name at a CUDA index, all processes together.
    struct HostIndex {
        std::string uuid;
        std::optional<std::string> name;
        std::string source;  // the first document that named it
        bool agreed = true;  // every document of the host names this GPU there
    };

    Identities ids_;
    std::unordered_map<std::string, HostIndex> host_ids_;  // host '\n' index
    std::vector<std::string> host_joins_;                  // a note per document joined by host
    std::unordered_map<std::string, std::size_t> keys_;
    std::vector<UnknownId> unknown_ids_;
    std::unordered_map<std::string, std::size_t> unknown_index_;
    std::vector<std::pair<std::size_t, Document>> deferred_;
};

namespace {

bool row_less(const GpuRow& a, const GpuRow& b) {
    if (a.host != b.host) return natural_less(a.host, b.host);
    if (a.index.has_value() != b.index.has_value()) return a.index.has_value();  // GPUs first, then GPU-less ranks
    if (a.index != b.index) return a.index < b.index;
    if (a.job_id != b.job_id) return a.job_id < b.job_id;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.uuid < b.uuid;
}

bool failed(const GpuRow& row, const ReportOptions& options) {
    return row.verdict == Verdict::fail || !row.failed_checks.empty() || (options.strict && row.verdict == Verdict::warn);
}

// Each figure of each GPU against the median of the same figure over the
// GPUs of its model; GPUs with no model name are compared with none.
std::vector<FigureRow> compare_figures(std::vector<GpuRow>& rows, double fraction) {
    std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> groups;  // (model, figure) -> figures
    std::vector<FigureRow> figures;
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (const Figure& f : rows[r].figures) {
            if (rows[r].name) groups[{*rows[r].name, f.name}].push_back(figures.size());
            figures.push_back({r, f, f.value, 1, false});
        }
    for (const auto& [key, members] : groups) {
        std::vector<double> values;
        for (std::size_t m : members) values.push_back(figures[m].figure.value);
        const double median = summarize(values).median;
        for (std::size_t m : members) {
            FigureRow& f = figures[m];
            f.median = median;
            f.peers = members.size();
            // One GPU is its own median: an outlier needs peers.
            f.outlier = members.size() >= 2 && median > 0 && f.figure.value < median * (1.0 - fraction);
            if (f.outlier) add_unique(rows[f.row].outliers, f.figure.name);
        }
    }
    return figures;
}

// A check that could not run, on a GPU where none failed.
bool unknown(const GpuRow& row) { return !row.unknown_checks.empty() || row.verdict == Verdict::unknown; }

RowStatus status_of(const GpuRow& row, const ReportOptions& options) {
    if (!row.errors.empty()) return RowStatus::error;
    if (failed(row, options) || (options.strict && unknown(row))) return RowStatus::fail;
    if (unknown(row)) return RowStatus::unknown;
    if (!row.outliers.empty()) return RowStatus::outlier;
    if (!row.warned_checks.empty() || row.verdict == Verdict::warn) return RowStatus::warn;
    return RowStatus::ok;
}

std::vector<ModelSummary> summarize_models(const std::vector<GpuRow>& rows, const ReportOptions& options) {
    std::vector<ModelSummary> models;
    for (const GpuRow& row : rows) {
        if (!row.name) continue;
        auto it = std::find_if(models.begin(), models.end(), [&row](const ModelSummary& m) { return m.name == *row.name; });
        if (it == models.end()) it = models.insert(models.end(), ModelSummary{*row.name});
        ++it->gpus;
        const bool fail = failed(row, options);
        if (row.verdict) {
            ++it->checked;
            if (fail) ++it->failed;
            else if (unknown(row)) ++it->unknown;
            else if (row.verdict == Verdict::warn || !row.warned_checks.empty()) ++it->warned;
            else ++it->passed;
        }
        it->outliers += !row.outliers.empty();
        it->errors += !row.errors.empty();
    }
    std::sort(models.begin(), models.end(), [](const ModelSummary& a, const ModelSummary& b) { return a.name < b.name; });
    return models;
}

std::vector<ModelFigure> summarize_figures(const std::vector<GpuRow>& rows, const std::vector<FigureRow>& figures) {
    std::map<std::pair<std::string, std::string>, std::vector<const FigureRow*>> groups;
    for (const FigureRow& f : figures)
        if (rows[f.row].name) groups[{*rows[f.row].name, f.figure.name}].push_back(&f);
    std::vector<ModelFigure> out;
    for (const auto& [key, members] : groups) {
        std::vector<double> values;
        ModelFigure m{key.first, key.second, members.front()->figure.unit};
        for (const FigureRow* f : members) {
            values.push_back(f->figure.value);
            m.outliers += f->outlier;
        }
        const Summary s = summarize(values);
        m.count = s.count;
        m.median = s.median;
        m.min = s.min;
        m.max = s.max;
        out.push_back(std::move(m));
    }
    return out;
}

std::string gpu_label(const GpuRow& row) {
    std::string label = row.host.empty() ? "(no host)" : row.host;
    if (row.index) label += " GPU " + std::to_string(*row.index);
    if (row.uuid) label += " (" + *row.uuid + ")";
    if (!row.index && !row.uuid) {
        if (row.rank) label += " rank " + std::to_string(*row.rank);
        if (row.job_id) label += " job " + *row.job_id;
    }
    return label;
}

std::string number_text(double value, const std::string& unit) {
    return format_decimal(value, 3) + (unit.empty() ? "" : " " + unit);
}

std::vector<std::string> problem_lines(const Fleet& fleet, const ReportOptions& options) {
    std::vector<std::string> lines;
    for (const GpuRow& row : fleet.rows) {
        for (const std::string& e : row.errors) lines.push_back(gpu_label(row) + ": " + e);
        if (failed(row, options)) {
            std::vector<std::string> checks = row.failed_checks;
            if (options.strict) checks.insert(checks.end(), row.warned_checks.begin(), row.warned_checks.end());
            std::string text = checks.empty() ? "check verdict " + std::string(kVerdicts.name_of(*row.verdict)) : "";
            for (const std::string& c : checks) text += (text.empty() ? "" : ", ") + c;
            lines.push_back(gpu_label(row) + ": failed " + text);
        }
        // Not judged is not fit: a check that could not run fails the fleet.
        if (row.status == RowStatus::unknown || (row.status == RowStatus::fail && unknown(row) && !failed(row, options)))
            lines.push_back(gpu_label(row) + ": could not run " +
                            (row.unknown_checks.empty() ? std::string("its checks (verdict unknown)") : join(row.unknown_checks)));
    }
    for (const FigureRow& f : fleet.figures) {
        if (!f.outlier) continue;
        const GpuRow& row = fleet.rows[f.row];
        lines.push_back(gpu_label(row) + ": " + f.figure.name + " " + number_text(f.figure.value, f.figure.unit) + " is " +
                        format_decimal(100.0 * f.below(), 1) + "% below the median " + number_text(f.median, f.figure.unit) +
                        " of " + std::to_string(f.peers) + " " + *row.name);
    }
    return lines;
}

// A row's remediation: the worst its checks ask for, and at least a drain
// for a row that failed, could not be checked or judged, or is an outlier.
void set_remediation(GpuRow& row) {
    std::stable_sort(row.remedies.begin(), row.remedies.end(),
                     [](const auto& a, const auto& b) { return static_cast<int>(a.second) > static_cast<int>(b.second); });
    row.remediation = Remediation::none;
    for (const auto& r : row.remedies) row.remediation = worse_remediation(row.remediation, r.second);
    if (row.status != RowStatus::ok && row.status != RowStatus::warn)
        row.remediation = worse_remediation(row.remediation, Remediation::drain);
}

// What a row contributes to its node's reason: "GPU 0 nvml.remapped_rows.pending (reset-gpu)".
std::string row_reason(const GpuRow& row) {
    std::string who = row.index ? "GPU " + std::to_string(*row.index) : row.uuid ? *row.uuid : "rank " + opt_text(row.rank);
    std::vector<std::string> parts;
    for (const auto& [check, remedy] : row.remedies) parts.push_back(check + " (" + std::string(remediation_name(remedy)) + ")");
    for (const std::string& c : row.failed_checks)
        if (std::none_of(row.remedies.begin(), row.remedies.end(), [&c](const auto& r) { return r.first == c; }))
            parts.push_back(c + " failed");
    for (const std::string& c : row.unknown_checks) parts.push_back(c + " could not run");
    if (row.verdict == Verdict::unknown && row.unknown_checks.empty()) parts.emplace_back("check could not run");
    for (const std::string& o : row.outliers) parts.push_back(o + " below its model's median");
    for (const std::string& e : row.error_codes) parts.push_back("error " + e);
    if (parts.empty()) return "";
    return who + " " + join(parts, ", ");
}

std::vector<NodeRow> summarize_nodes(const std::vector<GpuRow>& rows) {
    std::vector<NodeRow> nodes;
    std::unordered_map<std::string_view, std::size_t> by_host;  // 12 500 hosts: no linear search per row
    for (const GpuRow& row : rows) {
        const auto [it, added] = by_host.emplace(row.host, nodes.size());
        if (added) {
            NodeRow fresh;
            fresh.host = row.host;
            nodes.push_back(std::move(fresh));
        }
        NodeRow& n = nodes[it->second];
        ++(row.index || row.uuid ? n.gpus : n.ranks);
        if (static_cast<int>(row.status) < static_cast<int>(n.status)) n.status = row.status;
        n.remediation = worse_remediation(n.remediation, row.remediation);
        if (row.remediation == Remediation::none) continue;
        const std::string why = row_reason(row);
        if (!why.empty()) n.reason += (n.reason.empty() ? "" : "; ") + why;
    }
    for (NodeRow& n : nodes) {
        n.drain = n.remediation != Remediation::none;
        if (n.drain) n.reason = std::string(remediation_name(n.remediation)) + ": " + n.reason;
    }
    return nodes;
}

}  // namespace

bool natural_less(std::string_view a, std::string_view b) noexcept {
    std::size_t i = 0, j = 0;
    auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    while (i < a.size() && j < b.size()) {
        if (digit(a[i]) && digit(b[j])) {
            std::size_t ei = i, ej = j;
            while (ei < a.size() && digit(a[ei])) ++ei;
            while (ej < b.size() && digit(b[ej])) ++ej;
            std::string_view na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
            while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
            while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
            if (na.size() != nb.size()) return na.size() < nb.size();
            if (na != nb) return na < nb;
            i = ei;
            j = ej;
            continue;
        }
        if (a[i] != b[j]) return a[i] < b[j];
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

FleetMerger::FleetMerger() : state_(std::make_unique<State>()) {}
FleetMerger::~FleetMerger() = default;

void FleetMerger::add(Document&& d) { state_->add(std::move(d)); }

Fleet FleetMerger::finish(const ReportOptions& options) {
    state_->finish();
    Fleet fleet;
    fleet.notes = state_->notes();
    fleet.documents = std::move(state_->documents_);
    fleet.rows = std::move(state_->rows_);
    std::stable_sort(fleet.rows.begin(), fleet.rows.end(), row_less);
    fleet.figures = compare_figures(fleet.rows, options.outlier_fraction);
    for (GpuRow& row : fleet.rows) {
        row.status = status_of(row, options);
        set_remediation(row);
    }
    fleet.nodes = summarize_nodes(fleet.rows);
    fleet.models = summarize_models(fleet.rows, options);
    fleet.model_figures = summarize_figures(fleet.rows, fleet.figures);
    fleet.problems = problem_lines(fleet, options);
    return fleet;
}

Fleet merge_fleet(const std::vector<Document>& documents, const ReportOptions& options) {
    FleetMerger merger;
    for (const Document& d : documents) merger.add(Document(d));
    return merger.finish(options);
}

}  // namespace gpumem::fleet
