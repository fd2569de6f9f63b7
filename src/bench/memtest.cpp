#include "bench/memtest.hpp"

#include <algorithm>
#include <chrono>

#include "base/stats.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_raii.hpp"
#include "core/kernels.hpp"

namespace gpumem {

std::uint64_t MemtestResult::mismatches() const noexcept {
    std::uint64_t n = 0;
    for (const MemtestTestResult& t : tests) n += t.mismatches;
    return n;
}

namespace {

using Clock = std::chrono::steady_clock;


void check_options(const MemtestOptions& options) {
    if (memtest_round_down(options.bytes) < kMemtestMinBytes)
        throw UsageError("memtest needs at least " + std::to_string(kMemtestMinBytes) + " bytes");
    if (options.tests.empty()) throw UsageError("memtest: no test asked for");
    if (options.iterations == 0) throw UsageError("memtest: iterations must be at least 1");
}

// One run over allocated pieces: the stream, the events, the device-side
// mismatch record, and where the run stands.
class MemtestRun {
public:
    MemtestRun(DeviceId device, const MemtestOptions& options, const StopToken& stop, const ProgressFn& progress,
               const std::vector<DeviceAllocation>& pieces)
        : options_(options), stop_(stop), progress_(progress), pieces_(pieces), stream_(device), start_(device),
          end_(device), errors_buffer_(device, sizeof(MemtestErrors)) {
        std::uint64_t first = 0;
        for (const DeviceAllocation& p : pieces_) {
            spans_.push_back({first, p.size() / 8});
            first += p.size() / 8;
        }
        words_ = first;
        for (MemtestKind kind : options.tests)
            phases_total_ += memtest_phases(kind, options.seed, 0).size() * static_cast<std::uint64_t>(options.iterations);
    }

    // Runs every iteration of one test into `out`; false when stopped.
    bool run_test(MemtestKind kind, MemtestTestResult& out) {
        out.test = kind;
        out.bytes = words_ * 8;
        reset_memtest_errors(errors(), stream_.get());
        bool running = true;
        for (unsigned iteration = 0; running && iteration < options_.iterations; ++iteration) {
            const std::vector<MemtestPhase> phases = memtest_phases(kind, options_.seed, iteration);
            const std::size_t inject_before =
                iteration == 0 && options_.inject_fault_at ? first_checking_phase(phases) : phases.size();
            for (std::size_t p = 0; running && p < phases.size(); ++p) {
                if (p == inject_before) invert_word(*options_.inject_fault_at);
                running = run_phase(phases[p], out);
                if (running && progress_) progress_(memtest_name(kind), ++phases_done_, phases_total_);
            }
            if (running) ++out.iterations;
        }
        collect_errors(out);
        out.complete = running;
        out.bandwidth = out.seconds > 0 ? static_cast<double>(out.traffic) / out.seconds : 0;
        return running;
    }

private:
    MemtestErrors* errors() const { return static_cast<MemtestErrors*>(errors_buffer_.data()); }

    // Launches the phase over every piece, waiting for the GPU whenever
    // kMemtestSliceTraffic bytes are queued; false when stopped part way.
    bool run_phase(const MemtestPhase& phase, MemtestTestResult& out) {
        start_.record(stream_.get());
        std::uint64_t queued = 0;
        bool stopped = false;
        for (std::size_t i = 0; i < pieces_.size(); ++i) {
            if (stop_.stop_requested()) {
                stopped = true;
                break;
            }
            launch_memtest_phase(phase, pieces_[i].data(), spans_[i], errors(), stream_.get());
            const std::uint64_t traffic = phase_traffic_bytes(phase.op, phase.expect, spans_[i]);
            out.traffic += traffic;
            queued += traffic;
            if (queued >= kMemtestSliceTraffic) {
                stream_.synchronize();
                queued = 0;
            }
        }
        end_.record(stream_.get());
        stream_.synchronize();
        out.seconds += end_.elapsed_ms_since(start_) / 1000.0;
        return !stopped;
    }

    // The piece holding global word `index`.
    std::size_t piece_of(std::uint64_t index) const {
        const auto after = std::upper_bound(spans_.begin(), spans_.end(), index,
                                            [](std::uint64_t i, const ChunkSpan& s) { return i < s.first; });
        return static_cast<std::size_t>(after - spans_.begin()) - 1;
    }

    std::uint64_t* word_address(std::uint64_t index) const {
        const std::size_t piece = piece_of(index);
        return static_cast<std::uint64_t*>(pieces_[piece].data()) + (index - spans_[piece].first);
    }

    // The test hook: inverts the word at byte `offset` (modulo the memory).
    void invert_word(std::uint64_t offset) {
        std::uint64_t* address = word_address(offset % (words_ * 8) / 8);
        std::uint64_t word = 0;
        GPUMEM_CUDA_CALL(cudaMemcpyAsync(&word, address, sizeof word, cudaMemcpyDeviceToHost, stream_.get()));
        stream_.synchronize();
        word = ~word;
        GPUMEM_CUDA_CALL(cudaMemcpyAsync(address, &word, sizeof word, cudaMemcpyHostToDevice, stream_.get()));
        stream_.synchronize();
    }

    void collect_errors(MemtestTestResult& out) {
        MemtestErrors host{};
        GPUMEM_CUDA_CALL(cudaMemcpyAsync(&host, errors(), sizeof host, cudaMemcpyDeviceToHost, stream_.get()));
        stream_.synchronize();
        out.mismatches = host.mismatches;
        if (host.mismatches == 0 || host.first_index >= words_) return;
        BadWord bad;
        bad.chunk = piece_of(host.first_index);
        bad.offset = host.first_index * 8;
        bad.address = reinterpret_cast<std::uint64_t>(word_address(host.first_index));
        bad.expected = host.expected;
        bad.actual = host.actual;
        out.first_bad = bad;
    }

    const MemtestOptions& options_;
    const StopToken& stop_;
    const ProgressFn& progress_;
    const std::vector<DeviceAllocation>& pieces_;
    std::vector<ChunkSpan> spans_;
    std::uint64_t words_ = 0;
    std::uint64_t phases_done_ = 0, phases_total_ = 0;
    CudaStream stream_;
    CudaEvent start_, end_;
    DeviceAllocation errors_buffer_;
};

}  // namespace

MemtestResult run_memtest(DeviceId device, const MemtestOptions& options, const StopToken& stop,
                          const ProgressFn& progress) {
    check_options(options);
    ensure_context(device);
    MemtestResult result(device);
    result.free_before = device_memory_info(device).free;
    const std::uint64_t bytes = memtest_round_down(options.bytes);
    const std::uint64_t chunk = std::max(memtest_round_down(options.chunk), kMemtestAlignBytes);

    const auto t0 = Clock::now();
    const std::vector<DeviceAllocation> pieces = allocate_chunks(device, bytes, chunk, stop, progress);
    result.alloc_seconds = seconds_since(t0);
    result.chunks = pieces.size();
    result.bytes = bytes;

    MemtestRun run(device, options, stop, progress, pieces);
    const auto t1 = Clock::now();
    for (MemtestKind kind : options.tests) {
        result.tests.emplace_back();
        if (!run.run_test(kind, result.tests.back())) {
            result.stopped = true;
            break;
        }
    }
    result.seconds = seconds_since(t1);
    return result;
}

}  // namespace gpumem
