#include "reuse_sim/batch_model.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "base/errors.hpp"
#include "base/sizes.hpp"
#include "reuse_sim/tuner.hpp"
#include "reuse_sim/work_pool.hpp"

namespace gpumem::reuse_sim {
namespace {

using Wide = __int128;  // products of sizes (< 2^62) and batches (< 2^64) without overflow

constexpr std::uint32_t kNone = 0xffffffffU;
constexpr std::size_t kMaxMismatches = 20;
// The most requests the fewest-edits alignment leaves unaligned before it
// gives way to a greedy one: its rows take (D + 1)^2 words, 32 MB at 2,000.
constexpr std::int64_t kMaxEdits = 2000;

bool is_request(EventKind kind) noexcept { return kind == EventKind::alloc || kind == EventKind::oom; }

// One request of a recording: what aligns it, and where it is.
struct RecordedRequest {
    EventKind kind = EventKind::alloc;
    std::uint32_t pool = 0;
    std::uint64_t stream = 0;
    std::uint64_t size = 0;
    bool same_place(const RecordedRequest& o) const noexcept { return kind == o.kind && stream == o.stream && pool == o.pool; }
};

// A recording's requests, and for each event the request it makes or frees.
struct Indexed {
    std::vector<RecordedRequest> requests;
    std::vector<std::uint32_t> request_of;  // per event; kNone for events that are neither
};

Indexed index_recording(const std::vector<Event>& events) {
    Indexed x;
    x.request_of.assign(events.size(), kNone);
    std::unordered_map<std::uint64_t, std::uint32_t> live;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const Event& e = events[i];
        if (is_request(e.kind)) {
            const auto r = static_cast<std::uint32_t>(x.requests.size());
            x.requests.push_back(RecordedRequest{e.kind, e.pool, e.stream, e.size});
            x.request_of[i] = r;
            if (e.kind == EventKind::alloc) live[e.id] = r;
        } else if (e.kind == EventKind::free) {
            const auto it = live.find(e.id);
            if (it == live.end()) continue;  // the replay names it
            x.request_of[i] = it->second;
            live.erase(it);
        }
    }
    return x;
}

// ------------------------------------------------------------------ alignment

// Whether `x` (at bx) and `l` (at bl > bx) can be one request: the same
// kind, stream and pool, and a size that does not shrink as the batch grows
// and grows at most as the square of the batch (in proportion for
// base + slope * B with both >= 0; faster for a negative base, or a size
// that is not affine, which the model then names), a granule of rounding
// either way. A library's workspace many times larger fails it, and is left
// unaligned rather than taken for an activation.
bool plausible(const RecordedRequest& x, const RecordedRequest& l, std::uint64_t bx, std::uint64_t bl, std::uint64_t granule) noexcept {
    if (!x.same_place(l)) return false;
    if (x.size > l.size + granule) return false;
    return static_cast<Wide>(l.size) * bx * bx <= static_cast<Wide>(x.size + granule) * bl * bl;
}

// The fewest requests left unaligned (Myers' O((N + M) D) diff, D the
// number left unaligned), where a plausible pair may align: the recordings
// of one program differ in a few requests (a library's workspace, a branch
// taken from some batch on), so D is small and this is linear in practice.
// Sizes of different requests coincide across batches (an activation twice
// as wide at half the batch), so equality alone would anchor wrong pairs.
// None when more than `max_unaligned` would be needed, or the work passes
// a budget linear in the input.
std::optional<std::vector<std::uint32_t>> align_fewest_edits(const std::vector<RecordedRequest>& x, const std::vector<RecordedRequest>& l,
                                                             std::uint64_t bx, std::uint64_t bl, std::uint64_t granule,
                                                             std::int64_t max_unaligned) {
    const auto n = static_cast<std::int64_t>(x.size()), m = static_cast<std::int64_t>(l.size());
    const std::int64_t most = std::min<std::int64_t>(n + m, max_unaligned);
    auto match = [&](std::int64_t i, std::int64_t j) {
        return plausible(x[static_cast<std::size_t>(i)], l[static_cast<std::size_t>(j)], bx, bl, granule);
    };
    // rows[d][k + d]: the furthest x reached on diagonal k (x - y) with d
    // requests left unaligned; -1 where no path inside the grid reaches it.
    std::vector<std::vector<std::int64_t>> rows;
    // The edit into diagonal k in round d (d > 0): down (an extra of l)
    // from k + 1, or right (a request of x gone) from k - 1, whichever
    // reaches further inside the grid; false when neither does.
    struct Step {
        bool down;
        std::int64_t i;
    };
    auto step = [&](std::int64_t d, std::int64_t k, Step& out) {
        const std::vector<std::int64_t>& before = rows[static_cast<std::size_t>(d - 1)];
        bool found = false;
        if (k + 1 <= d - 1) {
            const std::int64_t i = before[static_cast<std::size_t>(k + 1 + d - 1)];
            if (i >= 0 && i - k <= m) {
                out = {true, i};
                found = true;
            }
        }
        if (k - 1 >= -(d - 1)) {
            const std::int64_t from = before[static_cast<std::size_t>(k - 1 + d - 1)];
            if (from >= 0 && from + 1 <= n && (!found || from + 1 > out.i)) {
                out = {false, from + 1};
                found = true;
            }
        }
        return found;
    };
    // Work beyond a few passes over the input means many unaligned requests
    // on diagonals that run long (repeated steps shifted against each
    // other): the greedy diff is then the faster.
    std::int64_t budget = 32 * (n + m) + 4 * most * most;
    std::int64_t last = -1;
    for (std::int64_t d = 0; d <= most && last < 0; ++d) {
        std::vector<std::int64_t> row(static_cast<std::size_t>(2 * d + 1), -1);
        for (std::int64_t k = -d; k <= d; k += 2) {
            Step st{false, 0};
            if (d > 0 && !step(d, k, st)) continue;
            std::int64_t i = st.i, j = st.i - k;
            const std::int64_t from = i;
            while (i < n && j < m && match(i, j)) {
                ++i;
                ++j;
            }
            budget -= i - from + 1;
            if (budget < 0) return std::nullopt;
            row[static_cast<std::size_t>(k + d)] = i;
            if (i == n && j == m) last = d;
        }
        rows.push_back(std::move(row));
    }
    if (last < 0) return std::nullopt;
    std::vector<std::uint32_t> partner(l.size(), kNone);
    std::int64_t i = n, j = m;
    for (std::int64_t d = last; d >= 0; --d) {
        const std::int64_t k = i - j;
        Step st{false, 0};
        if (d > 0) step(d, k, st);
        const std::int64_t start_i = st.i, start_j = st.i - k;  // where this round's run of pairs began
        while (i > start_i && j > start_j) {
            --i;
            --j;
            partner[static_cast<std::size_t>(j)] = static_cast<std::uint32_t>(i);
        }
        // Back over the edit to the previous round's point.
        if (d == 0) break;
        if (st.down) --j;
        else --i;
    }
    return partner;
}

// Past the fewest-edits diff's limits: a greedy diff that pairs plausible
// requests in order and, at a request that does not pair, skips the fewest
// requests (first of the larger recording: extras are the likelier) after
// which the most requests pair in a row, up to kResyncRun, within
// kResyncWindow on either side; where none pairs, both requests stay
// unaligned. Linear in the input times the window's square at each
// difference: differences are local (a workspace in each step), which this
// finds, one at a time.
constexpr std::size_t kResyncWindow = 64, kResyncRun = 8;

std::vector<std::uint32_t> align_greedy(const std::vector<RecordedRequest>& x, const std::vector<RecordedRequest>& l, std::uint64_t bx,
                                        std::uint64_t bl, std::uint64_t granule) {
    const std::size_t n = x.size(), m = l.size();
    std::vector<std::uint32_t> partner(m, kNone);
    auto match = [&](std::size_t i, std::size_t j) { return plausible(x[i], l[j], bx, bl, granule); };
    // How many requests from (i, j) pair in a row, up to kResyncRun.
    auto run_from = [&](std::size_t i, std::size_t j) {
        std::size_t t = 0;
        while (t < kResyncRun && i + t < n && j + t < m && match(i + t, j + t)) ++t;
        return t;
    };
    std::size_t i = 0, j = 0;
    while (i < n && j < m) {
        if (match(i, j)) {
            partner[j++] = static_cast<std::uint32_t>(i++);
            continue;
        }
        std::size_t best_run = 0, best_x = 1, best_l = 1;
        for (std::size_t skipped = 1; skipped <= 2 * kResyncWindow && best_run < kResyncRun; ++skipped)
            for (std::size_t in_x = 0; in_x <= skipped && best_run < kResyncRun; ++in_x) {
                const std::size_t in_l = skipped - in_x;
                if (in_x > kResyncWindow || in_l > kResyncWindow || i + in_x > n || j + in_l > m) continue;
                const std::size_t run = run_from(i + in_x, j + in_l);
                if (run > best_run) {
                    best_run = run;
                    best_x = in_x;
                    best_l = in_l;
                }
            }
        i += best_x;
        j += best_l;
    }
    return partner;
}

// ------------------------------------------------------------------ size laws

Wide floor_div(Wide n, Wide d) {
    const Wide q = n / d;
    return (n % d != 0 && n < 0) ? q - 1 : q;
}
Wide ceil_div(Wide n, Wide d) {
    const Wide q = n / d;
    return (n % d != 0 && n > 0) ? q + 1 : q;
}

std::uint64_t clamp_size(Wide bytes, std::uint64_t granule) {
    if (bytes < static_cast<Wide>(granule)) return granule;
    if (bytes > static_cast<Wide>(kMaxRequestBytes)) return kMaxRequestBytes;
    return static_cast<std::uint64_t>(bytes);
}

// Sizes s1 at b1 and s2 at b2 (b1 < b2), each the rounding up to `g` of
// u(B) = base + slope * B: the line's values at b1 and b2 lie in
// (s - g, s]. u(B) = u1 (b2 - B) / D + u2 (B - b1) / D, D = b2 - b1, so its
// largest value at B takes each of u1, u2 at the end of its interval that
// its coefficient's sign favours, and the smallest the other ends. A granule
// of 1 is the bytes the program asked for, not a rounding: a tensor's
// elements times their width, exact at every batch, so the line passes
// through both sizes (an interval of one byte would add a byte beyond the
// recordings, and a byte past a whole 2 MiB block costs the allocator the
// next block: 24 MiB on an MLP at batch 200, its answer one batch low).
struct PairLaw {
    std::uint64_t b1, s1, b2, s2;
    Wide numerator(std::uint64_t batch, std::uint64_t g, bool largest) const {
        const Wide c1 = static_cast<Wide>(b2) - batch, c2 = static_cast<Wide>(batch) - b1;
        const Wide width = g == 1 ? 0 : static_cast<Wide>(g);
        const Wide u1 = (c1 >= 0) == largest ? static_cast<Wide>(s1) : static_cast<Wide>(s1) - width;
        const Wide u2 = (c2 >= 0) == largest ? static_cast<Wide>(s2) : static_cast<Wide>(s2) - width;
        return c1 * u1 + c2 * u2;
    }
    // The largest size any such line gives at `batch` (at least a granule).
    std::uint64_t upper(std::uint64_t batch, std::uint64_t g) const {
        if (s1 == s2) return s2;
        const Wide unit = static_cast<Wide>(g) * (b2 - b1);
        return clamp_size(ceil_div(numerator(batch, g, true), unit) * g, g);
    }
    // The smallest: the line's value lies strictly above the bound (on it,
    // for exact bytes).
    std::uint64_t lower(std::uint64_t batch, std::uint64_t g) const {
        if (s1 == s2) return s2;
        const Wide unit = static_cast<Wide>(g) * (b2 - b1);
        if (g == 1) return clamp_size(floor_div(numerator(batch, g, false), unit), g);
        return clamp_size((floor_div(numerator(batch, g, false), unit) + 1) * g, g);
    }
};

// Sizes s1, s2, s3 at b1 < b2 < b3, each the rounding up to `g` of a
// quadratic u(B): the quadratic through three values is Lagrange's,
// u(B) Dn = c1(B) u1 + c2(B) u2 + c3(B) u3 with Dn = (b2 - b1)(b3 - b2)(b3 - b1)
// and c_i(B) the product of (B - b_j) over the other two times Dn over
// their differences; its largest value at B takes each u_i at the end of
// its interval (s_i - g, s_i] that c_i's sign favours, as PairLaw's. Exact
// in 128 bits while the batches stay below 2^20 (the search's limit) and
// the sizes below 2^62: each term is under 2^122.
struct TripleLaw {
    std::uint64_t b[3], s[3];
    static constexpr std::uint64_t kMaxBatch = std::uint64_t{1} << 20;
    bool exact() const noexcept { return b[2] < kMaxBatch; }
    Wide denominator() const { return static_cast<Wide>(b[1] - b[0]) * (b[2] - b[1]) * (b[2] - b[0]); }
    Wide coefficient(int i, std::uint64_t batch) const {
        const Wide x = batch;
        switch (i) {
        case 0: return (x - b[1]) * (x - b[2]) * static_cast<Wide>(b[2] - b[1]);
        case 1: return -(x - b[0]) * (x - b[2]) * static_cast<Wide>(b[2] - b[0]);
        default: return (x - b[0]) * (x - b[1]) * static_cast<Wide>(b[1] - b[0]);
        }
    }
    Wide numerator(std::uint64_t batch, std::uint64_t g, bool largest) const {
        const Wide width = g == 1 ? 0 : static_cast<Wide>(g);
        Wide sum = 0;
        for (int i = 0; i < 3; ++i) {
            const Wide c = coefficient(i, batch);
            sum += c * ((c >= 0) == largest ? static_cast<Wide>(s[i]) : static_cast<Wide>(s[i]) - width);
        }
        return sum;
    }
    std::uint64_t upper(std::uint64_t batch, std::uint64_t g) const {
        return clamp_size(ceil_div(numerator(batch, g, true), denominator() * g) * g, g);
    }
    std::uint64_t lower(std::uint64_t batch, std::uint64_t g) const {
        const Wide unit = denominator() * g;
        if (g == 1) return clamp_size(floor_div(numerator(batch, g, false), unit), g);
        return clamp_size((floor_div(numerator(batch, g, false), unit) + 1) * g, g);
    }
    // It grows faster than a line (its second difference is positive): a
    // size that grows with the square of the knob (attention's L x L, an
    // image's side squared). One that bends down would shrink beyond the
    // recordings: no law to extrapolate.
    bool convex() const { return static_cast<Wide>(s[2] - s[1]) * (b[1] - b[0]) > (static_cast<Wide>(s[1]) - s[0]) * (b[2] - b[1]); }
};

enum class Fit : std::uint8_t { single, constant, affine, quadratic, not_affine };

// One request of the largest recording as a function of the batch.
struct Law {
    PairLaw pair{};          // the two largest recordings that have it (single: b2, s2 only)
    TripleLaw triple{};      // quadratic: the three largest
    Fit fit = Fit::single;
    bool extra = false;      // missing from some recording
    std::uint32_t points = kNone;  // not_affine: its first point in Impl::points
    std::uint32_t point_count = 0;
};

std::string bytes_text(std::uint64_t bytes) { return format_bytes(bytes); }

// A source that only names the events of a modelled trace.
class ModelledNames final : public EventSource {
public:
    explicit ModelledNames(std::uint64_t batch) : batch_(batch) {}
    bool next(Event&) override { return false; }
    std::string location(std::uint64_t line) const override { return description() + ", event " + group_digits(line); }
    std::string description() const override { return "batch " + std::to_string(batch_) + " (modelled)"; }
    std::string format() const override { return "generated"; }
    bool rewind() override { return true; }

private:
    std::uint64_t batch_;
};

// The recordings ordered by batch, checked, and their requests indexed.
// Throws UsageError for fewer than two, a batch 0 or given twice, or one
// with no request.
std::vector<Indexed> index_recordings(std::vector<BatchRecording>& recordings) {
    if (recordings.size() < 2)
        throw UsageError("max-batch needs recordings at two batch sizes at least; got " + std::to_string(recordings.size()));
    std::stable_sort(recordings.begin(), recordings.end(), [](const BatchRecording& a, const BatchRecording& b) { return a.batch < b.batch; });
    std::vector<Indexed> indexed;
    indexed.reserve(recordings.size());
    for (std::size_t k = 0; k < recordings.size(); ++k) {
        const BatchRecording& r = recordings[k];
        if (r.batch == 0) throw UsageError(r.name + ": batch 0: a recording's batch is 1 or more");
        if (k > 0 && r.batch == recordings[k - 1].batch)
            throw UsageError("two recordings at batch " + std::to_string(r.batch) + ": " + recordings[k - 1].name + " and " + r.name +
                             "; give each batch once");
        indexed.push_back(index_recording(r.events));
        if (indexed.back().requests.empty()) throw UsageError(r.name + ": no allocation to model (batch " + std::to_string(r.batch) + ")");
        if (indexed.back().requests.size() >= kNone) throw UsageError(r.name + ": too many requests to model");
    }
    return indexed;
}

// The smaller recording's requests aligned to the largest's: the fewest
// edits where they are few, else the greedy diff.
std::vector<std::uint32_t> align(const std::vector<RecordedRequest>& x, const std::vector<RecordedRequest>& l, std::uint64_t bx,
                                 std::uint64_t bl, std::uint64_t granule) {
    std::optional<std::vector<std::uint32_t>> fewest = align_fewest_edits(x, l, bx, bl, granule, kMaxEdits);
    return fewest ? std::move(*fewest) : align_greedy(x, l, bx, bl, granule);
}

// What the checks found while fitting: the requests to name, and how each
// recording beyond the two fitted ones held.
struct Findings {
    struct Candidate {
        std::uint64_t bytes_at_largest, bytes;
        std::string what;
    };
    std::vector<Candidate> candidates;
    std::vector<BatchModelChecks::Held> held;
    // A request the recording at `batch` does not bear out.
    void miss(std::uint64_t batch) {
        for (BatchModelChecks::Held& h : held)
            if (h.batch == batch) {
                h.exact = false;
                ++h.requests_off;
            }
    }
    // A miss taken back: the request followed another law after all.
    void unmiss(std::uint64_t batch) {
        for (BatchModelChecks::Held& h : held)
            if (h.batch == batch && h.requests_off > 0) h.exact = --h.requests_off == 0;
    }
    // The first few candidates, largest first, and the recordings checked.
    void publish(BatchModelChecks& c) {
        const std::size_t shown = std::min(candidates.size(), kMaxMismatches);
        std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(shown), candidates.end(),
                          [](const Candidate& a, const Candidate& b) {
                              return std::tie(a.bytes_at_largest, a.bytes) > std::tie(b.bytes_at_largest, b.bytes);
                          });
        for (std::size_t i = 0; i < shown; ++i) c.mismatches.push_back({std::move(candidates[i].what), candidates[i].bytes_at_largest});
        c.checked = std::move(held);
    }
};

