// Summary statistics: percentiles as numpy's default (linear interpolation).
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "base/stats.hpp"

using namespace gpumem;

TEST_CASE("percentile_sorted: numpy's linear interpolation") {
    const std::vector<double> four = {1, 2, 3, 4};
    CHECK(percentile_sorted(four, 0) == 1);
    CHECK(percentile_sorted(four, 100) == 4);
    CHECK(percentile_sorted(four, 50) == doctest::Approx(2.5));
    CHECK(percentile_sorted(four, 25) == doctest::Approx(1.75));
    CHECK(percentile_sorted(four, 90) == doctest::Approx(3.7));

    std::vector<double> ten(10);
    std::iota(ten.begin(), ten.end(), 1.0);  // 1..10
    CHECK(percentile_sorted(ten, 90) == doctest::Approx(9.1));
    CHECK(percentile_sorted(ten, 99) == doctest::Approx(9.91));
    CHECK(percentile_sorted(ten, 10) == doctest::Approx(1.9));
}

TEST_CASE("percentile_sorted: edge cases") {
    CHECK(percentile_sorted({}, 50) == 0);
    CHECK(percentile_sorted({7.5}, 0) == 7.5);
    CHECK(percentile_sorted({7.5}, 99) == 7.5);
    // Out-of-range percentiles clamp to the extremes.
    CHECK(percentile_sorted({1, 2, 3}, -10) == 1);
    CHECK(percentile_sorted({1, 2, 3}, 250) == 3);
    // Equal values.
    CHECK(percentile_sorted({5, 5, 5, 5}, 37) == 5);
}

TEST_CASE("summarize") {
    SUBCASE("empty") {
        const Summary s = summarize({});
        CHECK(s.count == 0);
        CHECK(s.median == 0);
        CHECK(s.mean == 0);
        CHECK(s.stdev == 0);
    }
    SUBCASE("one value: no spread") {
        const Summary s = summarize({42});
        CHECK(s.count == 1);
        CHECK(s.median == 42);
        CHECK(s.mean == 42);
        CHECK(s.min == 42);
        CHECK(s.max == 42);
        CHECK(s.p90 == 42);
        CHECK(s.p99 == 42);
        CHECK(s.stdev == 0);
        CHECK(s.cv == 0);
    }
    SUBCASE("unsorted input") {
        const Summary s = summarize({3, 1, 2});
        CHECK(s.count == 3);
        CHECK(s.min == 1);
        CHECK(s.max == 3);
        CHECK(s.median == 2);
        CHECK(s.mean == doctest::Approx(2));
        CHECK(s.stdev == doctest::Approx(1));  // sample stdev (n-1)
        CHECK(s.cv == doctest::Approx(0.5));
        CHECK(s.p90 == doctest::Approx(2.8));
    }
    SUBCASE("even count: median between the middle two") {
        const Summary s = summarize({10, 40, 20, 30});
        CHECK(s.median == doctest::Approx(25));
        CHECK(s.mean == doctest::Approx(25));
        CHECK(s.stdev == doctest::Approx(std::sqrt(500.0 / 3.0)));
    }
    SUBCASE("1..100") {
        std::vector<double> v(100);
        std::iota(v.begin(), v.end(), 1.0);
        const Summary s = summarize(v);
        CHECK(s.median == doctest::Approx(50.5));
        CHECK(s.p90 == doctest::Approx(90.1));
        CHECK(s.p99 == doctest::Approx(99.01));
    }
    SUBCASE("mean of zero gives cv 0, not NaN") {
        const Summary s = summarize({-1, 1});
        CHECK(s.mean == 0);
        CHECK(s.cv == 0);
        CHECK_FALSE(std::isnan(s.cv));
    }
}
