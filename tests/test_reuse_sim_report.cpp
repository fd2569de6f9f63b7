// gpumem reuse-sim without running it: the report of synthetic results
// (keys, types, the table against machine formats, partial runs), the
// document's keys against each job's schema, check() in parse-only mode,
// and the strategy table against --help, --list and the man page.
#include <doctest/doctest.h>

#include <algorithm>

#include <cctype>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "in_process.hpp"
#include "cli_harness.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "reuse_sim/reuse_sim_replay.hpp"
#include "reuse_sim/reuse_sim_tune.hpp"
#include "tests_dir.hpp"

using namespace gpumem;
using namespace gpumem::cli;
namespace rs = gpumem::reuse_sim;
using json = nlohmann::ordered_json;

namespace {

// Prose wrapped within the width (100 columns here), read as one line: a
// newline and the indent of the line after it are one space.
std::string one_line(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\n') {
            out += text[i];
            continue;
        }
        out += ' ';
        while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
    }
    return out;
}

rs::LaneResult lane(const std::string& strategy, std::uint64_t allocs, std::uint64_t peak_reserved) {
    rs::LaneResult l;
    l.strategy = strategy;
    l.requests = 10;
    l.served = 10;
    l.hits = 10 - allocs;
    l.upstream_allocs = allocs;
    l.upstream_frees = allocs;
    l.hit_rate = static_cast<double>(l.hits) / 10.0;
    l.peak_reserved = peak_reserved;
    l.peak_live = 4096;
    l.slack_at_peak = peak_reserved - 4096;
    l.fragmentation = 0.25;
    l.modelled_us = 1500;
    l.counters.device_allocs = allocs;
    l.counters.device_frees = allocs;
    l.counters.peak_reserved_bytes = peak_reserved;
    return l;
}

ReplayRequest request(bool execute = false) {
    ReplayRequest q;
    for (const char* name : {"naive", "binning"}) q.setup.strategies.push_back(&rs::kStrategies.row(name));
    q.input.workload.name = "training";
    q.setup.capacity = 1ULL << 30;
    q.chart = true;
    if (execute) q.execute_on = parse_device_spec("0");
    return q;
}

// What replay's and tune's results share: the input replayed.
template <typename Results>
Results replayed() {
    Results r;
    r.input_description = "workload training, 3 steps, seed 1, batch 32";
    r.input_format = "generated";
    r.cost_device = "NVIDIA H200";
    r.cost_source = "built-in";
    r.summary = rs::ReplaySummary{};
    r.summary->events = 20;
    r.summary->allocs = 10;
    r.summary->frees = 10;
    r.summary->largest_request = 4096;
    r.summary->seconds = 0.5;
    r.complete = true;
    return r;
}

ReplayResults results(bool execute = false) {
    ReplayResults r = replayed<ReplayResults>();
    r.lanes = {lane("naive", 10, 8192), lane("binning", 2, 1 << 20)};
    r.lanes[1].details = {{"pool_size", 1 << 20}, {"bin_262144_chunks", 1}};
    r.timeline = rs::Timeline(2, 4);  // no points: no chart
    if (execute) {
        ExecuteResults x{DeviceId(0), "NVIDIA H100", 80ULL << 30, 80ULL << 30, {}};
        for (const rs::LaneResult& l : r.lanes) {
            ExecuteRun run{l, l, 0.01, true};
            run.measured.measured_us = 2500;
            x.runs.push_back(run);
        }
        r.execute = x;
    }
    return r;
}

json document(const Report& report) { return json::parse(render(report, OutputOptions{Format::json})); }

// Keys of `doc` that `schema` does not declare (paths; array items as []),
// except under objects whose schema admits other keys; and the required
// keys of `schema` that `doc` lacks.
void compare(const json& doc, const json& schema, const std::string& path, std::vector<std::string>& problems) {
    if (doc.is_array() && schema.contains("items")) {
        for (const json& item : doc) compare(item, schema["items"], path + "[]", problems);
        return;
    }
    if (!doc.is_object() || !schema.contains("properties")) return;
    const json& props = schema["properties"];
    for (const auto& item : doc.items()) {
        if (props.contains(item.key())) {
            compare(item.value(), props[item.key()], path + "." + item.key(), problems);
        } else if (!schema.contains("additionalProperties") || schema["additionalProperties"] == false) {
            problems.push_back("undeclared " + path + "." + item.key());
        }
    }
    if (schema.contains("required"))
        for (const json& key : schema["required"])
            if (!doc.contains(key.get<std::string>())) problems.push_back("missing " + path + "." + key.get<std::string>());
}

}  // namespace

