// The rows of gpumem check's table (kChecks), constexpr so that src/bench
// binds each row to what runs it at compile time: a row of this table with
// no judge or device step there is a compile error (static_assert in
// bench/check_health.cpp and bench/check_engine.cpp), not a test failure.
// Only the files that bind or test the rows include this header; everything
// else reads kChecks (base/check_plan.hpp).
#pragma once

#include <stdexcept>
#include <string_view>

#include "base/check_plan.hpp"

namespace gpumem {
namespace check_table_detail {

using C = Comparison;
using L = CheckLevel;
using R = ThresholdRule;
using V = Verdict;
using X = Remediation;

// The default fractions: each passes a healthy H100 and H200 with room to
// spare (bench/results: memset 95% of peak, a d2d copy 87% of half the peak,
// pinned h2d and d2h 88% of a Gen5 x16 link's rate on an H200). Host copies
// are judged by their best sample at 60%: on the lent H100 machines the
// median of a run swung between 42% and 87% of the link's rate from one
// run to the next (other tenants on the host's memory and links), while a
// link one generation or half its width down cannot pass 50% at all.
inline constexpr Named<CheckKind> kCheckRows[] = {
    {"nvml.ecc.mode", {"bool", C::equal, L::quick, V::warn, 0, R::unsettable, 1, "1: ECC on, and on after the next reboot", false, X::reset_gpu, "NVML nvmlDeviceGetEccMode"},
     "ECC mode (1 on, 0 off); warns when off or when a change waits for a reboot"},
    {"nvml.ecc.uncorrected.volatile", {"count", C::at_most, L::quick, V::fail, 0, R::fixed, 0, "0", false, X::reset_gpu, "NVML nvmlDeviceGetTotalEccErrors (volatile)"},
     "uncorrected ECC errors since the driver loaded: any fails"},
    {"nvml.ecc.uncorrected.aggregate", {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::none, "NVML nvmlDeviceGetTotalEccErrors (aggregate)"},
     "uncorrected ECC errors over the GPU's life: any warns"},
    {"nvml.ecc.corrected.volatile", {"count", C::at_most, L::quick, V::warn, 0, R::none, 0, "reported only, no default threshold", false, X::none, "NVML nvmlDeviceGetTotalEccErrors (volatile)"},
     "corrected ECC errors since the driver loaded; warns above a --threshold"},
    {"nvml.ecc.corrected.aggregate", {"count", C::at_most, L::quick, V::warn, 0, R::none, 0, "reported only, no default threshold", false, X::none, "NVML nvmlDeviceGetTotalEccErrors (aggregate)"},
     "corrected ECC errors over the GPU's life; warns above a --threshold"},
    {"nvml.remapped_rows.correctable", {"count", C::at_most, L::quick, V::warn, 0, R::none, 0, "reported only, no default threshold", false, X::none, "NVML nvmlDeviceGetRemappedRows"},
     "rows remapped for correctable errors (Ampere and newer); warns above a --threshold"},
    {"nvml.remapped_rows.uncorrectable", {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::none, "NVML nvmlDeviceGetRemappedRows"},
     "rows remapped for uncorrectable errors (Ampere and newer): any warns"},
    {"nvml.remapped_rows.pending", {"bool", C::at_most, L::quick, V::fail, 0, R::unsettable, 0, "0: no remap waits", false, X::reset_gpu, "NVML nvmlDeviceGetRemappedRows"},
     "a row remap waits for a GPU reset: fails"},
    {"nvml.remapped_rows.failure", {"bool", C::at_most, L::quick, V::fail, 0, R::unsettable, 0, "0: no remap failed", false, X::service, "NVML nvmlDeviceGetRemappedRows"},
     "a row remap failed, the GPU needs service: fails"},
    {"nvml.retired_pages.sbe", {"count", C::at_most, L::quick, V::warn, 0, R::none, 0, "reported only, no default threshold", false, X::none, "NVML nvmlDeviceGetRetiredPages"},
     "pages retired for single-bit errors (before Ampere); warns above a --threshold"},
    {"nvml.retired_pages.dbe", {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::none, "NVML nvmlDeviceGetRetiredPages"},
     "pages retired for double-bit errors (before Ampere): any warns"},
    {"nvml.retired_pages.pending", {"bool", C::at_most, L::quick, V::fail, 0, R::unsettable, 0, "0: no retirement waits", false, X::reboot, "NVML nvmlDeviceGetRetiredPagesPendingStatus"},
     "a page retirement waits for a reboot: fails"},
    {"nvml.pcie.link", {"lanes", C::at_least, L::quick, V::warn, 0, R::maximum, 0, "the link's maximum width", false, X::drain, "NVML nvmlDeviceGetCurrPcieLinkWidth, nvmlDeviceGetMaxPcieLinkWidth"},
     "PCIe link width against its maximum (warns); the generation is shown, and judged by copy.h2d/d2h under load"},
    {"nvml.memory_clock",
     {"MHz", C::at_least, L::quick, V::warn, 0, R::maximum, 0, "the maximum memory clock, while a fault or limit holds it back", false, X::drain, "NVML nvmlDeviceGetClockInfo, nvmlDeviceGetMaxClockInfo (memory)"},
     "memory clock against its maximum: warns when below it with a clock event reason that means a fault or a limit"},
    {"nvml.clock_event_reasons",
     {"count", C::at_most, L::quick, V::fail, 0, R::fixed, 0, "0 fault reasons (SW thermal slowdown warns)", false, X::drain,
      "NVML nvmlDeviceGetCurrentClocksEventReasons"},
     "clock event reasons, each classified: HW slowdown, HW thermal slowdown and HW power brake fail; SW thermal slowdown "
     "and reasons this build does not know warn; idle, application and display clocks, SW power cap and sync boost pass"},
    {"nvml.processes", {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::none, "NVML nvmlDeviceGetComputeRunningProcesses"},
     "other processes holding memory on the GPU: warns, as they may disturb the results"},
    {"nvml.memory.in_use",
     {"bytes", C::at_most, L::quick, V::fail, 0, R::total_fraction, 0.01, "1% of the total memory", false, X::drain,
      "NVML nvmlDeviceGetMemoryInfo_v2 (used, beyond the driver's reserve), nvmlDeviceGetComputeRunningProcesses"},
     "memory in use beyond the driver's own reserve, read before gpumem's context, with the processes that hold it or "
     "none visible (a leak, or another container's process): fails above the threshold"},
    {"nvml.recovery_action",
     {"count", C::equal, L::quick, V::fail, 0, R::unsettable, 0, "0: none (the driver asks for no action)", false, X::reset_gpu,
      "NVML field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION; NVML_ERROR_RESET_REQUIRED from any query"},
     "the driver's own recovery action for the GPU (0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset), or "
     "NVML's \"GPU requires reset\": anything but none fails with the driver's remediation"},
    {"node.gpus",
     {"count", C::at_least, L::quick, V::fail, 0, R::none, 0, "--expect-gpus N (none by default); a GPU NVML reports lost fails", false,
      X::reboot, "NVML nvmlDeviceGetCount and device handles (NVML_ERROR_GPU_IS_LOST), CUDA_VISIBLE_DEVICES"},
     "GPUs visible on the node against --expect-gpus, and GPUs NVML reports lost (fallen off the bus): the node's, on its "
     "first GPU's row"},
    {"xid.events",
     {"count", C::at_most, L::quick, V::fail, 0, R::unsettable, 0,
      "by NVIDIA's Xid catalog: a critical code fails, others warn, unknown codes warn", false, X::drain,
      "kernel log: /dev/kmsg (klogctl where missing) or --kernel-log FILE; NVIDIA's Xid catalog (gpumem --list xids)"},
     "Xid events of the GPU in the kernel log (live, or --kernel-log FILE) since boot or --xid-since: the worst event decides "
     "the verdict and the remediation"},
    {"nvlink.links",
     {"count", C::at_least, L::quick, V::fail, 0, R::maximum, 0, "every NVLink link the GPU has, active", false, X::reset_gpu,
      "NVML nvmlDeviceGetNvLinkState, field NVML_FI_DEV_NVLINK_LINK_COUNT"},
     "active NVLink links against the links the GPU has (n/a on a PCIe-only GPU, or when no link is up at all)"},
    {"nvlink.replay_errors",
     {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 100, "100 (warns)", false, X::none,
      "NVML field NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"},
     "NVLink replays (a packet sent again) over every link since the driver loaded"},
    {"nvlink.recovery_errors",
     {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 0, "0 (warns)", false, X::reset_gpu,
      "NVML field NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"},
     "NVLink recoveries (a link retrained) over every link since the driver loaded"},
    {"nvlink.crc_errors",
     {"count", C::at_most, L::quick, V::warn, 0, R::fixed, 100, "100 (warns)", false, X::service,
      "NVML fields NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL + _CRC_DATA_ERROR_COUNT_TOTAL"},
     "NVLink CRC errors (flit and data) over every link since the driver loaded"},
    {"nvlink.fabric",
     {"bool", C::equal, L::quick, V::fail, 0, R::unsettable, 1, "1: the GPU's NVSwitch fabric registration completed with success",
      false, X::drain, "NVML nvmlDeviceGetGpuFabricInfoV (nvmlDeviceGetGpuFabricInfo where missing)"},
     "the GPU's registration with the NVSwitch fabric (HGX): completed with success passes; in progress is unknown; not "
     "started or a failed status fails (restart the fabric manager; if it does not complete, service); n/a without NVSwitch"},
    // The device work, in the order it runs. Bandwidth first: right after a
    // memtest over 90% of free memory was freed, pinned h2d copies ran at
    // half their rate for a while (26-29 GB/s against 55 on an H200 and an
    // H100, every time; d2h was unaffected), so the copies are measured
    // before the large allocations.
    {"cuda.context", {"s", C::at_most, L::standard, V::warn, 0, R::fixed, 10, "10 s (warns)", false, X::reset_gpu, "CUDA runtime (cudaSetDevice, cudaFree(0))"},
     "creating a CUDA context: fails when it cannot be created, warns when slow"},
    {"memset.bandwidth",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::peak_fraction, 0.8, "80% of NVML's peak memory bandwidth", false, X::drain, "cuMemsetD32"},
     "cuMemsetD32 bandwidth, median of samples"},
    {"copy.d2d",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::copy_fraction, 0.65,
      "65% of half NVML's peak memory bandwidth (a copy reads and writes each byte)", false, X::drain, "cudaMemcpyAsync, device to device"},
     "device to device copy bandwidth (bytes counted once), median of samples"},
    {"copy.h2d",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::pcie_fraction, 0.6,
      "60% of the PCIe link's rate (maximum generation x width)", false, X::drain, "cudaMemcpyAsync from pinned host memory"},
     "pinned host to device copy bandwidth, best of samples"},
    {"copy.d2h",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::pcie_fraction, 0.6,
      "60% of the PCIe link's rate (maximum generation x width)", false, X::drain, "cudaMemcpyAsync to pinned host memory"},
     "device to pinned host copy bandwidth, best of samples"},
    {"alloc.max", {"bytes", C::at_least, L::standard, V::fail, 0, R::free_fraction, 0.9, "90% of the free memory", false, X::drain, "cudaMalloc"},
     "the largest single cudaMalloc against the free memory"},
    {"fill.verify", {"count", C::at_most, L::standard, V::fail, 0, R::fixed, 0, "0 bad words", false, X::service, "gpumem's fill and verify kernels"},
     "patterns written over the free memory and read back: any bad word fails, with its address"},
    {"memtest", {"count", C::at_most, L::deep, V::fail, 0, R::fixed, 0, "0 bad words", false, X::service, "gpumem's memtest kernels"},
     "the memtest86 set DCGM's memtest runs (walking bit, own address, moving inversions, 8-bit and random words, block "
     "moves, modulo-20) over 90% of the free memory: any bad word fails, with its address"},
    {"p2p.A-B",
     {"GB/s", C::at_least, L::standard, V::fail, 0.05, R::pcie_fraction, 0.5,
      "50% of what connects the pair: its NVLink links (version x links, direct or through NVSwitch) where NVML reports them, "
      "else the slower PCIe link's rate", true, X::drain,
      "cudaMemcpyPeerAsync, both ways at once; NVML NVLink state, version and remote device for the reference"},
     "peer copy bandwidth from device A to B with peer access, both ways at once (n/a without peer access)"},
};

}  // namespace check_table_detail

// Every check, in the order they run and are reported; kChecks is this table.
using check_table_detail::kCheckRows;

// The row of check `id`, at compile time: a name no row has does not
// compile (the throw is not a constant expression), so a runner cannot be
// bound to a check that does not exist. At run time, use check_row.
constexpr const Named<CheckKind>* check_definition(std::string_view id) {
    for (const Named<CheckKind>& row : kCheckRows)
        if (row.name == id) return &row;
    throw std::logic_error("no check has this id");
}

}  // namespace gpumem
