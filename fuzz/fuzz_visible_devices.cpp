// CUDA_VISIBLE_DEVICES: parse_cuda_visible_devices then
// apply_cuda_visible_devices over a fake list in both device orders.
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/device_spec.hpp"
#include "fuzz_common.hpp"

namespace {

std::vector<gpumem::DeviceIdentity> fake_devices() {
    std::vector<gpumem::DeviceIdentity> v(3);
    const char* uuids[] = {"GPU-0a1b2c3d-0000-1111-2222-333344445555", "GPU-0a1b9999-0000-1111-2222-333344445555",
                           "GPU-ffffffff-aaaa-bbbb-cccc-dddddddddddd"};
    for (int i = 0; i < 3; ++i) {
        v[i].cuda_index = gpumem::DeviceId(i);
        v[i].nvml_index = static_cast<unsigned>(2 - i);
        v[i].uuid = uuids[i];
        v[i].pci = {0, static_cast<std::uint32_t>(0x40 - 0x10 * i), 0, 0};
        v[i].name = i == 1 ? "Fake big GPU" : "Fake GPU";
    }
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    if (size > 512) return 0;
    static const std::vector<gpumem::DeviceIdentity> devices = fake_devices();
    const std::string value(reinterpret_cast<const char*>(data), size);  // NUL-terminated for the C API
    fuzz_expect_only_gpumem_errors([&] {
        const auto entries = gpumem::parse_cuda_visible_devices(value.c_str());
        for (auto order : {gpumem::DeviceOrder::fastest_first, gpumem::DeviceOrder::pci_bus_id}) {
            const auto base = gpumem::cuda_base_order(devices, order);
            const auto visible = gpumem::apply_cuda_visible_devices(devices, base, entries);
            if (visible)
                for (std::size_t i : *visible)
                    if (i >= devices.size()) std::abort();
        }
    });
    (void)gpumem::parse_cuda_device_order(value.c_str());
    return 0;
}
