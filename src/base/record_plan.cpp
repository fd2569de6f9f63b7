#include "base/record_plan.hpp"

#include <algorithm>
#include <initializer_list>

#include "base/sizes.hpp"

namespace gpumem {
namespace {

// Where a file's own name starts (after its folder).
std::size_t name_start(std::string_view file) {
    const std::size_t slash = file.rfind('/');
    return slash == std::string_view::npos ? 0 : slash + 1;
}

// The last ".TAGN" of a file's own name that ends it or comes before a dot.
std::optional<unsigned> tag_number(std::string_view file, std::string_view tag) {
    const std::string_view name = file.substr(name_start(file));
    std::size_t at = name.rfind(tag);
    while (at != std::string_view::npos && at > 0) {
        std::size_t end = at + tag.size();
        unsigned n = 0;
        while (end < name.size() && name[end] >= '0' && name[end] <= '9' && end - at - tag.size() < 7)
            n = n * 10 + static_cast<unsigned>(name[end++] - '0');
        if (end > at + tag.size() && (end == name.size() || name[end] == '.')) return n;
        at = name.rfind(tag, at - 1);
    }
    return std::nullopt;
}

// Whether `part` (between dots of a file's name) is one of gpumem's tags:
// "rankN", "procN", "bsN" or "confirmN", N digits or the hook's placeholder
// ("{rank}", "{proc}") that stands for them.
bool file_name_tag(std::string_view part, std::initializer_list<std::string_view> tags) {
    for (const std::string_view tag : tags) {
        if (part.size() <= tag.size() || part.substr(0, tag.size()) != tag) continue;
        const std::string_view number = part.substr(tag.size());
        if (std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; })) return true;
        if (number.size() > 2 && number.front() == '{' && number.back() == '}') return true;
    }
    return false;
}

// The dot of a file's real extension (npos: none). A dot in a folder, a
// leading dot (a hidden file's name) or a tag gpumem put there is no
// extension: "run" tagged ".proc2" is "run.proc2", whose statistics are
// "run.proc2.stats.json", not the first process's "run.stats.json".
std::size_t extension_dot(std::string_view file) {
    const std::size_t name = name_start(file);
    const std::size_t dot = file.rfind('.');
    if (dot == std::string_view::npos || dot <= name) return std::string_view::npos;
    if (file_name_tag(file.substr(dot + 1), {"rank", "proc", "bs", "confirm"})) return std::string_view::npos;
    return dot;
}

}  // namespace

std::string tagged_file_name(std::string_view file, std::string_view tag) {
    const std::size_t dot = extension_dot(file);
    const std::string dotted = "." + std::string(tag);
    if (dot == std::string_view::npos) return std::string(file) + dotted;
    return std::string(file.substr(0, dot)) + dotted + std::string(file.substr(dot));
}

std::string rank_file_name(std::string_view file, std::string_view rank) { return tagged_file_name(file, "rank" + std::string(rank)); }

std::optional<unsigned> rank_of_file_name(std::string_view file) { return tag_number(file, ".rank"); }

std::string stats_file_name(std::string_view snapshot) {
    const std::size_t dot = extension_dot(snapshot);
    return std::string(snapshot.substr(0, dot)) + ".stats.json";
}

std::string process_file_name(std::string_view file, std::string_view order) { return tagged_file_name(file, "proc" + std::string(order)); }

std::optional<unsigned> process_of_file_name(std::string_view file) { return tag_number(file, ".proc"); }

namespace {

// A file's stem (its own name, its extension left out) without the tags
// among `tags` after its first part, which is its name even when it reads
// "rank1": "train.rank1.proc2" -> "train".
std::string untagged_stem(std::string_view stem, std::initializer_list<std::string_view> tags) {
    std::string kept;
    std::size_t from = 0;
    for (bool first = true; from <= stem.size(); first = false) {
        const std::size_t next = std::min(stem.find('.', from), stem.size());
        const std::string_view part = stem.substr(from, next - from);
        if (first || !file_name_tag(part, tags)) kept += (first ? "" : ".") + std::string(part);
        from = next + 1;
    }
    return kept;
}

}  // namespace

