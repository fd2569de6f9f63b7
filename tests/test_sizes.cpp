#include <doctest/doctest.h>

#include "base/errors.hpp"
#include "base/sizes.hpp"

using namespace gpumem;

TEST_CASE("sizes: plain, IEC and SI suffixes") {
    CHECK(parse_size("4096") == 4096);
    CHECK(parse_size("4KiB") == 4096);
    CHECK(parse_size("4K") == 4096);
    CHECK(parse_size("4k") == 4096);
    CHECK(parse_size("4KB") == 4000);
    CHECK(parse_size("64M") == 64ULL << 20);
    CHECK(parse_size("64MB") == 64000000ULL);
    CHECK(parse_size("1.5GiB") == 1610612736ULL);
    CHECK(parse_size("2 GiB") == 2ULL << 30);
    CHECK(parse_size("0x1000") == 4096);
    CHECK(parse_size("1T") == 1ULL << 40);
}

TEST_CASE("sizes: rejects bad input with UsageError") {
    CHECK_THROWS_AS(parse_size(""), UsageError);
    CHECK_THROWS_AS(parse_size("-1"), UsageError);
    CHECK_THROWS_AS(parse_size("0"), UsageError);
    CHECK(parse_size("0", true) == 0);
    CHECK_THROWS_AS(parse_size("12XB"), UsageError);
    CHECK_THROWS_AS(parse_size("abc"), UsageError);
    CHECK_THROWS_AS(parse_size("90%"), UsageError);
    CHECK_THROWS_AS(parse_size("99999999999999999999999"), UsageError);
    CHECK_THROWS_AS(parse_size("9EiB"), UsageError);
}

TEST_CASE("sizes: percentages resolve against a reference") {
    const SizeSpec s = parse_size_spec("90%", {false, true});
    CHECK(s.is_percent);
    CHECK(s.resolve(1000) == 900);
    CHECK_THROWS_AS(parse_size_spec("0%", {false, true}), UsageError);
}

TEST_CASE("size ranges") {
    CHECK(parse_size_range("4KiB..32KiB") == std::vector<std::uint64_t>{4096, 8192, 16384, 32768});
    CHECK(parse_size_range("1MiB..64MiB:x4") == std::vector<std::uint64_t>{1 << 20, 4 << 20, 16 << 20, 64 << 20});
    CHECK(parse_size_range("1KiB..4KiB:+1KiB") == std::vector<std::uint64_t>{1024, 2048, 3072, 4096});
    CHECK(parse_size_range("1K,3K") == std::vector<std::uint64_t>{1024, 3072});
    CHECK(parse_size_range("5M") == std::vector<std::uint64_t>{5 << 20});
    // Found by fuzz_sizes: a factor this close to 1 looped for hours.
    CHECK_THROWS_AS(parse_size_range("0x001..2T:x1.0000000020000002"), gpumem::UsageError);
    CHECK_THROWS_AS(parse_size_range("1..1T:x1.000000001"), gpumem::UsageError);
    CHECK(parse_size_range("1..8:x1.5") == std::vector<std::uint64_t>{1, 2, 3, 5, 8});
    CHECK_THROWS_AS(parse_size_range("1GiB..1MiB"), UsageError);
    CHECK_THROWS_AS(parse_size_range("1B..1TiB:+1B"), UsageError);
    CHECK_THROWS_AS(parse_size_range("1K..4K:x1"), UsageError);
}

TEST_CASE("formatting bytes and bandwidth") {
    CHECK(format_bytes(512) == "512 B");
    CHECK(format_bytes(4096) == "4 KiB");
    CHECK(format_bytes(1610612736ULL) == "1.5 GiB");
    CHECK(format_bytes(1ULL << 20, Unit::KiB) == "1024 KiB");
    CHECK(format_bandwidth(55.5e9) == "55.5 GB/s");
    CHECK(format_bandwidth(1073741824.0, Unit::GiB) == "1 GiB/s");
    CHECK(parse_unit("MiB") == Unit::MiB);
    CHECK(parse_unit("mib") == Unit::MiB);  // any case, as size suffixes
    CHECK_THROWS_AS(parse_unit("mibs"), UsageError);
}

TEST_CASE("sizes: three dots, or two ranges, are a typo and not a range") {
    CHECK_THROWS_AS(parse_size_range("4KiB...1GiB"), UsageError);
    CHECK_THROWS_AS(parse_size_range("4KiB..1MiB..1GiB"), UsageError);
    CHECK(parse_size_range("4KiB..16KiB").size() == 3);
}

TEST_CASE("sizes: a buffer beyond the 48-bit address space is a usage error") {
    CHECK_NOTHROW(check_buffer_size(kLargestBufferBytes, "--size"));
    CHECK_THROWS_WITH_AS(check_buffer_size(0x8000000000000000ULL, "--size"),
                         doctest::Contains("beyond what any GPU or host can address"), UsageError);
}
