// GPU suite for `gpumem info`: runs on a machine with an NVIDIA driver and at
// least one GPU (the executable exits 77 elsewhere, see gpu_main.cpp).
//
// gpumem's figures are compared with nvidia-smi's, and its device numbering
// with the CUDA runtime's own, which this executable reports when run as a
// child with GPUMEM_TEST_LIST_CUDA_DEVICES=1. Cases that need nvidia-smi are
// skipped (with a message) where it is missing.
#include <doctest/doctest.h>

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "prometheus_text.hpp"
#include "core/cuda_devices.hpp"
#include "base/device_spec.hpp"

using nlohmann::json;
using Args = std::vector<std::string>;
using Env = std::vector<std::string>;

namespace {

constexpr std::uint64_t MiB = 1ULL << 20;
// used and free move when other processes allocate between two samples.
constexpr std::uint64_t kTolerance = 256 * MiB;
// Every GPU visible whatever the caller's environment says.
const Env kAllVisible = {"CUDA_VISIBLE_DEVICES"};

struct Shell {
    int status = -1;
    std::string out;
};

Shell shell(const std::string& command) {
    Shell r;
    FILE* p = popen((command + " 2>/dev/null").c_str(), "r");
    if (!p) return r;
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

bool have_nvidia_smi() {
    static const bool present = shell("nvidia-smi -L").status == 0;
    return present;
}

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(s);
    while (std::getline(in, part, sep)) parts.push_back(trim(part));
    return parts;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::string joined(const Args& args) {
    std::string s;
    for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
    return s;
}

struct SmiGpu {
    int index = -1;
    std::string uuid, bus_id;
    std::uint64_t total_mib = 0, used_mib = 0, free_mib = 0;
    std::optional<std::uint64_t> reserved_mib;
};

std::vector<SmiGpu> smi_gpus() {
    const Shell r = shell(
        "nvidia-smi --query-gpu=index,uuid,pci.bus_id,memory.total,memory.used,memory.free,memory.reserved "
        "--format=csv,noheader,nounits");
    REQUIRE(r.status == 0);
    std::vector<SmiGpu> gpus;
    for (const std::string& line : lines_of(r.out)) {
        if (trim(line).empty()) continue;
        const auto f = split(line, ',');
        REQUIRE(f.size() == 7);
        SmiGpu g;
        g.index = std::stoi(f[0]);
        g.uuid = f[1];
        g.bus_id = f[2];
        g.total_mib = std::stoull(f[3]);
        g.used_mib = std::stoull(f[4]);
        g.free_mib = std::stoull(f[5]);
        if (all_digits(f[6])) g.reserved_mib = std::stoull(f[6]);
        gpus.push_back(g);
    }
    return gpus;
}

// `gpumem ARGS --json`, which must succeed with one document.
json gpumem_json(const Args& args, const Env& env = {}) {
    Args full = args;
    full.push_back("--json");
    const RunResult r = run_gpumem(full, env);
    CAPTURE(joined(full));
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    json doc;
    REQUIRE_NOTHROW(doc = json::parse(r.out));
    REQUIRE(doc.at("ok") == true);
    return doc;
}

// UUIDs of the devices `gpumem info` shows, in its (CUDA) index order.
std::vector<std::string> gpumem_uuids(const Env& env) {
    const json doc = gpumem_json({"info", "--query", "index,uuid"}, env);
    std::vector<std::string> uuids;
    for (std::size_t i = 0; i < doc.at("devices").size(); ++i) {
        const json& d = doc.at("devices")[i];
        CHECK(d.at("index") == i);
        uuids.push_back(d.at("uuid").get<std::string>());
    }
    return uuids;
}

// What the CUDA runtime itself enumerates under `env`: UUIDs in CUDA order,
// or nullopt when it sees no device (exit 3 of the child).
std::optional<std::vector<std::string>> cuda_uuids(const Env& env) {
    Env child_env = env;
    child_env.push_back("GPUMEM_TEST_LIST_CUDA_DEVICES=1");
    const RunResult r = run_program("/proc/self/exe", {}, child_env);
    CAPTURE(r.err);
    if (r.status == 3) return std::nullopt;
    REQUIRE(r.status == 0);
    std::vector<std::string> uuids;
    for (const std::string& line : lines_of(r.out)) uuids.push_back(split(line, ' ').at(0));
    return uuids;
}

std::string env_text(const Env& env) {
    std::string s;
    for (const auto& e : env) s += (s.empty() ? "" : " ") + (e.find('=') == std::string::npos ? "unset " + e : e);
    return s.empty() ? "(caller's environment)" : s;
}

// The PIDs nvidia-smi lists as compute processes.
std::set<long> smi_compute_pids() {
    std::set<long> pids;
    const Shell r = shell("nvidia-smi --query-compute-apps=pid --format=csv,noheader,nounits");
    for (const std::string& line : lines_of(r.out))
        if (all_digits(trim(line))) pids.insert(std::stol(trim(line)));
    return pids;
}

void sleep_seconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

}  // namespace

TEST_CASE("gpu info: table output has one row per CUDA device") {
    const auto cuda = gpumem::cuda_visible_devices();
    const RunResult r = run_gpumem({"info"});
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    const auto lines = lines_of(r.out);
    // "NVIDIA driver ..." line, header, one row per device.
    REQUIRE(lines.size() == 2 + cuda.size());
    CHECK(lines[0].rfind("NVIDIA driver ", 0) == 0);
    CHECK(lines[1].find("total") != std::string::npos);
    CHECK(lines[1].find("free") != std::string::npos);
    for (std::size_t i = 0; i < cuda.size(); ++i) {
        CAPTURE(lines[2 + i]);
        CHECK(lines[2 + i].find(cuda[i].name) != std::string::npos);
    }
    if (!r.err.empty()) MESSAGE("gpumem info wrote to stderr: " << r.err);
}

TEST_CASE("gpu info: JSON document, NVML source, consistent figures") {
    const json doc = gpumem_json({"info"});
    CHECK(doc.at("schema_version") == 1);
    CHECK(doc.at("command") == "info");
    CHECK(doc.at("source") == "nvml");
    CHECK(doc.at("driver_version").is_string());
    const int mem_version = doc.at("memory_info_version").get<int>();
    CHECK((mem_version == 1 || mem_version == 2));
    if (mem_version != 2) MESSAGE("NVML memory info v2 unavailable: used includes reserved memory");
    REQUIRE(doc.at("devices").is_array());
    REQUIRE_FALSE(doc.at("devices").empty());
    for (const json& d : doc.at("devices")) {
        CAPTURE(d.dump());
        CHECK(d.at("uuid").get<std::string>().rfind("GPU-", 0) == 0);
        CHECK(gpumem::parse_pci_address(d.at("pci_bus_id").get<std::string>()).has_value());
        const auto total = d.at("total").get<std::uint64_t>();
        const auto used = d.at("used").get<std::uint64_t>();
        const auto free = d.at("free").get<std::uint64_t>();
        CHECK(d.at("total").is_number_unsigned());
        CHECK(total > 1024 * MiB);
        CHECK(free <= total);
        CHECK(used <= total);
        if (mem_version == 2) {
            REQUIRE(d.at("reserved").is_number_unsigned());
            const auto reserved = d.at("reserved").get<std::uint64_t>();
            // NVML v2: total = reserved + used + free.
            const std::uint64_t sum = reserved + used + free;
            CHECK(std::max(sum, total) - std::min(sum, total) <= 2 * MiB);
        }
    }
}

TEST_CASE("gpu info: CUDA indices and UUIDs agree with the CUDA runtime") {
    // Same environment for gpumem and for the runtime in this process.
    const auto cuda = gpumem::cuda_visible_devices();
    const json doc = gpumem_json({"info"});
    REQUIRE(doc.at("devices").size() == cuda.size());
    for (std::size_t i = 0; i < cuda.size(); ++i) {
        const json& d = doc.at("devices")[i];
        CAPTURE(d.dump());
        CHECK(d.at("index") == static_cast<int>(i));
        CHECK(d.at("uuid") == cuda[i].uuid);
        const auto pci = gpumem::parse_pci_address(d.at("pci_bus_id").get<std::string>());
        REQUIRE(pci.has_value());
        CHECK(pci->domain == cuda[i].pci.domain);
        CHECK(pci->bus == cuda[i].pci.bus);
        CHECK(pci->device == cuda[i].pci.device);
    }
}

TEST_CASE("gpu info: figures agree with nvidia-smi" * doctest::skip(!have_nvidia_smi())) {
    const json doc = gpumem_json({"info"}, kAllVisible);
    const auto smi = smi_gpus();
    const bool v2 = doc.at("memory_info_version") == 2;
    REQUIRE(doc.at("devices").size() == smi.size());
    for (const SmiGpu& g : smi) {
        CAPTURE(g.uuid);
        const auto& devices = doc.at("devices");
        const auto it = std::find_if(devices.begin(), devices.end(), [&](const json& d) { return d.at("uuid") == g.uuid; });
        REQUIRE(it != devices.end());
        const json& d = *it;
        CAPTURE(d.dump());
        CHECK(d.at("nvml_index") == g.index);
        const auto ours = gpumem::parse_pci_address(d.at("pci_bus_id").get<std::string>());
        const auto theirs = gpumem::parse_pci_address(g.bus_id);
        REQUIRE(ours.has_value());
        REQUIRE(theirs.has_value());
        CHECK(*ours == *theirs);
        CHECK(d.at("total").get<std::uint64_t>() / MiB == g.total_mib);
        // nvidia-smi on driver 580 reports used without reserved, like NVML v2.
        std::uint64_t smi_used = g.used_mib * MiB;
        if (!v2 && g.reserved_mib) smi_used += *g.reserved_mib * MiB;
        const auto used = d.at("used").get<std::uint64_t>();
        const auto free = d.at("free").get<std::uint64_t>();
        CHECK(std::max(used, smi_used) - std::min(used, smi_used) <= kTolerance);
        const std::uint64_t smi_free = g.free_mib * MiB;
        CHECK(std::max(free, smi_free) - std::min(free, smi_free) <= kTolerance);
        if (v2 && g.reserved_mib) {
            const std::uint64_t reserved_mib = d.at("reserved").get<std::uint64_t>() / MiB;
            CHECK(std::max(reserved_mib, *g.reserved_mib) - std::min(reserved_mib, *g.reserved_mib) <= 1);
        }
    }
}

TEST_CASE("gpu info: CSV in MiB matches nvidia-smi's totals" * doctest::skip(!have_nvidia_smi())) {
    const RunResult r = run_gpumem({"info", "--csv", "--units", "MiB", "--query", "uuid,total,free"}, kAllVisible);
    REQUIRE(r.status == 0);
    const auto lines = lines_of(r.out);
    const auto smi = smi_gpus();
    REQUIRE(lines.size() == 1 + smi.size());
    CHECK(lines[0] == "uuid,total [MiB],free [MiB]");
    for (std::size_t i = 1; i < lines.size(); ++i) {
        CAPTURE(lines[i]);
        const auto cells = split(lines[i], ',');
        REQUIRE(cells.size() == 3);
        CHECK(all_digits(cells[1]));
        CHECK(all_digits(cells[2]));
        const auto it = std::find_if(smi.begin(), smi.end(), [&](const SmiGpu& g) { return g.uuid == cells[0]; });
        REQUIRE(it != smi.end());
        CHECK(std::stoull(cells[1]) == it->total_mib);
    }
}

TEST_CASE("gpu info: --version names the driver nvidia-smi reports" * doctest::skip(!have_nvidia_smi())) {
    const Shell smi = shell("nvidia-smi --query-gpu=driver_version --format=csv,noheader");
    REQUIRE(smi.status == 0);
    const std::string driver = trim(lines_of(smi.out).at(0));
    const RunResult r = run_gpumem({"--version"});
    CHECK(r.status == 0);
    CHECK(r.out.find("NVIDIA driver " + driver) != std::string::npos);
    CHECK(gpumem_json({"info"}).at("driver_version") == driver);
}

TEST_CASE("gpu info: -d by index, UUID prefix and PCI bus id select the same GPU") {
    const json all = gpumem_json({"info"});
    const auto& devices = all.at("devices");
    const std::size_t n = devices.size();
    for (std::size_t i = 0; i < n && i < 4; ++i) {
        const std::string uuid = devices[i].at("uuid");
        const std::string bus = devices[i].at("pci_bus_id");  // 0000:xx:yy.z
        REQUIRE(bus.size() == 12);
        std::string upper_prefix = "GPU-" + uuid.substr(4, 8);
        std::transform(upper_prefix.begin(), upper_prefix.end(), upper_prefix.begin(), ::toupper);
        for (const std::string& spec : {std::to_string(i), "GPU-" + uuid.substr(4, 8), upper_prefix, uuid, bus,
                                        bus.substr(5), "0000" + bus}) {
            CAPTURE(spec);
            const json doc = gpumem_json({"info", "-d", spec, "--query", "index,uuid"});
            REQUIRE(doc.at("devices").size() == 1);
            CHECK(doc.at("devices")[0].at("uuid") == uuid);
            CHECK(doc.at("devices")[0].at("index") == static_cast<int>(i));
        }
    }
    if (have_nvidia_smi()) {
        // nvidia-smi's own bus id form, 00000000:xx:yy.z.
        for (const SmiGpu& g : smi_gpus()) {
            const auto it = std::find_if(devices.begin(), devices.end(), [&](const json& d) { return d.at("uuid") == g.uuid; });
            if (it == devices.end()) continue;  // hidden by CUDA_VISIBLE_DEVICES
            const json doc = gpumem_json({"info", "-d", g.bus_id, "--query", "uuid"});
            REQUIRE(doc.at("devices").size() == 1);
            CHECK(doc.at("devices")[0].at("uuid") == g.uuid);
        }
    }
}

TEST_CASE("gpu info: -d lists keep their order; all selects every device") {
    const std::size_t n = gpumem_json({"info"}).at("devices").size();
    CHECK(gpumem_json({"info", "-d", "all"}).at("devices").size() == n);
    if (n >= 2) {
        const json doc = gpumem_json({"info", "-d", "1,0", "--query", "index"});
        REQUIRE(doc.at("devices").size() == 2);
        CHECK(doc.at("devices")[0].at("index") == 1);
        CHECK(doc.at("devices")[1].at("index") == 0);
    }
}

TEST_CASE("gpu info: -d naming devices that do not exist is a usage error") {
    const json all = gpumem_json({"info"});
    const auto& devices = all.at("devices");
    const std::size_t n = devices.size();
    const std::string uuid0 = devices[0].at("uuid");
    // Out of range, and device 0 named twice (by index and by UUID prefix).
    std::vector<std::string> bad = {std::to_string(n), "99", "0," + std::to_string(n), "0,GPU-" + uuid0.substr(4, 8)};
    bool prefix_unused = true;
    for (const json& d : devices) prefix_unused = prefix_unused && d.at("uuid").get<std::string>().rfind("GPU-00000000", 0) != 0;
    if (prefix_unused) bad.push_back("GPU-00000000");
    bad.push_back("ff:1f.7");
    for (const std::string& spec : bad) {
        CAPTURE(spec);
        const RunResult r = run_gpumem({"info", "-d", spec});
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
    }
}

TEST_CASE("gpu info: CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER are honoured as CUDA honours them") {
    const std::vector<std::string> base = gpumem_uuids(kAllVisible);
    REQUIRE_FALSE(base.empty());
    const std::size_t n = base.size();
    const auto prefix = [](const std::string& uuid) { return "GPU-" + uuid.substr(4, 8); };

    const std::string p0 = prefix(base[0]), last = base[n - 1], p_last = prefix(last);
    std::string upper = p_last;
    std::transform(upper.begin() + 4, upper.end(), upper.begin() + 4, ::toupper);
    std::string lower = p_last;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    // Values whose reading by CUDA was checked on driver 580 (see
    // tests/test_visible_devices.cpp for what each one shows).
    std::vector<std::string> values = {
        "0", "", "-1", " ", "0,0", "99", "0,99", "abc", ",0", "0,", "0,,1", "1a", "+0", "-0", " 0", "0 ", "0x1", "00",
        "4294967296", "-4294967295", "4294967295", last, p_last, upper, lower, " " + p_last, p_last + " ", p_last + "x",
        last + "0", p_last + "-,0", p0 + ",0", "0," + p0, p0 + "," + p0, "GPU-", "MIG-12345678", "0,MIG-12345678",
        "0,99,0", "0,-1,0"};
    if (n >= 2) {
        const std::string p1 = prefix(base[1]);
        values.insert(values.end(), {"1,0", "1,-1,0", "0,1,0", "1,0,1", "1,1", "1a,0", "1,+0", p1 + "," + p0, p1 + ",0",
                                     "1," + base[0], "0," + p1, p1 + "," + p0 + "," + p1, "0,1,9,1"});
    }
    // Every value under the caller's CUDA_DEVICE_ORDER; a few under each order.
    std::vector<std::pair<std::string, std::string>> cases;  // (order or "-" for unset, value)
    for (const std::string& v : values) cases.emplace_back("-", v);
    for (const char* order : {"PCI_BUS_ID", "FASTEST_FIRST"})
        for (const std::string& v : {std::string("0"), std::string(n >= 2 ? "1,0" : "0,0"), p_last})
            cases.emplace_back(order, v);

    SUBCASE("the same devices, in the same order, as the CUDA runtime") {
        for (const auto& [order, value] : cases) {
            Env env = {"CUDA_VISIBLE_DEVICES=" + value};
            if (order != "-") env.push_back("CUDA_DEVICE_ORDER=" + order);
            CAPTURE(env_text(env));
            const auto expected = cuda_uuids(env);
            const RunResult r = run_gpumem({"info", "--json", "--query", "index,uuid"}, env);
            CAPTURE(r.err);
            if (!expected) {
                // CUDA sees nothing: no usable GPU.
                CHECK(r.status == 3);
                CHECK(r.stderr_lines() == 1);
                CHECK(json::parse(r.out).at("error").at("status") == 3);
                continue;
            }
            REQUIRE(r.status == 0);
            std::vector<std::string> got;
            const json doc = json::parse(r.out);  // (a range-for over a temporary's member dangles)
            for (const json& d : doc.at("devices")) got.push_back(d.at("uuid").get<std::string>());
            CHECK(joined(got) == joined(*expected));
        }
    }
    SUBCASE("explicit expectations") {
        CHECK(joined(gpumem_uuids({"CUDA_VISIBLE_DEVICES=0"})) == joined({base[0]}));
        CHECK(joined(gpumem_uuids({"CUDA_VISIBLE_DEVICES=" + base[n - 1]})) == joined({base[n - 1]}));
        CHECK(joined(gpumem_uuids({"CUDA_VISIBLE_DEVICES=" + prefix(base[n - 1])})) == joined({base[n - 1]}));
        if (n >= 2) CHECK(joined(gpumem_uuids({"CUDA_VISIBLE_DEVICES=1,0"})) == joined({base[1], base[0]}));
        for (const char* hide_all : {"", "-1"}) {
            CAPTURE(hide_all);
            const RunResult r = run_gpumem({"info"}, {std::string("CUDA_VISIBLE_DEVICES=") + hide_all});
            CHECK(r.status == 3);
            CHECK(r.out.empty());
            CHECK(r.stderr_lines() == 1);
        }
        // CUDA refuses to initialise when a device is named twice.
        const RunResult dup = run_gpumem({"info"}, {"CUDA_VISIBLE_DEVICES=0,0"});
        CHECK(dup.status == 3);
        CHECK(dup.stderr_lines() == 1);
        CHECK(dup.err.find("twice") != std::string::npos);
    }
    SUBCASE("visible_devices_id is the value to put in CUDA_VISIBLE_DEVICES") {
        // Under CUDA_VISIBLE_DEVICES=1,0 (or =0), device 0 is the one that
        // CUDA_VISIBLE_DEVICES=<its visible_devices_id> selects alone.
        const std::string value = n >= 2 ? "1,0" : "0";
        const json doc = gpumem_json({"info", "--query", "index,uuid,visible_devices_id"}, {"CUDA_VISIBLE_DEVICES=" + value});
        for (const json& d : doc.at("devices")) {
            CAPTURE(d.dump());
            const std::string id = d.at("visible_devices_id");
            CHECK(joined(gpumem_uuids({"CUDA_VISIBLE_DEVICES=" + id})) == joined({d.at("uuid").get<std::string>()}));
        }
    }
}

TEST_CASE("gpu info: --query free --format value --units MiB prints one integer per line") {
    const auto cuda = gpumem::cuda_visible_devices();
    const RunResult r = run_gpumem({"info", "--query", "free", "--format", "value", "--units", "MiB"});
    REQUIRE(r.status == 0);
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() == cuda.size());
    for (const std::string& line : lines) {
        CAPTURE(line);
        CHECK(all_digits(line));
    }
    // The same figure as JSON's bytes.
    const json doc = gpumem_json({"info", "--query", "free"});
    const std::uint64_t free0 = doc.at("devices")[0].at("free").get<std::uint64_t>() / MiB;
    const std::uint64_t value0 = std::stoull(lines.at(0));
    CHECK(std::max(free0, value0) - std::min(free0, value0) <= kTolerance / MiB);