std::string confirm_file_name(std::string_view trace, std::size_t run) {
    if (trace == "-") return "reuse-sim.confirm" + std::to_string(run) + ".pickle";
    const std::size_t start = name_start(trace);
    const std::size_t dot = extension_dot(trace);
    const std::string_view stem = trace.substr(start, (dot == std::string_view::npos ? trace.size() : dot) - start);
    // Later ".rankN" and ".procN" parts are the trace's own run's.
    return std::string(trace.substr(0, start)) + untagged_stem(stem, {"rank", "proc"}) + ".confirm" + std::to_string(run) +
           (dot == std::string_view::npos ? std::string() : std::string(trace.substr(dot)));
}

bool recording_file_of(std::string_view file, std::string_view candidate) {
    const auto stem_and_extension = [](std::string_view path) {
        const std::string_view name = path.substr(name_start(path));
        const std::size_t dot = extension_dot(name);
        return std::pair<std::string, std::string_view>(untagged_stem(name.substr(0, dot), {"rank", "proc", "bs", "confirm"}),
                                                       dot == std::string_view::npos ? std::string_view() : name.substr(dot));
    };
    const auto [stem, extension] = stem_and_extension(file);
    std::string_view name = candidate.substr(name_start(candidate));
    constexpr std::string_view kStats = ".stats.json";
    if (name.size() > kStats.size() && name.substr(name.size() - kStats.size()) == kStats) {
        // The statistics of a recording: FILE's stem, whatever its extension.
        name.remove_suffix(kStats.size());
        return stem_and_extension(std::string(name) + std::string(extension)).first == stem;
    }
    const auto [candidate_stem, candidate_extension] = stem_and_extension(name);
    return candidate_stem == stem && candidate_extension == extension;
}

bool torch_reads_alloc_conf(std::optional<std::string_view> torch_version) noexcept {
    if (!torch_version) return true;
    unsigned major = 0, minor = 0;
    std::size_t i = 0;
    const std::string_view v = *torch_version;
    auto number = [&](unsigned& n) {
        const std::size_t start = i;
        while (i < v.size() && v[i] >= '0' && v[i] <= '9' && i - start < 6) n = n * 10 + static_cast<unsigned>(v[i++] - '0');
        return i > start;
    };
    if (!number(major) || i >= v.size() || v[i++] != '.' || !number(minor)) return true;  // not a version: assume a new torch
    return major > 2 || (major == 2 && minor >= 9);
}

AllocConfRead read_alloc_conf(const std::optional<std::string>& alloc_conf, const std::optional<std::string>& cuda_alloc_conf,
                              std::optional<std::string_view> torch_version) {
    AllocConfRead read;
    const bool new_name_first = torch_reads_alloc_conf(torch_version);
    if (new_name_first && alloc_conf) {
        read = {alloc_conf, std::string(kAllocConfVariable), cuda_alloc_conf ? std::string(kCudaAllocConfVariable) : std::string()};
    } else if (cuda_alloc_conf) {
        read = {cuda_alloc_conf, std::string(kCudaAllocConfVariable), alloc_conf ? std::string(kAllocConfVariable) : std::string()};
    } else if (alloc_conf) {
        read.ignored = std::string(kAllocConfVariable);  // an older torch does not know the new name
    }
    return read;
}

std::optional<CapInForce> cap_in_force(const std::vector<MemoryFractionCall>& calls, std::uint32_t device) {
    if (calls.empty()) return std::nullopt;
    bool any_for_device = false;
    for (const MemoryFractionCall& c : calls) any_for_device = any_for_device || c.device == device;
    CapInForce in_force;
    bool gpumem_set = false, program_set = false;
    for (const MemoryFractionCall& c : calls) {
        if (any_for_device && c.device != device) continue;
        if (c.by_gpumem) {
            gpumem_set = true;
            in_force.gpumem_allowed = c.allowed_memory_maximum;
        } else {
            if (program_set && c.allowed_memory_maximum != in_force.call.allowed_memory_maximum) ++in_force.program_changes;
            if (gpumem_set) in_force.replaced_gpumem = true;
            program_set = true;
        }
        in_force.call = c;
    }
    if (in_force.call.by_gpumem) in_force.replaced_gpumem = false;
    return in_force;
}

