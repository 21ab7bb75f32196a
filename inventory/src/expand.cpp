// Expansion of a validated ClusterSpec into every concrete entity and cable: the Expander's one
// pass (sites -> racks -> hosts -> devices -> cables). What runs on its result (the overrides by
// name, cabling moves and swaps, the checks) is in expand_overrides.cpp.
//
// The cabling rules (which port goes where) are documented in docs/cluster-spec.md and are
// deterministic: they depend only on the spec. Performance matters (the 24k spec feeds a
// two-second apply): every vector is reserved from counts computed up front, names are built
// from precompiled patterns, and name lookups (overrides) go through hash maps built once.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <new>
#include <numeric>
#include <unordered_map>

#include "expand_internal.hpp"
#include "loom/inventory/name_limits.hpp"
#include "spec_pattern.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace loom::inventory {
namespace {

using detail::ExpandFailure;
using detail::failAt;
using detail::mergeLabels;
using detail::NamePattern;
using detail::PatternArgs;
using detail::PatternVar;

// Position on the floor: x along a row, y across rows; rack < 0 when not in a compute or
// storage rack (network rows, spine row).
struct Loc {
    double x = 0;
    double y = 0;
    int rack = -1;
};

// The big entity arrays (tens of MB for the 24k clusters) are written once, front to back.
// With 4 KiB pages that is one page fault per 4 KiB, and on virtualized hosts a fault costs
// ~10 us: measured, first-touch faults were most of a cold expansion. Asking for
// transparent huge pages on these buffers (a hint; ignored where THP is off) removes most of
// them. Smaller buffers are left alone.
template <class T>
void preferHugePages(std::vector<T>& v) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr std::uintptr_t kHuge = 2u << 20;
    std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(v.data());
    std::uintptr_t end = begin + v.capacity() * sizeof(T);
    begin = (begin + kHuge - 1) & ~(kHuge - 1);
    end &= ~(kHuge - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
    (void)v;
#endif
}

NamePattern compiled(const std::string& text) {
    NamePattern p;
    // Parsing already validated the placeholders; compile with everything allowed here.
    p.compile(text, 0x3f);
    return p;
}

class Expander {
public:
    explicit Expander(const ClusterSpec& spec) : spec_(spec) {
        const auto& n = spec.naming;
        zoneRowP_ = compiled(n.row);
        rackP_ = compiled(n.rack);
        hostP_ = compiled(n.host);
        rtswP_ = compiled(n.rtsw);
        ctswP_ = compiled(n.ctsw);
        atswP_ = compiled(n.atsw);
        suP_ = compiled(n.su);
        leafP_ = compiled(n.leaf);
        spineP_ = compiled(n.spine);
        coreP_ = compiled(n.core);
        fswP_ = compiled(n.fsw);
        fcswP_ = compiled(n.fcsw);
        storageRowP_ = compiled(n.storageRow);
        storageRackP_ = compiled(n.storageRack);
        storageNodeP_ = compiled(n.storageNode);
        sswP_ = compiled(n.ssw);
    }

