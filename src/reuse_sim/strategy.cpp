#include "reuse_sim/strategy.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>

#include "base/errors.hpp"

namespace gpumem::reuse_sim {

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
            // Every interval after the last one named (PyTorch 2.11 keeps that one's own value).
            for (std::size_t i = last_index + 1; i < divisions.size(); ++i) divisions[i] = value;
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

bool uses_option(const StrategySpec& strategy, std::string_view option) noexcept {
    std::string_view rest = strategy.options;
    while (!rest.empty()) {
        const std::size_t space = rest.find(' ');
        if (rest.substr(0, space) == option) return true;
        if (space == std::string_view::npos) break;
        rest.remove_prefix(space + 1);
    }
    return false;
}

std::string strategies_using(std::string_view option) {
    std::string names;
    for (const Named<StrategySpec>& row : kStrategies)
        if (uses_option(row.value, option)) names += (names.empty() ? "" : ", ") + std::string(row.name);
    return names;
}

void Strategy::release_all() {
    if (counters_.held != 0)
        throw std::logic_error("reuse-sim strategy: release_all while " + std::to_string(counters_.held) + " request(s) are held");
    do_release_all();
    // The cudaMalloc'd bytes and mapped pages are counted exactly whatever the
    // device; the stream-ordered pool's are as the driver reports them.
    if (const std::uint64_t kept = upstream_.counters().device_reserved_bytes; kept != 0)
        throw std::logic_error("reuse-sim strategy: release_all kept " + std::to_string(kept) + " bytes from the device");
}

void Strategy::fail_held(std::uint32_t handle) {
    throw std::logic_error("reuse-sim strategy: allocate of handle " + std::to_string(handle) + ", which it holds");
}

void Strategy::fail_not_held(std::uint32_t handle) {
    throw std::logic_error("reuse-sim strategy: free of handle " + std::to_string(handle) + ", which it does not hold");
}

std::unique_ptr<Strategy> make_strategy(const StrategySpec& strategy, const StrategyOptions& options, Upstream& upstream) {
    return strategy.make(upstream, options);
}

}  // namespace gpumem::reuse_sim
