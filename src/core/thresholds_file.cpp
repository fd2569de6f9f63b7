#include "core/thresholds_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/errors.hpp"

namespace gpumem {
namespace {

// A thresholds file's text.
std::string read_thresholds_file(const std::string& path) {
    if (path.empty()) throw UsageError("--thresholds: empty file name");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        // copy.h2d=45GB/s is a --threshold, not a file: say so.
        const std::string hint = path.find('=') != std::string::npos ? "; did you mean --threshold " + path + "?" : "";
        throw UsageError("--thresholds '" + path + "': " + std::strerror(errno) + hint);
    }
    if (S_ISDIR(st.st_mode)) throw UsageError(path + ": is a directory, not a thresholds file");
    if (!S_ISREG(st.st_mode)) throw UsageError(path + ": not a regular file (a thresholds file is a JSON file)");
    constexpr off_t kLargest = 1 << 20;
    if (st.st_size > kLargest) throw UsageError(path + ": " + std::to_string(st.st_size) + " bytes is too large for a thresholds file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError(path + ": " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().find_first_not_of(" \t\r\n") == std::string::npos)
        throw UsageError(path + ": empty (expected a JSON object of check ids to thresholds)");
    return text.str();
}

}  // namespace

ThresholdOverrides parse_threshold_overrides(const std::vector<std::string>& options, const std::optional<std::string>& file) {
    ThresholdOverrides overrides;
    if (file) overrides = parse_threshold_file_text(read_thresholds_file(*file), *file);
    return merge_threshold_options(options, std::move(overrides));
}

}  // namespace gpumem
