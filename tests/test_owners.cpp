// The RAII owners of CUDA resources, as far as the CPU can check them: they
// are move-only with defaulted, non-throwing moves, an empty owner frees
// nothing (no CUDA call, so this runs without a GPU), and the NullableHandle
// that lets unique_ptr own VMM handles behaves as a NullablePointer.
#include <doctest/doctest.h>

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/alloc_apis.hpp"
#include "core/cuda_raii.hpp"
#include "core/mix_memory.hpp"

using namespace gpumem;

namespace {

template <typename T>
constexpr bool move_only_nothrow = std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T> &&
                                   !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T>;

static_assert(move_only_nothrow<CudaStream>);
static_assert(move_only_nothrow<CudaEvent>);
static_assert(move_only_nothrow<DeviceAllocation>);
static_assert(move_only_nothrow<HostAllocation>);
static_assert(move_only_nothrow<MixMemory>);
static_assert(move_only_nothrow<VmmAllocation>);
static_assert(move_only_nothrow<AsyncAllocation>);
static_assert(move_only_nothrow<ApiAllocation>);
// A guard and a pool stay where they are.
static_assert(!std::is_move_constructible_v<AutoDevice>);
static_assert(!std::is_move_constructible_v<RetainingPool>);

// A deleter that counts what it is given instead of calling the driver.
struct CountingRelease {
    using pointer = NullableHandle<unsigned long long>;
    std::vector<unsigned long long>* released = nullptr;
    void operator()(pointer handle) const noexcept { released->push_back(handle.get()); }
};

}  // namespace

TEST_CASE("owners: empty owners move without any CUDA call and stay empty") {
    DeviceAllocation device;
    CHECK_FALSE(device);
    CHECK(device.size() == 0);
    CHECK_FALSE(device.device().has_value());
    DeviceAllocation moved = std::move(device);
    CHECK_FALSE(moved);
    CHECK(moved.data() == nullptr);

    HostAllocation host;
    CHECK(host.kind() == HostMemoryKind::pinned);
    CHECK(host.device_pointer() == nullptr);
    host = HostAllocation();
    CHECK_FALSE(host);

    CudaStream stream;
    CHECK(stream.get() == nullptr);  // the legacy stream, as before
    CHECK_FALSE(stream.device().has_value());

    ApiAllocation api;
    CHECK_FALSE(api);
    CHECK(api.data() == nullptr);
    CHECK(api.size() == 0);
    ApiAllocation other = std::move(api);
    CHECK_FALSE(other);

    VmmAllocation vmm;
    CHECK_FALSE(vmm);
    CHECK(vmm.data() == nullptr);
    CHECK(vmm.size() == 0);
    AsyncAllocation async;
    CHECK_FALSE(async);
}

TEST_CASE("owners: NullableHandle is a NullablePointer, and zero is a handle like any other") {
    using H = NullableHandle<unsigned long long>;
    const H none;
    const H null = nullptr;
    const unsigned long long zero_value = 0;  // (a literal 0 would be a null pointer constant)
    const H zero(zero_value);
    CHECK_FALSE(none);
    CHECK(none == nullptr);
    CHECK(nullptr == null);
    CHECK(none == null);
    CHECK(static_cast<bool>(zero));  // handle 0 is held, not null
    CHECK(zero != nullptr);
    CHECK(zero != none);
    CHECK(H(7) == H(7));
    CHECK(H(7) != H(8));

    std::vector<unsigned long long> released;
    {
        UniqueHandle<CountingRelease> a(H(zero_value), CountingRelease{&released});
        UniqueHandle<CountingRelease> b(H(5), CountingRelease{&released});
        CHECK(static_cast<bool>(a));
        b = std::move(a);  // releases 5, takes 0
        CHECK(released == std::vector<unsigned long long>{5});
        CHECK_FALSE(a);
        CHECK(b.get().get() == 0);
    }
    CHECK(released == std::vector<unsigned long long>{5, 0});
}
