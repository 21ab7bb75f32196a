// Parsing of the cluster spec (docs/cluster-spec.md): SpecParser reads the document section by
// section in the document's own order into a ClusterSpec. The generic YAML reading is in
// yaml_reader.cpp, the naming patterns in spec_pattern.cpp, and the checks across sections
// (patterns, size, port capacity) in spec_checks.cpp.
//
// yaml-cpp throws; everything here runs inside one try block in parseClusterSpec, and the
// readers below report a bad document by throwing yaml::Failure, which never leaves this file.
// That keeps the field-by-field reading flat instead of threading a Result through ~100 reads.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "loom/inventory/input_guard.hpp"
#include "loom/inventory/nic_identity.hpp"
#include "loom/inventory/port_naming.hpp"
#include "loom/inventory/spec.hpp"
#include "loom/inventory/yaml_reader.hpp"
#include "spec_checks.hpp"
#include "spec_pattern.hpp"

namespace loom::inventory {

namespace {

using detail::patternFields;
using detail::PatternVar;
using detail::varBit;

using yaml::describe;
using yaml::failAt;
using yaml::forEachItem;
using yaml::lineOf;
using yaml::MapReader;
using yaml::minMessage;

// Counts nodes (aliases once per use, which is what defeats "billion laughs") and nesting
// depth before anything reads the document.
void guardShape(const YAML::Node& n, int depth, std::size_t& count, const SpecLimits& limits,
                const std::string& path) {
    if (++count > limits.maxNodes)
        failAt("document has more than " + std::to_string(limits.maxNodes) +
                   " nodes (aliases count once per use)",
               path, lineOf(n), Errc::TooLarge);
    if (depth > limits.maxDepth)
        failAt("nested deeper than " + std::to_string(limits.maxDepth) + " levels", path,
               lineOf(n));
    if (n.IsMap()) {
        for (auto it = n.begin(); it != n.end(); ++it) {
            ++count;
            std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
            guardShape(it->second, depth + 1, count, limits, path.empty() ? key : path + "." + key);
        }
    } else if (n.IsSequence()) {
        std::size_t i = 0;
        for (auto it = n.begin(); it != n.end(); ++it, ++i)
            guardShape(*it, depth + 1, count, limits, path + "[" + std::to_string(i) + "]");
    }
}

class SpecParser {
public:
    explicit SpecParser(const SpecLimits& limits) : limits_(limits) { spec_.limits = limits; }

    ClusterSpec parse(const YAML::Node& root) {
        MapReader doc(root, "", {"apiVersion", "kind", "metadata", "spec"});
        std::string api = doc.requireString("apiVersion");
        if (api != "loom/v1")
            failAt("unsupported apiVersion \"" + api + "\"; expected \"loom/v1\"", "apiVersion",
                   lineOf(doc.get("apiVersion")));
        std::string kind = doc.requireString("kind");
        if (kind != "Cluster")
            failAt("kind must be \"Cluster\", got \"" + kind + "\"", "kind",
                   lineOf(doc.get("kind")));
        MapReader meta(doc.require("metadata"), "metadata", {"name", "labels"});
        spec_.name = meta.name("name");
        spec_.siteLabels = meta.labels("labels");

        MapReader spec(doc.require("spec"), "spec",
                       {"site", "models", "naming", "floor", "zones", "fabric", "frontend",
                        "storage", "overrides"});
        readSite(spec);
        readModels(
            MapReader(spec.require("models"), "spec.models", {"hosts", "switches", "storage"}));
        if (spec.has("naming")) readNaming(spec.get("naming"));
        if (spec.has("floor")) readFloor(spec.get("floor"));
        readZones(spec.require("zones"), "spec.zones");
        readFabric(spec.require("fabric"), "spec.fabric");
        if (spec.has("frontend")) readFrontend(spec.get("frontend"), "spec.frontend");
        if (spec.has("storage")) readStorage(spec.get("storage"), "spec.storage");
        if (spec.has("overrides")) readOverrides(spec.get("overrides"), "spec.overrides");
        detail::checkPatterns(spec_, namingLines_);
        detail::checkSize(spec_, limits_);
        detail::checkCapacity(spec_);
        return std::move(spec_);
    }

private:
    void readSite(const MapReader& spec) {
        MapReader site(spec.require("site"), "spec.site", {"name", "description", "labels"});
        spec_.siteName = site.name("name");
        spec_.siteDescription = site.string("description");
        Labels extra = site.labels("labels");
        for (auto& l : extra) {
            auto pos = std::lower_bound(spec_.siteLabels.begin(), spec_.siteLabels.end(), l);
            if (pos != spec_.siteLabels.end() && pos->first == l.first)
                pos->second = l.second;
            else
                spec_.siteLabels.insert(pos, l);
        }
    }

