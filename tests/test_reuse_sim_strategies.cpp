// Each reuse-sim strategy on small traces whose answers are worked out here,
// from the rules of the allocator it models.
#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <stdexcept>

#include "base/memory_policy.hpp"
#include "reuse_sim_helpers.hpp"

TEST_CASE("naive: one cudaMalloc and one cudaFree per request") {
    const auto o = run_strategy("naive", {A(1, 1000), A(2, 3000), F(1), A(3, 500), F(2), F(3)});
    const auto& r = o.result;
    CHECK(r.requests == 3);
    CHECK(r.upstream_allocs == 3);
    CHECK(r.upstream_frees == 3);
    CHECK(r.hits == 0);
    CHECK(r.peak_reserved == 4000);  // 1000 + 3000 live together
    CHECK(r.peak_live == 4000);
    CHECK(r.slack_at_peak == 0);
    CHECK(r.implicit_syncs == 3);  // every cudaFree synchronizes the device
}

TEST_CASE("grow-only: reuse while the request fits, free then grow otherwise") {
    const std::uint32_t t = 7;
    const std::vector<rs::Event> trace = {A(1, 1000, t), F(1), A(2, 500, t), F(2), A(3, 2000, t), F(3), A(4, 2000, t), F(4)};
    SUBCASE("exact") {
        const auto r = run_strategy("grow-only", trace).result;
        CHECK(r.upstream_allocs == 2);  // 1000, then 2000
        CHECK(r.upstream_frees == 1);   // the 1000-byte buffer, freed before growing
        CHECK(r.hits == 2);             // 500 fits in 1000; 2000 fits in 2000
        CHECK(r.hit_rate == doctest::Approx(0.5));
        CHECK(r.peak_reserved == 2000);  // free first: never 1000 + 2000
    }
    SUBCASE("x2") {
        rs::StrategyOptions o;
        o.growth = gpumem::GrowthPolicy::geometric(2);
        const auto r = run_strategy("grow-only", trace, o).result;
        CHECK(r.upstream_allocs == 2);
        CHECK(r.peak_reserved == 2000);  // max(2000, 2 x 1000), not rounded: as MixMemory
    }
    SUBCASE("x1.5") {
        rs::StrategyOptions o;
        o.growth = gpumem::GrowthPolicy::geometric(1.5);
        const auto r = run_strategy("grow-only", trace, o).result;
        CHECK(r.upstream_allocs == 2);
        CHECK(r.peak_reserved == 2000);  // max(2000, 1.5 x 1000)
    }
    SUBCASE("2MiB") {
        rs::StrategyOptions o;
        o.growth = gpumem::GrowthPolicy::round_to(2 * MiB);
        const auto r = run_strategy("grow-only", trace, o).result;
        CHECK(r.upstream_allocs == 1);
        CHECK(r.peak_reserved == 2 * MiB);
        CHECK(r.hit_rate == doctest::Approx(0.75));
    }
    SUBCASE("zero-fill stalls the device once per new buffer") {
        rs::StrategyOptions o;
        o.zero_fill = true;
        const auto r = run_strategy("grow-only", trace, o).result;
        CHECK(r.counters.fills == 2);
        CHECK(r.implicit_syncs == 1 + 2);  // one cudaFree, two cudaMemset
    }
}

namespace {

// MixMemory::device() (src/core/mix_memory.cpp) without the GPU: reuse while
// the request fits; otherwise size the new buffer with capacity_for(request,
// capacity held now), free the old one, allocate. A refused allocation leaves
// the buffer empty, so the next growth starts from a capacity of 0.
struct MixMemoryDeviceModel {
    gpumem::GrowthPolicy growth;
    std::uint64_t capacity = 0;
    // The size asked of cudaMalloc, or nullopt for a reuse.
    std::optional<std::uint64_t> request(std::uint64_t bytes, std::uint64_t device_limit) {
        if (capacity != 0 && bytes <= capacity) return std::nullopt;
        const std::uint64_t asked = growth.capacity_for(bytes, capacity);
        capacity = 0;  // release_device()
        if (asked <= device_limit) capacity = asked;
        return asked;
    }
};

// Logs every size asked of it and refuses those above `limit`.
class AskedSizes final : public rs::Upstream {
public:
    explicit AskedSizes(std::uint64_t limit) : Upstream(rs::kUnlimited, nullptr), limit_(limit) {}
    std::vector<std::uint64_t> asked;

private:
    bool do_allocate(std::uint64_t size, std::uint32_t, std::uint64_t& address) override {
        asked.push_back(size);
        address = 0x1000 * asked.size();
        return size <= limit_;
    }
    void do_deallocate(std::uint64_t, std::uint64_t, std::uint32_t) override {}
    bool do_allocate_async(std::uint64_t, std::uint32_t, std::uint64_t&) override { return false; }
    void do_deallocate_async(std::uint64_t, std::uint64_t, std::uint32_t) override {}
    void do_set_release_threshold(std::uint64_t) override {}
    void do_fill_zero(std::uint64_t, std::uint64_t) override {}
    void do_synchronize() override {}

