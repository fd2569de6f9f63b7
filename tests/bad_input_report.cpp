// Bad invocations and bad input of gpumem report: see bad_input.hpp. Every
// one exits 2 naming the input (FILE:LINE where a line is at fault), and no
// part of a fleet is reported from them.
#include <sys/stat.h>

#include "bad_input.hpp"

namespace bad_input {

namespace {

const char* const kGood =
    "{\"schema_version\": 1, \"tool\": \"gpumem\", \"version\": \"0.1.0\", \"command\": \"info\", \"ok\": true, "
    "\"origin\": {\"host\": \"n1\"}, \"devices\": [{\"index\": 0, \"uuid\": \"GPU-1\", \"name\": \"A\", \"free\": 1}]}\n";

// `doc` with its first `from` replaced by `to`.
std::string replaced(std::string doc, const std::string& from, const std::string& to) {
    return doc.replace(doc.find(from), from.size(), to);
}

// kGood with its first `from` replaced by `to`.
std::string good_but(const std::string& from, const std::string& to) { return replaced(kGood, from, to); }

void write_report_inputs(const Scratch& s) {
    s.write("report_good.json", kGood);
    s.write("report_empty.json", "");
    s.write("report_blank.json", "\n  \n\t\n");
    s.write("report_malformed.json", "{\"schema_version\": 1, \"tool\": \"gpumem\",, }\n");
    s.write("report_second_bad.jsonl", std::string(kGood) + kGood + "{\"tool\": \"gpumem\", \"ok\": tru}\n");
    s.write("report_truncated.jsonl", std::string(kGood) + std::string(kGood).substr(0, 60));
    s.write("report_not_gpumem.json", "{\"tool\": \"nvidia-smi\", \"gpus\": []}\n");
    s.write("report_array.json", "[1, 2, 3]\n");
    s.write("report_number.json", "42\n");
    s.write("report_deep.json", std::string(100, '[') + std::string(100, ']') + "\n");
    s.write("report_newer.json", good_but("\"schema_version\": 1", "\"schema_version\": 9"));
    s.write("report_of_report.json",
            "{\"schema_version\": 1, \"tool\": \"gpumem\", \"version\": \"0.1.0\", \"command\": \"report\", \"ok\": true}\n");
    s.write("report_wrong_type.json", good_but("\"free\": 1", "\"free\": \"1\""));
    s.write("report_ok_text.json", good_but("true", "\"yes\""));
    s.write("report_error_missing.json", good_but("true", "false"));  // ok: false and no error
    s.write("report_bad_verdict.json",
            "{\"schema_version\": 1, \"tool\": \"gpumem\", \"version\": \"0.1.0\", \"command\": \"check\", \"ok\": true, "
            "\"devices\": [{\"index\": 0, \"uuid\": \"GPU-1\", \"verdict\": \"maybe\"}]}\n");
    s.write("report_no_host.json", good_but("{\"host\": \"n1\"}", "{\"rank\": 0}"));
    s.write("report_binary.json", std::string("{\"tool\": \"gpumem\xff\xfe\", \"ok\": true}\n", 32));
    s.write("report_bad_origin.json", good_but("{\"host\": \"n1\"}", "[]"));
    // A line longer than any document gpumem writes: refused once past the bound, not held.
    s.write("report_huge.jsonl", std::string(kGood) + "{\"tool\": \"" + std::string((16u << 20) + 16, 'x') + "\"}\n");
    mkdir(s.path("report_dir").c_str(), 0755);
    mkdir(s.path("report_only_dirs").c_str(), 0755);
    mkdir(s.path("report_only_dirs/sub.json").c_str(), 0755);
    s.write("report_glob[x].json", "");  // a name with glob characters is read as that file: here empty
    // Numbers out of range in every field report reads (issue 26): each a
    // FILE:LINE error, never nlohmann's "internal error: number overflow".
    const char* const kCheck =
        "{\"schema_version\": 1, \"tool\": \"gpumem\", \"command\": \"check\", \"ok\": true, \"origin\": {\"host\": \"n1\"}, "
        "\"checks\": [{\"index\": 0, \"uuid\": \"GPU-1\", \"name\": \"A\", \"check\": \"copy.h2d\", \"verdict\": \"pass\", "
        "\"value\": 55.0, \"comparison\": \">=\", \"unit\": \"GB/s\"}]}\n";
    const char* const kCopy =
        "{\"schema_version\": 1, \"tool\": \"gpumem\", \"command\": \"copy\", \"ok\": true, \"origin\": {\"host\": \"n1\"}, "
        "\"results\": [{\"device\": 0, \"direction\": \"h2d\", \"engine\": \"ce\", \"bytes\": 1024, \"median_gbps\": 50.0}]}\n";
    const char* const kMemset =
        "{\"schema_version\": 1, \"tool\": \"gpumem\", \"command\": \"memset\", \"ok\": true, \"origin\": {\"host\": \"n1\"}, "
        "\"results\": [{\"device\": 0, \"target\": \"device\", \"bytes\": 1024, \"width_bits\": 8, \"bandwidth_gbps\": 9.0}]}\n";
    const char* const kError =
        "{\"schema_version\": 1, \"tool\": \"gpumem\", \"command\": \"check\", \"ok\": false, \"origin\": {\"host\": \"n1\"}, "
        "\"error\": {\"status\": 3, \"code\": \"no_device\", \"message\": \"x\"}}\n";
    const std::pair<const char*, std::string> overflows[] = {
        {"report_num_schema.json", replaced(kGood, "\"schema_version\": 1", "\"schema_version\": 1e400")},
        {"report_num_schema_big.json", replaced(kGood, "\"schema_version\": 1", "\"schema_version\": 99999999999999999999")},
        {"report_num_index.json", replaced(kGood, "\"index\": 0", "\"index\": 9223372036854775808")},
        {"report_num_free.json", replaced(kGood, "\"free\": 1", "\"free\": 1e400")},
        {"report_num_free_negative.json", replaced(kGood, "\"free\": 1", "\"free\": -1")},
        {"report_num_free_big.json", replaced(kGood, "\"free\": 1", "\"free\": 18446744073709551616")},
        {"report_num_rank.json", replaced(kGood, "{\"host\": \"n1\"}", "{\"host\": \"n1\", \"rank\": -1e400}")},
        {"report_num_world.json", replaced(kGood, "{\"host\": \"n1\"}", "{\"host\": \"n1\", \"world_size\": 1.5}")},
        {"report_num_value.json", replaced(kCheck, "55.0", "1e400")},
        {"report_num_value_neg.json", replaced(kCheck, "55.0", "-1e400")},
        {"report_num_copy_gbps.json", replaced(kCopy, "50.0", "1E+999")},
        {"report_num_copy_bytes.json", replaced(kCopy, "\"bytes\": 1024", "\"bytes\": 1e3")},
        {"report_num_copy_device.json", replaced(kCopy, "\"device\": 0", "\"device\": -9223372036854775809")},
        {"report_num_memset_width.json", replaced(kMemset, "\"width_bits\": 8", "\"width_bits\": 9223372036854775808")},
        {"report_num_memset_gbps.json", replaced(kMemset, "9.0", "9e999")},
        {"report_num_status.json", replaced(kError, "\"status\": 3", "\"status\": 256")},
        {"report_num_status_big.json", replaced(kError, "\"status\": 3", "\"status\": 9223372036854775808")},
        {"report_num_status_real.json", replaced(kError, "\"status\": 3", "\"status\": 1e400")},
    };
    for (const auto& [name, text] : overflows) s.write(name, text);
    static constexpr char kBadGzip[] = "\x1f\x8b\x08\x00garbage, not deflate";  // a gzip header, a NUL, then no deflate stream
    s.write("report_bad.json.gz", std::string(kBadGzip, sizeof kBadGzip - 1));
    mkdir(s.path("report_dir_no_json").c_str(), 0755);
    s.write("report_dir_no_json/notes.txt", kGood);
}

}  // namespace

std::vector<BadCase> report_cases(const Scratch& s) {
    write_report_inputs(s);
    std::vector<BadCase> cases = {
        // Options.
        {{"report", "--outlier-fraction", "0", s.path("report_good.json")}, {2}, true},
        {{"report", "--outlier-fraction", "150%", s.path("report_good.json")}, {2}, true},
        {{"report", "--outlier-fraction", "ten", s.path("report_good.json")}},
        {{"report", "--outlier-fraction", "1", s.path("report_good.json")}},
        {{"report", "--outlier-fraction", "-0.1", s.path("report_good.json")}},
        {{"report", "--outlier-fraction", "nan", s.path("report_good.json")}},
        {{"report", "--outlier-fraction", "ten", s.path("report_good.json")}},
        {{"report", "--outlier-fraction", "", s.path("report_good.json")}},
        {{"-d", "0", "report", s.path("report_good.json")}, {2}, true},  // -d selects no document
        {{"report", ""}},
        {{"report", "-", "-"}},
        // Files and globs.
        {{"report"}, {2}, true},  // stdin is /dev/null here: empty
        {{"report", s.path("report_missing.json")}, {2}, true},
        {{"report", s.path("report_dir")}},
        {{"report", s.path("report_empty.json")}, {2}, true},
        {{"report", s.path("report_blank.json")}},
        {{"report", s.path("no-such-*.json")}, {2}, true},
        {{"report", s.path("report_only_dirs/*")}},  // a glob matching folders only
        {{"report", s.path("report_glob[x].json")}},
        // Contents: one bad document fails the whole run, named with its line.
        {{"report", s.path("report_malformed.json")}, {2}, true},
        {{"report", s.path("report_good.json"), s.path("report_second_bad.jsonl")}, {2}, true},
        {{"report", s.path("report_truncated.jsonl")}, {2}, true},
        {{"report", s.path("report_not_gpumem.json")}},
        {{"report", s.path("report_array.json")}},
        {{"report", s.path("report_number.json")}},
        {{"report", s.path("report_deep.json")}},
        {{"report", s.path("report_newer.json")}, {2}, true},
        {{"report", s.path("report_of_report.json")}},
        {{"report", s.path("report_wrong_type.json")}, {2}, true},
        {{"report", s.path("report_ok_text.json")}},
        {{"report", s.path("report_error_missing.json")}},
        {{"report", s.path("report_bad_verdict.json")}},
        {{"report", s.path("report_no_host.json")}},
        {{"report", s.path("report_binary.json")}},
        {{"report", s.path("report_bad_origin.json")}},
        {{"report", s.path("report_huge.jsonl")}, {2}, true},
        {{"report", s.path("report_bad.json.gz")}, {2}, true},
        {{"report", s.path("report_dir_no_json")}, {2}, true},
    };
    for (const char* name : {"report_num_schema.json", "report_num_schema_big.json", "report_num_index.json", "report_num_free.json",
                             "report_num_free_negative.json", "report_num_free_big.json", "report_num_rank.json",
                             "report_num_world.json", "report_num_value.json", "report_num_value_neg.json",
                             "report_num_copy_gbps.json", "report_num_copy_bytes.json", "report_num_copy_device.json",
                             "report_num_memset_width.json", "report_num_memset_gbps.json", "report_num_status.json",
                             "report_num_status_big.json", "report_num_status_real.json"})
        cases.push_back({{"report", s.path(name)}, {2}, true});
    return cases;
}

}  // namespace bad_input