    // Several fields: tab-separated, bytes by default.
    const RunResult two = run_gpumem({"-d", "0", "info", "--query", "index,total", "--format", "value"});
    REQUIRE(two.status == 0);
    REQUIRE(lines_of(two.out).size() == 1);
    const auto cells = split(lines_of(two.out).at(0), '\t');
    REQUIRE(cells.size() == 2);
    CHECK(cells[0] == "0");
    const json total = gpumem_json({"info", "-d", "0", "--query", "total"});
    CHECK(cells[1] == std::to_string(total.at("devices")[0].at("total").get<std::uint64_t>()));
}

TEST_CASE("gpu info: --pick prints CUDA_VISIBLE_DEVICES values") {
    const std::vector<std::string> base = gpumem_uuids(kAllVisible);
    const std::size_t n = base.size();
    SUBCASE("--pick 1 prints one index, of a device with the most free memory") {
        const RunResult r = run_gpumem({"info", "--pick", "1"}, kAllVisible);
        CAPTURE(r.err);
        REQUIRE(r.status == 0);
        REQUIRE(r.out.size() >= 2);
        CHECK(r.out.back() == '\n');
        const std::string picked = r.out.substr(0, r.out.size() - 1);
        REQUIRE(all_digits(picked));
        REQUIRE(std::stoul(picked) < n);
        // Feeding it to CUDA_VISIBLE_DEVICES selects exactly that device.
        CHECK(joined(gpumem_uuids({"CUDA_VISIBLE_DEVICES=" + picked})) == joined({base[std::stoul(picked)]}));
        const json doc = gpumem_json({"info", "--query", "index,free"}, kAllVisible);
        std::uint64_t most = 0;
        for (const json& d : doc.at("devices")) most = std::max(most, d.at("free").get<std::uint64_t>());
        const auto picked_free = doc.at("devices")[std::stoul(picked)].at("free").get<std::uint64_t>();
        CHECK(picked_free + kTolerance >= most);
    }
    SUBCASE("--pick N lists N distinct devices, most free first") {
        const json doc = gpumem_json({"info", "--pick", std::to_string(n)}, kAllVisible);
        const auto ids = split(doc.at("pick").get<std::string>(), ',');
        REQUIRE(ids.size() == n);
        CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == n);
        REQUIRE(doc.at("picked").size() == n);
        for (std::size_t i = 1; i < n; ++i)
            CHECK(doc.at("picked")[i - 1].at("free").get<std::uint64_t>() >= doc.at("picked")[i].at("free").get<std::uint64_t>());
    }
    SUBCASE("--min-free filters") {
        CHECK(run_gpumem({"info", "--pick", "1", "--min-free", "1MiB"}).status == 0);
        // No GPU has all of its memory free (the driver reserves some).
        const RunResult r = run_gpumem({"info", "--pick", "1", "--min-free", "100%"});
        CHECK(r.status == 5);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
    }
    SUBCASE("--pick 99 exits 5") {
        const RunResult r = run_gpumem({"info", "--pick", "99"}, kAllVisible);
        CHECK(r.status == 5);
        CHECK(r.out.empty());
        CHECK(r.stderr_lines() == 1);
        const RunResult j = run_gpumem({"info", "--pick", "99", "--json"}, kAllVisible);
        CHECK(j.status == 5);
        const json doc = json::parse(j.out);
        CHECK(doc.at("ok") == false);
        CHECK(doc.at("error").at("status") == 5);
        CHECK(doc.at("error").at("code") == "out_of_memory");
    }
}

