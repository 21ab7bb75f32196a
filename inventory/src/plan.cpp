#include "loom/inventory/plan.hpp"

#include "loom/inventory/kinds.hpp"
#include "loom/inventory/name_table.hpp"

#include <charconv>
#include <cstdint>
#include <string_view>
#include <unordered_set>

namespace loom::inventory {
namespace {

std::string text(const Text& s) { return s.str(); }
std::string text(int v) { return std::to_string(v); }
std::string text(double v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}
std::string text(Network v) { return std::string(networkName(v)); }
std::string text(Medium v) { return std::string(mediumName(v)); }
std::string text(SwitchRole v) { return std::string(switchRoleName(v)); }
std::string text(DeviceKind v) { return std::string(deviceKindName(v)); }
std::string text(const Labels& labels) {
    std::string out;
    for (const auto& [k, v] : labels) {
        if (!out.empty()) out += ',';
        out += k;
        out += '=';
        out += v;
    }
    return out;
}

// Collects differing spec fields; the value is rendered only when it differs, so a no-op
// plan of 300k entities allocates nothing per field.
struct Differ {
    std::vector<FieldChange>* out;
    template <class V>
    void operator()(std::string_view field, const V& desired, const V& current) const {
        if (desired == current) return;
        out->push_back(FieldChange{std::string(field), text(current), text(desired)});
    }
};

// The spec fields of kinds.hpp, in their order there.
template <class T>
void diff(const T& d, const T& c, Differ f) {
    forEachField<T>([&](auto i) {
        constexpr auto& fd = std::get<i>(KindDesc<T>::fields);
        if constexpr (fd.group == Group::Spec && fd.member != nullptr)
            f(fd.api, d.*fd.member, c.*fd.member);
    });
}

template <class T>
void planKind(const std::vector<T>& desired, const std::vector<T>& current, bool prune,
              KindPlan& out) {
    // One table for both sides: current names (index i), then desired names not in current
    // (index current.size() + i), so a name seen twice in desired is caught whether or not it
    // exists in current.
    const std::size_t nc = current.size();
    NameTable byName;
    byName.reserve(nc + desired.size());
    auto nameOf = [&](std::uint32_t i) -> std::string_view {
        return i < nc ? current[i].name : desired[i - nc].name;
    };
    for (std::size_t i = 0; i < nc; ++i)
        byName.insert(current[i].name, static_cast<std::uint32_t>(i), nameOf);
    std::vector<bool> matched(nc, false);
    if (nc == 0) {  // a kind stored for the first time: every name a create
        out.creates.reserve(desired.size());
        out.createNames.reserve(desired.size());
    }

    for (std::size_t i = 0; i < desired.size(); ++i) {
        const T& d = desired[i];
        auto [at, inserted] = byName.insert(d.name, static_cast<std::uint32_t>(nc + i), nameOf);
        if (inserted) {
            out.creates.push_back(i);
            out.createNames.push_back(d.name);
            continue;
        }
        if (at >= nc || matched[at]) {
            out.duplicates.emplace_back(d.name);
            continue;
        }
        matched[at] = true;
        std::vector<FieldChange> changes;
        diff(d, current[at], Differ{&changes});
        if (!changes.empty()) out.updates.push_back(Update{d.name.str(), i, std::move(changes)});
    }
    for (std::size_t i = 0; i < nc; ++i) {
        if (matched[i]) continue;
        (prune ? out.deletes : out.wouldDelete).emplace_back(current[i].name);
    }
}

template <class F>
void forEachKind(const Inventory& d, const Inventory& c, F&& f) {
    f(Kind::Site, d.sites, c.sites);
    f(Kind::Zone, d.zones, c.zones);
    f(Kind::Row, d.rows, c.rows);
    f(Kind::Rack, d.racks, c.racks);
    f(Kind::Host, d.hosts, c.hosts);
    f(Kind::Gpu, d.gpus, c.gpus);
    f(Kind::Nic, d.nics, c.nics);
    f(Kind::Switch, d.switches, c.switches);
    f(Kind::Port, d.ports, c.ports);
    f(Kind::Link, d.links, c.links);
    f(Kind::StorageNode, d.storageNodes, c.storageNodes);
}

template <class Name>
void appendNames(std::string& out, const std::vector<Name>& names, int max) {
    out += " (";
    int n = 0;
    for (const auto& name : names) {
        if (n == max) {
            out += ", ...";
            break;
        }
        if (n++) out += ", ";
        out += name;
    }
    out += ')';
}

}  // namespace

std::size_t Plan::creates() const {
    std::size_t n = 0;
    for (const auto& k : kinds) n += k.creates.size();
    return n;
}
std::size_t Plan::updates() const {
    std::size_t n = 0;
    for (const auto& k : kinds) n += k.updates.size();
    return n;
}
std::size_t Plan::deletes() const {
    std::size_t n = 0;
    for (const auto& k : kinds) n += k.deletes.size();
    return n;
}
std::size_t Plan::wouldDelete() const {
    std::size_t n = 0;
    for (const auto& k : kinds) n += k.wouldDelete.size();
    return n;
}
bool Plan::hasDuplicates() const {
    for (const auto& k : kinds)
        if (!k.duplicates.empty()) return true;
    return false;
}
bool Plan::empty() const {
    for (const auto& k : kinds)
        if (!k.empty()) return false;
    return clusterChanges.empty();
}

Plan plan(const Inventory& desired, const Inventory& current, PlanOptions options) {
    Plan p;
    p.prune = options.prune;
    forEachKind(desired, current, [&](Kind k, const auto& d, const auto& c) {
        KindPlan& kp = p.of(k);
        kp.kind = k;
        planKind(d.vec(), c.vec(), options.prune, kp);
    });
    // A port holds one cable: a stored link on a port that a desired link (of another name)
    // uses was replaced by the spec, so it is deleted also without prune (growing dev-small
    // into a bigger cluster recables its uplinks; keeping the old cables violated the unique
    // link ends at commit).
    KindPlan& links = p.of(Kind::Link);
    if (!options.prune && !links.wouldDelete.empty()) {
        std::unordered_set<std::string_view> usedPorts;
        usedPorts.reserve(desired.links.size() * 2);
        for (const Link& l : desired.links) {
            usedPorts.insert(l.aPort);
            usedPorts.insert(l.bPort);
        }
        std::unordered_set<std::string_view> kept(links.wouldDelete.begin(),
                                                  links.wouldDelete.end());
        std::unordered_set<std::string_view> displaced;
        for (const Link& l : current.links)
            if (kept.contains(l.name) &&
                (usedPorts.contains(l.aPort) || usedPorts.contains(l.bPort)))
                displaced.insert(l.name);
        if (!displaced.empty()) {
            std::vector<std::string> stillKept;
            for (std::string& name : links.wouldDelete)
                (displaced.contains(name) ? links.deletes : stillKept).push_back(std::move(name));
            links.wouldDelete = std::move(stillKept);
        }
    }
    if (desired.cluster != current.cluster)
        p.clusterChanges.push_back({"cluster", current.cluster, desired.cluster});
    if (desired.fabric != current.fabric)
        p.clusterChanges.push_back({"fabric", std::string(fabricTypeName(current.fabric)),
                                    std::string(fabricTypeName(desired.fabric))});
    return p;
}

std::string formatPlan(const Plan& p, int maxNamesPerKind) {
    std::string out;
    for (const auto& c : p.clusterChanges)
        out += "cluster: " + c.field + " \"" + c.before + "\" -> \"" + c.after + "\"\n";
    for (const KindPlan& k : p.kinds) {
        if (k.empty() && k.wouldDelete.empty() && k.duplicates.empty()) continue;
        out += kindName(k.kind);
        out += ": ";
        out += std::to_string(k.creates.size()) + " to create";
        if (!k.creates.empty()) appendNames(out, k.createNames, maxNamesPerKind);
        out += ", " + std::to_string(k.updates.size()) + " to update";
        if (!k.updates.empty()) {
            out += " (";
            int n = 0;
            for (const Update& u : k.updates) {
                if (n == maxNamesPerKind) {
                    out += ", ...";
                    break;
                }
                if (n++) out += ", ";
                out += u.name + ":";
                for (std::size_t i = 0; i < u.changes.size(); ++i)
                    out += (i ? "," : " ") + u.changes[i].field;
            }
            out += ')';
        }
        out += ", " + std::to_string(k.deletes.size()) + " to delete";
        if (!k.deletes.empty()) appendNames(out, k.deletes, maxNamesPerKind);
        if (!k.wouldDelete.empty()) {
            out += "; " + std::to_string(k.wouldDelete.size()) + " would delete with --prune";
            appendNames(out, k.wouldDelete, maxNamesPerKind);
        }
        if (!k.duplicates.empty()) {
            out += "; " + std::to_string(k.duplicates.size()) + " duplicate names";
            appendNames(out, k.duplicates, maxNamesPerKind);
        }
        out += '\n';
    }
    if (p.empty()) {
        out += "no changes";
        if (p.wouldDelete() > 0)
            out += " (" + std::to_string(p.wouldDelete()) + " would delete with --prune)";
        out += '\n';
    } else {
        out += "plan: " + std::to_string(p.creates()) + " to create, " +
               std::to_string(p.updates()) + " to update, " + std::to_string(p.deletes()) +
               " to delete\n";
    }
    return out;
}

std::vector<KindSummary> summarize(const Plan& p, int maxNamesPerKind) {
    std::vector<KindSummary> out;
    auto firstN = [&](const auto& src, auto&& nameOf) {
        std::vector<std::string> names;
        for (const auto& x : src) {
            if (static_cast<int>(names.size()) == maxNamesPerKind) break;
            names.push_back(nameOf(x));
        }
        return names;
    };
    auto same = [](std::string_view s) { return std::string(s); };
    for (const KindPlan& k : p.kinds) {
        KindSummary s;
        s.kind = std::string(kindPlural(k.kind));
        s.creates = k.creates.size();
        s.updates = k.updates.size();
        s.deletes = k.deletes.size();
        s.wouldDelete = k.wouldDelete.size();
        s.createNames = firstN(k.createNames, same);
        s.updateNames = firstN(k.updates, [](const Update& u) { return u.name; });
        s.deleteNames = firstN(k.deletes, same);
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace loom::inventory
