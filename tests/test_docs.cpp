// The man page against the binary: every key of every command's --json
// document (gpumem --schema, derived from the same column tables that build
// the documents) is documented, as *key*, in that command's section of
// man/gpumem.1.scd; the envelope keys (the origin's too) in OUTPUT FORMATS. Fails when a key is
// added or renamed without its documentation.
#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

using nlohmann::json;

namespace {

std::string man_page() {
    const char* dir = std::getenv("GPUMEM_TESTS_DIR");
    return slurp(std::string(dir ? dir : GPUMEM_TESTS_SOURCE_DIR) + "/../man/gpumem.1.scd");
}

// The text of `# TITLE` up to the next top-level heading.
std::string section(const std::string& page, const std::string& title) {
    const std::size_t at = page.find("\n# " + title + "\n");
    if (at == std::string::npos) return "";
    const std::size_t end = page.find("\n# ", at + 3 + title.size());
    return page.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

// Every property name of an object schema and of the objects inside it.
void collect_keys(const json& schema, std::set<std::string>& keys) {
    if (schema.contains("properties"))
        for (const auto& [key, value] : schema["properties"].items()) {
            keys.insert(key);
            collect_keys(value, keys);
        }
    if (schema.contains("items")) collect_keys(schema["items"], keys);
}

}  // namespace

TEST_CASE("docs: every JSON key of every command is in its man page section") {
    const RunResult r = run_gpumem({"--schema"});
    REQUIRE(r.status == 0);
    const json schemas = json::parse(r.out);
    REQUIRE(schemas.is_object());
    CHECK(!schemas.empty());
    const std::string page = man_page();
    const std::set<std::string> envelope = {"schema_version", "tool", "version", "command", "ok", "warnings", "error", "status",
                                            "code", "message"};
    const std::string formats = section(page, "OUTPUT FORMATS");
    REQUIRE(!formats.empty());
    for (const std::string& key : envelope) {
        CAPTURE(key);
        CHECK(formats.find("*" + key + "*") != std::string::npos);
    }
    // The origin stamp is the same object in every document: documented once,
    // in OUTPUT FORMATS, not in each command's section.
    REQUIRE(schemas.begin() != schemas.end());
    std::set<std::string> origin_keys;
    collect_keys(schemas.begin()->at("properties").at("origin"), origin_keys);
    CHECK(origin_keys.count("host"));
    for (const std::string& key : origin_keys) {
        CAPTURE(key);
        CHECK(formats.find("*" + key + "*") != std::string::npos);
    }
    CHECK(formats.find("*origin*") != std::string::npos);
    for (const auto& item : schemas.items()) {
        const std::string command = item.key();  // clang 14 cannot capture a structured binding (CAPTURE is a lambda)
        json schema = item.value();
        schema["properties"].erase("origin");
        // "alloc-test fill" is documented in ALLOC-TEST.
        const std::string title = upper(command.substr(0, command.find(' ')));
        const std::string text = section(page, title);
        CAPTURE(command);
        REQUIRE(!text.empty());
        std::set<std::string> keys;
        collect_keys(schema, keys);
        for (const std::string& key : keys) {
            if (envelope.count(key)) continue;
            CAPTURE(key);
            CHECK(text.find("*" + key + "*") != std::string::npos);
        }
    }
}

TEST_CASE("docs: the schema is JSON Schema for one object per command, closed to undeclared keys") {
    const json schemas = json::parse(run_gpumem({"--schema"}).out);
    for (const auto& item : schemas.items()) {
        const std::string command = item.key();
        const json& schema = item.value();
        CAPTURE(command);
        CHECK(schema.at("type") == "object");
        CHECK(schema.at("additionalProperties") == false);
        CHECK(schema.at("title") == "gpumem " + command);
        CHECK(schema.at("properties").contains("ok"));
        // Every document may carry the origin stamp.
        CHECK(schema.at("properties").at("origin").at("required") == json::array({"host"}));
    }
}

// troff warns where it cannot break a line (a word wider than its table
// column): the page then runs past the terminal's edge. Rendered as man
// renders it for terminals of 80, 100 and 120 columns (a line of 78 at 80),
// with every warning on; skipped where scdoc or groff is not installed.
TEST_CASE("docs: the man page renders without a troff warning at 80, 100 and 120 columns") {
    const RunResult tools = run_program("/bin/sh", {"-c", "command -v scdoc && command -v groff"});
    if (tools.status != 0) {
        MESSAGE("scdoc or groff not installed: the man page is not rendered");
        return;
    }
    const char* dir = std::getenv("GPUMEM_TESTS_DIR");
    const std::string page = std::string(dir ? dir : GPUMEM_TESTS_SOURCE_DIR) + "/../man/gpumem.1.scd";
    for (const char* line_length : {"78n", "80n", "98n", "100n", "118n", "120n"}) {
        CAPTURE(line_length);
        const RunResult r = run_program(
            "/bin/sh", {"-c", "scdoc < \"$1\" | groff -t -man -Tutf8 -rLL=\"$2\" -ww -z", "sh", page, line_length});
        CHECK(r.status == 0);
        CHECK(r.err == "");
    }
}
