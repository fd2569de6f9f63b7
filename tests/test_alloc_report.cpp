// alloc-test's reports without a GPU: each mode's document from synthetic
// results (keys, types, which keys appear when), its keys against the mode's
// schema, the text table's lines and headers, hold's ready line and fill's
// verification message; check() in this process in parse-only mode.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloc/alloc.hpp"
#include "cli/app.hpp"
#include "in_process.hpp"
#include "cli/commands.hpp"
#include "cli/lists.hpp"
#include "cli/output.hpp"
#include "render_widths.hpp"

using namespace gpumem;
using namespace gpumem::cli;
using json = nlohmann::ordered_json;

namespace {

constexpr std::uint64_t MiB = 1ULL << 20;
constexpr std::uint64_t GiB = 1ULL << 30;

DeviceIdentity device(int cuda) {
    DeviceIdentity d;
    d.cuda_index = DeviceId(cuda);
    d.nvml_index = static_cast<unsigned>(cuda);
    d.uuid = "GPU-0000000" + std::to_string(cuda) + "-aaaa-bbbb-cccc-dddddddddddd";
    d.pci = PciAddress{0, 0x18 + static_cast<std::uint32_t>(cuda), 0, 0};
    d.name = "NVIDIA H200";
    return d;
}

Summary summary(double median, std::size_t count = 50) {
    Summary s;
    s.count = count;
    s.median = median;
    s.p90 = median * 1.5;
    s.p99 = median * 2;
    s.max = median * 3;
    return s;
}

json document(const Report& report, bool compact = false) {
    OutputOptions output{Format::json};
    output.compact_json = compact;
    return json::parse(render(report, output));
}
// The table as a pipe gets it; every line of it within 80 and 100 columns too.
std::string table_text(const Report& report) {
    check_widths(report);
    return render(report, OutputOptions{});
}

// Keys of a document or of a schema, nested ones as "outer.inner".
void collect_keys(const json& doc, std::set<std::string>& keys) {
    for (const auto& [key, value] : doc.items()) {
        keys.insert(key);
        const json* inner = value.is_object() ? &value : value.is_array() && !value.empty() && value[0].is_object() ? &value[0] : nullptr;
        if (inner)
            for (const auto& [name, unused] : inner->items()) keys.insert(key + "." + name);
    }
}
std::set<std::string> schema_keys(const DocumentSchema& schema) {
    std::set<std::string> keys;
    const json whole = schema_json(schema);
    for (const auto& [key, value] : whole.at("properties").items()) {
        if (key == "error" || key == "warnings" || key == "origin") continue;  // failures and warnings only; origin is run_command's stamp
        keys.insert(key);
        const json* inner = value.contains("items") ? &value["items"] : &value;
        if (inner->contains("properties"))
            for (const auto& [name, unused] : (*inner)["properties"].items()) keys.insert(key + "." + name);
    }
    return keys;
}

// The keys of one set missing from the other, for messages.
std::string difference(const std::set<std::string>& a, const std::set<std::string>& b) {
    std::string text;
    for (const std::string& k : a)
        if (!b.count(k)) text += " -" + k;
    for (const std::string& k : b)
        if (!a.count(k)) text += " +" + k;
    return text;
}

// --- synthetic runs

LatencyRequest latency_request(std::vector<AllocApi> apis, bool probe) {
    LatencyRequest q;
    q.options.apis = std::move(apis);
    q.options.sizes = {4096, GiB};
    q.options.probe_sync = probe;
    return q;
}

LatencyResults latency_results(const LatencyRequest& q) {
    LatencyResults results;
    LatencyResult r(DeviceId(0));
    for (AllocApi api : q.options.apis) {
        for (std::uint64_t size : q.options.sizes) {
            LatencyRow row;
            row.api = api;
            row.size = size;
            row.allocated = api == AllocApi::vmm ? std::max<std::uint64_t>(size, 2 * MiB) : size;
            row.alloc_us = summary(10);
            row.free_us = summary(20);
            r.rows.push_back(row);
        }
        if (q.options.probe_sync) r.sync.push_back(SyncProbe{api, false, std::nullopt, 1, 60000});
    }
    results.devices.push_back({device(0), r});
    return results;
}

FillRequest fill_request() {
    FillRequest q;
    q.options.total = parse_size_spec("90%", {false, true});
    q.options.chunk = GiB;
    q.options.verify = true;
    q.options.patterns = {Pattern::zeros, Pattern::random};
    q.options.passes = 2;
    q.options.seed = 7;
    return q;
}

FillDevice fill_device(int cuda, std::uint64_t bad_words) {
    FillResult r{DeviceId(cuda)};
    r.free_before = 100 * GiB;
    r.requested = r.allocated = 90 * GiB;
    r.chunks = 90;
    r.alloc_seconds = 0.5;
    r.write_seconds = 0.2;
    r.read_seconds = 0.3;
    r.bytes_written = r.bytes_read = 4 * 90 * GiB;
    r.mismatched_words = bad_words;
    if (bad_words) {
        FillMismatch m;
        m.pattern = Pattern::random;
        m.pass = 2;
        m.chunk = 3;
        m.chunk_base = 0x7f0000000000ULL;
        m.offset = 0x40;
        m.expected = 0x1f;
        m.actual = 0x1e;
        m.words_in_chunk = bad_words;
        r.mismatches.push_back(m);
    }
    return {device(cuda), r, 4.8e12};
}

ChurnRequest churn_request(ChurnOptions::Via via) {
    ChurnRequest q;
    q.options.via = via;
    q.options.sizes = {4096, 8192};
    q.sizes = "4KiB..8KiB";
    q.options.seed = 3;
    q.options.slots = 8;
    q.options.growth = GrowthPolicy::geometric(2.0);
    return q;
}

ChurnResults churn_results(bool timed_frees) {
    ChurnResult r{DeviceId(0)};
    r.ops = 1000;
    r.allocations = 400;
    r.frees = 400;
    r.reuses = 600;
    r.alloc_us = summary(5, 1000);
    if (timed_frees) r.free_us = summary(7, 400);
    r.peak_live = r.peak_used = r.bytes_allocated = 64 * MiB;
    r.max_live = GiB;
    r.seconds = 1.25;
    ChurnResults results;
    results.devices.push_back({device(0), r});
    return results;
}

HoldResults hold_results(std::optional<bool> completed) {
    HoldResults results;
    results.devices.push_back({device(0), 100 * GiB, 4 * GiB, 4 * GiB, 4, 0.25});
    results.devices.push_back({device(1), 100 * GiB, 4 * GiB, 4 * GiB, 4, 0.5});
    results.completed = completed;
    results.held_seconds = completed ? 1.0 : 0.0;
    return results;
}

}  // namespace