    void readModels(const MapReader& models) {
        forEachItem(
            models.require("hosts"), models.at("hosts"), 1000,
            [&](const YAML::Node& n, const std::string& p) {
                MapReader m(
                    n, p,
                    {"name", "gpus", "gpuModel", "backendNics", "backendNicModel",
                     "backendSpeedGbps", "frontendNics", "frontendNicModel", "frontendSpeedGbps",
                     "backendNicHcaType", "frontendNicHcaType", "backendNicPci", "frontendNicPci"});
                HostModelSpec h;
                h.name = m.name("name");
                h.gpus = int(m.integer("gpus", h.gpus, 0, limits_.maxGpusPerHost));
                h.gpuModel = m.string("gpuModel", h.gpuModel);
                h.backendNics = int(m.integer("backendNics", h.gpus, 0, limits_.maxNicsPerHost));
                if (h.gpus > 0 && h.backendNics != h.gpus)
                    failAt("must equal gpus (" + std::to_string(h.gpus) +
                               "): one backend NIC per GPU, NIC i on rail i",
                           m.at("backendNics"), lineOf(m.get("backendNics")));
                h.backendNicModel = m.string("backendNicModel", h.backendNicModel);
                h.backendSpeedGbps =
                    int(m.integer("backendSpeedGbps", h.backendSpeedGbps, 1, 3200));
                h.frontendNics =
                    int(m.integer("frontendNics", h.frontendNics, 0, limits_.maxNicsPerHost));
                h.frontendNicModel = m.string("frontendNicModel", h.frontendNicModel);
                h.frontendSpeedGbps =
                    int(m.integer("frontendSpeedGbps", h.frontendSpeedGbps, 1, 3200));
                h.backendNicHcaType = hcaType(m, "backendNicHcaType", h.backendNicModel);
                h.frontendNicHcaType = hcaType(m, "frontendNicHcaType", h.frontendNicModel);
                h.backendNicPci = pciList(m, "backendNicPci", h.backendNics);
                h.frontendNicPci = pciList(m, "frontendNicPci", h.frontendNics);
                h.source = {p, m.line()};
                for (auto& o : spec_.hostModels)
                    if (o.name == h.name)
                        failAt("duplicate host model \"" + h.name + "\" (first at line " +
                                   std::to_string(o.source.line) + ")",
                               m.at("name"), lineOf(m.get("name")));
                spec_.hostModels.push_back(std::move(h));
            });
        if (spec_.hostModels.empty())
            failAt("must list at least one host model", models.at("hosts"), models.line());
        forEachItem(models.require("switches"), models.at("switches"), 1000,
                    [&](const YAML::Node& n, const std::string& p) {
                        MapReader m(n, p, {"name", "ports", "speedGbps", "portNaming"});
                        SwitchModelSpec s;
                        s.name = m.name("name");
                        s.ports = int(m.requireInteger("ports", 1, limits_.maxSwitchPorts));
                        s.speedGbps = int(m.integer("speedGbps", s.speedGbps, 1, 3200));
                        if (m.has("portNaming")) s.portNaming = portNaming(m);
                        s.source = {p, m.line()};
                        for (auto& o : spec_.switchModels)
                            if (o.name == s.name)
                                failAt("duplicate switch model \"" + s.name + "\" (first at line " +
                                           std::to_string(o.source.line) + ")",
                                       m.at("name"), lineOf(m.get("name")));
                        spec_.switchModels.push_back(std::move(s));
                    });
        if (models.has("storage"))
            forEachItem(
                models.get("storage"), models.at("storage"), 1000,
                [&](const YAML::Node& n, const std::string& p) {
                    MapReader m(n, p, {"name", "capacityTb", "nics", "nicModel", "nicSpeedGbps"});
                    StorageModelSpec s;
                    s.name = m.name("name");
                    s.capacityTb = m.number("capacityTb", 0, 0, 1e6);
                    s.nics = int(m.integer("nics", s.nics, 0, limits_.maxNicsPerHost));
                    s.nicModel = m.string("nicModel", s.nicModel);
                    s.nicSpeedGbps = int(m.integer("nicSpeedGbps", s.nicSpeedGbps, 1, 3200));
                    s.source = {p, m.line()};
                    for (auto& o : spec_.storageModels)
                        if (o.name == s.name)
                            failAt("duplicate storage model \"" + s.name + "\"", m.at("name"),
                                   lineOf(m.get("name")));
                    spec_.storageModels.push_back(std::move(s));
                });
    }