std::string place(const RecordedRequest& q) {
    std::string text = std::string(q.kind == EventKind::oom ? "refused request" : "alloc") + " on stream " + std::to_string(q.stream);
    if (q.pool != 0) text += ", pool " + std::to_string(q.pool);
    return text;
}

// One request's law from its (batch, size) points, ascending, the largest
// recording's last: fitted on the last two, checked on the others. A
// not-affine request's points go to `table` (the cautious trace reads them)
// and it is named in `found`.
Law fit_law(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& points, std::uint64_t granule, const std::string& name,
            Findings& found, std::vector<std::pair<std::uint64_t, std::uint64_t>>& table) {
    Law law;
    law.pair.b2 = points.back().first;
    law.pair.s2 = points.back().second;
    if (points.size() < 2) return law;
    law.pair.b1 = points[points.size() - 2].first;
    law.pair.s1 = points[points.size() - 2].second;
    law.fit = law.pair.s1 == law.pair.s2 ? Fit::constant : Fit::affine;
    std::vector<std::uint64_t> missed;
    for (std::size_t p = 0; p + 2 < points.size(); ++p) {
        const auto [batch, size] = points[p];
        if (size >= law.pair.lower(batch, granule) && size <= law.pair.upper(batch, granule)) continue;
        missed.push_back(batch);
        found.miss(batch);
    }
    if (missed.empty()) return law;
    // No line: the quadratic through the three largest, where it grows
    // faster than a line and every other recording bears it out.
    if (points.size() >= 3) {
        const std::size_t n = points.size();
        TripleLaw q{{points[n - 3].first, points[n - 2].first, points[n - 1].first}, {points[n - 3].second, points[n - 2].second, points[n - 1].second}};
        bool fits = q.exact() && q.convex();
        for (std::size_t p = 0; fits && p + 3 < n; ++p) {
            const auto [batch, size] = points[p];
            fits = size >= q.lower(batch, granule) && size <= q.upper(batch, granule);
        }
        if (fits) {
            // The recordings the line missed hold the quadratic.
            for (const std::uint64_t batch : missed) found.unmiss(batch);
            law.fit = Fit::quadratic;
            law.triple = q;
            return law;
        }
    }
    law.fit = Fit::not_affine;
    law.points = static_cast<std::uint32_t>(table.size());
    law.point_count = static_cast<std::uint32_t>(points.size());
    table.insert(table.end(), points.begin(), points.end());
    std::string what = name;
    for (std::size_t p = 0; p < points.size(); ++p)
        what += std::string(p ? ", " : " ") + bytes_text(points[p].second) + " at batch " + std::to_string(points[p].first);
    what += law.pair.s1 == law.pair.s2 ? " (not affine; kept at " + bytes_text(law.pair.s2) + ": one size at its two largest batches, a workspace)"
                                         : std::string(" (not affine; the cautious trace takes the steepest line through two recordings at a quarter of the largest batch or more)");
    found.candidates.push_back({points.back().second, points.back().second, what});
    return law;
}