TEST_CASE("gpu info: --processes") {
    const json doc = gpumem_json({"info", "--processes"});
    REQUIRE(doc.at("processes").is_array());
    for (const json& p : doc.at("processes")) {
        CAPTURE(p.dump());
        CHECK(p.at("pid").is_number_integer());
        CHECK(p.at("pid").get<long>() > 0);
        CHECK(p.at("index").is_number_integer());
        CHECK(p.at("process_name").is_string());
        CHECK((p.at("used_memory").is_null() || p.at("used_memory").is_number_unsigned()));
    }
    const RunResult table = run_gpumem({"info", "--processes"});
    CHECK(table.status == 0);
}

TEST_CASE("gpu info: --loop --count prints one JSON document per line") {
    const RunResult r = run_gpumem({"info", "--loop", "0.2", "--count", "3", "--json"});
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() == 3);
    double last = 0;
    for (const std::string& line : lines) {
        json doc;
        REQUIRE_NOTHROW(doc = json::parse(line));
        CHECK(doc.at("ok") == true);
        CHECK(doc.at("schema_version") == 1);
        CHECK_FALSE(doc.at("devices").empty());
        const double t = doc.at("timestamp").get<double>();
        if (last > 0) CHECK(t - last >= 0.15);
        last = t;
    }
    // CSV: one header for the whole loop.
    const auto cuda = gpumem::cuda_visible_devices();
    const RunResult csv = run_gpumem({"info", "--loop", "0.2", "--count", "2", "--csv", "--query", "index,free"});
    REQUIRE(csv.status == 0);
    const auto csv_lines = lines_of(csv.out);
    CHECK(csv_lines.size() == 1 + 2 * cuda.size());
    CHECK(csv_lines.at(0) == "index,free");
}

