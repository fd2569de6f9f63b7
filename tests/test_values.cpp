// One grammar for values: the parser of each kind (rate, duration, fraction,
// units), and every option of a kind taking the same forms on the command
// line (run in-process up to the first driver call); the one suggestion
// rule over every table of names gpumem has.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/errors.hpp"
#include "base/name_table.hpp"
#include "base/quantities.hpp"
#include "base/sizes.hpp"
#include "base/text.hpp"
#include "cli/lists.hpp"
#include "in_process.hpp"
#include "reuse_sim/tuner.hpp"

using gpumem::UsageError;

TEST_CASE("values: a rate is a size per second, or a bare number in the option's unit") {
    CHECK(gpumem::parse_rate("50GB/s", 1e9) == doctest::Approx(50e9));
    CHECK(gpumem::parse_rate("50 GB/s", 1e9) == doctest::Approx(50e9));
    CHECK(gpumem::parse_rate("50gb/s", 1e9) == doctest::Approx(50e9));
    CHECK(gpumem::parse_rate("45000MB/s", 1e9) == doctest::Approx(45e9));
    CHECK(gpumem::parse_rate("1.5GiB/s", 1e9) == doctest::Approx(1.5 * 1024 * 1024 * 1024));
    CHECK(gpumem::parse_rate("50", 1e9) == doctest::Approx(50e9));
    CHECK(gpumem::parse_rate("50", 1.0) == doctest::Approx(50));
    CHECK_THROWS_AS(gpumem::parse_rate("fast", 1e9), UsageError);
    CHECK_THROWS_AS(gpumem::parse_rate("-5GB/s", 1e9), UsageError);
    CHECK_THROWS_AS(gpumem::parse_rate("5GB/h", 1e9), UsageError);
    CHECK_THROWS_WITH(gpumem::parse_rate("5XB/s", 1e9), doctest::Contains("such as 50GB/s"));
}

TEST_CASE("values: a duration takes us, ms, s, m, h, d in any case, or a bare number in the option's unit") {
    CHECK(gpumem::parse_duration("10ms") == doctest::Approx(0.01));
    CHECK(gpumem::parse_duration("10MS") == doctest::Approx(0.01));
    CHECK(gpumem::parse_duration("5s") == doctest::Approx(5));
    CHECK(gpumem::parse_duration("5 s") == doctest::Approx(5));
    CHECK(gpumem::parse_duration("2m") == doctest::Approx(120));
    CHECK(gpumem::parse_duration("2min") == doctest::Approx(120));
    CHECK(gpumem::parse_duration("1h") == doctest::Approx(3600));
    CHECK(gpumem::parse_duration("1d") == doctest::Approx(86400));
    CHECK(gpumem::parse_duration("250us") == doctest::Approx(250e-6));
    CHECK(gpumem::parse_duration("0.5") == doctest::Approx(0.5));
    CHECK(gpumem::parse_duration("1e-3") == doctest::Approx(1e-3));
    CHECK(gpumem::parse_duration("5", 1e-3) == doctest::Approx(5e-3));
    CHECK_THROWS_WITH(gpumem::parse_duration("5x"), doctest::Contains("unknown unit 'x'"));
    CHECK_THROWS_AS(gpumem::parse_duration("0s"), UsageError);
    CHECK_THROWS_AS(gpumem::parse_duration("-1s"), UsageError);
    CHECK_THROWS_AS(gpumem::parse_duration("ms"), UsageError);
    CHECK_THROWS_AS(gpumem::parse_duration("400d"), UsageError);
    // Several parts, summed: what a person writes for 90 seconds.
    CHECK(gpumem::parse_duration("1m30s") == doctest::Approx(90));
    CHECK(gpumem::parse_duration("1h 30m") == doctest::Approx(5400));
    CHECK(gpumem::parse_duration("1m500ms") == doctest::Approx(60.5));
    CHECK_THROWS_WITH(gpumem::parse_duration("1m30"), doctest::Contains("each number of several needs its unit"));
    CHECK_THROWS_WITH(gpumem::parse_duration("1m30x"), doctest::Contains("unknown unit 'x'"));
    CHECK_THROWS_AS(gpumem::parse_duration("1m-30s"), UsageError);
    // Zero where an option means "no wait" by it (--lock-timeout 0), never negative.
    CHECK(gpumem::parse_duration("0", 1.0, true) == 0);
    CHECK(gpumem::parse_duration("0s", 1.0, true) == 0);
    CHECK_THROWS_AS(gpumem::parse_duration("0s"), UsageError);
    CHECK_THROWS_WITH(gpumem::parse_duration("-1s", 1.0, true), doctest::Contains("cannot be negative"));
}

