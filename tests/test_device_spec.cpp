// Device selection: the -d SPEC grammar, resolving it against the visible
// devices, and PCI addresses.
#include <doctest/doctest.h>

#include <cstdlib>
#include <functional>

#include "base/device_spec.hpp"
#include "base/errors.hpp"
#include "usage_error.hpp"

using namespace gpumem;

namespace {

PciAddress pci(std::uint32_t domain, std::uint32_t bus, std::uint32_t device, std::uint32_t function = 0) {
    PciAddress a;
    a.domain = domain;
    a.bus = bus;
    a.device = device;
    a.function = function;
    return a;
}

DeviceIdentity gpu(int cuda_index, const std::string& uuid, PciAddress address, const std::string& name = "NVIDIA H100 80GB HBM3") {
    DeviceIdentity d;
    d.cuda_index = DeviceId(cuda_index);
    d.nvml_index = static_cast<unsigned>(cuda_index);
    d.uuid = uuid;
    d.pci = address;
    d.name = name;
    return d;
}

// Three visible GPUs in CUDA order; the first two share the UUID prefix GPU-d944.
std::vector<DeviceIdentity> three_gpus() {
    return {
        gpu(0, "GPU-d9441234-0000-1111-2222-333333333333", pci(0, 0x18, 0)),
        gpu(1, "GPU-d944abcd-0000-1111-2222-444444444444", pci(0, 0x3b, 0)),
        gpu(2, "GPU-7f00beef-0000-1111-2222-555555555555", pci(1, 0xaf, 0)),
    };
}

std::vector<std::size_t> resolve(const std::string& spec, const std::vector<DeviceIdentity>& visible = three_gpus()) {
    return resolve_device_spec(parse_device_spec(spec), visible);
}

using Positions = std::vector<std::size_t>;

}  // namespace

TEST_CASE("pci: parses the CUDA, NVML and short forms alike") {
    const auto cuda_form = parse_pci_address("0000:18:00.0");
    const auto nvml_form = parse_pci_address("00000000:18:00.0");
    const auto short_form = parse_pci_address("18:00.0");
    REQUIRE(cuda_form);
    REQUIRE(nvml_form);
    REQUIRE(short_form);
    CHECK(*cuda_form == pci(0, 0x18, 0));
    CHECK(*nvml_form == *cuda_form);
    CHECK(*short_form == *cuda_form);

    const auto upper = parse_pci_address("0001:AF:1F.7");
    REQUIRE(upper);
    CHECK(*upper == pci(1, 0xaf, 0x1f, 7));
    CHECK(upper->to_string() == "0001:af:1f.7");
    CHECK(pci(0, 0x18, 0).to_string() == "0000:18:00.0");
    CHECK(parse_pci_address(" 18:00.0 ") == pci(0, 0x18, 0));
}

TEST_CASE("pci: rejects malformed addresses") {
    for (const char* bad : {"", "18:00", "18.00.0", "0000:18:00", "1:2:3:4.0", "0000:118:00.0", "0000:18:20.0",
                            "0000:18:00.8", "0000:18:00.10", "zz:00.0", "000000000:18:00.0", "0000:18:00.0.1", "0", "all",
                            "GPU-18:00.0", "18::00.0", ":18:00.0"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_pci_address(bad).has_value());
    }
}

TEST_CASE("pci: addresses order by domain, bus, device, function") {
    CHECK(pci(0, 0x18, 0) < pci(0, 0x3b, 0));
    CHECK(pci(0, 0xff, 0) < pci(1, 0x00, 0));
    CHECK(pci(0, 0x18, 0, 0) < pci(0, 0x18, 0, 1));
    CHECK_FALSE(pci(0, 0x18, 0) < pci(0, 0x18, 0));
}

