// InfiniBand: LIDs, LFTs, up/down (no down-then-up turn), even spread over uplinks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "loom/fabric/export.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/testbed.hpp"
#include "loom/fabric/verify.hpp"

namespace loom::fabric {
namespace {

// 2 pods × 1 SU × 4 hosts × 2 rails; 2 leaves and 2 spines per pod; 2 cores.
testbed::IbShape tiny() {
    return {.pods = 2, .susPerPod = 1, .hostsPerSu = 4, .leavesPerSu = 2, .spinesPerPod = 2,
            .cores = 2, .ports = 8};
}

Router ibRouter(const testbed::IbShape& sh) {
    auto topo = buildTopology(testbed::makeIb(sh));
    EXPECT_TRUE(topo.has_value()) << (topo ? "" : topo.error().toString());
    return Router(std::move(*topo));
}

TEST(FabricInfiniband, TinyFatTreeByHand) {
    Router r = ibRouter(tiny());
    const auto& t = r.topology();
    EXPECT_EQ(t.switchCount(), 4 + 4 + 2);
    EXPECT_EQ(t.nicCount(), 16);
    EXPECT_EQ(r.maxLid(), 16 + 10);
    EXPECT_EQ(r.targetCount(), 10);  // every switch has a LID
    // HCA LIDs are leaf-major: su001-leaf1 carries rail 0 of the SU's four hosts, LIDs 1..4.
    auto leaf1 = t.findSwitch("su001-leaf1");
    for (std::uint16_t lid = 1; lid <= 4; ++lid) {
        auto node = r.lidNode(lid);
        ASSERT_FALSE(t.isSwitch(node));
        EXPECT_EQ(t.nicSwitch(node - t.switchCount()), leaf1);
        EXPECT_EQ(r.lftPort(leaf1, lid), lid);  // host h on leaf port h+1
    }
    EXPECT_EQ(r.lftPort(leaf1, r.switchLid(leaf1)), 0);
    // A remote leaf spreads the four destinations of leaf1 over its two uplinks evenly.
    auto remote = t.findSwitch("su002-leaf1");
    std::map<int, int> perPort;
    for (std::uint16_t lid = 1; lid <= 4; ++lid) ++perPort[r.lftPort(remote, lid)];
    ASSERT_EQ(perPort.size(), 2u);
    for (auto [port, n] : perPort) EXPECT_EQ(n, 2) << "port " << port;
    auto rep = verify(r);
    EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
    EXPECT_EQ(rep.hostPairs, 8 * 7);
}

// verify warns (without failing) about up-groups of unequal width: OpenSM's ftree refuses
// such a tree. One extra spine-core cable makes pod01-spine01's group 2 wide, its tier's 1.
TEST(FabricInfiniband, VerifyWarnsOnNonUniformUpGroups) {
    Router uniform = ibRouter(tiny());
    auto ok = verify(uniform);
    EXPECT_EQ(ok.nonUniformUpGroups, 0);
    EXPECT_TRUE(ok.warnings.empty());
    auto inv = testbed::makeIb(tiny());
    inventory::Link extra;
    extra.aPort = "pod01-spine01/p4";
    extra.bPort = "core001/p3";
    extra.name = "extra";
    extra.speedGbps = 400;
    inv.links.push_back(extra);
    auto topo = buildTopology(inv);
    ASSERT_TRUE(topo.has_value()) << topo.error().toString();
    Router r(std::move(*topo));
    auto rep = verify(r);
    EXPECT_TRUE(rep.ok());
    EXPECT_EQ(rep.nonUniformUpGroups, 1);
    ASSERT_EQ(rep.warnings.size(), 1u);
    EXPECT_NE(rep.warnings[0].find("pod01-spine01: up-groups of 2 parallel links"), std::string::npos)
        << rep.warnings[0];
}

TEST(FabricInfiniband, SpineDownStaysDeadlockFreeAndReachable) {
    Router r = ibRouter(tiny());
    const auto& t = r.topology();
    r.setSwitchUp(t.findSwitch("pod01-spine01"), false);
    auto rep = verify(r);
    EXPECT_EQ(rep.downUpTurns, 0);
    EXPECT_EQ(rep.loops, 0);
    EXPECT_EQ(rep.rackPairsUnreachable, 0) << (rep.problems.empty() ? "" : rep.problems[0]);
    Router full = r;
    full.recomputeAll();
    EXPECT_EQ(r.firstDifference(full), "");
}

TEST(FabricInfiniband, OpensmDumpFormat) {
    Router r = ibRouter(tiny());
    auto files = exportFabric(r, ExportFormat::Opensm, {.opensmNames = true});
    ASSERT_TRUE(files.has_value());
    ASSERT_EQ(files->size(), 3u);
    const auto& dump = (*files)[0].content;
    EXPECT_EQ((*files)[0].name, "opensm-lfts.dump");
    EXPECT_EQ(dump.rfind("Unicast lids [0x0-0x1a] of switch Lid 17 guid 0x0002c90300000001 ('", 0), 0u)
        << dump.substr(0, 120);
    EXPECT_NE(dump.find("\n0x0001 001 # Channel Adapter portguid 0x0002c90400000001: '"), std::string::npos);
    EXPECT_NE(dump.find(" lids dumped\n"), std::string::npos);
    auto bad = exportFabric(r, ExportFormat::Frr);
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().code, Errc::InvalidArgument);
    // guid2lid as OpenSM's database reader wants it: one entry, then a blank line.
    const auto& g2l = (*files)[1].content;
    EXPECT_EQ((*files)[1].name, "guid2lid");
    EXPECT_EQ(g2l.rfind("0x0002c90300000001 0x0011 0x0011\n\n0x0002c90300000002 0x0012 0x0012\n\n", 0), 0u)
        << g2l.substr(0, 120);
    EXPECT_NE(g2l.find("0x0002c90400000001 0x0001 0x0001\n\n"), std::string::npos);
}

// The default dump carries no names (OpenSM's file engine reads LID, port and portguid only):
// they are once per node in node-name-map, keyed by node GUID as rdma-core's node name map
// is, and every name the named dump writes on a line is the map's name for that line's GUID
// (an HCA's node GUID is its port GUID - 1).
TEST(FabricInfiniband, OpensmNamesAreASeparateNodeNameMap) {
    auto sh = tiny();
    sh.pods = 2;
    Router r = ibRouter(sh);
    const auto& t = r.topology();
    auto plain = exportFabric(r, ExportFormat::Opensm);
    auto named = exportFabric(r, ExportFormat::Opensm, {.opensmNames = true});
    ASSERT_TRUE(plain.has_value() && named.has_value());
    ASSERT_EQ(plain->size(), 3u);
    EXPECT_EQ((*plain)[2].name, "node-name-map");
    EXPECT_EQ((*plain)[0].content.find("Channel Adapter"), std::string::npos);
    EXPECT_LT((*plain)[0].content.size() * 3, (*named)[0].content.size() * 2);
    EXPECT_EQ((*plain)[2].content, (*named)[2].content);

    // The map as rdma-core reads it: strtoull(line, 0), then the quoted name.
    std::map<std::uint64_t, std::string> map;
    std::istringstream min((*plain)[2].content);
    std::string line;
    while (std::getline(min, line)) {
        if (line.empty() || line[0] == '#') continue;
        char* end = nullptr;
        auto guid = std::strtoull(line.c_str(), &end, 0);
        auto q1 = line.find('"'), q2 = line.rfind('"');
        ASSERT_TRUE(end && *end == ' ' && q1 != std::string::npos && q2 > q1) << line;
        EXPECT_TRUE(map.emplace(guid, line.substr(q1 + 1, q2 - q1 - 1)).second) << line;
    }
    EXPECT_EQ(map.size(), static_cast<std::size_t>(t.switchCount() + t.nicCount()));
    EXPECT_EQ(map[switchGuid(0)], t.switchNames[0]);
    EXPECT_EQ(map[hcaPortGuid(t.nicCount() - 1) - 1], t.nicNames[t.nicCount() - 1]);

    // Every named line, its GUID's name from the map, gives back the default line.
    std::istringstream nin((*named)[0].content), pin((*plain)[0].content);
    std::regex namedLine(
        R"((0x[0-9a-f]{4} \d{3}) # (Switch|Channel Adapter) portguid 0x([0-9a-f]{16}): '(.*)')");
    std::string pline;
    int lines = 0;
    while (std::getline(nin, line) && std::getline(pin, pline)) {
        std::smatch m;
        if (!std::regex_match(line, m, namedLine)) continue;
        ++lines;
        auto portGuid = std::stoull(m[3].str(), nullptr, 16);
        auto nodeGuid = m[2] == "Switch" ? portGuid : portGuid - 1;
        EXPECT_EQ(map[nodeGuid], m[4].str()) << line;
        EXPECT_EQ(pline, m[1].str() + " # portguid 0x" + m[3].str()) << line;
    }
    EXPECT_GT(lines, 0);
}

// The streamed dump is the same on any number of threads; without names every line is
// `0xLLLL PPP # portguid 0x…`; a failing sink stops the export with its error.
TEST(FabricInfiniband, OpensmStreamedDumpSameOnEveryThreadCount) {
    auto sh = tiny();
    sh.pods = 3;
    Router r = ibRouter(sh);
    auto one = exportFabric(r, ExportFormat::Opensm, {.threads = 1, .opensmNames = true});
    ASSERT_TRUE(one.has_value());
    for (int threads : {2, 3, 7, 64}) {
        auto many =
            exportFabric(r, ExportFormat::Opensm, {.threads = threads, .opensmNames = true});
        ASSERT_TRUE(many.has_value());
        EXPECT_EQ((*many)[0].content, (*one)[0].content) << threads << " threads";
    }
    EXPECT_EQ(std::count((*one)[0].content.begin(), (*one)[0].content.end(), '\n') -
                  static_cast<long>(r.topology().switchCount()) * 2,
              [&] {
                  long n = 0;
                  for (std::int32_t s = 0; s < r.topology().switchCount(); ++s)
                      for (std::int32_t lid = 1; lid <= r.maxLid(); ++lid)
                          n += r.lftPort(s, static_cast<std::uint16_t>(lid)) != kNoPort;
                  return n;
              }());
    auto compact = exportFabric(r, ExportFormat::Opensm, {.threads = 2, .opensmNames = false});
    ASSERT_TRUE(compact.has_value());
    std::istringstream in((*compact)[0].content);
    std::regex entry(R"(0x[0-9a-f]{4} \d{3} # portguid 0x[0-9a-f]{16})");
    std::string line;
    int entries = 0;
    while (std::getline(in, line))
        if (line.rfind("0x", 0) == 0) {
            EXPECT_TRUE(std::regex_match(line, entry)) << line;
            ++entries;
        }
    EXPECT_GT(entries, 0);
    EXPECT_LT((*compact)[0].content.size(), (*one)[0].content.size() * 2 / 3);
    auto lidsOnly = exportFabric(r, ExportFormat::Opensm,
                                 {.threads = 2, .opensmNames = false, .opensmGuids = false});
    ASSERT_TRUE(lidsOnly.has_value());
    std::istringstream lin((*lidsOnly)[0].content);
    std::regex bare(R"(0x[0-9a-f]{4} \d{3})");
    int bareEntries = 0;
    while (std::getline(lin, line))
        if (line.rfind("0x", 0) == 0) {
            EXPECT_TRUE(std::regex_match(line, bare)) << line;
            ++bareEntries;
        }
    EXPECT_EQ(bareEntries, entries) << "the same entries, without the comment";
    EXPECT_LT((*lidsOnly)[0].content.size(), (*compact)[0].content.size() / 2);

    struct FailingSink : ExportSink {
        int writes = 0;
        Result<void> open(const std::string&) override { return {}; }
        Result<void> write(std::string_view) override {
            if (++writes == 3) return fail(Error::internal("disk full"));
            return {};
        }
        Result<void> close() override { return {}; }
    } failing;
    auto res = writeExport(r, ExportFormat::Opensm, failing, {.threads = 2});
    ASSERT_FALSE(res.has_value());
    EXPECT_EQ(res.error().message, "disk full");
    EXPECT_EQ(failing.writes, 3);
}

}  // namespace
}  // namespace loom::fabric