TEST_CASE("values: a fraction is 0.1 or 10%") {
    CHECK(gpumem::parse_fraction("0.1") == doctest::Approx(0.1));
    CHECK(gpumem::parse_fraction("10%") == doctest::Approx(0.1));
    CHECK(gpumem::parse_fraction("10 %") == doctest::Approx(0.1));
    CHECK(gpumem::parse_fraction("100%") == doctest::Approx(1.0));
    CHECK(gpumem::parse_fraction("0") == doctest::Approx(0.0));
    CHECK_THROWS_AS(gpumem::parse_fraction("110%"), UsageError);
    CHECK_THROWS_AS(gpumem::parse_fraction("1.5"), UsageError);
    CHECK_THROWS_AS(gpumem::parse_fraction("-0.1"), UsageError);
    CHECK_THROWS_WITH(gpumem::parse_fraction("ten"), doctest::Contains("0.1 or 10%"));
}

TEST_CASE("values: units in any case") {
    CHECK(gpumem::parse_unit("mib") == gpumem::Unit::MiB);
    CHECK(gpumem::parse_unit("MIB") == gpumem::Unit::MiB);
    CHECK(gpumem::parse_unit("gb") == gpumem::Unit::GB);
    CHECK(gpumem::parse_unit("kB") == gpumem::Unit::KB);
    CHECK(gpumem::parse_unit("AUTO") == gpumem::Unit::automatic);
    CHECK_THROWS_AS(gpumem::parse_unit("mibs"), UsageError);
}

TEST_CASE("values: every option of a kind takes the same forms") {
    // Each option with a value of each form its kind takes; all reach the
    // first driver call (status 0 in parse-only mode).
    const std::vector<std::vector<std::string>> rate = {{"copy", "h2d", "--expect-min"}};
    const std::vector<std::vector<std::string>> time = {
        {"copy", "h2d", "--sample-time"}, {"info", "--loop"}, {"alloc-test", "churn", "--duration"}, {"alloc-test", "hold", "1GiB", "--duration"},
        {"memset", "--lock-timeout"}, {"copy", "h2d", "--lock-timeout"}, {"check", "--lock-timeout"},
        {"alloc-test", "latency", "--lock-timeout"}, {"alloc-test", "max", "--lock-timeout"}, {"alloc-test", "fill", "1GiB", "--lock-timeout"},
        {"alloc-test", "churn", "--lock-timeout"}, {"check", "--xid-since"}};
    const std::vector<std::vector<std::string>> fraction = {
        {"report", "--outlier-fraction"},
        {"reuse-sim", "replay", "--workload", "dynamic", "--change-rate"},
        {"reuse-sim", "replay", "--device-total", "80GiB", "--memory-fraction"}};
    auto accepts = [](std::vector<std::string> args, const std::string& value) {
        args.push_back(value);
        std::string text;
        for (const std::string& a : args) text += a + " ";
        INFO(text);
        CHECK(parse_only(args) == 0);
    };
    for (const auto& option : rate)
        for (const char* v : {"50", "50GB/s", "50 GB/s", "50gb/s", "45000MB/s", "46GiB/s"}) accepts(option, v);
    for (const auto& option : time)
        for (const char* v : {"2", "2s", "2S", "20ms", "0.5s", "1m", "1m30s", "1h 30m"}) {
            const bool long_one = v[0] == '1';
            if (option.back() == "--sample-time" && long_one) continue;  // beyond --sample-time's 10 s
            accepts(option, v);
        }
    // --lock-timeout 0: no wait.
    CHECK(parse_only({"memset", "--lock-timeout", "0"}) == 0);
    CHECK(parse_only({"memset", "--lock-timeout", "2d"}) == 2);  // at most a day
    for (const auto& option : fraction)
        for (const char* v : {"0.1", "10%", "25 %", "0.5"}) accepts(option, v);
    for (const char* v : {"mib", "MiB", "MIB", "gb", "auto"}) accepts({"--units", v, "info"}, "--json");
    // And each refuses the same things, naming the option.
    CHECK(parse_only({"copy", "h2d", "--expect-min", "fast"}) == 2);
    CHECK(parse_only({"info", "--loop", "5x"}) == 2);
    CHECK(parse_only({"report", "--outlier-fraction", "150%"}) == 2);
}

