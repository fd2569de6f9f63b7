#include "reuse_sim/record_run.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "base/interrupt.hpp"
#include "base/record_plan.hpp"
#include "process/child.hpp"
#include "process/fork_server.hpp"
#include "process/temporary_directory.hpp"
#include "fork_server_source.hpp"  // generated from fork_server.py: kForkServerSource
#include "record_hook.hpp"         // generated from record_hook.py: kRecordHookSource

namespace gpumem::cli {
namespace {

namespace fs = std::filesystem;

// A private directory holding the hook as sitecustomize.py and a folder
// where each Python process leaves its status; removed with everything
// Python put there (__pycache__) when the run ends.
class HookDirectory {
public:
    HookDirectory() : dir_("record") {
        std::ofstream hook(path() + "/sitecustomize.py");
        hook << kRecordHookSource;
        hook.close();
        if (!hook || ::mkdir(status_dir().c_str(), 0700) != 0) throw Error(path() + ": cannot write the recording hook");
    }
    const std::string& path() const noexcept { return dir_.path(); }
    std::string status_dir() const { return path() + "/status"; }

private:
    process::TemporaryDirectory dir_;
};

bool starts_with(const char* entry, std::string_view prefix) { return std::string_view(entry).substr(0, prefix.size()) == prefix; }

// The program's environment: ours, PYTHONPATH led by the hook's directory,
// the hook's settings, and the style's own variables.
std::vector<std::string> child_environment(const HookDirectory& dir, const RecordSettings& s, const process::ChildOptions& style) {
    std::vector<std::string> env;
    std::string pythonpath = dir.path();
    for (char** e = environ; *e != nullptr; ++e) {
        if (starts_with(*e, "GPUMEM_RECORD_")) continue;
        if (starts_with(*e, "PYTHONPATH=")) {
            const std::string old = *e + std::strlen("PYTHONPATH=");
            if (!old.empty()) pythonpath += ":" + old;
            continue;
        }
        const std::string_view entry(*e);
        bool overridden = false;
        for (const std::string& own : style.environment)
            overridden = overridden || entry.substr(0, entry.find('=') + 1) == std::string_view(own).substr(0, own.find('=') + 1);
        if (!overridden) env.emplace_back(*e);
    }
    env.push_back("PYTHONPATH=" + pythonpath);
    env.push_back("GPUMEM_RECORD_FILE=" + s.file);
    env.push_back("GPUMEM_RECORD_STATS_FILE=" + stats_file_name(s.file));
    env.push_back("GPUMEM_RECORD_RANK_FILE=" + rank_file_name(s.file, "{rank}"));
    env.push_back("GPUMEM_RECORD_RANK_STATS_FILE=" + stats_file_name(rank_file_name(s.file, "{rank}")));
    // The second and later processes (of a rank) that use CUDA: FILE.procN.
    env.push_back("GPUMEM_RECORD_PROC_FILE=" + process_file_name(s.file, "{proc}"));
    env.push_back("GPUMEM_RECORD_PROC_STATS_FILE=" + stats_file_name(process_file_name(s.file, "{proc}")));
    env.push_back("GPUMEM_RECORD_RANK_PROC_FILE=" + process_file_name(rank_file_name(s.file, "{rank}"), "{proc}"));
    env.push_back("GPUMEM_RECORD_RANK_PROC_STATS_FILE=" + stats_file_name(process_file_name(rank_file_name(s.file, "{rank}"), "{proc}")));
    env.push_back("GPUMEM_RECORD_STATUS_DIR=" + dir.status_dir());
    env.push_back(std::string("GPUMEM_RECORD_STACKS=") + (s.python_stacks ? "1" : "0"));
    if (s.max_entries) env.push_back("GPUMEM_RECORD_MAX_ENTRIES=" + std::to_string(*s.max_entries));
    if (s.capacity) env.push_back("GPUMEM_RECORD_CAPACITY=" + std::to_string(*s.capacity));
    if (s.hold_late) env.push_back("GPUMEM_RECORD_HOLD_LATE=1");
    if (s.memory_fraction) {
        std::ostringstream f;
        f.precision(17);
        f << *s.memory_fraction;
        env.push_back("GPUMEM_RECORD_FRACTION=" + f.str());
    }
    for (const std::string& own : style.environment) env.push_back(own);
    return env;
}

RecordedProcess read_status(const fs::path& file) {
    std::ifstream in(file);
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    RecordedProcess p;
    if (!doc.is_object()) {
        p.error = file.filename().string() + ": unreadable status";
        return p;
    }
    p.pid = doc.value("pid", 0L);
    if (doc.contains("rank") && doc["rank"].is_number_unsigned()) p.rank = doc["rank"].get<unsigned>();
    p.torch_imported = doc.value("torch", false);
    if (doc.contains("torch_found") && doc["torch_found"].is_boolean()) p.torch_found = doc["torch_found"].get<bool>();
    p.cuda_used = doc.value("cuda_used", false);
    p.why = doc.value("why", std::string());
    if (doc.contains("snapshot") && doc["snapshot"].is_string()) p.snapshot = doc["snapshot"].get<std::string>();
    if (doc.contains("stats") && doc["stats"].is_string()) p.stats = doc["stats"].get<std::string>();
    p.events = doc.value("events", std::uint64_t{0});
    if (doc.contains("process") && doc["process"].is_number_unsigned()) p.order = doc["process"].get<unsigned>();
    if (doc.contains("torch_version") && doc["torch_version"].is_string()) p.torch_version = doc["torch_version"].get<std::string>();
    if (doc.contains("alloc_conf") && doc["alloc_conf"].is_string()) p.alloc_conf = doc["alloc_conf"].get<std::string>();
    if (doc.contains("cuda_alloc_conf") && doc["cuda_alloc_conf"].is_string()) p.cuda_alloc_conf = doc["cuda_alloc_conf"].get<std::string>();
    if (doc.contains("fraction_calls")) p.fraction_calls = fraction_calls_of(doc["fraction_calls"]);
    p.note = doc.value("note", std::string());
    p.error = doc.value("error", std::string());
    return p;
}

std::vector<RecordedProcess> read_statuses(const std::string& dir) {
    std::vector<RecordedProcess> processes;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error))
        if (entry.path().extension() == ".json") processes.push_back(read_status(entry.path()));
    // Each rank's processes together, in the order they claimed their files.
    std::sort(processes.begin(), processes.end(), [](const RecordedProcess& a, const RecordedProcess& b) {
        return std::make_tuple(a.rank.value_or(0), a.order.value_or(~0U), a.pid) < std::make_tuple(b.rank.value_or(0), b.order.value_or(~0U), b.pid);
    });
    return processes;
}

}  // namespace