TEST_CASE("gpu info: Ctrl-C ends a --loop with exit 130, JSON Lines intact") {
    Started s = start_gpumem({"info", "--loop", "0.2", "--json"});
    REQUIRE(s.pid() > 0);
    // Wait for two samples (at most 5 s), then interrupt.
    for (int i = 0; i < 100 && lines_of(s.out_so_far()).size() < 2; ++i) sleep_seconds(0.05);
    s.signal(SIGINT);
    const RunResult r = s.wait();
    CHECK(r.status == 130);
    CHECK(r.stderr_lines() == 1);
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() >= 3);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        CAPTURE(lines[i]);
        json doc;
        REQUIRE_NOTHROW(doc = json::parse(lines[i]));
        const bool last = i + 1 == lines.size();
        CHECK(doc.at("ok") == !last);
        if (last) CHECK(doc.at("error").at("status") == 130);
    }
}

TEST_CASE("gpu info: creates no CUDA context" * doctest::skip(!have_nvidia_smi())) {
    Started s = start_gpumem({"info", "--loop", "0.2", "--count", "10"});
    REQUIRE(s.pid() > 0);
    int polls = 0;
    bool listed = false;
    while (s.running()) {
        listed = listed || smi_compute_pids().count(s.pid()) > 0;
        ++polls;
    }
    const RunResult r = s.wait();
    CHECK(r.status == 0);
    CHECK(polls >= 3);
    CHECK_FALSE(listed);

    // Control: a process that does create a context (this one) is listed,
    // else nvidia-smi cannot see this PID namespace and the check above
    // proves nothing.
    REQUIRE(cudaSetDevice(0) == cudaSuccess);
    REQUIRE(cudaFree(nullptr) == cudaSuccess);
    bool self_listed = false;
    for (int i = 0; i < 20 && !self_listed; ++i) {
        self_listed = smi_compute_pids().count(getpid()) > 0;
        if (!self_listed) sleep_seconds(0.1);
    }
    cudaDeviceReset();
    if (self_listed)
        MESSAGE("control: nvidia-smi listed this test process once it held a context");
    else
        MESSAGE("inconclusive: nvidia-smi does not list this process even with a context (PID namespace?)");
}

