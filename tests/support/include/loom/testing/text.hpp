// Small text helpers for tests that compute their expected results themselves.
#pragma once

#include <cctype>
#include <string>

namespace loom::testing {

// ASCII lowercase, as PostgreSQL's ILIKE compares Loom's (ASCII) names.
inline std::string lowerAscii(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace loom::testing
