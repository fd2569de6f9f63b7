// The kernel log gpumem check reads for xid.events: a saved one
// (--kernel-log FILE) or the live one (/dev/kmsg, klogctl), scanned line by
// line with base/xid's parser, and the clock that places /dev/kmsg's times.
// The I/O half of base/xid, which stays pure.
#pragma once

#include <cstdint>
#include <string>

#include "base/xid.hpp"

namespace gpumem {

// The largest saved kernel log --kernel-log reads: a week of a busy node's
// dmesg is a few MiB; a file beyond this is not a kernel log.
inline constexpr std::uint64_t kKernelLogMaxBytes = 256ULL << 20;
// The longest line it reads (a kernel log record is at most a few KiB).
inline constexpr std::size_t kKernelLogMaxLine = 1 << 20;
// A saved kernel log (--kernel-log FILE), checked and scanned: UsageError for
// a missing file, a directory, a FIFO or device (refused before it is
// opened), a file above kKernelLogMaxBytes (refused by its size, unread), a
// binary file (a NUL byte) or a line longer than kKernelLogMaxLine.
XidScan read_kernel_log_file(const std::string& path);
// The live kernel log: /dev/kmsg read without blocking from its first record
// (klogctl where /dev/kmsg is missing). A log that may not be read
// (dmesg_restrict, a container) gives why_unreadable, not an error.
XidScan read_live_kernel_log();
// The running machine's clock now.
XidClock xid_clock_now();

}  // namespace gpumem