TEST_CASE("device spec: parses indices, UUIDs, PCI ids, lists and all") {
    SUBCASE("index") {
        const DeviceSpec s = parse_device_spec("0");
        CHECK_FALSE(s.all);
        REQUIRE(s.selectors.size() == 1);
        CHECK(s.selectors[0].kind == DeviceSelector::Kind::cuda_index);
        CHECK(s.selectors[0].index == DeviceId(0));
        CHECK(parse_device_spec(" 12 ").selectors.at(0).index == DeviceId(12));
    }
    SUBCASE("comma list keeps the order given") {
        const DeviceSpec s = parse_device_spec("3,1");
        REQUIRE(s.selectors.size() == 2);
        CHECK(s.selectors[0].index == DeviceId(3));
        CHECK(s.selectors[1].index == DeviceId(1));
        CHECK(parse_device_spec("0, 2").selectors.size() == 2);
    }
    SUBCASE("UUID prefix, case-insensitive") {
        const DeviceSpec s = parse_device_spec("GPU-D944AB");
        REQUIRE(s.selectors.size() == 1);
        CHECK(s.selectors[0].kind == DeviceSelector::Kind::uuid_prefix);
        CHECK(s.selectors[0].uuid_prefix == "gpu-d944ab");
        CHECK(s.selectors[0].text == "GPU-D944AB");
        CHECK(parse_device_spec("gpu-d944ab").selectors.at(0).uuid_prefix == "gpu-d944ab");
    }
    SUBCASE("PCI bus id in both forms") {
        const DeviceSpec a = parse_device_spec("0000:3b:00.0");
        const DeviceSpec b = parse_device_spec("3b:00.0");
        REQUIRE(a.selectors.size() == 1);
        REQUIRE(b.selectors.size() == 1);
        CHECK(a.selectors[0].kind == DeviceSelector::Kind::pci_address);
        CHECK(b.selectors[0].kind == DeviceSelector::Kind::pci_address);
        CHECK(a.selectors[0].pci == pci(0, 0x3b, 0));
        CHECK(b.selectors[0].pci == a.selectors[0].pci);
    }
    SUBCASE("mixed list") {
        const DeviceSpec s = parse_device_spec("1,GPU-7f00,0000:18:00.0");
        REQUIRE(s.selectors.size() == 3);
        CHECK(s.selectors[0].kind == DeviceSelector::Kind::cuda_index);
        CHECK(s.selectors[1].kind == DeviceSelector::Kind::uuid_prefix);
        CHECK(s.selectors[2].kind == DeviceSelector::Kind::pci_address);
    }
    SUBCASE("all") {
        const DeviceSpec s = parse_device_spec("all");
        CHECK(s.all);
        CHECK(s.selectors.empty());
    }
}

TEST_CASE("device spec: bad specs are usage errors") {
    for (const char* bad : {"", " ", "abc", "-1", "1.5", "0,", ",0", "0,,1", "all,0", "0,all", "GPU-xyz", "GPU-d944 x",
                            "1234567", "0000:18:00.8", "0x1", "first"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_device_spec(bad), UsageError);
    }
}

TEST_CASE("device spec: 'GPU-' alone is no UUID prefix") {
    // It would match every GPU: resolving it picked the only GPU of a
    // one-GPU machine instead of rejecting the spec.
    CHECK_THROWS_AS(parse_device_spec("GPU-"), UsageError);
    CHECK_THROWS_AS(parse_device_spec("gpu-"), UsageError);
    CHECK_THROWS_AS(parse_device_spec("0,GPU-"), UsageError);
    CHECK_NOTHROW(parse_device_spec("GPU-d"));
}

TEST_CASE("device spec: a device written twice the same way fails at parse time") {
    // Before any device is known (no driver needed), so exit 2 everywhere.
    for (const char* bad : {"0,0", "1,2,1", "GPU-d944,gpu-D944", "18:00.0,0000:18:00.0", "0000:18:00.0,00000000:18:00.0"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_device_spec(bad), UsageError);
    }
    // Different ways of naming one device are only found when resolving.
    CHECK_NOTHROW(parse_device_spec("0,GPU-d944"));
    CHECK_NOTHROW(parse_device_spec("GPU-d944,GPU-d9441234"));
}