std::vector<MemoryFractionCall> fraction_calls_of(const nlohmann::json& list) {
    std::vector<MemoryFractionCall> calls;
    if (!list.is_array()) return calls;
    for (const nlohmann::json& c : list) {
        if (!c.is_object() || !c.contains("allowed_memory_maximum") || !c["allowed_memory_maximum"].is_number_unsigned()) continue;
        MemoryFractionCall call;
        call.device = c.value("device", 0U);
        call.fraction = c.value("fraction", 1.0);
        call.allowed_memory_maximum = c["allowed_memory_maximum"].get<std::uint64_t>();
        call.device_total = c.value("device_total", std::uint64_t{0});
        call.by_gpumem = c.value("set_by", std::string()) == "gpumem";
        calls.push_back(call);
    }
    return calls;
}

namespace {

// The hook's "allocator_calls" (record_hook.py's _note_call); entries it
// cannot read are passed over (a hook newer than this gpumem).
reuse_sim::RecordedCalls allocator_calls_of(const nlohmann::json& list) {
    using Kind = reuse_sim::AllocatorCall::Kind;
    static const std::pair<const char*, Kind> kNames[] = {
        {"set_allocator_settings", Kind::settings}, {"use_mem_pool_begin", Kind::mem_pool_begin},
        {"use_mem_pool_end", Kind::mem_pool_end},   {"capture_begin", Kind::capture_begin},
        {"capture_end", Kind::capture_end},         {"pool_release", Kind::pool_release},
    };
    reuse_sim::RecordedCalls calls;
    calls.recorded = list.is_array();
    if (!calls.recorded) return calls;
    for (const nlohmann::json& c : list) {
        if (!c.is_object() || !c.contains("position") || !c["position"].is_number_unsigned() || !c.contains("call") ||
            !c["call"].is_string())
            continue;
        const std::string name = c["call"].get<std::string>();
        const auto* row = std::find_if(std::begin(kNames), std::end(kNames), [&](const auto& n) { return name == n.first; });
        if (row == std::end(kNames)) continue;
        reuse_sim::AllocatorCall call;
        call.kind = row->second;
        call.position = c["position"].get<std::uint64_t>();
        if (c.contains("settings") && c["settings"].is_string()) call.settings = c["settings"].get<std::string>();
        if (call.kind == Kind::settings && !c.contains("settings")) continue;
        if (c.contains("pool") && c["pool"].is_array() && c["pool"].size() == 2 && c["pool"][0].is_number_integer() &&
            c["pool"][1].is_number_integer())
            call.pool = {c["pool"][0].get<std::int64_t>(), c["pool"][1].get<std::int64_t>()};
        else if (call.kind != Kind::settings)
            continue;
        if (c.contains("stream") && c["stream"].is_number_integer())
            call.stream = static_cast<std::uint64_t>(c["stream"].get<std::int64_t>());
        calls.calls.push_back(std::move(call));
    }
    return calls;
}

}  // namespace

