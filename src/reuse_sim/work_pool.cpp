#include "reuse_sim/work_pool.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gpumem::reuse_sim {
namespace {

// Thrown by WorkStop in the items that stop because another failed: not an
// error of their own.
struct Cancelled {};

}  // namespace

void WorkStop::throw_if_requested() const {
    if (requested()) throw Cancelled{};
}

void run_parallel(std::size_t count, unsigned threads, const std::function<void(std::size_t, const WorkStop&)>& work,
                  const std::function<void()>& progress) {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    const WorkStop stop(failed);
    std::vector<std::exception_ptr> errors(count);
    std::mutex mutex;
    std::condition_variable finished_cv;
    std::size_t finished = 0;
    auto worker = [&] {
        for (std::size_t i = next++; i < count && !failed; i = next++) {
            try {
                work(i, stop);
            } catch (const Cancelled&) {  // another item's error is the one to report
            } catch (...) {
                errors[i] = std::current_exception();
                failed = true;
            }
        }
        const std::lock_guard<std::mutex> lock(mutex);
        ++finished;
        finished_cv.notify_all();
    };
    const std::size_t workers = std::max<std::size_t>(1, std::min<std::size_t>(threads, count));
    std::vector<std::thread> pool;
    pool.reserve(workers);
    for (std::size_t w = 0; w < workers; ++w) pool.emplace_back(worker);
    {
        std::unique_lock<std::mutex> lock(mutex);
        while (!finished_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished == workers; }))
            if (progress) {
                lock.unlock();
                progress();
                lock.lock();
            }
    }
    for (std::thread& t : pool) t.join();
    for (const std::exception_ptr& error : errors)
        if (error) std::rethrow_exception(error);
}

}  // namespace gpumem::reuse_sim
