#include "base/sizes.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "base/errors.hpp"
#include "base/text.hpp"

namespace gpumem {
namespace {

// Multiplier of a size suffix, or 0 when the suffix is unknown.
long double suffix_multiplier(std::string_view suffix) {
    const std::string s = lower(suffix);
    if (s.empty() || s == "b") return 1;
    static const char letters[] = "kmgtpe";
    if (s.size() > 3) return 0;
    const char* p = std::strchr(letters, s[0]);
    if (p == nullptr || s[0] == '\0') return 0;
    const int power = static_cast<int>(p - letters) + 1;
    const std::string rest = s.substr(1);
    if (rest.empty() || rest == "i" || rest == "ib") return std::pow(1024.0L, power);
    if (rest == "b") return std::pow(1000.0L, power);
    return 0;
}

}  // namespace

constexpr Named<Unit> kUnitRows[] = {
    {"auto", Unit::automatic, "binary units chosen per value for people, plain bytes in JSON, CSV and values"},
    {"B", Unit::B, "bytes"},
    {"KiB", Unit::KiB, "1024 bytes"},
    {"MiB", Unit::MiB, "1024^2 bytes (nvidia-smi's MiB)"},
    {"GiB", Unit::GiB, "1024^3 bytes"},
    {"TiB", Unit::TiB, "1024^4 bytes"},
    {"KB", Unit::KB, "1000 bytes"},
    {"kB", Unit::KB, "1000 bytes (same as KB)"},
    {"MB", Unit::MB, "1000^2 bytes"},
    {"GB", Unit::GB, "1000^3 bytes"},
    {"TB", Unit::TB, "1000^4 bytes"},
};
const NameTable<Unit> kUnits{"unit", kUnitRows};

// Case-insensitive (--units mib), as size suffixes are: KB and kB are one unit.
Unit parse_unit(std::string_view text) {
    const std::string_view name = trim(text);
    if (const Named<Unit>* row = kUnits.find(name)) return row->value;
    for (const Named<Unit>& row : kUnits)
        if (lower(row.name) == lower(name)) return row.value;
    return kUnits.parse(name);
}

bool is_size_suffix(std::string_view word) { return !word.empty() && suffix_multiplier(word) != 0; }

const char* unit_name(Unit unit) noexcept { return kUnits.name_of(unit).data(); }

std::uint64_t unit_bytes(Unit unit) noexcept {
    switch (unit) {
        case Unit::automatic:
        case Unit::B: return 1;
        case Unit::KiB: return 1ULL << 10;
        case Unit::MiB: return 1ULL << 20;
        case Unit::GiB: return 1ULL << 30;
        case Unit::TiB: return 1ULL << 40;
        case Unit::KB: return 1000ULL;
        case Unit::MB: return 1000ULL * 1000;
        case Unit::GB: return 1000ULL * 1000 * 1000;
        case Unit::TB: return 1000ULL * 1000 * 1000 * 1000;
    }
    return 1;
}

bool unit_is_decimal(Unit unit) noexcept {
    return unit == Unit::KB || unit == Unit::MB || unit == Unit::GB || unit == Unit::TB;
}

std::uint64_t SizeSpec::resolve(std::uint64_t reference_bytes) const noexcept {
    if (!is_percent) return bytes;
    const long double v = static_cast<long double>(reference_bytes) * percent / 100.0L;
    if (v >= static_cast<long double>(std::numeric_limits<std::uint64_t>::max())) return std::numeric_limits<std::uint64_t>::max();
    return static_cast<std::uint64_t>(v);
}

SizeSpec parse_size_spec(std::string_view text, SizeParseOptions options) {
    const std::string original(text);
    const std::string_view s = trim(text);
    auto fail = [&](const std::string& why) -> UsageError {
        return UsageError("invalid size '" + original + "': " + why);
    };
    if (s.empty()) throw fail("empty");
    if (s.front() == '-') throw fail("sizes cannot be negative");

    SizeSpec spec;
    spec.text = original;

    // Hexadecimal byte counts, e.g. 0x1000.
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        const std::string digits(s.substr(2));
        if (!std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isxdigit(c); }))
            throw fail("not a hexadecimal number");
        errno = 0;
        const unsigned long long v = std::strtoull(digits.c_str(), nullptr, 16);
        if (errno == ERANGE || digits.size() > 16) throw fail("too large");
        if (v == 0 && !options.allow_zero) throw fail("must be greater than zero");
        spec.bytes = v;
        return spec;
    }

    std::size_t i = 0;
    bool seen_digit = false, seen_point = false;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] == '.' && !seen_point))) {
        if (s[i] == '.') seen_point = true; else seen_digit = true;
        ++i;
    }
    if (!seen_digit) throw fail("expected a number such as 4096, 64MiB, 1.5GiB" +
                                std::string(options.allow_percent ? " or 90%" : ""));
    const std::string number(s.substr(0, i));
    const long double value = std::strtold(number.c_str(), nullptr);
    const std::string_view suffix = trim(s.substr(i));

    if (suffix == "%") {
        if (!options.allow_percent) throw fail("a percentage is not accepted here");
        if (!(value > 0)) throw fail("percentage must be greater than zero");
        // A percentage is of the free memory: more than all of it is never there.
        if (value > 100) throw fail("a percentage is of the free memory, at most 100%");
        spec.is_percent = true;
        spec.percent = static_cast<double>(value);
        return spec;
    }
    const long double multiplier = suffix_multiplier(suffix);
    if (multiplier == 0)
        throw fail("unknown suffix '" + std::string(suffix) + "' (use B, K/KiB, M/MiB, G/GiB, T/TiB, or KB, MB, GB, TB)");
    const long double exact = value * multiplier;
    const long double bytes = std::nearbyint(exact);
    // 2^63: no device or host buffer comes near it, and it keeps arithmetic safe.
    if (bytes > 9223372036854775807.0L) throw fail("too large");
    // A size is a whole number of bytes: 3.5B, or 0.1KiB (102.4 bytes), is
    // a typing error, not something to round silently.
    if (std::fabs(exact - bytes) > 1e-3L)
        throw fail("a fraction of a byte (" + format_decimal(static_cast<double>(exact), 3) + " bytes); give a whole number of bytes");
    if (bytes == 0 && !options.allow_zero) throw fail("must be greater than zero");
    spec.bytes = static_cast<std::uint64_t>(bytes);
    return spec;
}