TEST_CASE("alloc-test latency report: keys, types, and the columns VMM and the probe add") {
    const LatencyRequest q = latency_request({AllocApi::device, AllocApi::vmm}, true);
    const json doc = document(latency_report(q, latency_results(q), OutputOptions{Format::json}));
    CHECK(doc["command"] == "alloc-test latency");
    REQUIRE(doc["latency"].size() == 4);
    const json& row = doc["latency"][0];
    CHECK(row["index"] == 0);
    CHECK(row["api"] == "device");
    CHECK(row["size"] == 4096);
    CHECK(row["allocated"] == 4096);
    CHECK(row["iterations"] == 50);
    CHECK(row["alloc_p50_us"] == 10.0);
    CHECK(row["free_max_us"] == 60.0);
    CHECK(row["alloc_syncs"] == false);
    CHECK(row["free_syncs"].is_null());  // undecided
    CHECK(doc["latency"][2]["allocated"] == 2 * MiB);
    CHECK(doc["iterations"] == 50);
    CHECK(doc["warmup"] == 3);
    CHECK(doc["sync_probe"]["kernel_ms"] == 50.0);
    CHECK(doc["sync_probe"]["bytes"] == 2 * MiB);
    CHECK_FALSE(doc.contains("cost_table"));

    // Without VMM no allocated column; without the probe no sync_probe and null syncs.
    const LatencyRequest plain = latency_request({AllocApi::device}, false);
    LatencyRequest saving = plain;
    saving.save_costs = "costs.json";
    LatencyResults written = latency_results(plain);
    written.costs_written = true;
    const Report report = latency_report(saving, written, OutputOptions{});
    const json d = document(latency_report(saving, written, OutputOptions{Format::json}));
    CHECK_FALSE(d["latency"][0].contains("allocated"));
    CHECK(d["latency"][0]["alloc_syncs"].is_null());
    CHECK_FALSE(d.contains("sync_probe"));
    CHECK(d["cost_table"] == "costs.json");
    const std::string text = table_text(report);
    CHECK(text.find("device 0: NVIDIA H200 (GPU-00000000-") == 0);
    CHECK(text.find("host clock per call, 50 iterations after 3 warm-ups; microseconds") != std::string::npos);
    CHECK(text.find("cost table written to costs.json") != std::string::npos);
    CHECK(text.find("syncs:") == std::string::npos);
    CHECK(text.find("alloc p50 us") != std::string::npos);
}

