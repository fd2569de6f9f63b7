// DeviceId: a CUDA ordinal as a type of its own, and "no device" as an empty
// optional in the identities built from it.
#include <doctest/doctest.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "base/device_id.hpp"
#include "base/device_spec.hpp"

using gpumem::DeviceId;

// Nothing converts silently: an int is not a device, a device is not an int,
// and there is no default device.
static_assert(!std::is_convertible_v<int, DeviceId>);
static_assert(!std::is_convertible_v<DeviceId, int>);
static_assert(!std::is_default_constructible_v<DeviceId>);
static_assert(std::is_trivially_copyable_v<DeviceId>);
static_assert(DeviceId(3).ordinal() == 3);

TEST_CASE("DeviceId: ordinal, comparisons, to_string") {
    const DeviceId zero(0), two(2);
    CHECK(zero.ordinal() == 0);
    CHECK(two.ordinal() == 2);
    CHECK(zero == DeviceId(0));
    CHECK(zero != two);
    CHECK_FALSE(zero == two);
    CHECK(zero < two);
    CHECK_FALSE(two < zero);
    CHECK_FALSE(two < two);
    CHECK(to_string(two) == "2");
    CHECK(to_string(DeviceId(17)) == "17");

    std::vector<DeviceId> ids{DeviceId(3), DeviceId(1), DeviceId(2)};
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<DeviceId>{DeviceId(1), DeviceId(2), DeviceId(3)});
}

TEST_CASE("DeviceId: identities say 'hidden from CUDA' and 'unknown to NVML' with empty optionals") {
    const gpumem::DeviceIdentity unknown;
    CHECK_FALSE(unknown.cuda_index.has_value());
    CHECK_FALSE(unknown.nvml_index.has_value());

    gpumem::DeviceIdentity a;
    a.cuda_index = DeviceId(1);
    a.nvml_index = 0u;
    a.uuid = "GPU-aaaa";
    gpumem::DeviceIdentity b;
    b.cuda_index = DeviceId(0);
    b.nvml_index = 1u;
    b.uuid = "GPU-bbbb";
    const std::vector<gpumem::DeviceIdentity> visible{b, a};

    // `-d 1` names CUDA ordinal 1, whatever NVML calls it.
    const gpumem::DeviceSpec spec = gpumem::parse_device_spec("1");
    REQUIRE(spec.selectors.size() == 1);
    CHECK(spec.selectors[0].index == DeviceId(1));
    CHECK(gpumem::resolve_device_spec(spec, visible) == std::vector<std::size_t>{1});
    // A selector by UUID carries no ordinal.
    CHECK_FALSE(gpumem::parse_device_spec("GPU-aa").selectors[0].index.has_value());
}
