// GET /api/v1/hall?format=compact must say exactly what the plain form says: a decoder written
// from docs/api.md (the rules, the runs, the legends, the spelled-out names) turns it back into
// the plain form, which must equal HallLayout::toJson() on the reference clusters and on an
// inventory whose names follow none of the rules.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/inventory/spec.hpp"
#include "loom/telemetry/hall_layout.hpp"
#include "synthetic_inventory.hpp"

namespace loom::telemetry {
namespace {

using nlohmann::json;

std::vector<std::int64_t> unruns(const json& runs, std::size_t n) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i + 2 < runs.size(); i += 3)
        for (std::int64_t k = 0; k < runs[i + 2].get<std::int64_t>(); ++k)
            out.push_back(runs[i].get<std::int64_t>() + k * runs[i + 1].get<std::int64_t>());
    EXPECT_EQ(out.size(), n);
    return out;
}

std::map<std::size_t, std::string> spelled(const json& c, const char* kind) {
    std::map<std::size_t, std::string> m;
    if (c["names"].contains(kind))
        for (const auto& p : c["names"][kind]) m[p[0].get<std::size_t>()] = p[1].get<std::string>();
    return m;
}

std::string orSpelled(const std::map<std::size_t, std::string>& m, std::size_t i,
                      std::string rule) {
    auto it = m.find(i);
    return it == m.end() ? rule : it->second;
}

json decodeCompact(const json& c) {
    json j;
    EXPECT_EQ(c["format"], "compact");
    for (const char* k : {"cluster", "fabric", "layoutVersion", "stateVersion"}) j[k] = c[k];
    const auto& zoneNames = c["zones"];
    auto zoneName = [&](std::int64_t z, const std::map<std::size_t, std::string>& sp,
                        std::size_t i) {
        return z >= 0 ? zoneNames[z].get<std::string>() : orSpelled(sp, i, "");
    };
    j["zones"] = json::array();
    for (const auto& z : zoneNames) j["zones"].push_back({{"name", z}});
    const auto& rows = c["rows"];
    const auto nRows = rows["name"].size();
    auto rowZone = unruns(rows["zone"], nRows), rowIndex = unruns(rows["index"], nRows);
    auto rowZoneSp = spelled(c, "rowZone");
    j["rows"] = json::array();
    for (std::size_t i = 0; i < nRows; ++i)
        j["rows"].push_back({{"name", rows["name"][i]},
                             {"zone", zoneName(rowZone[i], rowZoneSp, i)},
                             {"index", rowIndex[i]}});
    const auto& sw = c["switches"];
    const auto nSw = sw["name"].size();
    auto swRole = unruns(sw["role"], nSw), swZone = unruns(sw["zone"], nSw);
    auto swZoneSp = spelled(c, "switchZone");
    j["switches"] = json::array();
    for (std::size_t i = 0; i < nSw; ++i)
        j["switches"].push_back({{"name", sw["name"][i]},
                                 {"role", c["switchRoles"][swRole[i]]},
                                 {"zone", zoneName(swZone[i], swZoneSp, i)}});
    const auto& r = c["racks"];
    const auto nRacks = r["name"].size();
    auto row = unruns(r["row"], nRacks), zone = unruns(r["zone"], nRacks),
         pos = unruns(r["position"], nRacks), state = unruns(r["state"], nRacks),
         hosts = unruns(r["hosts"], nRacks), rtsw = unruns(r["rtsw"], nRacks),
         gpuOffset = unruns(r["gpuOffset"], nRacks), gpuCount = unruns(r["gpuCount"], nRacks);
    auto rowSp = spelled(c, "rackRow"), zoneSp = spelled(c, "rackZone"),
         rtswSp = spelled(c, "rackRtsw"), hostSp = spelled(c, "host");
    std::vector<std::string> hostName;
    j["racks"] = json::array();
    for (std::size_t i = 0; i < nRacks; ++i) {
        const auto name = r["name"][i].get<std::string>();
        auto hs = json::array();
        for (std::int64_t k = 0; k < hosts[i]; ++k) {
            hostName.push_back(orSpelled(hostSp, hostName.size(), name + "-h" + std::to_string(k)));
            hs.push_back(hostName.back());
        }
        j["racks"].push_back({{"name", name},
                              {"row", row[i] >= 0 ? rows["name"][row[i]].get<std::string>()
                                                  : orSpelled(rowSp, i, "")},
                              {"zone", zoneName(zone[i], zoneSp, i)},
                              {"position", pos[i]},
                              {"state", c["rackStates"][state[i]]},
                              {"hosts", hs},
                              {"rtsw", rtsw[i] >= 0 ? sw["name"][rtsw[i]].get<std::string>()
                                                    : orSpelled(rtswSp, i, "")},
                              {"gpuOffset", gpuOffset[i]},
                              {"gpuCount", gpuCount[i]}});
    }
    const auto nGpus = c["gpus"]["count"].get<std::size_t>();
    auto hostGpus = unruns(c["hosts"]["gpus"], hostName.size());
    auto local = unruns(c["gpus"]["index"], nGpus);
    std::vector<std::string> gpuHost;
    for (std::size_t h = 0; h < hostName.size(); ++h)
        for (std::int64_t k = 0; k < hostGpus[h]; ++k) gpuHost.push_back(hostName[h]);
    EXPECT_EQ(gpuHost.size(), nGpus);
    auto gpuSp = spelled(c, "gpu");
    j["gpus"] = json::array();
    for (std::size_t g = 0; g < nGpus; ++g)
        j["gpus"].push_back(orSpelled(gpuSp, g, gpuHost[g] + "-gpu" + std::to_string(local[g])));
    const auto& L = c["links"];
    const auto nLinks = L["count"].get<std::size_t>();
    auto aSw = unruns(L["aSwitch"], nLinks), aPort = unruns(L["aPort"], nLinks),
         bSw = unruns(L["bSwitch"], nLinks), bPort = unruns(L["bPort"], nLinks);
    auto end = [&](std::int64_t s, std::int64_t n) -> std::string {
        if (s >= 0) return sw["name"][s].get<std::string>() + "/p" + std::to_string(n);
        if (n < 0) return "";
        return gpuHost[n] + "-nic" + std::to_string(local[n]) + "/p1";
    };
    auto linkSp = spelled(c, "link");
    j["links"] = json::array();
    for (std::size_t l = 0; l < nLinks; ++l)
        j["links"].push_back(
            orSpelled(linkSp, l, end(aSw[l], aPort[l]) + "--" + end(bSw[l], bPort[l])));
    return j;
}