    std::uint64_t limit_;
};

}  // namespace

TEST_CASE("grow-only: the capacities asked for are MixMemory's, for every growth rule") {
    // One requester asking in turn, with growths, reuses, a shrink, and a
    // growth the device refuses (above the limit) followed by a smaller one.
    const std::uint64_t limit = 64 * KiB;
    const std::vector<std::uint64_t> requests = {1000, 500,  1001, 3000,  2999,  10000, 7000, 10001,
                                                 60000, 100, 70000, 1500, 40000, 40001, 65536, 1};
    std::vector<gpumem::GrowthPolicy> rules;
    for (const auto& row : gpumem::kGrowthRules) rules.push_back(row.value);
    rules.push_back(gpumem::parse_growth_policy("x1.25"));  // beyond the table, as alloc-test accepts
    rules.push_back(gpumem::parse_growth_policy("4KiB"));
    for (const gpumem::GrowthPolicy& rule : rules) {
        CAPTURE(rule.name());
        rs::StrategyOptions options;
        options.growth = rule;
        AskedSizes upstream(limit);
        const auto strategy = rs::make_strategy(rs::kStrategies.parse("grow-only"), options, upstream);
        MixMemoryDeviceModel model{rule};
        std::vector<std::uint64_t> expected;
        std::uint32_t handle = 0;
        for (std::uint64_t bytes : requests) {
            CAPTURE(bytes);
            if (const auto asked = model.request(bytes, limit)) expected.push_back(*asked);
            rs::Request r;
            r.handle = handle++;
            r.size = bytes;
            r.slot = 1;
            const bool granted = strategy->allocate(r);
            CHECK(granted == (model.capacity != 0));
            if (granted) strategy->deallocate(r.handle);
        }
        CHECK(upstream.asked == expected);
        CHECK(upstream.counters().device_alloc_failures >= 1);  // the refused growth happened
    }
}

TEST_CASE("grow-only: several live requests of one tag get several buffers; no tag means one per id") {
    SUBCASE("same tag") {
        const auto r = run_strategy("grow-only", {A(1, 100, 3), A(2, 100, 3), F(1), F(2), A(3, 100, 3), A(4, 100, 3)}).result;
        CHECK(r.upstream_allocs == 2);
        CHECK(r.hits == 2);
    }
    SUBCASE("no tag") {
        const auto r = run_strategy("grow-only", {A(1, 100), F(1), A(1, 100), F(1), A(2, 100), F(2)}).result;
        CHECK(r.upstream_allocs == 2);  // id 1 once (reused), id 2 once
        CHECK(r.hits == 1);
    }
}

TEST_CASE("shape-persistent: reuse only while the size is unchanged") {
    const std::uint32_t t = 1;
    const auto r = run_strategy("shape-persistent", {A(1, 1000, t), F(1), A(2, 1000, t), F(2), A(3, 500, t), F(3),
                                                      A(4, 1000, t), F(4)})
                       .result;
    CHECK(r.upstream_allocs == 3);  // 1000, 500 (smaller also reallocates), 1000
    CHECK(r.upstream_frees == 2);
    CHECK(r.hits == 1);
    CHECK(r.peak_reserved == 1000);
}

TEST_CASE("ring: N buffers of the largest size; a request finding none free waits (temporary buffer)") {
    rs::StrategyOptions o;
    o.ring_buffers = 2;
    o.ring_size = 4096;
    const auto out = run_strategy("ring", {A(1, 100), A(2, 200), A(3, 300), F(3), F(1), A(4, 400), F(2), F(4)}, o);
    const auto& r = out.result;
    CHECK(r.upstream_allocs == 3);  // two ring buffers, one temporary for request 3
    CHECK(r.upstream_frees == 1);   // the temporary
    CHECK(out.detail("waits") == 1);
    CHECK(r.hits == 1);                 // request 4 reuses ring buffer 0
    CHECK(r.peak_reserved == 2 * 4096 + 300);
}

