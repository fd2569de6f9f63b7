// reuse_sim::parse_cost_table on arbitrary text, then a cost model built from
// whatever it accepts, queried across sizes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "reuse_sim/cost_table.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    const std::string text(reinterpret_cast<const char*>(data), size);
    fuzz_expect_only_gpumem_errors([&] {
        std::vector<std::string> missing;
        const auto table = gpumem::reuse_sim::parse_cost_table(text, "fuzz.json", &missing);
        const gpumem::reuse_sim::CostModel model(table);
        for (std::uint64_t b : {1ULL, 512ULL, 1ULL << 20, 3ULL << 30, ~0ULL}) {
            (void)model.device_alloc(b);
            (void)model.async_free(b);
            (void)model.pool_grow(b);
            (void)model.memset(b);
        }
        (void)gpumem::reuse_sim::cost_table_to_json(table);
    });
    return 0;
}