    void readNaming(const YAML::Node& n) {
        std::vector<std::string_view> keys;
        for (auto& f : patternFields()) keys.push_back(f.key);
        MapReader m(n, "spec.naming", keys);
        spec_.naming.source = {"spec.naming", m.line()};
        for (auto& f : patternFields()) {
            if (!m.has(f.key)) continue;
            spec_.naming.*(f.field) = m.requireString(f.key);
            namingLines_[std::string(f.key)] = lineOf(m.get(f.key));
        }
    }

    void readFloor(const YAML::Node& n) {
        MapReader m(n, "spec.floor", {"rackWidthM", "rowPitchM", "inRackM", "slackM", "aocMaxM"});
        auto& f = spec_.floor;
        f.rackWidthM = m.number("rackWidthM", f.rackWidthM, 0.1, 10);
        f.rowPitchM = m.number("rowPitchM", f.rowPitchM, 0.5, 100);
        f.inRackM = m.number("inRackM", f.inRackM, 0.1, 10);
        f.slackM = m.number("slackM", f.slackM, 0, 100);
        f.aocMaxM = m.number("aocMaxM", f.aocMaxM, 0, 1000);
    }

    void readZones(const YAML::Node& v, const std::string& path) {
        detail::NamePattern zonePattern;
        if (auto err = zonePattern.compile(spec_.naming.zone,
                                           varBit(PatternVar::Site) | varBit(PatternVar::N)))
            failAt(*err, "spec.naming.zone", namingLines_["zone"]);
        std::size_t total = 0;
        forEachItem(
            v, path, std::size_t(limits_.maxZones), [&](const YAML::Node& n, const std::string& p) {
                MapReader m(n, p,
                            {"name", "count", "rows", "racks", "hostsPerRack", "hostModel",
                             "rackModel", "labels"});
                int count = int(m.integer("count", 1, 1, limits_.maxZones));
                if (m.has("name") && count != 1)
                    failAt("a zone with a name must have count 1; use spec.naming.zone for several",
                           m.at("count"), lineOf(m.get("count")));
                ZoneSpec z;
                z.rows = int(m.integer("rows", 1, 1, limits_.maxRowsPerZone));
                z.racks = int(m.requireInteger("racks", 1, limits_.maxRacksPerZone));
                if (z.racks % z.rows != 0)
                    failAt("must be a multiple of rows (" + std::to_string(z.rows) + ")",
                           m.at("racks"), lineOf(m.get("racks")));
                z.hostsPerRack = int(m.integer("hostsPerRack", 2, 0, limits_.maxHostsPerRack));
                if (m.has("hostModel")) {
                    z.hostModel = m.requireString("hostModel");
                    if (!spec_.hostModel(z.hostModel))
                        failAt("unknown host model \"" + z.hostModel + "\"" +
                                   knownList(spec_.hostModels),
                               m.at("hostModel"), lineOf(m.get("hostModel")));
                } else if (spec_.hostModels.size() == 1) {
                    z.hostModel = spec_.hostModels[0].name;
                } else {
                    failAt("missing required key (there is more than one host model)",
                           m.at("hostModel"), m.line());
                }
                z.rackModel = m.string("rackModel", z.rackModel);
                z.labels = m.labels("labels");
                z.source = {p, m.line()};
                std::string given = m.name("name", false);
                for (int i = 0; i < count; ++i) {
                    ZoneSpec copy = z;
                    copy.name =
                        !given.empty()
                            ? given
                            : zonePattern.format({.site = spec_.siteName, .n = long(total + 1)});
                    for (auto& o : spec_.zones)
                        if (o.name == copy.name)
                            failAt("duplicate zone name \"" + copy.name + "\" (also " +
                                       o.source.path + ")",
                                   m.has("name") ? m.at("name") : p, m.line());
                    spec_.zones.push_back(std::move(copy));
                    if (++total > std::size_t(limits_.maxZones))
                        failAt("more than " + std::to_string(limits_.maxZones) + " zones", p,
                               m.line());
                }
            });
        if (spec_.zones.empty()) failAt("must list at least one zone", path, lineOf(v));
    }