TEST_CASE("alloc-test max report: one row per device, the run's chunk and granularity") {
    MaxRequest q;
    q.options.granularity = 2 * MiB;
    q.options.chunk = GiB;
    MaxResult r{DeviceId(1)};
    r.total = 141 * GiB;
    r.free_before = 140 * GiB;
    r.largest_single = 139 * GiB;
    r.probes = 17;
    r.chunks.full_chunks = 139;
    r.chunks.full_bytes = 139 * GiB;
    r.chunks.tail_pieces = 2;
    r.chunks.tail_bytes = 512 * MiB;
    MaxResults results;
    results.devices.push_back({device(1), r});
    const json doc = document(max_report(q, results, OutputOptions{Format::json}));
    const json& row = doc["max"][0];
    CHECK(row["index"] == 1);
    CHECK(row["chunk"] == GiB);
    CHECK(row["chunks"] == 139);
    CHECK(row["tail_pieces"] == 2);
    CHECK(row["obtainable"] == 139 * GiB + 512 * MiB);
    CHECK(row["shortfall"] == GiB / 2);
    CHECK(row["largest_pct_free"].get<double>() == doctest::Approx(100.0 * 139 / 140));
    CHECK(row["obtainable_pct_total"].get<double>() == doctest::Approx(100.0 * 139.5 / 141));
    CHECK(row["probes"] == 17);
    CHECK(doc["granularity"] == 2 * MiB);
    CHECK(table_text(max_report(q, results, OutputOptions{})).find("short of free") != std::string::npos);
}

TEST_CASE("alloc-test fill report: rates, verdicts, mismatches only on failure") {
    const FillRequest q = fill_request();
    FillResults good;
    good.devices.push_back(fill_device(0, 0));
    const json doc = document(fill_report(q, good, OutputOptions{Format::json}));
    const json& row = doc["fill"][0];
    CHECK(row["patterns"] == "zeros,random");
    CHECK(row["passes"] == 2);
    CHECK(row["chunks"] == 90);
    CHECK(row["result"] == "ok");
    CHECK(row["gbps"].get<double>() == doctest::Approx(8.0 * 90 * GiB / 0.5 / 1e9));
    CHECK(row["peak_gbps"].get<double>() == doctest::Approx(4800.0));
    CHECK(row["pct_of_peak"].get<double>() == doctest::Approx(100.0 * 8 * 90 * GiB / 0.5 / 4.8e12));
    CHECK(doc["chunk"] == GiB);
    CHECK(doc["verify"] == true);
    CHECK(doc["seed"] == 7);
    CHECK_FALSE(doc.contains("mismatches"));
    CHECK_FALSE(doc.contains("allocation_failure"));
    CHECK(fill_failure_message(good).empty());

    FillResults bad;
    bad.devices.push_back(fill_device(0, 5));
    bad.devices.push_back(fill_device(1, 1));
    const json failed = document(fill_report(q, bad, OutputOptions{Format::json}));
    CHECK(failed["fill"][0]["result"] == "FAILED");
    REQUIRE(failed["mismatches"].size() == 2);
    const json& m = failed["mismatches"][0];
    CHECK(m["index"] == 0);
    CHECK(m["pattern"] == "random");
    CHECK(m["pass"] == 2);
    CHECK(m["chunk"] == 3);
    CHECK(m["chunk_base"] == "0x7f0000000000");
    CHECK(m["offset"] == 0x40);
    CHECK(m["address"] == "0x7f0000000040");
    CHECK(m["expected"] == "0x1f");
    CHECK(m["actual"] == "0x1e");
    CHECK(m["bad_words_in_chunk"] == 5);
    CHECK(fill_failure_message(bad) ==
          "device 0: 5 word(s) read back wrong; first at 0x7f0000000040 (chunk 3 at 0x7f0000000000 + 0x40, pattern random, "
          "pass 2): expected 0x1f, read 0x1e (and 1 more device(s))");

    // Nothing written (no patterns run): no rates.
    FillResults allocated;
    allocated.devices.push_back(fill_device(0, 0));
    FillResult& r = allocated.devices[0].result;
    r.bytes_written = r.bytes_read = 0;
    r.write_seconds = r.read_seconds = 0;
    const json only = document(fill_report(q, allocated, OutputOptions{Format::json}));
    CHECK(only["fill"][0]["result"] == "allocated");
    CHECK(only["fill"][0]["gbps"].is_null());
    CHECK(only["fill"][0]["pct_of_peak"].is_null());
}

