// The deep memory tests of `check --level long`: the memtest86 set that
// cuda_memtest and DCGM's memtest plugin run (base/memtest_plan.hpp has the
// table and what each test writes and checks), over memory allocated in
// pieces so that most of free memory can be covered. No CLI and no printing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/memtest_plan.hpp"
#include "bench/alloc_modes.hpp"

namespace gpumem {

struct MemtestOptions {
    std::uint64_t bytes = 0;            // memory to test, rounded down to kMemtestAlignBytes (at least kMemtestMinBytes)
    std::vector<MemtestKind> tests;     // run in this order
    std::uint64_t seed = 1;             // the random words (inversions-random, modulo-20)
    unsigned iterations = 1;            // passes of each test, each with other words (memtest_phases)
    std::uint64_t chunk = 1ULL << 30;   // allocation piece, rounded down to kMemtestAlignBytes
    // For tests only: before the first checking phase of each test's first
    // iteration, invert the word at this byte offset of the tested memory
    // (rounded down to a word; taken modulo the tested bytes), so that the
    // check must report it. modulo-20 checks only words whose index is a
    // multiple of 20 in its first check: use a multiple of 160 bytes.
    std::optional<std::uint64_t> inject_fault_at;
};

// A word that read back wrong.
struct BadWord {
    std::uint64_t address = 0;  // device virtual address
    std::uint64_t offset = 0;   // bytes from the start of the tested memory, its pieces laid end to end
    std::size_t chunk = 0;      // the piece it lies in
    std::uint64_t expected = 0, actual = 0;
};

struct MemtestTestResult {
    MemtestKind test = MemtestKind::walking_bit;
    std::uint64_t bytes = 0;           // memory tested
    std::uint64_t traffic = 0;         // bytes its kernels read plus wrote
    std::uint64_t mismatches = 0;      // bad words over all its checks and iterations
    std::optional<BadWord> first_bad;  // the lowest-addressed of them
    unsigned iterations = 0;           // iterations completed
    bool complete = false;             // false: stopped part way
    double seconds = 0;                // CUDA events around its kernels
    double bandwidth = 0;              // traffic / seconds, bytes per second
};

struct MemtestResult : OnDevice {
    using OnDevice::OnDevice;
    std::uint64_t free_before = 0;  // cudaMemGetInfo before allocating
    std::uint64_t bytes = 0;        // memory tested
    std::size_t chunks = 0;
    double alloc_seconds = 0;
    double seconds = 0;                   // wall clock of the tests, allocation excluded
    std::vector<MemtestTestResult> tests;  // those run, in order; the last one incomplete when stopped
    bool stopped = false;                 // the StopToken ended the run early

    std::uint64_t mismatches() const noexcept;
};

// Upper bound on the bytes a run moves between two waits for the GPU: the
// StopToken is looked at before each launch, and this bounds the work still
// queued then (16 GiB is ~4 ms on an H200 and ~0.2 s at 100 GB/s).
inline constexpr std::uint64_t kMemtestSliceTraffic = 16ULL << 30;

// Allocates options.bytes on `device` in pieces (PartialAllocationError
// when it cannot; a stop while allocating throws as allocate_chunks does),
// runs the tests and frees everything on every path. Once testing, a stop
// ends the run between two launches: it returns what was done with
// `stopped` set instead of throwing. Progress: the test's name, phases
// done, phases in all. Throws UsageError when bytes is below
// kMemtestMinBytes or no test or iteration is asked for (check() should
// have refused these).
MemtestResult run_memtest(DeviceId device, const MemtestOptions& options, const StopToken& stop,
                          const ProgressFn& progress = {});

}  // namespace gpumem
