// The commands that follow the Command contract, one file each; app.cpp's
// table lists them.
#pragma once

#include <memory>

#include "command.hpp"

namespace gpumem::cli {

// Every row of the command table (modes as "alloc-test latency"), for --list.
NameListView command_list();

std::unique_ptr<Command> make_info_command();
DocumentSchema info_schema();

std::unique_ptr<Command> make_memset_command();
NameListView memset_targets();
NameListView memset_widths();
DocumentSchema memset_schema();

std::unique_ptr<Command> make_copy_command();
DocumentSchema copy_schema();

// alloc-test: one command per mode (alloc_<mode>.cpp).
std::unique_ptr<Command> make_alloc_latency_command();
DocumentSchema alloc_latency_schema();
std::unique_ptr<Command> make_alloc_max_command();
DocumentSchema alloc_max_schema();
std::unique_ptr<Command> make_alloc_fill_command();
DocumentSchema alloc_fill_schema();
std::unique_ptr<Command> make_alloc_churn_command();
DocumentSchema alloc_churn_schema();
std::unique_ptr<Command> make_alloc_hold_command();
DocumentSchema alloc_hold_schema();

std::unique_ptr<Command> make_reuse_sim_command();
DocumentSchema reuse_sim_schema();

}  // namespace gpumem::cli
