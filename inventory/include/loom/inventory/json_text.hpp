// Writing JSON text by hand where a DOM would cost too much (the database's bulk event and label
// rows, the fabric exports of millions of entries): one string escaper for all of them.
#pragma once

#include <string>
#include <string_view>

namespace loom {

// Appends `s` as a JSON string literal: '"' and '\' escaped, \n \t \r by name, the other
// control characters as \u00XX; every other byte (UTF-8 included) as it is.
inline void appendJsonString(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out += "\\u00";
                    out += kHex[(c >> 4) & 0xf];
                    out += kHex[c & 0xf];
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

}  // namespace loom