std::uint64_t parse_size(std::string_view text, bool allow_zero) {
    return parse_size_spec(text, SizeParseOptions{allow_zero, false}).bytes;
}

void check_buffer_size(std::uint64_t bytes, std::string_view option) {
    if (bytes > kLargestBufferBytes)
        throw UsageError(std::string(option) + " " + format_bytes(bytes) + " is beyond what any GPU or host can address (" +
                         format_bytes(kLargestBufferBytes) + ")");
}

std::vector<std::uint64_t> parse_size_range(std::string_view text, std::size_t max_count) {
    const std::string original(text);
    const std::string_view s = trim(text);
    std::vector<std::uint64_t> sizes;
    auto too_many = [&] {
        return UsageError("invalid size range '" + original + "': more than " + std::to_string(max_count) + " sizes");
    };

    const auto dots = s.find("..");
    if (dots == std::string_view::npos) {
        std::size_t start = 0;
        while (start <= s.size()) {
            const auto comma = s.find(',', start);
            const auto piece = s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
            sizes.push_back(parse_size(piece));
            if (sizes.size() > max_count) throw too_many();
            if (comma == std::string_view::npos) break;
            start = comma + 1;
        }
        return sizes;
    }

    // `4KiB...1GiB` would read as 4KiB to .1GiB: a typo, not a range.
    if (s.find("...") != std::string_view::npos || s.find("..", dots + 2) != std::string_view::npos)
        throw UsageError("invalid size range '" + original + "': write the range as A..B, with two dots once");
    const std::string_view first_text = s.substr(0, dots);
    std::string_view rest = s.substr(dots + 2);
    std::string_view step_text;
    if (const auto colon = rest.find(':'); colon != std::string_view::npos) {
        step_text = trim(rest.substr(colon + 1));
        rest = rest.substr(0, colon);
    }
    const std::uint64_t first = parse_size(first_text);
    const std::uint64_t last = parse_size(rest);
    if (last < first) throw UsageError("invalid size range '" + original + "': the end is smaller than the start");

    long double factor = 2.0L;
    std::uint64_t step = 0;
    if (!step_text.empty()) {
        if (step_text[0] == 'x' || step_text[0] == '*') {
            const std::string f(step_text.substr(1));
            char* end = nullptr;
            factor = std::strtold(f.c_str(), &end);
            if (f.empty() || end == nullptr || *end != '\0' || !(factor > 1.0L) || factor > 1024)
                throw UsageError("invalid size range '" + original + "': the factor after 'x' must be a number above 1");
        } else if (step_text[0] == '+') {
            step = parse_size(step_text.substr(1));
        } else {
            throw UsageError("invalid size range '" + original + "': the step must be xFACTOR or +SIZE");
        }
    }
    long double current = static_cast<long double>(first);
    std::uint64_t previous = 0;
    // A factor just above 1 rounds to the same size for billions of steps
    // (fuzz_sizes found 1..2T:x1.000000002 spinning for hours); sane factors
    // repeat a size a few thousand times at most.
    std::uint64_t repeats = 0;
    while (current <= static_cast<long double>(last) + 0.5L) {
        const auto value = static_cast<std::uint64_t>(std::nearbyint(current));
        if (sizes.empty() || value != previous) {
            sizes.push_back(value);
            if (sizes.size() > max_count) throw too_many();
        } else if (++repeats > 1000000) {
            throw UsageError("invalid size range '" + original + "': the factor is too close to 1");
        }
        previous = value;
        current = step ? current + static_cast<long double>(step) : current * factor;
    }
    return sizes;
}

