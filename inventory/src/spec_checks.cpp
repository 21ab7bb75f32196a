// The cluster spec's checks across sections (spec_checks.hpp): naming patterns, expansion
// size and port capacity, on a ClusterSpec whose sections SpecParser has read.
#include "spec_checks.hpp"

#include <algorithm>
#include <numeric>

#include "loom/inventory/name_limits.hpp"
#include "loom/inventory/yaml_reader.hpp"
#include "spec_pattern.hpp"

namespace loom::inventory::detail {

using yaml::failAt;

const std::vector<PatternField>& patternFields() {
    using V = PatternVar;
    static const std::vector<PatternField> f = {
        {"zone", &NamingSpec::zone, std::uint8_t(varBit(V::Site) | varBit(V::N))},
        {"row", &NamingSpec::row, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
        {"rack", &NamingSpec::rack, std::uint8_t(varBit(V::Zone) | varBit(V::Row) | varBit(V::N))},
        {"host", &NamingSpec::host, std::uint8_t(varBit(V::Rack) | varBit(V::N))},
        {"rtsw", &NamingSpec::rtsw, std::uint8_t(varBit(V::Zone) | varBit(V::Rack))},
        {"ctsw", &NamingSpec::ctsw, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
        {"atsw", &NamingSpec::atsw, std::uint8_t(varBit(V::Site) | varBit(V::N))},
        {"su", &NamingSpec::su, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
        {"leaf", &NamingSpec::leaf, std::uint8_t(varBit(V::Zone) | varBit(V::Su) | varBit(V::N))},
        {"spine", &NamingSpec::spine, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
        {"core", &NamingSpec::core, std::uint8_t(varBit(V::Site) | varBit(V::N))},
        {"fsw", &NamingSpec::fsw, std::uint8_t(varBit(V::Zone) | varBit(V::Row) | varBit(V::Rack))},
        {"fcsw", &NamingSpec::fcsw, std::uint8_t(varBit(V::Site) | varBit(V::N))},
        {"storageRow", &NamingSpec::storageRow, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
        {"storageRack", &NamingSpec::storageRack,
         std::uint8_t(varBit(V::Zone) | varBit(V::Row) | varBit(V::N))},
        {"storageNode", &NamingSpec::storageNode, std::uint8_t(varBit(V::Rack) | varBit(V::N))},
        {"ssw", &NamingSpec::ssw, std::uint8_t(varBit(V::Zone) | varBit(V::Rack))},
    };
    return f;
}

void checkPatterns(ClusterSpec& spec, NamingLines& lines) {
    if (spec.naming.fsw.empty())
        spec.naming.fsw = spec.frontend.fswPerRow ? "{row}-fsw" : "{rack}-fsw";
    for (auto& f : patternFields()) {
        detail::NamePattern p;
        std::uint8_t allowed = f.allowed;
        if (f.key == "fsw" && spec.frontend.fswPerRow) allowed &= ~varBit(PatternVar::Rack);
        std::string path = "spec.naming." + std::string(f.key);
        int line = lines.count(std::string(f.key)) ? lines[std::string(f.key)] : 0;
        const std::string& text = spec.naming.*(f.field);
        // The names a pattern makes are at most kMaxNameChars (checked after expansion too);
        // a longer pattern cannot make a valid one.
        if (text.size() > kMaxNameChars)
            failAt("must be at most " + std::to_string(kMaxNameChars) + " characters, not " +
                       std::to_string(text.size()),
                   path, line);
        if (auto err = p.compile(text, allowed)) failAt(*err, path, line);
    }
    // Patterns that name many things must tell them apart.
    auto needs = [&](std::string_view key, const std::string& text, std::string_view var) {
        if (text.find(var) == std::string::npos) {
            std::string path = "spec.naming." + std::string(key);
            int line = lines.count(std::string(key)) ? lines[std::string(key)] : 0;
            failAt("must contain " + std::string(var) + " so that the names are unique", path,
                   line);
        }
    };
    const auto& nm = spec.naming;
    needs("host", nm.host, "{rack}");
    needs("rack", nm.rack, "{n");
    needs("host", nm.host, "{n");
    if (spec.fabric.type == FabricType::Roce) {
        needs("rtsw", nm.rtsw, "{rack}");
    } else {
        needs("leaf", nm.leaf, "{n");
    }
}

void checkSize(const ClusterSpec& spec, const SpecLimits& limits) {
    // Hosts, GPUs, NICs with their port, their cable and its switch-side port, and every
    // switch with its cabled ports (a cable and its two ports: 3). Within ~1 % of what the spec
    // expands to (SpecCounts.TheEntityLimitCountsWhatTheSpecExpandsTo): it left out the NICs'
    // switch-side ports once, 11 % under at 196k GPUs.
    const auto& f = spec.fabric;
    const auto& fe = spec.frontend;
    long double total = 2 + (long double)f.tier3.count + fe.fcswCount;
    for (auto& z : spec.zones) {
        const HostModelSpec* hm = spec.hostModel(z.hostModel);
        long double hosts = (long double)z.racks * z.hostsPerRack;
        total += z.rows + z.racks * 2.0L;
        total += hosts * (1 + hm->gpus + 4.0L * (hm->backendNics + hm->frontendNics));
        long double t1 = f.type == FabricType::Roce ? (long double)z.racks
                                                    : hosts / f.hostsPerSu * hm->backendNics;
        total += t1 * (1 + 3.0L * f.tier1.uplinks) +
                 (long double)f.tier2.count * (1 + 3.0L * f.tier2.uplinks);
        if (fe.enabled) {
            long double fsw = fe.fswPerRow ? z.rows : z.racks;
            total += fsw * (1 + 3.0L * fe.fswUplinks);
        }
    }
    if (spec.storage.enabled) {
        const StorageModelSpec* sm = spec.storageModel(spec.storage.model);
        // The nodes with their NICs' cables, and each storage rack with its ssw's uplinks.
        total +=
            (long double)spec.storage.racks * spec.storage.nodesPerRack * (1 + 4.0L * sm->nics) +
            1 + (long double)spec.storage.racks * (2 + 3.0L * spec.storage.sswUplinks);
    }
    if (total > (long double)limits.maxEntities)
        failAt("expands to about " + std::to_string((long long)total) +
                   " entities, above the limit of " + std::to_string(limits.maxEntities),
               "spec.zones", 0);
}

void checkCapacity(const ClusterSpec& spec) {
    auto& f = spec.fabric;
    auto check = [&](const std::string& modelName, long long needed, const SpecSource& src,
                     const std::string& what) {
        const SwitchModelSpec* m = spec.switchModel(modelName);
        if (m && needed > m->ports)
            failAt(what + " needs " + std::to_string(needed) + " ports but switch model \"" +
                       modelName + "\" has " + std::to_string(m->ports),
                   src.path, src.line);
    };
    long long maxDown2 = 0, zonesTotal = (long long)spec.zones.size();
    for (auto& z : spec.zones) {
        const HostModelSpec* hm = spec.hostModel(z.hostModel);
        long long per = f.tier1.uplinks / f.tier2.count;
        if (f.type == FabricType::Roce) {
            long long down1 = (long long)z.hostsPerRack * hm->backendNics;
            check(f.tier1.model, down1 + f.tier1.uplinks, f.tier1.source,
                  "an rtsw in zone " + z.name + " (" + std::to_string(down1) + " downlinks + " +
                      std::to_string(f.tier1.uplinks) + " uplinks)");
            maxDown2 = std::max(maxDown2, (long long)z.racks * per);
        } else {
            check(f.tier1.model, (long long)f.hostsPerSu + f.tier1.uplinks, f.tier1.source,
                  "a leaf (" + std::to_string(f.hostsPerSu) + " downlinks + " +
                      std::to_string(f.tier1.uplinks) + " uplinks)");
            long long leaves = (long long)z.racks * z.hostsPerRack / f.hostsPerSu * hm->backendNics;
            maxDown2 = std::max(maxDown2, leaves * per);
        }
    }
    std::string t2 = f.type == FabricType::Roce ? "a ctsw" : "a spine";
    check(f.tier2.model, maxDown2 + f.tier2.uplinks, f.tier2.source,
          t2 + " (" + std::to_string(maxDown2) + " downlinks + " + std::to_string(f.tier2.uplinks) +
              " uplinks)");
    if (f.tier3.count > 0) {
        // Planes: see the tier-3 rule in docs/cluster-spec.md.
        long long planes = std::gcd(f.tier2.count, f.tier3.count);
        long long group = f.tier3.count / planes;
        long long links = zonesTotal * (f.tier2.count / planes) * f.tier2.uplinks;
        check(f.tier3.model, (links + group - 1) / group, f.tier3.source,
              std::string(f.type == FabricType::Roce ? "an atsw" : "a core") + " (" +
                  std::to_string(links) + " links from each plane over " + std::to_string(group) +
                  " switches)");
    }
    auto& fe = spec.frontend;
    if (fe.enabled) {
        long long maxHosts = 0, maxFe = 0, fswCount = 0;
        for (auto& z : spec.zones) {
            const HostModelSpec* hm = spec.hostModel(z.hostModel);
            long long perFsw =
                fe.fswPerRow ? (long long)(z.racks / z.rows) * z.hostsPerRack : z.hostsPerRack;
            maxHosts = std::max(maxHosts, perFsw * hm->frontendNics);
            maxFe = std::max<long long>(maxFe, hm->frontendNics);
            fswCount += fe.fswPerRow ? z.rows : z.racks;
        }
        check(fe.fswModel, maxHosts + fe.fswUplinks, fe.source,
              "an fsw (" + std::to_string(maxHosts) + " host ports + " +
                  std::to_string(fe.fswUplinks) + " uplinks)");
        if (fe.fcswCount > 0) {
            long long links =
                fswCount * fe.fswUplinks +
                (spec.storage.enabled ? (long long)spec.storage.racks * spec.storage.sswUplinks
                                      : 0);
            check(fe.fcswModel, (links + fe.fcswCount - 1) / fe.fcswCount, fe.source,
                  "an fcsw (" + std::to_string(links) + " uplinks over " +
                      std::to_string(fe.fcswCount) + " fcsws)");
        }
    }
    auto& st = spec.storage;
    if (st.enabled) {
        const StorageModelSpec* sm = spec.storageModel(st.model);
        check(st.sswModel, (long long)st.nodesPerRack * sm->nics + st.sswUplinks, st.source,
              "an ssw (" + std::to_string(st.nodesPerRack * sm->nics) + " node ports + " +
                  std::to_string(st.sswUplinks) + " uplinks)");
    }
}

}  // namespace loom::inventory::detail
