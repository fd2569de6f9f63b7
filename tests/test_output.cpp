// The output layer: one Report rendered as a table, one JSON document, CSV or
// bare values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "cli/width.hpp"
#include "version.hpp"

using namespace gpumem;
using namespace gpumem::cli;
using nlohmann::json;

namespace {

constexpr std::uint64_t kTotal = 85899345920ULL;  // 80 GiB
constexpr std::uint64_t kFree = 1610612736ULL;    // 1.5 GiB

// Two devices, every kind of field, one missing value.
Report sample_report() {
    Report r;
    r.command = "sample";
    Table t;
    t.key = "devices";
    t.fields = {
        {"index", "cuda", FieldKind::integer},
        {"name", "name", FieldKind::text},
        {"total", "total", FieldKind::bytes},
        {"free", "free", FieldKind::bytes},
        {"bandwidth", "bandwidth", FieldKind::bandwidth},
        {"ratio", "ratio", FieldKind::real, 2},
        {"share", "share", FieldKind::percent, 1},
        {"ok", "ok", FieldKind::boolean},
        {"reserved", "reserved", FieldKind::bytes},
    };
    t.add_row({std::int64_t{0}, std::string("NVIDIA H100"), kTotal, kFree, 55.5e9, 0.125, 87.25, true, Cell()});
    t.add_row({std::int64_t{1}, std::string("GPU, \"B\""), std::uint64_t{4096}, std::uint64_t{1048576}, 2.0e12, 2.0, 5.0,
               false, std::uint64_t{512}});
    r.tables.push_back(std::move(t));
    // Through make_record, as commands do (a temporary Cell passed to add()
    // trips GCC 12's -Wmaybe-uninitialized on std::variant at -O3).
    struct Doc {
        std::string source;
        std::int64_t count;
    };
    static constexpr Column<Doc> kDocColumns[] = {
        {{"source", "", FieldKind::text}, [](const Doc& d) -> Cell { return d.source; }},
        {{"count", "", FieldKind::integer}, [](const Doc& d) -> Cell { return d.count; }},
    };
    r.fields = make_record(Columns<Doc>(kDocColumns), Doc{"test", 2});
    return r;
}

OutputOptions opts(Format format, Unit unit = Unit::automatic, bool header = true) {
    OutputOptions o;
    o.format = format;
    o.unit = unit;
    o.header = header;
    return o;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<std::string> split(const std::string& line, char sep) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(line);
    while (std::getline(in, part, sep)) parts.push_back(part);
    if (!line.empty() && line.back() == sep) parts.push_back("");
    return parts;
}

}  // namespace

