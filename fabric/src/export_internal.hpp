// Helpers shared by the exporters (export.cpp, export_summary.cpp).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "loom/fabric/topology.hpp"

namespace loom::fabric::detail {

inline int localPort(const Topology& t, std::int32_t l, std::int32_t node) {
    return t.linkA[l] == node ? t.linkAPort[l] : t.linkBPort[l];
}

inline std::string nodeName(const Topology& t, std::int32_t v) {
    return t.isSwitch(v) ? t.switchNames[v] : t.nicNames[v - t.switchCount()];
}

inline void jsonString(std::string& out, std::string_view s) {
    out += '"';
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    out += '"';
}

}  // namespace loom::fabric::detail
