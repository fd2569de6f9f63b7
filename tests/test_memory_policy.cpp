#include <doctest/doctest.h>

#include <limits>

#include "base/errors.hpp"
#include "base/memory_policy.hpp"
#include "bench/memset_bench.hpp"

using namespace gpumem;

TEST_CASE("growth policy: exact, granularity and geometric arithmetic") {
    CHECK(GrowthPolicy::exact().capacity_for(1000, 0) == 1000);
    CHECK(GrowthPolicy::exact().capacity_for(1000, 5000) == 1000);
    const GrowthPolicy g512 = GrowthPolicy::round_to(512);
    CHECK(g512.capacity_for(1, 0) == 512);
    CHECK(g512.capacity_for(512, 0) == 512);
    CHECK(g512.capacity_for(513, 512) == 1024);
    const GrowthPolicy x15 = GrowthPolicy::geometric(1.5);
    CHECK(x15.capacity_for(100, 0) == 100);
    CHECK(x15.capacity_for(101, 100) == 150);
    CHECK(x15.capacity_for(400, 100) == 400);  // the request wins
    CHECK(GrowthPolicy::geometric(2).capacity_for(3, 3) == 6);
}

TEST_CASE("growth policy parser") {
    CHECK(parse_growth_policy("exact").kind == GrowthPolicy::Kind::exact);
    CHECK(parse_growth_policy("2MiB").granularity == (2u << 20));
    CHECK(parse_growth_policy("512B").granularity == 512);
    CHECK(parse_growth_policy("x1.5").factor == doctest::Approx(1.5));
    CHECK(parse_growth_policy("x2").name() == "x2");
    CHECK_THROWS_AS(parse_growth_policy("x1"), UsageError);
    CHECK_THROWS_AS(parse_growth_policy("x"), UsageError);
    CHECK_THROWS_AS(parse_growth_policy("fast"), UsageError);
    CHECK_THROWS_AS(parse_growth_policy("0"), UsageError);
    // Beyond the named rules, as before the table: any size, any factor.
    CHECK(parse_growth_policy("512") == GrowthPolicy::round_to(512));
    CHECK(parse_growth_policy("64KiB") == GrowthPolicy::round_to(64 << 10));
    CHECK(parse_growth_policy("X2") == GrowthPolicy::geometric(2));
    CHECK(parse_growth_policy("x1.25") == GrowthPolicy::geometric(1.25));
    CHECK_THROWS_WITH_AS(parse_growth_policy("x0.5"), "growth factor must be above 1 and at most 16", UsageError);
    CHECK_THROWS_WITH_AS(parse_growth_policy("fast"), "unknown growth rule 'fast' (expected exact, 512B, 2MiB, x1.5 or x2)",
                         UsageError);
    CHECK_THROWS_WITH_AS(parse_growth_policy("xfast"), "unknown growth rule 'xfast' (expected exact, 512B, 2MiB, x1.5 or x2)",
                         UsageError);
}

TEST_CASE("growth rules: one table of names, each a GrowthPolicy") {
    CHECK(kGrowthRules.what() == "growth rule");
    CHECK(kGrowthRules.names(", ") == "exact, 512B, 2MiB, x1.5, x2");
    CHECK(kGrowthRules.parse("exact") == GrowthPolicy::exact());
    CHECK(kGrowthRules.parse("512B") == GrowthPolicy::round_to(512));
    CHECK(kGrowthRules.parse("2MiB") == GrowthPolicy::round_to(2ULL << 20));
    CHECK(kGrowthRules.parse("x1.5") == GrowthPolicy::geometric(1.5));
    CHECK(kGrowthRules.parse("x2") == GrowthPolicy::geometric(2));
    for (const Named<GrowthPolicy>& row : kGrowthRules) {
        CAPTURE(row.name);
        CHECK(parse_growth_policy(row.name) == row.value);
        CHECK(kGrowthRules.name_of(row.value) == row.name);
        CHECK_FALSE(row.help.empty());
    }
    // Only the named rules: reuse-sim's --growth refuses other sizes and factors.
    CHECK_THROWS_AS(kGrowthRules.parse("x3"), UsageError);
    CHECK_THROWS_AS(kGrowthRules.parse("512"), UsageError);
    // Equality looks at the field of the kind only.
    GrowthPolicy odd = GrowthPolicy::exact();
    odd.factor = 3;
    CHECK(odd == GrowthPolicy::exact());
    CHECK(GrowthPolicy::round_to(512) != GrowthPolicy::round_to(1024));
    CHECK(GrowthPolicy::geometric(2) != GrowthPolicy::round_to(2));
}

TEST_CASE("overflow checks") {
    CHECK(checked_array_bytes(1000, 8) == 8000);
    CHECK(checked_array_bytes(0, 8) == 0);
    CHECK_THROWS_AS(checked_array_bytes(std::numeric_limits<std::uint64_t>::max() / 4, 8), UsageError);
    CHECK_THROWS_AS(GrowthPolicy::round_to(4096).capacity_for(std::numeric_limits<std::uint64_t>::max() - 10, 0), UsageError);
    CHECK_THROWS_AS(GrowthPolicy::exact().capacity_for(1ULL << 63, 0), UsageError);
}

TEST_CASE("host memory kinds round-trip by name") {
    for (const char* name : {"pinned", "pageable", "pageable-huge", "huge-only", "write-combined", "mapped", "registered"})
        CHECK(std::string(host_memory_kind_name(parse_host_memory_kind(name))) == name);
    CHECK_THROWS_WITH_AS(parse_host_memory_kind("locked"),
                         "unknown host memory kind 'locked' (nearest: pinned, mapped; gpumem --list host-memory)",
                         UsageError);
    CHECK(host_memory_kind_names() == "pinned, pageable, pageable-huge, huge-only, write-combined, mapped, registered");
    CHECK(kHostMemoryKinds.size() == 7);
    for (const Named<HostMemoryKind>& row : kHostMemoryKinds) CHECK_FALSE(row.help.empty());
    CHECK(host_memory_is_pinned(HostMemoryKind::registered));
    CHECK_FALSE(host_memory_is_pinned(HostMemoryKind::pageable_huge));
}

TEST_CASE("memset plan validation") {
    MemsetPlan p;
    p.size = 4096;
    CHECK_NOTHROW(validate_memset_plan(p));
    p.width = 3;
    CHECK_THROWS_AS(validate_memset_plan(p), UsageError);
    p.width = 2;
    p.value = 0x10000;
    CHECK_THROWS_AS(validate_memset_plan(p), UsageError);
    p.value = 0xFFFF;
    p.offset = 4096;
    CHECK_THROWS_AS(validate_memset_plan(p), UsageError);
    p.offset = 3;
    CHECK_THROWS_AS(validate_memset_plan(p), UsageError);
    p.offset = 2;
    p.size = 4097;
    CHECK_THROWS_AS(validate_memset_plan(p), UsageError);
    p.size = 4098;
    CHECK_NOTHROW(validate_memset_plan(p));
    p.width = 4;
    p.offset = 4;
    p.size = 4100;
    p.value = 0xFFFFFFFF;
    CHECK_NOTHROW(validate_memset_plan(p));
}
