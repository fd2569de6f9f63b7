// The report of `gpumem copy`, built from measured results alone (a pure
// function), so that its shape (table, JSON, CSV, charts, p2p matrices,
// notes) is tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/copy_plan.hpp"
#include "cli/chart.hpp"
#include "cli/output.hpp"
#include "cli/plot.hpp"

namespace gpumem::cli {

// Host threads pinned to the CPUs next to a device (NVML's CPU affinity).
struct PinnedCpus {
    DeviceId device;
    std::string cpus;  // "0-15,32-47"
};

// A device of the run as the plot names it, with the figures its peak
// lines come from (NVML's; each empty where NVML does not say).
struct CopyDevice {
    DeviceId id;
    std::string name;                        // "NVIDIA H200"
    std::optional<double> peak_memory_bps;   // NVML's peak memory bandwidth
    std::optional<unsigned> pcie_generation, pcie_width;  // the link's maximum
};

// What `gpumem copy` measured, appended to as each copy is measured, so a
// failure part way still reports the earlier rows.
struct CopyResults {
    std::vector<CopyResult> rows;
    std::vector<PinnedCpus> cpu_affinity;
    std::vector<CopyDevice> devices;  // --plot only: the devices measured, peers included
};

// What the report shows beyond the output options.
struct CopyReportStyle {
    bool chart = true;  // bar chart of bandwidth by size, for sweeps in table format
    ChartStyle chart_style;
    std::optional<double> expect_min_gbps;  // --expect-min, echoed in JSON
    std::optional<std::string> plot;        // --plot FILE.svg
};

// The document, from whatever `results` holds.
Report build_copy_report(const CopyResults& results, const CopyReportStyle& style, const OutputOptions& output);
// --plot's picture: median bandwidth against size (log scale), a line per
// direction (and device, peer, host memory, engine), and the reference each
// direction has where NVML gives it: the PCIe link's rate for copies over
// PCIe, half the peak memory bandwidth for a device's copy to itself.
Plot copy_sweep_plot(const CopyResults& results);
// Its keys, from the same column tables (kCopyCommand.schema).
DocumentSchema copy_document_schema();

// One line naming a result: "device 0 h2d (pinned, ce) 64 MiB".
std::string describe_copy(const CopyResult& result);

// Measured results whose median bandwidth is below `gbps` (1e9 bytes/s).
std::vector<const CopyResult*> copies_below(const std::vector<CopyResult>& results, double gbps);
// Verified results whose destination did not match the source.
std::vector<const CopyResult*> failed_verifications(const std::vector<CopyResult>& results);

// Peer copies as nvbandwidth prints them: one N x N matrix of median
// bandwidth per (direction, peer access, engine, size), the source device
// per row and the destination per column, over every device that took part.
struct P2pMatrixRow {
    DeviceId source;
    std::vector<std::optional<double>> median_bps;  // by destination, in P2pMatrix::devices order; empty: not measured
};
struct P2pMatrix {
    std::string direction;  // p2p or p2p-bidir
    bool peer_access = false;
    CopyEngine engine = CopyEngine::ce;
    std::uint64_t bytes = 0;
    std::vector<DeviceId> devices;  // rows and columns, by ordinal
    std::vector<P2pMatrixRow> rows;
};
// The matrices of the peer rows of `results`, in order of first appearance;
// none without peer rows.
std::vector<P2pMatrix> p2p_matrices(const std::vector<CopyResult>& results);
// The matrix for people: a title line, a header of destinations, a line per
// source; '-' on the diagonal and for pairs not measured. Every line of the
// grid within `columns` (the title is prose and wraps): the gap between
// columns narrows to one space, then the destinations are cut into blocks,
// each under its own header, rather than letting a line wrap out of line.
std::vector<std::string> render_p2p_matrix(const P2pMatrix& matrix, Unit unit, std::size_t columns = kTableColumns);

}  // namespace gpumem::cli