    template <class T>
    static std::string knownList(const std::vector<T>& models) {
        std::string s = "; known: ";
        for (std::size_t i = 0; i < models.size(); ++i) {
            if (i) s += ", ";
            s += models[i].name;
        }
        return s;
    }

    std::string switchModelRef(const MapReader& m, std::string_view key) {
        std::string model = m.requireString(key);
        if (!spec_.switchModel(model))
            failAt("unknown switch model \"" + model + "\"" + knownList(spec_.switchModels),
                   m.at(key), lineOf(m.get(key)));
        return model;
    }

    void readFabric(const YAML::Node& v, const std::string& path) {
        if (!v.IsMap()) failAt("must be a map, got " + describe(v), path, lineOf(v));
        YAML::Node typeNode = v["type"];
        if (!typeNode.IsDefined()) failAt("missing required key", path + ".type", lineOf(v));
        std::string type = MapReader::asString(typeNode, path + ".type");
        auto ft = parseFabricType(type);
        if (!ft)
            failAt("must be \"roce\" or \"infiniband\", got \"" + type + "\"", path + ".type",
                   lineOf(typeNode));
        auto& f = spec_.fabric;
        f.type = *ft;
        f.source = {path, lineOf(v)};
        if (f.type == FabricType::Roce) {
            MapReader m(v, path, {"type", "rtsw", "ctsw", "atsw"});
            MapReader t1(m.require("rtsw"), m.at("rtsw"), {"model", "uplinks"});
            f.tier1.model = switchModelRef(t1, "model");
            f.tier1.uplinks = int(t1.requireInteger("uplinks", 1, limits_.maxSwitchPorts));
            f.tier1.source = {t1.path(), t1.line()};
            MapReader t2(m.require("ctsw"), m.at("ctsw"),
                         {"model", "perZone", "uplinks", "oversubscription"});
            f.tier2.model = switchModelRef(t2, "model");
            f.tier2.count = int(t2.requireInteger("perZone", 1, limits_.maxSwitchesPerTier));
            f.tier2.source = {t2.path(), t2.line()};
            if (f.tier1.uplinks % f.tier2.count != 0)
                failAt("must be a multiple of ctsw.perZone (" + std::to_string(f.tier2.count) +
                           ") so every CTSW gets the same number of links from each RTSW",
                       t1.at("uplinks"), lineOf(t1.get("uplinks")));
            bool hasT3 = m.has("atsw");
            if (t2.has("uplinks") && t2.has("oversubscription"))
                failAt("give either uplinks or oversubscription, not both",
                       t2.at("oversubscription"), lineOf(t2.get("oversubscription")));
            if (t2.has("oversubscription")) {
                long long ratio = t2.integer("oversubscription", 1, 1, 1024);
                // Downlinks differ per zone; every zone must divide evenly.
                for (auto& z : spec_.zones) {
                    long long down = (long long)z.racks * (f.tier1.uplinks / f.tier2.count);
                    if (down % ratio != 0)
                        failAt("zone " + z.name + " has " + std::to_string(down) +
                                   " CTSW downlinks, not divisible by " + std::to_string(ratio),
                               t2.at("oversubscription"), lineOf(t2.get("oversubscription")));
                    int up = int(down / ratio);
                    if (f.tier2.uplinks != 0 && f.tier2.uplinks != up)
                        failAt(
                            "zones have different CTSW downlink counts; give ctsw.uplinks instead",
                            t2.at("oversubscription"), lineOf(t2.get("oversubscription")));
                    f.tier2.uplinks = up;
                }
            } else {
                f.tier2.uplinks = int(t2.integer("uplinks", 0, 0, limits_.maxSwitchPorts));
            }
            if (hasT3) {
                MapReader t3(m.get("atsw"), m.at("atsw"), {"model", "count"});
                f.tier3.model = switchModelRef(t3, "model");
                f.tier3.count = int(t3.requireInteger("count", 1, limits_.maxSwitchesPerTier));
                f.tier3.source = {t3.path(), t3.line()};
            }
            checkTier3(t2, m, hasT3, "ctsw", "atsw", "perZone");
        } else {
            MapReader m(v, path, {"type", "hostsPerSu", "leaf", "spine", "core"});
            f.hostsPerSu = int(m.integer("hostsPerSu", f.hostsPerSu, 1, 4096));
            MapReader t2(m.require("spine"), m.at("spine"), {"model", "perPod", "uplinks"});
            f.tier2.model = switchModelRef(t2, "model");
            f.tier2.count = int(t2.requireInteger("perPod", 1, limits_.maxSwitchesPerTier));
            f.tier2.source = {t2.path(), t2.line()};
            MapReader t1(m.require("leaf"), m.at("leaf"), {"model", "uplinks"});
            f.tier1.model = switchModelRef(t1, "model");
            f.tier1.uplinks = int(t1.integer("uplinks", f.tier2.count, 1, limits_.maxSwitchPorts));
            f.tier1.source = {t1.path(), t1.line()};
            if (f.tier1.uplinks % f.tier2.count != 0)
                failAt("must be a multiple of spine.perPod (" + std::to_string(f.tier2.count) + ")",
                       t1.at("uplinks"), lineOf(t1.get("uplinks")));
            for (auto& z : spec_.zones) {
                long long hosts = (long long)z.racks * z.hostsPerRack;
                if (hosts % f.hostsPerSu != 0)
                    failAt("pod " + z.name + " has " + std::to_string(hosts) +
                               " hosts, not a multiple of hostsPerSu (" +
                               std::to_string(f.hostsPerSu) + ")",
                           z.source.path, z.source.line);
            }
            bool hasT3 = m.has("core");
            // Default: as many uplinks as downlinks, i.e. non-blocking.
            long long down = 0;
            for (auto& z : spec_.zones) {
                const HostModelSpec* hm = spec_.hostModel(z.hostModel);
                long long leaves =
                    (long long)z.racks * z.hostsPerRack / f.hostsPerSu * hm->backendNics;
                down = std::max(down, leaves * (f.tier1.uplinks / f.tier2.count));
            }
            f.tier2.uplinks = int(
                t2.integer("uplinks", hasT3 ? std::min<long long>(down, limits_.maxSwitchPorts) : 0,
                           0, limits_.maxSwitchPorts));
            if (hasT3) {
                MapReader t3(m.get("core"), m.at("core"), {"model", "count"});
                f.tier3.model = switchModelRef(t3, "model");
                f.tier3.count = int(t3.requireInteger("count", 1, limits_.maxSwitchesPerTier));
                f.tier3.source = {t3.path(), t3.line()};
            }
            checkTier3(t2, m, hasT3, "spine", "core", "perPod");
        }
    }

