#include "loom/fabric/link_sync.hpp"

namespace loom::fabric {

LinkNameIndex::LinkNameIndex(const Topology& t) {
    ids_.reserve(static_cast<std::size_t>(t.linkCount()));
    for (std::int32_t l = 0; l < t.linkCount(); ++l) ids_.emplace(t.linkNames[l], l);
}

std::int32_t LinkNameIndex::find(std::string_view name) const {
    auto it = ids_.find(std::string(name));
    return it == ids_.end() ? kNone : it->second;
}

std::vector<std::pair<std::int32_t, LinkState>> LinkNameIndex::changes(
    const Topology& t, const inventory::Inventory& inv) const {
    std::vector<std::pair<std::int32_t, LinkState>> out;
    for (const auto& l : inv.links) {
        auto it = ids_.find(l.name.str());
        if (it == ids_.end()) continue;
        const auto want = linkStateFrom(l.state, false);
        if (t.linkState[it->second] != want) out.emplace_back(it->second, want);
    }
    return out;
}

}  // namespace loom::fabric