std::optional<RecordingStats> read_recording_stats(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    if (!doc.is_object() || doc.value("kind", std::string()) != "gpumem-torch-recording") return std::nullopt;
    RecordingStats stats;
    stats.path = path;
    if (doc.contains("torch_version") && doc["torch_version"].is_string()) stats.torch_version = doc["torch_version"].get<std::string>();
    const std::uint32_t device = doc.contains("device") && doc["device"].is_number_unsigned() ? doc["device"].get<std::uint32_t>() : 0;
    if (doc.contains("device_total") && doc["device_total"].is_number_unsigned() && doc["device_total"].get<std::uint64_t>() > 0)
        stats.device_total = doc["device_total"].get<std::uint64_t>();
    if (doc.contains("memory_stats") && doc["memory_stats"].is_object()) {
        const nlohmann::json& m = doc["memory_stats"];
        stats.ran_out_of_memory = m.contains("num_ooms") && m["num_ooms"].is_number_unsigned() && m["num_ooms"].get<std::uint64_t>() > 0;
    }
    if (doc.contains("process_groups") && doc["process_groups"].is_array())
        for (const nlohmann::json& b : doc["process_groups"])
            if (b.is_string()) stats.process_groups.push_back(b.get<std::string>());
    if (doc.contains("held_late") && doc["held_late"].is_array())
        for (const nlohmann::json& h : doc["held_late"])
            if (h.is_object() && h.contains("bytes") && h["bytes"].is_number_unsigned())
                stats.held_late.push_back({h.value("what", std::string()), h["bytes"].get<std::uint64_t>()});
    if (doc.contains("allocator") && doc["allocator"].is_object()) {
        const nlohmann::json& a = doc["allocator"];
        std::vector<MemoryFractionCall> calls = fraction_calls_of(a.contains("memory_fraction_calls") ? a["memory_fraction_calls"] : nlohmann::json());
        // A recording of schema 1 names gpumem's cap alone.
        if (calls.empty() && a.contains("allowed_memory_maximum") && a["allowed_memory_maximum"].is_number_unsigned()) {
            MemoryFractionCall call;
            call.device = a.value("capped_device", device);
            call.fraction = a.value("memory_fraction", 1.0);
            call.allowed_memory_maximum = a["allowed_memory_maximum"].get<std::uint64_t>();
            call.device_total = a.value("device_total", std::uint64_t{0});
            call.by_gpumem = true;
            calls.push_back(call);
        }
        stats.cap = cap_in_force(calls, device);
        auto text = [&a](const char* key) {
            return a.contains(key) && a[key].is_string() ? std::optional<std::string>(a[key].get<std::string>()) : std::nullopt;
        };
        stats.start_conf = read_alloc_conf(text("PYTORCH_ALLOC_CONF"), text("PYTORCH_CUDA_ALLOC_CONF"), stats.torch_version).value;
        if (a.contains("allocator_calls")) stats.calls = allocator_calls_of(a["allocator_calls"]);
        if (a.contains("hook_errors") && a["hook_errors"].is_array())
            for (const nlohmann::json& e : a["hook_errors"])
                if (e.is_string()) stats.hook_errors.push_back(e.get<std::string>());
        stats.calls.initial_conf = stats.start_conf;
    }
    return stats;
}

