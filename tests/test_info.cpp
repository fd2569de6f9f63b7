// gpumem info without a GPU: the field table (--query parsing, default
// columns, the NVML queries a run makes, --list fields), the report of
// synthetic samples and picks (keys, types, table against machine formats),
// the document's keys against info_schema(), and check() through the
// command line in parse-only mode and through the binary.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "in_process.hpp"
#include "info_samples.hpp"
#include "cli_harness.hpp"
#include "cli/commands.hpp"
#include "info/info_fields.hpp"
#include "info/info_report.hpp"
#include "cli/lists.hpp"
#include "cli/output.hpp"
#include "render_widths.hpp"

using namespace gpumem;
using namespace gpumem::cli;
using namespace info_samples;
using json = nlohmann::ordered_json;  // documents keep their keys' order

namespace {

std::vector<std::string> keys_of(const InfoFieldList& fields) {
    std::vector<std::string> keys;
    for (const Named<InfoField>* f : fields) keys.emplace_back(f->name);
    return keys;
}

std::vector<std::string> all_keys() {
    std::vector<std::string> keys;
    for (const Named<InfoField>& row : kInfoFields) keys.emplace_back(row.name);
    return keys;
}

json document(const Report& report) { return json::parse(render(report, OutputOptions{Format::json})); }

std::set<std::string> schema_keys(const json& schema) {
    std::set<std::string> keys;
    for (const auto& [key, value] : schema.at("properties").items()) {
        keys.insert(key);
        if (value.contains("items") && value["items"].contains("properties"))
            for (const auto& [inner, unused] : value["items"]["properties"].items()) keys.insert(key + "." + inner);
    }
    return keys;
}

void collect_keys(const json& doc, std::set<std::string>& keys) {
    for (const auto& [key, value] : doc.items()) {
        keys.insert(key);
        if (value.is_array())
            for (const json& item : value)
                if (item.is_object())
                    for (const auto& [inner, unused] : item.items()) keys.insert(key + "." + inner);
    }
}

}  // namespace

TEST_CASE("info fields: --query takes keys and aliases, in order, each once") {
    CHECK(keys_of(parse_info_fields("used")) == std::vector<std::string>{"used"});
    CHECK(keys_of(parse_info_fields("memory.free, pci.bus_id,index")) == std::vector<std::string>{"free", "pci_bus_id", "index"});
    CHECK(keys_of(parse_info_fields("cuda_index,gpu_uuid,compute_cap")) ==
          std::vector<std::string>{"index", "uuid", "compute_capability"});
    for (const Named<InfoField>& row : kInfoFields) {
        CAPTURE(row.name);
        CHECK(parse_info_fields(row.name).front() == &row);
        for (std::string_view alias : info_field_aliases(row.value)) CHECK(parse_info_fields(std::string(alias)).front() == &row);
    }
    for (const char* bad : {"", " ", ",", "used,", ",used", "used,,free", "used,used", "free,memory.free", "Used", "nonsense",
                            "used;free", "all"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_info_fields(bad), UsageError);
    }
}

TEST_CASE("info fields: keys and aliases are unique, and each row is complete") {
    std::set<std::string_view> names;
    for (const Named<InfoField>& row : kInfoFields) {
        CAPTURE(row.name);
        CHECK(names.insert(row.name).second);
        for (std::string_view alias : info_field_aliases(row.value)) {
            CAPTURE(alias);
            CHECK(!alias.empty());
            CHECK(names.insert(alias).second);
        }
        CHECK(!row.value.header.empty());
        CHECK(!row.help.empty());
        CHECK(static_cast<bool>(row.value.get));
    }
}

TEST_CASE("info fields: the default table, and every field elsewhere") {
    CHECK(keys_of(default_info_fields(Format::table)) ==
          std::vector<std::string>{"index", "nvml_index", "name", "pci_bus_id", "total", "reserved", "used", "free",
                                   "compute_capability"});
    for (Format f : {Format::json, Format::csv, Format::value}) CHECK(keys_of(default_info_fields(f)) == all_keys());
}