TEST_CASE("reuse-sim report: the document's keys are replay_document_schema()'s, with and without --execute") {
    const json schema = schema_json(replay_document_schema());
    for (bool execute : {false, true}) {
        CAPTURE(execute);
        const json doc = document(replay_report(request(execute), results(execute), OutputOptions{Format::json}));
        std::vector<std::string> problems;
        compare(doc, schema, "", problems);
        CHECK(problems.empty());
        for (const std::string& p : problems) MESSAGE(p);
        CHECK(doc.contains("execute") == execute);
        CHECK(doc["strategies"][0].contains("measured_ms") == execute);
    }
}

TEST_CASE("reuse-sim report: each job's schema declares its own document's tables and keys, no other job's") {
    const json replay = schema_json(replay_document_schema())["properties"];
    for (const char* key : {"strategies", "events", "details", "execute"}) CHECK(replay.contains(key));
    for (const char* key : {"settings", "tune", "confirm", "max_batch", "max_batch_settings"}) CHECK_FALSE(replay.contains(key));
    const json tune = schema_json(tune_document_schema())["properties"];
    for (const char* key : {"settings", "events", "tune", "confirm"}) CHECK(tune.contains(key));
    for (const char* key : {"strategies", "execute", "max_batch", "max_batch_settings"}) CHECK_FALSE(tune.contains(key));
}

TEST_CASE("reuse-sim report: JSON numbers keep their types; details and upstream are keyed by strategy") {
    const json doc = document(replay_report(request(true), results(true), OutputOptions{Format::json}));
    const json& row = doc["strategies"][1];
    CHECK(row["strategy"] == "binning");
    CHECK(row["upstream_allocs"].is_number_unsigned());
    CHECK(row["hit_rate"] == doctest::Approx(80.0));  // percent, as the table shows it
    CHECK(row["fragmentation"] == doctest::Approx(25.0));
    CHECK(row["modelled_ms"] == doctest::Approx(1.5));
    CHECK(row["measured_ms"] == doctest::Approx(2.5));
    CHECK(doc["capacity_bytes"] == 1ULL << 30);
    CHECK(doc["events_per_second"] == doctest::Approx(40.0));
    CHECK(doc["input"]["kind"] == "workload");
    CHECK(doc["input"]["format"] == "generated");
    CHECK(doc["options"]["bins"].is_array());
    CHECK(doc["options"]["bins"][0].is_number_unsigned());  // integers, not 262144.0
    CHECK(doc["options"]["roundup_power2_divisions"].size() == 16);
    CHECK(doc["options"]["pool_max"].is_null());
    CHECK(doc["options"]["max_split_size"].is_null());
    CHECK(doc["options"]["ring_size"] == 0);  // ring did not run
    CHECK(doc["details"]["naive"]["hits"] == 0);
    CHECK(doc["details"]["binning"]["bin_262144_chunks"] == 1);
    CHECK(doc["details"].size() == 2);
    CHECK(doc["upstream"]["binning"]["device_allocs"] == 2);
    const json& x = doc["execute"];
    CHECK(x["device"] == 0);
    CHECK(x["verified"] == true);
    CHECK(x["runs"][0]["calls"]["cudaMalloc"]["real"] == 10);
    CHECK(x["runs"][0]["calls"].size() == 6);
    CHECK(x["runs"][1]["ooms"]["simulated"] == 0);
    CHECK(x["runs"][1]["counts_agree"] == true);
}

TEST_CASE("reuse-sim report: the table marks the best values, has the legend, and machine formats do not") {
    const Report table = replay_report(request(), results(), OutputOptions{Format::table});
    const std::string text = render(table, OutputOptions{Format::table});
    CHECK(text.find("reuse-sim: workload training") == 0);
    CHECK(text.find("* best in its column, among the strategies without OOMs") != std::string::npos);
    CHECK(text.find("Model ms: CUDA calls priced by the cost table (NVIDIA H200, built-in).") != std::string::npos);
    CHECK(text.find("GPU ms") == std::string::npos);  // no --execute
    CHECK(text.find("2*") != std::string::npos);       // binning's allocs
    const std::string csv = render(replay_report(request(), results(), OutputOptions{Format::csv}), OutputOptions{Format::csv});
    CHECK(csv.rfind("strategy,requests,upstream_allocs,upstream_frees,hit_rate,", 0) == 0);
    CHECK(csv.find('*') == std::string::npos);
    CHECK(csv.find("measured_ms") == std::string::npos);
}