std::optional<std::string> recorded_device_name(const std::string& stats_path) {
    std::ifstream in(stats_path);
    if (!in) return std::nullopt;
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    if (!doc.is_object() || doc.value("kind", std::string()).rfind("gpumem-torch-", 0) != 0) return std::nullopt;
    if (!doc.contains("device_name") || !doc["device_name"].is_string()) return std::nullopt;
    return doc["device_name"].get<std::string>();
}

std::vector<const RecordedProcess*> ChildRun::recorded() const {
    std::vector<const RecordedProcess*> out;
    for (const RecordedProcess& p : processes)
        if (p.snapshot) out.push_back(&p);
    return out;
}

ChildRun run_recorded(const std::vector<std::string>& command, const RecordSettings& settings, const process::ChildOptions& options) {
    if (command.empty()) throw UsageError("no program to run");
    const HookDirectory dir;
    process::ChildOptions hooked = options;
    hooked.environment = child_environment(dir, settings, options);
    ChildRun run{process::run_child(command, hooked), {}, false, {}};
    run.processes = read_statuses(dir.status_dir());
    return run;
}

namespace {

// NAME's value in an environment of NAME=VALUE entries; "" where unset.
std::string value_in(const std::vector<std::string>& environment, std::string_view name) {
    for (const std::string& e : environment)
        if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') return e.substr(name.size() + 1);
    return "";
}

// Our environment with these NAME=VALUE variables over it, as a run's
// (child_environment's rule, without the hook).
std::vector<std::string> ours_with(const std::vector<std::string>& variables) {
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const std::string_view name = entry.substr(0, entry.find('=') + 1);
        if (std::none_of(variables.begin(), variables.end(), [&](const std::string& v) { return std::string_view(v).substr(0, name.size()) == name; }))
            environment.emplace_back(entry);
    }
    environment.insert(environment.end(), variables.begin(), variables.end());
    return environment;
}

bool is_python(const std::string& program) {
    const std::string name = fs::path(program).filename().string();
    return name.rfind("python", 0) == 0 && name.find_first_not_of("0123456789.", 6) == std::string::npos;
}

}  // namespace

struct RunForkServers::Server {
    Server(std::string conf, std::string cuda_conf, const std::string& python, const std::string& script, std::vector<std::string> environment)
        : alloc_conf(std::move(conf)), cuda_alloc_conf(std::move(cuda_conf)), process(kForkServerSource, python, script, std::move(environment)) {}
    std::string alloc_conf, cuda_alloc_conf;
    process::ForkServer process;
};

std::unique_ptr<RunForkServers> RunForkServers::for_program(const std::vector<std::string>& command) {
    std::error_code error;
    if (command.size() < 2 || !is_python(command[0]) || command[1].empty() || command[1][0] == '-' || !fs::is_regular_file(command[1], error))
        return nullptr;
    return std::unique_ptr<RunForkServers>(new RunForkServers(command));
}

