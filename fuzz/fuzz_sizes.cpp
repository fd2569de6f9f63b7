// parse_size_spec, parse_size, parse_size_range, parse_unsigned and the
// formatting of whatever they accept.
#include <cstdint>
#include <cstddef>

#include "fuzz_common.hpp"
#include "base/sizes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    if (size > 256) return 0;  // sizes come from a command line
    const std::string_view text = fuzz_text(data, size);
    fuzz_expect_only_gpumem_errors([&] {
        const auto spec = gpumem::parse_size_spec(text, {true, true});
        const std::uint64_t resolved = spec.resolve(80ULL << 30);
        (void)gpumem::format_bytes(resolved);
        (void)gpumem::format_bytes(spec.bytes, gpumem::Unit::GiB);
    });
    fuzz_expect_only_gpumem_errors([&] {
        const auto spec = gpumem::parse_size_spec(text);
        (void)gpumem::format_bytes(spec.bytes);
    });
    fuzz_expect_only_gpumem_errors([&] { (void)gpumem::parse_size(text); });
    fuzz_expect_only_gpumem_errors([&] {
        const auto sizes = gpumem::parse_size_range(text, 64);
        if (sizes.size() > 64) std::abort();  // max_count is a promise
    });
    fuzz_expect_only_gpumem_errors([&] {
        const std::uint64_t v = gpumem::parse_unsigned(text, 1000000);
        if (v > 1000000) std::abort();
    });
    fuzz_expect_only_gpumem_errors([&] { (void)gpumem::parse_unit(text); });
    return 0;
}