HallLayout loadReference(const std::string& file) {
    auto inv =
        inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/" + file);
    EXPECT_TRUE(inv) << (inv ? "" : inv.error().toString());
    return inv ? HallLayout::build(*inv) : HallLayout{};
}

TEST(HallCompact, DevSmallDecodesToThePlainFormAndSpellsNoName) {
    auto L = loadReference("dev-small.yaml");
    const auto c = L.toCompactJson();
    EXPECT_EQ(decodeCompact(c), L.toJson());
    EXPECT_TRUE(c["names"].empty()) << c["names"].dump();
}

TEST(HallCompact, Meta24kIsSmallAndDecodesToThePlainForm) {
    auto L = loadReference("meta-24k-roce.yaml");
    const auto c = L.toCompactJson(), plain = L.toJson();
    EXPECT_EQ(decodeCompact(c), plain);
    EXPECT_TRUE(c["names"].empty()) << c["names"].dump().substr(0, 300);
    // 2.86 MB plain, 0.19 MB compact: the rules leave the rack and switch names and the runs.
    std::string parts;
    for (const auto& [k, v] : c.items()) {
        parts += " " + k + " " + std::to_string(v.dump().size());
        if (v.is_object())
            for (const auto& [k2, v2] : v.items())
                parts += " " + k + "." + k2 + " " + std::to_string(v2.dump().size());
    }
    EXPECT_LT(c.dump().size(), plain.dump().size() / 10) << c.dump().size() << parts;
}

TEST(HallCompact, NamesThatBreakTheRulesAreSpelledOut) {
    auto inv = testing::syntheticCluster(
        {.zones = 2, .racksPerZone = 3, .ctswPerZone = 2, .ctswUplinks = 2, .atsw = 2});
    // Other naming: a host, a GPU and a cable that no rule derives, a rack in a state of its own.
    inv.hosts[1].name = "odd-host";
    for (auto& g : inv.gpus)
        if (g.host == "z1-r001-h1") g.host = "odd-host";
    for (auto& n : inv.nics)
        if (n.host == "z1-r001-h1") n.host = "odd-host";
    inv.gpus[3].name = "gpu-without-pattern";
    inv.links[5].name = "hand-labelled-cable-17";
    inv.racks[2].state = "burn_in";
    auto L = HallLayout::build(inv);
    const auto c = L.toCompactJson();
    EXPECT_EQ(decodeCompact(c), L.toJson());
    EXPECT_TRUE(c["names"].contains("link"));
    EXPECT_TRUE(c["names"].contains("gpu"));
}

TEST(HallCompact, AStateRefreshRendersItsOwnStatesOverTheSharedStructure) {
    auto inv = testing::syntheticCluster(
        {.zones = 2, .racksPerZone = 3, .ctswPerZone = 2, .ctswUplinks = 2, .atsw = 2});
    for (auto& r : inv.racks) r.state = "in_service";
    const auto before = HallLayout::build(inv);
    const auto first = before.toCompactJson();  // renders the structure once
    auto changed = inv;
    changed.racks[1].state = "drained";
    changed.racks[4].state = "failed";
    const auto patched = before.withStates(changed);
    ASSERT_TRUE(patched);
    const auto c = patched->toCompactJson();  // the structure from the cache, the new states
    EXPECT_EQ(decodeCompact(c), patched->toJson());
    EXPECT_EQ(c["stateVersion"], patched->stateVersion());
    EXPECT_EQ(decodeCompact(first), before.toJson());  // and the old layout still says its own
    EXPECT_EQ(decodeCompact(before.toCompactJson()), before.toJson());
}

}  // namespace
}  // namespace loom::telemetry
