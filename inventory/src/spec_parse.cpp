// Why over 600 lines: SpecParser reads the document section by section in the document's own
// order, then checks naming patterns, size and capacity across sections; one class keeps the
// reading flat. The generic YAML reading is in yaml_reader.cpp; the next split is the
// cross-section checks (checkPatterns/checkSize/checkCapacity) into a file of their own.
//
// Parsing and validation of the cluster spec (docs/cluster-spec.md).
//
// yaml-cpp throws; everything here runs inside one try block in parseClusterSpec, and the
// readers below report a bad document by throwing yaml::Failure, which never leaves this file.
// That keeps the field-by-field reading flat instead of threading a Result through ~100 reads.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "loom/inventory/input_guard.hpp"
#include "loom/inventory/spec.hpp"
#include "loom/inventory/yaml_reader.hpp"
#include "spec_pattern.hpp"

namespace loom::inventory {

namespace detail {

std::optional<std::string> NamePattern::compile(std::string_view text, std::uint8_t allowed) {
    segments_.clear();
    used_ = 0;
    static constexpr std::string_view kVarNames[] = {"site", "zone", "row", "rack", "su", "n"};
    auto allowedList = [&] {
        std::string s;
        for (int v = 0; v < 6; ++v) {
            if (!(allowed & (1u << v))) continue;
            if (!s.empty()) s += ", ";
            s += '{';
            s += kVarNames[v];
            s += '}';
        }
        return s.empty() ? std::string("none") : s;
    };
    if (text.empty()) return "must not be empty";
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '{') {
            auto close = text.find('}', i);
            if (close == std::string_view::npos) return "unclosed '{' in pattern";
            std::string_view body = text.substr(i + 1, close - i - 1);
            std::string_view var = body;
            int width = 0;
            if (auto colon = body.find(':'); colon != std::string_view::npos) {
                var = body.substr(0, colon);
                std::string_view w = body.substr(colon + 1);
                auto r = std::from_chars(w.data(), w.data() + w.size(), width);
                if (w.empty() || r.ec != std::errc() || r.ptr != w.data() + w.size() || width < 0 ||
                    width > 12)
                    return "bad width in {" + std::string(body) + "}; use e.g. {n:03}";
            }
            int id = -1;
            for (int v = 0; v < 6; ++v)
                if (kVarNames[v] == var) id = v;
            if (id < 0 || !(allowed & (1u << id)))
                return "unknown placeholder {" + std::string(var) + "}; allowed: " + allowedList();
            if (width > 0 && id != int(PatternVar::N)) return "a width applies only to {n}";
            segments_.push_back(Segment{std::uint8_t(id), width, {}});
            used_ |= std::uint8_t(1u << id);
            i = close + 1;
        } else {
            if (!isNameChar(text[i]))
                return "character '" + showChar(text[i]) +
                       "' is not allowed in names (use letters, digits, '-', '_', '.')";
            if (segments_.empty() || segments_.back().var != kLiteral)
                segments_.push_back(Segment{});
            segments_.back().literal += text[i];
            ++i;
        }
    }
    return std::nullopt;
}

}  // namespace detail

