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

// kGood with its first `from` replaced by `to`.
std::string good_but(const std::string& from, const std::string& to) {
    std::string doc = kGood;
    return doc.replace(doc.find(from), from.size(), to);
}

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
}

}  // namespace

std::vector<BadCase> report_cases(const Scratch& s) {
    write_report_inputs(s);
    return {
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
    };
}

}  // namespace bad_input