TEST_CASE("info fields: a run queries only what its fields need") {
    auto need = [](const char* query) { return snapshot_fields_for(parse_info_fields(query)); };
    const SnapshotFields used = need("used");
    CHECK_FALSE((used.versions || used.bar1 || used.compute_capability || used.pcie || used.peak_bandwidth || used.processes ||
                 used.health));
    const SnapshotFields some = need("bar1_free,pcie_width_max,index");
    CHECK((some.bar1 && some.pcie));
    CHECK_FALSE((some.versions || some.compute_capability || some.peak_bandwidth));
    CHECK(need("cuda_driver_version").versions);
    CHECK(need("compute_cap").compute_capability);
    CHECK(need("peak_memory_bandwidth").peak_bandwidth);
    const SnapshotFields all = snapshot_fields_for(default_info_fields(Format::json));
    CHECK((all.versions && all.bar1 && all.compute_capability && all.pcie && all.peak_bandwidth && all.health));
    CHECK_FALSE(snapshot_fields_for(default_info_fields(Format::table)).health);  // the table shows no health field
    for (const char* health : {"remapped_rows.pending", "ecc_enabled", "clocks.max.mem", "clock_event_reason_names"})
        CHECK(need(health).health);
    CHECK_FALSE(all.processes);  // --processes alone asks for them
}

TEST_CASE("info fields: health fields answer to nvidia-smi's names, both where it has two") {
    CHECK(keys_of(parse_info_fields("ecc.mode.current,ecc.errors.uncorrected.volatile.total,remapped_rows.pending")) ==
          std::vector<std::string>{"ecc_enabled", "ecc_uncorrected_volatile", "remapped_rows_pending"});
    CHECK(keys_of(parse_info_fields("retired_pages.sbe,retired_pages.double_bit.count,clocks.mem,clocks.max.memory")) ==
          std::vector<std::string>{"retired_pages_sbe", "retired_pages_dbe", "memory_clock_mhz", "memory_clock_max_mhz"});
    CHECK(keys_of(parse_info_fields("clocks_event_reasons.active")) == std::vector<std::string>{"clock_event_reasons"});
    CHECK(keys_of(parse_info_fields("clocks_throttle_reasons.active")) == std::vector<std::string>{"clock_event_reasons"});
    // Two names of one field are the field twice.
    for (const char* twice : {"retired_pages.sbe,retired_pages.single_bit_ecc.count", "clocks.mem,memory_clock_mhz",
                              "clocks_event_reasons.active,clocks_throttle_reasons.active"}) {
        CAPTURE(twice);
        CHECK_THROWS_AS(parse_info_fields(twice), UsageError);
    }
    // Not gpumem's: nvidia-smi's per-location ECC counts and per-reason flags, and a space-separated list.
    for (const char* unknown : {"ecc.errors.corrected.volatile", "remapped_rows", "clocks.mem clocks.max.mem",
                                "ecc.errors.corrected.volatile.dram", "clocks_event_reasons.gpu_idle"}) {
        CAPTURE(unknown);
        CHECK_THROWS_AS(parse_info_fields(unknown), UsageError);
    }
}

TEST_CASE("info fields: gpumem --list fields is the table, with the aliases") {
    const Report r = list_report("fields");
    REQUIRE(r.tables.size() == 1);
    const Table& t = r.tables[0];
    REQUIRE(t.rows.size() == kInfoFields.size());
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        const Named<InfoField>& row = kInfoFields.begin()[i];
        CHECK(std::get<std::string>(t.rows[i][0]) == row.name);
        const std::string description = std::get<std::string>(t.rows[i][1]);
        CHECK(description.rfind(std::string(row.help), 0) == 0);
        for (std::string_view alias : info_field_aliases(row.value)) CHECK(description.find(std::string(alias)) != std::string::npos);
        if (!row.value.aliases.empty()) CHECK(description.find(" (also: ") != std::string::npos);
    }
}

// issue 45: the default table and one with every field, with processes,
// within 80 and 100 columns (too many columns: a block per GPU).
TEST_CASE("info report: the table keeps within 80 and 100 columns, every field asked for included") {
    InfoResults results;
    results.snapshot = snapshot();
    check_widths(info_report(request(default_info_fields(Format::table), true), results, OutputOptions{}));
    std::string every;
    for (const Named<InfoField>& row : kInfoFields) every += (every.empty() ? "" : ",") + std::string(row.name);
    const Report all = info_report(request(parse_info_fields(every), true), results, OutputOptions{});
    check_widths(all);
    OutputOptions narrow;
    narrow.columns = 80;
    CHECK(render(all, narrow).find("\n    bus id: 0000:19:00.0\n") != std::string::npos);  // records
}

