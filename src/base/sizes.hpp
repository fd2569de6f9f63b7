// Sizes, size ranges and units: one parser and one formatter for every
// subcommand. Pure logic, no CUDA, tested on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/name_table.hpp"

namespace gpumem {

// Display unit. `automatic` picks a binary unit per value for humans and plain
// bytes for machine formats.
enum class Unit { automatic, B, KiB, MiB, GiB, TiB, KB, MB, GB, TB };

extern const NameTable<Unit> kUnits;
Unit parse_unit(std::string_view text);  // throws UsageError
const char* unit_name(Unit unit) noexcept;
std::uint64_t unit_bytes(Unit unit) noexcept;  // automatic -> 1
bool unit_is_decimal(Unit unit) noexcept;

// A size as the user wrote it: absolute bytes, or a percentage of a reference
// (free memory) that is only known once a device has been chosen.
struct SizeSpec {
    bool is_percent = false;
    std::uint64_t bytes = 0;
    double percent = 0.0;
    std::string text;

    // Bytes this spec stands for, given the reference size for percentages.
    std::uint64_t resolve(std::uint64_t reference_bytes) const noexcept;
};

struct SizeParseOptions {
    bool allow_zero = false;
    bool allow_percent = false;
};

// Accepts `4096`, `4KiB`, `4K` (IEC), `4KB` (SI), `1.5GiB`, `0x1000`, and with
// allow_percent `90%`. Suffixes are case-insensitive except that an `i` or a
// bare letter means binary and a trailing `B` after the letter means decimal.
// A fraction of a byte (3.5B, 0.1KiB) and a percentage above 100 are
// refused, as are 0 (unless allowed) and negatives. Throws UsageError naming the
// problem.
SizeSpec parse_size_spec(std::string_view text, SizeParseOptions options = {});
std::uint64_t parse_size(std::string_view text, bool allow_zero = false);
// Whether `word` is a size's unit alone (GB, MiB, k, B; any case): what is
// left over when a size is written with a space before its unit.
bool is_size_suffix(std::string_view word);

// No GPU or host can hold a buffer beyond the 48-bit virtual address space
// that CUDA and x86-64 Linux give a process (256 TiB); a size past it is a
// typing error, found before any driver call instead of as an out of memory.
inline constexpr std::uint64_t kLargestBufferBytes = 1ULL << 48;
// UsageError naming `option` when `bytes` is beyond kLargestBufferBytes.
void check_buffer_size(std::uint64_t bytes, std::string_view option);

// `SIZE`, `A,B,C`, `A..B` (doubling), `A..B:xF` (times F), `A..B:+S` (step S).
// Ascending order is kept as written; at most max_count sizes.
std::vector<std::uint64_t> parse_size_range(std::string_view text, std::size_t max_count = 4096);

// Integer with optional 0x prefix, for values like memset patterns.
std::uint64_t parse_unsigned(std::string_view text, std::uint64_t max_value);
// A finite decimal number (`0.5`, `1e-3`), the whole text; NaN, infinities
// and numbers beyond double's range are refused. Throws UsageError.
double parse_real(std::string_view text);

// Human form: `512 B`, `4 KiB`, `1.5 GiB`; with a fixed unit, the value in it.
std::string format_bytes(std::uint64_t bytes, Unit unit = Unit::automatic);
// Value of `bytes` in `unit` (automatic: bytes).
double bytes_in_unit(std::uint64_t bytes, Unit unit) noexcept;
// Bandwidth: GB/s (1e9) unless the unit is binary, then GiB/s.
std::string format_bandwidth(double bytes_per_second, Unit unit = Unit::automatic);
double bandwidth_in_unit(double bytes_per_second, Unit unit) noexcept;
const char* bandwidth_unit_name(Unit unit) noexcept;

// Shortest decimal form with at most `max_decimals` digits after the point.
std::string format_decimal(double value, int max_decimals);

}  // namespace gpumem
