// gpumem report: reading documents (pretty or JSON Lines, line numbers of
// faults), the merge (one row per GPU, a rank's error row, duplicates,
// copy rows joined by CUDA index), outliers per model, the exit status; and
// the command over the fixtures (tests/fixtures/report, made by its
// make-fixtures.py) through the binary.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/fleet.hpp"
#include "core/fleet_input.hpp"
#include "cli_harness.hpp"
#include "tests_dir.hpp"

using nlohmann::json;
using namespace gpumem::fleet;

namespace {

json envelope(const std::string& command, const std::string& host, json origin = json::object()) {
    origin["host"] = host;
    return {{"schema_version", 1}, {"tool", "gpumem"}, {"version", "0.1.0"}, {"command", command}, {"ok", true}, {"origin", origin}};
}

json slurm(unsigned rank, const std::string& job = "7") {
    return {{"launcher", "slurm"}, {"job_id", job}, {"rank", rank}, {"local_rank", rank}, {"world_size", 2}};
}

json check_row(int index, const std::string& uuid, const std::string& model, const std::string& check, double value,
               const std::string& verdict, const std::string& comparison = ">=") {
    return {{"index", index}, {"uuid", uuid},      {"name", model},          {"check", check},
            {"verdict", verdict}, {"value", value}, {"unit", "GB/s"},         {"threshold", 10.0},
            {"comparison", comparison}, {"reason", "r"}, {"seconds", 0.1}};
}

// A check document: one copy.h2d check per GPU (uuid, model, value, verdict).
struct Gpu {
    std::string uuid, model;
    double h2d;
    std::string verdict = "pass";
};
json check_doc(const std::string& host, const std::vector<Gpu>& gpus, json origin = json::object()) {
    json d = envelope("check", host, std::move(origin));
    d["checks"] = json::array();
    d["devices"] = json::array();
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        const Gpu& g = gpus[i];
        d["checks"].push_back(check_row(static_cast<int>(i), g.uuid, g.model, "copy.h2d", g.h2d, g.verdict));
        d["devices"].push_back({{"index", i}, {"uuid", g.uuid}, {"name", g.model}, {"pci_bus_id", "0"}, {"verdict", g.verdict},
                                {"passed", 1}, {"warned", 0}, {"failed", 0}, {"na", 0}, {"seconds", 1.0}});
    }
    d["level"] = "standard";
    d["strict"] = false;
    d["verdict"] = "pass";
    d["seconds"] = 1.0;
    return d;
}

json error_doc(const std::string& command, const std::string& host, json origin, int status = 3,
               const std::string& code = "no_device") {
    json d = envelope(command, host, std::move(origin));
    d["ok"] = false;
    d["error"] = {{"status", status}, {"code", code}, {"message", "no usable GPU"}};
    return d;
}

std::string lines(const std::vector<json>& docs) {
    std::string text;
    for (const json& d : docs) text += d.dump() + "\n";
    return text;
}

Fleet fleet_of(const std::vector<json>& docs, ReportOptions options = {}) {
    return merge_fleet(read_text("t", lines(docs), 1), options);
}

