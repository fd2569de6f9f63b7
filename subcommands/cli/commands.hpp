// The commands that follow the Command contract, one file each; app.cpp's
// table lists them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"

namespace gpumem::cli {

// Every row of the command table (modes as "alloc-test latency"), for --list.
NameListView command_list();
// Every command's lists (CommandDefinition::lists), in the command table's order.
std::vector<ListEntry> command_lists();
// The command table's rows in order (a group's, then its modes'): for tests
// that hold each command's --help and refusals to it.
std::vector<const CommandEntry*> command_rows();
// The formats command row `e` offers: --format's choices on its --help.
std::vector<std::string> offered_formats(const CommandEntry& e);

// Every command's definition, in its own file.
extern const CommandDefinition kInfoCommand;
extern const CommandDefinition kMemsetCommand;
extern const CommandDefinition kCopyCommand;
extern const CommandDefinition kAllocLatencyCommand;  // alloc-test: one per mode (alloc_<mode>.cpp)
extern const CommandDefinition kAllocMaxCommand;
extern const CommandDefinition kAllocFillCommand;
extern const CommandDefinition kAllocChurnCommand;
extern const CommandDefinition kAllocHoldCommand;
extern const CommandDefinition kReuseSimReplayCommand;
extern const CommandDefinition kReuseSimTuneCommand;
extern const CommandDefinition kReuseSimRecordCommand;
extern const CommandDefinition kReuseSimMaxBatchCommand;
extern const CommandDefinition kCheckCommand;
extern const CommandDefinition kReportCommand;

// info's document schema, also for its tests.
DocumentSchema info_schema();

}  // namespace gpumem::cli
