// Cost table: how long CUDA memory calls take, by size, on some device. The
// simulator turns upstream calls into modelled time with it; `alloc-test
// latency --save-costs FILE` writes one measured on a real GPU.
//
// JSON (schema_version 1):
//   {"schema_version": 1, "kind": "gpumem-cost-table", "device": "NVIDIA H200",
//    "source": "...",
//    "apis": {"device": {"alloc": [{"bytes": 4096, "median_us": 35.0}, ...],
//                        "free":  [...]},
//             "async": {...}, "async_grow": {...}, "host": {...}, "memset": {"set": [...]}}}
// APIs: device = cudaMalloc/cudaFree; async = cudaMallocAsync/cudaFreeAsync
// served from the pool; async_grow = a cudaMallocAsync the pool must get from
// the driver ("alloc") and the return of that memory at a synchronization
// ("free"); host = cudaMallocHost/cudaFreeHost; memset = cudaMemset ("set").
// Points are ascending in bytes; costs between points are interpolated
// linearly in log(bytes), beyond the ends the nearest segment is extended
// (never below zero); a single point is a constant.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpumem::reuse_sim {

struct CostPoint {
    std::uint64_t bytes = 0;
    double median_us = 0;
};

struct CostCurve {
    std::vector<CostPoint> points;  // ascending bytes
    double at(std::uint64_t bytes) const noexcept;
};

struct CostTable {
    std::string device;
    std::string source;
    std::map<std::string, std::map<std::string, CostCurve>> apis;  // api -> operation -> curve

    const CostCurve* find(const std::string& api, const std::string& operation) const noexcept;
};

inline constexpr int kCostTableSchemaVersion = 1;
inline constexpr const char* kCostTableKind = "gpumem-cost-table";

// Built-in figures measured on an NVIDIA H200 (driver 580, CUDA 13.0).
CostTable default_cost_table();

// Missing curves are taken from the built-in table; `missing` (if given)
// receives "api.operation" for each. Malformed files throw UsageError naming
// the file.
CostTable read_cost_table(const std::string& path, std::vector<std::string>* missing = nullptr);
CostTable parse_cost_table(const std::string& json_text, const std::string& name,
                           std::vector<std::string>* missing = nullptr);
// Throws Error when the file cannot be written.
void write_cost_table(const std::string& path, const CostTable& table);
std::string cost_table_to_json(const CostTable& table);

// Fast lookups for the simulator's hot path: the curves it uses, each with a
// small cache keyed by size (traces repeat the same sizes).
class CostModel {
public:
    explicit CostModel(const CostTable& table);
    CostModel(const CostModel&) = delete;  // the caches point into table_
    CostModel& operator=(const CostModel&) = delete;

    const CostTable& table() const noexcept { return table_; }

    double device_alloc(std::uint64_t bytes) const noexcept { return device_alloc_.get(bytes); }
    double device_free(std::uint64_t bytes) const noexcept { return device_free_.get(bytes); }
    double async_alloc(std::uint64_t bytes) const noexcept { return async_alloc_.get(bytes); }
    double async_free(std::uint64_t bytes) const noexcept { return async_free_.get(bytes); }
    double pool_grow(std::uint64_t bytes) const noexcept { return pool_grow_.get(bytes); }
    double pool_release(std::uint64_t bytes) const noexcept { return pool_release_.get(bytes); }
    double memset(std::uint64_t bytes) const noexcept { return memset_.get(bytes); }

private:
    class Cached {
    public:
        explicit Cached(const CostCurve* curve) : curve_(curve) {}
        double get(std::uint64_t bytes) const noexcept {
            if (!curve_) return 0;
            Entry& e = cache_[(bytes * 0x9E3779B97F4A7C15ULL) >> 56];
            if (e.bytes != bytes) {
                e.bytes = bytes;
                e.us = curve_->at(bytes);
            }
            return e.us;
        }

    private:
        struct Entry {
            std::uint64_t bytes = ~0ULL;
            double us = 0;
        };
        const CostCurve* curve_;
        mutable Entry cache_[256];
    };
    CostTable table_;  // owns the curves the caches point into
    Cached device_alloc_, device_free_, async_alloc_, async_free_, pool_grow_, pool_release_, memset_;
};

}  // namespace gpumem::reuse_sim
