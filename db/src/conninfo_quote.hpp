// A libpq key=value connection string's value in single quotes, with ' and \ escaped (a state
// directory or a password may hold spaces or quotes). Shared by Database and the failover guard.
#pragma once

#include <string>

namespace loom::db {

inline std::string quoteConninfoValue(const std::string& v) {
    std::string out = "'";
    for (char c : v) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
    }
    return out + "'";
}

}  // namespace loom::db