namespace {

// The health fields, with the nvidia-smi names --query also takes, and the
// JSON type of a supported value.
struct HealthField {
    const char* key;
    std::vector<const char*> aliases;
    const char* type;  // boolean, integer, string
};
const std::vector<HealthField> kHealthFields = {
    {"ecc_enabled", {"ecc.mode.current"}, "boolean"},
    {"ecc_enabled_pending", {"ecc.mode.pending"}, "boolean"},
    {"ecc_corrected_volatile", {"ecc.errors.corrected.volatile.total"}, "integer"},
    {"ecc_uncorrected_volatile", {"ecc.errors.uncorrected.volatile.total"}, "integer"},
    {"ecc_corrected_aggregate", {"ecc.errors.corrected.aggregate.total"}, "integer"},
    {"ecc_uncorrected_aggregate", {"ecc.errors.uncorrected.aggregate.total"}, "integer"},
    {"remapped_rows_correctable", {"remapped_rows.correctable"}, "integer"},
    {"remapped_rows_uncorrectable", {"remapped_rows.uncorrectable"}, "integer"},
    {"remapped_rows_pending", {"remapped_rows.pending"}, "boolean"},
    {"remapped_rows_failure", {"remapped_rows.failure"}, "boolean"},
    {"retired_pages_sbe", {"retired_pages.sbe", "retired_pages.single_bit_ecc.count"}, "integer"},
    {"retired_pages_dbe", {"retired_pages.dbe", "retired_pages.double_bit.count"}, "integer"},
    {"retired_pages_pending", {"retired_pages.pending"}, "boolean"},
    {"memory_clock_mhz", {"clocks.current.memory", "clocks.mem"}, "integer"},
    {"memory_clock_max_mhz", {"clocks.max.memory", "clocks.max.mem"}, "integer"},
    {"clock_event_reasons", {"clocks_event_reasons.active", "clocks_throttle_reasons.active"}, "string"},
    {"clock_event_reason_names", {}, "string"},
};

bool has_type(const json& value, const std::string& type) {
    if (type == "boolean") return value.is_boolean();
    if (type == "integer") return value.is_number_unsigned();
    return value.is_string();
}

// `gpumem ARGS --format prometheus`, which must succeed with an exposition
// that tests/prometheus-check.sh accepts (where promtool or prometheus_client is installed).
prometheus_text::Exposition gpumem_exposition(const Args& args) {
    Args full = {"--format", "prometheus"};
    full.insert(full.end(), args.begin(), args.end());
    const RunResult r = run_gpumem(full);
    CAPTURE(joined(full));
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CAPTURE(r.out);
    prometheus_text::expect_valid({r.out});
    return prometheus_text::parse(r.out);
}

}  // namespace