    Inventory run() {
        inv_.cluster = spec_.name;
        inv_.fabric = spec_.fabric.type;
        detail::indexOverrides(spec_, rackOverride_, switchOverride_);
        rackOverrideUsed_.assign(spec_.rackOverrides.size(), false);
        switchOverrideUsed_.assign(spec_.switchOverrides.size(), false);
        reserve();
        inv_.sites.push_back(Site{spec_.siteName, spec_.siteDescription, spec_.siteLabels});

        const auto& f = spec_.fabric;
        bool roce = f.type == FabricType::Roce;
        // Top tiers first: zones link up into them as they are expanded.
        Loc spineRow{0, -spec_.floor.rowPitchM, -1};
        for (int i = 0; i < f.tier3.count; ++i)
            tier3_.push_back(
                addSwitch((roce ? atswP_ : coreP_).format({.site = spec_.siteName, .n = i + 1}),
                          roce ? SwitchRole::Atsw : SwitchRole::Core, f.tier3.model, {}, {},
                          spineRow, &f.tier3.source));
        if (spec_.frontend.enabled)
            for (int i = 0; i < spec_.frontend.fcswCount; ++i)
                fcsw_.push_back(addSwitch(fcswP_.format({.site = spec_.siteName, .n = i + 1}),
                                          SwitchRole::Fcsw, spec_.frontend.fcswModel, {}, {},
                                          spineRow, &spec_.frontend.source));

        int floorRow = 0;
        for (std::size_t zi = 0; zi < spec_.zones.size(); ++zi) {
            expandZone(int(zi), floorRow);
            floorRow += spec_.zones[zi].rows + 1;
            if (spec_.storage.enabled && spec_.storage.zone == spec_.zones[zi].name) {
                expandStorage(int(zi), floorRow);
                floorRow += 1;
            }
        }
        detail::checkOverridesUsed(spec_, rackOverrideUsed_, switchOverrideUsed_);
        detail::applyLabelOverrides(inv_, spec_);
        detail::applyCablingOverrides(inv_, spec_, linkEnds_, [this](std::uint32_t sw, int index) {
            return switchPort(sw, index);
        });
        detail::checkPortCapacity(inv_, switchMaxPort_, switchSource_);
        detail::finishLinks(inv_, linkEnds_);
        detail::checkUniqueNames(inv_, spec_);
        return std::move(inv_);
    }

private:
    // ---- set-up ------------------------------------------------------------------------

    void reserve() {
        const auto& f = spec_.fabric;
        std::size_t racks = 0, hosts = 0, gpus = 0, nics = 0, rows = 0, switches = 0, links = 0;
        for (const auto& z : spec_.zones) {
            const HostModelSpec& hm = *spec_.hostModel(z.hostModel);
            std::size_t h = std::size_t(z.racks) * z.hostsPerRack;
            rows += z.rows;
            racks += z.racks;
            hosts += h;
            gpus += h * hm.gpus;
            nics += h * (hm.backendNics + hm.frontendNics);
            links += h * (hm.backendNics + hm.frontendNics);
            std::size_t t1 =
                f.type == FabricType::Roce ? z.racks : h / f.hostsPerSu * hm.backendNics;
            switches += t1 + f.tier2.count;
            links += t1 * f.tier1.uplinks + std::size_t(f.tier2.count) * f.tier2.uplinks;
            if (spec_.frontend.enabled) {
                std::size_t fsw = spec_.frontend.fswPerRow ? z.rows : z.racks;
                switches += fsw;
                links += fsw * spec_.frontend.fswUplinks;
            }
        }
        switches += f.tier3.count + spec_.frontend.fcswCount;
        std::size_t storageNodes = 0;
        if (spec_.storage.enabled) {
            const StorageModelSpec& sm = *spec_.storageModel(spec_.storage.model);
            storageNodes = std::size_t(spec_.storage.racks) * spec_.storage.nodesPerRack;
            rows += 1;
            racks += spec_.storage.racks;
            switches += spec_.storage.racks;
            nics += storageNodes * sm.nics;
            links += storageNodes * sm.nics +
                     std::size_t(spec_.storage.racks) * spec_.storage.sswUplinks;
        }
        inv_.zones.reserve(spec_.zones.size());
        inv_.rows.reserve(rows);
        inv_.racks.reserve(racks);
        inv_.hosts.reserve(hosts);
        inv_.gpus.reserve(gpus);
        inv_.nics.reserve(nics);
        inv_.switches.reserve(switches);
        inv_.links.reserve(links);
        inv_.ports.reserve(links * 2 + nics / 8);
        inv_.storageNodes.reserve(storageNodes);
        preferHugePages(inv_.ports.mut());
        preferHugePages(inv_.links.mut());
        preferHugePages(inv_.nics.mut());
        preferHugePages(inv_.gpus.mut());
        linkEnds_.reserve(links);
        switchLoc_.reserve(switches);
        switchMaxPort_.reserve(switches);
        switchSource_.reserve(switches);
    }

    // ---- entity builders ---------------------------------------------------------------

    Loc rackLoc(int floorRow, int position, int rackIndex) const {
        return Loc{position * spec_.floor.rackWidthM, floorRow * spec_.floor.rowPitchM, rackIndex};
    }

