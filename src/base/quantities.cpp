#include "base/quantities.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "base/errors.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"

namespace gpumem {
namespace {

// The number at the start of `s` ("1.5" of "1.5GiB/s"), the rest in `unit`.
double leading_number(std::string_view s, std::string& unit) {
    std::size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
                            ((s[i] == '-' || s[i] == '+') && i > 0 && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
        ++i;
    // "1e" or "2E" followed by a unit letter is a number then a unit, not an exponent.
    while (i > 0 && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == '-' || s[i - 1] == '+')) --i;
    unit = lower(trim(s.substr(i)));
    return parse_real(s.substr(0, i));
}

}  // namespace

double parse_rate(std::string_view text, double bare_bytes_per_second) {
    const std::string_view s = trim(text);
    const auto fail = [&](const std::string& why) {
        return UsageError("invalid rate '" + std::string(text) + "': " + why + " (such as 50GB/s, 45000MB/s, 1.5GiB/s)");
    };
    if (!s.empty() && s.front() == '-') throw fail("rates cannot be negative");
    const std::string lowered = lower(s);
    if (lowered.size() > 2 && lowered.compare(lowered.size() - 2, 2, "/s") == 0) {
        const std::string_view size = trim(s.substr(0, s.size() - 2));
        try {
            return static_cast<double>(parse_size(size, true));
        } catch (const UsageError&) {
            // 1.5B/s, a fraction of a byte, is still a rate.
            std::string unit;
            double v = 0;
            try {
                v = leading_number(size, unit);
            } catch (const UsageError&) {
                throw fail("expected a size per second");
            }
            if (unit != "b" || v < 0) throw fail("expected a size per second");
            return v;
        }
    }
    double v = 0;
    try {
        v = parse_real(s);
    } catch (const UsageError&) {
        throw fail("expected a number or a size per second");
    }
    if (v < 0) throw fail("rates cannot be negative");
    return v * bare_bytes_per_second;
}

double parse_duration(std::string_view text, double bare_seconds, bool allow_zero) {
    const std::string_view s = trim(text);
    const auto fail = [&](const std::string& why) { return UsageError("invalid duration '" + std::string(text) + "': " + why); };
    const char* const at_least = allow_zero ? "cannot be negative" : "must be greater than zero";
    if (!s.empty() && s.front() == '-') throw fail(at_least);
    // A number and its unit, or several summed (1m30s, 1h 30m); a bare
    // number alone.
    double seconds = 0;
    std::string rest(s);
    for (int part = 0; part == 0 || !rest.empty(); ++part) {
        std::string tail;
        double value = 0;
        try {
            value = leading_number(rest, tail);
        } catch (const UsageError&) {
            throw fail("expected a number with an optional unit: 30, 30s, 500ms, 2m, 1h, 1m30s");
        }
        std::size_t letters = 0;
        while (letters < tail.size() && std::isalpha(static_cast<unsigned char>(tail[letters])) != 0) ++letters;
        const std::string unit = tail.substr(0, letters);
        rest = std::string(trim(std::string_view(tail).substr(letters)));
        double scale = 0;
        if (unit.empty() && part == 0 && rest.empty()) scale = bare_seconds;
        else if (unit.empty()) throw fail("each number of several needs its unit, as in 1m30s");
        else if (unit == "s" || unit == "sec") scale = 1;
        else if (unit == "ms") scale = 1e-3;
        else if (unit == "us") scale = 1e-6;
        else if (unit == "m" || unit == "min") scale = 60;
        else if (unit == "h") scale = 3600;
        else if (unit == "d") scale = 86400;
        else throw fail("unknown unit '" + unit + "' (use us, ms, s, m, h or d)");
        seconds += value * scale;
    }
    if (!(seconds > 0) && !(allow_zero && seconds == 0)) throw fail(at_least);
    if (seconds > 365.0 * 86400) throw fail("longer than a year");
    return seconds;
}

double parse_fraction(std::string_view text) {
    const std::string_view s = trim(text);
    const auto fail = [&](const std::string& why) {
        return UsageError("invalid fraction '" + std::string(text) + "': " + why + " (such as 0.1 or 10%)");
    };
    const bool percent = !s.empty() && s.back() == '%';
    double v = 0;
    try {
        v = parse_real(trim(percent ? s.substr(0, s.size() - 1) : s));
    } catch (const UsageError&) {
        throw fail("expected a number or a percentage");
    }
    if (percent) v /= 100.0;
    if (v < 0 || v > 1) throw fail(percent ? "a percentage from 0% to 100%" : "a number from 0 to 1");
    return v;
}

}  // namespace gpumem
