#include "base/text.hpp"

#include <cstdio>

namespace gpumem {

std::string hex(std::uint64_t value) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
    return buf;
}

std::string hex_padded(std::uint64_t value, int bytes) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%0*llx", bytes * 2, static_cast<unsigned long long>(value));
    return buf;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string text;
    for (const std::string& item : items) {
        if (!text.empty()) text += separator;
        text += item;
    }
    return text;
}

std::string one_line(std::string text) {
    for (char& c : text)
        if (c == '\n' || c == '\r') c = ' ';
    return text;
}

}  // namespace gpumem