    void checkTier3(const MapReader& t2, const MapReader& m, bool hasT3, std::string_view t2Name,
                    std::string_view t3Name, std::string_view perKey) {
        auto& f = spec_.fabric;
        (void)m;
        (void)perKey;
        if (f.tier2.uplinks > 0 && !hasT3)
            failAt(std::string(t2Name) + " has uplinks but there is no " + std::string(t3Name) +
                       " tier",
                   t2.at("uplinks"), t2.line());
        if (hasT3 && f.tier2.uplinks == 0)
            failAt("must be > 0: the " + std::string(t3Name) + " tier needs uplinks from every " +
                       std::string(t2Name),
                   t2.at("uplinks"), t2.line());
    }

    void readFrontend(const YAML::Node& v, const std::string& path) {
        MapReader m(v, path, {"fsw", "fcsw"});
        auto& fe = spec_.frontend;
        fe.enabled = true;
        fe.source = {path, m.line()};
        MapReader fsw(m.require("fsw"), m.at("fsw"), {"model", "per", "uplinks"});
        fe.fswModel = switchModelRef(fsw, "model");
        std::string per = fsw.string("per", "rack");
        if (per != "rack" && per != "row")
            failAt("must be \"rack\" or \"row\", got \"" + per + "\"", fsw.at("per"),
                   lineOf(fsw.get("per")));
        fe.fswPerRow = per == "row";
        if (m.has("fcsw")) {
            MapReader fcsw(m.get("fcsw"), m.at("fcsw"), {"model", "count"});
            fe.fcswModel = switchModelRef(fcsw, "model");
            fe.fcswCount = int(fcsw.requireInteger("count", 1, limits_.maxSwitchesPerTier));
            fe.fswUplinks = int(fsw.integer("uplinks", fe.fswUplinks, 0, limits_.maxSwitchPorts));
        } else {
            fe.fswUplinks = int(fsw.integer("uplinks", 0, 0, limits_.maxSwitchPorts));
            if (fe.fswUplinks > 0)
                failAt("fsw uplinks go to the fcsws, and there are none (add frontend.fcsw)",
                       fsw.at("uplinks"), lineOf(fsw.get("uplinks")));
        }
    }