TEST_CASE("info report: the JSON document of a sample") {
    InfoResults results;
    results.snapshot = snapshot();
    const json doc = document(info_report(request(default_info_fields(Format::json), true), results, OutputOptions{Format::json}));
    CHECK(doc.at("command") == "info");
    REQUIRE(doc.at("devices").size() == 2);
    const json& d0 = doc["devices"][0];
    CHECK(d0.at("index") == 0);
    CHECK(d0.at("nvml_index") == 1);
    CHECK(d0.at("pci_bus_id") == "0000:19:00.0");
    CHECK(d0.at("total").is_number_unsigned());
    CHECK(d0.at("total") == 140 * GiB);
    CHECK(d0.at("free") == 100 * GiB);
    CHECK(d0.at("reserved") == GiB / 2);
    CHECK(d0.at("bar1_free") == 254ULL << 20);
    CHECK(d0.at("compute_capability") == "9.0");
    CHECK(d0.at("pcie_gen").is_number_integer());
    CHECK(d0.at("pcie_width_max") == 16);
    CHECK(d0.at("peak_memory_bandwidth") == doctest::Approx(4800.0));  // GB/s
    CHECK(d0.at("driver_version") == "580.159.04");
    CHECK(d0.at("cuda_driver_version") == "13.0");
    CHECK(d0.at("visible_devices_id") == "1");
    const json& d1 = doc["devices"][1];  // no optional figure read
    for (const char* key : {"bar1_total", "compute_capability", "pcie_gen", "peak_memory_bandwidth"}) CHECK(d1.at(key).is_null());
    REQUIRE(doc.at("processes").size() == 2);
    CHECK(doc["processes"][0] == json{{"index", 0}, {"pid", 4242}, {"process_name", "python3"}, {"used_memory", 10 * GiB}});
    CHECK(doc["processes"][1].at("used_memory").is_null());
    CHECK(doc.at("source") == "nvml");
    CHECK(doc.at("driver_version") == "580.159.04");
    CHECK(doc.at("cuda_driver_version") == "13.0");
    CHECK(doc.at("memory_info_version") == 2);
    CHECK_FALSE(doc.contains("timestamp"));
    CHECK_FALSE(doc.contains("warnings"));
    CHECK_FALSE(doc.contains("pick"));
}

TEST_CASE("info report: health fields: numbers, booleans, the reasons; null where not supported") {
    InfoResults results;
    results.snapshot = snapshot();
    DeviceReport partial = device(2, 2, 130 * GiB);
    partial.health = NvmlHealth{};  // NVML answered, and supports none of it (a GeForce, or an old driver)
    partial.health->ecc_enabled = false;
    partial.health->clock_event_reasons = 0x1 | 0x40 | 0x10000;  // gpu_idle, hw_thermal_slowdown and a bit not named
    results.snapshot->devices.push_back(partial);
    const json doc = document(info_report(request(default_info_fields(Format::json)), results, OutputOptions{Format::json}));
    const json& d0 = doc.at("devices")[0];
    CHECK(d0.at("ecc_enabled") == true);
    CHECK(d0.at("ecc_enabled_pending") == true);
    CHECK(d0.at("ecc_corrected_volatile") == 3);
    CHECK(d0.at("ecc_corrected_volatile").is_number_unsigned());
    CHECK(d0.at("ecc_uncorrected_volatile") == 0);
    CHECK(d0.at("ecc_corrected_aggregate") == 12);
    CHECK(d0.at("ecc_uncorrected_aggregate") == 1);
    CHECK(d0.at("remapped_rows_correctable") == 2);
    CHECK(d0.at("remapped_rows_uncorrectable") == 1);
    CHECK(d0.at("remapped_rows_pending") == false);
    CHECK(d0.at("remapped_rows_failure") == false);
    CHECK(d0.at("retired_pages_sbe") == 0);
    CHECK(d0.at("retired_pages_pending") == false);
    CHECK(d0.at("memory_clock_mhz") == 2619);
    CHECK(d0.at("memory_clock_max_mhz") == 2619);
    CHECK(d0.at("clock_event_reasons") == "0x0000000000000004");
    CHECK(d0.at("clock_event_reason_names") == "sw_power_cap");
    const json& d1 = doc["devices"][1];  // health not read
    const json& d2 = doc["devices"][2];  // read, mostly unsupported
    for (const Named<InfoField>& row : kInfoFields) {
        if (row.value.needs != &SnapshotFields::health) continue;
        CAPTURE(row.name);
        CHECK(d1.at(std::string(row.name)).is_null());
        const std::string key(row.name);
        if (key != "ecc_enabled" && key.rfind("clock_event", 0) != 0) CHECK(d2.at(key).is_null());
    }
    CHECK(d2.at("ecc_enabled") == false);
    CHECK(d2.at("clock_event_reasons") == "0x0000000000010041");
    CHECK(d2.at("clock_event_reason_names") == "gpu_idle,hw_thermal_slowdown,0x10000");

    // The table: yes/no, and - where there is no figure; CSV: true/false, empty.
    const InfoRequest q = request(parse_info_fields("index,ecc.mode.current,remapped_rows.pending,retired_pages.sbe,clock_event_reason_names"));
    const std::string table = render(info_report(q, results, OutputOptions{}), OutputOptions{});
    check_widths(info_report(q, results, OutputOptions{}));
    CHECK(table.find("remap pending") != std::string::npos);
    const std::vector<std::string> lines = [&] {
        std::vector<std::string> out;
        std::size_t at = 0;
        for (std::size_t nl; (nl = table.find('\n', at)) != std::string::npos; at = nl + 1) out.push_back(table.substr(at, nl - at));
        return out;
    }();
    REQUIRE(lines.size() >= 5);
    CHECK(lines[2].find("yes") != std::string::npos);
    CHECK(lines[2].find("sw_power_cap") != std::string::npos);
    CHECK(lines[3].find("-") != std::string::npos);
    const std::string csv = render(info_report(q, results, OutputOptions{Format::csv}), OutputOptions{Format::csv});
    CHECK(csv == "index,ecc_enabled,remapped_rows_pending,retired_pages_sbe,clock_event_reason_names\n"
                 "0,true,false,0,sw_power_cap\n"
                 "1,,,,\n"
                 "2,false,,,\"gpu_idle,hw_thermal_slowdown,0x10000\"\n");
}