    std::uint32_t addSwitch(std::string name, SwitchRole role, const std::string& model,
                            std::string_view zone, std::string_view rack, Loc loc,
                            const SpecSource* source) {
        Switch s;
        s.name = std::move(name);
        s.role = role;
        s.model = Text::shared(model);
        s.zone = zone;
        s.rack = rack;
        const SwitchOverride* over = nullptr;
        if (!switchOverride_.empty()) {
            auto it = switchOverride_.find(s.name.str());
            if (it != switchOverride_.end()) {
                over = &spec_.switchOverrides[it->second];
                switchOverrideUsed_[it->second] = true;
                if (over->model) s.model = *over->model;
                mergeLabels(s.labels, over->labels);
                source = &over->source;
            }
        }
        const SwitchModelSpec& m = *spec_.switchModel(s.model);
        s.portCount = m.ports;
        s.speedGbps = m.speedGbps;
        // The model's scheme, unless this switch runs another NOS (spec.overrides.switches).
        s.portNaming = Text::shared(over && over->portNaming ? *over->portNaming : m.portNaming);
        inv_.switches.push_back(std::move(s));
        switchLoc_.push_back(loc);
        switchMaxPort_.push_back(0);
        switchSource_.push_back(source);
        return std::uint32_t(inv_.switches.size() - 1);
    }

    std::uint32_t switchPort(std::uint32_t sw, int index) {
        const Switch& s = inv_.switches[sw];
        Port p;
        std::string name;
        name.reserve(s.name.size() + 6);
        name.append(s.name.view()).append("/p");
        NamePattern::appendNumber(name, index, 0);
        p.name = name;
        p.device = s.name;
        p.deviceKind = DeviceKind::Switch;
        p.index = index;
        p.speedGbps = s.speedGbps;
        inv_.ports.push_back(std::move(p));
        switchMaxPort_[sw] = std::max(switchMaxPort_[sw], index);
        return std::uint32_t(inv_.ports.size() - 1);
    }

    std::uint32_t addNic(std::string name, const Text& owner, int index, Network net,
                         const std::string& model, int speed, const std::string& hcaType = {},
                         const std::string& pci = {}) {
        Nic n;
        n.name = std::move(name);
        n.host = owner;
        n.index = index;
        n.network = net;
        n.model = Text::shared(model);
        n.speedGbps = speed;
        if (!hcaType.empty()) n.hcaType = Text::shared(hcaType);
        if (!pci.empty()) n.pci = Text::shared(pci);
        Port p;
        p.name = n.name + "/p1";
        p.device = n.name;
        p.deviceKind = DeviceKind::Nic;
        p.index = 1;
        p.speedGbps = speed;
        inv_.nics.push_back(std::move(n));
        inv_.ports.push_back(std::move(p));
        return std::uint32_t(inv_.ports.size() - 1);
    }

    void link(std::uint32_t aPort, std::uint32_t bPort, Network net, const Loc& a, const Loc& b) {
        Link l;
        l.network = net;
        l.speedGbps = std::min(inv_.ports[aPort].speedGbps, inv_.ports[bPort].speedGbps);
        const FloorSpec& fl = spec_.floor;
        if (a.rack >= 0 && a.rack == b.rack) {
            l.medium = Medium::Dac;
            l.lengthM = fl.inRackM;
        } else {
            double d = std::abs(a.x - b.x) + std::abs(a.y - b.y) + fl.slackM;
            l.lengthM = std::ceil(d - 1e-9);
            l.medium = l.lengthM <= fl.aocMaxM ? Medium::Aoc : Medium::Optic;
        }
        inv_.links.push_back(std::move(l));
        linkEnds_.push_back({aPort, bPort});
    }