TEST_CASE("gpu info: --format prometheus: a valid exposition with every device's memory, identity and health") {
    const auto cuda = gpumem::cuda_visible_devices();
    const json doc = gpumem_json({"info", "--query", "index,uuid,total"});
    const prometheus_text::Exposition e = gpumem_exposition({"info", "--processes"});
    CHECK(e.value("gpumem_run_success", {{"command", "info"}}) == 1.0);
    CHECK(e.value("gpumem_run_exit_status", {{"command", "info"}}) == 0.0);
    REQUIRE(doc.at("devices").size() == cuda.size());
    for (std::size_t i = 0; i < cuda.size(); ++i) {
        const std::map<std::string, std::string> gpu{{"gpu", std::to_string(i)}, {"uuid", cuda[i].uuid}};
        CAPTURE(cuda[i].uuid);
        CHECK(e.value("gpumem_memory_total_bytes", gpu) == doc["devices"][i].at("total").get<double>());
        CHECK(e.value("gpumem_memory_free_bytes", gpu).has_value());
        CHECK(e.value("gpumem_compute_processes", gpu).has_value());
        const std::vector<prometheus_text::Sample> info = e.find("gpumem_device_info", gpu);
        REQUIRE(info.size() == 1);
        CHECK(info[0].labels.at("name") == cuda[i].name);
        const auto pci = gpumem::parse_pci_address(info[0].labels.at("pci_bus_id"));
        REQUIRE(pci.has_value());
        CHECK(pci->bus == cuda[i].pci.bus);
        CHECK(e.value("gpumem_pcie_link_max_generation", gpu).value_or(0) >= 1.0);
        CHECK(e.value("gpumem_memory_peak_bandwidth_bytes_per_second", gpu).value_or(0) > 1e11);
        // Hopper has ECC, remapped rows and memory clocks; retired pages are for older GPUs.
        const double clock = e.value("gpumem_memory_clock_max_hertz", gpu).value_or(0);
        CHECK(clock > 1e8);
        CHECK(e.find("gpumem_clock_event_reason_active", gpu).size() >= 9);
        for (const char* family : {"gpumem_ecc_enabled", "gpumem_remapped_rows_pending", "gpumem_remapped_rows_failure",
                                   "gpumem_retired_pages_pending"})
            MESSAGE("GPU " << i << " " << family << ": "
                           << (e.value(family, gpu) ? std::to_string(*e.value(family, gpu)) : std::string("no sample (not supported)")));
        for (const prometheus_text::Sample& s : e.find("gpumem_ecc_aggregate_errors_total", gpu))
            MESSAGE("GPU " << i << " ECC aggregate " << s.labels.at("error") << ": " << s.value);
    }
}

