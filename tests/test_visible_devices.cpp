// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as the CUDA driver applies them
// (observed on driver 580 with two H200s; tests/test_gpu_info.cpp compares
// with the CUDA runtime on a GPU machine): the list stops at the first entry
// that is malformed, names no device, or is of another kind than the first
// (indices and UUIDs do not mix); a device named twice before that makes CUDA
// fail altogether; -1 and an empty value hide everything; UUID prefixes
// select; indices read as strtol reads them. MIG entries and mixed models
// under FASTEST_FIRST cannot be decided from NVML alone.
#include <cstdint>
#include <doctest/doctest.h>

#include "base/device_spec.hpp"
#include "base/errors.hpp"

using namespace gpumem;

namespace {

DeviceIdentity nvml_gpu(int nvml_index, const std::string& uuid, std::uint32_t bus, const std::string& name = "NVIDIA H200") {
    DeviceIdentity d;
    d.nvml_index = static_cast<unsigned>(nvml_index);
    d.uuid = uuid;
    d.pci.bus = bus;
    d.name = name;
    return d;
}

// Four identical GPUs as NVML lists them, deliberately not in PCI order, so
// that a base order equal to NVML's order would be caught.
std::vector<DeviceIdentity> four_gpus() {
    return {
        nvml_gpu(0, "GPU-aaaa0000-1111-2222-3333-444444444444", 0x3b),
        nvml_gpu(1, "GPU-bbbb0000-1111-2222-3333-444444444444", 0x18),
        nvml_gpu(2, "GPU-bbbb1111-1111-2222-3333-444444444444", 0xaf),
        nvml_gpu(3, "GPU-cccc0000-1111-2222-3333-444444444444", 0x5e),
    };
}
// Their PCI order: 0x18 (1), 0x3b (0), 0x5e (3), 0xaf (2).
const std::vector<std::size_t> kPciOrder = {1, 0, 3, 2};

using Positions = std::vector<std::size_t>;

// Positions into four_gpus() that CUDA shows for this CUDA_VISIBLE_DEVICES
// value (nullptr: unset), with identical models (base order = PCI order).
std::optional<Positions> visible_for(const char* value, DeviceOrder order = DeviceOrder::fastest_first) {
    const auto all = four_gpus();
    return apply_cuda_visible_devices(all, cuda_base_order(all, order), parse_cuda_visible_devices(value));
}

}  // namespace

TEST_CASE("CUDA_VISIBLE_DEVICES: parsing") {
    SUBCASE("unset") { CHECK_FALSE(parse_cuda_visible_devices(nullptr).has_value()); }
    SUBCASE("empty hides everything") {
        const auto e = parse_cuda_visible_devices("");
        REQUIRE(e.has_value());
        CHECK(e->empty());
    }
    SUBCASE("indices in the order given") {
        const auto e = parse_cuda_visible_devices("2,0");
        REQUIRE(e.has_value());
        REQUIRE(e->size() == 2);
        CHECK((*e)[0].kind == VisibleDevicesEntry::Kind::index);
        CHECK((*e)[0].index == 2);
        CHECK((*e)[1].index == 0);
    }
    SUBCASE("-1 is invalid: nothing before it, so nothing at all") {
        const auto e = parse_cuda_visible_devices("-1");
        REQUIRE(e.has_value());
        CHECK(e->empty());
    }
    SUBCASE("stops at the first invalid entry") {
        const auto e = parse_cuda_visible_devices("1,-1,0");
        REQUIRE(e.has_value());
        REQUIRE(e->size() == 1);
        CHECK((*e)[0].index == 1);
        CHECK(parse_cuda_visible_devices("0,abc,1")->size() == 1);
        CHECK(parse_cuda_visible_devices("0,,1")->size() == 1);
        CHECK(parse_cuda_visible_devices(",0")->empty());
        CHECK(parse_cuda_visible_devices("0,")->size() == 1);
        CHECK(parse_cuda_visible_devices("abc")->empty());
        CHECK(parse_cuda_visible_devices("a1")->empty());
        CHECK(parse_cuda_visible_devices(" ")->empty());
    }
    SUBCASE("indices read as strtol reads them, truncated to 32 bits") {
        const auto index_of = [](const char* v) -> long long {
            const auto e = parse_cuda_visible_devices(v);
            REQUIRE(e.has_value());
            if (e->empty()) return -1;
            REQUIRE(e->front().kind == VisibleDevicesEntry::Kind::index);
            return e->front().index;
        };
        CHECK(index_of("1a") == 1);
        CHECK(index_of("+1") == 1);
        CHECK(index_of("-0") == 0);
        CHECK(index_of(" 1") == 1);
        CHECK(index_of("1 ") == 1);
        CHECK(index_of("\t1") == 1);
        CHECK(index_of("01") == 1);
        CHECK(index_of("0x1") == 0);
        CHECK(index_of("1.5") == 1);
        CHECK(index_of("1e0") == 1);
        CHECK(index_of("1 2") == 1);
        CHECK(index_of("4294967296") == 0);
        CHECK(index_of("4294967297") == 1);
        CHECK(index_of("-4294967295") == 1);
        CHECK(index_of("-1") == -1);                       // negative: invalid
        CHECK(index_of("4294967295") == -1);               // -1 in 32 bits
        CHECK(index_of("2147483648") == -1);               // negative in 32 bits
        CHECK(index_of("99999999999999999999999") == -1);  // saturates, then -1
        CHECK(parse_cuda_visible_devices("1a,0")->size() == 2);
    }
    SUBCASE("indices and UUIDs do not mix: the first entry of another kind ends the list") {
        const auto a = parse_cuda_visible_devices("0,GPU-aaaa,1");
        REQUIRE(a.has_value());
        REQUIRE(a->size() == 1);
        CHECK((*a)[0].kind == VisibleDevicesEntry::Kind::index);
        const auto b = parse_cuda_visible_devices("GPU-aaaa,GPU-bbbb,1,GPU-cccc");
        REQUIRE(b.has_value());
        REQUIRE(b->size() == 2);
        CHECK((*b)[1].kind == VisibleDevicesEntry::Kind::uuid_prefix);
        CHECK(parse_cuda_visible_devices("1,MIG-12345678")->size() == 1);
        CHECK(parse_cuda_visible_devices("MIG-12345678,1")->size() == 1);
    }
    SUBCASE("malformed UUIDs are invalid") {
        for (const char* v : {"GPU-", "GPU--", "gpu-aaaa", " GPU-aaaa", "GPU-aaaa ", "GPU-aaaax", "GPU-aaaa,GPU-zz"}) {
            CAPTURE(v);
            const auto e = parse_cuda_visible_devices(v);
            REQUIRE(e.has_value());
            CHECK(e->size() == (std::string(v).rfind("GPU-aaaa,", 0) == 0 ? 1u : 0u));
        }
    }
    SUBCASE("UUIDs and prefixes, lower-cased") {
        const auto e = parse_cuda_visible_devices("GPU-AAAA0000,GPU-bbbb1111-1111-2222-3333-444444444444");
        REQUIRE(e.has_value());
        REQUIRE(e->size() == 2);
        CHECK((*e)[0].kind == VisibleDevicesEntry::Kind::uuid_prefix);
        CHECK((*e)[0].uuid_prefix == "gpu-aaaa0000");
        CHECK((*e)[1].uuid_prefix == "gpu-bbbb1111-1111-2222-3333-444444444444");
    }
    SUBCASE("MIG entries") {
        const auto e = parse_cuda_visible_devices("MIG-12345678-abcd-ef01-2345-6789abcdef01");
        REQUIRE(e.has_value());
        REQUIRE(e->size() == 1);
        CHECK((*e)[0].kind == VisibleDevicesEntry::Kind::mig);
    }
}