TEST_CASE("alloc-test fill and hold: a failed chunked allocation is in the error document") {
    FillResults results;
    results.allocation_failure = AllocationFailure{DeviceId(0), 8 * GiB, 3 * GiB, 3};
    const Report report = fill_report(fill_request(), results, OutputOptions{Format::json});
    const json doc = json::parse(render_json_error(report, OutOfMemoryError("out of memory", 8 * GiB), OutputOptions{Format::json}));
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["status"] == 5);
    const json& f = doc["allocation_failure"];
    CHECK(f["index"] == 0);
    CHECK(f["requested"] == 8 * GiB);
    CHECK(f["allocated_before_failure"] == 3 * GiB);
    CHECK(f["pieces_before_failure"] == 3);
    CHECK(doc["fill"].empty());

    HoldResults held;
    held.allocation_failure = results.allocation_failure;
    CHECK(document(hold_report(HoldRequest{}, held, OutputOptions{Format::json}))["allocation_failure"]["pieces_before_failure"] == 3);
    // The failure is recorded as it propagates.
    std::optional<AllocationFailure> failure;
    CHECK_THROWS_AS(recording_allocation_failure(failure,
                                                 []() -> int {
                                                     throw PartialAllocationError("x", DeviceId(2), 10, 4, 1);
                                                 }),
                    PartialAllocationError);
    REQUIRE(failure);
    CHECK(failure->device == DeviceId(2));
    CHECK(failure->allocated == 4);
}

TEST_CASE("alloc-test churn report: direct and mixmemory columns") {
    const ChurnRequest direct = churn_request(ChurnOptions::Via::direct);
    const json doc = document(churn_report(direct, churn_results(true), OutputOptions{Format::json}));
    const json& row = doc["churn"][0];
    CHECK(row["via"] == "direct");
    CHECK(row["api"] == "device");
    CHECK_FALSE(row.contains("reuses"));
    CHECK(row["free_p50_us"] == 7.0);
    CHECK(row["alloc_p99_us"] == 10.0);
    CHECK(doc["seed"] == 3);
    CHECK(doc["sizes"] == "4KiB..8KiB");
    CHECK_FALSE(doc.contains("slots"));
    CHECK_FALSE(doc.contains("growth"));
    const std::string direct_text = table_text(churn_report(direct, churn_results(true), OutputOptions{}));
    CHECK(direct_text.find("alloc p50 us") != std::string::npos);
    CHECK(direct_text.find("peak live") != std::string::npos);

    const ChurnRequest mix = churn_request(ChurnOptions::Via::mixmemory);
    const json m = document(churn_report(mix, churn_results(false), OutputOptions{Format::json}));
    CHECK(m["churn"][0]["via"] == "mixmemory");
    CHECK(m["churn"][0]["reuses"] == 600);
    CHECK_FALSE(m["churn"][0].contains("free_p50_us"));
    CHECK(m["slots"] == 8);
    CHECK(m["growth"] == GrowthPolicy::geometric(2.0).name());
    const std::string mix_text = table_text(churn_report(mix, churn_results(false), OutputOptions{}));
    CHECK(mix_text.find("request p50 us") != std::string::npos);
    CHECK(mix_text.find("peak capacity") != std::string::npos);
    CHECK(mix_text.find("mixmemory: 8 slots;") != std::string::npos);

    // Nothing timed: null latencies.
    ChurnResults idle = churn_results(false);
    idle.devices[0].result.alloc_us = Summary{};
    CHECK(document(churn_report(direct, idle, OutputOptions{Format::json}))["churn"][0]["alloc_p50_us"].is_null());
    CHECK(document(churn_report(direct, idle, OutputOptions{Format::json}))["churn"][0]["free_p50_us"].is_null());
}

