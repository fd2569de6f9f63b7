// A private temporary directory (mode 0700, under $TMPDIR or /tmp), removed
// with everything in it when the object goes: the recording hook's folder,
// and the files of tune --confirm's and max-batch's real runs.
#pragma once

#include <string>
#include <string_view>

namespace gpumem::process {

class TemporaryDirectory {
public:
    // Makes $TMPDIR/gpumem-PURPOSE-XXXXXX. Throws gpumem::Error, naming the
    // folder and the reason, when it cannot be made (a missing or read-only
    // $TMPDIR).
    explicit TemporaryDirectory(std::string_view purpose);
    // Never throws: what cannot be removed stays in $TMPDIR.
    ~TemporaryDirectory();
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
    TemporaryDirectory(TemporaryDirectory&&) = delete;
    TemporaryDirectory& operator=(TemporaryDirectory&&) = delete;

    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

}  // namespace gpumem::process
