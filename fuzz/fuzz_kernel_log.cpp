// The kernel log reader of gpumem check's xid.events: each input is a saved
// log (any bytes), scanned line by line, windowed by --xid-since and judged
// for a GPU. Lines that are not understood must be counted, never crash.
#include <cstddef>
#include <cstdlib>
#include <string>

#include "base/xid.hpp"
#include "bench/check_engine.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    const std::string_view text = fuzz_text(data, size);
    fuzz_expect_only_gpumem_errors([&] {
        const gpumem::XidScan scan = gpumem::scan_kernel_log_text(text, "fuzz");
        if (scan.events.size() + scan.events_dropped + scan.not_understood > scan.lines) std::abort();
        for (const gpumem::XidEvent& e : scan.events)
            if (!e.pci) std::abort();  // an event always names its device
        gpumem::PciAddress gpu;
        gpu.bus = 0x18;
        for (const char* since : {"boot", "1h", "2026-11-25T04:00:00Z"}) {
            const gpumem::XidWindow w = gpumem::xid_window(scan, gpumem::parse_xid_since(since), std::nullopt);
            if (w.events.size() + w.before != scan.events.size()) std::abort();
            const gpumem::CheckOutcome o = gpumem::xid_check(scan, w, gpu, {gpu});
            if (o.reason.find('\n') != std::string::npos) std::abort();  // one line
        }
    });
    fuzz_expect_only_gpumem_errors([&] { (void)gpumem::parse_xid_since(text.substr(0, 64)); });
    return 0;
}
