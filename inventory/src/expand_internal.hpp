// What the expansion of a cluster spec shares between its two files: expand.cpp (the Expander,
// one pass from the spec to every entity and cable) and expand_overrides.cpp (what runs on the
// expanded inventory: overrides by name, cabling moves and swaps, checks on the result). A bad
// spec found here is reported by throwing ExpandFailure, which expandClusterSpec turns into its
// Result; it never leaves the two files.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/inventory/spec.hpp"

namespace loom::inventory::detail {

struct ExpandFailure {
    Error error;
};

[[noreturn]] inline void failAt(std::string message, const SpecSource& src) {
    throw ExpandFailure{Error::invalid(std::move(message), src.path, src.line)};
}

inline void mergeLabels(Labels& into, const Labels& from) {
    for (const auto& l : from) {
        auto pos =
            std::lower_bound(into.begin(), into.end(), l.first,
                             [](const auto& p, const std::string& k) { return p.first < k; });
        if (pos != into.end() && pos->first == l.first)
            pos->second = l.second;
        else
            into.insert(pos, l);
    }
}

// Each link's two port indices (into Inventory::ports), as cabled so far; a link's names are
// written from them last (finishLinks), after the cabling overrides have moved ends.
using LinkEnds = std::vector<std::array<std::uint32_t, 2>>;
inline constexpr std::uint32_t kNoPort = 0xffffffffu;
// Adds port `index` of switch `sw` (a cable moved to a port the expansion did not create);
// returns its index in Inventory::ports.
using SwitchPortFn = std::function<std::uint32_t(std::uint32_t sw, int index)>;

// Name -> index in spec.rackOverrides / spec.switchOverrides; a name overridden twice fails.
using OverrideIndex = std::unordered_map<std::string, std::size_t>;
void indexOverrides(const ClusterSpec& spec, OverrideIndex& racks, OverrideIndex& switches);
// Every rack and switch override named something that exists (*Used: set by the pass).
void checkOverridesUsed(const ClusterSpec& spec, const std::vector<bool>& rackUsed,
                        const std::vector<bool>& switchUsed);
void applyLabelOverrides(Inventory& inv, const ClusterSpec& spec);
void applyCablingOverrides(Inventory& inv, const ClusterSpec& spec, LinkEnds& linkEnds,
                           const SwitchPortFn& switchPort);
// No switch uses a port above its model's count (maxPort, source: per switch, from the pass).
void checkPortCapacity(const Inventory& inv, const std::vector<int>& maxPort,
                       const std::vector<const SpecSource*>& source);
void finishLinks(Inventory& inv, const LinkEnds& linkEnds);
void checkUniqueNames(const Inventory& inv, const ClusterSpec& spec);

}  // namespace loom::inventory::detail
