// One parser per kind of value, for every option of that kind: rates
// (50GB/s), durations (10ms), fractions (0.1 or 10%). Sizes are sizes.hpp's.
// A bare number is in the unit the option documents (its `bare` argument),
// so an option keeps what it meant; the units are case-insensitive. Pure
// logic, no I/O; every parser throws UsageError saying what was expected.
#pragma once

#include <string_view>

namespace gpumem {

// Bytes per second: 50GB/s, 45000MB/s, 1.5GiB/s, 50 GB/s (a size per second,
// the size's units as sizes.hpp reads them), or a bare number times
// `bare_bytes_per_second` (1e9: GB/s). At least zero.
double parse_rate(std::string_view text, double bare_bytes_per_second);

// Seconds: 30s, 500ms, 100us, 2m (or min), 1h, 1d, sec too, several summed
// (1m30s, 1h 30m), or a bare number times `bare_seconds`. Greater than zero
// (or zero, with `allow_zero`) and at most a year.
double parse_duration(std::string_view text, double bare_seconds = 1.0, bool allow_zero = false);

// A share of a whole: 0.1 or 10%, within [0, 1].
double parse_fraction(std::string_view text);

}  // namespace gpumem