TEST_CASE("reuse-sim report: what a failure part way leaves") {
    SUBCASE("before the simulation: the warnings alone") {
        ReplayRequest q = request();
        q.warnings = {"--growth tunes grow-only, which is not selected: ignored"};
        ReplayResults r;
        r.warnings = {"costs.json: no memset; built-in figures used for those"};
        const Report report = replay_report(q, r, OutputOptions{Format::json});
        CHECK(report.tables.empty());
        CHECK(report.fields.empty());
        CHECK(report.warnings.size() == 2);
        const json doc = document(report);
        CHECK(doc["warnings"].size() == 2);
        CHECK_FALSE(doc.contains("events"));
    }
    SUBCASE("a GPU replay that stopped part way: its runs so far, no verdict, no legend") {
        ReplayResults r = results(true);
        r.execute->runs.pop_back();
        r.execute->free_bytes_after.reset();
        r.complete = false;
        const json doc = document(replay_report(request(true), r, OutputOptions{Format::json}));
        CHECK(doc["execute"]["runs"].size() == 1);
        CHECK(doc["execute"]["verified"] == false);
        CHECK(doc["execute"]["free_bytes_after"].is_null());
        CHECK(doc["strategies"][1]["measured_ms"].is_null());
        const std::string text = render(replay_report(request(true), r, OutputOptions{Format::table}), OutputOptions{Format::table});
        CHECK(text.find("best in its column") == std::string::npos);
        CHECK(text.find("--execute on GPU") == std::string::npos);
        CHECK(text.find('*') == std::string::npos);  // left unmarked
    }
    SUBCASE("counts that differ: the verdict, the execute line, the marks, no legend") {
        ReplayResults r = results(true);
        r.execute->runs[1].counts_agree = false;
        r.complete = false;
        CHECK(r.execute->mismatched() == std::vector<std::string>{"binning"});
        CHECK(r.execute->out_of_memory().empty());
        const std::string text = render(replay_report(request(true), r, OutputOptions{Format::table}), OutputOptions{Format::table});
        CHECK(one_line(text).find("upstream call counts DIFFER from the simulation") != std::string::npos);
        CHECK(text.find("2*") != std::string::npos);
        CHECK(text.find("best in its column") == std::string::npos);
    }
    SUBCASE("a GPU out of memory: counted apart from mismatches") {
        ReplayResults r = results(true);
        r.execute->runs[0].measured.ooms = 3;
        r.execute->runs[0].counts_agree = false;
        CHECK(r.execute->out_of_memory() == std::vector<std::string>{"naive"});
        CHECK(r.execute->mismatched().empty());
        CHECK(r.execute->refused() == 3);
        CHECK_FALSE(r.execute->verified());
    }
}

TEST_CASE("reuse-sim check: valid command lines pass every check before any work") {
    using Args = std::vector<std::string>;
    for (const Args& args : std::vector<Args>{
             {"reuse-sim", "replay"},
             {"reuse-sim", "replay", "--strategy", "naive, pool", "--pool-initial", "0", "--pool-max", "1GiB"},
             {"reuse-sim", "replay", "--seed", "18446744073709551615", "--change-rate", "1", "--steps", "1099511627776"},
             {"reuse-sim", "replay", "--sync-every", "1", "--release-threshold", "0", "--strategy", "async-pool"},
             {"reuse-sim", "replay", "--trace", "-", "--trace-format", "rmm"},
             {"reuse-sim", "replay", "--trace", "-"},
             {"reuse-sim", "replay", "--growth", "x2", "--strategy", "naive"},  // a warning, not an error
             {"-d", "0", "reuse-sim", "replay", "--execute"},
             {"reuse-sim", "replay", "--timeline", "/nonexistent/dir/t.csv"},  // found when it is opened, before the simulation
         }) {
        std::string line;
        for (const std::string& a : args) line += " " + a;
        CAPTURE(line);
        CHECK(parse_only(args) == 0);
    }
    for (const Args& args : std::vector<Args>{
             {"reuse-sim", "replay", "--trace", ""},
             {"reuse-sim", "replay", "--sync-every", "0"},
             {"reuse-sim", "replay", "--seed", "18446744073709551616"},
             {"reuse-sim", "replay", "--change-rate", "nan"},
             {"reuse-sim", "replay", "--timeline", ""},
             {"reuse-sim", "replay", "--save-trace", ""},
             {"reuse-sim", "replay", "--costs", ""},
             {"-d", "0", "reuse-sim", "replay"},
             {"-d", "all", "reuse-sim", "replay", "--execute"},
             {"reuse-sim", "replay", "--batch", "8..4"},
         }) {
        std::string line;
        for (const std::string& a : args) line += " " + a;
        CAPTURE(line);
        CHECK(parse_only(args) == 2);
    }
}

TEST_CASE("reuse-sim check: an option for strategies none of which is selected is a warning, in JSON too") {
    const RunResult r = run_gpumem({"reuse-sim", "replay", "--strategy", "naive", "--steps", "2", "--growth", "x2", "--bins", "1MiB", "--json"});
    CHECK(r.status == 0);
    CHECK(r.stderr_lines() == 2);
    const json doc = json::parse(r.out);
    REQUIRE(doc["warnings"].size() == 2);
    CHECK(doc["warnings"][0] == "--growth tunes grow-only, which is not selected: ignored");
    CHECK(doc["warnings"][1] == "--bins tunes binning, which is not selected: ignored");
    const RunResult shared = run_gpumem({"reuse-sim", "replay", "--strategy", "ring", "--steps", "2", "--pool-max", "1GiB", "--no-chart"});
    CHECK(shared.status == 0);
    CHECK(shared.err == "gpumem: warning: --pool-max tunes pool, binning, none of which is selected: ignored\n");
    // Selected: no warning.
    CHECK(run_gpumem({"reuse-sim", "replay", "--strategy", "binning", "--steps", "2", "--pool-max", "1GiB", "--no-chart"}).err.empty());
}