TEST_CASE("device spec: resolves against the visible devices") {
    CHECK(resolve("0") == Positions{0});
    CHECK(resolve("2,0") == Positions{2, 0});
    CHECK(resolve("all") == Positions{0, 1, 2});
    CHECK(resolve("GPU-7f") == Positions{2});
    CHECK(resolve("GPU-D944AB") == Positions{1});
    CHECK(resolve("GPU-d9441234-0000-1111-2222-333333333333") == Positions{0});
    CHECK(resolve("0000:3b:00.0") == Positions{1});
    CHECK(resolve("3b:00.0") == Positions{1});
    CHECK(resolve("00000000:3b:00.0") == Positions{1});
    CHECK(resolve("0001:af:00.0") == Positions{2});
    CHECK(resolve("1,GPU-7f00,18:00.0") == Positions{1, 2, 0});
}

TEST_CASE("device spec: indices are CUDA indices, not positions") {
    // A visible list whose CUDA indices were assigned elsewhere.
    std::vector<DeviceIdentity> visible = {gpu(1, "GPU-aaaa0000", pci(0, 0x18, 0)), gpu(0, "GPU-bbbb0000", pci(0, 0x3b, 0))};
    CHECK(resolve("0", visible) == Positions{1});
    CHECK(resolve("1", visible) == Positions{0});
}

TEST_CASE("device spec: unknown, ambiguous and repeated devices are usage errors") {
    for (const char* bad : {"3", "99", "GPU-0000", "GPU-d9441234-0000-1111-2222-333333333334", "0000:18:00.1", "5e:00.0",
                            "0001:18:00.0",
                            "GPU-d944",  // ambiguous: two GPUs start so
                            "GPU-D9",    // ambiguous, upper case
                            "0,0", "1,2,1", "0,GPU-d9441234", "GPU-7f00,0001:af:00.0", "18:00.0,0"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(resolve(bad), UsageError);
    }
    // The message of an ambiguous prefix names both candidates.
    try {
        resolve("GPU-d944");
        FAIL("no exception");
    } catch (const UsageError& e) {
        const std::string what = e.what();
        CHECK(what.find("GPU-d9441234") != std::string::npos);
        CHECK(what.find("GPU-d944abcd") != std::string::npos);
    }
    // The message of an index out of range says how many are visible.
    try {
        resolve("7");
        FAIL("no exception");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()).find("3 devices") != std::string::npos);
    }
}

TEST_CASE("device spec: no visible device is NoDeviceError, whatever the spec") {
    const std::vector<DeviceIdentity> none;
    for (const char* spec : {"0", "all", "GPU-d944", "18:00.0"}) {
        CAPTURE(spec);
        CHECK_THROWS_AS(resolve(spec, none), NoDeviceError);
    }
    // NoDeviceError maps to exit status 3, UsageError to 2.
    CHECK(NoDeviceError("x").status() == ExitStatus::no_device);
    CHECK(static_cast<int>(NoDeviceError("x").status()) == 3);
    CHECK(static_cast<int>(UsageError("x").status()) == 2);
}

namespace {

LauncherInfo launcher_at(unsigned local_rank, std::optional<unsigned> local_size = std::nullopt) {
    LauncherInfo l;
    l.name = "slurm";
    l.local_rank = local_rank;
    l.local_rank_variable = "SLURM_LOCALID";
    l.local_size = local_size;
    if (local_size) l.local_size_variable = "SLURM_STEP_TASKS_PER_NODE";
    return l;
}

std::vector<std::size_t> resolve_local(const LauncherInfo& launcher, const std::vector<DeviceIdentity>& visible = three_gpus()) {
    return resolve_device_spec(parse_device_spec("local", launcher), visible);
}

}  // namespace

