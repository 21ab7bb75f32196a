#include "loom/fabric/link_sync.hpp"

#include <cassert>
#include <functional>

namespace loom::fabric {

namespace {

// An open-addressing table of the ids [0, n) by names(id): a power of two, at most half full.
template <class Names>
std::vector<std::int32_t> nameSlots(std::int32_t n, const Names& names) {
    std::size_t size = 16;
    while (size < 2 * static_cast<std::size_t>(n)) size *= 2;
    std::vector<std::int32_t> slots(size, kNone);
    const std::size_t mask = size - 1;
    for (std::int32_t id = 0; id < n; ++id) {
        const std::string_view name = names[id];
        for (std::size_t i = std::hash<std::string_view>{}(name)&mask;; i = (i + 1) & mask) {
            if (slots[i] == kNone) {
                slots[i] = id;
                break;
            }
            if (names[slots[i]] == name) break;  // a duplicate name keeps the lowest id
        }
    }
    return slots;
}

template <class Names>
std::int32_t findSlot(const std::vector<std::int32_t>& slots, const Names& names,
                      std::string_view name) {
    if (slots.empty()) return kNone;
    const std::size_t mask = slots.size() - 1;
    for (std::size_t i = std::hash<std::string_view>{}(name)&mask;; i = (i + 1) & mask) {
        const auto id = slots[i];
        if (id == kNone) return kNone;
        if (names[id] == name) return id;
    }
}

}  // namespace

LinkNameIndex::LinkNameIndex(const Topology& t)
    : slots_(nameSlots(t.linkCount(), t.linkNames)),
      switchSlots_(nameSlots(t.switchCount(), t.switchNames)),
      links_(t.linkCount()) {}

std::int32_t LinkNameIndex::find(const Topology& t, std::string_view name) const {
    assert((slots_.empty() || t.linkCount() == links_) &&
           "LinkNameIndex queried with another topology");
    return findSlot(slots_, t.linkNames, name);
}

std::int32_t LinkNameIndex::findSwitch(const Topology& t, std::string_view name) const {
    return findSlot(switchSlots_, t.switchNames, name);
}

std::vector<LinkState> LinkNameIndex::switchStates(const Topology& t,
                                                   const inventory::Inventory& inv) const {
    std::vector<LinkState> out(static_cast<std::size_t>(t.switchCount()));
    for (std::int32_t s = 0; s < t.switchCount(); ++s)
        out[s] = t.switchUp[s] ? LinkState::Up : LinkState::NotInService;
    for (const auto& s : inv.switches)
        if (const auto id = findSwitch(t, s.name); id != kNone) out[id] = liveSwitchState(s.state);
    return out;
}

std::vector<std::pair<std::int32_t, bool>> switchChanges(const Topology& t,
                                                         std::span<const LinkState> states) {
    std::vector<std::pair<std::int32_t, bool>> out;
    for (std::int32_t s = 0; s < t.switchCount() && s < static_cast<std::int32_t>(states.size());
         ++s) {
        const bool up = states[s] == LinkState::Up;
        if ((t.switchUp[s] != 0) != up) out.emplace_back(s, up);
    }
    return out;
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