TEST_CASE("alloc-test hold: the ready line, the ready event, and how it ended") {
    HoldRequest q;
    q.duration_s = 60;
    const HoldResults results = hold_results(std::nullopt);
    CHECK(hold_ready_line(q, results, OutputOptions{}, 4242) ==
          "ready: held 4 GiB on device 0 (GPU-00000000-aaaa-bbbb-cccc-dddddddddddd), 4 GiB on device 1 "
          "(GPU-00000001-aaaa-bbbb-cccc-dddddddddddd)\n");
    const std::string event_line = hold_ready_line(q, results, OutputOptions{Format::json}, 4242);
    CHECK(event_line.find('\n') == event_line.size() - 1);  // one line
    const json event = json::parse(event_line);
    CHECK(event.dump() ==
          R"({"event":"ready","held":8589934592,"devices":[{"index":0,"uuid":"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd","held":4294967296},)"
          R"({"index":1,"uuid":"GPU-00000001-aaaa-bbbb-cccc-dddddddddddd","held":4294967296}],"duration_seconds":60.0,"pid":4242})");
    CHECK(json::parse(hold_ready_line(HoldRequest{}, results, OutputOptions{Format::json}, 1))["duration_seconds"].is_null());

    const json ended = document(hold_report(q, hold_results(true), OutputOptions{Format::json}), true);
    REQUIRE(ended["hold"].size() == 2);
    CHECK(ended["hold"][1]["uuid"] == "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd");
    CHECK(ended["hold"][1]["chunks"] == 4);
    CHECK(ended["hold"][1]["alloc_seconds"] == 0.5);
    CHECK(ended["hold"][1]["held_seconds"] == 1.0);
    CHECK(ended["hold"][0]["ended"] == "duration");
    CHECK_FALSE(ended.contains("allocation_failure"));
    CHECK(document(hold_report(q, hold_results(false), OutputOptions{Format::json}))["hold"][0]["ended"] == "signal");
    CHECK(table_text(hold_report(q, hold_results(false), OutputOptions{})).find("ended by") != std::string::npos);
}