TEST_CASE("output: --format names") {
    CHECK(kFormats.parse("table").format == Format::table);
    CHECK(kFormats.parse("json").format == Format::json);
    CHECK(kFormats.parse("csv").format == Format::csv);
    CHECK(kFormats.parse("value").format == Format::value);
    for (const char* bad : {"", "JSON", "xml", "yaml", "tsv"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(kFormats.parse(bad), UsageError);
    }
}

TEST_CASE("output: JSON is one document with a schema version, numbers as numbers, bytes as bytes") {
    for (Unit unit : {Unit::automatic, Unit::MiB, Unit::GB}) {
        const std::string unit_label = unit_name(unit);
        CAPTURE(unit_label);
        const std::string text = render(sample_report(), opts(Format::json, unit));
        CHECK(text.back() == '\n');
        const json doc = json::parse(text);  // throws (failing the test) if invalid
        CHECK(doc.at("schema_version") == kSchemaVersion);
        CHECK(doc.at("schema_version").is_number_integer());
        CHECK(doc.at("tool") == "gpumem");
        CHECK(doc.at("version") == GPUMEM_VERSION);
        CHECK(doc.at("command") == "sample");
        CHECK(doc.at("ok") == true);
        CHECK(doc.at("source") == "test");
        CHECK(doc.at("count") == 2);
        CHECK_FALSE(doc.contains("warnings"));
        const json& devices = doc.at("devices");
        REQUIRE(devices.is_array());
        REQUIRE(devices.size() == 2);
        const json& d0 = devices[0];
        CHECK(d0.at("index").is_number_integer());
        CHECK(d0.at("index") == 0);
        CHECK(d0.at("name") == "NVIDIA H100");
        // Bytes stay bytes whatever --units says.
        CHECK(d0.at("total").is_number_unsigned());
        CHECK(d0.at("total").get<std::uint64_t>() == kTotal);
        CHECK(d0.at("free").get<std::uint64_t>() == kFree);
        // Bandwidth in GB/s (1e9 bytes/s).
        CHECK(d0.at("bandwidth").is_number());
        CHECK(d0.at("bandwidth").get<double>() == doctest::Approx(55.5));
        CHECK(d0.at("ratio").get<double>() == doctest::Approx(0.125));
        CHECK(d0.at("share").get<double>() == doctest::Approx(87.25));
        CHECK(d0.at("ok").is_boolean());
        CHECK(d0.at("ok") == true);
        CHECK(d0.at("reserved").is_null());
        CHECK(devices[1].at("name") == "GPU, \"B\"");
        CHECK(devices[1].at("ok") == false);
        CHECK(devices[1].at("reserved") == 512);
    }
}

TEST_CASE("output: JSON keeps keys in order and compact mode is one line") {
    Report r = sample_report();
    r.warnings.push_back("something odd");
    const std::string pretty = render(r, opts(Format::json));
    CHECK(lines_of(pretty).size() > 1);
    CHECK(pretty.find("\"schema_version\"") < pretty.find("\"tool\""));
    CHECK(pretty.find("\"tool\"") < pretty.find("\"devices\""));
    OutputOptions compact = opts(Format::json);
    compact.compact_json = true;
    const std::string line = render(r, compact);
    REQUIRE(lines_of(line).size() == 1);
    CHECK(line.back() == '\n');
    const json doc = json::parse(line);
    CHECK(doc.at("warnings") == json::array({"something odd"}));
    CHECK(doc == json::parse(pretty));
}

TEST_CASE("output: the origin is a top-level object after ok, only when not empty, and JSON only") {
    Report r = sample_report();
    CHECK_FALSE(json::parse(render(r, opts(Format::json))).contains("origin"));
    Origin o;
    o.host = "node7";
    o.launcher = "openmpi";
    o.rank = 5;
    o.local_rank = 1;
    r.origin = origin_record(o);
    const std::string text = render(r, opts(Format::json));
    const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text);
    std::vector<std::string> keys;
    for (const auto& [k, v] : doc.items()) keys.push_back(k);
    REQUIRE(keys.size() > 5);
    CHECK(keys[4] == "ok");
    CHECK(keys[5] == "origin");
    // Absent fields are left out, numbers are numbers.
    CHECK(doc.at("origin").dump() == R"({"host":"node7","launcher":"openmpi","rank":5,"local_rank":1})");
    // A failure's document keeps it.
    const json failed = json::parse(render_json_error(r, UsageError("bad"), opts(Format::json)));
    CHECK(failed.at("origin").at("rank") == 5);
    // Text and CSV are unchanged by it.
    Report plain = sample_report();
    for (Format f : {Format::table, Format::csv, Format::value})
        CHECK(render(r, opts(f)) == render(plain, opts(f)));
}

TEST_CASE("output: the origin's schema requires the host only") {
    const Json s = schema_json(DocumentSchema{"sample", {}, {}});
    const Json& origin = s.at("properties").at("origin");
    CHECK(origin.at("required") == Json::array({"host"}));
    CHECK(origin.at("properties").at("rank").at("type") == Json::array({"integer", "null"}));
    CHECK_FALSE(s.at("required").dump().find("origin") != std::string::npos);
}

TEST_CASE("output: JSON of non-finite numbers and invalid UTF-8 stays valid") {
    Report r;
    r.command = "x";
    Table t;
    t.key = "rows";
    t.fields = {{"v", "v", FieldKind::real}, {"s", "s", FieldKind::text}};
    t.add_row({std::numeric_limits<double>::infinity(), std::string("bad \xff byte")});
    t.add_row({std::nan(""), std::string("ok")});
    r.tables.push_back(std::move(t));
    const json doc = json::parse(render(r, opts(Format::json)));
    CHECK(doc.at("rows")[0].at("v").is_null());
    CHECK(doc.at("rows")[1].at("v").is_null());
    CHECK(doc.at("rows")[0].at("s").is_string());
}

