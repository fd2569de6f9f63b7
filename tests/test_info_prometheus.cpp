// gpumem info --format prometheus without a GPU: the exposition of synthetic
// samples (every figure, none, odd names, --query's choice, a failure) goes
// through tests/prometheus-check.sh (promtool and prometheus_client), and its
// samples (names, labels, values) are read back and checked.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "info_samples.hpp"
#include "cli/output.hpp"
#include "prometheus_text.hpp"

using namespace info_samples;
using prometheus_text::Exposition;

namespace {

// The exposition of `results`, as the runner renders it (with `origin` as labels).
std::string exposition(const InfoRequest& q, const InfoResults& results, int status = 0,
                       std::vector<std::pair<std::string, std::string>> origin = {{"host", "node-1"}}) {
    Report r = info_report(q, results, OutputOptions{Format::prometheus});
    r.metric_labels = std::move(origin);
    return render_prometheus(r, status);
}

// Valid, and read back.
Exposition checked(const std::string& text) {
    CAPTURE(text);
    prometheus_text::expect_valid({text});
    return prometheus_text::parse(text);
}

InfoRequest every_field(bool processes = false) { return request(default_info_fields(Format::prometheus), processes); }

const std::string kUuid0 = "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd";  // CUDA 0 is NVML 1
const std::string kUuid1 = "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd";

}  // namespace

TEST_CASE("info prometheus: every field of a device with every figure, and of one with none") {
    InfoResults results;
    results.snapshot = snapshot();
    const Exposition e = checked(exposition(every_field(true), results));
    const std::map<std::string, std::string> gpu0{{"gpu", "0"}, {"uuid", kUuid0}, {"host", "node-1"}};
    const std::map<std::string, std::string> gpu1{{"gpu", "1"}, {"uuid", kUuid1}};
    CHECK(e.value("gpumem_memory_total_bytes", gpu0) == double(140 * GiB));
    CHECK(e.value("gpumem_memory_free_bytes", gpu0) == double(100 * GiB));
    CHECK(e.value("gpumem_memory_used_bytes", gpu0) == double(140 * GiB - 100 * GiB - GiB / 2));
    CHECK(e.value("gpumem_memory_reserved_bytes", gpu0) == double(GiB / 2));
    CHECK(e.value("gpumem_memory_free_bytes", gpu1) == double(120 * GiB));
    CHECK(e.value("gpumem_bar1_free_bytes", gpu0) == double(254ULL << 20));
    CHECK(e.value("gpumem_pcie_link_generation", gpu0) == 5.0);
    CHECK(e.value("gpumem_pcie_link_max_width_lanes", gpu0) == 16.0);
    CHECK(e.value("gpumem_memory_peak_bandwidth_bytes_per_second", gpu0) == 4.8e12);
    CHECK(e.types.at("gpumem_memory_free_bytes") == "gauge");

    // Health: counters for the counts, 0/1 for the flags, hertz for the clocks.
    CHECK(e.types.at("gpumem_ecc_volatile_errors_total") == "counter");
    CHECK(e.value("gpumem_ecc_volatile_errors_total", {{"gpu", "0"}, {"error", "corrected"}}) == 3.0);
    CHECK(e.value("gpumem_ecc_volatile_errors_total", {{"gpu", "0"}, {"error", "uncorrected"}}) == 0.0);
    CHECK(e.value("gpumem_ecc_aggregate_errors_total", {{"gpu", "0"}, {"error", "corrected"}}) == 12.0);
    CHECK(e.value("gpumem_ecc_aggregate_errors_total", {{"gpu", "0"}, {"error", "uncorrected"}}) == 1.0);
    CHECK(e.value("gpumem_remapped_rows_total", {{"gpu", "0"}, {"cause", "correctable"}}) == 2.0);
    CHECK(e.value("gpumem_remapped_rows_total", {{"gpu", "0"}, {"cause", "uncorrectable"}}) == 1.0);
    CHECK(e.value("gpumem_retired_pages_total", {{"gpu", "0"}, {"cause", "double_bit_ecc"}}) == 0.0);
    CHECK(e.value("gpumem_ecc_enabled", gpu0) == 1.0);
    CHECK(e.value("gpumem_ecc_enabled_pending", gpu0) == 1.0);
    CHECK(e.value("gpumem_remapped_rows_pending", gpu0) == 0.0);
    CHECK(e.value("gpumem_remapped_rows_failure", gpu0) == 0.0);
    CHECK(e.value("gpumem_retired_pages_pending", gpu0) == 0.0);
    CHECK(e.value("gpumem_memory_clock_hertz", gpu0) == 2619e6);
    CHECK(e.value("gpumem_memory_clock_max_hertz", gpu0) == 2619e6);
    CHECK(e.value("gpumem_clock_event_reasons_bitmask", gpu0) == 4.0);
    // The state set: every reason NVML names, 1 on the active one.
    const std::vector<prometheus_text::Sample> reasons = e.find("gpumem_clock_event_reason_active", {{"gpu", "0"}});
    CHECK(reasons.size() == 9);
    for (const prometheus_text::Sample& s : reasons) CHECK(s.value == (s.labels.at("reason") == "sw_power_cap" ? 1.0 : 0.0));

    // --processes: the count of each device, and each process that NVML can measure.
    CHECK(e.value("gpumem_compute_processes", gpu0) == 2.0);
    CHECK(e.value("gpumem_compute_processes", gpu1) == 0.0);
    CHECK(e.value("gpumem_process_used_memory_bytes", {{"gpu", "0"}, {"pid", "4242"}, {"process_name", "python3"}}) ==
          double(10 * GiB));
    CHECK(e.find("gpumem_process_used_memory_bytes", {{"pid", "4343"}}).empty());

    // The device that read no optional figure: memory, and no other sample (never NaN).
    CHECK(e.find("gpumem_pcie_link_generation", gpu1).empty());
    CHECK(e.find("gpumem_ecc_enabled", gpu1).empty());
    CHECK(e.find("gpumem_clock_event_reason_active", gpu1).empty());
    CHECK(e.find("gpumem_bar1_total_bytes", gpu1).empty());
    for (const prometheus_text::Sample& s : e.samples) {
        CAPTURE(s.name);
        CHECK(std::isfinite(s.value));
        CHECK(s.labels.at("host") == "node-1");
        if (s.name.rfind("gpumem_run_", 0) == 0) continue;
        CHECK(s.labels.count("gpu") == 1);
        CHECK(s.labels.count("uuid") == 1);
        if (s.name != "gpumem_device_info") CHECK(s.labels.count("name") == 0);  // on the info metric only
    }
    CHECK(e.value("gpumem_run_success", {{"command", "info"}}) == 1.0);
}