TEST_CASE("alloc-test schemas: every mode's document has exactly its schema's keys") {
    std::set<std::string> latency;
    const LatencyRequest vmm = latency_request({AllocApi::vmm}, true);
    LatencyRequest saving = vmm;
    saving.save_costs = "c.json";
    LatencyResults written = latency_results(vmm);
    written.costs_written = true;
    collect_keys(document(latency_report(saving, written, OutputOptions{Format::json})), latency);
    CHECK(difference(latency, schema_keys(kAllocLatencyCommand.schema())) == "");

    std::set<std::string> max;
    MaxResults max_results;
    max_results.devices.push_back({device(0), MaxResult{DeviceId(0)}});
    collect_keys(document(max_report(MaxRequest{}, max_results, OutputOptions{Format::json})), max);
    CHECK(difference(max, schema_keys(kAllocMaxCommand.schema())) == "");

    std::set<std::string> fill;
    FillResults bad;
    bad.devices.push_back(fill_device(0, 1));
    bad.allocation_failure = AllocationFailure{};
    collect_keys(document(fill_report(fill_request(), bad, OutputOptions{Format::json})), fill);
    CHECK(difference(fill, schema_keys(kAllocFillCommand.schema())) == "");

    // Each route has keys of its own: together they are the schema's.
    std::set<std::string> churn;
    collect_keys(document(churn_report(churn_request(ChurnOptions::Via::direct), churn_results(true), OutputOptions{Format::json})),
                 churn);
    collect_keys(
        document(churn_report(churn_request(ChurnOptions::Via::mixmemory), churn_results(false), OutputOptions{Format::json})),
        churn);
    CHECK(difference(churn, schema_keys(kAllocChurnCommand.schema())) == "");

    std::set<std::string> hold;
    HoldResults failed = hold_results(true);
    failed.allocation_failure = AllocationFailure{};
    collect_keys(document(hold_report(HoldRequest{}, failed, OutputOptions{Format::json})), hold);
    CHECK(difference(hold, schema_keys(kAllocHoldCommand.schema())) == "");

    // The schema names the choices of the text columns that take a table's names.
    const json churn_schema = schema_json(kAllocChurnCommand.schema());
    CHECK(churn_schema["properties"]["churn"]["items"]["properties"]["via"]["enum"] == json::array({"direct", "mixmemory", nullptr}));
}

TEST_CASE("alloc-test --list via: the --via table") {
    const json doc = document(list_report("via"));
    REQUIRE(doc["names"].size() == 2);
    CHECK(doc["names"][0]["name"] == "direct");
    CHECK(doc["names"][1]["name"] == "mixmemory");
    CHECK(kChurnVias.parse("mixmemory") == ChurnOptions::Via::mixmemory);
    CHECK_THROWS_WITH_AS(kChurnVias.parse("pool"), "unknown churn route 'pool' (expected direct or mixmemory)", UsageError);
}

TEST_CASE("alloc-test check: valid command lines pass every check before the driver") {
    using Args = std::vector<std::string>;
    auto expect = [](int status, const std::vector<Args>& lines) {
        for (const Args& args : lines) {
            std::string line;
            for (const std::string& a : args) line += " " + a;
            CAPTURE(line);
            CHECK(parse_only(args) == status);
        }
    };
    expect(0, {
             {"alloc-test", "latency"},
             {"alloc-test", "latency", "--api", "vmm,all", "--api", "device", "--sizes", "4KiB..1GiB:x4"},
             {"alloc-test", "latency", "--save-costs", "/nonexistent/costs.json"},  // the file is tried in execute
             {"-d", "0", "alloc-test", "latency", "--save-costs", "costs.json", "--no-sync-probe"},
             {"alloc-test", "max", "--granularity", "1MiB", "--chunk", "1MiB"},
             {"alloc-test", "fill", "95%", "--verify", "--pattern", "walking,random", "--pattern", "random", "--passes", "3"},
             {"alloc-test", "fill", "--total", "1GiB", "--seed", "18446744073709551615", "--verify", "--debug-corrupt-word", "5"},
             {"alloc-test", "churn", "--via", "mixmemory", "--slots", "4096", "--growth", "x1.25", "--duration", "30s"},
             {"alloc-test", "churn", "--api", "async-pool", "--ops", "1099511627776", "--max-live", "4GiB"},
             {"-d", "all", "alloc-test", "hold", "10%", "--duration", "1d", "--chunk", "2MiB", "--json"},
         });
    expect(2, {
             {"alloc-test", "latency", "--save-costs", ""},
             {"alloc-test", "latency", "--save-costs", "costs/"},
             {"-d", "all", "alloc-test", "latency", "--save-costs", "costs.json"},
             {"alloc-test", "churn", "--growth", "x2"},
             {"alloc-test", "churn", "--duration", ""},
             {"alloc-test", "hold", "1GiB", "--duration", ""},
             {"alloc-test", "fill", "--seed", "-1"},
         });
}