TEST_CASE("output: CSV has a header, units in headers, plain values") {
    SUBCASE("automatic units: bytes") {
        const auto lines = lines_of(render(sample_report(), opts(Format::csv)));
        REQUIRE(lines.size() == 3);
        CHECK(lines[0] == "index,name,total,free,bandwidth [GB/s],ratio,share,ok,reserved");
        CHECK(lines[1] == "0,NVIDIA H100,85899345920,1610612736,55.5,0.125,87.25,true,");
        // Commas and quotes are quoted as RFC 4180 says.
        CHECK(lines[2] == "1,\"GPU, \"\"B\"\"\",4096,1048576,2000,2,5,false,512");
    }
    SUBCASE("MiB: whole MiB, as nvidia-smi prints them") {
        const auto lines = lines_of(render(sample_report(), opts(Format::csv, Unit::MiB)));
        REQUIRE(lines.size() == 3);
        CHECK(lines[0] == "index,name,total [MiB],free [MiB],bandwidth [GiB/s],ratio,share,ok,reserved [MiB]");
        const auto cells = split(lines[1], ',');
        REQUIRE(cells.size() == 9);
        CHECK(cells[2] == "81920");
        CHECK(cells[3] == "1536");
        CHECK(cells[4] == "51.688");  // 55.5e9 / 2^30 = 51.6885
    }
    SUBCASE("GiB: three decimals") {
        const auto lines = lines_of(render(sample_report(), opts(Format::csv, Unit::GiB)));
        REQUIRE(lines.size() == 3);
        CHECK(lines[0].find("total [GiB],free [GiB]") != std::string::npos);
        const auto cells = split(lines[1], ',');
        CHECK(cells[2] == "80");
        CHECK(cells[3] == "1.5");
    }
    SUBCASE("B: no unit in the header") {
        const auto lines = lines_of(render(sample_report(), opts(Format::csv, Unit::B)));
        CHECK(lines[0].find(",total,free,") != std::string::npos);
        CHECK(lines[1].find(",85899345920,") != std::string::npos);
    }
    SUBCASE("decimal units") {
        const auto lines = lines_of(render(sample_report(), opts(Format::csv, Unit::GB)));
        CHECK(lines[0].find("total [GB]") != std::string::npos);
        CHECK(lines[0].find("bandwidth [GB/s]") != std::string::npos);
        CHECK(split(lines[1], ',')[2] == "85.899");
    }
    SUBCASE("--no-header") {
        const auto lines = lines_of(render(sample_report(), opts(Format::csv, Unit::automatic, false)));
        REQUIRE(lines.size() == 2);
        CHECK(lines[0].rfind("0,NVIDIA H100,", 0) == 0);
    }
    SUBCASE("every row has as many cells as the header") {
        for (const auto& line : lines_of(render(sample_report(), opts(Format::csv)))) {
            CAPTURE(line);
            // The quoted cell holds one comma.
            const auto commas = std::count(line.begin(), line.end(), ',') - (line.find('"') != std::string::npos ? 1 : 0);
            CHECK(commas == 8);
        }
    }
}

TEST_CASE("output: CSV separates tables by a blank line") {
    Report r = sample_report();
    Table extra;
    extra.key = "other";
    extra.fields = {{"pid", "pid", FieldKind::integer}};
    extra.add_row({std::int64_t{1234}});
    r.tables.push_back(std::move(extra));
    const auto lines = lines_of(render(r, opts(Format::csv)));
    REQUIRE(lines.size() == 6);
    CHECK(lines[3].empty());
    CHECK(lines[4] == "pid");
    CHECK(lines[5] == "1234");
}

TEST_CASE("output: value is bare, tab-separated values of the first table") {
    Report r = sample_report();
    Table extra;
    extra.key = "other";
    extra.fields = {{"pid", "pid", FieldKind::integer}};
    extra.add_row({std::int64_t{1234}});
    r.tables.push_back(std::move(extra));
    SUBCASE("bytes by default") {
        const auto lines = lines_of(render(r, opts(Format::value)));
        REQUIRE(lines.size() == 2);  // no header, no second table
        const auto cells = split(lines[0], '\t');
        REQUIRE(cells.size() == 9);
        CHECK(cells[0] == "0");
        CHECK(cells[1] == "NVIDIA H100");
        CHECK(cells[2] == "85899345920");
        CHECK(cells[7] == "true");
        CHECK(cells[8] == "");
        CHECK(split(lines[1], '\t').at(1) == "GPU, \"B\"");  // no CSV quoting
    }
    SUBCASE("in the unit asked for") {
        const auto lines = lines_of(render(r, opts(Format::value, Unit::MiB)));
        REQUIRE(lines.size() == 2);
        CHECK(split(lines[0], '\t').at(3) == "1536");
        CHECK(split(lines[1], '\t').at(3) == "1");
    }
    SUBCASE("one column gives one value per line") {
        Report one;
        Table t;
        t.key = "devices";
        t.fields = {{"free", "free", FieldKind::bytes}};
        t.add_row({kFree});
        t.add_row({std::uint64_t{3} << 20});
        one.tables.push_back(std::move(t));
        CHECK(render(one, opts(Format::value, Unit::MiB)) == "1536\n3\n");
        CHECK(render(one, opts(Format::value)) == "1610612736\n3145728\n");
    }
    SUBCASE("no tables: nothing") { CHECK(render(Report{}, opts(Format::value)).empty()); }
}