TEST_CASE("info report: --query's columns in its order; null where unknown") {
    InfoResults results;
    results.snapshot = snapshot(false);
    results.snapshot->driver_version.clear();
    results.timestamp = 1700000000.25;
    const InfoRequest q = request(parse_info_fields("memory.used,index,reserved,driver_version"));
    const json doc = document(info_report(q, results, OutputOptions{Format::json}));
    std::vector<std::string> keys;
    for (const auto& [key, value] : doc.at("devices")[0].items()) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"used", "index", "reserved", "driver_version"});
    CHECK(doc["devices"][0].at("reserved").is_null());
    CHECK(doc["devices"][0].at("driver_version").is_null());
    CHECK(doc.at("driver_version").is_null());
    CHECK(doc.at("memory_info_version") == 1);
    CHECK(doc.at("timestamp") == 1700000000.25);
    REQUIRE(doc.at("warnings").size() == 1);
    CHECK(doc.at("warnings")[0].get<std::string>().find("v1") != std::string::npos);

    const std::string csv = render(info_report(q, results, OutputOptions{Format::csv, Unit::MiB}), OutputOptions{Format::csv, Unit::MiB});
    CHECK(csv.rfind("used [MiB],index,reserved [MiB],driver_version\n", 0) == 0);
    CHECK(csv.find("\n\n") == std::string::npos);  // no processes table without --processes
}

TEST_CASE("info report: the table has the driver line, and says when there are no processes") {
    InfoResults results;
    results.snapshot = snapshot();
    for (DeviceReport& d : results.snapshot->devices) d.processes.clear();
    const Report r = info_report(request(default_info_fields(Format::table), true), results, OutputOptions{});
    const std::string text = render(r, OutputOptions{});
    check_widths(r);
    CHECK(text.rfind("NVIDIA driver 580.159.04, CUDA 13.0, source nvml\n", 0) == 0);
    CHECK(text.find("cuda  nvml  name") != std::string::npos);
    CHECK(text.find("\nNo compute processes.\n") != std::string::npos);
    CHECK(r.warnings.empty());

    results.snapshot = snapshot(false);
    results.snapshot->source = "cuda-runtime";
    results.snapshot->driver_version.clear();
    const Report fallback = info_report(request(default_info_fields(Format::table)), results, OutputOptions{});
    CHECK(render(fallback, OutputOptions{}).rfind("NVIDIA driver ?, CUDA 13.0, source cuda-runtime\n", 0) == 0);
    CHECK(document(fallback).at("memory_info_version") == 0);
    CHECK(fallback.warnings.empty());  // v1 is NVML's; the runtime has no reserved figure at all

    const Report v1 = info_report(request(default_info_fields(Format::table)), InfoResults{snapshot(false), {}, {}}, OutputOptions{});
    CHECK(render(v1, OutputOptions{}).find(", source nvml (memory info v1)\n") != std::string::npos);
    CHECK(v1.warnings.size() == 1);
}

