// --format prometheus without a GPU: the generic renderer (escaping, merged
// families, origin labels, names, numbers, the run's own metrics) and the
// validation script itself, each reader of which must reject what it should.
// Every exposition here also goes through tests/prometheus-check.sh; where
// neither promtool nor prometheus_client is installed, that part is skipped
// with a message.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "prometheus_text.hpp"

using namespace gpumem::cli;

namespace {

void check_valid(const std::string& text) {
    CAPTURE(text);
    prometheus_text::expect_valid({text});
}

Report report_of(std::vector<MetricFamily> families, std::vector<std::pair<std::string, std::string>> origin = {}) {
    Report r;
    r.command = "info";
    r.metrics = std::move(families);
    r.metric_labels = std::move(origin);
    return r;
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("prometheus renderer: label values escape backslash, quote and newline; HELP backslash and newline") {
    const std::string odd = "a \"quoted\" C:\\path\nsecond line";
    const Report r = report_of({{"gpumem_test_bytes", "Help with a \\ backslash,\na newline and \"quotes\".", MetricType::gauge,
                                 {{{{"name", odd}}, 1}}}});
    const std::string text = render_prometheus(r, 0);
    CHECK(text.find("gpumem_test_bytes{name=\"a \\\"quoted\\\" C:\\\\path\\nsecond line\"} 1\n") != std::string::npos);
    CHECK(text.find("# HELP gpumem_test_bytes Help with a \\\\ backslash,\\na newline and \"quotes\".\n") != std::string::npos);
    const prometheus_text::Exposition e = prometheus_text::parse(text);
    REQUIRE(e.find("gpumem_test_bytes").size() == 1);
    CHECK(e.find("gpumem_test_bytes")[0].labels.at("name") == odd);  // read back as written
    check_valid(text);
}

TEST_CASE("prometheus renderer: a family is written once, its samples in order, families in the order first seen") {
    const Report r = report_of({
        {"gpumem_beta", "B.", MetricType::gauge, {{{{"gpu", "0"}}, 1}}},
        {"gpumem_alpha_total", "A.", MetricType::counter, {{{{"gpu", "0"}}, 5}}},
        {"gpumem_beta", "B again (ignored).", MetricType::gauge, {{{{"gpu", "1"}}, 2}}},
        {"gpumem_alpha_total", "A.", MetricType::counter, {{{{"gpu", "1"}}, 6}}},
    });
    const std::string text = render_prometheus(r, 0);
    CHECK(count(text, "# HELP gpumem_beta ") == 1);
    CHECK(count(text, "# TYPE gpumem_beta gauge\n") == 1);
    CHECK(count(text, "# TYPE gpumem_alpha_total counter\n") == 1);
    CHECK(text.find("# HELP gpumem_beta B.\n# TYPE gpumem_beta gauge\ngpumem_beta{gpu=\"0\"} 1\ngpumem_beta{gpu=\"1\"} 2\n# HELP gpumem_alpha_total") !=
          std::string::npos);
    CHECK(text.find("gpumem_alpha_total{gpu=\"0\"} 5\ngpumem_alpha_total{gpu=\"1\"} 6\n") != std::string::npos);
    CHECK(text.find("B again") == std::string::npos);
    check_valid(text);
}

TEST_CASE("prometheus renderer: the origin's labels on every sample; a sample's own label wins") {
    const Report r = report_of({{"gpumem_x", "X.", MetricType::gauge, {{{{"gpu", "0"}}, 1}, {{{"host", "mine"}}, 2}}}},
                               {{"host", "node-7"}, {"job_id", "4242"}, {"rank", "3"}});
    const prometheus_text::Exposition e = prometheus_text::parse(render_prometheus(r, 0));
    for (const prometheus_text::Sample& s : e.samples) {
        CAPTURE(s.name);
        CHECK(s.labels.count("host") == 1);
        CHECK(s.labels.at("job_id") == "4242");
        CHECK(s.labels.at("rank") == "3");
    }
    CHECK(e.value("gpumem_x", {{"gpu", "0"}, {"host", "node-7"}}) == 1.0);
    CHECK(e.value("gpumem_x", {{"host", "mine"}}) == 2.0);
    CHECK(e.value("gpumem_run_success", {{"command", "info"}, {"host", "node-7"}}) == 1.0);
    check_valid(render_prometheus(r, 0));
}

TEST_CASE("prometheus renderer: names made legal; label names take no colon") {
    CHECK(metric_name("gpumem_memory_free_bytes") == "gpumem_memory_free_bytes");
    CHECK(metric_name("gpumem-memory.free bytes") == "gpumem_memory_free_bytes");
    CHECK(metric_name("0abc9") == "_abc9");
    CHECK(metric_name("a:b") == "a:b");
    CHECK(metric_name("") == "_");
    CHECK(metric_name("é") == "__");  // bytes, not characters
    const Report r = report_of({{"gpumem bad-name", "Y.", MetricType::gauge, {{{{"odd:label", "v"}, {"9lives", "w"}}, 1}}}});
    const std::string text = render_prometheus(r, 0);
    CHECK(text.find("gpumem_bad_name{odd_label=\"v\",_lives=\"w\"} 1\n") != std::string::npos);
    check_valid(text);
}

TEST_CASE("prometheus renderer: numbers: integers exactly, others round-trip, special values as Prometheus spells them") {
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<std::pair<double, std::string>> cases = {
        {0, "0"},
        {-0.0, "-0"},
        {1, "1"},
        {150754820096.0, "150754820096"},
        {9007199254740991.0, "9007199254740991"},  // 2^53 - 1
        {0.5, "0.5"},
        {1.0 / 3, "0.33333333333333331"},
        {2.619e9, "2619000000"},
        {1e20, "1e+20"},
        {-2.5, "-2.5"},
        {inf, "+Inf"},
        {-inf, "-Inf"},
        {std::nan(""), "NaN"},
    };
    MetricFamily f{"gpumem_number", "Numbers.", MetricType::gauge, {}};
    for (std::size_t i = 0; i < cases.size(); ++i) f.samples.push_back({{{"case", std::to_string(i)}}, cases[i].first});
    const std::string text = render_prometheus(report_of({f}), 0);
    const prometheus_text::Exposition e = prometheus_text::parse(text);
    for (std::size_t i = 0; i < cases.size(); ++i) {
        CAPTURE(cases[i].second);
        CHECK(text.find("gpumem_number{case=\"" + std::to_string(i) + "\"} " + cases[i].second + "\n") != std::string::npos);
        const double back = e.value("gpumem_number", {{"case", std::to_string(i)}}).value();
        if (std::isnan(cases[i].first)) CHECK(std::isnan(back));
        else CHECK(back == cases[i].first);
    }
    check_valid(text);
}

TEST_CASE("prometheus renderer: the run's success and exit status end every exposition") {
    const std::string ok = render_prometheus(report_of({}), 0);
    CHECK(ok ==
          "# HELP gpumem_run_success Whether the gpumem run that wrote these metrics succeeded (1) or failed (0).\n"
          "# TYPE gpumem_run_success gauge\n"
          "gpumem_run_success{command=\"info\"} 1\n"
          "# HELP gpumem_run_exit_status The exit status of the gpumem run that wrote these metrics (see gpumem(1)).\n"
          "# TYPE gpumem_run_exit_status gauge\n"
          "gpumem_run_exit_status{command=\"info\"} 0\n");
    check_valid(ok);
    // A failed run keeps what it measured, and says that it failed.
    const Report partial = report_of({{"gpumem_memory_free_bytes", "Free.", MetricType::gauge, {{{{"gpu", "0"}}, 7}}}});
    const prometheus_text::Exposition failed = prometheus_text::parse(render_prometheus(partial, 3));
    CHECK(failed.value("gpumem_run_success") == 0.0);
    CHECK(failed.value("gpumem_run_exit_status") == 3.0);
    CHECK(failed.value("gpumem_memory_free_bytes", {{"gpu", "0"}}) == 7.0);
    CHECK(failed.samples.back().name == "gpumem_run_exit_status");
    check_valid(render_prometheus(partial, 130));
}

TEST_CASE("prometheus-check.sh: each reader rejects what it should; 77 with neither") {
    const std::string valid = "# HELP gpumem_ok_bytes Fine.\n# TYPE gpumem_ok_bytes gauge\ngpumem_ok_bytes{gpu=\"0\"} 1\n";
    const std::string lint = "# HELP gpumem_x_count Bad suffix.\n# TYPE gpumem_x_count gauge\ngpumem_x_count 1\n";
    const std::string counter = "# HELP gpumem_errors Counter without _total.\n# TYPE gpumem_errors counter\ngpumem_errors 1\n";
    const std::string escape = "# HELP gpumem_y Bad escape.\n# TYPE gpumem_y gauge\ngpumem_y{a=\"\\q\"} 1\n";
    const std::string twice = "# HELP gpumem_z Twice.\n# TYPE gpumem_z gauge\ngpumem_z{a=\"1\"} 1\ngpumem_z{a=\"1\"} 2\n";
    const std::string untyped = "gpumem_u 1\n";
    const std::string garbage = "# HELP gpumem_g G.\n# TYPE gpumem_g gauge\ngpumem_g{a=\"1\" 1\n";
    const std::vector<std::string> no_promtool = {"PROMTOOL="}, no_python = {"PROMETHEUS_PYTHON="};
    CHECK(prometheus_text::check(valid, {"PROMTOOL=", "PROMETHEUS_PYTHON="}).status == 77);
    const prometheus_text::Check with_promtool = prometheus_text::check(valid, no_python);
    if (with_promtool.status == 77) {
        MESSAGE("promtool missing: its cases skipped");
    } else {
        CHECK(with_promtool.status == 0);
        for (const std::string& bad : {lint, counter, escape, garbage}) {
            CAPTURE(bad);
            const prometheus_text::Check c = prometheus_text::check(bad, no_python);
            CHECK(c.status == 1);
            CHECK(c.messages.find("promtool") != std::string::npos);
        }
    }
    const prometheus_text::Check with_python = prometheus_text::check(valid, no_promtool);
    if (with_python.status == 77) {
        MESSAGE("python3's prometheus_client missing: its cases skipped");
    } else {
        CHECK(with_python.status == 0);
        for (const std::string& bad : {twice, untyped, garbage}) {
            CAPTURE(bad);
            const prometheus_text::Check c = prometheus_text::check(bad, no_promtool);
            CHECK(c.status == 1);
            CHECK(c.messages.find("prometheus_client") != std::string::npos);
        }
    }
    // A file that is not there is the caller's mistake, not an invalid exposition.
    const RunResult missing = run_program("/bin/bash", {prometheus_text::check_script(), "/nonexistent/file.prom"});
    CHECK(missing.status == 2);
    CHECK(run_program("/bin/bash", {prometheus_text::check_script()}).status == 2);
}