TEST_CASE("output: table is aligned, human units, optional header") {
    Report r = sample_report();
    r.text_before.push_back("before");
    r.text_after.push_back("after");
    const auto lines = lines_of(render(r, opts(Format::table)));
    REQUIRE(lines.size() == 5);
    CHECK(lines[0] == "before");
    CHECK(lines[4] == "after");
    CHECK(lines[1].rfind("cuda  name", 0) == 0);
    CHECK(lines[2].find("80 GiB") != std::string::npos);
    CHECK(lines[2].find("1.5 GiB") != std::string::npos);
    CHECK(lines[2].find("55.5 GB/s") != std::string::npos);
    CHECK(lines[2].find("87.2") != std::string::npos);  // one decimal for "share"
    CHECK(lines[2].find("yes") != std::string::npos);
    CHECK(lines[3].find("no") != std::string::npos);
    // Missing values show as '-'.
    CHECK(lines[2].back() == '-');
    // Numbers are right-aligned: the "free" column ends at the same place on every line.
    const auto end_of = [](const std::string& line, const std::string& cell) { return line.find(cell) + cell.size(); };
    CHECK(end_of(lines[1], "free") == end_of(lines[2], "1.5 GiB"));
    CHECK(end_of(lines[1], "free") == end_of(lines[3], "1 MiB"));
    // No trailing blanks.
    for (const auto& line : lines) CHECK((line.empty() || line.back() != ' '));

    const auto no_header = lines_of(render(sample_report(), opts(Format::table, Unit::automatic, false)));
    REQUIRE(no_header.size() == 2);
    CHECK(no_header[0].at(no_header[0].find_first_not_of(' ')) == '0');
    CHECK(no_header[0].find("cuda") == std::string::npos);

    const auto mib = render(sample_report(), opts(Format::table, Unit::MiB));
    CHECK(mib.find("81920 MiB") != std::string::npos);
}

TEST_CASE("output: render_json_error keeps the report and adds ok:false and the error") {
    Report r = sample_report();
    const UsageError usage("invalid device 'x'");
    const json doc = json::parse(render_json_error(r, usage, opts(Format::json)));
    CHECK(doc.at("schema_version") == kSchemaVersion);
    CHECK(doc.at("ok") == false);
    CHECK(doc.at("command") == "sample");
    CHECK(doc.at("devices").size() == 2);
    CHECK(doc.at("error").at("status") == 2);
    CHECK(doc.at("error").at("status").is_number_integer());
    CHECK(doc.at("error").at("code") == "usage_error");
    CHECK(doc.at("error").at("message") == "invalid device 'x'");

    OutputOptions compact = opts(Format::json);
    compact.compact_json = true;
    const std::string line = render_json_error(Report{}, OutOfMemoryError("too big", 1), compact);
    CHECK(lines_of(line).size() == 1);
    const json oom = json::parse(line);
    CHECK(oom.at("error").at("status") == 5);
    CHECK(oom.at("error").at("code") == "out_of_memory");
    CHECK(oom.at("ok") == false);

    CHECK(json::parse(render_json_error(Report{}, NoDeviceError("none"), compact)).at("error").at("status") == 3);
    CHECK(json::parse(render_json_error(Report{}, InterruptedError(), compact)).at("error").at("status") == 130);
}

TEST_CASE("output: exit status names are distinct") {
    const ExitStatus all[] = {ExitStatus::success,         ExitStatus::runtime_error, ExitStatus::usage_error,
                              ExitStatus::no_device,       ExitStatus::verification_failed,
                              ExitStatus::out_of_memory,   ExitStatus::below_expectation, ExitStatus::check_failed,
                              ExitStatus::interrupted};
    std::vector<std::string> names;
    for (ExitStatus s : all) names.emplace_back(exit_status_name(s));
    std::sort(names.begin(), names.end());
    CHECK(std::unique(names.begin(), names.end()) == names.end());
    CHECK(std::string(exit_status_name(ExitStatus::below_expectation)) == "below_expectation");
}