TEST_CASE("reuse-sim: the strategy table is what --help, --list strategies and the man page show") {
    const RunResult help = run_gpumem({"reuse-sim", "replay", "--help"});
    REQUIRE(help.status == 0);
    const RunResult list = run_gpumem({"--list", "strategies", "--format", "value"});
    REQUIRE(list.status == 0);
    const std::string man = slurp(tests_dir() + "/../man/gpumem.1.scd");
    const std::size_t section = man.find("\n# REUSE-SIM\n");
    REQUIRE(section != std::string::npos);
    const std::string reuse = man.substr(section, man.find("\n# ", section + 5) - section);
    std::set<std::string> options;
    for (const Named<rs::StrategySpec>& row : rs::kStrategies) {
        const std::string name(row.name);
        CAPTURE(name);
        CHECK(list.out.find(name + "\t" + std::string(row.help) + "\n") != std::string::npos);
        CHECK(reuse.find("- *" + name + "*:") != std::string::npos);
        std::string rest(row.value.options);
        while (!rest.empty()) {
            const std::size_t space = rest.find(' ');
            options.insert(rest.substr(0, space));
            rest = space == std::string::npos ? "" : rest.substr(space + 1);
        }
    }
    CHECK(options.size() == 12);
    for (const std::string& option : options) {
        CAPTURE(option);
        const std::string users = rs::strategies_using(option);
        // --help: "  --pool-initial SIZE         pool, binning: initial pool size...", on one line or two.
        const std::size_t at = help.out.find("\n  " + option + " ");
        REQUIRE(at != std::string::npos);
        const std::string help_entry = help.out.substr(at, help.out.find("\n  -", at + 1) - at);
        CHECK(help_entry.find(users + ": ") != std::string::npos);
        // The man page: the text of the entry that names the option starts with the same strategies.
        std::size_t entry = reuse.find("\n*-");
        while (entry != std::string::npos && reuse.substr(entry, reuse.find('\n', entry + 1) - entry).find("*" + option + "*") == std::string::npos)
            entry = reuse.find("\n*-", entry + 1);
        REQUIRE(entry != std::string::npos);
        const std::size_t text = reuse.find("\n\t", entry + 1);
        CHECK(reuse.compare(text + 2, users.size() + 1, users + ":") == 0);
    }
}

namespace {

// The cells of a strategy's row in the text table, split at runs of spaces.
std::vector<std::string> text_row(const std::string& text, const std::string& strategy) {
    std::vector<std::string> cells;
    const std::size_t at = text.find("\n" + strategy + " ");
    if (at == std::string::npos) return cells;
    const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        std::size_t end = line.find("  ", i);
        if (end == std::string::npos) end = line.size();
        if (end > i) cells.push_back(line.substr(i, end - i));
        i = end;
    }
    return cells;
}
bool starred(const std::vector<std::string>& cells, const std::string& value) {
    for (const std::string& c : cells)
        if (c == value + "*") return true;
    return false;
}

}  // namespace

TEST_CASE("reuse-sim report: a strategy with OOMs never gets a *, slack and frag compare only strategies that reused memory") {
    ReplayRequest q = request();
    q.setup.strategies.push_back(&rs::kStrategies.row("pool"));
    ReplayResults r = results();
    // naive: no hits (it reuses nothing), the least slack; pool: the lowest
    // peak and the fewest allocs, but it ran out of memory.
    r.lanes[0].slack_at_peak = 0;
    r.lanes[0].fragmentation = 0.0;
    r.lanes[0].hits = 0;
    r.lanes[1].slack_at_peak = 8192;
    r.lanes[1].fragmentation = 0.10;
    r.lanes.push_back(lane("pool", 1, 4096));
    r.lanes[2].ooms = 2;
    r.lanes[2].slack_at_peak = 100;
    r.lanes[2].fragmentation = 0.5;
    OutputOptions wide{Format::table};
    wide.wide = true;  // every column, none left out for the width
    const std::string text = render(replay_report(q, r, OutputOptions{Format::table, Unit::B}), wide);
    INFO(text);
    const auto naive = text_row(text, "naive"), binning = text_row(text, "binning"), pool = text_row(text, "pool");
    REQUIRE(pool.size() > 10);
    for (const std::string& cell : pool) CHECK(cell.find('*') == std::string::npos);
    CHECK(starred(binning, "2"));                   // allocs: pool's 1 has OOMs
    CHECK(starred(binning, "8192 B"));              // slack: naive's 0 is trivial
    CHECK(starred(binning, "10%"));                 // frag
    CHECK_FALSE(starred(naive, "0 B"));
    CHECK_FALSE(starred(naive, "0%"));
    CHECK(starred(naive, "8192 B"));                // peak reserved: pool's 4096 B ran out of memory
}