TEST_CASE("info prometheus: gpumem_device_info holds the identity, value 1") {
    InfoResults results;
    results.snapshot = snapshot();
    const Exposition e = checked(exposition(every_field(), results));
    const std::vector<prometheus_text::Sample> info = e.find("gpumem_device_info");
    REQUIRE(info.size() == 2);
    const std::map<std::string, std::string>& l = info[0].labels;
    CHECK(info[0].value == 1.0);
    CHECK(l.at("gpu") == "0");
    CHECK(l.at("uuid") == kUuid0);
    CHECK(l.at("name") == "NVIDIA H200");
    CHECK(l.at("nvml_index") == "1");
    CHECK(l.at("pci_bus_id") == "0000:19:00.0");
    CHECK(l.at("compute_capability") == "9.0");
    CHECK(l.at("driver_version") == "580.159.04");
    CHECK(l.at("cuda_driver_version") == "13.0");
    CHECK(l.at("visible_devices_id") == "1");
    CHECK(info[1].labels.count("compute_capability") == 0);  // not read for that device: no label
    CHECK(e.types.at("gpumem_device_info") == "gauge");
}

TEST_CASE("info prometheus: odd names in label values: quotes, backslashes, newlines, spaces") {
    InfoResults results;
    results.snapshot = snapshot();
    const std::string odd_name = "NVIDIA \"H200\" C:\\gpu\nline two";
    const std::string odd_process = "python3 train.py --name \"run 1\" \\ end";
    results.snapshot->devices[0].id.name = odd_name;
    results.snapshot->devices[0].processes = {{7, odd_process, 3 * GiB}, {8, "", GiB}};
    results.snapshot->driver_version = "580 \"beta\"";
    const Exposition e = checked(exposition(every_field(true), results, 0, {{"host", "odd\"host\\\n"}, {"job_id", "12 34"}}));
    CHECK(e.find("gpumem_device_info", {{"gpu", "0"}})[0].labels.at("name") == odd_name);
    CHECK(e.find("gpumem_device_info", {{"gpu", "0"}})[0].labels.at("driver_version") == "580 \"beta\"");
    CHECK(e.value("gpumem_process_used_memory_bytes", {{"pid", "7"}, {"process_name", odd_process}}) == double(3 * GiB));
    CHECK(e.value("gpumem_process_used_memory_bytes", {{"pid", "8"}, {"process_name", ""}}) == double(GiB));
    CHECK(e.value("gpumem_memory_free_bytes", {{"gpu", "0"}, {"host", "odd\"host\\\n"}, {"job_id", "12 34"}}) == double(100 * GiB));
}