RunForkServers::RunForkServers(std::vector<std::string> command) : command_(std::move(command)) {}
RunForkServers::~RunForkServers() = default;

void RunForkServers::warm() { server_for(ours_with({})); }

RunForkServers::Server& RunForkServers::server_for(const std::vector<std::string>& environment) {
    const std::string conf = value_in(environment, "PYTORCH_ALLOC_CONF"), cuda_conf = value_in(environment, "PYTORCH_CUDA_ALLOC_CONF");
    for (const std::unique_ptr<Server>& s : servers_)
        if (s->alloc_conf == conf && s->cuda_alloc_conf == cuda_conf) return *s;
    // The server's own environment: the run's, less what is the run's alone
    // (the hook's settings) or read anew in each run (OMP_NUM_THREADS: the
    // run sets torch's threads from it; libgomp reads it once, when loaded).
    std::vector<std::string> own;
    for (const std::string& e : environment)
        if (e.rfind("GPUMEM_RECORD_", 0) != 0 && e.rfind("OMP_NUM_THREADS=", 0) != 0) own.push_back(e);
    servers_.push_back(std::make_unique<Server>(conf, cuda_conf, command_[0], command_[1], std::move(own)));
    return *servers_.back();
}

bool RunForkServers::importing_for(const std::vector<std::string>& variables) {
    return server_for(ours_with(variables)).process.state() == process::ForkServer::State::importing;
}

std::optional<process::RunningChild> RunForkServers::start(const std::vector<std::string>& command, const std::vector<std::string>& environment,
                                                           const std::string& output_file, const std::string& preload, std::string& why) {
    if (command.size() < 2 || command[0] != command_[0] || command[1] != command_[1]) {
        why = "not the program the fork server imported";
        return std::nullopt;
    }
    return server_for(environment).process.fork_run(command, environment, output_file, preload, why);
}

std::string RunForkServers::state_text() {
    std::vector<std::string> states;
    for (const std::unique_ptr<Server>& s : servers_) {
        const std::string setting = servers_.size() > 1 && !(s->alloc_conf + s->cuda_alloc_conf).empty()
                                        ? " (" + (s->alloc_conf.empty() ? s->cuda_alloc_conf : s->alloc_conf) + ")"
                                        : "";
        switch (s->process.state()) {
        case process::ForkServer::State::importing: states.push_back("importing" + setting); break;
        case process::ForkServer::State::unfit: states.push_back("unfit" + setting + ": " + s->process.why()); break;
        case process::ForkServer::State::ready: {
            std::ostringstream text;
            text.precision(1);
            text << std::fixed << "ready after " << s->process.ready_seconds() << " s" << setting;
            states.push_back(text.str());
        }
        }
    }
    std::string joined;
    for (const std::string& t : states) joined += (joined.empty() ? "" : "; ") + t;
    return joined;
}

