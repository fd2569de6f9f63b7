// parse_device_spec and parse_pci_address, and resolve_device_spec against a
// fixed list of fake devices, with and without a launcher's local rank (for
// `local`); Slurm's tasks-per-node lists.
#include <cstddef>
#include <cstdlib>
#include <vector>

#include "base/device_spec.hpp"
#include "base/launcher.hpp"
#include "fuzz_common.hpp"

namespace {

std::vector<gpumem::DeviceIdentity> fake_devices() {
    std::vector<gpumem::DeviceIdentity> v(4);
    const char* uuids[] = {"GPU-0a1b2c3d-0000-1111-2222-333344445555", "GPU-0a1b9999-0000-1111-2222-333344445555",
                           "GPU-ffffffff-aaaa-bbbb-cccc-dddddddddddd", "GPU-12345678-9abc-def0-1234-56789abcdef0"};
    for (int i = 0; i < 4; ++i) {
        v[i].cuda_index = gpumem::DeviceId(i);
        v[i].nvml_index = static_cast<unsigned>(3 - i);
        v[i].uuid = uuids[i];
        v[i].pci = {0, static_cast<std::uint32_t>(0x18 + 0x20 * i), 0, 0};
        v[i].name = "Fake GPU";
    }
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    if (size > 512) return 0;
    static const std::vector<gpumem::DeviceIdentity> devices = fake_devices();
    const std::string_view text = fuzz_text(data, size);
    if (const auto pci = gpumem::parse_pci_address(text)) {
        // Whatever parses must print in a form that parses back to the same address.
        const auto again = gpumem::parse_pci_address(pci->to_string());
        if (!again || !(*again == *pci)) std::abort();
    }
    fuzz_expect_only_gpumem_errors([&] {
        const gpumem::DeviceSpec spec = gpumem::parse_device_spec(text);
        const auto chosen = gpumem::resolve_device_spec(spec, devices);
        for (std::size_t i : chosen)
            if (i >= devices.size()) std::abort();
    });
    // A launcher's place taken from the input's length: `local` names one of the devices, or fails.
    gpumem::LauncherInfo launcher;
    launcher.name = "slurm";
    launcher.local_rank = static_cast<unsigned>(size % 6);
    if (size % 3 != 0) launcher.local_size = static_cast<unsigned>(size % 7);
    fuzz_expect_only_gpumem_errors([&] {
        const gpumem::DeviceSpec spec = gpumem::parse_device_spec(text, launcher);
        const auto chosen = gpumem::resolve_device_spec(spec, devices);
        if (spec.local && chosen.size() != 1) std::abort();
        for (std::size_t i : chosen)
            if (i >= devices.size()) std::abort();
    });
    fuzz_expect_only_gpumem_errors([&] { (void)gpumem::slurm_tasks_on_node(text, static_cast<unsigned>(size % 5), "V"); });
    return 0;
}
