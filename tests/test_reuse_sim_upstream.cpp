// Upstream counts every call in its public functions, around hooks that only
// perform the call: a stand-in device here, with hooks that record what
// reached them, gets the same counts the simulated device gets for the same
// calls, and a request beyond the capacity never reaches the device.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "reuse_sim_helpers.hpp"

namespace {

// Grants everything it is asked for, unless told to refuse, and logs which
// hooks ran. No pool model: pool counters stay at zero.
class RecordingUpstream final : public rs::Upstream {
public:
    RecordingUpstream(std::uint64_t capacity, const rs::CostModel* costs) : Upstream(capacity, costs) {}

    std::vector<std::string> calls;
    bool refuse = false;

private:
    bool do_allocate(std::uint64_t, std::uint32_t, std::uint64_t& address) override {
        calls.emplace_back("allocate");
        address = next_ += 1 << 21;
        return !refuse;
    }
    void do_deallocate(std::uint64_t, std::uint64_t, std::uint32_t) override { calls.emplace_back("deallocate"); }
    bool do_allocate_async(std::uint64_t, std::uint32_t, std::uint64_t& address) override {
        calls.emplace_back("allocate_async");
        address = next_ += 1 << 21;
        return !refuse;
    }
    void do_deallocate_async(std::uint64_t, std::uint64_t, std::uint32_t) override { calls.emplace_back("deallocate_async"); }
    void do_set_release_threshold(std::uint64_t) override { calls.emplace_back("threshold"); }
    void do_fill_zero(std::uint64_t, std::uint64_t) override { calls.emplace_back("fill"); }
    void do_synchronize() override { calls.emplace_back("synchronize"); }

    std::uint64_t next_ = 0;
};

// The same calls on any upstream.
void exercise(rs::Upstream& u) {
    std::uint64_t a = 0, b = 0, c = 0;
    REQUIRE(u.allocate(3000, 0, a));
    REQUIRE(u.allocate(5000, 0, b));
    CHECK_FALSE(u.allocate(10000, 0, c));  // beyond the capacity of 10000 with 8000 reserved
    u.fill_zero(a, 3000);
    u.deallocate(a, 3000, 0);
    u.synchronize();
    REQUIRE(u.allocate(4000, 0, c));
    u.deallocate(b, 5000, 0);
    u.deallocate(c, 4000, 0);
}

}  // namespace

TEST_CASE("upstream: the base class counts, the device only performs") {
    const rs::CostModel costs(rs::default_cost_table());
    RecordingUpstream recording(10000, &costs);
    rs::SimulatedUpstream simulated(10000, &costs);
    exercise(recording);
    exercise(simulated);

    // The refused request never reached the device.
    CHECK(recording.calls == std::vector<std::string>{"allocate", "allocate", "fill", "deallocate", "synchronize", "allocate",
                                                      "deallocate", "deallocate"});
    const rs::UpstreamCounters& r = recording.counters();
    const rs::UpstreamCounters& s = simulated.counters();
    CHECK(r.device_allocs == 3);
    CHECK(r.device_frees == 3);
    CHECK(r.device_alloc_failures == 1);
    CHECK(r.fills == 1);
    CHECK(r.synchronizations == 1);
    CHECK(r.peak_reserved_bytes == 9000);  // 5000 + 4000 after the 3000 went
    CHECK(r.reserved_bytes == 0);
    CHECK(r.device_reserved_bytes == 0);
    CHECK(r.modelled_us > 0);
    // Identical counts and modelled time on the simulated device.
    CHECK(s.device_allocs == r.device_allocs);
    CHECK(s.device_frees == r.device_frees);
    CHECK(s.device_alloc_failures == r.device_alloc_failures);
    CHECK(s.fills == r.fills);
    CHECK(s.synchronizations == r.synchronizations);
    CHECK(s.peak_reserved_bytes == r.peak_reserved_bytes);
    CHECK(s.modelled_us == r.modelled_us);
    CHECK(r.measured_us == 0);
}

TEST_CASE("upstream: a refusal by the device counts as a failure and reserves nothing") {
    RecordingUpstream u(rs::kUnlimited, nullptr);
    u.refuse = true;
    std::uint64_t address = 0;
    CHECK_FALSE(u.allocate(4096, 0, address));
    CHECK_FALSE(u.allocate_async(4096, 1, address));
    u.set_release_threshold(1 << 20);
    const rs::UpstreamCounters& c = u.counters();
    CHECK(c.device_alloc_failures == 1);
    CHECK(c.async_alloc_failures == 1);
    CHECK(c.device_allocs == 0);
    CHECK(c.async_allocs == 0);
    CHECK(c.reserved_bytes == 0);
    CHECK(c.modelled_us == 0);
    CHECK(u.calls == std::vector<std::string>{"allocate", "allocate_async", "threshold"});

    u.refuse = false;
    CHECK(u.allocate_async(4096, 1, address));
    u.deallocate_async(address, 4096, 1);
    CHECK(c.async_allocs == 1);
    CHECK(c.async_frees == 1);
    CHECK(c.pool_grows == 0);  // pool growth is the model's to count (or the real pool's to show)
}