TEST_CASE("reuse-sim report: the chart's rows share one scale and print their peaks") {
    ReplayResults r = results();
    rs::Timeline timeline(2, 4);
    std::vector<std::unique_ptr<rs::Lane>> owned;
    std::vector<rs::Lane*> lanes;
    const std::uint64_t reserved[2] = {100ULL << 20, 10ULL << 20};
    for (std::uint64_t bytes : reserved) {
        owned.push_back(std::make_unique<rs::Lane>("x", std::make_unique<rs::SimulatedUpstream>(rs::kUnlimited, nullptr)));
        std::uint64_t address = 0;
        owned.back()->upstream->allocate(bytes, 0, address);
        lanes.push_back(owned.back().get());
    }
    for (std::uint64_t e = 0; e < 8; ++e) timeline.record(e, lanes, 1 << 20);
    timeline.finish();
    r.timeline = timeline;
    ReplayRequest q = request();
    q.chart_style.width = 4;
    const std::string text = render(replay_report(q, r, OutputOptions{Format::table}), OutputOptions{Format::table});
    INFO(text);
    CHECK(text.find("(one scale for all rows)") != std::string::npos);
    CHECK(text.find("peak 100 MiB") != std::string::npos);
    CHECK(text.find("peak 10 MiB") != std::string::npos);
    // On one scale binning's 10 MiB is a low level, not a full column.
    const std::size_t binning = text.find("\nbinning ");
    REQUIRE(binning != std::string::npos);
    const std::string line = text.substr(binning + 1, text.find('\n', binning + 1) - binning - 1);
    CHECK(line.find('@') == std::string::npos);
    CHECK(line.find('.') != std::string::npos);
}

