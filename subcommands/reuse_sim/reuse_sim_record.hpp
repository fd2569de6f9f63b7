// gpumem reuse-sim record -o FILE -- CMD: runs the program under the
// recording hook (record_run.hpp) and says on stderr what it wrote, passing
// the program's exit status on; nothing is replayed. Its options, check(),
// execute() and report are in reuse_sim_record.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/record_plan.hpp"
#include "cli/command.hpp"
#include "reuse_sim/record_run.hpp"

namespace gpumem::cli {

struct RecordRequest {
    RecordSettings settings;            // -o FILE, the cap, --max-entries, --python-stacks
    std::vector<std::string> command;   // the program, after --
    std::vector<std::string> warnings;  // a bare capacity
};

struct RecordResults {
    std::optional<ChildRun> run;  // once the program ended
};

void execute_record(const RecordRequest& q, RecordResults& r, Session& session);
// The command and the warnings: what record writes goes to stderr as it runs.
Report record_report(const RecordRequest& q, const RecordResults& r, const OutputOptions& output);
// The document's keys (the job's CommandDefinition::schema).
DocumentSchema record_document_schema();

}  // namespace gpumem::cli