    void readStorage(const YAML::Node& v, const std::string& path) {
        MapReader m(v, path, {"zone", "racks", "nodesPerRack", "model", "ssw"});
        auto& st = spec_.storage;
        st.enabled = true;
        st.source = {path, m.line()};
        st.zone = m.has("zone") ? m.requireString("zone") : spec_.zones.front().name;
        bool found = false;
        for (auto& z : spec_.zones) found |= z.name == st.zone;
        if (!found) failAt("unknown zone \"" + st.zone + "\"", m.at("zone"), lineOf(m.get("zone")));
        st.racks = int(m.requireInteger("racks", 1, limits_.maxRacksPerZone));
        st.nodesPerRack = int(m.requireInteger("nodesPerRack", 1, limits_.maxHostsPerRack));
        if ((long long)st.racks * st.nodesPerRack > limits_.maxStorageNodes)
            failAt("more than " + std::to_string(limits_.maxStorageNodes) + " storage nodes",
                   m.at("nodesPerRack"), lineOf(m.get("nodesPerRack")));
        st.model = m.requireString("model");
        if (!spec_.storageModel(st.model))
            failAt("unknown storage model \"" + st.model + "\"" + knownList(spec_.storageModels),
                   m.at("model"), lineOf(m.get("model")));
        MapReader ssw(m.require("ssw"), m.at("ssw"), {"model", "uplinks"});
        st.sswModel = switchModelRef(ssw, "model");
        st.sswUplinks = int(ssw.integer("uplinks", spec_.frontend.fcswCount > 0 ? 2 : 0, 0,
                                        limits_.maxSwitchPorts));
        if (st.sswUplinks > 0 && spec_.frontend.fcswCount == 0)
            failAt("ssw uplinks go to the frontend fcsws, and there are none", ssw.at("uplinks"),
                   lineOf(ssw.get("uplinks")));
    }