void run_recorded_side_by_side(const std::vector<RecordedRunRequest>& runs, const std::vector<std::vector<std::string>>& slots,
                               const std::function<void(std::size_t, ChildRun)>& ended, RunForkServers* servers) {
    struct Going {
        std::size_t index, slot;
        std::unique_ptr<HookDirectory> dir;  // removed once its statuses are read
        process::RunningChild child;
        bool forked;
        std::string fresh_why;
    };
    const std::size_t limit = std::max<std::size_t>(1, slots.size());
    std::vector<bool> taken(limit, false);
    const auto finish = [&](Going& g, const process::ChildExit& exit) {
        ChildRun run{exit, read_statuses(g.dir->status_dir()), g.forked, g.fresh_why};
        g.dir.reset();
        taken[g.slot] = false;
        ended(g.index, std::move(run));
    };
    std::vector<Going> going;
    std::size_t next = 0;
    while (next < runs.size() || !going.empty()) {
        if (interrupt_requested()) {
            // Each asked to stop at once, then reaped: the groups end together.
            for (Going& g : going) ::kill(-g.child.pid(), SIGTERM);
            for (Going& g : going) finish(g, g.child.stop());
            return;
        }
        while (next < runs.size() && going.size() < limit) {
            if (servers != nullptr && servers->importing_for(runs[next].options.environment)) break;
            const std::size_t slot = static_cast<std::size_t>(std::find(taken.begin(), taken.end(), false) - taken.begin());
            const RecordedRunRequest& r = runs[next];
            process::ChildOptions style = r.options;
            if (slot < slots.size()) style.environment.insert(style.environment.end(), slots[slot].begin(), slots[slot].end());
            auto dir = std::make_unique<HookDirectory>();
            process::ChildOptions hooked = style;
            hooked.own_group = true;
            hooked.environment = child_environment(*dir, r.settings, style);
            std::string why;
            std::optional<process::RunningChild> forked =
                servers != nullptr ? servers->start(r.command, hooked.environment, hooked.output_file, dir->path() + "/sitecustomize.py", why)
                                   : std::nullopt;
            const bool was_forked = forked.has_value();
            process::RunningChild child = was_forked ? std::move(*forked) : process::RunningChild(r.command, hooked);
            going.push_back({next++, slot, std::move(dir), std::move(child), was_forked, why});
            taken[slot] = true;
        }
        bool any = false;
        for (auto g = going.begin(); g != going.end();) {
            if (const std::optional<process::ChildExit> exit = g->child.poll()) {
                finish(*g, *exit);
                g = going.erase(g);
                any = true;
            } else {
                ++g;
            }
        }
        // A short sleep between polls; a signal cuts it short (EINTR).
        if (!any) ::usleep(20 * 1000);
    }
}

std::optional<RunFigures> read_figures(const std::string& stats_path, std::string& note) {
    std::ifstream in(stats_path);
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    if (!doc.is_object() || !doc.contains("memory_stats") || !doc["memory_stats"].is_object()) {
        note = stats_path + ": no memory_stats";
        return std::nullopt;
    }
    const nlohmann::json& s = doc["memory_stats"];
    auto count = [&s](const char* key) { return s.contains(key) && s[key].is_number() ? s[key].get<std::uint64_t>() : 0; };
    RunFigures f;
    f.ooms = count("num_ooms");
    f.peak_reserved = count("reserved_bytes.all.peak");
    f.retries = count("num_alloc_retries");
    f.device_allocs = count("num_device_alloc");
    f.device_frees = count("num_device_free");
    // The hook's count of the OOMs the program saw; null: not known.
    if (doc.contains("program_ooms") && doc["program_ooms"].is_number_unsigned()) f.program_ooms = doc["program_ooms"].get<std::uint64_t>();
    return f;
}

std::string nothing_recorded_reason(const ChildRun& run) {
    bool imported = false, no_torch = false, initialized_only = false;
    std::string error;
    for (const RecordedProcess& p : run.processes) {
        imported = imported || p.torch_imported;
        no_torch = no_torch || (p.torch_found && !*p.torch_found);
        initialized_only = initialized_only || !p.note.empty();
        if (!p.error.empty()) error = p.error;
    }
    if (run.start_error) return *run.start_error;  // nothing ran: that alone is the reason
    if (!error.empty()) return "no snapshot written: " + error;
    // Killed (SIGKILL, the OOM killer): no process could say anything,
    // Python or not.
    if (run.processes.empty() && run.exit_status > 128)
        return "no snapshot written: the program was killed by signal " + std::to_string(run.exit_status - 128) + " (" +
               strsignal(run.exit_status - 128) + ") before any of its processes could write one";
    if (run.processes.empty())
        return "no snapshot written: no Python process started with the hook (the program is not Python, or it cleared PYTHONPATH)";
    if (!imported && no_torch) return "no snapshot written: the program's python has no torch (import torch fails there)";
    if (!imported) return "no snapshot written: the program never imported torch";
    if (initialized_only) return "no snapshot written: the program initialized CUDA through torch but allocated no memory";
    return "no snapshot written: the program never used CUDA through torch";
}

}  // namespace gpumem::cli