// The rule the cautious trace follows for an extra (Impl::size_at), for its mismatch.
std::string extra_rule(const Law& law) {
    if (law.fit == Fit::single) return "seen at one batch only: grows in proportion to the batch beyond it";
    if (law.pair.s1 == law.pair.s2)
        return "one size at batches " + std::to_string(law.pair.b1) + " and " + std::to_string(law.pair.b2) + ": kept at it, a workspace";
    return "its size grew with the batch: follows its line";
}

}  // namespace

// ------------------------------------------------------------------ the model

struct BatchModel::Impl {
    std::uint64_t smallest = 0, largest = 0;
    std::uint64_t granule = 512;
    std::vector<Event> events;  // the largest recording's
    std::vector<std::uint32_t> request_of;
    std::vector<Law> laws;  // per request of the largest recording
    std::vector<std::pair<std::uint64_t, std::uint64_t>> points;  // not-affine requests' (batch, size), ascending batch
    BatchModelChecks checks;

    std::uint64_t size_at(const Law& law, std::uint64_t batch, bool cautious) const {
        switch (law.fit) {
        case Fit::single: {
            if (batch <= law.pair.b2) return law.pair.s2;
            const Wide unit = static_cast<Wide>(granule) * law.pair.b2;
            return clamp_size(ceil_div(static_cast<Wide>(law.pair.s2) * batch, unit) * granule, granule);
        }
        case Fit::constant:
        case Fit::affine: return law.pair.upper(batch, granule);
        case Fit::quadratic: return law.triple.upper(batch, granule);
        case Fit::not_affine: break;
        }
        // At or below the largest recorded batch, the two largest recordings
        // bound it (at the largest, its recorded size: that run fitted).
        if (!cautious || batch <= law.pair.b2) return law.pair.upper(batch, granule);
        // One size at its two largest batches: a library's workspace chosen
        // anew at small batches, kept at that size (the lines through the
        // small batches' sizes would grow it without end).
        if (law.pair.s1 == law.pair.s2) return law.pair.s2;
        // The steepest line through any two recordings near the largest
        // (at a quarter of its batch or more), the two largest always among
        // them. Far smaller batches are checks, not slopes: libraries choose
        // other kernels and workspaces there (a ViT's 1.15 MiB at batch 4 and
        // 14 MiB at 8 grow 3.2 MiB a batch; at 64 and 96, 0.67), and their
        // slope carried to the answer would be wrong by whole multiples.
        std::uint64_t size = law.pair.upper(batch, granule);
        for (std::uint32_t i = 0; i < law.point_count; ++i)
            for (std::uint32_t j = i + 1; j < law.point_count; ++j) {
                const auto& [b1, s1] = points[law.points + i];
                const auto& [b2, s2] = points[law.points + j];
                if (b1 * 4 < law.pair.b2) continue;
                size = std::max(size, PairLaw{b1, s1, b2, s2}.upper(batch, granule));
            }
        return size;
    }
};