namespace {

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
        checkPatterns();
        checkSize();
        checkCapacity();
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
                     "backendSpeedGbps", "frontendNics", "frontendNicModel", "frontendSpeedGbps"});
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
                        MapReader m(n, p, {"name", "ports", "speedGbps"});
                        SwitchModelSpec s;
                        s.name = m.name("name");
                        s.ports = int(m.requireInteger("ports", 1, limits_.maxSwitchPorts));
                        s.speedGbps = int(m.integer("speedGbps", s.speedGbps, 1, 3200));
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

    struct PatternField {
        std::string_view key;
        std::string NamingSpec::*field;
        std::uint8_t allowed;
    };
    static const std::vector<PatternField>& patternFields() {
        using V = PatternVar;
        static const std::vector<PatternField> f = {
            {"zone", &NamingSpec::zone, std::uint8_t(varBit(V::Site) | varBit(V::N))},
            {"row", &NamingSpec::row, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
            {"rack", &NamingSpec::rack,
             std::uint8_t(varBit(V::Zone) | varBit(V::Row) | varBit(V::N))},
            {"host", &NamingSpec::host, std::uint8_t(varBit(V::Rack) | varBit(V::N))},
            {"rtsw", &NamingSpec::rtsw, std::uint8_t(varBit(V::Zone) | varBit(V::Rack))},
            {"ctsw", &NamingSpec::ctsw, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
            {"atsw", &NamingSpec::atsw, std::uint8_t(varBit(V::Site) | varBit(V::N))},
            {"su", &NamingSpec::su, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
            {"leaf", &NamingSpec::leaf,
             std::uint8_t(varBit(V::Zone) | varBit(V::Su) | varBit(V::N))},
            {"spine", &NamingSpec::spine, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
            {"core", &NamingSpec::core, std::uint8_t(varBit(V::Site) | varBit(V::N))},
            {"fsw", &NamingSpec::fsw,
             std::uint8_t(varBit(V::Zone) | varBit(V::Row) | varBit(V::Rack))},
            {"fcsw", &NamingSpec::fcsw, std::uint8_t(varBit(V::Site) | varBit(V::N))},
            {"storageRow", &NamingSpec::storageRow, std::uint8_t(varBit(V::Zone) | varBit(V::N))},
            {"storageRack", &NamingSpec::storageRack,
             std::uint8_t(varBit(V::Zone) | varBit(V::Row) | varBit(V::N))},
            {"storageNode", &NamingSpec::storageNode, std::uint8_t(varBit(V::Rack) | varBit(V::N))},
            {"ssw", &NamingSpec::ssw, std::uint8_t(varBit(V::Zone) | varBit(V::Rack))},
        };
        return f;
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

    void checkPatterns() {
        if (spec_.naming.fsw.empty())
            spec_.naming.fsw = spec_.frontend.fswPerRow ? "{row}-fsw" : "{rack}-fsw";
        for (auto& f : patternFields()) {
            detail::NamePattern p;
            std::uint8_t allowed = f.allowed;
            if (f.key == "fsw" && spec_.frontend.fswPerRow) allowed &= ~varBit(PatternVar::Rack);
            std::string path = "spec.naming." + std::string(f.key);
            int line =
                namingLines_.count(std::string(f.key)) ? namingLines_[std::string(f.key)] : 0;
            if (auto err = p.compile(spec_.naming.*(f.field), allowed)) failAt(*err, path, line);
        }
        // Patterns that name many things must tell them apart.
        auto needs = [&](std::string_view key, const std::string& text, std::string_view var) {
            if (text.find(var) == std::string::npos) {
                std::string path = "spec.naming." + std::string(key);
                int line =
                    namingLines_.count(std::string(key)) ? namingLines_[std::string(key)] : 0;
                failAt("must contain " + std::string(var) + " so that the names are unique", path,
                       line);
            }
        };
        const auto& nm = spec_.naming;
        needs("host", nm.host, "{rack}");
        needs("rack", nm.rack, "{n");
        needs("host", nm.host, "{n");
        if (spec_.fabric.type == FabricType::Roce) {
            needs("rtsw", nm.rtsw, "{rack}");
        } else {
            needs("leaf", nm.leaf, "{n");
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
            MapReader r(n, p, {"name", "model", "labels"});
            SwitchOverride o;
            o.name = r.requireString("name");
            if (r.has("model")) o.model = switchModelRef(r, "model");
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

    // Port capacity of every tier, on the nominal layout (model overrides are checked again
    // after expansion).
    void checkCapacity() {
        auto& f = spec_.fabric;
        auto check = [&](const std::string& modelName, long long needed, const SpecSource& src,
                         const std::string& what) {
            const SwitchModelSpec* m = spec_.switchModel(modelName);
            if (m && needed > m->ports)
                failAt(what + " needs " + std::to_string(needed) + " ports but switch model \"" +
                           modelName + "\" has " + std::to_string(m->ports),
                       src.path, src.line);
        };
        long long maxDown2 = 0, zonesTotal = (long long)spec_.zones.size();
        for (auto& z : spec_.zones) {
            const HostModelSpec* hm = spec_.hostModel(z.hostModel);
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
                long long leaves =
                    (long long)z.racks * z.hostsPerRack / f.hostsPerSu * hm->backendNics;
                maxDown2 = std::max(maxDown2, leaves * per);
            }
        }
        std::string t2 = f.type == FabricType::Roce ? "a ctsw" : "a spine";
        check(f.tier2.model, maxDown2 + f.tier2.uplinks, f.tier2.source,
              t2 + " (" + std::to_string(maxDown2) + " downlinks + " +
                  std::to_string(f.tier2.uplinks) + " uplinks)");
        if (f.tier3.count > 0) {
            // Planes: see the tier-3 rule in docs/cluster-spec.md.
            long long planes = std::gcd(f.tier2.count, f.tier3.count);
            long long group = f.tier3.count / planes;
            long long links = zonesTotal * (f.tier2.count / planes) * f.tier2.uplinks;
            check(f.tier3.model, (links + group - 1) / group, f.tier3.source,
                  std::string(f.type == FabricType::Roce ? "an atsw" : "a core") + " (" +
                      std::to_string(links) + " links from each plane over " +
                      std::to_string(group) + " switches)");
        }
        auto& fe = spec_.frontend;
        if (fe.enabled) {
            long long maxHosts = 0, maxFe = 0, fswCount = 0;
            for (auto& z : spec_.zones) {
                const HostModelSpec* hm = spec_.hostModel(z.hostModel);
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
                long long links = fswCount * fe.fswUplinks +
                                  (spec_.storage.enabled
                                       ? (long long)spec_.storage.racks * spec_.storage.sswUplinks
                                       : 0);
                check(fe.fcswModel, (links + fe.fcswCount - 1) / fe.fcswCount, fe.source,
                      "an fcsw (" + std::to_string(links) + " uplinks over " +
                          std::to_string(fe.fcswCount) + " fcsws)");
            }
        }
        auto& st = spec_.storage;
        if (st.enabled) {
            const StorageModelSpec* sm = spec_.storageModel(st.model);
            check(st.sswModel, (long long)st.nodesPerRack * sm->nics + st.sswUplinks, st.source,
                  "an ssw (" + std::to_string(st.nodesPerRack * sm->nics) + " node ports + " +
                      std::to_string(st.sswUplinks) + " uplinks)");
        }
    }

    // Refuses specs that would expand to more than limits.maxEntities before expanding them.
    void checkSize() {
        // Hosts, GPUs, NICs with their port and cable, and every switch with its cabled ports.
        const auto& f = spec_.fabric;
        const auto& fe = spec_.frontend;
        long double total = 2 + (long double)f.tier3.count + fe.fcswCount;
        for (auto& z : spec_.zones) {
            const HostModelSpec* hm = spec_.hostModel(z.hostModel);
            long double hosts = (long double)z.racks * z.hostsPerRack;
            total += z.rows + z.racks * 2.0L;
            total += hosts * (1 + hm->gpus + 3.0L * (hm->backendNics + hm->frontendNics));
            long double t1 = f.type == FabricType::Roce ? (long double)z.racks
                                                        : hosts / f.hostsPerSu * hm->backendNics;
            total += t1 * (1 + 3.0L * f.tier1.uplinks) +
                     (long double)f.tier2.count * (1 + 3.0L * f.tier2.uplinks);
            if (fe.enabled) {
                long double fsw = fe.fswPerRow ? z.rows : z.racks;
                total += fsw * (1 + 3.0L * fe.fswUplinks);
            }
        }
        if (spec_.storage.enabled) {
            const StorageModelSpec* sm = spec_.storageModel(spec_.storage.model);
            total += (long double)spec_.storage.racks * spec_.storage.nodesPerRack *
                     (1 + 3.0L * sm->nics);
        }
        if (total > (long double)limits_.maxEntities)
            failAt("expands to about " + std::to_string((long long)total) +
                       " entities, above the limit of " + std::to_string(limits_.maxEntities),
                   "spec.zones", 0);
    }

    const SpecLimits& limits_;
    ClusterSpec spec_;
    std::unordered_map<std::string, int> namingLines_;
};

}  // namespace

const HostModelSpec* ClusterSpec::hostModel(std::string_view n) const {
    for (auto& m : hostModels)
        if (m.name == n) return &m;
    return nullptr;
}
const SwitchModelSpec* ClusterSpec::switchModel(std::string_view n) const {
    for (auto& m : switchModels)
        if (m.name == n) return &m;
    return nullptr;
}
const StorageModelSpec* ClusterSpec::storageModel(std::string_view n) const {
    for (auto& m : storageModels)
        if (m.name == n) return &m;
    return nullptr;
}

Result<ClusterSpec> parseClusterSpec(std::string_view text, const SpecLimits& limits) {
    if (text.size() > limits.maxBytes)
        return fail(Error{Errc::TooLarge, "document is " + std::to_string(text.size()) +
                                              " bytes, above the limit of " +
                                              std::to_string(limits.maxBytes)});
    // Counted on parse events first: a document over the node limit (or an alias bomb) is
    // refused before yaml-cpp builds a tree of it (~1 KB per node). The count spans every
    // document of the stream; "one document only" is reported below, with its line.
    if (auto shape = checkYamlShape(text, {.maxNodes = limits.maxNodes,
                                           .maxDepth = limits.maxDepth,
                                           .maxDocuments = SIZE_MAX});
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

Result<Inventory> loadClusterSpec(std::string_view text, const SpecLimits& limits) {
    auto spec = parseClusterSpec(text, limits);
    if (!spec) return fail(std::move(spec.error()));
    return expandClusterSpec(*spec);
}

Result<Inventory> loadClusterSpecFile(const std::string& path, const SpecLimits& limits) {
    std::error_code ec;
    auto st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(st))
        return fail(Error::invalid("cannot open " + path + ": no such file"));
    if (std::filesystem::is_directory(st))
        return fail(Error::invalid("cannot open " + path +
                                   ": it is a directory; name the spec file in it"));
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return fail(Error::invalid("cannot open " + path + ": " + std::strerror(errno)));
    in.seekg(0, std::ios::end);
    auto size = in.tellg();
    if (size < 0) return fail(Error::invalid("cannot read " + path));
    if (std::size_t(size) > limits.maxBytes)
        return fail(Error{Errc::TooLarge, path + " is " + std::to_string(size) +
                                              " bytes, above the limit of " +
                                              std::to_string(limits.maxBytes)});
    in.seekg(0);
    std::string text(std::size_t(size), '\0');
    in.read(text.data(), size);
    if (!in) return fail(Error::invalid("cannot read " + path));
    auto inv = loadClusterSpec(text, limits);
    if (!inv) {
        Error e = std::move(inv.error());
        if (e.path.empty() && e.line == 0) e.message = path + ": " + e.message;
        return fail(std::move(e));
    }
    return inv;
}

}  // namespace loom::inventory
