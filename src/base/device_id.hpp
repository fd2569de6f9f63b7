// A CUDA device ordinal: the number cudaSetDevice takes, counted the way this
// process sees devices (after CUDA_VISIBLE_DEVICES). A type of its own so that
// an ordinal is not confused with an NVML index, a count or a position in a
// list, and so that "no device" is an empty std::optional instead of -1.
#pragma once

#include <string>

namespace gpumem {

class DeviceId {
public:
    // Not checked here: the CUDA runtime (or MixMemory) refuses an ordinal
    // that names no device, with a message that says so.
    constexpr explicit DeviceId(int ordinal) noexcept : ordinal_(ordinal) {}

    constexpr int ordinal() const noexcept { return ordinal_; }

    friend constexpr bool operator==(DeviceId a, DeviceId b) noexcept { return a.ordinal_ == b.ordinal_; }
    friend constexpr bool operator!=(DeviceId a, DeviceId b) noexcept { return a.ordinal_ != b.ordinal_; }
    friend constexpr bool operator<(DeviceId a, DeviceId b) noexcept { return a.ordinal_ < b.ordinal_; }

private:
    int ordinal_;
};

// "3": the ordinal as messages and CUDA_VISIBLE_DEVICES write it.
inline std::string to_string(DeviceId id) { return std::to_string(id.ordinal()); }

}  // namespace gpumem