BatchModel BatchModel::fit(std::vector<BatchRecording> recordings) {
    const std::vector<Indexed> indexed = index_recordings(recordings);
    const std::size_t n = recordings.size();
    bool whole_granules = true;
    for (const Indexed& x : indexed)
        for (const RecordedRequest& q : x.requests) whole_granules = whole_granules && q.size % 512 == 0;
    auto impl = std::make_shared<Impl>();
    impl->granule = whole_granules ? 512 : 1;
    impl->smallest = recordings.front().batch;
    impl->largest = recordings.back().batch;
    const Indexed& big = indexed.back();
    const std::vector<RecordedRequest>& requests = big.requests;
    const std::size_t count = requests.size();
    BatchModelChecks& c = impl->checks;
    c.granule = impl->granule;
    c.requests = count;

    // Each smaller recording aligned to the largest.
    std::vector<std::vector<std::uint32_t>> partner(n - 1);
    std::vector<std::vector<bool>> taken(n - 1);
    for (std::size_t k = 0; k + 1 < n; ++k) {
        partner[k] = align(indexed[k].requests, requests, recordings[k].batch, impl->largest, impl->granule);
        taken[k].assign(indexed[k].requests.size(), false);
        for (const std::uint32_t x : partner[k])
            if (x != kNone) taken[k][x] = true;
    }

    Findings found;
    for (std::size_t k = 0; k + 2 < n; ++k) found.held.push_back({recordings[k].batch, true, 0});
    impl->laws.resize(count);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> points;  // this request's (batch, size), ascending
    for (std::size_t j = 0; j < count; ++j) {
        points.clear();
        std::string absent;  // the batches of the recordings without it
        for (std::size_t k = 0; k + 1 < n; ++k) {
            if (partner[k][j] != kNone) {
                points.emplace_back(recordings[k].batch, indexed[k].requests[partner[k][j]].size);
                continue;
            }
            absent += (absent.empty() ? "" : ", ") + std::to_string(recordings[k].batch);
            found.miss(recordings[k].batch);
        }
        points.emplace_back(impl->largest, requests[j].size);
        const std::string name = "request " + group_digits(j + 1) + " (" + place(requests[j]) + "):";
        Law& law = impl->laws[j] = fit_law(points, impl->granule, name, found, impl->points);
        law.extra = points.size() < n;
        if (points.size() >= 2) {
            if (law.fit == Fit::constant) ++c.constant;
            else if (law.fit == Fit::affine) ++c.affine;
            else if (law.fit == Fit::quadratic) ++c.quadratic;
            else ++c.not_affine;
        }
        if (!law.extra) {
            ++c.aligned;
            continue;
        }
        ++c.unaligned;
        std::string what = name;
        what += " " + bytes_text(requests[j].size) + " at batch " + std::to_string(impl->largest);
        what += ", absent at batch " + absent + " (appears as the batch grows; " + extra_rule(law) + ")";
        found.candidates.push_back({requests[j].size, requests[j].size, std::move(what)});
    }
    for (std::size_t k = 0; k + 1 < n; ++k)
        for (std::size_t x = 0; x < taken[k].size(); ++x) {
            if (taken[k][x]) continue;
            ++c.vanished;
            found.miss(recordings[k].batch);
            const RecordedRequest& q = indexed[k].requests[x];
            found.candidates.push_back({0, q.size,
                                        "request " + group_digits(x + 1) + " of batch " + std::to_string(recordings[k].batch) + " (" +
                                            place(q) + "): " + bytes_text(q.size) + ", absent at batch " + std::to_string(impl->largest) +
                                            " (gone as the batch grew)"});
        }
    found.publish(c);

    impl->events = std::move(recordings.back().events);
    impl->request_of = big.request_of;
    BatchModel model;
    model.impl_ = std::move(impl);
    return model;
}