TEST_CASE("output: a bandwidth held as an integer is GB/s in JSON too") {
    // JSON printed bytes/s for integer bandwidth cells while CSV, value and
    // table printed GB/s for the same cell.
    Report r;
    r.command = "x";
    Table t;
    t.key = "rows";
    t.fields = {{"bw_unsigned", "bw", FieldKind::bandwidth}, {"bw_signed", "bw", FieldKind::bandwidth}};
    t.add_row({std::uint64_t{55500000000ULL}, std::int64_t{2000000000}});
    r.tables.push_back(std::move(t));
    const json doc = json::parse(render(r, opts(Format::json)));
    CHECK(doc.at("rows")[0].at("bw_unsigned").get<double>() == doctest::Approx(55.5));
    CHECK(doc.at("rows")[0].at("bw_signed").get<double>() == doctest::Approx(2.0));
    CHECK(render(r, opts(Format::value)) == "55.5\t2\n");
}

// render_to writes a JSON document a row at a time (report --json over
// 100 000 GPUs held 3.3 GiB as one DOM): the bytes must be the DOM's.
TEST_CASE("output: JSON streamed row by row is byte for byte the document's dump") {
    Report r = sample_report();
    Origin o;
    o.host = "node7";
    o.rank = 5;
    r.origin = origin_record(o);
    r.warnings = {"a warning", "bad \xff byte"};
    // A table of nested records and lists, an empty one, and one long
    // enough to be handed over in several pieces.
    struct Inner {
        std::string name;
        std::vector<double> values;
    };
    static constexpr Column<Inner> kInner[] = {
        {{"name", "", FieldKind::text}, [](const Inner& x) -> Cell { return x.name; }},
        {{"values", "", FieldKind::list}, [](const Inner& x) -> Cell { return x.values; }},
    };
    Table nested;
    nested.key = "nested";
    nested.fields = {{"one", "", FieldKind::record}, {"many", "", FieldKind::records}, {"empty", "", FieldKind::records}};
    nested.add_row({record_cell(make_record(Columns<Inner>(kInner), Inner{"x\ny", {1.5, std::nan("")}})),
                    records_cell(make_records(Columns<Inner>(kInner), std::vector<Inner>{{"a", {}}, {"b", {2}}})),
                    records_cell(RecordList{})});
    r.tables.push_back(std::move(nested));
    Table empty;
    empty.key = "none";
    empty.fields = {{"v", "v", FieldKind::integer}};
    r.tables.push_back(std::move(empty));
    Table big;
    big.key = "big";
    big.fields = {{"i", "i", FieldKind::integer}, {"text", "text", FieldKind::text}};
    for (std::uint64_t i = 0; i < 5000; ++i) big.add_row({i, std::string(300, static_cast<char>('a' + i % 26))});
    r.tables.push_back(std::move(big));
    for (bool compact : {false, true}) {
        OutputOptions options = opts(Format::json);
        options.compact_json = compact;
        const Json dom = report_to_json(r);
        const std::string expected =
            (compact ? dom.dump(-1, ' ', false, Json::error_handler_t::replace) : dom.dump(2, ' ', false, Json::error_handler_t::replace)) + "\n";
        std::string streamed;
        int pieces = 0;
        render_to(r, options, [&](std::string_view text) {
            streamed += text;
            ++pieces;
        });
        INFO("compact: ", compact);
        CHECK(streamed == expected);
        CHECK(pieces > 1);  // 1.5 MB of rows: not one string
        CHECK(render(r, options) == expected);
        // A failure's document: ok false where ok was, the error last.
        Json failed = dom;
        failed["ok"] = false;
        failed["error"] = {{"status", 7}, {"code", exit_status_name(ExitStatus::check_failed)}, {"message", "a check failed"}};
        const std::string expected_error =
            (compact ? failed.dump(-1, ' ', false, Json::error_handler_t::replace) : failed.dump(2, ' ', false, Json::error_handler_t::replace)) + "\n";
        streamed.clear();
        pieces = 0;
        render_json_error_to(r, CheckFailedError("a check failed"), options, [&](std::string_view text) {
            streamed += text;
            ++pieces;
        });
        CHECK(streamed == expected_error);
        CHECK(pieces > 1);
        CHECK(render_json_error(r, CheckFailedError("a check failed"), options) == expected_error);
    }
}