TEST_CASE("CUDA_DEVICE_ORDER: PCI_BUS_ID or, for anything else, FASTEST_FIRST") {
    CHECK(parse_cuda_device_order("PCI_BUS_ID") == DeviceOrder::pci_bus_id);
    CHECK(parse_cuda_device_order("FASTEST_FIRST") == DeviceOrder::fastest_first);
    CHECK(parse_cuda_device_order(nullptr) == DeviceOrder::fastest_first);
    CHECK(parse_cuda_device_order("") == DeviceOrder::fastest_first);
    CHECK(parse_cuda_device_order("pci") == DeviceOrder::fastest_first);
}

TEST_CASE("CUDA base order") {
    const auto all = four_gpus();
    SUBCASE("PCI_BUS_ID sorts by PCI address") {
        const auto order = cuda_base_order(all, DeviceOrder::pci_bus_id);
        REQUIRE(order.has_value());
        CHECK(*order == kPciOrder);
    }
    SUBCASE("FASTEST_FIRST among identical models is PCI order too") {
        const auto order = cuda_base_order(all, DeviceOrder::fastest_first);
        REQUIRE(order.has_value());
        CHECK(*order == kPciOrder);
    }
    SUBCASE("FASTEST_FIRST with mixed models is undecidable") {
        auto mixed = all;
        mixed[2].name = "NVIDIA A100-SXM4-80GB";
        CHECK_FALSE(cuda_base_order(mixed, DeviceOrder::fastest_first).has_value());
        // ...but PCI_BUS_ID still decides it.
        const auto order = cuda_base_order(mixed, DeviceOrder::pci_bus_id);
        REQUIRE(order.has_value());
        CHECK(*order == kPciOrder);
    }
    SUBCASE("PCI domain ranks before bus") {
        auto two = std::vector<DeviceIdentity>{nvml_gpu(0, "GPU-1", 0x01), nvml_gpu(1, "GPU-2", 0x02)};
        two[0].pci.domain = 1;
        CHECK(cuda_base_order(two, DeviceOrder::pci_bus_id) == Positions{1, 0});
    }
    SUBCASE("no devices") {
        const auto order = cuda_base_order({}, DeviceOrder::fastest_first);
        REQUIRE(order.has_value());
        CHECK(order->empty());
    }
}