    // backendNicHcaType / frontendNicHcaType: what node_infiniband_info{hca_type} reports for
    // the NIC ("MT4129"); by default the NIC model's (nic_identity.hpp's table).
    std::string hcaType(const MapReader& m, std::string_view key, const std::string& model) {
        if (!m.has(key)) return std::string(hcaTypeOfNicModel(model));
        std::string t = m.string(key);
        const bool ok =
            !t.empty() && t.size() <= 32 && std::all_of(t.begin(), t.end(), [](unsigned char c) {
                return std::isalnum(c) || c == '-' || c == '_' || c == '.';
            });
        if (!ok)
            failAt("must be an hca_type as node_infiniband_info reports it (e.g. MT4129)",
                   m.at(key), lineOf(m.get(key)));
        return t;
    }
    // backendNicPci / frontendNicPci: one PCI address per NIC, in NIC (rail) order, canonical.
    std::vector<std::string> pciList(const MapReader& m, std::string_view key, int nics) {
        std::vector<std::string> out;
        if (!m.has(key)) return out;
        const YAML::Node v = m.get(key);
        forEachItem(v, m.at(key), static_cast<std::size_t>(limits_.maxNicsPerHost),
                    [&](const YAML::Node& n, const std::string& p) {
                        auto pci = canonicalPci(MapReader::asString(n, p));
                        if (!pci) failAt(pci.error().message, p, lineOf(n));
                        for (std::size_t i = 0; i < out.size(); ++i)
                            if (out[i] == *pci)
                                failAt("the same PCI address as entry " + std::to_string(i), p,
                                       lineOf(n));
                        out.push_back(std::move(*pci));
                    });
        if (static_cast<int>(out.size()) != nics)
            failAt("has " + std::to_string(out.size()) + " addresses for " + std::to_string(nics) +
                       " NICs: one per NIC, in NIC order",
                   m.at(key), lineOf(v));
        return out;
    }

    // portNaming: the canonical text ("sonic lanes=8") or a map {scheme: sonic, lanes: 8};
    // stored as the canonical text (port_naming.hpp).
    std::string portNaming(const MapReader& m) {
        const YAML::Node v = m.get("portNaming");
        std::string text;
        if (v.IsMap()) {
            MapReader n(v, m.at("portNaming"),
                        {"scheme", "lanes", "firstSlot", "portsPerSlot", "base", "pattern"});
            text = n.requireString("scheme");
            for (std::string_view key : {"lanes", "firstSlot", "portsPerSlot", "base"})
                if (n.has(key))
                    text += " " + std::string(key) + "=" +
                            std::to_string(n.integer(key, 0, 0, 1 << 20));
            if (n.has("pattern")) text += " pattern=" + n.requireString("pattern");
        } else {
            text = m.requireString("portNaming");
        }
        auto parsed = parsePortNaming(text);
        if (!parsed) failAt(parsed.error().message, m.at("portNaming"), lineOf(v));
        return portNamingText(*parsed);
    }