    // A rack: applies its override, returns its index and how many hosts it really has.
    std::pair<int, int> addRack(std::string name, const Text& row, const Text& zone, int position,
                                const std::string& model, int hosts, const Labels& labels,
                                const SpecSource& zoneSource) {
        Rack r;
        r.name = std::move(name);
        r.row = row;
        r.zone = zone;
        r.position = position;
        r.model = Text::shared(model);
        r.labels = labels;
        if (!rackOverride_.empty()) {
            auto it = rackOverride_.find(r.name.str());
            if (it != rackOverride_.end()) {
                const RackOverride& o = spec_.rackOverrides[it->second];
                rackOverrideUsed_[it->second] = true;
                if (o.hosts) {
                    if (*o.hosts > hosts)
                        failAt("rack " + r.name + " may have at most " + std::to_string(hosts) +
                                   " hosts (hostsPerRack of " + zoneSource.path + ")",
                               SpecSource{o.source.path + ".hosts", o.hostsLine});
                    hosts = *o.hosts;
                }
                if (o.model) r.model = *o.model;
                mergeLabels(r.labels, o.labels);
            }
        }
        inv_.racks.push_back(std::move(r));
        return {int(inv_.racks.size() - 1), hosts};
    }

    // A host with its GPUs and NICs; returns the port index of its first backend NIC (the
    // frontend NIC ports follow the backend ones).
    std::uint32_t addHost(std::string name, const Text& rack, int slot, const HostModelSpec& hm) {
        Host h;
        h.name = std::move(name);
        h.rack = rack;
        h.slot = slot;
        h.model = Text::shared(hm.name);
        inv_.hosts.push_back(std::move(h));
        const Text& hn = inv_.hosts.back().name;
        std::string buf;
        for (int g = 0; g < hm.gpus; ++g) {
            Gpu gpu;
            buf.assign(hn.view()).append("-gpu");
            NamePattern::appendNumber(buf, g, 0);
            gpu.name = buf;
            gpu.host = hn;
            gpu.index = g;
            gpu.model = Text::shared(hm.gpuModel);
            inv_.gpus.push_back(std::move(gpu));
        }
        std::uint32_t first = std::uint32_t(inv_.ports.size());
        for (int i = 0; i < hm.backendNics; ++i) {
            buf = hn;
            buf += "-nic";
            NamePattern::appendNumber(buf, i, 0);
            addNic(std::move(buf), hn, i, Network::Backend, hm.backendNicModel, hm.backendSpeedGbps,
                   hm.backendNicHcaType,
                   hm.backendNicPci.empty() ? std::string() : hm.backendNicPci[i]);
        }
        for (int i = 0; i < hm.frontendNics; ++i) {
            buf = hn;
            buf += "-fe";
            NamePattern::appendNumber(buf, i, 0);
            addNic(std::move(buf), hn, i, Network::Frontend, hm.frontendNicModel,
                   hm.frontendSpeedGbps, hm.frontendNicHcaType,
                   hm.frontendNicPci.empty() ? std::string() : hm.frontendNicPci[i]);
        }
        return first;
    }

    // ---- zones -------------------------------------------------------------------------