std::uint64_t parse_unsigned(std::string_view text, std::uint64_t max_value) {
    const std::string s(trim(text));
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const std::string digits = hex ? s.substr(2) : s;
    const bool ok = !digits.empty() && std::all_of(digits.begin(), digits.end(), [hex](unsigned char c) {
        return hex ? std::isxdigit(c) != 0 : std::isdigit(c) != 0;
    });
    if (!ok) throw UsageError("invalid number '" + s + "' (expected decimal or 0x-prefixed hexadecimal)");
    errno = 0;
    const unsigned long long v = std::strtoull(digits.c_str(), nullptr, hex ? 16 : 10);
    if (errno == ERANGE || v > max_value)
        throw UsageError("number '" + s + "' is larger than " + std::to_string(max_value));
    return v;
}

double parse_real(std::string_view text) {
    const std::string s(trim(text));
    const bool ok = !s.empty() && s.find_first_not_of("0123456789.eE+-") == std::string::npos;
    char* end = nullptr;
    errno = 0;
    const double v = ok ? std::strtod(s.c_str(), &end) : 0.0;
    if (!ok || end != s.c_str() + s.size()) throw UsageError("invalid number '" + s + "' (expected a decimal number such as 0.5)");
    if (errno == ERANGE || !std::isfinite(v)) throw UsageError("number '" + s + "' is out of range");
    return v;
}

std::string format_decimal(double value, int max_decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", max_decimals, value);
    std::string out(buf);
    if (out.find('.') != std::string::npos) {
        while (!out.empty() && out.back() == '0') out.pop_back();
        if (!out.empty() && out.back() == '.') out.pop_back();
    }
    if (out == "-0") out = "0";
    return out;
}

double bytes_in_unit(std::uint64_t bytes, Unit unit) noexcept {
    return static_cast<double>(bytes) / static_cast<double>(unit_bytes(unit));
}

std::string format_bytes(std::uint64_t bytes, Unit unit) {
    if (unit == Unit::automatic) {
        static const Unit ladder[] = {Unit::TiB, Unit::GiB, Unit::MiB, Unit::KiB};
        for (Unit u : ladder)
            if (bytes >= unit_bytes(u)) return format_decimal(bytes_in_unit(bytes, u), 2) + " " + unit_name(u);
        return std::to_string(bytes) + " B";
    }
    return format_decimal(bytes_in_unit(bytes, unit), 2) + " " + unit_name(unit);
}

double bandwidth_in_unit(double bytes_per_second, Unit unit) noexcept {
    const bool binary = unit != Unit::automatic && !unit_is_decimal(unit) && unit != Unit::B;
    return bytes_per_second / (binary ? 1073741824.0 : 1e9);
}

const char* bandwidth_unit_name(Unit unit) noexcept {
    const bool binary = unit != Unit::automatic && !unit_is_decimal(unit) && unit != Unit::B;
    return binary ? "GiB/s" : "GB/s";
}

std::string format_bandwidth(double bytes_per_second, Unit unit) {
    return format_decimal(bandwidth_in_unit(bytes_per_second, unit), 2) + " " + bandwidth_unit_name(unit);
}

}  // namespace gpumem
