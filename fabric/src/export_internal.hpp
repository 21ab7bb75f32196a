// Helpers shared by the exporters (export.cpp, export_summary.cpp).
#pragma once

#include <string>
#include <string_view>

#include "loom/fabric/topology.hpp"
#include "loom/inventory/json_text.hpp"

namespace loom::fabric::detail {

inline int localPort(const Topology& t, std::int32_t l, std::int32_t node) {
    return t.linkA[l] == node ? t.linkAPort[l] : t.linkBPort[l];
}

inline std::string nodeName(const Topology& t, std::int32_t v) {
    return t.isSwitch(v) ? t.switchNames[v] : t.nicNames[v - t.switchCount()];
}

}  // namespace loom::fabric::detail