    void expandZone(int zi, int floorRow) {
        const ZoneSpec& z = spec_.zones[zi];
        const HostModelSpec& hm = *spec_.hostModel(z.hostModel);
        const FabricSpec& f = spec_.fabric;
        const FrontendSpec& fe = spec_.frontend;
        bool roce = f.type == FabricType::Roce;
        inv_.zones.push_back(Zone{z.name, spec_.siteName, z.labels});
        const Text& zoneName = inv_.zones.back().name;

        const int racksPerRow = z.racks / z.rows;
        const int perT2 =
            f.tier1.uplinks / f.tier2.count;  // links from each tier-1 switch to each tier-2
        Loc netRow{0, floorRow * spec_.floor.rowPitchM, -1};

        // Rows.
        std::size_t firstRow = inv_.rows.size();
        for (int r = 0; r < z.rows; ++r) {
            Row row;
            row.name = zoneRowP_.format({.zone = zoneName, .n = r + 1});
            row.zone = zoneName;
            row.index = floorRow + 1 + r;
            inv_.rows.push_back(std::move(row));
        }

        // Tier 2 of the zone.
        std::vector<std::uint32_t> t2;
        t2.reserve(std::size_t(f.tier2.count));
        for (int i = 0; i < f.tier2.count; ++i)
            t2.push_back(addSwitch((roce ? ctswP_ : spineP_).format({.zone = zoneName, .n = i + 1}),
                                   roce ? SwitchRole::Ctsw : SwitchRole::Spine, f.tier2.model,
                                   zoneName, {}, netRow, &f.tier2.source));

        // InfiniBand leaves: one per rail per scalable unit, in the network row above the SU.
        std::vector<std::uint32_t> leaves;
        const int nics = hm.backendNics;
        if (!roce) {
            int sus = z.racks * z.hostsPerRack / f.hostsPerSu;
            leaves.reserve(std::size_t(sus) * nics);
            std::string suName;
            for (int s = 0; s < sus; ++s) {
                suName = suP_.format({.zone = zoneName, .n = suCount_ + s + 1});
                int firstRack = s * f.hostsPerSu / std::max(1, z.hostsPerRack);
                Loc loc{(firstRack % racksPerRow) * spec_.floor.rackWidthM, netRow.y, -1};
                for (int i = 0; i < nics; ++i)
                    leaves.push_back(addSwitch(
                        leafP_.format({.zone = zoneName, .su = suName, .n = i + 1}),
                        SwitchRole::Leaf, f.tier1.model, zoneName, {}, loc, &f.tier1.source));
            }
            suCount_ += sus;
        }

        const int hostsPerRackNominal = z.hostsPerRack;
        const int fePerHost = hm.frontendNics;
        std::uint32_t rowFsw = 0;
        Loc rowFswLoc;
        for (int r = 0; r < z.racks; ++r) {
            const int rowIdx = r / racksPerRow, pos = r % racksPerRow;
            const Text& rowName = inv_.rows[firstRow + rowIdx].name;
            if (fe.enabled && fe.fswPerRow && pos == 0) {
                // A row's fsw sits at the row's end.
                rowFswLoc = Loc{-spec_.floor.rackWidthM,
                                (floorRow + 1 + rowIdx) * spec_.floor.rowPitchM, -1};
                rowFsw =
                    addSwitch(fswP_.format({.zone = zoneName, .row = rowName}), SwitchRole::Fsw,
                              fe.fswModel, zoneName, {}, rowFswLoc, &fe.source);
                frontendUplinks(rowFsw, racksPerRow * hostsPerRackNominal * fePerHost, rowFswLoc);
            }
            auto [rackIdx, hosts] =
                addRack(rackP_.format({.zone = zoneName, .row = rowName, .n = r + 1}), rowName,
                        zoneName, pos, z.rackModel, hostsPerRackNominal, {}, z.source);
            const Text& rackName = inv_.racks[std::size_t(rackIdx)].name;
            Loc loc = rackLoc(floorRow + 1 + rowIdx, pos, rackIdx);

            std::uint32_t rtsw = 0;
            if (roce)
                rtsw =
                    addSwitch(rtswP_.format({.zone = zoneName, .rack = rackName}), SwitchRole::Rtsw,
                              f.tier1.model, zoneName, rackName, loc, &f.tier1.source);
            std::uint32_t fsw = rowFsw;
            Loc fswLoc = rowFswLoc;
            if (fe.enabled && !fe.fswPerRow) {
                fsw = addSwitch(fswP_.format({.zone = zoneName, .row = rowName, .rack = rackName}),
                                SwitchRole::Fsw, fe.fswModel, zoneName, rackName, loc, &fe.source);
                fswLoc = loc;
            }

            for (int slot = 0; slot < hosts; ++slot) {
                std::uint32_t nicPort =
                    addHost(hostP_.format({.rack = rackName, .n = slot}), rackName, slot, hm);
                for (int i = 0; i < nics; ++i) {
                    std::uint32_t swPort;
                    if (roce) {
                        swPort = switchPort(rtsw, slot * nics + i + 1);
                        link(nicPort + i, swPort, Network::Backend, loc, loc);
                    } else {
                        // Rail-optimized: NIC i of host k of the SU goes to port k+1 of leaf i.
                        int ordinal = r * hostsPerRackNominal + slot;
                        int su = ordinal / f.hostsPerSu, k = ordinal % f.hostsPerSu;
                        std::uint32_t leaf = leaves[std::size_t(su) * nics + i];
                        swPort = switchPort(leaf, k + 1);
                        link(nicPort + i, swPort, Network::Backend, loc, switchLoc_[leaf]);
                    }
                }
                if (fe.enabled) {
                    int base = fe.fswPerRow ? (pos * hostsPerRackNominal + slot) * fePerHost
                                            : slot * fePerHost;
                    for (int i = 0; i < fePerHost; ++i)
                        link(nicPort + nics + i, switchPort(fsw, base + i + 1), Network::Frontend,
                             loc, fswLoc);
                }
            }
            if (fe.enabled && !fe.fswPerRow)
                frontendUplinks(fsw, hostsPerRackNominal * fePerHost, fswLoc);

            if (roce) {
                // RTSW uplink u goes to CTSW (u mod S) on its port rack*perT2 + u/S + 1.
                const int down = hostsPerRackNominal * nics;
                for (int u = 0; u < f.tier1.uplinks; ++u) {
                    std::uint32_t c = t2[std::size_t(u % f.tier2.count)];
                    link(switchPort(rtsw, down + u + 1),
                         switchPort(c, r * perT2 + u / f.tier2.count + 1), Network::Backend, loc,
                         netRow);
                }
            }
        }

        int tier1Count = roce ? z.racks : int(leaves.size());
        if (!roce) {
            for (std::size_t l = 0; l < leaves.size(); ++l)
                for (int u = 0; u < f.tier1.uplinks; ++u) {
                    std::uint32_t s = t2[std::size_t(u % f.tier2.count)];
                    link(switchPort(leaves[l], f.hostsPerSu + u + 1),
                         switchPort(s, int(l) * perT2 + u / f.tier2.count + 1), Network::Backend,
                         switchLoc_[leaves[l]], netRow);
                }
        }

        // Tier 2 -> tier 3 in planes: P = gcd(tier-2 per zone, tier-3 count) planes; tier-2
        // switch j is in plane j mod P, whose group is tier-3 switches p*G .. p*G+G-1
        // (G = tier-3 count / P). The k-th link into a plane, counted zone by zone, then by
        // switch, then by uplink, lands on group member k mod G, on its port k/G + 1.
        if (f.tier3.count > 0) {
            const int planes = std::gcd(f.tier2.count, f.tier3.count);
            const int groupSize = f.tier3.count / planes;
            const int perPlane = f.tier2.count / planes;  // tier-2 switches of a zone in a plane
            const int down2 = tier1Count * perT2;
            for (int j = 0; j < f.tier2.count; ++j) {
                const int p = j % planes;
                for (int u = 0; u < f.tier2.uplinks; ++u) {
                    int k = (zi * perPlane + j / planes) * f.tier2.uplinks + u;
                    std::uint32_t top = tier3_[std::size_t(p * groupSize + k % groupSize)];
                    link(switchPort(t2[std::size_t(j)], down2 + u + 1),
                         switchPort(top, k / groupSize + 1), Network::Backend, netRow,
                         switchLoc_[top]);
                }
            }
        }
    }

