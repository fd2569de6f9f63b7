#include "reuse_sim/strategy.hpp"

#include <algorithm>
#include <string>

#include "base/errors.hpp"
#include "reuse_sim/strategies_impl.hpp"

namespace gpumem::reuse_sim {

const std::vector<StrategyKind>& all_strategies() {
    static const std::vector<StrategyKind> kinds = {
        StrategyKind::naive, StrategyKind::grow_only, StrategyKind::shape_persistent, StrategyKind::ring,
        StrategyKind::pool,  StrategyKind::binning,   StrategyKind::torch_caching,    StrategyKind::async_pool,
    };
    return kinds;
}

const char* strategy_name(StrategyKind kind) noexcept {
    switch (kind) {
        case StrategyKind::naive: return "naive";
        case StrategyKind::grow_only: return "grow-only";
        case StrategyKind::shape_persistent: return "shape-persistent";
        case StrategyKind::ring: return "ring";
        case StrategyKind::pool: return "pool";
        case StrategyKind::binning: return "binning";
        case StrategyKind::torch_caching: return "torch-caching";
        case StrategyKind::async_pool: return "async-pool";
    }
    return "?";
}

StrategyKind parse_strategy(std::string_view name) {
    for (StrategyKind k : all_strategies())
        if (name == strategy_name(k)) return k;
    std::string known;
    for (StrategyKind k : all_strategies()) known += (known.empty() ? "" : ", ") + std::string(strategy_name(k));
    throw UsageError("unknown strategy '" + std::string(name) + "' (known: " + known + ", or all)");
}

std::vector<StrategyKind> parse_strategy_list(std::string_view text) {
    if (text == "all") return all_strategies();
    std::vector<StrategyKind> kinds;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (item.empty()) throw UsageError("empty strategy name in '" + std::string(text) + "'");
        if (item == "all") throw UsageError("'all' cannot be combined with other strategy names");
        const StrategyKind k = parse_strategy(item);
        if (std::find(kinds.begin(), kinds.end(), k) != kinds.end())
            throw UsageError("strategy '" + std::string(item) + "' named twice");
        kinds.push_back(k);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return kinds;
}

std::array<std::uint64_t, 16> parse_roundup_power2_divisions(std::string_view text) {
    std::array<std::uint64_t, 16> divisions{};
    auto fail = [&text](const std::string& why) {
        return UsageError("--roundup-power2-divisions '" + std::string(text) + "': " + why);
    };
    auto parse_uint = [&](std::string_view s) -> std::uint64_t {
        while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
        while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
        if (s.empty() || s.size() > 12) throw fail("expected a number, found '" + std::string(s) + "'");
        std::uint64_t v = 0;
        for (char c : s) {
            if (c < '0' || c > '9') throw fail("expected a number, found '" + std::string(s) + "'");
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        return v;
    };
    auto is_pow2 = [](std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; };
    auto log2 = [](std::uint64_t v) {
        std::size_t l = 0;
        while (v >>= 1) ++l;
        return l;
    };
    if (text.empty()) throw fail("empty");
    if (text.front() != '[') {
        // Backwards-compatible form: one value for every interval.
        const std::uint64_t v = parse_uint(text);
        if (!is_pow2(v)) throw fail("the divisions must be a power of two");
        divisions.fill(v);
        return divisions;
    }
    if (text.back() != ']') throw fail("a list must end with ']'");
    std::string_view body = text.substr(1, text.size() - 2);
    bool first = true;
    std::size_t last_index = 0;
    std::size_t start = 0;
    while (start <= body.size()) {
        const std::size_t comma = body.find(',', start);
        const std::string_view item = body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        const std::size_t colon = item.find(':');
        if (colon == std::string_view::npos) throw fail("expected INTERVAL_MIB:DIVISIONS, found '" + std::string(item) + "'");
        std::string_view key = item.substr(0, colon);
        while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
        while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
        const std::uint64_t value = parse_uint(item.substr(colon + 1));
        if (value != 0 && !is_pow2(value)) throw fail("the divisions must be a power of two or 0");
        if (key == ">") {
            for (std::size_t i = last_index; i < divisions.size(); ++i) divisions[i] = value;
        } else {
            const std::uint64_t interval = parse_uint(key);
            if (!is_pow2(interval)) throw fail("interval starts must be powers of two (MiB)");
            const std::size_t index = std::min<std::size_t>(log2(interval), divisions.size() - 1);
            // As PyTorch: the first entry also covers every smaller interval.
            if (first) {
                for (std::size_t i = 0; i < index; ++i) divisions[i] = value;
                first = false;
            }
            divisions[index] = value;
            last_index = index;
        }
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return divisions;
}

std::unique_ptr<Strategy> make_strategy(StrategyKind kind, const StrategyOptions& o, Upstream& upstream) {
    switch (kind) {
        case StrategyKind::naive: return detail::make_naive(upstream);
        case StrategyKind::grow_only: return detail::make_grow_only(upstream, o.growth, o.zero_fill);
        case StrategyKind::shape_persistent: return detail::make_shape_persistent(upstream);
        case StrategyKind::ring: return detail::make_ring(upstream, o.ring_buffers, o.ring_size);
        case StrategyKind::pool: return detail::make_rmm_pool(upstream, o.pool_initial, o.pool_maximum);
        case StrategyKind::binning: return detail::make_rmm_binning(upstream, o);
        case StrategyKind::torch_caching: return detail::make_torch_caching(upstream, o.torch);
        case StrategyKind::async_pool: return detail::make_async_pool(upstream, o.release_threshold);
    }
    throw UsageError("unknown strategy");
}

}  // namespace gpumem::reuse_sim