TEST_CASE("gpu info: each health field by its key and its nvidia-smi names, as JSON and as an exposition") {
    const auto cuda = gpumem::cuda_visible_devices();
    for (const HealthField& f : kHealthFields) {
        CAPTURE(f.key);
        const json doc = gpumem_json({"info", "--query", f.key});
        REQUIRE(doc.at("devices").size() == cuda.size());
        for (const json& d : doc.at("devices")) {
            REQUIRE(d.size() == 1);
            const json& value = d.at(f.key);
            CHECK((value.is_null() || has_type(value, f.type)));
        }
        MESSAGE(f.key << " on GPU 0: " << doc["devices"][0].at(f.key).dump());
        for (const char* alias : f.aliases) {
            CAPTURE(alias);
            const json by_alias = gpumem_json({"info", "--query", alias});
            // Same key, and the same support (counts and clocks may move between two runs).
            for (std::size_t i = 0; i < cuda.size(); ++i)
                CHECK(by_alias["devices"][i].at(f.key).is_null() == doc["devices"][i].at(f.key).is_null());
        }
        const prometheus_text::Exposition e = gpumem_exposition({"info", "--query", f.key});
        const bool supported = std::any_of(doc["devices"].begin(), doc["devices"].end(),
                                           [&](const json& d) { return !d.at(f.key).is_null(); });
        CHECK((e.samples.size() > 2) == supported);  // the run's own two, and the field's when there is a figure
    }
}

