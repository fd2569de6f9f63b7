// The report of gpumem reuse-sim max-batch, from its request and results
// alone: the answer first, the peaks at the answer and the next batch, the
// recordings and the model's checks (which requests it could not follow),
// the table of settings, and --confirm's real runs; the document's
// "max_batch" and its schema from the same column tables.
#include <algorithm>
#include <string>
#include <vector>

#include "base/sizes.hpp"
#include "base/text.hpp"
#include "reuse_sim/reuse_sim_max_batch.hpp"
#include "reuse_sim/tuner.hpp"

namespace gpumem::cli {
namespace {

namespace rs = gpumem::reuse_sim;

Cell u64(std::uint64_t v) { return v; }

std::string setting_name(const rs::GridPoint& p) {
    const std::string conf = rs::alloc_conf(p.options);
    return conf.empty() ? std::string("(PyTorch's defaults)") : conf;
}

// What backs a setting's answer (the planner's word: reuse_sim/max_batch_plan.hpp).
using Backing = rs::AnswerStatus;

Backing backing_of(const MaxBatchSetting& s, const MaxBatchSearchResults& x) { return rs::answer_status(s, x.facts_of(s), x.checks_off); }

const char* backing_name(Backing b) { return rs::answer_status_name(b); }

std::string join_batches(const std::vector<std::uint64_t>& batches) {
    std::vector<std::string> words;
    words.reserve(batches.size());
    for (const std::uint64_t b : batches) words.push_back(std::to_string(b));
    if (words.size() <= 1) return join(words, "");
    const std::string last = words.back();
    words.pop_back();
    return join(words, ", ") + " and " + last;
}

// What the runs at a batch did: "ran out of memory" (every time), "ran out
// of memory 1 of 2 times".
std::string outcome_words(const rs::BatchTally* t) {
    if (t == nullptr || t->ooms == t->runs) return t != nullptr && t->runs > 1 ? "ran out of memory " + std::to_string(t->runs) + " of " +
                                                                                      std::to_string(t->runs) + " times"
                                                                                : "ran out of memory";
    return "ran out of memory " + std::to_string(t->ooms) + " of " + std::to_string(t->runs) + " times";
}

// Batches whose runs disagreed, and what may make them: "83 ran 1 of 2
// times: memory varies from run to run here (the recordings show 3
// streams, 40 frees waited on another stream's work)".
std::string variance_words(const rs::SettingFacts& f, const MaxBatchSearchResults& x) {
    std::vector<std::string> parts;
    for (const std::uint64_t batch : f.varies) {
        const rs::BatchTally* t = f.tally(batch);
        parts.push_back(std::to_string(batch) + " ran " + std::to_string(t->passes) + " of " + std::to_string(t->runs) + " times");
    }
    std::string text = join(parts, ", ") + ": memory varies from run to run here (";
    text += x.timing.empty() ? "nothing in the recordings says why: another process on the GPU, or a library choosing kernels by timing"
                             : "the recordings show " + join(x.timing, ", ");
    text += ")";
    if (x.variance_margin > 0)
        text += "; the answer leaves room for one more of the program's largest request (" + format_bytes(x.variance_margin, Unit::automatic) + ")";
    return text;
}

// One setting's answer. A batch that ran, with what is known of the next
// (a run that ran out of memory, or the model's word) and of the batches
// just below (memory not monotone in the batch); the model's alone, said
// so; or, where runs were made but none at the answer, the range between
// the largest batch that ran and the smallest above it that did not, never
// one number. Where the model does not hold, a model's answer is the range
// between the cautious trace's answer and the hopeful one's, which bound
// the truth (batch_model.hpp).
std::string batch_text(const MaxBatchSetting& s, const MaxBatchSearchResults& x, unsigned max_runs) {
    const rs::MaxBatchAnswer& a = s.answer;
    const rs::SettingFacts f = x.facts_of(s);
    const std::string under = s.point.recorded ? "" : " under it";
    switch (backing_of(s, x)) {
    case Backing::ran: {
        const std::string n = std::to_string(f.ran), next = std::to_string(f.ran + x.step);
        const rs::BatchTally* at = f.tally(f.ran);
        const unsigned made = at != nullptr ? at->runs : 1;
        const std::string ran = made > 1 ? " ran " + std::to_string(made) + " of " + std::to_string(made) + " times without an OOM"
                                         : " ran without an OOM";
        const std::string runs = made > 1 ? "real runs" : "a real run";
        const bool next_failed = std::binary_search(x.failed_above.begin(), x.failed_above.end(), f.ran + x.step);
        std::string text;
        if (f.ran_out == f.ran + x.step)
            text = n + " (real runs" + under + ": " + n + ran + ", " + next + " " + outcome_words(f.tally(f.ran + x.step)) + ")";
        else if (next_failed)
            text = n + " (" + runs + under + " at " + n + ran + "; " + next + " failed otherwise than by an OOM)";
        else if (a.reached_limit && x.failed_above.empty())
            text = n + " or more (" + runs + under + " at " + n + ran + "; every " + x.knob + " searched fits)";
        else
            text = n + " (" + runs + under + " at " + n + ran + "; the model says " + next + " does not fit)";
        if (x.repeats > made && s.point.recorded)
            text += "; " + std::to_string(made) + " of the " + std::to_string(x.repeats) + " runs an answer needs were made (the run budget, --max-runs " +
                    std::to_string(max_runs) + ", is spent)";
        if (s.point.recorded && !f.varies.empty()) text += "; " + variance_words(f, x);
        if (!x.failed_above.empty() && !next_failed)
            text += "; the program failed otherwise than by an OOM at " + x.knob + " " + join_batches(x.failed_above) + ": the search stayed below";
        // Only the batches run are known: a smaller batch that ran is the
        // one to name, and that the others below were not all run.
        if (!f.oom_below.empty())
            text += "; " + join_batches(f.oom_below) + (f.oom_below.size() > 1 ? " run" : " runs") +
                    " out of memory (memory is not monotone in the " + x.knob + " here, and not every " + x.knob + " below was run)" +
                    (f.ran_below_oom ? ": the " + knob_superlative(x.knob) + " below " + (f.oom_below.size() > 1 ? "them" : "it") +
                                           " that ran is " + std::to_string(f.ran_below_oom)
                                     : std::string());
        if (x.below_cut && s.point.recorded)
            text += "; the run budget (--max-runs " + std::to_string(max_runs) +
                    ") ended the runs below it first: " + knob_values(x.knob) + " below it may run out of memory";
        return text;
    }
    case Backing::not_confirmed: {
        const std::string model = a.largest ? "the model says " + std::to_string(*a.largest) : "the model finds no " + x.knob + " that fits";
        const std::string why = x.budget_spent ? "the run budget, --max-runs " + std::to_string(max_runs) + ", is spent"
                                               : std::string("no check was made");
        if (f.ran == 0)
            return "not confirmed: " + (f.ran_out ? std::to_string(f.ran_out) + " ran out of memory" + under + "; " : std::string()) + model +
                   " (" + why + ")";
        if (f.ran_out != 0)
            return "not confirmed: between " + std::to_string(f.ran) + ", which ran" + under + ", and " + std::to_string(f.ran_out) +
                   ", which ran out of memory (" + model + "; " + why + ")";
        return "not confirmed: " + std::to_string(f.ran) + " ran" + under + " without an OOM (" + model + "; " + why + ")";
    }
    case Backing::model_only: break;
    }
    if (!a.largest) return "none (even " + x.knob + " 1 runs out of memory)";
    std::string text = std::to_string(*a.largest);
    // Clipped by a recording that ran out of memory for real.
    if (a.reached_limit && f.ran_out && *a.largest + x.step >= f.ran_out)
        return text + " (the model fits more, but the recording at " + x.knob + " " + std::to_string(f.ran_out) + " ran out of memory for real)";
    if (a.reached_limit) return text + " or more (every " + x.knob + " searched fits)";
    if (x.model_holds()) return text;
    if (a.largest_hopeful && *a.largest_hopeful != *a.largest) {
        const std::uint64_t low = std::min(*a.largest, *a.largest_hopeful), high = std::max(*a.largest, *a.largest_hopeful);
        return "between " + std::to_string(low) + " and " + std::to_string(high) +
               (*a.largest < *a.largest_hopeful ? " (cautious to hopeful)" : " (the hopeful trace fits less than the cautious one: the allocator's layout)");
    }
    return text + " (cautious and hopeful agree)";
}

std::string checks_summary(const rs::BatchModelChecks& c, const std::string& knob) {
    std::vector<std::string> parts;
    if (c.not_affine)
        parts.push_back(rs::group_digits(c.not_affine) + " request size" + (c.not_affine > 1 ? "s follow" : " follows") + " no line in the " + knob);
    if (c.unaligned)
        parts.push_back(rs::group_digits(c.unaligned) + " request" + (c.unaligned > 1 ? "s" : "") + " of the largest recording missing from another");
    if (c.vanished)
        parts.push_back(rs::group_digits(c.vanished) + " request" + (c.vanished > 1 ? "s" : "") + " of a smaller recording gone at the largest");
    return join(parts, ", ");
}

// The peak at the answer, and what the next batch would need: its peak
// reserved with no cap, in bytes too (1028 MiB reads "1 GiB" rounded), and
// by how much it exceeds the cap.
// The next batch's peak reserved with no cap fits the cap, yet its replay
// under the cap runs out of memory: the allocator refuses a request before
// the peak reaches the cap (PyTorch checks what it has reserved plus the
// request's whole size against the cap; with expandable segments, not only
// the pages the request would map). Not a need that fits.
bool refused_under_cap(const MaxBatchSetting& s, std::uint64_t capacity) {
    const rs::MaxBatchAnswer& a = s.answer;
    return a.largest && !a.reached_limit && !a.next_fits_without_headroom && a.peak_reserved_at_next <= capacity;
}

std::string peak_line(const MaxBatchSetting& s, std::uint64_t capacity, Unit unit, const std::string& knob, std::uint64_t step) {
    const rs::MaxBatchAnswer& a = s.answer;
    if (!a.largest) return "";
    std::string line = setting_name(s.point) + ": peak reserved " + format_bytes(a.peak_reserved_at_largest, unit) + " at " + knob + " " +
                       std::to_string(*a.largest) + (s.tightest_rank ? " (rank " + std::to_string(*s.tightest_rank) + ")" : "");
    if (a.reached_limit) return line;
    const std::uint64_t next = a.peak_reserved_at_next;
    const std::string batch = std::to_string(*a.largest + step);
    // A peak within the cap that still does not fit: the allocator could
    // not place a request under the cap (a segment it could not grow or
    // split), not a lack of bytes: said as such, not as a need that fits.
    if (refused_under_cap(s, capacity))
        return line + "; " + knob + " " + batch + " runs out of memory under the cap in the model, though its peak reserved with no cap, " +
               format_bytes(next, unit) + " (" + rs::group_digits(next) +
               " B), is within it: the allocator counts a request's whole size against the cap before it reserves";
    line += "; " + knob + " " + batch + " would need " + format_bytes(next, unit) + " (" + rs::group_digits(next) + " B";
    if (next > capacity) line += ", " + format_bytes(next - capacity, unit) + " more than the cap";
    return line + "; its peak reserved with no cap)";
}

// The headroom the answer keeps below the cap, and the next batch where
// only the headroom refused it.
std::string headroom_line(const MaxBatchRequest& q, const MaxBatchSearchResults& x, Unit unit) {
    std::string line = "headroom: " + format_bytes(q.headroom, unit) + " below the cap (the model's peak is not exact to the byte; --headroom SIZE)";
    const MaxBatchSetting* recorded = x.recorded();
    if (recorded != nullptr && recorded->answer.largest && recorded->answer.next_fits_without_headroom)
        line += "; " + x.knob + " " + std::to_string(*recorded->answer.largest + x.step) + " fits the model but within the headroom; confirm with --confirm";
    return line;
}

std::string recordings_line(const MaxBatchSearchResults& x) {
    std::vector<std::string> parts;
    bool scratch = false;
    for (const MaxBatchRecording& rec : x.recordings) {
        const std::string why = rec.recorded_here ? rs::run_reason_name(rec.why) + (rec.setting.empty() ? "" : " under " + rec.setting) + ", " : "";
        if (rec.ran_out_of_memory())
            parts.push_back(x.knob + " " + std::to_string(rec.batch) + (rec.file.empty() ? "" : " " + rec.file) + " (" + why + "ran out of memory: " +
                            std::to_string(rec.ooms) + " OOMs, left out of the model; the answer is below it)");
        else if (!rec.setting.empty())
            parts.push_back(x.knob + " " + std::to_string(rec.batch) + " (" + why + "ran without an OOM; a fact for that setting, not modelled)");
        else if (rec.recorded_here && rec.requests == 0)  // a repeat of a batch the model has, or a run it needed no refit for
            parts.push_back(x.knob + " " + std::to_string(rec.batch) + " (" + why + "ran without an OOM)");
        else
            parts.push_back(x.knob + " " + std::to_string(rec.batch) + " " + rec.file + (rec.ranks.size() > 1 ? " (and each rank's)" : "") + " (" + why +
                            rs::group_digits(rec.requests) + " requests)");
        scratch = scratch || !rec.kept;
    }
    const bool recorded_here = !x.recordings.empty() && x.recordings.front().recorded_here;
    return std::string(recorded_here ? "recorded by gpumem at " : "recordings: ") + join(parts, ", ") +
           (recorded_here && scratch ? "; removed after the answer (-o FILE keeps them)" : "");
}

// The refinement: what the first recordings answered, and where gpumem recorded again.
std::string refinement_line(const MaxBatchSearchResults& x) {
    if (!x.first_answer) return "";
    std::vector<std::string> near;
    for (const MaxBatchRecording& rec : x.recordings)
        if (rec.why == rs::RunReason::near_answer) near.push_back(std::to_string(rec.batch));
    const std::string first = "refined: the first recordings answered " + std::to_string(*x.first_answer);
    // The first run near it failed (the error says why), or no run was left.
    if (near.empty()) return first + "; no recording near it was made" + (x.budget_spent ? " (the run budget was spent)" : "");
    return first + "; recorded again near it at " + x.knob + " " + join(near, " and ") + ", the model fitted on the largest that ran without an OOM";
}

// The runs after the refinement (checks, bisection, below the answer,
// other settings), in the order they ran, and what each said.
std::string checks_line(const MaxBatchSearchResults& x) {
    std::vector<const MaxBatchRecording*> checks;
    for (const MaxBatchRecording& rec : x.recordings)
        if (rec.why == rs::RunReason::at_answer || rec.why == rs::RunReason::at_hopeful || rec.why == rs::RunReason::bisection ||
            rec.why == rs::RunReason::below_answer || rec.why == rs::RunReason::repeat || rec.why == rs::RunReason::above_answer)
            checks.push_back(&rec);
    std::stable_sort(checks.begin(), checks.end(), [](const MaxBatchRecording* a, const MaxBatchRecording* b) { return a->order < b->order; });
    std::vector<std::string> runs;
    runs.reserve(checks.size());
    for (const MaxBatchRecording* rec : checks) {
        std::vector<std::string> notes;
        if (rec->why == rs::RunReason::at_hopeful) notes.emplace_back("the hopeful answer");
        if (rec->why == rs::RunReason::bisection) notes.emplace_back("bisection");
        if (rec->why == rs::RunReason::below_answer) notes.emplace_back("below the answer");
        if (rec->why == rs::RunReason::repeat) notes.emplace_back("repeat");
        if (rec->why == rs::RunReason::above_answer) notes.push_back("the next " + x.knob);
        if (!rec->setting.empty()) notes.push_back("under " + rec->setting);
        std::string oom_ranks;
        if (rec->ran_out_of_memory() && rec->ranks.size() > 1) {
            std::vector<std::string> out;
            for (const MaxBatchRecording::Rank& k : rec->ranks)
                if (k.ooms > 0) out.push_back(std::to_string(k.rank));
            oom_ranks = " on rank " + join(out, ", ");
        }
        runs.push_back(std::to_string(rec->batch) + (notes.empty() ? "" : " (" + join(notes, ", ") + ")") +
                       (rec->ran_out_of_memory() ? " ran out of memory" + oom_ranks : " ran without an OOM"));
    }
    if (runs.empty()) return "";
    const std::string side = x.jobs > 1 ? ", up to " + std::to_string(x.jobs) + " side by side (" + x.jobs_limit + ")" : std::string();
    return "checked: real runs at the model's answer, in order" + side + ", the model refitted after each" + (x.jobs > 1 ? " step" : "") + ": " +
           join(runs, ", ");
}

// The bound every run rested on, where the hook held what NCCL may free
// late (RecordSettings::hold_late); empty where nothing was held.
std::string held_late_line(const MaxBatchSearchResults& x, Unit unit) {
    if (x.held_late.empty()) return "";
    std::string what = join(x.held_late, ", ");
    if (x.held_late == std::vector<std::string>{"ddp_first_buckets"}) what = "DDP's first gradient buckets";
    return "held: " + what + " (" + format_bytes(x.held_late_bytes, unit) +
           ") through the second step in every run, as late as NCCL's watchdog may free them: the answer holds however late it does";
}

// How the runs started: forked from the fork server, or fresh, and why.
std::string started_line(const MaxBatchSearchResults& x) {
    if (x.fork_server.empty()) return "";
    std::size_t runs = 0, forked = 0;
    for (const MaxBatchRecording& rec : x.recordings) {
        runs += rec.recorded_here ? 1 : 0;
        forked += rec.recorded_here && rec.forked ? 1 : 0;
    }
    if (forked == 0) return "started: every run fresh (fork server " + x.fork_server + ")";
    return "started: " + std::to_string(forked) + " of " + std::to_string(runs) +
           " runs forked from a process that imported the program's modules once (fork server " + x.fork_server + ")" +
           (forked < runs ? "; the others fresh" : "");
}

std::vector<std::string> model_lines(const MaxBatchSearchResults& x) {
    std::vector<std::string> lines;
    if (!x.checks) return lines;
    const rs::BatchModelChecks& c = *x.checks;
    const MaxBatchSetting* recorded = x.recorded();
    const std::string rank =
        recorded != nullptr && recorded->tightest_rank ? " (rank " + std::to_string(*recorded->tightest_rank) + "'s, the tightest)" : std::string();
    lines.push_back("model" + rank + ": " + rs::group_digits(c.requests) + " requests, " + rs::group_digits(c.aligned) + " aligned in every recording: " +
                    rs::group_digits(c.constant) + " constant, " + rs::group_digits(c.affine) + " affine" +
                    (c.quadratic ? ", " + rs::group_digits(c.quadratic) + " quadratic" : std::string()) + " in the " + x.knob +
                    (c.holds() ? "; it holds" : "; it does NOT hold: " + checks_summary(c, x.knob)));
    for (const rs::BatchModelChecks::Held& h : c.checked)
        lines.push_back("checked on the recording at " + x.knob + " " + std::to_string(h.batch) + ": " +
                        (h.exact ? std::string("rebuilt exactly") : "NOT rebuilt exactly, " + rs::group_digits(h.requests_off) + " requests off"));
    for (const rs::ModelMismatch& mm : c.mismatches) lines.push_back("  " + mm.what);
    return lines;
}

// ------------------------------------------------------------ document

struct SettingView {
    const MaxBatchSetting* s;
    std::uint64_t rank;
    const MaxBatchSearchResults* x;
    std::uint64_t cap;
};

Cell optional_u64(const std::optional<std::uint64_t>& v) { return v ? Cell(*v) : Cell(); }

constexpr Column<SettingView> kSettingColumns[] = {
    {{"rank", "#", FieldKind::integer}, [](const SettingView& v) { return u64(v.rank); }},
    {{"alloc_conf", "PYTORCH_CUDA_ALLOC_CONF", FieldKind::text, 2, ','},
     [](const SettingView& v) -> Cell { return (v.s->point.recorded ? "recorded: " : "") + setting_name(v.s->point); }, Shown::table_only},
    {{"alloc_conf", "", FieldKind::text}, [](const SettingView& v) -> Cell { return rs::alloc_conf(v.s->point.options); }, Shown::machine_only},
    {{"recorded", "", FieldKind::boolean}, [](const SettingView& v) -> Cell { return v.s->point.recorded; }, Shown::machine_only},
    {{"largest_batch", "largest", FieldKind::integer}, [](const SettingView& v) { return optional_u64(v.s->answer.largest); }},
    {{"largest_batch_hopeful", "hopeful", FieldKind::integer}, [](const SettingView& v) { return optional_u64(v.s->answer.largest_hopeful); }},
    // What backs the row's answer: "ran" (a real run under its setting at
    // that batch), "model only" (no run under it), "not confirmed".
    {{"answer_status", "answer", FieldKind::text}, [](const SettingView& v) -> Cell { return backing_name(backing_of(*v.s, *v.x)); }},
    {{"largest_batch_ran", "", FieldKind::integer},
     [](const SettingView& v) {
         const rs::SettingFacts f = v.x->facts_of(*v.s);
         return f.ran ? u64(f.ran) : Cell();
     },
     Shown::machine_only},
    {{"tightest_rank", "", FieldKind::integer},
     [](const SettingView& v) { return v.s->tightest_rank ? u64(*v.s->tightest_rank) : Cell(); }, Shown::machine_only},
    {{"reached_limit", "", FieldKind::boolean}, [](const SettingView& v) -> Cell { return v.s->answer.reached_limit; }, Shown::machine_only},
    {{"peak_reserved_at_largest", "peak there", FieldKind::bytes},
     [](const SettingView& v) { return v.s->answer.largest ? u64(v.s->answer.peak_reserved_at_largest) : Cell(); }},
    // What the next batch needs: its peak reserved with no cap, where that
    // exceeds the cap; null where its peak fits the cap yet the allocator
    // refuses a request under it (next_refused_under_cap), or at the limit.
    {{"needed_at_next", "next needs", FieldKind::bytes},
     [](const SettingView& v) {
         return v.s->answer.reached_limit || refused_under_cap(*v.s, v.cap) ? Cell() : u64(v.s->answer.peak_reserved_at_next);
     }},
    {{"next_peak_no_cap", "", FieldKind::bytes},
     [](const SettingView& v) { return v.s->answer.reached_limit ? Cell() : u64(v.s->answer.peak_reserved_at_next); }, Shown::machine_only},
    {{"next_refused_under_cap", "", FieldKind::boolean}, [](const SettingView& v) -> Cell { return refused_under_cap(*v.s, v.cap); },
     Shown::machine_only},
    {{"replays", "replays", FieldKind::integer}, [](const SettingView& v) { return u64(v.s->answer.replays); }},
    {{"next_fits_within_headroom", "", FieldKind::boolean},
     [](const SettingView& v) -> Cell { return v.s->answer.next_fits_without_headroom; }, Shown::machine_only},
};

std::vector<SettingView> setting_views(const MaxBatchSearchResults& x, std::uint64_t cap) {
    std::vector<SettingView> views;
    for (std::size_t i = 0; i < x.settings.size(); ++i) views.push_back({&x.settings[i], i + 1, &x, cap});
    return views;
}

constexpr Column<MaxBatchRecording::Rank> kRankColumns[] = {
    {{"rank", "", FieldKind::integer}, [](const MaxBatchRecording::Rank& k) { return u64(k.rank); }},
    {{"file", "", FieldKind::text}, [](const MaxBatchRecording::Rank& k) -> Cell { return k.file; }},
    {{"ooms", "", FieldKind::integer}, [](const MaxBatchRecording::Rank& k) { return u64(k.ooms); }},
    {{"requests", "", FieldKind::integer}, [](const MaxBatchRecording::Rank& k) { return u64(k.requests); }},
};
constexpr auto rank_schema = nested_schema<kRankColumns>;

constexpr Column<MaxBatchRecording> kRecordingColumns[] = {
    {{"batch", "", FieldKind::integer}, [](const MaxBatchRecording& r) { return u64(r.batch); }},
    {{"file", "", FieldKind::text}, [](const MaxBatchRecording& r) -> Cell { return r.file; }},
    {{"recorded_by_gpumem", "", FieldKind::boolean}, [](const MaxBatchRecording& r) -> Cell { return r.recorded_here; }},
    {{"kept", "", FieldKind::boolean}, [](const MaxBatchRecording& r) -> Cell { return r.kept; }},
    {{"requests", "", FieldKind::integer}, [](const MaxBatchRecording& r) { return u64(r.requests); }},
    {{"wall_seconds", "", FieldKind::real}, [](const MaxBatchRecording& r) -> Cell { return r.wall_seconds; }},
    {{"started_seconds", "", FieldKind::real}, [](const MaxBatchRecording& r) -> Cell { return r.recorded_here ? Cell(r.started_seconds) : Cell(); }},
    // The run was forked from the fork server (not started fresh).
    {{"forked", "", FieldKind::boolean}, [](const MaxBatchRecording& r) { return r.recorded_here ? Cell(r.forked) : Cell(); }},
    {{"why", "", FieldKind::text}, [](const MaxBatchRecording& r) -> Cell { return std::string(rs::run_reason_name(r.why)); }},
    {{"order", "", FieldKind::integer}, [](const MaxBatchRecording& r) { return r.order ? u64(r.order) : Cell(); }},
    {{"ran_out_of_memory", "", FieldKind::boolean}, [](const MaxBatchRecording& r) -> Cell { return r.ran_out_of_memory(); }},
    {{"ooms", "", FieldKind::integer}, [](const MaxBatchRecording& r) { return u64(r.ooms); }},
    // The setting gpumem gave the run (another row of the grid); null: the recorded one.
    {{"alloc_conf", "", FieldKind::text}, [](const MaxBatchRecording& r) { return r.setting.empty() ? Cell() : Cell(r.setting); }},
    // Several ranks: each rank's file and OOMs.
    {{"ranks", "", FieldKind::records},
     [](const MaxBatchRecording& r) { return r.ranks.empty() ? Cell() : records_cell(make_records(Columns<MaxBatchRecording::Rank>(kRankColumns), r.ranks)); },
     Shown::always, true, rank_schema},
};
constexpr auto recording_schema = nested_schema<kRecordingColumns>;

// The runs made at one batch under one setting: how many, how many ran.
struct TallyView {
    rs::BatchTally t;
    std::string setting;  // "" the recorded one
};

constexpr Column<TallyView> kTallyColumns[] = {
    {{"batch", "", FieldKind::integer}, [](const TallyView& v) { return u64(v.t.batch); }},
    {{"alloc_conf", "", FieldKind::text}, [](const TallyView& v) { return v.setting.empty() ? Cell() : Cell(v.setting); }},
    {{"runs", "", FieldKind::integer}, [](const TallyView& v) { return u64(v.t.runs); }},
    {{"ran", "", FieldKind::integer}, [](const TallyView& v) { return u64(v.t.passes); }},
    {{"out_of_memory", "", FieldKind::integer}, [](const TallyView& v) { return u64(v.t.ooms); }},
    {{"varies", "", FieldKind::boolean}, [](const TallyView& v) -> Cell { return v.t.varies(); }},
};
constexpr auto tally_schema = nested_schema<kTallyColumns>;

// Every batch run, by setting (the recorded one first), ascending.
std::vector<TallyView> tally_views(const MaxBatchSearchResults& x) {
    std::vector<std::string> settings{""};
    for (const MaxBatchRecording& rec : x.recordings)
        if (std::find(settings.begin(), settings.end(), rec.setting) == settings.end()) settings.push_back(rec.setting);
    std::vector<TallyView> views;
    for (const std::string& setting : settings)
        for (const rs::BatchTally& t : x.facts(setting, std::nullopt).tallies)
            if (t.runs > 0) views.push_back({t, setting});
    return views;
}

constexpr Column<rs::ModelMismatch> kMismatchColumns[] = {
    {{"what", "", FieldKind::text}, [](const rs::ModelMismatch& m) -> Cell { return m.what; }},
    {{"bytes_at_largest", "", FieldKind::bytes}, [](const rs::ModelMismatch& m) { return u64(m.bytes_at_largest); }},
};
constexpr auto mismatch_schema = nested_schema<kMismatchColumns>;

constexpr Column<rs::BatchModelChecks::Held> kHeldColumns[] = {
    {{"batch", "", FieldKind::integer}, [](const rs::BatchModelChecks::Held& h) { return u64(h.batch); }},
    {{"exact", "", FieldKind::boolean}, [](const rs::BatchModelChecks::Held& h) -> Cell { return h.exact; }},
    {{"requests_off", "", FieldKind::integer}, [](const rs::BatchModelChecks::Held& h) { return u64(h.requests_off); }},
};
constexpr auto held_schema = nested_schema<kHeldColumns>;

constexpr Column<rs::BatchModelChecks> kChecksColumns[] = {
    {{"requests", "", FieldKind::integer}, [](const rs::BatchModelChecks& c) { return u64(c.requests); }},
    {{"aligned", "", FieldKind::integer}, [](const rs::BatchModelChecks& c) { return u64(c.aligned); }},
    {{"constant", "", FieldKind::integer}, [](const rs::BatchModelChecks& c) { return u64(c.constant); }},
    {{"affine", "", FieldKind::integer}, [](const rs::BatchModelChecks& c) { return u64(c.affine); }},
    {{"quadratic", "", FieldKind::integer}, [](const rs::BatchModelChecks& c) { return u64(c.quadratic); }},
    {{"not_affine", "", FieldKind::integer}, [](const rs::BatchModelChecks& c) { return u64(c.not_affine); }},
    {{"unaligned", "", FieldKind::integer}, [](const rs::BatchModelChecks& c) { return u64(c.unaligned); }},
    {{"vanished", "", FieldKind::integer}, [](const rs::BatchModelChecks& c) { return u64(c.vanished); }},
    {{"granule", "", FieldKind::bytes}, [](const rs::BatchModelChecks& c) { return u64(c.granule); }},
    {{"holds", "", FieldKind::boolean}, [](const rs::BatchModelChecks& c) -> Cell { return c.holds(); }},
    {{"mismatches", "", FieldKind::records},
     [](const rs::BatchModelChecks& c) { return records_cell(make_records(Columns<rs::ModelMismatch>(kMismatchColumns), c.mismatches)); },
     Shown::always, false, mismatch_schema},
    {{"checked", "", FieldKind::records},
     [](const rs::BatchModelChecks& c) { return records_cell(make_records(Columns<rs::BatchModelChecks::Held>(kHeldColumns), c.checked)); },
     Shown::always, false, held_schema},
};
constexpr auto checks_schema = nested_schema<kChecksColumns>;

Cell real_cell(const MaxBatchConfirmRun& c, std::uint64_t RunFigures::*field) { return c.real ? u64((*c.real).*field) : Cell(); }

constexpr Column<MaxBatchConfirmRun> kConfirmColumns[] = {
    {{"batch", "batch", FieldKind::integer}, [](const MaxBatchConfirmRun& c) { return u64(c.batch); }},
    {{"expect_oom", "OOM expected", FieldKind::boolean}, [](const MaxBatchConfirmRun& c) -> Cell { return c.expect_oom; }},
    {{"real_ooms", "real OOMs", FieldKind::integer}, [](const MaxBatchConfirmRun& c) { return real_cell(c, &RunFigures::ooms); }},
    {{"real_peak_reserved", "real peak", FieldKind::bytes}, [](const MaxBatchConfirmRun& c) { return real_cell(c, &RunFigures::peak_reserved); }},
    {{"exit_status", "exit", FieldKind::integer}, [](const MaxBatchConfirmRun& c) -> Cell { return std::int64_t{c.exit_status}; }},
    {{"wall_seconds", "wall s", FieldKind::real, 1}, [](const MaxBatchConfirmRun& c) -> Cell { return c.wall_seconds; }},
    {{"held", "held", FieldKind::boolean}, [](const MaxBatchConfirmRun& c) -> Cell { return c.held; }},
    {{"alloc_conf", "setting", FieldKind::text}, [](const MaxBatchConfirmRun& c) { return c.setting.empty() ? Cell() : Cell(c.setting); }},
    // The search ran this batch under this setting already: its run, not a new one.
    {{"reused", "", FieldKind::boolean}, [](const MaxBatchConfirmRun& c) -> Cell { return c.reused; }, Shown::machine_only},
    {{"note", "", FieldKind::text}, [](const MaxBatchConfirmRun& c) { return c.note.empty() ? Cell() : Cell(c.note); }, Shown::machine_only},
};
constexpr auto confirm_run_schema = nested_schema<kConfirmColumns>;

struct Doc {
    const MaxBatchRequest& q;
    const MaxBatchResults& r;
    const MaxBatchSearchResults& x() const { return *r.search; }
    const MaxBatchSetting* recorded() const { return x().recorded(); }
    const MaxBatchSetting* best() const { return x().best(); }
};

Cell recorded_answer(const Doc& d, std::optional<std::uint64_t> rs::MaxBatchAnswer::*field) {
    return d.recorded() ? optional_u64(d.recorded()->answer.*field) : Cell();
}

std::string confirm_answer(const MaxBatchSearchResults& x) {
    if (x.confirm_interrupted) return "--confirm was interrupted";
    if (x.confirm_runs.empty()) return "--confirm ran nothing: no answer to confirm";
    std::vector<std::string> parts;
    // What happened, then whether it was what the model expected.
    for (const MaxBatchConfirmRun& c : x.confirm_runs) {
        if (!c.real) {
            parts.push_back(x.knob + " " + std::to_string(c.batch) + ": unknown (" + c.note + ")");
            continue;
        }
        const bool ran_out = c.held ? c.expect_oom : !c.expect_oom;
        parts.push_back(x.knob + " " + std::to_string(c.batch) + (c.setting.empty() ? "" : " under " + c.setting) +
                        (c.reused ? " (the search's run)" : "") + (ran_out ? " ran out of memory" : " ran without an OOM") +
                        (c.held ? ", as expected" : c.expect_oom ? ", where an OOM was expected" : ", where none was expected"));
    }
    return std::string(x.confirmed() ? "the model's answer confirmed by real runs: " : "the model's answer NOT confirmed by real runs: ") + join(parts, "; ");
}

// The confirmed answer beside the model's: "confirmed: 131 (the model said
// 132; a real run at 132 ran out of memory)".
std::string confirmed_text(const MaxBatchSearchResults& x) {
    const MaxBatchSetting* recorded = x.recorded();
    const std::optional<std::uint64_t> model = recorded != nullptr ? recorded->answer.largest : std::nullopt;
    const std::string said = model ? "the model said " + std::to_string(*model) : "the model found no " + x.knob + " that fits";
    std::vector<std::string> out;
    for (const MaxBatchConfirmRun& c : x.confirm_runs)
        if (c.setting.empty() && c.real && c.real->ooms > 0 && !c.expect_oom) out.push_back(std::to_string(c.batch));
    const std::string ran_out = out.empty() ? "" : "; a real run at " + join(out, ", ") + " ran out of memory";
    if (!x.confirmed_batch) return "confirmed: none (" + said + ran_out + ")";
    if (model && *x.confirmed_batch == *model) return "confirmed: " + std::to_string(*model) + " (as the model said)";
    if (model && *x.confirmed_batch == *model + x.step)
        return "confirmed: " + std::to_string(*x.confirmed_batch) + " at least (" + said + "; a real run at " + std::to_string(*x.confirmed_batch) +
               " fitted too)";
    return "confirmed: " + std::to_string(*x.confirmed_batch) + " (" + said + ran_out + ")";
}

constexpr Column<Doc> kConfirmSummaryColumns[] = {
    {{"confirmed_batch", "", FieldKind::integer}, [](const Doc& d) { return optional_u64(d.x().confirmed_batch); }},
    {{"model_batch", "", FieldKind::integer}, [](const Doc& d) { return recorded_answer(d, &rs::MaxBatchAnswer::largest); }},
    {{"text", "", FieldKind::text}, [](const Doc& d) -> Cell { return confirmed_text(d.x()); }},
};
constexpr auto confirm_summary_schema = nested_schema<kConfirmSummaryColumns>;

constexpr Column<Doc> kMaxBatchColumns[] = {
    // Null until searched (a recording run that failed).
    {{"answer", "", FieldKind::text},
     [](const Doc& d) { return d.x().settings.empty() ? Cell() : Cell(max_batch_answer_text(d.q, d.r, Unit::automatic)); }},
    // The knob searched ({batch}, {seq}, any {NAME}); every *batch* key holds its values.
    {{"knob", "", FieldKind::text}, [](const Doc& d) -> Cell { return d.q.knob; }},
    // --multiple-of N: only multiples of it were searched and run (1: every value).
    {{"multiple_of", "", FieldKind::integer}, [](const Doc& d) { return u64(d.q.multiple_of); }},
    {{"capacity_bytes", "", FieldKind::bytes}, [](const Doc& d) { return u64(d.q.setup.capacity); }},
    {{"headroom_bytes", "", FieldKind::bytes}, [](const Doc& d) { return u64(d.q.headroom); }},
    // The recorded setting's next batch fits the model under the cap, refused only by the headroom.
    {{"next_fits_within_headroom", "", FieldKind::boolean},
     [](const Doc& d) { return d.recorded() ? Cell(d.recorded()->answer.next_fits_without_headroom) : Cell(); }},
    // The answer: a batch that ran ("ran"), the model's alone ("model
    // only"), or null where runs were made but none at the answer ("not
    // confirmed": the range is largest_batch_ran to oom_batch).
    {{"answer_status", "", FieldKind::text},
     [](const Doc& d) { return d.recorded() ? Cell(backing_name(backing_of(*d.recorded(), d.x()))) : Cell(); }},
    {{"largest_batch", "", FieldKind::integer},
     [](const Doc& d) {
         if (!d.recorded()) return Cell();
         const Backing b = backing_of(*d.recorded(), d.x());
         return b == Backing::not_confirmed ? Cell() : recorded_answer(d, &rs::MaxBatchAnswer::largest);
     }},
    // The model's answer whatever the runs say; where it does not hold, the
    // cautious bound (and the hopeful one beside it).
    {{"largest_batch_model", "", FieldKind::integer}, [](const Doc& d) { return recorded_answer(d, &rs::MaxBatchAnswer::largest); }},
    // The largest batch that ran without an OOM under the recorded setting.
    {{"largest_batch_ran", "", FieldKind::integer},
     [](const Doc& d) {
         const rs::SettingFacts f = d.x().facts("", std::nullopt);
         return f.ran ? u64(f.ran) : Cell();
     }},
    // Memory not monotone in the batch: batches below the answer that ran
    // out of memory, and the largest batch at or below which none did.
    {{"oom_below", "", FieldKind::list},
     [](const Doc& d) { return d.recorded() ? Cell(d.x().facts_of(*d.recorded()).oom_below) : Cell(); }},
    {{"largest_batch_all_below_run", "", FieldKind::integer},
     [](const Doc& d) {
         if (!d.recorded()) return Cell();
         const rs::SettingFacts f = d.x().facts_of(*d.recorded());
         return f.answer_ran ? u64(f.all_below_ran) : Cell();
     }},
    {{"largest_batch_ran_below_oom", "", FieldKind::integer},
     [](const Doc& d) {
         if (!d.recorded()) return Cell();
         const rs::SettingFacts f = d.x().facts_of(*d.recorded());
         return f.answer_ran && f.ran_below_oom ? u64(f.ran_below_oom) : Cell();
     }},
    {{"runs", "", FieldKind::integer}, [](const Doc& d) { return u64(d.x().runs()); }},
    {{"max_runs", "", FieldKind::integer}, [](const Doc& d) { return d.q.program.empty() ? Cell() : u64(d.x().max_runs); }},
    // The runs an answer needs, all without an OOM, and whether the budget cut them.
    {{"repeats", "", FieldKind::integer}, [](const Doc& d) { return d.q.program.empty() ? Cell() : u64(d.x().repeats); }},
    {{"repeats_cut", "", FieldKind::boolean}, [](const Doc& d) -> Cell { return d.x().repeats_cut; }},
    // Batches of the recorded setting whose runs disagreed; why timing may
    // matter here, as the recordings show it; the room the answer then left.
    {{"varies", "", FieldKind::list}, [](const Doc& d) { return Cell(d.x().facts("", std::nullopt).varies); }},
    {{"timing", "", FieldKind::list}, [](const Doc& d) { return Cell(d.x().timing); }},
    {{"variance_margin_bytes", "", FieldKind::bytes}, [](const Doc& d) { return u64(d.x().variance_margin); }},
    // What every run held as late as NCCL may free it: the bound the answer rests on.
    {{"held_late", "", FieldKind::list}, [](const Doc& d) { return Cell(d.x().held_late); }},
    {{"held_late_bytes", "", FieldKind::bytes}, [](const Doc& d) { return u64(d.x().held_late_bytes); }},
    {{"batches", "", FieldKind::records},
     [](const Doc& d) { return records_cell(make_records(Columns<TallyView>(kTallyColumns), tally_views(d.x()))); }, Shown::always, false,
     tally_schema},
    // The most runs that went at once, and what held it there.
    {{"jobs", "", FieldKind::integer}, [](const Doc& d) { return d.q.program.empty() ? Cell() : u64(d.x().jobs); }},
    {{"jobs_limit", "", FieldKind::text}, [](const Doc& d) { return d.x().jobs_limit.empty() ? Cell() : Cell(d.x().jobs_limit); }},
    // Where the fork server stood at the end; null: the program is not `python SCRIPT`.
    {{"fork_server", "", FieldKind::text}, [](const Doc& d) { return d.x().fork_server.empty() ? Cell() : Cell(d.x().fork_server); }},
    {{"budget_spent", "", FieldKind::boolean}, [](const Doc& d) -> Cell { return d.x().budget_spent; }},
    {{"below_answer_cut", "", FieldKind::boolean}, [](const Doc& d) -> Cell { return d.x().below_cut; }},
    // A program of several ranks: the ranks modelled, and the one that answers.
    {{"ranks", "", FieldKind::list},
     [](const Doc& d) {
         std::vector<std::uint64_t> ranks(d.x().ranks.begin(), d.x().ranks.end());
         return ranks.empty() ? Cell() : Cell(ranks);
     }},
    {{"tightest_rank", "", FieldKind::integer},
     [](const Doc& d) { return d.recorded() && d.recorded()->tightest_rank ? u64(*d.recorded()->tightest_rank) : Cell(); }},
    {{"largest_batch_hopeful", "", FieldKind::integer}, [](const Doc& d) { return recorded_answer(d, &rs::MaxBatchAnswer::largest_hopeful); }},
    {{"model_holds", "", FieldKind::boolean}, [](const Doc& d) -> Cell { return d.x().model_holds(); }},
    // The recorded setting's answer ran for real without an OOM (a check, or a recording at that batch).
    {{"answer_ran", "", FieldKind::boolean},
     [](const Doc& d) -> Cell { return d.recorded() && d.recorded()->answer.largest ? Cell(d.x().facts_of(*d.recorded()).answer_ran) : Cell(); }},
    {{"best_alloc_conf", "", FieldKind::text}, [](const Doc& d) { return d.best() ? Cell(rs::alloc_conf(d.best()->point.options)) : Cell(); }},
    {{"best_largest_batch", "", FieldKind::integer},
     [](const Doc& d) { return d.best() ? optional_u64(d.best()->answer.largest) : Cell(); }},
    {{"best_answer_status", "", FieldKind::text},
     [](const Doc& d) { return d.best() ? Cell(backing_name(backing_of(*d.best(), d.x()))) : Cell(); }},
    {{"recordings", "", FieldKind::records},
     [](const Doc& d) { return records_cell(make_records(Columns<MaxBatchRecording>(kRecordingColumns), d.x().recordings)); }, Shown::always,
     false, recording_schema},
    // The end-to-end form's first answer, where it recorded again near it.
    {{"first_answer", "", FieldKind::integer}, [](const Doc& d) { return optional_u64(d.x().first_answer); }},
    // The smallest batch that ran out of memory when recorded: every answer is below it.
    {{"oom_batch", "", FieldKind::integer}, [](const Doc& d) { return optional_u64(d.x().oom_batch); }},
    // Values above every one that ran where the program failed otherwise than by an OOM: the search stayed below.
    {{"failed_above", "", FieldKind::list}, [](const Doc& d) { return Cell(d.x().failed_above); }},
    {{"checks", "", FieldKind::record},
     [](const Doc& d) { return d.x().checks ? record_cell(make_record(Columns<rs::BatchModelChecks>(kChecksColumns), *d.x().checks)) : Cell(); },
     Shown::always, false, checks_schema},
    {{"search_seconds", "", FieldKind::real}, [](const Doc& d) -> Cell { return d.x().search_seconds; }},
    {{"fit_seconds", "", FieldKind::real}, [](const Doc& d) -> Cell { return d.x().fit_seconds; }},
    // With --confirm only.
    {{"confirm_runs", "", FieldKind::records},
     [](const Doc& d) {
         return d.q.confirm ? records_cell(make_records(Columns<MaxBatchConfirmRun>(kConfirmColumns), d.x().confirm_runs)) : Cell();
     },
     Shown::always, true, confirm_run_schema},
    {{"confirmed", "", FieldKind::boolean}, [](const Doc& d) { return d.q.confirm ? Cell(d.x().confirmed()) : Cell(); }, Shown::always,
     true},
    {{"confirm_answer", "", FieldKind::text}, [](const Doc& d) { return d.q.confirm ? Cell(confirm_answer(d.x())) : Cell(); },
     Shown::always, true},
    {{"confirm", "", FieldKind::record},
     [](const Doc& d) { return d.q.confirm ? record_cell(make_record(Columns<Doc>(kConfirmSummaryColumns), d)) : Cell(); },
     Shown::always, true, confirm_summary_schema},
};

}  // namespace

std::string max_batch_answer_text(const MaxBatchRequest& q, const MaxBatchResults& r, Unit unit) {
    const MaxBatchSearchResults& x = *r.search;
    const MaxBatchSetting* recorded = x.recorded();
    const MaxBatchSetting* best = x.best();
    if (recorded == nullptr) return "no answer: nothing was searched";
    const unsigned max_runs = x.max_runs;
    const Backing backing = backing_of(*recorded, x);
    const std::string ranks = x.ranks.size() > 1 ? " on each of " + std::to_string(x.ranks.size()) + " ranks" : std::string();
    const std::string multiple = x.step > 1 ? " (a multiple of " + std::to_string(x.step) + ")" : std::string();
    std::string text = knob_superlative(x.knob) + multiple + " that fits in " + format_bytes(q.setup.capacity, unit) + ranks +
                       (backing == Backing::model_only ? ", model only: " : ": ") + batch_text(*recorded, x, max_runs);
    if (recorded->tightest_rank) text += "; the tightest is rank " + std::to_string(*recorded->tightest_rank);
    if (best != nullptr && best != recorded && best->answer.largest.value_or(0) > recorded->answer.largest.value_or(0))
        text += "; with " + setting_name(best->point) + (backing_of(*best, x) == Backing::model_only ? ", model only: " : ": ") +
                batch_text(*best, x, max_runs);
    if (!x.model_holds() && x.checks && backing != Backing::ran)
        text += "; the model does not hold (" + checks_summary(*x.checks, x.knob) + "): record at more " + knob_values(x.knob) + ", or nearer the " + x.knob + " you want";
    return text;
}

namespace {

Cell max_batch_cell(const MaxBatchRequest& q, const MaxBatchResults& r) {
    if (!r.search) return Cell();
    return record_cell(make_record(Columns<Doc>(kMaxBatchColumns), Doc{q, r}));
}

Report max_batch_document(const MaxBatchRequest& q, const MaxBatchResults& r, const OutputOptions& output) {
    Report report = job_report("reuse-sim max-batch", q.warnings, r.warnings);
    if (!r.search) return report;  // the search never began
    const MaxBatchSearchResults& x = *r.search;
    Record fields;
    fields.add(Field{"max_batch", "", FieldKind::record}, max_batch_cell(q, r));
    report.fields = std::move(fields);
    report.tables.push_back(make_table("max_batch_settings", Columns<SettingView>(kSettingColumns), setting_views(x, q.setup.capacity), output.format));
    // A narrow terminal keeps the answer and its peak (--wide and --json the rest).
    report.tables.back().drop_order = {"replays", "largest_batch_hopeful", "needed_at_next"};
    if (output.format != Format::table) return report;
    const Unit unit = output.unit;
    std::vector<std::string>& before = report.text_before;
    if (x.settings.empty()) {
        before.push_back(recordings_line(x));
        for (std::string& line : model_lines(x)) before.push_back(std::move(line));
        return report;
    }
    before.push_back(max_batch_answer_text(q, r, unit));
    const MaxBatchSetting* recorded = x.recorded();
    if (recorded != nullptr && recorded->answer.largest) before.push_back(peak_line(*recorded, q.setup.capacity, unit, x.knob, x.step));
    if (q.headroom > 0) before.push_back(headroom_line(q, x, unit));
    if (x.best() != recorded && x.best()->answer.largest) before.push_back(peak_line(*x.best(), q.setup.capacity, unit, x.knob, x.step));
    if (std::string line = held_late_line(x, unit); !line.empty()) before.push_back(std::move(line));
    before.emplace_back();
    before.push_back(recordings_line(x));
    if (x.first_answer) before.push_back(refinement_line(x));
    if (std::string line = checks_line(x); !line.empty()) before.push_back(std::move(line));
    if (std::string line = started_line(x); !line.empty()) before.push_back(std::move(line));
    for (std::string& line : model_lines(x)) before.push_back(std::move(line));
    before.push_back("searched " + std::to_string(x.settings.size()) + " settings in " + format_decimal(x.search_seconds, 3) + " s:");
    // Where the model does not hold, each row's answer is the cautious bound.
    if (!x.model_holds()) before.back() += " (largest: the cautious trace's; hopeful: the trace without the requests it could not follow)";
    if (!q.confirm) return report;
    report.tables.push_back(make_table("max_batch_confirm", Columns<MaxBatchConfirmRun>(kConfirmColumns), x.confirm_runs, output.format));
    report.tables.back().drop_order = {"held", "wall_seconds", "exit_status"};
    report.text_after.emplace_back();
    report.text_after.push_back(confirm_answer(x));
    report.text_after.push_back(confirmed_text(x));
    return report;
}

}  // namespace

Report max_batch_report(const MaxBatchRequest& q, const MaxBatchResults& r, const OutputOptions& output) {
    return with_picture(max_batch_document(q, r, output), q.plot, [&] { return max_batch_plot(q, r); });
}

DocumentSchema max_batch_document_schema() {
    FieldSchemaSet fields;
    // Its document holds this key alone, once the search began.
    fields.fields.push_back({Field{"max_batch", "", FieldKind::record}, true, nested_schema<kMaxBatchColumns>});
    return {"reuse-sim max-batch", {{"max_batch_settings", Columns<SettingView>(kSettingColumns).schema()}}, fields};
}

}  // namespace gpumem::cli