std::string exact_size_text(std::uint64_t bytes) {
    constexpr std::uint64_t kMiB = 1ULL << 20, kGiB = 1ULL << 30;
    if (bytes != 0 && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "GiB";
    if (bytes != 0 && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "MiB";
    return std::to_string(bytes);
}

std::string size_in_words(std::uint64_t bytes) {
    constexpr std::uint64_t kMiB = 1ULL << 20;
    if (bytes != 0 && bytes % kMiB == 0) return exact_size_text(bytes);
    return format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
}

std::string fewer_ooms_message(std::uint64_t recorded_ooms, std::uint64_t replay_ooms, std::optional<std::uint64_t> replay_capacity,
                               std::optional<std::uint64_t> recorded_cap, std::uint64_t recorded_peak_reserved,
                               const std::vector<std::string>& causes) {
    std::string line = "the recording had " + std::to_string(recorded_ooms) + (recorded_ooms == 1 ? " OOM" : " OOMs") +
                       ", the replay of its settings " + std::to_string(replay_ooms) + ": ";
    if (recorded_cap && replay_capacity != recorded_cap)
        return line + "the recording ran under a cap of " + size_in_words(*recorded_cap) +
               " (its statistics file says so), not this replay's; pass --capacity " + exact_size_text(*recorded_cap);
    std::string named;
    for (const std::string& cause : causes) named += (named.empty() ? "" : "; ") + cause;
    if (!named.empty()) line += "the replay serves the program otherwise than PyTorch did: " + named;
    if (recorded_cap) {
        // Its statistics name the cap in force: the rest is memory PyTorch's allocator does not see.
        if (!named.empty()) return line;
        return line + "the program had less memory than the cap it ran under (another process using the GPU, or memory "
                      "taken outside PyTorch's caching allocator)";
    }
    if (!named.empty()) line += "; or ";
    line += replay_capacity ? "the program had less memory than this replay's cap"
                            : "the program had less memory than this uncapped replay";
    return line + " (likely a cap the recording did not capture, such as its own set_per_process_memory_fraction, or another "
                  "process using the GPU): pass the memory it could use, --capacity SIZE (at least the recorded peak reserved, " +
           exact_size_text(recorded_peak_reserved) + ")";
}

std::vector<std::string> alloc_conf_items(std::string_view conf) {
    std::vector<std::string> items;
    std::string item;
    int depth = 0;
    for (const char c : conf) {
        if (c == '[') ++depth;
        if (c == ']' && depth > 0) --depth;
        if (c == ',' && depth == 0) {
            if (!item.empty()) items.push_back(item);
            item.clear();
            continue;
        }
        if (c != ' ' || !item.empty()) item += c;
    }
    if (!item.empty()) items.push_back(item);
    return items;
}

std::string_view alloc_conf_key(std::string_view item) { return item.substr(0, std::min(item.find(':'), item.size())); }

MergedAllocConf merge_alloc_conf(std::string_view user, std::string_view setting, const std::vector<std::string_view>& grid_keys) {
    MergedAllocConf merged;
    for (std::string& item : alloc_conf_items(user)) {
        const bool decided = std::find(grid_keys.begin(), grid_keys.end(), alloc_conf_key(item)) != grid_keys.end();
        (decided ? merged.replaced : merged.kept).push_back(std::move(item));
    }
    for (const std::string& item : merged.kept) merged.conf += (merged.conf.empty() ? "" : ",") + item;
    if (!setting.empty()) merged.conf += (merged.conf.empty() ? "" : ",") + std::string(setting);
    return merged;
}

std::uint64_t judged_ooms(const RunFigures& figures) noexcept { return figures.program_ooms.value_or(figures.ooms); }

bool prediction_held(const RunFigures& predicted, const RunFigures& real) noexcept {
    return (judged_ooms(predicted) == 0) == (judged_ooms(real) == 0);
}

bool confirm_converged(const ConfirmRunOutcome& run) noexcept { return run.real && judged_ooms(*run.real) == 0; }

namespace {

std::string setting_text(const std::string& setting) {
    return setting.empty() ? std::string("PyTorch's default settings") : "PYTORCH_CUDA_ALLOC_CONF=" + setting;
}

std::string ooms_text(std::uint64_t n) { return n == 0 ? std::string("no OOM") : std::to_string(n) + (n == 1 ? " OOM" : " OOMs"); }

std::string tuning_text(std::size_t chosen_by) {
    return chosen_by == 0 ? std::string("the trace's tuning") : "the tuning of run " + std::to_string(chosen_by) + "'s recording";
}

// Which kind each count is: the program's, and the allocator's, of which
// those beyond the program's were refused and retried inside PyTorch.
std::string real_ooms_text(const RunFigures& real) {
    const std::string allocator = "allocator OOMs: " + std::to_string(real.ooms);
    if (!real.program_ooms) return allocator + " (the OOMs the program saw are not known: its Python is older than 3.12)";
    const std::uint64_t seen = *real.program_ooms;
    std::string text = "OOMs the program saw: " + std::to_string(seen) + "; " + allocator;
    if (real.ooms > seen)
        text += std::string(" (") + (seen == 0 ? "" : std::to_string(real.ooms - seen) + " ") +
                "retried inside PyTorch, e.g. cuDNN's workspace search)";
    return text;
}

std::string run_line(const ConfirmRunOutcome& run, std::size_t n) {
    std::string line = "run " + std::to_string(n) + ": " + setting_text(run.setting) + " (" +
                       (n == 1 && run.chosen_by == 0 ? std::string("the best of the trace's tuning") : "chosen by " + tuning_text(run.chosen_by)) +
                       "): predicted " + ooms_text(run.predicted.ooms) + ", peak reserved " + format_bytes(run.predicted.peak_reserved) + "; ";
    if (!run.real) return line + "no real figures (" + run.note + ")";
    return line + "real: " + real_ooms_text(*run.real) + ", peak reserved " + format_bytes(run.real->peak_reserved);
}

// The run that came nearest to fitting: the fewest OOMs, then the lowest peak.
const ConfirmRunOutcome* nearest_run(const std::vector<ConfirmRunOutcome>& runs, std::size_t& number) {
    const ConfirmRunOutcome* nearest = nullptr;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const ConfirmRunOutcome& run = runs[i];
        if (!run.real) continue;
        if (nearest == nullptr || judged_ooms(*run.real) < judged_ooms(*nearest->real) ||
            (judged_ooms(*run.real) == judged_ooms(*nearest->real) && run.real->peak_reserved < nearest->real->peak_reserved)) {
            nearest = &run;
            number = i + 1;
        }
    }
    return nearest;
}

std::string instead_text(const ConfirmEnding& ending) {
    if (ending.would_fit)
        return "; what would fit instead: a cap of " + format_bytes(*ending.would_fit) + " with " + setting_text(ending.best_setting) +
               " (the smallest capacity it runs in without an OOM, by " + tuning_text(ending.last_tuning) + ")";
    if (!ending.not_searched.empty()) return "; the capacity that would fit is not known (" + ending.not_searched + ")";
    return "";
}

}  // namespace

std::vector<std::string> confirm_answer(const std::vector<ConfirmRunOutcome>& runs, const ConfirmEnding& ending) {
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < runs.size(); ++i) lines.push_back(run_line(runs[i], i + 1));
    const std::string k = std::to_string(ending.candidates);
    if (ending.stop == ConfirmStop::converged && !runs.empty()) {
        lines.push_back("ran without an OOM: use " + setting_text(runs.back().setting) + " (confirmed by real run " +
                        std::to_string(runs.size()) + ")");
        return lines;
    }
    if (ending.stop == ConfirmStop::interrupted) {
        const std::size_t done = runs.empty() || runs.back().note != "interrupted" ? runs.size() : runs.size() - 1;
        lines.push_back("not confirmed: interrupted " +
                        (done == runs.size() ? "after " + std::to_string(done) : "during run " + std::to_string(runs.size())) +
                        " of at most " + k + " real runs; " +
                        (done == 0 ? std::string("no run ended") : "none ran without an OOM"));
        return lines;
    }
    std::string word = "no setting of the grid avoided the OOM in " + std::to_string(runs.size()) + " real run" + (runs.size() == 1 ? "" : "s");
    if (ending.stop == ConfirmStop::nothing_left)
        word += " (no setting left untried that " + tuning_text(ending.last_tuning) + " says could fit)";
    std::size_t number = 0;
    if (const ConfirmRunOutcome* nearest = nearest_run(runs, number))
        word += "; the nearest was " + setting_text(nearest->setting) + " (run " + std::to_string(number) + ": " +
                ooms_text(judged_ooms(*nearest->real)) + ", peak reserved " + format_bytes(nearest->real->peak_reserved) +
                (ending.cap ? " against the cap " + format_bytes(*ending.cap) : std::string()) + ")";
    lines.push_back(word + instead_text(ending));
    return lines;
}

}  // namespace gpumem
