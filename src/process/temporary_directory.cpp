#include "process/temporary_directory.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/errors.hpp"

namespace gpumem::process {

TemporaryDirectory::TemporaryDirectory(std::string_view purpose) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gpumem-" + std::string(purpose) + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
        throw Error(pattern + ": cannot create a temporary directory: " + std::strerror(errno) + " (set TMPDIR to a writable folder)");
    path_ = pattern;
}

TemporaryDirectory::~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

}  // namespace gpumem::process