TEST_CASE("info prometheus: what a device does not support has no sample; bits without a name are reasons too") {
    InfoResults results;
    results.snapshot = snapshot(false);  // memory info v1: no reserved figure
    for (DeviceReport& d : results.snapshot->devices) {
        d.health = NvmlHealth{};  // read, and nothing supported
        d.pcie.reset();
    }
    results.snapshot->devices[1].health->clock_event_reasons = 0x1 | 0x10000;
    results.snapshot->devices[1].health->retired_pages_sbe = 4;
    const Exposition e = checked(exposition(every_field(), results));
    CHECK(e.find("gpumem_memory_reserved_bytes").empty());
    CHECK(e.find("gpumem_ecc_enabled").empty());
    CHECK(e.find("gpumem_ecc_volatile_errors_total").empty());
    CHECK(e.find("gpumem_clock_event_reason_active", {{"gpu", "0"}}).empty());
    CHECK(e.value("gpumem_retired_pages_total", {{"gpu", "1"}, {"cause", "single_bit_ecc"}}) == 4.0);
    CHECK(e.find("gpumem_retired_pages_total", {{"cause", "double_bit_ecc"}}).empty());
    CHECK(e.value("gpumem_clock_event_reasons_bitmask", {{"gpu", "1"}}) == double(0x10001));
    CHECK(e.value("gpumem_clock_event_reason_active", {{"gpu", "1"}, {"reason", "gpu_idle"}}) == 1.0);
    CHECK(e.value("gpumem_clock_event_reason_active", {{"gpu", "1"}, {"reason", "0x10000"}}) == 1.0);
    CHECK(e.value("gpumem_clock_event_reason_active", {{"gpu", "1"}, {"reason", "hw_slowdown"}}) == 0.0);
    CHECK(e.find("gpumem_clock_event_reason_active", {{"gpu", "1"}}).size() == 10);
    CHECK(e.value("gpumem_memory_used_bytes", {{"gpu", "1"}}).has_value());
}

TEST_CASE("info prometheus: --query writes its fields' metrics only") {
    InfoResults results;
    results.snapshot = snapshot();
    const Exposition used = checked(exposition(request(parse_info_fields("used,ecc.errors.uncorrected.volatile.total")), results));
    std::set<std::string> names;
    for (const prometheus_text::Sample& s : used.samples) names.insert(s.name);
    CHECK(names == std::set<std::string>{"gpumem_memory_used_bytes", "gpumem_ecc_volatile_errors_total", "gpumem_run_success",
                                         "gpumem_run_exit_status"});
    CHECK(used.find("gpumem_ecc_volatile_errors_total", {{"error", "corrected"}}).empty());
    CHECK(used.value("gpumem_ecc_volatile_errors_total", {{"gpu", "0"}, {"error", "uncorrected"}}) == 0.0);

    // One identity field: the info metric, with that label alone.
    const Exposition named = checked(exposition(request(parse_info_fields("name,free")), results));
    const std::vector<prometheus_text::Sample> info = named.find("gpumem_device_info");
    REQUIRE(info.size() == 2);
    CHECK(info[0].labels == std::map<std::string, std::string>{{"gpu", "0"}, {"uuid", kUuid0}, {"name", "NVIDIA H200"}, {"host", "node-1"}});

    // Every field alone is a valid exposition, and a field with a metric of its own gives a sample.
    std::vector<std::string> texts;
    for (const Named<InfoField>& row : kInfoFields) {
        CAPTURE(row.name);
        texts.push_back(exposition(request(parse_info_fields(std::string(row.name))), results));
        const std::size_t device_samples = prometheus_text::parse(texts.back()).samples.size() - 2;  // less the run's own
        if (row.value.metric.role == MetricRole::none) CHECK(device_samples == 0);
        else CHECK(device_samples >= 1);
    }
    prometheus_text::expect_valid(texts);
}

TEST_CASE("info prometheus: every metric follows the conventions its type asks") {
    for (const Named<InfoField>& row : kInfoFields) {
        const InfoMetric& m = row.value.metric;
        CAPTURE(row.name);
        if (m.role == MetricRole::custom) CHECK(static_cast<bool>(m.add));
        if (m.role != MetricRole::sample) continue;
        const std::string name(m.name);
        CHECK(name.rfind("gpumem_", 0) == 0);
        CHECK(metric_name(name) == name);
        CHECK(!m.help.empty());
        const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
        CHECK(total == (m.type == MetricType::counter));
        // Base units: no MHz, GB or percentages in a name.
        for (const char* unit : {"mhz", "_gb", "_mb", "percent", "_ms"}) CHECK(name.find(unit) == std::string::npos);
        if (!m.label.empty()) CHECK(!m.label_value.empty());
    }
}

TEST_CASE("info prometheus: a run that failed says so, with what it measured") {
    const std::string nothing = exposition(InfoRequest{}, InfoResults{}, 3);
    const Exposition e = checked(nothing);
    CHECK(e.samples.size() == 2);
    CHECK(e.value("gpumem_run_success", {{"command", "info"}}) == 0.0);
    CHECK(e.value("gpumem_run_exit_status", {{"command", "info"}}) == 3.0);

    // Through the binary, here without a driver: exit 3, the exposition on stdout.
    const RunResult r = run_gpumem({"info", "--format", "prometheus"});
    if (r.status == 0) {
        MESSAGE("a driver answered: the failure exposition is the GPU suite's");
        return;
    }
    CHECK(r.status == 3);
    const Exposition out = checked(r.out);
    CHECK(out.value("gpumem_run_exit_status") == 3.0);
    CHECK(out.value("gpumem_run_success") == 0.0);
}