    // The k-th frontend uplink overall (fsws in creation order, then ssws) goes to fcsw
    // (k mod C), port k/C + 1.
    void frontendUplinks(std::uint32_t sw, int firstPort, const Loc& loc, int uplinks = -1,
                         Network net = Network::Frontend) {
        if (uplinks < 0) uplinks = spec_.frontend.fswUplinks;
        if (fcsw_.empty()) return;
        const std::size_t c = fcsw_.size();
        for (int u = 0; u < uplinks; ++u, ++feUplink_) {
            std::uint32_t top = fcsw_[feUplink_ % c];
            link(switchPort(sw, firstPort + u + 1), switchPort(top, int(feUplink_ / c) + 1), net,
                 loc, switchLoc_[top]);
        }
    }

    void expandStorage(int zi, int floorRow) {
        const StorageSpec& st = spec_.storage;
        const StorageModelSpec& sm = *spec_.storageModel(st.model);
        const std::string zoneName = spec_.zones[std::size_t(zi)].name;
        Row row;
        row.name = storageRowP_.format({.zone = zoneName, .n = 1});
        row.zone = zoneName;
        row.index = floorRow;
        inv_.rows.push_back(std::move(row));
        const Text rowName = inv_.rows.back().name;
        std::string buf;
        for (int r = 0; r < st.racks; ++r) {
            auto [rackIdx, nodes] =
                addRack(storageRackP_.format({.zone = zoneName, .row = rowName, .n = r + 1}),
                        rowName, zoneName, r, "storage", st.nodesPerRack, {}, st.source);
            const Text& rackName = inv_.racks[std::size_t(rackIdx)].name;
            Loc loc = rackLoc(floorRow, r, rackIdx);
            std::uint32_t ssw =
                addSwitch(sswP_.format({.zone = zoneName, .rack = rackName}), SwitchRole::Ssw,
                          st.sswModel, zoneName, rackName, loc, &st.source);
            for (int n = 0; n < nodes; ++n) {
                StorageNode node;
                node.name = storageNodeP_.format({.rack = rackName, .n = n});
                node.rack = rackName;
                node.model = sm.name;
                node.capacityTb = sm.capacityTb;
                inv_.storageNodes.push_back(std::move(node));
                const Text& nn = inv_.storageNodes.back().name;
                for (int i = 0; i < sm.nics; ++i) {
                    buf = nn;
                    buf += "-nic";
                    NamePattern::appendNumber(buf, i, 0);
                    std::uint32_t p = addNic(std::move(buf), nn, i, Network::Storage, sm.nicModel,
                                             sm.nicSpeedGbps);
                    link(p, switchPort(ssw, n * sm.nics + i + 1), Network::Storage, loc, loc);
                }
            }
            frontendUplinks(ssw, st.nodesPerRack * sm.nics, loc, st.sswUplinks, Network::Storage);
        }
    }