TEST_CASE("pool (RMM): 256-byte rounding, doubling growth, no merge across upstream blocks") {
    SUBCASE("growth and head blocks") {
        const auto r = run_strategy("pool", {A(1, 1000), A(2, 1000), F(1), F(2), A(3, 2000), F(3)}).result;
        // 1024 (pool 0 -> grow 1024), 1024 (grow max(1024, 1024)), then 2048:
        // the two free 1024-byte blocks touch but each starts an upstream
        // allocation, so they never merge: grow max(2048, 2048).
        CHECK(r.upstream_allocs == 3);
        CHECK(r.peak_reserved == 4096);
        CHECK(r.upstream_frees == 0);  // only released at the end
    }
    SUBCASE("split and coalesce within one upstream block") {
        rs::StrategyOptions o;
        o.pool_initial = 4096;
        const auto r = run_strategy("pool", {A(1, 1000), A(2, 1000), F(1), F(2), A(3, 4096), F(3)}, o).result;
        // [0,1024) and [1024,2048) carved from the initial block; both freed,
        // they merge with the [2048,4096) remainder into one 4096-byte block.
        CHECK(r.upstream_allocs == 1);
        CHECK(r.hits == 3);
        CHECK(r.peak_reserved == 4096);
    }
    SUBCASE("maximum pool size: grow halfway to it, then refuse") {
        rs::StrategyOptions o;
        o.pool_maximum = 4096;
        const auto r = run_strategy("pool", {A(1, 1000), A(2, 3000)}, o).result;
        // First growth: max(1024, 4096 / 2) = 2048. Then 3072 > the 2048 that remain: out of memory.
        CHECK(r.peak_reserved == 2048);
        CHECK(r.ooms == 1);
    }
    SUBCASE("a stream takes a free block from another stream's list") {
        const auto r = run_strategy("pool", {A(1, 1000, rs::kNoTag, 0), F(1), A(2, 1000, rs::kNoTag, 5), F(2)}).result;
        CHECK(r.upstream_allocs == 1);
    }
}

TEST_CASE("binning (RMM): fixed-size bins preallocate chunks from the pool; larger requests use the pool") {
    rs::StrategyOptions o;
    o.bin_blocks = 2;  // chunks of 2 blocks: 512 KiB, 1, 2, 4, 8 MiB
    const auto out = run_strategy("binning", {A(1, 100 * KiB), A(2, 100 * KiB), A(3, 100 * KiB), A(4, 5 * MiB)}, o);
    const auto& r = out.result;
    // Construction: the pool grows by 512K, max(1M, 512K), max(2M, 1.5M),
    // max(4M, 3.5M), max(8M, 7.5M): 15.5 MiB in 5 upstream allocations.
    // Request 3 needs a second 256 KiB-bin chunk: the pool grows by
    // max(512K, 15.5M) = 15.5 MiB; the 5 MiB request fits in what remains.
    CHECK(r.upstream_allocs == 6);
    CHECK(r.peak_reserved == 31 * MiB);
    CHECK(out.detail("bin_262144_chunks") == 2);
    CHECK(r.hits == 3);
}

TEST_CASE("torch-caching: small pool, 2 MiB segments, split and merge") {
    const auto out = run_strategy("torch-caching", {A(1, 1000), A(2, 1000), F(1), F(2), A(3, MiB), F(3)});
    const auto& r = out.result;
    // 1000 rounds to 1024; both blocks are split from one 2 MiB segment. Once
    // both are freed they merge with the rest into the whole segment again,
    // which serves 1 MiB (still the small pool).
    CHECK(r.upstream_allocs == 1);
    CHECK(r.peak_reserved == 2 * MiB);
    CHECK(out.detail("allocated_bytes.all.peak") == MiB);
    CHECK(r.hits == 2);
}

