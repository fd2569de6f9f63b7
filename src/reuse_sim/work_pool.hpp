// The one pool of threads of reuse-sim: tune's lanes and max-batch's
// modelled traces and probes are work items run on up to as many threads as
// the caller asks (allowed_cpu_count(), base/cpu_affinity.hpp: the cores
// this process may run on). An item that fails stops the others (no new item
// starts, and a long one may stop early through its WorkStop); the first
// error by index is the one rethrown, whatever the threads' timing.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>

namespace gpumem::reuse_sim {

// What a work item sees of the others: whether one has failed, so that a
// long item (a lane's replay, polled every few thousand events) stops too.
class WorkStop {
public:
    explicit WorkStop(const std::atomic<bool>& failed) noexcept : failed_(failed) {}
    bool requested() const noexcept { return failed_.load(); }
    // Throws, once another item has failed, a cancellation the pool does not
    // count as an error of this item's own.
    void throw_if_requested() const;

private:
    const std::atomic<bool>& failed_;
};

// Runs work(i, stop) once for every i in [0, count), in index order, on up
// to `threads` threads (at least one; no more than there are items). Once
// an item throws, no further item starts. The first error by index is
// rethrown after every thread has stopped. `progress` (may be empty) is
// called on the calling thread about ten times a second while items run.
void run_parallel(std::size_t count, unsigned threads, const std::function<void(std::size_t, const WorkStop&)>& work,
                  const std::function<void()>& progress = {});

}  // namespace gpumem::reuse_sim