    const ClusterSpec& spec_;
    Inventory inv_;
    NamePattern zoneRowP_, rackP_, hostP_, rtswP_, ctswP_, atswP_, suP_, leafP_, spineP_, coreP_,
        fswP_, fcswP_, storageRowP_, storageRackP_, storageNodeP_, sswP_;
    detail::OverrideIndex rackOverride_, switchOverride_;
    std::vector<bool> rackOverrideUsed_, switchOverrideUsed_;
    std::vector<std::uint32_t> tier3_, fcsw_;
    std::vector<Loc> switchLoc_;
    std::vector<int> switchMaxPort_;
    std::vector<const SpecSource*> switchSource_;
    std::vector<std::array<std::uint32_t, 2>> linkEnds_;
    std::size_t feUplink_ = 0;
    int suCount_ = 0;
};

// Names the patterns made: at most kMaxNameChars characters, as every name written in a spec
// (a longer one failed at apply with PostgreSQL's 54000 once past an index's row size).
// Checked here, so `loomd apply --dry-run` refuses what apply would.
void checkNameLengths(const Inventory& inv) {
    auto check = [](const auto& list, auto pathOf) {
        for (const auto& e : list)
            if (e.name.size() > kMaxNameChars)
                throw ExpandFailure{Error::invalid(
                    "makes the name \"" + std::string(e.name).substr(0, 40) + "...\" of " +
                        std::to_string(e.name.size()) + " characters, above the limit of " +
                        std::to_string(kMaxNameChars),
                    pathOf(e))};
    };
    auto fixed = [](const char* key) {
        return [key](const auto&) { return std::string("spec.naming.") + key; };
    };
    check(inv.zones, fixed("zone"));
    check(inv.rows, fixed("row"));
    check(inv.racks, fixed("rack"));
    check(inv.hosts, fixed("host"));
    check(inv.switches,
          [](const Switch& s) { return "spec.naming." + std::string(switchRoleName(s.role)); });
    check(inv.storageNodes, fixed("storageNode"));
}

}  // namespace

Result<Inventory> expandClusterSpec(const ClusterSpec& spec) {
    try {
        Expander e(spec);
        auto inv = e.run();
        checkNameLengths(inv);
        return inv;
    } catch (const ExpandFailure& f) {
        return fail(f.error);
    } catch (const std::bad_alloc&) {
        return fail(Error{Errc::TooLarge, "cluster too large to expand in memory"});
    }
}

}  // namespace loom::inventory