TEST_CASE("torch-caching: large pool segment sizes and the split rule") {
    SUBCASE("1-10 MiB requests get a 20 MiB segment; the rest is split off") {
        const auto out = run_strategy("torch-caching", {A(1, 5 * MiB), A(2, 15 * MiB + 1)});
        // Request 2 rounds to 15 MiB + 512, larger than the 15 MiB remainder:
        // a new segment of 15 MiB + 512 rounded up to 2 MiB = 16 MiB.
        CHECK(out.result.upstream_allocs == 2);
        CHECK(out.result.peak_reserved == 36 * MiB);
    }
    SUBCASE("a remainder of 1 MiB or less is not split off in the large pool") {
        const auto out = run_strategy("torch-caching", {A(1, 19 * MiB + 512 * KiB), F(1), A(2, MiB + 1)});
        CHECK(out.result.upstream_allocs == 1);  // request 2 reuses the cached 20 MiB block, split
        CHECK(out.detail("allocated_bytes.all.peak") == 20 * MiB);  // request 1 held the whole segment
    }
    SUBCASE("blocks are per stream") {
        const auto out = run_strategy("torch-caching", {A(1, 1000, rs::kNoTag, 0), F(1), A(2, 1000, rs::kNoTag, 5)});
        CHECK(out.result.upstream_allocs == 2);
    }
}

TEST_CASE("torch-caching: on a refused cudaMalloc, free cached segments and retry") {
    SUBCASE("retry succeeds") {
        const auto out = run_strategy("torch-caching", {A(1, 30 * MiB), F(1), A(2, 32 * MiB)}, {}, 40 * MiB);
        const auto& r = out.result;
        CHECK(r.upstream_allocs == 2);
        CHECK(r.upstream_frees == 1);  // the cached 30 MiB segment
        CHECK(r.retries == 1);
        CHECK(r.ooms == 0);
        CHECK(r.peak_reserved == 32 * MiB);
    }
    SUBCASE("nothing to free: out of memory") {
        const auto out = run_strategy("torch-caching", {A(1, 30 * MiB), A(2, 30 * MiB)}, {}, 40 * MiB);
        CHECK(out.result.ooms == 1);
        CHECK(out.result.retries == 1);
        CHECK(out.detail("num_ooms") == 1);
    }
}

TEST_CASE("torch-caching: max_split_size and oversize blocks") {
    rs::StrategyOptions o;
    o.torch.max_split_size = 40 * MiB;
    SUBCASE("an oversize block never serves a request below max_split_size") {
        const auto out = run_strategy("torch-caching", {A(1, 50 * MiB), F(1), A(2, 30 * MiB), A(3, 45 * MiB)}, o);
        // Request 2 may not take the cached 50 MiB block: new 30 MiB segment.
        // Request 3 (45 MiB >= 40) may, as 50 < 45 + 20 MiB, and unsplit.
        CHECK(out.result.upstream_allocs == 2);
        CHECK(out.detail("allocated_bytes.all.peak") == 80 * MiB);
        CHECK(out.detail("oversize_allocations.peak") == 1);
    }
    SUBCASE("release_available_cached_blocks frees oversize blocks, largest first, just enough") {
        const auto out = run_strategy("torch-caching", {A(1, 50 * MiB), A(2, 44 * MiB), F(1), F(2), A(3, 60 * MiB)}, o, 100 * MiB);
        // 94 MiB cached + 60 > 100: free 50 (not enough), then 44: 94 >= 60 -> retry, not counted as a retry.
        CHECK(out.result.upstream_frees == 2);
        CHECK(out.result.retries == 0);
        CHECK(out.result.upstream_allocs == 3);
    }
    SUBCASE("not enough oversize memory: the releases stand, then every unsplit segment goes and the retry counts") {
        const auto out = run_strategy("torch-caching", {A(1, 50 * MiB), F(1), A(2, 60 * MiB)}, o, 100 * MiB);
        CHECK(out.result.upstream_frees == 1);
        CHECK(out.result.retries == 1);
        CHECK(out.result.ooms == 0);
    }
}

TEST_CASE("torch-caching: roundup_power2_divisions") {
    rs::StrategyOptions o;
    o.torch.roundup_power2_divisions.fill(4);
    const auto out = run_strategy("torch-caching", {A(1, 5 * MiB + 1), A(2, 1200)}, o);
    // 5 MiB + 1 lies in [4, 8) MiB, split in 4: rounds to 6 MiB. 1200 is not
    // above 512 x 4, so it rounds to 1536 as usual.
    CHECK(out.detail("allocated_bytes.all.peak") == 6 * MiB + 1536);
}

