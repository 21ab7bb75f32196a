#include "loom/fabric/link_sync.hpp"

#include <cassert>
#include <functional>

namespace loom::fabric {

LinkNameIndex::LinkNameIndex(const Topology& t) : links_(t.linkCount()) {
    std::size_t size = 16;
    while (size < 2 * static_cast<std::size_t>(links_)) size *= 2;
    slots_.assign(size, kNone);
    const std::size_t mask = size - 1;
    for (std::int32_t l = 0; l < links_; ++l) {
        const std::string_view name = t.linkNames[l];
        for (std::size_t i = std::hash<std::string_view>{}(name)&mask;; i = (i + 1) & mask) {
            if (slots_[i] == kNone) {
                slots_[i] = l;
                break;
            }
            if (t.linkNames[slots_[i]] == name) break;  // a duplicate name keeps the lowest id
        }
    }
}

std::int32_t LinkNameIndex::find(const Topology& t, std::string_view name) const {
    if (slots_.empty()) return kNone;
    assert(t.linkCount() == links_ && "LinkNameIndex queried with another topology");
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = std::hash<std::string_view>{}(name)&mask;; i = (i + 1) & mask) {
        const auto l = slots_[i];
        if (l == kNone) return kNone;
        if (t.linkNames[l] == name) return l;
    }
}

std::vector<std::pair<std::int32_t, LinkState>> LinkNameIndex::changes(
    const Topology& t, const inventory::Inventory& inv) const {
    std::vector<std::pair<std::int32_t, LinkState>> out;
    for (const auto& l : inv.links) {
        const auto id = find(t, l.name);
        if (id == kNone) continue;
        const auto want = linkStateFrom(l.state, false);
        if (t.linkState[id] != want) out.emplace_back(id, want);
    }
    return out;
}

}  // namespace loom::fabric
