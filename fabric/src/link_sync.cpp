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

std::vector<std::pair<std::int32_t, LinkState>> LinkNameIndex::changes(
    const Topology& t, const inventory::Inventory& inv, Memo& memo) const {
    const std::size_t n = inv.links.size();
    if (memo.names.size() != n) {
        memo.names.assign(n, inventory::Text());
        memo.states.assign(n, inventory::Text());
        memo.ids.assign(n, kNone);
        memo.want.assign(n, LinkState::NotInService);
    }
    std::vector<std::pair<std::int32_t, LinkState>> out;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& l = inv.links[i];
        if (!l.name.sharesWith(memo.names[i])) {
            memo.names[i] = l.name;
            memo.ids[i] = find(t, l.name);
            memo.states[i] = inventory::Text();
        }
        if (!l.state.sharesWith(memo.states[i])) {
            memo.states[i] = l.state;
            memo.want[i] = linkStateFrom(l.state, false);
        }
        const auto id = memo.ids[i];
        if (id != kNone && t.linkState[id] != memo.want[i]) out.emplace_back(id, memo.want[i]);
    }
    return out;
}

}  // namespace loom::fabric