TEST_CASE("torch-caching: rounding of sizes") {
    rs::StrategyOptions o;
    const auto out = run_strategy("torch-caching", {A(1, 1), A(2, 513), A(3, MiB), A(4, MiB + 1)}, o);
    // 512 + 1024 + 1 MiB (small pool, one 2 MiB segment) + 1 MiB + 512 (large pool, 20 MiB segment)
    CHECK(out.detail("allocated_bytes.all.peak") == 512 + 1024 + MiB + MiB + 512);
    CHECK(out.result.peak_reserved == 2 * MiB + 20 * MiB);
    CHECK(out.detail("requested_bytes.all.peak") == 1 + 513 + MiB + MiB + 1);
}

namespace {
// The program's torch.cuda.empty_cache(), and a request the recorded allocator refused.
rs::Event E() { return rs::Event{rs::EventKind::empty_cache, 0, 0, 0, rs::kNoTag, 0}; }
rs::Event O(std::uint64_t size) { return rs::Event{rs::EventKind::oom, 0, size, 0, rs::kNoTag, 0}; }
// The recorded allocator's cudaMalloc of `size` bytes at `address`.
rs::Event SA(std::uint64_t address, std::uint64_t size) { return rs::Event{rs::EventKind::segment_alloc, address, size, 0, rs::kNoTag, 0}; }
rs::StrategyOptions expandable() {
    rs::StrategyOptions o;
    o.torch.expandable_segments = true;
    return o;
}
}  // namespace

TEST_CASE("torch-caching: roundup_power2_divisions in PyTorch's list form") {
    rs::StrategyOptions o;
    o.torch.roundup_power2_divisions = rs::parse_roundup_power2_divisions("[256:1,512:2,>:8]");
    // [256, 512) MiB: 1 division (512-byte rounding), and below it too (the
    // first entry covers smaller intervals); [512, 1024) MiB: 2; ">": every
    // interval after the last one named, 8 (as the snapshots of PyTorch 2.11
    // record it).
    const auto out = run_strategy("torch-caching", {A(1, 300 * MiB + 1), A(2, 600 * MiB + 1), A(3, 1500 * MiB), A(4, 5 * MiB + 1)}, o);
    CHECK(out.detail("allocated_bytes.all.peak") == (300 * MiB + 512) + 768 * MiB + 1536 * MiB + (5 * MiB + 512));
}

TEST_CASE("torch-caching: expandable segments map pages, one device allocation per map") {
    SUBCASE("2 MiB pages for the small pool, 20 MiB pages for the large one; a block grows into the next pages") {
        const auto out = run_strategy("torch-caching", {A(1, 1000), A(2, 1000), A(3, 3 * MiB), A(4, 18 * MiB)}, expandable());
        // 1 and 2: one small page. 3: one large page (not a 20 MiB segment
        // for it alone: the 17 MiB left is one free block). 4 does not fit the
        // 17 MiB, which grows by one more page into 37 MiB: 18 for it, 19 left.
        CHECK(out.result.counters.device_allocs == 3);
        CHECK(out.result.peak_reserved == 42 * MiB);
        CHECK(out.detail("allocated_bytes.all.peak") == 2048 + 3 * MiB + 18 * MiB);
    }
    SUBCASE("empty_cache unmaps whole free pages only, in one unmap per free block") {
        const auto out = run_strategy("torch-caching",
                                      {A(1, 1000), A(2, 1000), A(3, 3 * MiB), A(4, 18 * MiB), F(3), F(4), E()}, expandable());
        // The large segment's 40 MiB are one free block: one unmap. The small
        // page still holds 1 and 2: nothing to unmap there.
        CHECK(out.result.counters.device_frees == 1);
        CHECK(out.result.counters.reserved_bytes == 2 * MiB);
    }
    SUBCASE("partial pages stay mapped until their blocks are free") {
        const auto out = run_strategy("torch-caching", {A(1, 600 * KiB), A(2, MiB), A(3, MiB), F(1), E(), F(2), F(3), E()}, expandable());
        // 3 straddles the first page's end: a second page. At the first
        // empty_cache no free block covers a whole page; at the second the
        // merged 4 MiB block is unmapped at once.
        CHECK(out.result.counters.device_allocs == 2);
        CHECK(out.result.counters.device_frees == 1);
        CHECK(out.result.counters.reserved_bytes == 0);
    }
    SUBCASE("the memory fraction is checked against the segment a cudaMalloc would take, not the pages") {
        // 25 MiB: a 26 MiB segment fits 30 MiB; two 20 MiB pages are mapped.
        const auto out = run_strategy("torch-caching", {A(1, 25 * MiB), A(2, 10 * MiB)}, expandable(), 30 * MiB);
        CHECK(out.result.ooms == 0);
        CHECK(out.result.peak_reserved == 40 * MiB);
        CHECK(out.result.counters.device_allocs == 1);  // 2 fits the 15 MiB left
    }
    SUBCASE("a request beyond any device's memory is refused, as cuMemCreate refuses it") {
        const auto out = run_strategy("torch-caching", {A(1, std::uint64_t{1} << 50), A(2, MiB)}, expandable());
        CHECK(out.result.ooms == 1);
        CHECK(out.result.counters.device_allocs == 1);  // 2 only
    }
}