// issue 45: a progress line wider than the terminal wraps, and each redraw's
// "\r" then leaves its first rows behind (seen on an H200 at 80 columns).
TEST_CASE("a progress line keeps within the terminal: the detail goes first, then the label's end") {
    const std::string label = "copy h2d";
    CHECK(progress_line(label, 3, 12, "4 KiB", 80) == "copy h2d: 3/12 (25%) 4 KiB");
    CHECK(progress_line(label, 3, 12, "", 80) == "copy h2d: 3/12 (25%)");
    const std::string detail(100, 'x');
    CHECK(progress_line(label, 3, 12, detail, 80) == "copy h2d: 3/12 (25%)");
    const std::string long_label = "reuse-sim tune: " + std::string(90, 'y');
    for (const std::size_t columns : {40, 80, 100}) {
        CAPTURE(columns);
        const std::string line = progress_line(long_label, 7, 100, detail, columns);
        CHECK(display_width(line) == columns - 1);
        CHECK(line.size() >= 15);
        CHECK(line.substr(line.size() - 15) == "...: 7/100 (7%)");
    }
    // A label of multi-byte characters is cut between them, not inside one.
    std::string stars;
    for (int i = 0; i < 60; ++i) stars += "\u2605";
    const std::string cut = progress_line(stars, 1, 2, "", 40);
    CHECK(display_width(cut) == 39);
    CHECK(cut.rfind("\u2605...: 1/2 (50%)") == cut.size() - std::string("\u2605...: 1/2 (50%)").size());
    // Too narrow for even the count: the start of it, within the width.
    CHECK(display_width(progress_line(label, 123456789, 987654321, "", 12)) == 11);
}

// issue 57: wide characters take two columns, and a word longer than the
// line is cut at the width, not left past it.
TEST_CASE("widths: a CJK character is two columns, a combining mark none; a cut keeps within the columns") {
    CHECK(display_width("\u6f22\u5b57") == 4);
    CHECK(display_width("e\u0301") == 1);
    CHECK(display_width("\u2588\u258F ab") == 5);
    CHECK(display_width("\xff" "a") == 2);  // a malformed byte: one column, as a replacement character
    std::string cjk;
    for (int i = 0; i < 79; ++i) cjk += "\u6f22";
    CHECK(display_width(cjk) == 158);
    // A failed run's output line as max-batch shows it: indented 2, cut before the last column.
    for (const std::size_t columns : {40, 80, 100}) {
        CAPTURE(columns);
        const std::string cut = fit_columns(cjk, columns - 3);
        CHECK(display_width("  " + cut) <= columns - 1);
        CHECK(display_width(cut) >= columns - 5);  // no more than a wide character's column left unused
        CHECK(cut.substr(cut.size() - 3) == "...");
        CHECK(cut.find("\u6f22") == 0);
    }
    CHECK(prefix_within("\u6f22\u6f22", 3) == 3);  // never half of a wide character
}

TEST_CASE("widths: prose keeps within the width: a word longer than the line is cut, an indented line keeps its indent") {
    const std::string path = "/scratch/" + std::string(100, 'p') + ".pickle";  // 116 characters
    REQUIRE(path.size() > 110);
    const std::string id = "check." + std::string(105, 'x');
    for (const std::size_t columns : {40, 80, 100}) {
        CAPTURE(columns);
        for (const std::string& text : {"gpumem: warning: " + path + ": cannot read the trace, so nothing is replayed",
                                        "   " + id + " is not a check this gpumem knows, " + path,
                                        "   the settings " + std::string(50, 'a') + "," + std::string(70, 'b') + "," + path}) {
            const std::string fitted = fit_prose(text, columns);
            CAPTURE(fitted);
            std::istringstream in(fitted);
            std::string all;
            for (std::string line; std::getline(in, line);) {
                CAPTURE(line);
                CHECK(display_width(line) <= columns);
                all += line;
            }
            // Nothing lost: every character of the long words is there.
            const std::string& word = text.find(id) != std::string::npos ? id : path;
            std::string squeezed;
            for (char c : all)
                if (c != ' ') squeezed += c;
            CHECK(squeezed.find(word) != std::string::npos);
        }
    }
    // Lines after the first stay within the indent of the line they come from.
    const std::string fitted = fit_prose("   " + std::string(200, 'z'), 80);
    std::istringstream in(fitted);
    for (std::string line; std::getline(in, line);) CHECK(line.rfind("   ", 0) == 0);
}
