// What alloc-test's modes share: device lines, progress, chunk sizes and the
// record of a failed chunked allocation.
#include "alloc/alloc.hpp"

namespace gpumem::cli {

std::string device_line(const DeviceIdentity& device) {
    return "device " + to_string(device.cuda_index.value()) + ": " + device.name + " (" + device.uuid + ")";
}

Cell device_index(const DeviceIdentity& device) { return std::int64_t{device.cuda_index.value().ordinal()}; }

void add_total_option(CLI::App& sub, TotalText& total, const std::string& help) {
    sub.add_option("total", total.positional, help)->type_name("TOTAL")->check(size_validator(true));
    sub.add_option("--total", total.option, help)->type_name("TOTAL")->check(size_validator(true))->group("");
}

std::string total_text(const TotalText& total, const std::string& fallback) {
    if (total.positional && total.option)
        throw UsageError("TOTAL given twice ('" + *total.positional + "' and --total '" + *total.option + "'): give it once");
    if (total.positional) return *total.positional;
    if (total.option) return *total.option;
    if (fallback.empty()) throw UsageError("TOTAL is required: SIZE or PCT% of free memory, such as 4GiB or 50%");
    return fallback;
}

std::uint64_t parse_chunk(const std::string& text) {
    const std::uint64_t bytes = parse_size(text);
    if (bytes % 8 != 0) throw UsageError("--chunk must be a multiple of 8 bytes: the patterns are 64-bit words");
    return bytes;
}

ProgressSink::ProgressSink(const Session& session, std::size_t device_count, std::string command)
    : enabled_(device_count == 1 && session.progress()), columns_(session.output().screen.stderr_columns), command_(std::move(command)) {}

ProgressFn ProgressSink::fn() {
    if (!enabled_) return {};
    return [this](const char* phase, std::uint64_t done, std::uint64_t total) {
        if (!bar_ || phase_ != phase) {
            bar_.reset();
            phase_ = phase;
            bar_ = std::make_unique<Progress>(true, command_ + ": " + phase_, total, columns_);
        }
        bar_->update(done);
    };
}

namespace {

constexpr Column<AllocationFailure> kFailureColumns[] = {
    {{"index", "", FieldKind::integer}, [](const AllocationFailure& f) -> Cell { return std::int64_t{f.device.ordinal()}; }},
    {{"requested", "", FieldKind::bytes}, [](const AllocationFailure& f) -> Cell { return f.requested; }},
    {{"allocated_before_failure", "", FieldKind::bytes}, [](const AllocationFailure& f) -> Cell { return f.allocated; }},
    {{"pieces_before_failure", "", FieldKind::integer}, [](const AllocationFailure& f) -> Cell { return f.pieces; }},
};

}  // namespace

Cell allocation_failure_cell(const std::optional<AllocationFailure>& failure) {
    return failure ? record_cell(make_record(Columns<AllocationFailure>(kFailureColumns), *failure)) : Cell();
}

const FieldSchemaSet& allocation_failure_schema() { return nested_schema<kFailureColumns>(); }

}  // namespace gpumem::cli