TEST_CASE("values: PyTorch's knob names, as pasted from PYTORCH_CUDA_ALLOC_CONF, name the same knobs") {
    namespace rs = gpumem::reuse_sim;
    CHECK(rs::find_knob("max_split_size_mb") == rs::find_knob("max_split_size"));
    CHECK(rs::find_knob("max_split_size") != nullptr);
    for (const char* name : {"garbage_collection_threshold", "roundup_power2_divisions", "expandable_segments"})
        CHECK(rs::find_knob(name) != nullptr);
    // Both read MiB.
    const rs::SweepAxis a = rs::parse_sweep("max_split_size_mb=128");
    const rs::SweepAxis b = rs::parse_sweep("max_split_size=128");
    REQUIRE(a.values.size() == 1);
    REQUIRE(b.values.size() == 1);
    CHECK(a.values[0].max_split_size == b.values[0].max_split_size);
    CHECK(a.values[0].max_split_size == 128ULL << 20);
    CHECK(parse_only({"reuse-sim", "tune", "--sweep", "max_split_size_mb=128,256"}) == 0);
    CHECK(parse_only({"reuse-sim", "replay", "--max-split-size", "128"}) == 2);
}

TEST_CASE("suggestions: the edit distance and the rule of near enough") {
    CHECK(gpumem::edit_distance("info", "info") == 0);
    CHECK(gpumem::edit_distance("inof", "info") == 1);  // a swap counts once
    CHECK(gpumem::edit_distance("INFO", "info") == 0);
    CHECK(gpumem::edit_distance("", "abc") == 3);
    const std::vector<std::string_view> commands = {"info", "memset", "copy", "check", "report"};
    CHECK(gpumem::closest_name("inof", commands) == "info");
    CHECK(gpumem::closest_name("chekc", commands) == "check");
    CHECK(gpumem::closest_name("xyz", commands).empty());
    CHECK(gpumem::closest_name("info", commands).empty());  // a name is not its own suggestion
    CHECK(gpumem::did_you_mean("repot", commands) == "; did you mean 'report'?");
    CHECK(gpumem::did_you_mean("zzzzzz", commands).empty());
}

TEST_CASE("suggestions: every table of names offers the name meant for a typo of each of its names") {
    int tried = 0;
    for (const gpumem::cli::ListEntry& list : gpumem::cli::name_lists()) {
        const gpumem::NameListView view = list.view();
        std::vector<std::string_view> names;
        for (const auto& row : view.rows) names.push_back(row.first);
        for (std::string_view name : names) {
            if (name.size() < 4) continue;
            // The last two characters swapped, or one dropped where they are alike.
            std::string typo(name);
            std::swap(typo[typo.size() - 1], typo[typo.size() - 2]);
            if (typo == name) typo.pop_back();
            const std::string_view found = gpumem::closest_name(typo, names);
            INFO(list.name, ": '", typo, "' for '", name, "'");
            REQUIRE(!found.empty());
            CHECK(gpumem::edit_distance(typo, found) <= gpumem::edit_distance(typo, name));
            ++tried;
        }
    }
    CHECK(tried > 100);
}

TEST_CASE("suggestions: a table's unknown-name message offers the nearest") {
    CHECK_THROWS_WITH(gpumem::parse_unit("MiBB"), doctest::Contains("did you mean 'MiB'?"));
    // A long list (the knobs): the nearest first among a few, and where they all are.
    CHECK_THROWS_WITH(gpumem::reuse_sim::parse_sweep("max_split_sze=1"), doctest::Contains("(nearest: max_split_size; gpumem --list knobs)"));
}