TEST_CASE("CUDA_VISIBLE_DEVICES: applied to the base order") {
    SUBCASE("unset: the base order") { CHECK(visible_for(nullptr) == kPciOrder); }
    SUBCASE("indices count in the base order, in the order written") {
        CHECK(visible_for("0") == Positions{1});
        CHECK(visible_for("1,0") == Positions{0, 1});
        CHECK(visible_for("3,2,1,0") == Positions{2, 3, 0, 1});
    }
    SUBCASE("empty and -1 hide every device") {
        CHECK(visible_for("") == Positions{});
        CHECK(visible_for("-1") == Positions{});
        CHECK(visible_for("-1,0") == Positions{});
        CHECK(visible_for(",0") == Positions{});
    }
    SUBCASE("stops at the first index that names no device") {
        CHECK(visible_for("0,4,1") == Positions{1});
        CHECK(visible_for("9") == Positions{});
        CHECK(visible_for("2,-1,3") == Positions{3});
    }
    SUBCASE("a device named twice makes CUDA fail: NoDeviceError") {
        for (const char* v : {"0,0", "0,0,1", "1,2,1,3", "0,1a,0", "3,+3", "GPU-aaaa,GPU-aaaa",
                              "GPU-bbbb0000,GPU-cccc,GPU-bbbb0000-1111"}) {
            CAPTURE(v);
            CHECK_THROWS_AS(visible_for(v), NoDeviceError);
        }
        // ...but not once the list has already stopped.
        CHECK(visible_for("0,9,0") == Positions{1});
        CHECK(visible_for("0,-1,0") == Positions{1});
        CHECK(visible_for("0,GPU-bbbb0000") == Positions{1});  // another kind: stops first
    }
    SUBCASE("UUIDs and unique prefixes select devices") {
        CHECK(visible_for("GPU-cccc0000-1111-2222-3333-444444444444") == Positions{3});
        CHECK(visible_for("GPU-cccc,GPU-aaaa") == Positions{3, 0});
        CHECK(visible_for("GPU-AAAA") == Positions{0});
        CHECK(visible_for("GPU-bbbb1") == Positions{2});
        CHECK(visible_for("GPU-bbbb0000-") == Positions{1});
        // The whole UUID with more after it still selects that device.
        CHECK(visible_for("GPU-cccc0000-1111-2222-3333-4444444444440") == Positions{3});
        CHECK(visible_for("GPU-cccc0000-1111-2222-3333-444444444444-0") == Positions{3});
    }
    SUBCASE("an unknown or ambiguous UUID prefix, or a change of kind, ends the list") {
        CHECK(visible_for("GPU-dddd,GPU-aaaa") == Positions{});
        CHECK(visible_for("GPU-aaaa,GPU-bbbb,GPU-cccc") == Positions{0});
        CHECK(visible_for("GPU-aaaa,GPU-ffff,GPU-cccc") == Positions{0});
        CHECK(visible_for("GPU-bbbb1,0") == Positions{2});
        CHECK(visible_for("1,GPU-aaaa") == Positions{0});
        CHECK(visible_for("GPU-aaaax,1") == Positions{});
    }
    SUBCASE("PCI_BUS_ID order gives the same result for identical models") {
        CHECK(visible_for("1,0", DeviceOrder::pci_bus_id) == Positions{0, 1});
    }
    SUBCASE("MIG entries are undecidable") {
        CHECK_FALSE(visible_for("MIG-12345678-abcd-ef01-2345-6789abcdef01").has_value());
        CHECK_FALSE(visible_for("MIG-12345678,MIG-9abcdef0").has_value());
        // ...unless the list stopped before the MIG entry: at an invalid
        // entry, or at the change of kind.
        CHECK(visible_for("9,MIG-12345678") == Positions{});
        CHECK(visible_for("0,MIG-12345678") == Positions{1});
    }
}

TEST_CASE("CUDA_VISIBLE_DEVICES: mixed models under FASTEST_FIRST") {
    auto all = four_gpus();
    all[3].name = "NVIDIA A100-SXM4-80GB";
    const auto base = cuda_base_order(all, DeviceOrder::fastest_first);
    REQUIRE_FALSE(base.has_value());
    // Indices need the base order: undecidable.
    CHECK_FALSE(apply_cuda_visible_devices(all, base, parse_cuda_visible_devices("0")).has_value());
    CHECK_FALSE(apply_cuda_visible_devices(all, base, std::nullopt).has_value());
    // (A UUID followed by an index: the list stops before the index.)
    CHECK(apply_cuda_visible_devices(all, base, parse_cuda_visible_devices("GPU-aaaa,1")) == Positions{0});
    // UUIDs do not.
    CHECK(apply_cuda_visible_devices(all, base, parse_cuda_visible_devices("GPU-cccc,GPU-aaaa")) == Positions{3, 0});
    CHECK(apply_cuda_visible_devices(all, base, parse_cuda_visible_devices("")) == Positions{});
    // Once the base order is known (from the CUDA runtime), indices apply to it.
    const Positions from_cuda = {3, 1, 0, 2};
    CHECK(apply_cuda_visible_devices(all, from_cuda, parse_cuda_visible_devices("0,2")) == Positions{3, 0});
}