std::string read_error(const std::string& text) {
    try {
        read_text("in.json", text, 1);
    } catch (const gpumem::UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

const GpuRow* row_of(const Fleet& f, const std::string& uuid) {
    for (const GpuRow& r : f.rows)
        if (r.uuid == uuid) return &r;
    return nullptr;
}

}  // namespace

TEST_CASE("report input: pretty documents and JSON Lines follow each other; each is named by its first line") {
    const std::string text = check_doc("n1", {{"U0", "A", 50}}).dump(2) + "\n\n" + lines({envelope("info", "n1")}) +
                             envelope("copy", "n2").dump(2);
    const std::vector<Document> docs = read_text("f.json", text, 1);
    REQUIRE(docs.size() == 3);
    CHECK(docs[0].source == "f.json:1");
    const std::string pretty = check_doc("n1", {{"U0", "A", 50}}).dump(2);
    const auto newlines = static_cast<std::size_t>(std::count(pretty.begin(), pretty.end(), '\n'));
    CHECK(docs[1].source == "f.json:" + std::to_string(newlines + 3));
    CHECK(docs[2].source == "f.json:" + std::to_string(newlines + 4));
    CHECK(docs[2].command == "copy");
    CHECK(docs[2].origin.host == "n2");
}

TEST_CASE("report input: faults are named by file and line") {
    const std::string good = envelope("info", "n1").dump() + "\n";
    CHECK(read_error(good + good.substr(0, 30)).rfind("in.json:2: truncated document", 0) == 0);
    CHECK(read_error(good + "{\"tool\": \"gpumem\",, }\n").rfind("in.json:2: malformed JSON", 0) == 0);
    // A fault inside a pretty document: the line of the fault itself.
    CHECK(read_error("{\n  \"tool\": \"gpumem\",\n  \"ok\": tru\n}\n").rfind("in.json:3: malformed JSON", 0) == 0);
    CHECK(read_error("").find("empty") != std::string::npos);
    CHECK(read_error(" \n\t\n").find("empty") != std::string::npos);
    CHECK(read_error("{\"a\": 1}").find("not a gpumem document") != std::string::npos);
    CHECK(read_error("[1, 2]").find("not a gpumem document") != std::string::npos);
    CHECK(read_error("42").find("not a gpumem document") != std::string::npos);
    CHECK(read_error(std::string(70, '[') + std::string(70, ']')).find("nested deeper") != std::string::npos);
    json newer = envelope("info", "n1");
    newer["schema_version"] = 2;
    CHECK(read_error(newer.dump()).find("newer gpumem") != std::string::npos);
    json report = envelope("report", "n1");
    CHECK(read_error(report.dump()).find("report's own document") != std::string::npos);
    json wrong = envelope("info", "n1");
    wrong["devices"] = {{{"index", 0}, {"free", "lots"}}};
    CHECK(read_error(wrong.dump()) == "in.json:1: devices[0].free: expected a whole number, 0 or more (below 2^64)");
    json bad_verdict = check_doc("n1", {{"U0", "A", 50, "maybe"}});
    CHECK(read_error(bad_verdict.dump()).find("'maybe' is not a verdict") != std::string::npos);
    json no_ok = envelope("info", "n1");
    no_ok.erase("ok");
    CHECK(read_error(no_ok.dump()).find("ok: expected true or false") != std::string::npos);
    json error_without_error = envelope("info", "n1");
    error_without_error["ok"] = false;
    CHECK(read_error(error_without_error.dump()).find("error: expected an object") != std::string::npos);
}

TEST_CASE("report input: a document larger than the bound is refused before it is held") {
    const std::string huge = "{\"tool\": \"" + std::string(kMaxDocumentBytes, 'x') + "\"}";
    CHECK(read_error(huge).find("more than 16 MiB") != std::string::npos);
    CHECK(read_error(std::string(kMaxDocumentBytes + 1, 'x')).find("more than 16 MiB") != std::string::npos);
}

TEST_CASE("report: outliers against the median of the same model only") {
    // Model A: 50, 51, 49, 40 (median 49.5; 40 is 19% below). Model B: 30, 31 (no outlier though far below A).
    const Fleet f = fleet_of({check_doc("n1", {{"A0", "A", 50}, {"A1", "A", 51}, {"B0", "B", 30}}),
                              check_doc("n2", {{"A2", "A", 49}, {"A3", "A", 40}, {"B1", "B", 31}})});
    REQUIRE(f.rows.size() == 6);
    const GpuRow* slow = row_of(f, "A3");
    REQUIRE(slow);
    CHECK(slow->outliers == std::vector<std::string>{"copy.h2d"});
    CHECK(slow->status == RowStatus::outlier);
    CHECK(row_of(f, "B0")->outliers.empty());
    CHECK(f.failed());
    REQUIRE(f.model_figures.size() == 2);
    CHECK(f.model_figures[0].model == "A");
    CHECK(f.model_figures[0].median == doctest::Approx(49.5));
    CHECK(f.model_figures[0].min == doctest::Approx(40));
    CHECK(f.model_figures[0].outliers == 1);
    // A looser fraction flags nothing.
    CHECK(!fleet_of({check_doc("n1", {{"A0", "A", 50}, {"A1", "A", 51}}), check_doc("n2", {{"A2", "A", 49}, {"A3", "A", 40}})},
                    {0.25, false})
               .failed());
}

TEST_CASE("report: one GPU of a model has no peers; <= figures are not compared") {
    CHECK(!fleet_of({check_doc("n1", {{"A0", "A", 5}})}).failed());
    json d = check_doc("n1", {{"A0", "A", 50}, {"A1", "A", 50}});
    d["checks"].push_back(check_row(0, "A0", "A", "nvml.pending", 0, "pass", "<="));
    d["checks"].push_back(check_row(1, "A1", "A", "nvml.pending", 9, "pass", "<="));
    const Fleet f = fleet_of({d});
    CHECK(!f.failed());
    CHECK(f.figures.size() == 2);
}

TEST_CASE("report: a failed check fails the fleet; its check_failed document adds no error row") {
    json d = check_doc("n1", {{"A0", "A", 50}, {"A1", "A", 50, "fail"}}, slurm(0));
    d["ok"] = false;
    d["error"] = {{"status", 7}, {"code", "check_failed"}, {"message", "GPU 1: copy.h2d"}};
    const Fleet f = fleet_of({d});
    REQUIRE(f.rows.size() == 2);
    CHECK(f.rows[1].status == RowStatus::fail);
    CHECK(f.rows[1].failed_checks == std::vector<std::string>{"copy.h2d"});
    CHECK(f.rows[1].errors.empty());
    CHECK(f.rows[0].status == RowStatus::ok);
    CHECK(f.problems.size() == 1);
}

TEST_CASE("report: warnings fail under --strict, the report's or the check run's") {
    const json warned = check_doc("n1", {{"A0", "A", 50, "warn"}});
    const Fleet plain = fleet_of({warned});
    CHECK(!plain.failed());
    CHECK(plain.rows[0].status == RowStatus::warn);
    CHECK(fleet_of({warned}, {0.1, true}).failed());
    json strict = warned;
    strict["strict"] = true;
    CHECK(fleet_of({strict}).rows[0].failed_checks == std::vector<std::string>{"copy.h2d"});
}

TEST_CASE("report: remediations per GPU and node, the drain list, unknown checks fail the fleet") {
    // A document without remediations (gpumem before issue 22): the check's
    // default for its verdict (copy.h2d failing asks for a drain).
    const json old = check_doc("n1", {{"A0", "A", 50}, {"A1", "A", 49, "fail"}});
    Fleet f = fleet_of({old});
    CHECK(f.rows[0].remediation == Remediation::none);
    CHECK(f.rows[1].remediation == Remediation::drain);
    REQUIRE(f.nodes.size() == 1);
    CHECK(f.nodes[0].drain);
    CHECK(f.nodes[0].reason == "drain: GPU 1 copy.h2d (drain)");
    // A document's own remediation wins; the node takes its worst GPU's.
    json now = check_doc("n2", {{"B0", "A", 50, "fail"}, {"B1", "A", 50, "fail"}});
    now["checks"][0]["check"] = "nvml.remapped_rows.pending";
    now["checks"][0]["remediation"] = "reset-gpu";
    now["checks"][1]["remediation"] = "drain";
    json healthy = check_doc("n3", {{"C0", "A", 50}});
    healthy["checks"][0]["remediation"] = "none";
    f = fleet_of({now, healthy});
    REQUIRE(f.nodes.size() == 2);
    CHECK(f.nodes[0].host == "n2");
    CHECK(f.nodes[0].remediation == Remediation::reset_gpu);
    CHECK(f.nodes[0].reason == "reset-gpu: GPU 0 nvml.remapped_rows.pending (reset-gpu); GPU 1 copy.h2d (drain)");
    CHECK(f.nodes[1].host == "n3");
    CHECK_FALSE(f.nodes[1].drain);
    CHECK(f.nodes[1].reason.empty());
    // A remediation that is not one is bad input, named by where it is.
    json bad = healthy;
    bad["checks"][0]["remediation"] = "pray";
    CHECK(read_error(bad.dump()).find("remediation: 'pray' is not a remediation") != std::string::npos);
    // A check that could not run: the row is unknown, the fleet fails, the
    // node is drained (it could not be judged), and --strict makes it fail.
    json unsure = check_doc("n4", {{"D0", "A", 50, "unknown"}});
    f = fleet_of({unsure});
    CHECK(f.rows[0].status == RowStatus::unknown);
    CHECK(f.rows[0].unknown_checks == std::vector<std::string>{"copy.h2d"});
    CHECK(f.failed());
    CHECK(f.problems.at(0).find("could not run copy.h2d") != std::string::npos);
    CHECK(f.nodes[0].reason == "drain: GPU 0 copy.h2d could not run");
    CHECK(fleet_of({unsure}, {0.1, true}).rows[0].status == RowStatus::fail);
    // An outlier asks for a drain too, with its figure named.
    f = fleet_of({check_doc("n5", {{"E0", "A", 50}, {"E1", "A", 50}, {"E2", "A", 30}})});
    CHECK(f.nodes[0].reason == "drain: GPU 2 copy.h2d below its model's median");
}

TEST_CASE("report: error documents are a row per rank; a rank's check and info errors share it") {
    const Fleet f = fleet_of({error_doc("check", "n1", slurm(0)), error_doc("check", "n1", slurm(1)),
                              error_doc("info", "n1", slurm(0)), error_doc("info", "n1", slurm(1))});
    REQUIRE(f.rows.size() == 2);
    CHECK(f.rows[0].rank == 0u);
    CHECK(f.rows[1].rank == 1u);
    CHECK(f.rows[0].commands == std::vector<std::string>{"check", "info"});
    CHECK(f.rows[0].error_codes == std::vector<std::string>{"no_device"});
    CHECK(f.rows[0].status == RowStatus::error);
    CHECK(!f.rows[0].index);
    CHECK(f.failed());
    CHECK(f.documents.size() == 4);
    CHECK(!f.documents[0].ok);
    // Another job's ranks are other rows.
    CHECK(fleet_of({error_doc("info", "n1", slurm(0, "7")), error_doc("info", "n1", slurm(0, "8"))}).rows.size() == 2);
}

TEST_CASE("report: an error document with GPUs marks their rows") {
    json copy = envelope("copy", "n1");
    copy["results"] = {{{"device", 0}, {"direction", "h2d"}, {"host_memory", "pinned"}, {"engine", "ce"}, {"bytes", 1024},
                        {"median_gbps", 20.0}}};
    copy["ok"] = false;
    copy["error"] = {{"status", 6}, {"code", "below_expectation"}, {"message", "below --expect-min"}};
    const Fleet f = fleet_of({copy});
    REQUIRE(f.rows.size() == 1);
    CHECK(f.rows[0].index == 0);
    CHECK(f.rows[0].error_codes == std::vector<std::string>{"below_expectation"});
}

TEST_CASE("report: the same GPU in two documents is one row; the later figure, the worse verdict") {
    const Fleet f = fleet_of({check_doc("n1", {{"A0", "A", 50, "fail"}}), check_doc("n1", {{"A0", "A", 60}})});
    REQUIRE(f.rows.size() == 1);
    CHECK(f.rows[0].verdict == Verdict::fail);
    REQUIRE(f.rows[0].figures.size() == 1);
    CHECK(f.rows[0].figures[0].value == doctest::Approx(60));
    CHECK(f.rows[0].sources == std::vector<std::string>{"t:1", "t:2"});
}

TEST_CASE("report: copy rows join the GPU that a document of the same process names at that index") {
    json info = envelope("info", "n1", slurm(1));
    info["devices"] = {{{"index", 0}, {"uuid", "U1"}, {"name", "A"}, {"free", 10}, {"total", 20}}};
    json copy = envelope("copy", "n1", slurm(1));
    copy["results"] = {
        {{"device", 0}, {"peer", 1}, {"direction", "p2p"}, {"engine", "ce"}, {"bytes", 1024}, {"median_gbps", 300.0}},
        {{"device", 0}, {"peer", 2}, {"direction", "p2p"}, {"engine", "ce"}, {"bytes", 1024}, {"median_gbps", 100.0}},
        {{"device", 0}, {"direction", "h2d"}, {"engine", "ce"}, {"bytes", 1024}, {"median_gbps", nullptr}, {"skipped", "x"}}};
    // Rank 0's device 0 is another GPU (CUDA_VISIBLE_DEVICES narrowed per rank).
    json other = copy;
    other["origin"] = json(slurm(0));
    other["origin"]["host"] = "n1";
    const Fleet f = fleet_of({copy, info, other});
    REQUIRE(f.rows.size() == 2);
    const GpuRow* joined = row_of(f, "U1");
    REQUIRE(joined);
    CHECK(joined->free == 10u);
    REQUIRE(joined->figures.size() == 1);  // the skipped row has no figure
    CHECK(joined->figures[0].value == doctest::Approx(100));  // the slowest peer
    CHECK(joined->figures[0].name == "copy.p2p (ce, 1 KiB)");
    // The copy document came before any document of its process named
    // index 0: it is held and merged after the others (the report keeps rows,
    // not documents), so info is the first command of the row.
    CHECK(joined->commands == std::vector<std::string>{"info", "copy"});
}

TEST_CASE("report: a copy document from outside any launcher joins the host's GPUs at its indices, where every process agrees (issue 57)") {
    // check ran under Slurm, copy by hand on the node: 2 GPUs, not 4.
    json copy = envelope("copy", "n1");
    copy["results"] = {{{"device", 0}, {"direction", "h2d"}, {"engine", "ce"}, {"bytes", 1024}, {"median_gbps", 50.0}},
                       {{"device", 1}, {"direction", "h2d"}, {"engine", "ce"}, {"bytes", 1024}, {"median_gbps", 51.0}}};
    const json check = check_doc("n1", {{"U0", "A", 50}, {"U1", "A", 51}}, slurm(0));
    for (const std::vector<json>& order : {std::vector<json>{check, copy}, std::vector<json>{copy, check}}) {
        const Fleet f = fleet_of(order);
        REQUIRE(f.rows.size() == 2);
        const GpuRow* first = row_of(f, "U0");
        REQUIRE(first);
        CHECK(first->commands.size() == 2);
        CHECK(first->figures.size() == 2);  // check's copy.h2d and copy's own figure
        REQUIRE(f.notes.size() == 1);
        CHECK(f.notes[0].find("its GPUs are named by CUDA index only, outside any launcher: taken as n1's GPUs") != std::string::npos);
    }
    // Two ranks that name different GPUs at index 0 (CUDA_VISIBLE_DEVICES
    // narrowed per rank): no way to tell, the copy rows stay their own.
    const json other = check_doc("n1", {{"U9", "A", 50}}, slurm(1));
    CHECK(fleet_of({check, other, copy}).rows.size() == 5);
    // An index no document of the host names: the whole document stays its own.
    json wider = copy;
    wider["results"].push_back({{"device", 2}, {"direction", "h2d"}, {"engine", "ce"}, {"bytes", 1024}, {"median_gbps", 52.0}});
    CHECK(fleet_of({check, wider}).rows.size() == 5);
    // A copy under a launcher is a rank's view: it joins only its own process's GPUs.
    json ranked = copy;
    ranked["origin"] = slurm(1);
    ranked["origin"]["host"] = "n1";
    CHECK(fleet_of({check, ranked}).rows.size() == 4);
    // Another host's GPUs are never taken.
    json elsewhere = copy;
    elsewhere["origin"]["host"] = "n2";
    CHECK(fleet_of({check, elsewhere}).rows.size() == 4);
}

TEST_CASE("report: rows in host order with numbers as numbers, GPUs before GPU-less ranks") {
    CHECK(natural_less("node2", "node10"));
    CHECK(!natural_less("node10", "node2"));
    CHECK(natural_less("a", "b"));
    CHECK(natural_less("gpu-1-2", "gpu-1-10"));
    CHECK(!natural_less("x", "x"));
    const Fleet f = fleet_of({error_doc("info", "node10", slurm(0)), check_doc("node10", {{"U", "A", 5}}),
                              check_doc("node2", {{"V", "A", 5}})});
    REQUIRE(f.rows.size() == 3);
    CHECK(f.rows[0].host == "node2");
    CHECK(f.rows[1].uuid == std::string("U"));
    CHECK(!f.rows[2].index);
}

// ---------------------------------------------------------------------------
// The command, through the binary.

namespace {

std::string fixture(const std::string& name) {
    return tests_dir() + "/fixtures/report/" + name;
}

void collect_keys(const json& value, std::set<std::string>& keys) {
    if (value.is_object())
        for (const auto& [k, v] : value.items()) {
            keys.insert(k);
            collect_keys(v, keys);
        }
    if (value.is_array())
        for (const json& v : value) collect_keys(v, keys);
}

}  // namespace

TEST_CASE("report command: the fixtures' fleet fails with 7, one stderr line, and a document of the schema's keys") {
    const RunResult r = run_gpumem({"report", "--json", fixture("*.json*")});
    CAPTURE(r.err);
    CHECK(r.status == 7);
    CHECK(r.stderr_lines() == 1);
    const json doc = json::parse(r.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"] == "check_failed");
    CHECK(doc["verdict"] == "fail");
    CHECK(doc["gpus"].size() == 12);
    CHECK(doc["outliers"].size() == 2);
    CHECK(doc["documents"].size() == 8);
    std::set<std::string> statuses;
    for (const json& row : doc["gpus"]) statuses.insert(row["status"].get<std::string>());
    CHECK(statuses == std::set<std::string>{"ok", "fail", "outlier", "error", "unknown"});
    // Each node's worst remediation; node1 is healthy, the others drain.
    std::map<std::string, std::string> remedies;
    for (const json& node : doc["nodes"]) remedies[node["host"].get<std::string>()] = node["remediation"].get<std::string>();
    CHECK(remedies == std::map<std::string, std::string>{{"node1", "none"}, {"node2", "drain"}, {"node3", "drain"},
                                                         {"node4", "reset-gpu"}});
    // Every key of the document is one the schema declares.
    const json schema = json::parse(run_gpumem({"--schema"}).out).at("report");
    std::set<std::string> declared, used;
    collect_keys(schema, declared);
    for (const auto& [k, v] : schema["properties"].items()) declared.insert(k);
    for (const auto& table : {"gpus", "nodes", "outliers", "figures", "models", "model_figures", "documents"})
        for (const auto& [k, v] : schema["properties"][table]["items"]["properties"].items()) declared.insert(k);
    collect_keys(doc, used);
    for (const std::string& key : used) {
        CAPTURE(key);
        if (key == "status" || key == "code" || key == "message" || key == "host" || key == "launcher") continue;
        CHECK(schema["properties"].dump().find("\"" + key + "\"") != std::string::npos);
    }
}

TEST_CASE("report command: --drain-list prints host<TAB>reason per node to drain, for a script") {
    const RunResult r = run_gpumem({"report", "--drain-list", fixture("*.json*")});
    CAPTURE(r.err);
    CHECK(r.status == 7);
    CHECK(r.stderr_lines() == 1);
    CHECK(r.out ==
          "node2\tdrain: GPU 2 copy.h2d (drain), copy.h2d below its model's median; GPU 3 copy.d2d below its model's median\n"
          "node3\tdrain: rank 0 error no_device; rank 1 error no_device\n"
          "node4\treset-gpu: GPU 0 nvml.remapped_rows.pending (reset-gpu); GPU 1 nvml.processes could not run\n");
    // --format value gives the same lines; --json the drain table alone.
    CHECK(run_gpumem({"report", "--drain-list", "--format", "value", fixture("*.json*")}).out == r.out);
    const RunResult j = run_gpumem({"report", "--drain-list", "--json", fixture("*.json*")});
    CHECK(j.status == 7);
    const json doc = json::parse(j.out);
    REQUIRE(doc["drain"].size() == 3);
    CHECK(doc["drain"][2] == json{{"host", "node4"}, {"reason", "reset-gpu: GPU 0 nvml.remapped_rows.pending (reset-gpu); GPU 1 nvml.processes could not run"}});
    CHECK_FALSE(doc.contains("gpus"));
    // A healthy fleet: no line, exit 0.
    const RunResult ok = run_gpumem({"report", "--drain-list", fixture("check-node1.json")});
    CHECK(ok.status == 0);
    CHECK(ok.out.empty());
}

TEST_CASE("report command: a healthy fleet exits 0; stdin, '-' and a file named twice are read once") {
    const RunResult ok = run_gpumem({"report", fixture("check-node1.json"), fixture("info.jsonl"), fixture("copy-node1.json")});
    CAPTURE(ok.err);
    CHECK(ok.status == 0);
    CHECK(ok.out.find("verdict: pass") != std::string::npos);
    const RunResult twice = run_gpumem({"report", "--json", fixture("check-node1.json"), fixture("check-*1.json")});
    CHECK(twice.status == 0);
    CHECK(json::parse(twice.out)["documents"].size() == 1);
    const RunResult piped = run_program(
        "/bin/sh", {"-c", "cat \"$1\" | \"$2\" report --json - \"$3\"", "sh", fixture("check-node1.json"), gpumem_binary(),
                    fixture("info.jsonl")});
    CHECK(piped.status == 0);
    CHECK(json::parse(piped.out)["documents"].size() == 3);
    const RunResult csv = run_gpumem({"report", "--csv", fixture("check-node2.json")});
    CHECK(csv.status == 7);
    CHECK(csv.out.rfind("host,index,name,uuid,job_id,rank,local_rank,status,verdict", 0) == 0);
}

TEST_CASE("report: an error document written before its command was known is a rank's error row") {
    json d = error_doc("", "n1", slurm(0), 2, "usage_error");
    const Fleet f = fleet_of({d});
    REQUIRE(f.rows.size() == 1);
    CHECK(f.rows[0].errors == std::vector<std::string>{"gpumem: no usable GPU"});
    CHECK(f.rows[0].commands.empty());
}

TEST_CASE("report input: a number out of range is bad input at its line, never an internal error (issue 26)") {
    json d = check_doc("n1", {{"U1", "A", 55.0}});
    std::string text = d.dump(2);
    const std::size_t at = text.find("55.0");
    REQUIRE(at != std::string::npos);
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    text.replace(at, 4, "1e400");
    CHECK(read_error(text) == "in.json:" + std::to_string(line) + ": malformed JSON: number out of range: 1e400 (beyond a double)");
    // An exit status beyond 255, an index beyond int64, a count beyond uint64 or below 0.
    json e = error_doc("check", "n1", slurm(0), 3);
    e["error"]["status"] = 256;
    CHECK(read_error(e.dump()) == "in.json:1: error.status: expected an exit status (0 to 255)");
    std::string big = check_doc("n1", {{"U1", "A", 55.0}}).dump();
    big.replace(big.find("\"index\":0"), 9, "\"index\":9223372036854775808");
    CHECK(read_error(big) == "in.json:1: checks[0].index: expected an integer below 2^63");
    json info = envelope("info", "n1");
    info["devices"] = {{{"index", 0}, {"uuid", "U1"}, {"free", -1}}};
    CHECK(read_error(info.dump()) == "in.json:1: devices[0].free: expected a whole number, 0 or more (below 2^64)");
    std::string huge = info.dump();
    huge.replace(huge.find("-1"), 2, "18446744073709551616");
    CHECK(read_error(huge) == "in.json:1: devices[0].free: expected a whole number, 0 or more (below 2^64)");
    // A tiny number is a number (0), as nlohmann reads it.
    std::string tiny = d.dump();
    tiny.replace(tiny.find("55.0"), 4, "1e-400");
    CHECK(read_text("in.json", tiny, 1)[0].gpus[0].figures[0].value == 0.0);
}

TEST_CASE("report input: strings with escapes and UTF-8 read as nlohmann reads them; bad UTF-8 is refused") {
    json d = check_doc("n\u00e9\"1\\", {{"GPU-\u2603", "H100 \"SXM\"", 50.0}});
    const std::vector<Document> docs = read_text("t", d.dump() + "\n" + d.dump(2, ' ', true) + "\n", 1);
    REQUIRE(docs.size() == 2);
    for (const Document& doc : docs) {
        CHECK(doc.origin.host == "n\u00e9\"1\\");
        CHECK(doc.gpus[0].uuid == "GPU-\u2603");
        CHECK(doc.gpus[0].name == "H100 \"SXM\"");
    }
    CHECK(read_error("{\"tool\": \"gpu\xc0\xafmem\"}\n").rfind("in.json:1: malformed JSON", 0) == 0);
    CHECK(read_error("{\"tool\": \"\\ud800\"}\n").rfind("in.json:1: malformed JSON", 0) == 0);
    // A byte that never leads a UTF-8 sequence (80-C1, F5-FF), even with
    // continuation bytes after it, as the fuzzer found: "\xc3\xa9\xfd\x82\xac".
    for (unsigned lead : {0x80U, 0xbfU, 0xc0U, 0xc1U, 0xf5U, 0xf8U, 0xfcU, 0xfdU, 0xfeU, 0xffU}) {
        CAPTURE(lead);
        for (const char* before : {"", "\\n"}) {  // with an escape, the string is decoded on another path
            const std::string text = std::string("{\"tool\": \"") + before + "\xc3\xa9" + static_cast<char>(lead) + "\x82\xac\"}\n";
            CHECK(read_error(text).rfind("in.json:1: malformed JSON", 0) == 0);
        }
    }
    // Every well-formed lead still reads: E0-EF with two bytes, F0-F4 with three.
    CHECK(read_error("{\"schema_version\": 1, \"tool\": \"gpumem\", \"x\": \"\xef\xbf\xbd\xf4\x8f\xbf\xbf\"}\n").find("malformed JSON") == std::string::npos);
}

TEST_CASE("report command: a folder's *.json, *.jsonl and .gz files, gzip read by its bytes, plurals that read right") {
    char tmpl[] = "/tmp/gpumem-report-dir.XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    const std::string dir = tmpl;
    const std::string script = "cp \"$1/check-node1.json\" \"$2/a.json\" && gzip -c \"$1/info.jsonl\" > \"$2/b.jsonl.gz\" && "
                               "gzip -c \"$1/copy-node1.json\" > \"$2/c.data\" && echo skip > \"$2/notes.txt\" && "
                               "mkdir \"$2/sub.json\" && cp \"$1/check-node2.json\" \"$2/.hidden.json\"";
    REQUIRE(run_program("/bin/sh", {"-c", script, "sh", fixture(""), dir}).status == 0);
    const RunResult r = run_gpumem({"report", "--json", dir});
    CAPTURE(r.err);
    CHECK(r.status == 0);
    const json doc = json::parse(r.out);
    // a.json (1 document) and b.jsonl.gz (info's lines); not notes.txt, the folder or the dot-file.
    std::set<std::string> sources;
    for (const json& d : doc["documents"]) sources.insert(d["source"].get<std::string>().substr(dir.size() + 1, 5));
    CHECK(sources == std::set<std::string>{"a.jso", "b.jso"});
    // A gzip file named anything is read by its bytes.
    const RunResult gz = run_gpumem({"report", "--json", dir + "/c.data"});
    CHECK(gz.status == 0);
    CHECK(json::parse(gz.out)["documents"].size() == 1);
    // Plurals and counts (issue 30): ranks that found no GPU are counted as such.
    const RunResult ranks = run_gpumem({"report", fixture("error-ranks.jsonl")});
    CHECK(ranks.status == 7);
    CHECK(ranks.out.rfind("2 documents, 0 GPUs and 2 ranks that found no GPU on 1 host\n", 0) == 0);
    const RunResult one = run_gpumem({"report", fixture("check-node1.json")});
    CHECK(one.out.rfind("1 document, 4 GPUs on 1 host\n", 0) == 0);
    // The node's check under Slurm and a copy run on it by hand: its 4 GPUs,
    // not 8 (issue 57), and a note that says how copy's were told.
    const RunResult node = run_gpumem({"report", fixture("check-node1.json"), fixture("copy-node1.json")});
    CAPTURE(node.err);
    CHECK(node.out.rfind("2 documents, 4 GPUs on 1 host\n", 0) == 0);
    CHECK(unwrapped(node.err).find("copy-node1.json:1: its GPUs are named by CUDA index only, outside any launcher: taken as node1's GPUs") !=
          std::string::npos);
    (void)run_program("/bin/rm", {"-rf", dir});
}

TEST_CASE("report input: an escape split across two reads of a file, plain and gzipped") {
    // The reader reads 128 KiB at a time: a backslash as the last byte of a
    // read escapes the first byte of the next, a quote that must not close
    // the string.
    const std::string head = "{\"schema_version\": 1, \"tool\": \"gpumem\", \"version\": \"";
    std::string doc = head + std::string((128u << 10) - 1 - head.size(), 'x') + "\\\"} ] { [\", \"command\": \"info\", "
                      "\"ok\": true, \"origin\": {\"host\": \"n1\"}, \"devices\": [{\"index\": 0, \"uuid\": \"U1\"}]}\n";
    REQUIRE(doc[(128u << 10) - 1] == '\\');
    char tmpl[] = "/tmp/gpumem-report-split.XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    const std::string dir = tmpl;
    {
        std::ofstream(dir + "/split.json") << doc << doc;
    }
    REQUIRE(run_program("/bin/sh", {"-c", "gzip -c \"$1/split.json\" > \"$1/split.gz\"", "sh", dir}).status == 0);
    for (const char* name : {"/split.json", "/split.gz"}) {
        const RunResult r = run_gpumem({"report", "--json", dir + name});
        CAPTURE(r.err);
        CHECK(r.status == 0);
        CHECK(json::parse(r.out)["documents"].size() == 2);
    }
    (void)run_program("/bin/rm", {"-rf", dir});
}

TEST_CASE("report: read_fleet merges in input order on any number of threads, the same fleet each time") {
    const std::vector<std::string> inputs = {fixture("check-node1.json"), fixture("check-node2.json"), fixture("copy-node1.json"),
                                             fixture("info.jsonl"), fixture("error-ranks.jsonl"), fixture("check-node4.json")};
    const Fleet one = read_fleet(inputs, 1, {}, 1);
    for (unsigned threads : {2u, 3u, 8u}) {
        const Fleet many = read_fleet(inputs, 1, {}, threads);
        REQUIRE(many.rows.size() == one.rows.size());
        for (std::size_t i = 0; i < one.rows.size(); ++i) {
            CHECK(many.rows[i].uuid == one.rows[i].uuid);
            CHECK(many.rows[i].sources == one.rows[i].sources);
            CHECK(many.rows[i].status == one.rows[i].status);
        }
        CHECK(many.problems == one.problems);
        REQUIRE(many.documents.size() == one.documents.size());
        for (std::size_t i = 0; i < one.documents.size(); ++i) CHECK(many.documents[i].source == one.documents[i].source);
    }
    // The first fault in input order is the one reported, whatever thread met it.
    char tmpl[] = "/tmp/gpumem-report-bad.XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    const std::string dir = tmpl;
    REQUIRE(run_program("/bin/sh", {"-c", "printf '{\"tool\": 1}\\n' > \"$1/b.json\"; printf '[' > \"$1/c.json\"", "sh", dir}).status == 0);
    for (unsigned threads : {1u, 4u}) {
        try {
            (void)read_fleet({fixture("check-node1.json"), dir + "/b.json", dir + "/c.json"}, 1, {}, threads);
            FAIL("no error");
        } catch (const gpumem::UsageError& e) {
            CHECK(std::string(e.what()) == dir + "/b.json:1: not a gpumem document (no \"tool\": \"gpumem\")");
        }
    }
    (void)run_program("/bin/rm", {"-rf", dir});
}

TEST_CASE("examples: the Slurm scripts parse (tests/slurm-test.sh runs the prolog under a real slurmctld)") {
    const std::string examples = tests_dir() + "/../examples/";
    for (const char* script : {"slurm-prolog.sh", "slurm-epilog.sh", "slurm-healthcheck.sh"}) {
        CAPTURE(script);
        CHECK(run_program("/bin/bash", {"-n", examples + script}).status == 0);
    }
}

// A FIFO or an idle pipe: report waited for ever, and SIGTERM and SIGINT did
// not end it (only SIGKILL did): the signal reached a thread that was not
// reading, and open(2) of a FIFO blocks until a writer comes.
TEST_CASE("report input: a FIFO in a folder is skipped with a note; a FIFO or an idle pipe (report, reuse-sim replay --trace) ends at once on SIGINT or SIGTERM") {
    char tmpl[] = "/tmp/gpumem-report-fifo.XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    const std::string dir = tmpl;
    REQUIRE(run_program("/bin/cp", {fixture("check-node1.json"), dir + "/a.json"}).status == 0);
    REQUIRE(::mkfifo((dir + "/b.json").c_str(), 0600) == 0);
    const RunResult folder = run_gpumem({"report", "--json", dir});
    CHECK(folder.status == 0);
    CHECK(folder.err.find(dir + "/b.json: skipped: a FIFO") != std::string::npos);
    const json doc = json::parse(folder.out);
    CHECK(doc["documents"].size() == 1);
    CHECK(doc["warnings"].size() == 1);
    using Clock = std::chrono::steady_clock;
    for (const int sig : {SIGTERM, SIGINT}) {
        CAPTURE(sig);
        // Named alone, with no writer ever.
        Started fifo = start_gpumem({"report", dir + "/b.json"});
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const auto sent = Clock::now();
        fifo.signal(sig);
        CHECK(fifo.wait_within(5) == 130);
        CHECK(std::chrono::duration<double>(Clock::now() - sent).count() < 2.0);
        // Standard input: a pipe whose writer is open and silent.
        const int writer = ::open((dir + "/b.json").c_str(), O_RDWR | O_CLOEXEC);
        REQUIRE(writer >= 0);
        Started idle = start_program("/bin/sh", {"-c", "exec \"$0\" report - < \"$1\"", gpumem_binary(), dir + "/b.json"});
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        idle.signal(sig);
        CHECK(idle.wait_within(5) == 130);
        ::close(writer);
    }
    // reuse-sim's --trace: a FIFO with no writer, and - on an idle pipe.
    for (const int sig : {SIGTERM, SIGINT}) {
        CAPTURE(sig);
        Started trace = start_gpumem({"reuse-sim", "replay", "--trace", dir + "/b.json"});
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        trace.signal(sig);
        CHECK(trace.wait_within(5) == 130);
        const int writer = ::open((dir + "/b.json").c_str(), O_RDWR | O_CLOEXEC);
        REQUIRE(writer >= 0);
        Started piped = start_program("/bin/sh", {"-c", "exec \"$0\" reuse-sim replay --trace - < \"$1\"", gpumem_binary(), dir + "/b.json"});
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        piped.signal(sig);
        CHECK(piped.wait_within(5) == 130);
        ::close(writer);
    }
    // A FIFO whose writer writes a document, then closes: read as a stream.
    Started fed = start_program("/bin/sh", {"-c", "sleep 0.3; cat \"$0\" > \"$1\"", fixture("check-node1.json"), dir + "/b.json"});
    const RunResult streamed = run_gpumem({"report", "--json", dir + "/b.json"});
    CHECK(streamed.status == 0);
    CHECK(json::parse(streamed.out)["documents"].size() == 1);
    (void)fed.wait();
    (void)run_program("/bin/rm", {"-rf", dir});
}

// ---------------------------------------------------------------------------
// Issue 48: no false pass, unknown check ids named once.

namespace {

// A folder of `files` (name, text), removed with the object.
struct DocumentFolder {
    std::string path;
    explicit DocumentFolder(const std::vector<std::pair<std::string, std::string>>& files) {
        char tmpl[] = "/tmp/gpumem-report-docs.XXXXXX";
        REQUIRE(mkdtemp(tmpl));
        path = tmpl;
        for (const auto& [name, text] : files) std::ofstream(path + "/" + name) << text;
    }
    ~DocumentFolder() { (void)run_program("/bin/rm", {"-rf", path}); }
    DocumentFolder(const DocumentFolder&) = delete;
    DocumentFolder& operator=(const DocumentFolder&) = delete;
    std::string file(const std::string& name) const { return path + "/" + name; }
};

json reuse_sim_doc() {
    json d = envelope("reuse-sim", "n1");
    d["results"] = json::array({{{"strategy", "caching"}, {"peak_reserved", 1024}}});
    return d;
}

}  // namespace

TEST_CASE("report: documents that give no GPU row are no pass: exit 2, 'no GPU rows in N documents', a warning each") {
    json empty_check = check_doc("n2", {});
    const DocumentFolder folder({{"sim.json", reuse_sim_doc().dump(2) + "\n"}, {"check.json", empty_check.dump() + "\n"}});
    const RunResult r = run_gpumem({"report", folder.file("sim.json"), folder.file("check.json")});
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());  // a usage error: nothing on stdout, as the man page says
    CHECK(r.err.find("no GPU rows in 2 documents") != std::string::npos);
    // In every text format (issue 57: --csv printed its tables with the refusal).
    for (const std::vector<std::string>& format : {std::vector<std::string>{"--csv"}, {"--format", "value"}, {"--format", "csv"}}) {
        std::vector<std::string> args = {"report"};
        args.insert(args.end(), format.begin(), format.end());
        args.push_back(folder.file("sim.json"));
        args.push_back(folder.file("check.json"));
        const RunResult f = run_gpumem(args);
        CAPTURE(format.back());
        CHECK(f.status == 2);
        CHECK(f.out.empty());
    }
    // One warning line per document, saying what it is.
    // (wrapped within 100 columns, the lines after the first indented)
    CHECK(unwrapped(r.err).find(folder.file("sim.json") + ":1: skipped: a reuse-sim document names no GPU") != std::string::npos);
    CHECK(unwrapped(r.err).find(folder.file("check.json") + ":1: skipped: a check document that names no GPU") != std::string::npos);
    CHECK(gpumem_lines(r.err) == 3);
    // --json: the error document, with the warnings.
    const RunResult j = run_gpumem({"report", "--json", folder.file("sim.json")});
    CHECK(j.status == 2);
    const json doc = json::parse(j.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"] == "usage_error");
    CHECK(doc["error"]["message"].get<std::string>().find("no GPU rows in 1 document:") == 0);
    CHECK(doc["warnings"].size() == 1);
    // --drain-list must not print an empty list and exit 0 either.
    CHECK(run_gpumem({"report", "--drain-list", folder.file("sim.json")}).status == 2);
    // Beside a fleet, a skipped document is a warning only.
    const RunResult mixed = run_gpumem({"report", folder.file("sim.json"), fixture("check-node1.json")});
    CHECK(mixed.status == 0);
    CHECK(gpumem_lines(mixed.err) == 1);
    CHECK(mixed.err.find("skipped: a reuse-sim document") != std::string::npos);
}

TEST_CASE("report: an unknown check id counts as written, is named once with a suggestion, and costs no message per row") {
    json a = check_doc("n1", {{"GPU-a", "H", 50}});
    json b = check_doc("n2", {{"GPU-b", "H", 50}});
    for (json* d : {&a, &b}) {
        json renamed = (*d)["checks"][0];
        renamed["check"] = "nvml.ecc_mode";
        renamed["verdict"] = "fail";
        (*d)["checks"].push_back(renamed);
        json odd = renamed;
        odd["check"] = "pcie.width";
        odd["verdict"] = "pass";
        (*d)["checks"].push_back(odd);
        (*d)["checks"].push_back(odd);  // twice in one document: still one document
    }
    const Fleet f = fleet_of({a, b});
    REQUIRE(f.notes.size() == 2);
    CHECK(f.notes[0] ==
          "t:1: check 'nvml.ecc_mode' is not one this gpumem knows (in 2 documents: a renamed check, or a newer gpumem's): its "
          "verdicts count as written, with the document's remediation or none; did you mean 'nvml.ecc.mode'?");
    CHECK(f.notes[1].find("check 'pcie.width' is not one this gpumem knows (in 2 documents") != std::string::npos);
    CHECK(f.notes[1].find("(gpumem --list checks names today's)") != std::string::npos);
    // Counted as written: the failure fails the fleet, with no remediation of its own.
    REQUIRE(row_of(f, "GPU-a"));
    CHECK(row_of(f, "GPU-a")->failed_checks == std::vector<std::string>{"nvml.ecc_mode"});
    CHECK(f.failed());
    // Known ids, p2p pairs included, are known; malformed pairs are not.
    CHECK(gpumem::find_check_row("copy.h2d") != nullptr);
    CHECK(gpumem::find_check_row("p2p.0-1") != nullptr);
    CHECK(gpumem::find_check_row("p2p.1-01") == nullptr);
    CHECK(gpumem::find_check_row("p2p.x-1") == nullptr);
    CHECK(gpumem::find_check_row("p2p.0") == nullptr);
    CHECK(gpumem::find_check_row("nvml.ecc_mode") == nullptr);
    // Through the binary: one stderr line per id, beside the failure's.
    const DocumentFolder folder({{"a.jsonl", lines({a, b})}});
    const RunResult r = run_gpumem({"report", folder.file("a.jsonl")});
    CHECK(r.status == 7);
    CHECK(gpumem_lines(r.err) == 3);
    CHECK(unwrapped(r.err).find("did you mean 'nvml.ecc.mode'?") != std::string::npos);
}

TEST_CASE("report fixtures: every check id is one this gpumem knows (make-fixtures.py writes today's)") {
    for (const char* name : {"check-node1.json", "check-node2.json", "check-node4.json"}) {
        CAPTURE(name);
        const std::vector<Document> docs = read_text(name, slurp(fixture(name)), 1);
        REQUIRE(!docs.empty());
        for (const Document& d : docs)
            for (const GpuFacts& g : d.gpus)
                for (const CheckResult& c : g.checks) {
                    CAPTURE(c.check);
                    CHECK(c.known);
                }
    }
    const RunResult r = run_gpumem({"report", fixture("check-node1.json"), fixture("check-node2.json")});
    CHECK(r.err.find("is not one this gpumem knows") == std::string::npos);
}