TEST_CASE("torch-caching: garbage_collection_threshold frees the oldest cached blocks, with a memory fraction only") {
    rs::StrategyOptions o;
    o.torch.garbage_collection_threshold = 0.5;
    // 30 MiB is cached at the 2nd large-pool search, 40 MiB at the 4th. At
    // the 6th, 116 MiB reserved exceed 100 MiB (0.5 x 200): ages 4 and 2,
    // average 3, so only the 30 MiB block goes, which is enough.
    const std::vector<rs::Event> trace = {A(1, 30 * MiB), A(2, 40 * MiB), F(1), A(3, 10 * MiB, rs::kNoTag, 7),
                                          A(4, 10 * MiB, rs::kNoTag, 7), F(2), A(5, 25 * MiB, rs::kNoTag, 7),
                                          A(6, 20 * MiB, rs::kNoTag, 7), A(7, 40 * MiB)};
    SUBCASE("with a fraction") {
        const auto out = run_strategy("torch-caching", trace, o, 200 * MiB);
        CHECK(out.result.counters.device_frees == 1);
        CHECK(out.result.counters.device_allocs == 6);  // 7 takes the cached 40 MiB block
        CHECK(out.result.peak_reserved == 116 * MiB);
        CHECK(out.result.retries == 0);
    }
    SUBCASE("without one, PyTorch never collects") {
        const auto out = run_strategy("torch-caching", trace, o);
        CHECK(out.result.counters.device_frees == 0);
        CHECK(out.result.peak_reserved == 136 * MiB);
    }
}

TEST_CASE("torch-caching: an empty_cache before a request is the program's, or the request's own release") {
    SUBCASE("a cached block would serve the request: the program's empty_cache") {
        const auto out = run_strategy("torch-caching", {A(1, 30 * MiB), F(1), E(), A(2, 30 * MiB)});
        CHECK(out.result.counters.device_frees == 1);
        CHECK(out.result.counters.device_allocs == 2);
        CHECK(out.result.retries == 0);
    }
    SUBCASE("a new segment would exceed the fraction: the request's own release, and its retry") {
        const auto out = run_strategy("torch-caching", {A(1, 30 * MiB), F(1), E(), A(2, 40 * MiB)}, {}, 50 * MiB);
        CHECK(out.result.counters.device_frees == 1);
        CHECK(out.result.retries == 1);
        CHECK(out.result.ooms == 0);
        CHECK(out.detail("num_sync_all_streams") == 1);
    }
    SUBCASE("before a free, and at the end of the trace, it is the program's") {
        const auto out = run_strategy("torch-caching", {A(1, 30 * MiB), A(2, 30 * MiB), F(1), E(), F(2), A(3, 2 * MiB), F(3), E()});
        // The first frees 1 but not 2 (freed after it); 3 is served from 2's
        // cached block, and the second frees that one.
        CHECK(out.result.counters.device_frees == 2);
        CHECK(out.result.counters.reserved_bytes == 0);
    }
}

