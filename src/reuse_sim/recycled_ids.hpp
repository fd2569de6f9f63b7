// Numbers handed out and returned: a returned one is handed out again before
// a new one is made, the most recently returned first. The replay's lane
// handles (so its per-handle vectors stay as small as the peak live count)
// and the workloads' allocation ids (so ids repeat as a real allocator's
// addresses do) both work this way.
#pragma once

#include <vector>

namespace gpumem::reuse_sim {

template <typename Id>
class RecycledIds {
public:
    explicit RecycledIds(Id first) noexcept : next_(first) {}
    Id take() {
        if (returned_.empty()) return next_++;
        const Id id = returned_.back();
        returned_.pop_back();
        return id;
    }
    void give_back(Id id) { returned_.push_back(id); }

private:
    std::vector<Id> returned_;
    Id next_;
};

}  // namespace gpumem::reuse_sim