const BatchModelChecks& BatchModel::checks() const noexcept { return impl_->checks; }
std::uint64_t BatchModel::smallest_recorded_batch() const noexcept { return impl_->smallest; }
std::uint64_t BatchModel::largest_recorded_batch() const noexcept { return impl_->largest; }

std::vector<Event> BatchModel::events_at(std::uint64_t batch, bool with_extras) const {
    if (batch == 0) throw UsageError("batch 0: a batch is 1 or more");
    const Impl& m = *impl_;
    std::vector<Event> out;
    out.reserve(m.events.size());
    for (std::size_t i = 0; i < m.events.size(); ++i) {
        const Event& e = m.events[i];
        if (is_segment_event(e.kind)) continue;
        const std::uint32_t r = m.request_of[i];
        Event copy = e;
        if (r != kNone) {
            const Law& law = m.laws[r];
            if (law.extra && !with_extras) continue;
            if (is_request(e.kind) || e.size != 0) copy.size = m.size_at(law, batch, with_extras);
        }
        out.push_back(copy);
        out.back().line = out.size();
    }
    return out;
}

// ------------------------------------------------------------------ the search

namespace {

// One lane's search on one trace (cautious or hopeful).
struct Search {
    std::size_t lane = 0;
    bool hopeful = false;
    std::uint64_t fits = 0;   // the largest unit (batch / step) known to fit; 0: none yet
    std::uint64_t fails = 0;  // the smallest known not to; 0: none yet
    std::uint64_t peak_at_fits = 0;
    bool fails_without_oom = false;  // `fails` replayed with no OOM: only the headroom refused it
    bool done = false;
    std::uint64_t replays = 0;
};

// The batches a search probes next, `count` at most (threads the round
// would leave idle otherwise): doubling from the largest batch known to fit
// (from the largest recorded one at first), or the midpoints of the
// bisection between what fits and what does not, breadth first. None when
// the search is over.
std::vector<std::uint64_t> next_probes(const Search& s, std::uint64_t first, std::uint64_t limit, std::size_t count) {
    std::vector<std::uint64_t> probes;
    if (s.fails == 0) {
        std::uint64_t batch = s.fits == 0 ? std::min(first, limit) : s.fits;
        if (s.fits == 0) probes.push_back(batch);
        while (probes.size() < count && batch < limit) {
            batch = batch > limit / 2 ? limit : batch * 2;
            probes.push_back(batch);
        }
        return probes;
    }
    std::deque<std::pair<std::uint64_t, std::uint64_t>> ranges{{s.fits, s.fails}};
    while (!ranges.empty() && probes.size() < count) {
        const auto [low, high] = ranges.front();
        ranges.pop_front();
        if (high - low <= 1) continue;
        const std::uint64_t middle = low + (high - low) / 2;
        probes.push_back(middle);
        ranges.emplace_back(low, middle);
        ranges.emplace_back(middle, high);
    }
    return probes;
}

struct Probe {
    std::size_t lane;
    bool hopeful;
    std::uint64_t batch;
    bool capped;
    // Filled by the replay.
    bool fits = false;      // no OOM, and the peak reserved within the cap less the headroom
    bool no_oom = false;    // no OOM under the cap
    std::uint64_t peak_reserved = 0;
    std::uint64_t retries = 0;
};

// A modelled trace and the source that names its events.
struct ModelledTrace {
    ModelledNames names;
    LoadedTrace trace;
    bool oversized = false;  // a request reached kMaxRequestBytes: fits nowhere
    ModelledTrace(std::uint64_t batch, std::vector<Event> events) : names(batch), trace(names, std::move(events)) {
        oversized = !trace.request_sizes().empty() && trace.request_sizes().back() >= kMaxRequestBytes;
    }
};

// Replays every probe: each distinct (batch, trace) built once, a few at a
// time so that memory stays bounded, their probes replayed together.
void replay_probes(const BatchModel& model, const std::vector<BatchLane>& lanes, std::vector<Probe>& probes, const MaxBatchOptions& options) {
    std::map<std::pair<std::uint64_t, bool>, std::vector<std::size_t>> by_trace;
    for (std::size_t p = 0; p < probes.size(); ++p) by_trace[{probes[p].batch, probes[p].hopeful}].push_back(p);
    const unsigned threads = std::max(1U, options.replay.threads);
    const std::size_t at_once = std::max<std::size_t>(2, threads);
    LaneReplayOptions one = options.replay;
    one.threads = 1;
    one.progress = nullptr;
    one.base.release_readings = nullptr;
    one.base.decides_release_readings = false;
    std::atomic<std::uint64_t> done_events{0};
    std::uint64_t total_events = 0;
    auto group = by_trace.begin();
    while (group != by_trace.end()) {
        std::vector<std::pair<std::pair<std::uint64_t, bool>, std::vector<std::size_t>>> chunk;
        for (; group != by_trace.end() && chunk.size() < at_once; ++group) chunk.emplace_back(*group);
        std::vector<std::unique_ptr<ModelledTrace>> traces(chunk.size());
        run_parallel(
            chunk.size(), threads,
            [&](std::size_t t, const WorkStop&) {
                const auto [batch, hopeful] = chunk[t].first;
                traces[t] = std::make_unique<ModelledTrace>(batch, model.events_at(batch, !hopeful));
            },
            nullptr);
        std::vector<std::pair<std::size_t, std::size_t>> tasks;  // trace, probe
        for (std::size_t t = 0; t < chunk.size(); ++t)
            for (const std::size_t p : chunk[t].second) {
                tasks.emplace_back(t, p);
                total_events += traces[t]->trace.events().size();
            }
        run_parallel(
            tasks.size(), threads,
            [&](std::size_t k, const WorkStop&) {
                const auto [t, p] = tasks[k];
                Probe& probe = probes[p];
                const ModelledTrace& trace = *traces[t];
                const BatchLane& facts = lanes[probe.lane];
                TorchLane lane = facts.lane;
                if (!probe.capped) lane.capacity = kUnlimited;
                LaneReplayOptions o = one;
                o.stop_at_first_oom = probe.capped;
                if (trace.oversized) {
                    probe.fits = false;
                } else {
                    const LaneReplays r = replay_torch_lanes(trace.trace, {lane}, o);
                    probe.no_oom = r.lanes.front().ooms == 0;
                    probe.peak_reserved = r.lanes.front().peak_reserved;
                    probe.retries = r.lanes.front().retries;
                    // The model's peak is not exact to the byte: a batch
                    // counts as fitting only below the cap less the headroom.
                    const std::uint64_t room = lane.capacity > options.headroom ? lane.capacity - options.headroom : 0;
                    probe.fits = probe.no_oom && (!probe.capped || options.headroom == 0 || probe.peak_reserved <= room);
                }
                if (probe.capped && probe.batch <= facts.ran) probe.fits = true;
                if (probe.capped && facts.ran_out != 0 && probe.batch >= facts.ran_out && probe.batch > facts.ran) probe.fits = false;
                done_events += trace.trace.events().size();
            },
            options.replay.progress ? std::function<void()>([&] { options.replay.progress(done_events.load(), total_events); })
                                    : std::function<void()>());
    }
}

// Each lane's answer from its searches (the cautious one's, and the
// hopeful one's where it differs), and what its next value would need: its
// trace replayed with no cap.
template <typename LimitOf>
std::vector<MaxBatchAnswer> answers_of(const BatchModel& model, const std::vector<BatchLane>& lanes, const std::vector<Search>& searches,
                                       const MaxBatchOptions& options, LimitOf limit_of) {
    const std::uint64_t step = std::max<std::uint64_t>(1, options.step);
    const BatchModelChecks& checks = model.checks();
    const bool hopeful_differs = checks.unaligned != 0 || checks.not_affine != 0;
    std::vector<MaxBatchAnswer> answers(lanes.size());
    std::vector<Probe> next;
    for (const Search& s : searches) {
        MaxBatchAnswer& a = answers[s.lane];
        a.replays += s.replays;
        if (s.hopeful) {
            if (s.fits != 0) a.largest_hopeful = s.fits * step;
            continue;
        }
        if (s.fits != 0) a.largest = s.fits * step;
        if (!checks.holds() && !hopeful_differs) a.largest_hopeful = a.largest;
        a.reached_limit = s.fails == 0 && s.fits >= limit_of(s.lane);
        a.peak_reserved_at_largest = s.peak_at_fits;
        a.next_fits_without_headroom = s.fails == s.fits + 1 && s.fails_without_oom;
        next.push_back({s.lane, false, (s.fits + 1) * step, false});
    }
    replay_probes(model, lanes, next, options);
    for (const Probe& p : next) {
        answers[p.lane].peak_reserved_at_next = p.peak_reserved;
        ++answers[p.lane].replays;
    }
    return answers;
}

}  // namespace