TEST_CASE("torch-caching: equal-size cached blocks are taken lowest address first, the device's where recorded") {
    // Segment X (40 MiB) ends up as a free 30 MiB block beside a live 10 MiB
    // one; segment Y is a free 30 MiB block of its own. Request 5 takes the
    // one at the lower address; the empty_cache then frees Y only if it is
    // still cached.
    auto trace = [&](bool recorded) {
        std::vector<rs::Event> t;
        if (recorded) t.push_back(SA(0x2000000000, 40 * MiB));
        t.insert(t.end(), {A(1, 40 * MiB), F(1), A(2, 30 * MiB), A(3, 10 * MiB)});
        if (recorded) t.push_back(SA(0x1000000000, 30 * MiB));
        t.insert(t.end(), {A(4, 30 * MiB), F(2), F(4), A(5, 30 * MiB), E()});
        return t;
    };
    SUBCASE("without recorded addresses, in the order the segments came") {
        CHECK(run_strategy("torch-caching", trace(false)).result.counters.device_frees == 1);
    }
    SUBCASE("with the recording's, Y lies lower") {
        CHECK(run_strategy("torch-caching", trace(true)).result.counters.device_frees == 0);
    }
}

TEST_CASE("torch-caching: oversize releases leave expandable segments alone") {
    rs::StrategyOptions o = expandable();
    o.torch.max_split_size = 40 * MiB;
    // 1 maps 60 MiB (3 pages) and frees them; 2 does not fit the 80 MiB cap
    // beside them as a cudaMalloc would see it (60 + 62 > 80), and the cached
    // 60 MiB block is no oversize block to release: every page is unmapped
    // (the retry), and 2 maps 80 MiB anew.
    const auto out = run_strategy("torch-caching", {A(1, 60 * MiB), F(1), A(2, 61 * MiB)}, o, 80 * MiB);
    CHECK(out.result.retries == 1);
    CHECK(out.result.counters.device_frees == 1);
    CHECK(out.result.counters.device_allocs == 2);
    CHECK(out.result.ooms == 0);
}

TEST_CASE("torch-caching: an OOM, and the program going on after it") {
    const auto out = run_strategy("torch-caching", {A(1, 30 * MiB), O(30 * MiB), F(1), A(2, 30 * MiB)}, {}, 40 * MiB);
    // The refused request: no cached block, no room, nothing to release; the
    // retry counts, then the OOM. The program goes on: 2 takes 1's block.
    CHECK(out.result.ooms == 1);
    CHECK(out.detail("num_ooms") == 1);
    CHECK(out.result.retries == 1);
    CHECK(out.result.counters.device_allocs == 1);
    CHECK(out.result.counters.device_frees == 0);
}

TEST_CASE("torch-caching: every setting together on a random trace, with empty_caches and OOMs, gives everything back") {
    std::mt19937_64 rng(7);
    std::vector<rs::Event> trace;
    std::vector<std::uint64_t> live;
    std::uint64_t next_id = 0;
    for (int i = 0; i < 20000; ++i) {
        const auto r = rng() % 100;
        if (r < 2) {
            trace.push_back(E());
        } else if (r < 48 && !live.empty()) {
            std::swap(live[rng() % live.size()], live.back());
            trace.push_back(F(live.back()));
            live.pop_back();
        } else {
            const auto size = std::uint64_t{512} << (rng() % 18) | rng() % 4096;  // 512 B to 64 MiB
            trace.push_back(A(next_id, size, rs::kNoTag, rng() % 4));
            live.push_back(next_id++);
        }
    }
    for (const bool expandable_segments : {false, true}) {
        CAPTURE(expandable_segments);
        rs::StrategyOptions o;
        o.torch.expandable_segments = expandable_segments;
        o.torch.max_split_size = 64 * MiB;
        o.torch.garbage_collection_threshold = 0.6;
        o.torch.roundup_power2_divisions.fill(4);
        VectorSource source(trace);
        rs::Lane lane("torch-caching", std::make_unique<rs::SimulatedUpstream>(GiB, nullptr));
        lane.strategy = rs::make_strategy(rs::kStrategies.parse("torch-caching"), o, *lane.upstream);
        rs::Replay replay({&lane}, {});
        replay.run(source);
        const rs::LaneResult r = rs::summarize(lane);
        CHECK(r.ooms > 0);
        CHECK(r.peak_reserved <= GiB + (expandable_segments ? 64 * MiB : 0));
        replay.teardown();
        CHECK(lane.upstream->counters().reserved_bytes == 0);
        // A map and an unmap need not cover the same pages: only cudaMalloc'd segments pair up.
        if (!expandable_segments) CHECK(lane.upstream->counters().device_allocs == lane.upstream->counters().device_frees);
    }
}

