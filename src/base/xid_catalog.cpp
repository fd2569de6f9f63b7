// The Xid catalog: every code of NVIDIA's Xid catalog for Ampere and newer
// GPUs with its mnemonic, description and "Immediate Action", and the one
// rule (kXidActions) that turns an action into gpumem's verdict and
// remediation. Pure data and lookups: no I/O.
//
// Source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog"
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), whose
// spreadsheet leptonai/gpud generates into
// components/accelerator/nvidia/xid/catalog_generated.go (read at commit
// b9842de2, 2025-11-12). tests/fixtures/xid/catalog.tsv keeps those facts and
// tests/test_xid.cpp compares every row with it.
#include <algorithm>
#include <iterator>

#include "base/xid.hpp"

namespace gpumem {
namespace {

using A = XidAction;
using S = XidSeverity;
using R = Remediation;

// The rule. RESTART_APP and IGNORE: the fault is the application's, or it
// was corrected: the GPU serves the next job, so the event is reported and
// passes. The node's own faults fail with what the action asks for. The
// actions that ask a person to look without naming a repair warn, drain.
constexpr XidActionRow kXidActions[] = {
    {A::restart_app, "RESTART_APP", {S::info, R::none}, "restart the application: not a node fault"},
    {A::ignore, "IGNORE", {S::info, R::none}, "nothing to do: not a node fault"},
    {A::reset_gpu, "RESET_GPU", {S::critical, R::reset_gpu}, "reset the GPU"},
    {A::restart_bm, "RESTART_BM", {S::critical, R::reboot}, "restart the bare-metal node"},
    {A::restart_vm, "RESTART_VM", {S::critical, R::reboot}, "restart the virtual machine (the node, as it sees itself)"},
    {A::contact_support, "CONTACT_SUPPORT", {S::critical, R::service}, "contact NVIDIA support: send for service"},
    {A::check_mechanicals, "CHECK_MECHANICALS", {S::critical, R::service}, "check the board's power connection: a hands-on repair"},
    {A::update_swfw, "UPDATE_SWFW", {S::warn, R::drain}, "update the driver or firmware: drain for the update"},
    {A::check_uvm, "CHECK_UVM", {S::warn, R::drain}, "check the unified memory driver (nvidia-uvm): drain while a person looks"},
    // Xid 45 follows other errors (its workflow: judged by the Xid it comes
    // with) or a process that was killed: no fault of its own.
    {A::workflow_xid_45, "WORKFLOW_XID_45", {S::info, R::none}, "its workflow: judged by the Xids it follows"},
    // Xid 48, a double-bit ECC error: reset the GPU so that the row is
    // remapped; a remap that fails is nvml.row_remap's (service).
    {A::workflow_xid_48, "WORKFLOW_XID_48", {S::critical, R::reset_gpu}, "its workflow: reset the GPU to remap the row"},
    {A::workflow_nvlink_err, "WORKFLOW_NVLINK_ERR", {S::critical, R::reset_gpu}, "its workflow: reset the GPU to retrain the link"},
    // Xid 144-150 (NVLink 5): the decode table asks for a reset for the
    // fatal error statuses and nothing for the others; gpumem does not
    // decode the status, so it warns with the reset the fatal ones need.
    {A::workflow_nvlink5_err, "WORKFLOW_NVLINK5_ERR", {S::warn, R::reset_gpu},
     "its workflow decodes the error status: reset the GPU for a fatal one, nothing for the others"},
    // Judged by the recovery action its line names (xid_event_severity);
    // this is what a line naming no known action gets.
    {A::xid_154, "XID_154", {S::warn, R::drain}, "by the recovery action the line names"},
    {A::none, "", {S::warn, R::drain}, "the catalog names no action yet: drain while a person looks"},
};

constexpr XidCode kXidCatalog[] = {
    {1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "Unused", A::contact_support},
    {2, "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD", "Unused", A::contact_support},
    {3, "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD", "Unused", A::contact_support},
    {4, "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY", "Unused", A::contact_support},
    {5, "ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW", "Unused", A::contact_support},
    {6, "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR", "Unused", A::contact_support},
    {7, "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR", "Unused", A::contact_support},
    {8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", A::restart_app},
    {9, "ROBUST_CHANNEL_GR_ERROR_INSTANCE", "Unused", A::contact_support},
    {10, "ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP", "Unused", A::contact_support},
    {11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream", A::restart_app},
    {12, "ROBUST_CHANNEL_GR_ERROR_SW_METHOD", "Unused", A::contact_support},
    {13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", "Graphics Engine Exception", A::restart_app},
    {14, "ROBUST_CHANNEL_FAKE_ERROR", "Unused", A::ignore},
    {15, "ROBUST_CHANNEL_SCANLINE_TIMEOUT", "Unused", A::contact_support},
    {16, "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT", "Unused", A::contact_support},
    {17, "ROBUST_CHANNEL_PARAMETER_ERROR", "Unused", A::contact_support},
    {18, "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR", "Unused", A::contact_support},
    {19, "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER", "Unused", A::contact_support},
    {20, "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD", "Unused", A::contact_support},
    {21, "ROBUST_CHANNEL_ME_ERROR_SW_METHOD", "Unused", A::contact_support},
    {22, "ROBUST_CHANNEL_VP_ERROR_SW_METHOD", "Unused", A::contact_support},
    {23, "ROBUST_CHANNEL_RC_LOGGING_ENABLED", "Unused", A::contact_support},
    {24, "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT", "Unused", A::contact_support},
    {25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream", A::restart_app},
    {26, "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT", "Unused", A::contact_support},
    {27, "ROBUST_CHANNEL_VP_ERROR", "Unused", A::contact_support},
    {28, "ROBUST_CHANNEL_VP2_ERROR", "Unused", A::contact_support},
    {29, "ROBUST_CHANNEL_BSP_ERROR", "Unused", A::contact_support},
    {30, "ROBUST_CHANNEL_BAD_ADDR_ACCESS", "Unused", A::contact_support},
    {31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", A::restart_app},
    {32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", A::restart_app},
    {33, "ROBUST_CHANNEL_SEC_ERROR", "Unused", A::contact_support},
    {34, "ROBUST_CHANNEL_MSVLD_ERROR", "Unused", A::contact_support},
    {35, "ROBUST_CHANNEL_MSPDEC_ERROR", "Unused", A::contact_support},
    {36, "ROBUST_CHANNEL_MSPPP_ERROR", "Unused", A::contact_support},
    {37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", A::ignore},
    {38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", A::ignore},
    {39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", A::restart_app},
    {40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", A::restart_app},
    {41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", A::restart_app},
    {42, "ROBUST_CHANNEL_VIC_ERROR", "Unused", A::contact_support},
    {43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", A::ignore},
    {44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch", A::ignore},
    {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda applications and hitting a DBE", A::workflow_xid_45},
    {46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", A::reset_gpu},
    {47, "ROBUST_CHANNEL_NVENC0_ERROR", "Unused", A::contact_support},
    {48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", A::workflow_xid_48},
    {49, "SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY", "Unused", A::contact_support},
    {50, "SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR", "Unused", A::contact_support},
    {51, "SILENT_RUNNING_STRESS_TEST_FAILURE", "Unused", A::contact_support},
    {52, "SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE", "Unused", A::contact_support},
    {53, "SILENT_RUNNING_TEMP_REDUCED_CLOCKING", "Unused", A::contact_support},
    {54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board", A::check_mechanicals},
    {55, "SILENT_RUNNING_TEMPERATURE_READ_ERROR", "Unused", A::contact_support},
    {56, "DISPLAY_CHANNEL_EXCEPTION", "Unused", A::contact_support},
    {57, "FB_LINK_TRAINING_FAILURE_ERROR", "Unused", A::contact_support},
    {58, "FB_MEMORY_ERROR", "Unused", A::contact_support},
    {59, "PMU_ERROR", "Unused", A::contact_support},
    {60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", A::restart_app},
    {61, "PMU_BREAKPOINT", "Unused", A::contact_support},
    {62, "PMU_HALT_ERROR", "Internal micro-controller halt (newer drivers)", A::reset_gpu},
    {63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", A::ignore},
    {64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", A::reset_gpu},
    {65, "ROBUST_CHANNEL_NVENC1_ERROR", "Unused", A::contact_support},
    {66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", A::ignore},
    {67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", A::ignore},
    {68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", A::restart_app},
    {69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", A::restart_app},
    {70, "ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error", A::restart_app},
    {71, "ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error", A::restart_app},
    {72, "ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error", A::restart_app},
    {73, "ROBUST_CHANNEL_NVENC2_ERROR", "Unused", A::contact_support},
    {74, "NVLINK_ERROR", "NVLINK Error", A::workflow_nvlink_err},
    {75, "ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error", A::restart_app},
    {76, "ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error", A::restart_app},
    {77, "ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error", A::restart_app},
    {78, "VGPU_START_ERROR", "vGPU Start Error", A::update_swfw},
    {79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", A::restart_bm},
    {80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", A::restart_app},
    {81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", "Unused", A::contact_support},
    {82, "ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error", A::restart_app},
    {83, "ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error", A::restart_app},
    {84, "ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error", A::restart_app},
    {85, "ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error", A::restart_app},
    {86, "ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception", A::restart_app},
    {87, "NVTELEMETRY_DRIVER_REPORT", "Unused", A::contact_support},
    {88, "ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error", A::restart_app},
    {89, "ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error", A::restart_app},
    {90, "LTC_ERROR", "Unused", A::contact_support},
    {91, "RESERVED_XID", "Unused", A::contact_support},
    {92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", A::ignore},
    {93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit", A::ignore},
    {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", A::restart_app},
    {95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", A::reset_gpu},
    {96, "ROBUST_CHANNEL_NVDEC5_ERROR", "NVDEC5 Error", A::restart_app},
    {97, "ROBUST_CHANNEL_NVDEC6_ERROR", "NVDEC6 Error", A::restart_app},
    {98, "ROBUST_CHANNEL_NVDEC7_ERROR", "NVDEC7 Error", A::restart_app},
    {99, "ROBUST_CHANNEL_NVJPG1_ERROR", "NVJPG1 Error", A::restart_app},
    {100, "ROBUST_CHANNEL_NVJPG2_ERROR", "NVJPG2 Error", A::restart_app},
    {101, "ROBUST_CHANNEL_NVJPG3_ERROR", "NVJPG3 Error", A::restart_app},
    {102, "ROBUST_CHANNEL_NVJPG4_ERROR", "NVJPG4 Error", A::restart_app},
    {103, "ROBUST_CHANNEL_NVJPG5_ERROR", "NVJPG5 Error", A::restart_app},
    {104, "ROBUST_CHANNEL_NVJPG6_ERROR", "NVJPG6 Error", A::restart_app},
    {105, "ROBUST_CHANNEL_NVJPG7_ERROR", "NVJPG7 Error", A::restart_app},
    {106, "SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", A::ignore},
    {107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", A::ignore},
    {108, "NVLINK_REMOTE_TRANSLATION_ERROR", "Unused", A::ignore},
    {109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", A::reset_gpu},
    {110, "SEC_FAULT_ERROR", "Security Fault Error", A::reset_gpu},
    {111, "BUNDLE_ERROR_EVENT", "Unused", A::contact_support},
    {112, "DISP_SUPERVISOR_ERROR", "Unused", A::contact_support},
    {113, "DP_LT_FAILURE", "Unused", A::contact_support},
    {114, "HEAD_RG_UNDERFLOW", "Unused", A::contact_support},
    {115, "CORE_CHANNEL_REGS", "Unused", A::contact_support},
    {116, "WINDOW_CHANNEL_REGS", "Unused", A::contact_support},
    {117, "CURSOR_CHANNEL_REGS", "Unused", A::contact_support},
    {118, "HEAD_REGS", "Unused", A::contact_support},
    {119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", A::reset_gpu},
    {120, "GSP_ERROR", "GSP Error", A::reset_gpu},
    {121, "C2C_ERROR", "C2C Error", A::ignore},
    {122, "SPI_PMU_RPC_READ_FAIL", "Unused", A::contact_support},
    {123, "SPI_PMU_RPC_WRITE_FAIL", "Unused", A::contact_support},
    {124, "SPI_PMU_RPC_ERASE_FAIL", "Unused", A::contact_support},
    {125, "INFOROM_FS_ERROR", "Unused", A::contact_support},
    {126, "ROBUST_CHANNEL_CE10_ERROR", "CE10: Unknown Error", A::restart_app},
    {127, "ROBUST_CHANNEL_CE11_ERROR", "CE11: Unknown Error", A::restart_app},
    {128, "ROBUST_CHANNEL_CE12_ERROR", "CE12: Unknown Error", A::restart_app},
    {129, "ROBUST_CHANNEL_CE13_ERROR", "CE13: Unknown Error", A::restart_app},
    {130, "ROBUST_CHANNEL_CE14_ERROR", "CE14: Unknown Error", A::restart_app},
    {131, "ROBUST_CHANNEL_CE15_ERROR", "CE15: Unknown Error", A::restart_app},
    {132, "ROBUST_CHANNEL_CE16_ERROR", "CE16: Unknown Error", A::restart_app},
    {133, "ROBUST_CHANNEL_CE17_ERROR", "CE17: Unknown Error", A::restart_app},
    {134, "ROBUST_CHANNEL_CE18_ERROR", "CE18: Unknown Error", A::restart_app},
    {135, "ROBUST_CHANNEL_CE19_ERROR", "CE19: Unknown Error", A::restart_app},
    {136, "ALI_TRAINING_FAIL", "Link Training Failed", A::reset_gpu},
    {137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", A::ignore},
    {138, "ROBUST_CHANNEL_DLA_ERROR", "Unused", A::contact_support},
    {139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", A::restart_app},
    {140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", A::reset_gpu},
    {141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", A::ignore},
    {142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", A::contact_support},
    {143, "GPU_INIT_ERROR", "GPU Initialization Error", A::reset_gpu},
    {144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", A::workflow_nvlink5_err},
    {145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", A::workflow_nvlink5_err},
    {146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", A::workflow_nvlink5_err},
    {147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", A::workflow_nvlink5_err},
    {148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", A::workflow_nvlink5_err},
    {149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", A::workflow_nvlink5_err},
    {150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", A::workflow_nvlink5_err},
    {151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", A::restart_vm},
    {152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", A::ignore},
    {153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", A::ignore},
    {154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", A::xid_154},
    {155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", A::reset_gpu},
    {156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", A::reset_gpu},
    {157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", A::ignore},
    {158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", A::reset_gpu},
    {159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error", A::check_uvm},
    {160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", A::ignore},
    {161, "CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", A::ignore},
    {162, "PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", A::none,
     {S::info, R::none},
     "the catalog leaves the action empty; the power smoothing circuit came back: the recovery, not a fault"},
    {163, "PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged", A::none},
    {164, "PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached", A::none},
    {165, "PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted", A::none},
    {166, "NVLINK_SECURE_CRYPTO_ERR", "CC traffic seen prior to link properly being configured for encrypted traffic", A::none},
    {167, "PCIE_FATAL_TIMEOUT", "PCIE_FATAL_TIMEOUT", A::none},
    {168, "REDUCED_GPU_MEMORY_CAPACITY", "Errors found in WPR (write protected region)", A::none},
    {169, "SEC2_HALT_ERROR", "Internal micro-controller halt", A::none},
    {170, "NVLINK_SECURE_OTHER", "Interrupt seen in CC mode", A::none},
    {171, "UNCORRECTABLE_DRAM_ERROR", "Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM", A::none,
     {S::critical, R::reset_gpu},
     "the catalog leaves the action empty; it details an Xid 48 (uncorrectable DRAM error): judged as Xid 48's workflow"},
    {172, "UNCORRECTABLE_SRAM_ERROR", "Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM", A::none,
     {S::critical, R::reset_gpu},
     "the catalog leaves the action empty; it details an Xid 48 (uncorrectable SRAM error): judged as Xid 48's workflow"},
};

}  // namespace

const std::vector<XidActionRow>& xid_actions() {
    static const std::vector<XidActionRow> rows(std::begin(kXidActions), std::end(kXidActions));
    return rows;
}

const XidActionRow& xid_action_row(XidAction action) noexcept {
    for (const XidActionRow& row : kXidActions)
        if (row.action == action) return row;
    return kXidActions[std::size(kXidActions) - 1];  // none; every action has a row (tested)
}

XidJudgement xid_judgement(const XidCode& row) noexcept {
    return row.why_departs.empty() ? xid_action_row(row.action).judgement : row.departure;
}

const std::vector<XidCode>& xid_catalog() {
    static const std::vector<XidCode> rows(std::begin(kXidCatalog), std::end(kXidCatalog));
    return rows;
}

const XidCode* xid_code(unsigned code) noexcept {
    const XidCode* end = std::end(kXidCatalog);
    const XidCode* it = std::lower_bound(std::begin(kXidCatalog), end, code, [](const XidCode& c, unsigned v) { return c.code < v; });
    return it != end && it->code == code ? it : nullptr;
}

}  // namespace gpumem