TEST_CASE("device spec: local is the local rank's device among the visible ones") {
    CHECK(resolve_local(launcher_at(0, 3u)) == Positions{0});
    CHECK(resolve_local(launcher_at(2, 3u)) == Positions{2});
    // More devices than ranks: the ranks take the first ones.
    CHECK(resolve_local(launcher_at(1, 2u)) == Positions{1});
    // Without the node's count, a rank with a device of its own still gets it.
    CHECK(resolve_local(launcher_at(2)) == Positions{2});
    const DeviceSpec s = parse_device_spec(" local ", launcher_at(1));
    CHECK(s.local);
    CHECK_FALSE(s.all);
    CHECK(s.selectors.empty());
    REQUIRE(s.local_rank);
    CHECK(s.local_rank->rank == 1);
}

TEST_CASE("device spec: local takes the one device a launcher left, whatever the rank") {
    // srun --gpus-per-task=1: every task sees only its own GPU, as device 0.
    const std::vector<DeviceIdentity> own = {three_gpus()[2]};
    CHECK(resolve_local(launcher_at(0, 4u), own) == Positions{0});
    CHECK(resolve_local(launcher_at(3, 4u), own) == Positions{0});
    CHECK(resolve_local(launcher_at(7), own) == Positions{0});
}

TEST_CASE("device spec: local with fewer devices than ranks names both counts") {
    const std::string message = gpumem::test::usage_error([] { resolve_local(launcher_at(0, 4u)); });
    CAPTURE(message);
    CHECK(message.find("4 ranks") != std::string::npos);
    CHECK(message.find("3 devices") != std::string::npos);
    CHECK(message.find("SLURM_STEP_TASKS_PER_NODE") != std::string::npos);
    // Without the count, the rank that has no device is told so.
    const std::string beyond = gpumem::test::usage_error([] { resolve_local(launcher_at(3)); });
    CAPTURE(beyond);
    CHECK(beyond.find("local rank 3") != std::string::npos);
    CHECK(beyond.find("SLURM_LOCALID") != std::string::npos);
    CHECK(beyond.find("3 devices") != std::string::npos);
}

TEST_CASE("device spec: local without a launcher's local rank is a usage error before any device is known") {
    const std::string message = gpumem::test::usage_error([] { parse_device_spec("local", LauncherInfo{}); });
    CAPTURE(message);
    CHECK(message.rfind("-d local needs a launcher's local rank: SLURM_LOCALID", 0) == 0);
    for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "PMI_LOCAL_RANK"})
        CHECK(message.find(v) != std::string::npos);
    // A launcher that gives a rank but no local rank is named.
    LauncherInfo pmi;
    pmi.name = "pmi";
    pmi.rank = 3;
    const std::string named = gpumem::test::usage_error([&] { parse_device_spec("local", pmi); });
    CHECK(named.find("pmi") != std::string::npos);
    // Parsed without a launcher at hand, resolving refuses it, before the
    // device list (even an empty one) is looked at.
    const DeviceSpec bare = parse_device_spec("local");
    CHECK(bare.local);
    CHECK_THROWS_AS(resolve_device_spec(bare, three_gpus()), UsageError);
    CHECK_THROWS_AS(resolve_device_spec(bare, {}), UsageError);
    // Other specs do not need a launcher.
    CHECK(resolve_device_spec(parse_device_spec("1", LauncherInfo{}), three_gpus()) == Positions{1});
}

TEST_CASE("device spec: local names one device, as one index, UUID or PCI id does") {
    CHECK(names_one_device(parse_device_spec("local", launcher_at(0))));
    CHECK(names_one_device(parse_device_spec("local")));
    CHECK(names_one_device(parse_device_spec("1")));
    CHECK(names_one_device(parse_device_spec("GPU-d944")));
    CHECK_FALSE(names_one_device(parse_device_spec("all")));
    CHECK_FALSE(names_one_device(parse_device_spec("0,1")));
}

TEST_CASE("device spec: local stands alone") {
    for (const char* bad : {"local,0", "0,local", "local,local", "all,local", "local,all", "LOCAL", "locale"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_device_spec(bad, launcher_at(0)), UsageError);
    }
}

TEST_CASE("device spec: no visible device with local is NoDeviceError") {
    CHECK_THROWS_AS(resolve_local(launcher_at(0, 2u), {}), NoDeviceError);
}