TEST_CASE("async-pool: the driver's pool grows on demand and gives memory back at synchronizations") {
    const std::vector<rs::Event> trace = {A(1, 1000), F(1), A(2, 1000), F(2), S(), A(3, 1000), F(3), S()};
    SUBCASE("release threshold 0") {
        const auto r = run_strategy("async-pool", trace).result;
        CHECK(r.counters.async_allocs == 3);
        CHECK(r.counters.pool_grows == 2);  // request 2 reuses; after the sync the pool is empty again
        CHECK(r.counters.pool_releases == 2);
        CHECK(r.peak_reserved == 2 * MiB);
        CHECK(r.implicit_syncs == 0);
    }
    SUBCASE("release threshold keeps the memory") {
        rs::StrategyOptions o;
        o.release_threshold = 64 * MiB;
        const auto r = run_strategy("async-pool", trace, o).result;
        CHECK(r.counters.pool_grows == 1);
        CHECK(r.counters.pool_releases == 0);
        CHECK(r.hit_rate == doctest::Approx(2.0 / 3.0));
    }
}

TEST_CASE("capacity: a strategy that cannot allocate counts an OOM and the trace goes on") {
    const auto o = run_strategy("naive", {A(1, 600), A(2, 600), F(1), F(2), A(3, 600)}, {}, 1000);
    CHECK(o.result.ooms == 1);
    CHECK(o.result.requests == 3);
    CHECK(o.result.upstream_allocs == 2);
    CHECK(o.result.counters.device_alloc_failures == 1);
}

TEST_CASE("every strategy frees everything on teardown") {
    for (const auto& row : rs::kStrategies) {
        const std::string strategy(row.name);
        CAPTURE(strategy);
        VectorSource source({A(1, 1000), A(2, 5 * MiB), F(1), A(3, 300 * KiB), S(), A(4, 30 * MiB)});
        rs::Lane lane(strategy, std::make_unique<rs::SimulatedUpstream>(rs::kUnlimited, nullptr));
        rs::StrategyOptions o;
        o.ring_size = 30 * MiB;
        lane.strategy = rs::make_strategy(row.value, o, *lane.upstream);
        rs::Replay replay({&lane}, {});
        replay.run(source);
        replay.teardown();
        CHECK(lane.upstream->counters().reserved_bytes == 0);
    }
}

// Strategy's public calls count and check for every strategy (the
// non-virtual interface around do_allocate/do_deallocate/do_release_all).
TEST_CASE("every strategy: the interface counts requests, hits and refusals, and refuses a broken handle protocol") {
    for (const auto& row : rs::kStrategies) {
        const std::string strategy(row.name);
        CAPTURE(strategy);
        rs::SimulatedUpstream upstream(64 * MiB, nullptr);
        rs::StrategyOptions o;
        o.ring_size = 16 * MiB;
        o.ring_buffers = 1;  // the request after a free finds the one buffer again
        o.bins = {};         // binning: no preallocated bins, so that the 64 MiB capacity decides alone
        const auto s = rs::make_strategy(row.value, o, upstream);
        rs::Request r;
        r.handle = 0;
        r.size = MiB;
        r.slot = 1;
        REQUIRE(s->allocate(r));
        CHECK(s->holds(0));
        CHECK_THROWS_AS(s->allocate(r), std::logic_error);  // handle 0 is held
        rs::Request huge = r;
        huge.handle = 1;
        huge.size = 128 * MiB;  // beyond the capacity: refused, and never held
        CHECK_FALSE(s->allocate(huge));
        CHECK_FALSE(s->holds(1));
        CHECK_THROWS_AS(s->deallocate(1), std::logic_error);  // a refused request is never freed
        CHECK_THROWS_AS(s->release_all(), std::logic_error);  // handle 0 is still held
        s->deallocate(0);
        CHECK_FALSE(s->holds(0));
        CHECK_THROWS_AS(s->deallocate(0), std::logic_error);  // freed twice
        REQUIRE(s->allocate(r));                             // the handle is free again
        s->deallocate(0);
        const rs::StrategyCounters& c = s->counters();
        CHECK(c.requests == 3);
        CHECK(c.refusals == 1);
        CHECK(c.frees == 2);
        CHECK(c.held == 0);
        // Every strategy but naive serves the second 1 MiB from what it kept.
        CHECK(c.hits == (strategy == "naive" ? 0 : 1));
        s->release_all();
        CHECK(upstream.counters().device_reserved_bytes == 0);
    }
}