namespace {

// nvidia-smi's CSV rows by their first cell (the UUID); none when it refuses the query.
std::optional<std::map<std::string, std::vector<std::string>>> smi_by_uuid(const std::string& query) {
    const Shell r = shell("nvidia-smi " + query + " --format=csv,noheader,nounits");
    if (r.status != 0) {
        MESSAGE("nvidia-smi refused " << query << ": not compared");
        return std::nullopt;
    }
    std::map<std::string, std::vector<std::string>> rows;
    for (const std::string& line : lines_of(r.out))
        if (!trim(line).empty()) rows[split(line, ',').at(0)] = split(line, ',');
    return rows;
}

// gpumem's devices (all visible) by UUID, with the fields of `query` after uuid.
std::map<std::string, json> gpumem_by_uuid(const std::string& query) {
    std::map<std::string, json> devices;
    // The document outlives the loop: a range over a member of a temporary dangles.
    const json doc = gpumem_json({"info", "--query", "uuid," + query}, kAllVisible);
    for (const json& d : doc.at("devices")) devices[d.at("uuid").get<std::string>()] = d;
    return devices;
}

// A count nvidia-smi prints as digits, or as [N/A] where gpumem has null.
void check_count(const json& ours, const std::string& smi) {
    CAPTURE(smi);
    if (all_digits(smi)) CHECK(ours == std::stoull(smi));
    else CHECK(ours.is_null());
}

}  // namespace

TEST_CASE("gpu info: health fields agree with nvidia-smi" * doctest::skip(!have_nvidia_smi())) {
    const auto smi = smi_by_uuid("--query-gpu=uuid,ecc.mode.current,ecc.errors.uncorrected.aggregate.total,clocks.max.memory");
    if (!smi) return;
    const auto ours = gpumem_by_uuid("ecc_enabled,ecc_uncorrected_aggregate,memory_clock_max_mhz");
    REQUIRE(ours.size() == smi->size());
    for (const auto& [uuid, f] : *smi) {
        const json& d = ours.at(uuid);
        CAPTURE(d.dump());
        REQUIRE(f.size() == 4);
        if (f[1] == "Enabled" || f[1] == "Disabled") CHECK(d.at("ecc_enabled") == (f[1] == "Enabled"));
        else CHECK(d.at("ecc_enabled").is_null());
        check_count(d.at("ecc_uncorrected_aggregate"), f[2]);
        check_count(d.at("memory_clock_max_mhz"), f[3]);
    }
}

TEST_CASE("gpu info: remapped rows agree with nvidia-smi" * doctest::skip(!have_nvidia_smi())) {
    const auto smi = smi_by_uuid("--query-remapped-rows=gpu_uuid,remapped_rows.correctable,remapped_rows.uncorrectable");
    if (!smi) return;
    const auto ours = gpumem_by_uuid("remapped_rows_correctable,remapped_rows_uncorrectable");
    for (const auto& [uuid, f] : *smi) {
        const json& d = ours.at(uuid);
        CAPTURE(d.dump());
        REQUIRE(f.size() == 3);
        check_count(d.at("remapped_rows_correctable"), f[1]);
        check_count(d.at("remapped_rows_uncorrectable"), f[2]);
    }
}