namespace {

TuneResults tune_results() {
    TuneResults r = replayed<TuneResults>();
    r.input_format = "snapshot";
    r.allocator_settings = rs::RecordedAllocatorSettings{};
    TuneRanking t;
    rs::TuneRow best, recorded;
    best.point.options.expandable_segments = true;
    best.outcome.peak_reserved = 37ULL << 30;
    best.outcome.device_allocs = 3;
    recorded.point.recorded = true;
    recorded.outcome.peak_reserved = 40ULL << 30;
    recorded.outcome.ooms = 2;
    recorded.outcome.retries = 5;
    recorded.outcome.first_oom_event = 18231;
    t.rows = {best, recorded};
    t.grid_points = 2;
    t.search.smallest = 36ULL << 30;
    t.search.resolution = 1 << 20;
    t.search.replays = 32;
    r.ranking = t;
    return r;
}

TuneRequest tune_request() {
    TuneRequest q;
    q.input.workload.name = "training";
    q.setup.strategies = {&rs::kStrategies.row("torch-caching")};
    q.setup.capacity = 40ULL << 30;
    return q;
}

// The lines of each setting in --tune's table, read back from the lines
// under each row: a setting starts 4 spaces in, and a setting wrapped goes
// on 6 spaces in.
std::vector<std::vector<std::string>> tune_setting_lines(const std::string& text) {
    std::istringstream lines(text);
    std::vector<std::vector<std::string>> settings;
    bool in_table = false;
    for (std::string line; std::getline(lines, line);) {
        if (line == "    PYTORCH_CUDA_ALLOC_CONF" || line == "    PYTORCH_ALLOC_CONF") {
            in_table = true;
            continue;
        }
        if (in_table && line.empty()) break;
        if (!in_table || line.rfind("    ", 0) != 0) continue;
        const bool goes_on = line.rfind("      ", 0) == 0;
        if (!goes_on || settings.empty()) settings.emplace_back();
        settings.back().push_back(line.substr(goes_on ? 6 : 4));
    }
    return settings;
}

}  // namespace

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("reuse-sim report: --confirm's loop in the document: each run's recording and tuning, converged, the answer's lines; the top settings' caps") {
    TuneResults r = tune_results();
    r.ranking->fit_capacities = {{0, r.ranking->search}, {1, rs::CapacitySearch{std::nullopt, 0, 3, "it would take about 99 s more"}}};
    ConfirmResults& c = r.confirm.emplace();
    c.candidates = 3;
    c.cap = 40ULL << 30;
    c.stop = ConfirmStop::converged;
    c.converged = true;
    ConfirmRun first, second;
    first.rank = 1;
    first.outcome = {"expandable_segments:True", {0, 37ULL << 30, 0, 3, 0, std::nullopt}, RunFigures{4, 40ULL << 30, 1, 5, 2, 1}, false, "", 0};
    first.recording = "/t/run.confirm1.pickle";
    first.stats = "/t/run.confirm1.stats.json";
    second.rank = 2;
    second.outcome = {"", {0, 38ULL << 30, 0, 3, 0, std::nullopt}, RunFigures{0, 38ULL << 30, 0, 4, 1, std::nullopt}, true, "", 1};
    second.recording = "/t/run.confirm2.pickle";
    second.stats = "/t/run.confirm2.stats.json";
    c.runs = {first, second};
    c.tunings.push_back({1, 40ULL << 30, *r.ranking});
    const json doc = document(tune_report(tune_request(), r, OutputOptions{Format::json}));
    std::vector<std::string> problems;
    compare(doc, schema_json(tune_document_schema()), "", problems);
    CHECK(problems.empty());
    for (const std::string& p : problems) MESSAGE(p);
    const json& confirm = doc["confirm"];
    CHECK(confirm["converged"] == true);
    CHECK(confirm["stop"] == "converged");
    CHECK(confirm["cap_bytes"] == 40ULL << 30);
    REQUIRE(confirm["runs"].size() == 2);
    CHECK(confirm["runs"][0]["recording"] == "/t/run.confirm1.pickle");
    CHECK(confirm["runs"][0]["stats_file"] == "/t/run.confirm1.stats.json");
    CHECK(confirm["runs"][0]["real_program_ooms"] == 1);
    CHECK(confirm["runs"][0]["real_ooms"] == 4);
    CHECK(confirm["runs"][1]["real_program_ooms"].is_null());
    CHECK(confirm["runs"][0]["chosen_by_run"] == 0);
    CHECK(confirm["runs"][1]["chosen_by_run"] == 1);
    REQUIRE(confirm["tunings"].size() == 1);
    CHECK(confirm["tunings"][0]["run"] == 1);
    CHECK(confirm["tunings"][0]["best_alloc_conf"] == "expandable_segments:True");
    CHECK(confirm["tunings"][0]["settings_that_fit"] == 1);
    CHECK(confirm["final_answer"] == "ran without an OOM: use PyTorch's default settings (confirmed by real run 2)");
    CHECK(contains(confirm["answer"].get<std::string>(), "run 1: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
    const json& fits = doc["tune"]["fit_capacities"];
    REQUIRE(fits.size() == 2);
    CHECK(fits[0]["smallest_capacity_bytes"] == 36ULL << 30);
    CHECK(fits[0]["alloc_conf"] == "expandable_segments:True");
    CHECK(fits[1]["smallest_capacity_bytes"].is_null());
    CHECK(fits[1]["capacity_not_searched"] == "it would take about 99 s more");
    const std::string text = render(tune_report(tune_request(), r, OutputOptions{Format::table}), OutputOptions{Format::table});
    CHECK(contains(one_line(text), "The recording has no OOM; the smallest cap each of the top settings runs in without one: 36 GiB with "
                          "expandable_segments:True; not known (it would take about 99 s more) with PyTorch's defaults."));
    CHECK(contains(text, "ran without an OOM: use PyTorch's default settings (confirmed by real run 2)"));
    CHECK(contains(one_line(text), "real: OOMs the program saw: 1; allocator OOMs: 4 (3 retried inside PyTorch"));
}

TEST_CASE("reuse-sim report: --tune's document has the schema's keys, the ranked settings and the answer") {
    const json doc = document(tune_report(tune_request(), tune_results(), OutputOptions{Format::json}));
    std::vector<std::string> problems;
    compare(doc, schema_json(tune_document_schema()), "", problems);
    CHECK(problems.empty());
    for (const std::string& p : problems) MESSAGE(p);
    CHECK_FALSE(doc.contains("strategies"));
    REQUIRE(doc["settings"].size() == 2);
    const json& first = doc["settings"][0];
    CHECK(first["rank"] == 1);
    CHECK(first["alloc_conf"] == "expandable_segments:True");
    CHECK(first["recorded"] == false);
    CHECK(first["settings"]["expandable_segments"] == true);
    CHECK(first["settings"]["max_split_size"].is_null());
    CHECK(first["settings"]["roundup_power2_divisions"].size() == 16);
    CHECK(first["first_oom_event"].is_null());
    CHECK(doc["settings"][1]["first_oom_event"] == 18231);
    CHECK(doc["settings"][1]["alloc_conf"] == "");
    const json& t = doc["tune"];
    CHECK(t["best_alloc_conf"] == "expandable_segments:True");
    CHECK(t["best_fits"] == true);
    CHECK(t["recorded_fits"] == false);
    CHECK(t["recorded_first_oom_event"] == 18231);
    CHECK(t["smallest_capacity_bytes"] == 36ULL << 30);
    CHECK(t["capacity_not_searched"].is_null());
    CHECK(t["answer"] ==
          "With expandable_segments:True this trace fits in 40 GiB (peak 37 GiB); as recorded it fails at event 18,231; the smallest "
          "capacity the best setting fits in is about 36 GiB (to within 1 MiB, 32 more replays).");
    // The comparison's document has no "tune".
    CHECK_FALSE(document(replay_report(request(), results(), OutputOptions{Format::json})).contains("tune"));
}

TEST_CASE("reuse-sim report: --tune's table marks the recorded row and follows the answer; CSV has the conf to paste") {
    const std::string text = render(tune_report(tune_request(), tune_results(), OutputOptions{Format::table}), OutputOptions{Format::table});
    INFO(text);
    CHECK(text.find("PYTORCH_CUDA_ALLOC_CONF") != std::string::npos);
    CHECK(text.find("recorded: (PyTorch's defaults)") != std::string::npos);
    const std::string flat = one_line(text);  // prose wrapped within 100 columns, read as one line
    CHECK(flat.find("torch-caching under 2 settings, ranked") != std::string::npos);
    CHECK(flat.find("as recorded it fails at event 18,231") != std::string::npos);
    CHECK(text.find("With expandable_segments:True this trace fits") < text.find("peak reserved"));  // the answer first
    CHECK(text.find("best in its column") == std::string::npos);
    const std::string csv = render(tune_report(tune_request(), tune_results(), OutputOptions{Format::csv}), OutputOptions{Format::csv});
    CHECK(csv.rfind("rank,alloc_conf,recorded,settings,peak_reserved,ooms,first_oom_event,", 0) == 0);
    CHECK(csv.find("\n1,expandable_segments:True,false,") != std::string::npos);
}

TEST_CASE("reuse-sim report: --tune's answer first, a line to paste in the variable the recording's torch reads, then the next step (issue 57)") {
    TuneRequest q = tune_request();
    q.input.trace = "/t/run.pickle";
    const auto table = [](const TuneRequest& request, const TuneResults& results) {
        return render(tune_report(request, results, OutputOptions{Format::table}), OutputOptions{Format::table});
    };
    const std::string next = "next, a real run under it: gpumem reuse-sim tune --trace /t/run.pickle ... --confirm -- CMD\n";
    // torch 2.9 and later read PYTORCH_ALLOC_CONF; the table's header says the same name.
    q.input.recording.emplace();
    q.input.recording->torch_version = "2.9.1+cu128";
    const std::string new_torch = table(q, tune_results());
    INFO(new_torch);
    CHECK(new_torch.rfind("PYTORCH_ALLOC_CONF=expandable_segments:True\n" + next + "\nWith expandable_segments:True this trace fits", 0) == 0);
    CHECK(new_torch.find("\n    PYTORCH_ALLOC_CONF\n") != std::string::npos);
    CHECK(new_torch.find("PYTORCH_CUDA_ALLOC_CONF") == std::string::npos);
    CHECK(new_torch.find("With expandable_segments:True") < new_torch.find("reuse-sim: "));  // the answer before the input
    // Older torch reads only PYTORCH_CUDA_ALLOC_CONF.
    q.input.recording->torch_version = "2.8.0";
    const std::string old_torch = table(q, tune_results());
    CHECK(old_torch.rfind("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n" + next, 0) == 0);
    CHECK(old_torch.find("\n    PYTORCH_CUDA_ALLOC_CONF\n") != std::string::npos);
    CHECK(old_torch.find("PYTORCH_ALLOC_CONF") == std::string::npos);
    // A recording that does not say: the new name, and a line naming the old.
    q.input.recording.reset();
    const std::string unknown = table(q, tune_results());
    CHECK(unknown.rfind("PYTORCH_ALLOC_CONF=expandable_segments:True\n(torch before 2.9 reads PYTORCH_CUDA_ALLOC_CONF; the recording "
                        "does not say its version)\n" + next, 0) == 0);
    // Confirmed already: no next step. No setting without an OOM: nothing to paste, the sentence first.
    q.confirm = ConfirmRequest{};
    CHECK(table(q, tune_results()).find("next, a real run") == std::string::npos);
    TuneResults failing = tune_results();
    failing.ranking->rows.front().outcome.ooms = 1;
    const std::string no_fit = table(tune_request(), failing);
    CHECK(no_fit.rfind("No setting of the grid fits", 0) == 0);
}

TEST_CASE("reuse-sim report: --tune's table stays within 100 columns with the longest settings; JSON keeps them whole") {
    TuneRequest q = tune_request();
    q.grid.axes = rs::grid_axes({}, true, true);  // --tune's grid under a cap
    q.grid.all_settings = true;
    TuneResults r = tune_results();
    r.ranking->rows.clear();
    rs::TorchOptions baseline;
    baseline.max_non_split_rounding = 64ULL << 20;  // the longest: a rounding PyTorch adds after max_split_size_mb
    const std::vector<rs::GridPoint> points = rs::grid_points(baseline, q.grid.axes);
    std::uint64_t k = 0;
    for (const rs::GridPoint& p : points) {
        rs::TuneRow row{p, {}};
        row.outcome.peak_reserved = (8ULL << 30) + k * 12345678;
        row.outcome.ooms = 1000000 + k;
        row.outcome.first_oom_event = 12345678 + k;
        row.outcome.retries = 999999;
        row.outcome.device_allocs = 1234567;
        row.outcome.device_frees = 1234567;
        row.outcome.modelled_us = 123456789.0;
        r.ranking->rows.push_back(row);
        ++k;
    }
    r.ranking->grid_points = r.ranking->rows.size();
    const std::string longest = rs::alloc_conf(r.ranking->rows.back().point.options);
    REQUIRE(longest.size() > 100);
    const std::string text = render(tune_report(q, r, OutputOptions{Format::table}), OutputOptions{Format::table});
    INFO(text);
    std::size_t table_lines = 0;
    bool in_table = false;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        CAPTURE(line);
        CHECK(line.size() <= 100);  // every line: the settings go under the figures, wrapped after their commas
        if (line.find("peak reserved") != std::string::npos) in_table = true;
        if (in_table && line.empty()) in_table = false;
        table_lines += in_table;
    }
    CHECK(table_lines > r.ranking->rows.size());  // wrapped: more lines than rows
    // The wrapped cells put back together are the settings, each whole.
    std::vector<std::string> cells;
    for (const std::vector<std::string>& parts : tune_setting_lines(text)) {
        std::string cell;
        for (const std::string& part : parts) cell += part;
        cells.push_back(cell);
        // Broken only after a comma: never inside garbage_collection_threshold:0.8.
        for (std::size_t i = 0; i + 1 < parts.size(); ++i) CHECK((!parts[i].empty() && parts[i].back() == ','));
        CHECK(parts.size() < 4);
    }
    REQUIRE(cells.size() == r.ranking->rows.size());
    std::vector<std::string> expected;
    for (const rs::TuneRow& row : r.ranking->rows) {
        const std::string conf = rs::alloc_conf(row.point.options);
        expected.push_back((row.point.recorded ? (r.allocator_settings ? "recorded: " : "baseline: ") : "") + (conf.empty() ? std::string("(PyTorch's defaults)") : conf));
    }
    CHECK(cells == expected);
    const json doc = document(tune_report(q, r, OutputOptions{Format::json}));
    CHECK(doc["settings"].back()["alloc_conf"] == longest);
}

TEST_CASE("reuse-sim report: --tune's table wraps a setting only between its items, never inside one or a roundup list") {
    TuneRequest q = tune_request();
    q.grid.axes = rs::grid_axes({}, true, true);
    q.grid.all_settings = true;  // every setting; all alike here, so one row
    TuneResults r = tune_results();
    r.ranking->rows.clear();
    // Figures as wide as a real run's (roundup_list.pickle under 1 GiB): the
    // setting column gets about 30 columns, less than its longest knobs.
    for (const rs::GridPoint& p : rs::grid_points(rs::TorchOptions{}, q.grid.axes)) {
        rs::TuneRow row{p, {}};
        row.outcome.peak_reserved = 766ULL << 20;
        row.outcome.ooms = 5;
        row.outcome.first_oom_event = 201;
        row.outcome.retries = 6;
        row.outcome.device_allocs = 55;
        row.outcome.device_frees = 6;
        row.outcome.modelled_us = 5420.0;
        r.ranking->rows.push_back(row);
    }
    r.ranking->grid_points = r.ranking->rows.size();
    const std::string text = render(tune_report(q, r, OutputOptions{Format::table}), OutputOptions{Format::table});
    INFO(text);
    const std::vector<std::vector<std::string>> rows = tune_setting_lines(text);
    REQUIRE(rows.size() == r.ranking->rows.size());
    bool roundup_seen = false;
    for (const std::vector<std::string>& parts : rows)
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const std::string& part = parts[i];
            CAPTURE(part);
            // Each line ends after an item's comma (the last line: the setting's end).
            if (i + 1 < parts.size()) CHECK((!part.empty() && part.back() == ','));
            CHECK(part.find("garbage_collection_threshold:") == part.rfind("garbage_collection_threshold:0.8"));
            if (part.find("roundup_power2_divisions:[") != std::string::npos) {
                CHECK(part.find("[256:1,512:2,1024:4,>:4]") != std::string::npos);  // the list whole, on its name's line
                roundup_seen = true;
            }
        }
    CHECK(roundup_seen);
}