std::vector<MaxBatchAnswer> search_max_batch(const BatchModel& model, const std::vector<TorchLane>& lanes, const MaxBatchOptions& options) {
    std::vector<BatchLane> plain;
    plain.reserve(lanes.size());
    for (const TorchLane& lane : lanes) plain.emplace_back(lane, 0, 0);
    return search_max_batch(model, plain, options);
}

std::vector<MaxBatchAnswer> search_max_batch(const BatchModel& model, const std::vector<BatchLane>& lanes, const MaxBatchOptions& options) {
    // The search runs in units of the step (every multiple of it a unit);
    // each probe replays its batch, units times the step.
    const std::uint64_t step = std::max<std::uint64_t>(1, options.step);
    const std::uint64_t limit = std::max<std::uint64_t>(1, options.limit / step);
    const std::uint64_t first = std::max<std::uint64_t>(1, model.largest_recorded_batch() / step);
    // The hopeful trace leaves out extras and fits not-affine requests on
    // the two largest recordings; with neither, it is the cautious one.
    const BatchModelChecks& checks = model.checks();
    const bool hopeful_differs = checks.unaligned != 0 || checks.not_affine != 0;
    std::vector<Search> searches;
    for (std::size_t i = 0; i < lanes.size(); ++i) {
        searches.push_back({i, false});
        if (hopeful_differs) searches.push_back({i, true});
    }
    // Each lane's limit: below the smallest batch a real run under its
    // setting ran out of memory at (above the largest that ran).
    const auto limit_of = [&](std::size_t lane) {
        const std::uint64_t ran = lanes[lane].ran, out = lanes[lane].ran_out;
        // The largest unit below the run that ran out of memory.
        return out > ran && out != 0 ? std::max<std::uint64_t>(1, std::min(limit, (out - 1) / step)) : limit;
    };
    const std::size_t threads = std::max(1U, options.replay.threads);
    for (;;) {
        std::vector<Probe> probes;
        std::vector<std::size_t> owner;
        const auto active = static_cast<std::size_t>(std::count_if(searches.begin(), searches.end(), [](const Search& s) { return !s.done; }));
        const std::size_t each = std::max<std::size_t>(1, active == 0 ? 1 : threads / active);
        for (std::size_t s = 0; s < searches.size(); ++s) {
            if (searches[s].done) continue;
            const std::vector<std::uint64_t> batches = next_probes(searches[s], first, limit_of(searches[s].lane), each);
            if (batches.empty()) searches[s].done = true;
            for (const std::uint64_t unit : batches) {
                probes.push_back({searches[s].lane, searches[s].hopeful, unit * step, true});
                owner.push_back(s);
            }
        }
        if (probes.empty()) break;
        replay_probes(model, lanes, probes, options);
        // The largest batch that fitted; the smallest above it that did not
        // (one below it that did not contradicts more batch needing more
        // memory: the batch above it fitted, replayed, and stands).
        for (std::size_t p = 0; p < probes.size(); ++p) {
            Search& s = searches[owner[p]];
            ++s.replays;
            if (probes[p].fits && probes[p].batch / step > s.fits) {
                s.fits = probes[p].batch / step;
                s.peak_at_fits = probes[p].peak_reserved;
            }
        }
        for (Search& s : searches)
            if (s.fails != 0 && s.fails <= s.fits) s.fails = 0;
        for (std::size_t p = 0; p < probes.size(); ++p) {
            Search& s = searches[owner[p]];
            const std::uint64_t unit = probes[p].batch / step;
            if (!probes[p].fits && unit > s.fits && (s.fails == 0 || unit < s.fails)) {
                s.fails = unit;
                s.fails_without_oom = probes[p].no_oom;
            }
        }
    }
    return answers_of(model, lanes, searches, options, [&](std::size_t lane) { return limit_of(lane); });
}

std::vector<BatchReplay> replay_batches(const BatchModel& model, const TorchLane& lane, const std::vector<std::uint64_t>& batches, bool hopeful,
                                        const MaxBatchOptions& options) {
    std::vector<Probe> probes;
    probes.reserve(batches.size());
    for (const std::uint64_t batch : batches) probes.push_back({0, hopeful, std::max<std::uint64_t>(1, batch), true});
    MaxBatchOptions plain = options;
    plain.headroom = 0;
    replay_probes(model, {BatchLane(lane, 0, 0)}, probes, plain);
    std::vector<BatchReplay> out;
    out.reserve(probes.size());
    for (const Probe& p : probes) out.push_back({p.batch, p.no_oom, p.peak_reserved, p.retries});
    return out;
}

}  // namespace gpumem::reuse_sim