    void readOverrides(const YAML::Node& v, const std::string& path) {
        MapReader m(v, path, {"racks", "switches", "labels", "cabling"});
        std::size_t budget = limits_.maxOverrides;
        auto listOf = [&](std::string_view key, auto&& f) {
            if (!m.has(key)) return;
            YAML::Node list = m.get(key);
            forEachItem(list, m.at(key), budget, f);
            budget -= list.size();
        };
        listOf("racks", [&](const YAML::Node& n, const std::string& p) {
            MapReader r(n, p, {"name", "hosts", "model", "labels"});
            RackOverride o;
            o.name = r.requireString("name");
            if (r.has("hosts")) {
                o.hosts = int(r.integer("hosts", 0, 0, limits_.maxHostsPerRack));
                o.hostsLine = lineOf(r.get("hosts"));
            }
            if (r.has("model")) o.model = r.requireString("model");
            o.labels = r.labels("labels");
            o.source = {p, r.line()};
            spec_.rackOverrides.push_back(std::move(o));
        });
        listOf("switches", [&](const YAML::Node& n, const std::string& p) {
            MapReader r(n, p, {"name", "model", "portNaming", "labels"});
            SwitchOverride o;
            o.name = r.requireString("name");
            if (r.has("model")) o.model = switchModelRef(r, "model");
            if (r.has("portNaming")) o.portNaming = portNaming(r);
            o.labels = r.labels("labels");
            o.source = {p, r.line()};
            spec_.switchOverrides.push_back(std::move(o));
        });
        listOf("labels", [&](const YAML::Node& n, const std::string& p) {
            MapReader r(n, p, {"name", "labels"});
            LabelOverride o;
            o.name = r.requireString("name");
            r.require("labels");
            o.labels = r.labels("labels");
            o.source = {p, r.line()};
            spec_.labelOverrides.push_back(std::move(o));
        });
        listOf("cabling", [&](const YAML::Node& n, const std::string& p) {
            MapReader r(n, p, {"swap", "move"});
            CablingOverride o;
            o.source = {p, r.line()};
            if (r.has("swap") == r.has("move"))
                failAt("give exactly one of swap or move", p, r.line());
            if (r.has("swap")) {
                YAML::Node s = r.get("swap");
                if (!s.IsSequence() || s.size() != 2)
                    failAt("must be a list of two port names, got " + describe(s), r.at("swap"),
                           lineOf(s));
                o.op = CablingOverride::Op::Swap;
                o.a = MapReader::asString(s[0], r.at("swap") + "[0]");
                o.b = MapReader::asString(s[1], r.at("swap") + "[1]");
                if (o.a == o.b) failAt("swaps a port with itself", r.at("swap"), lineOf(s));
            } else {
                MapReader mv(r.get("move"), r.at("move"), {"from", "to"});
                o.op = CablingOverride::Op::Move;
                o.a = mv.requireString("from");
                o.b = mv.requireString("to");
                if (o.a == o.b) failAt("moves a cable to the same port", r.at("move"), mv.line());
            }
            spec_.cablingOverrides.push_back(std::move(o));
        });
    }

    const SpecLimits& limits_;
    ClusterSpec spec_;
    detail::NamingLines namingLines_;
};

}  // namespace

Result<ClusterSpec> parseClusterSpec(std::string_view text, const SpecLimits& limits) {
    if (text.size() > limits.maxBytes)
        return fail(Error{Errc::TooLarge, "document is " + std::to_string(text.size()) +
                                              " bytes, above the limit of " +
                                              std::to_string(limits.maxBytes)});
    // Counted on parse events first: a document over the node limit (or an alias bomb) is
    // refused before yaml-cpp builds a tree of it (~1 KB per node). The count spans every
    // document of the stream; "one document only" is reported below, with its line.
    if (auto shape = checkYamlShape(
            text,
            {.maxNodes = limits.maxNodes, .maxDepth = limits.maxDepth, .maxDocuments = SIZE_MAX});
        !shape)
        return fail(std::move(shape.error()));
    try {
        std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
        if (docs.empty() || docs[0].IsNull()) return fail(Error::invalid("empty document"));
        if (docs.size() > 1)
            return fail(Error::invalid("expected one document, got " + std::to_string(docs.size()),
                                       "", lineOf(docs[1])));
        std::size_t count = 0;
        guardShape(docs[0], 0, count, limits, "");
        SpecParser parser(limits);
        return parser.parse(docs[0]);
    } catch (const yaml::Failure& f) {
        return fail(f.error);
    } catch (const YAML::ParserException& e) {
        return fail(Error::invalid("YAML syntax error: " + e.msg, "", e.mark.line + 1));
    } catch (const YAML::Exception& e) {
        return fail(
            Error::invalid("YAML error: " + e.msg, "", e.mark.line >= 0 ? e.mark.line + 1 : 0));
    } catch (const std::bad_alloc&) {
        return fail(Error{Errc::TooLarge, "document too large to parse"});
    } catch (const std::exception& e) {
        return fail(Error::invalid(std::string("cannot parse document: ") + e.what()));
    }
}

}  // namespace loom::inventory