TEST_CASE("info report: nothing measured gives the envelope alone") {
    const json doc = document(info_report(InfoRequest{}, InfoResults{}, OutputOptions{Format::json}));
    std::set<std::string> keys;
    for (const auto& [key, value] : doc.items()) keys.insert(key);
    CHECK(keys == std::set<std::string>{"schema_version", "tool", "version", "command", "ok"});
    CHECK(doc.at("command") == "info");
}

TEST_CASE("info pick: most free first, ties in the order selected, --min-free filters") {
    InventorySnapshot s = snapshot();
    s.devices.push_back(device(2, 2, 120 * GiB));
    s.devices[2].base_index.reset();  // unknown base order: the UUID
    const auto ids = [](const std::vector<PickedDevice>& picked) { return pick_line(picked); };
    CHECK(ids(pick_devices(s, std::nullopt, 3)) == "0," + s.devices[2].id.uuid + ",1");
    CHECK(ids(pick_devices(s, std::nullopt, 1)) == "0");
    CHECK(pick_devices(s, std::nullopt, 9).size() == 3);
    CHECK(ids(pick_devices(s, parse_size_spec("110GiB"), 3)) == "0," + s.devices[2].id.uuid);
    CHECK(ids(pick_devices(s, parse_size_spec("80%", {false, true}), 3)) == "0," + s.devices[2].id.uuid);
    CHECK(pick_devices(s, parse_size_spec("100%", {false, true}), 3).empty());
    const std::vector<PickedDevice> picked = pick_devices(s, std::nullopt, 2);
    CHECK(picked[0].index == DeviceId(1));
    CHECK(picked[0].free == 120 * GiB);
}

TEST_CASE("info pick: the document holds pick and picked only") {
    InfoResults results;
    results.picked = pick_devices(snapshot(), std::nullopt, 2);
    const json doc = document(info_report(InfoRequest{}, results, OutputOptions{Format::json}));
    CHECK(doc.at("pick") == "0,1");
    REQUIRE(doc.at("picked").size() == 2);
    CHECK(doc["picked"][0] == json{{"index", 1}, {"visible_devices_id", "0"}, {"free", 120 * GiB}});
    CHECK(doc["picked"][0].at("free").is_number_unsigned());
    CHECK_FALSE(doc.contains("devices"));
    CHECK_FALSE(doc.contains("source"));
}

TEST_CASE("info schema: the documents' keys are info_schema()'s") {
    InfoResults sample;
    sample.snapshot = snapshot();
    sample.timestamp = 1.5;
    InfoResults pick;
    pick.picked = pick_devices(snapshot(), std::nullopt, 1);
    std::set<std::string> keys;
    collect_keys(document(info_report(request(default_info_fields(Format::json), true), sample, OutputOptions{Format::json})), keys);
    collect_keys(document(info_report(InfoRequest{}, pick, OutputOptions{Format::json})), keys);
    std::set<std::string> expected = schema_keys(schema_json(info_schema()));
    for (const char* only_on_failure_or_warning : {"error", "warnings", "origin", "origin.host", "origin.launcher", "origin.job_id", "origin.rank", "origin.local_rank", "origin.world_size"}) expected.erase(only_on_failure_or_warning);
    CHECK(keys == expected);
}

TEST_CASE("info check: valid command lines pass every check before the driver") {
    using Args = std::vector<std::string>;
    for (const Args& args : std::vector<Args>{
             {"info"},
             {"info", "--query", "memory.free,pci.bus_id"},
             {"info", "--query", " used , free "},
             {"info", "--processes", "--json"},
             {"info", "--pick", "2", "--min-free", "90%"},
             {"info", "--pick", "65536", "--min-free", "100%"},
             {"info", "--loop", "0.01", "--count", "1099511627776"},
             {"info", "-l", "86400"},
             {"-d", "0,GPU-d944,0000:18:00.0", "info", "--csv", "--query", "index"},
         }) {
        std::string line;
        for (const std::string& a : args) line += " " + a;
        CAPTURE(line);
        CHECK(parse_only(args) == 0);
    }
    // Through the binary: without a driver the run gets as far as looking for it (3).
    for (const Args& args : std::vector<Args>{{"info", "--query", "memory.free,pci.bus_id"}, {"info", "--processes", "--json"}}) {
        const RunResult r = run_gpumem(args);
        CHECK((r.status == 0 || r.status == 3));
    }
}
