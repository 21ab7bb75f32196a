// Real switches as sites run them (issue 35): snmp_exporter 0.21 if_mib pages (its exact
// format: ifIndex, then the ifAlias and ifName lookups) of SONiC, EOS chassis and Cumulus
// boxes, with everything else such boxes carry. Only front-panel ports of the switch's
// declared scheme map; port-channels, VLANs, loopbacks and management never open an event,
// and are listed once by name; two ifIndexes naming one port are a conflict nobody believes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "hub_fixture.hpp"

namespace loom::telemetry {
namespace {

struct If {
    int ifIndex;
    std::string name, alias;
    int oper;                      // 1 up, 2 down
    std::string speed = "400000";  // ifHighSpeed, Mb/s
};

// One if_mib page as snmp_exporter 0.21 writes it for the shipped configs/exporters/snmp.yml
// (families sorted by name, labels sorted, ifAlias and ifName lookups on every object).
std::string page(const std::vector<If>& ifs) {
    std::string out;
    auto family = [&](std::string_view name, std::string_view type, auto value) {
        out += "# HELP " + std::string(name) + " x\n# TYPE " + std::string(name) + " " +
               std::string(type) + "\n";
        for (const auto& i : ifs)
            out += std::string(name) + "{ifAlias=\"" + i.alias + "\",ifIndex=\"" +
                   std::to_string(i.ifIndex) + "\",ifName=\"" + i.name + "\"} " + value(i) + "\n";
    };
    family("ifHCInOctets", "counter", [](const If&) { return std::string("1000"); });
    family("ifHighSpeed", "gauge", [](const If& i) { return i.speed; });
    family("ifInErrors", "counter", [](const If&) { return std::string("0"); });
    family("ifOperStatus", "gauge", [](const If& i) { return std::to_string(i.oper); });
    return out;
}

class SwitchNaming : public HubFixture {
protected:
    void SetUp() override {
        shape_ = {.zones = 1, .racksPerZone = 2, .ctswPerZone = 2, .ctswUplinks = 2, .atsw = 1};
    }
    void build(const std::map<std::string, std::string>& naming) {
        makeHub(shape_);
        for (auto& s : inv_.switches)
            if (auto it = naming.find(s.name.str()); it != naming.end()) s.portNaming = it->second;
        layout_ = std::make_shared<const HallLayout>(HallLayout::build(inv_));
        hub_->setLayout(layout_);
    }
    std::vector<std::string> openLinkDown() const {
        std::vector<std::string> out;
        for (const auto& e : hub_->openEvents())
            if (e.kind == "link_down") out.push_back(e.location);
        return out;
    }
    std::string linkAt(std::string_view sw, int port) const {
        const auto p = layout_->portByName(sw, "p" + std::to_string(port));
        EXPECT_NE(p, kNoIndex);
        const auto l = p == kNoIndex ? kNoIndex : layout_->ports()[p].linkIndex;
        EXPECT_NE(l, kNoIndex) << sw << " p" << port << " has no link";
        return l == kNoIndex ? "" : layout_->links()[l].name;
    }
    std::string metric(std::string_view reason) const {
        std::string m;
        hub_->appendMetrics(m);
        const std::string key =
            "loom_telemetry_unknown_total{reason=\"" + std::string(reason) + "\"} ";
        auto at = m.find(key);
        return at == std::string::npos
                   ? "absent"
                   : m.substr(at + key.size(), m.find('\n', at) - at - key.size());
    }

    loom::testing::SyntheticShape shape_;
};

TEST_F(SwitchNaming, SonicLaneNamesMapAndAPortChannelDownOpensNothing) {
    build({{"z1-r001-rtsw", "sonic lanes=8"}});
    const std::vector<If> box = {
        {1, "Ethernet0", "etp1", 1},     {9, "Ethernet8", "etp2", 1},
        {17, "Ethernet16", "", 1},       {1001, "PortChannel0001", "", 2},
        {2000, "Vlan1000", "", 1},       {3000, "Loopback0", "", 1},
        {4000, "mgmt0", "", 2},          {5000, "lo", "", 1},
        {6000, "Ethernet4", "etp1b", 2},  // the second half of a broken-out etp1
    };
    for (int i = 0; i < 3; ++i) {
        auto rep =
            ingest(page(box), {.switchName = "z1-r001-rtsw", .origin = "scrape snmp z1-r001-rtsw"});
        EXPECT_EQ(rep.unknownTotal(), 0u);
    }
    EXPECT_TRUE(openLinkDown().empty()) << openLinkDown()[0];
    EXPECT_TRUE(events_.empty()) << events_[0].kind << " " << events_[0].location;

    // Ethernet8 (front-panel port 2) down: link_down on port 2's link, nowhere else.
    auto down = box;
    down[1].oper = 2;
    ingest(page(down), {.switchName = "z1-r001-rtsw", .origin = "scrape snmp z1-r001-rtsw"});
    ASSERT_EQ(openLinkDown().size(), 1u);
    EXPECT_EQ(openLinkDown()[0], linkAt("z1-r001-rtsw", 2));

    // The ignored interfaces are listed once each, by name, with why and from where.
    const auto names = hub_->unknownNames("not_a_port");
    std::map<std::string, UnknownName> byName;
    for (const auto& u : names) byName[u.name] = u;
    for (auto n : {"PortChannel0001", "Vlan1000", "Loopback0", "mgmt0", "lo", "Ethernet4"})
        EXPECT_TRUE(byName.count("z1-r001-rtsw/" + std::string(n))) << n;
    EXPECT_EQ(names.size(), 6u);
    const auto& pc = byName["z1-r001-rtsw/PortChannel0001"];
    EXPECT_EQ(pc.detail, "no front-panel port of scheme sonic lanes=8");
    EXPECT_EQ(pc.source, "scrape snmp z1-r001-rtsw");
    EXPECT_EQ(pc.firstSeenMs, kT0 + 1000);
    EXPECT_EQ(pc.lastSeenMs, kT0 + 4000);
    EXPECT_EQ(byName["z1-r001-rtsw/Ethernet4"].detail, "breakout sub-port of p1");
    // Counted once by name, not per sample (4 pages x 4 families x 6 names = 96 samples).
    EXPECT_EQ(metric("not_a_port"), "6");
    EXPECT_EQ(metric("unknown_port"), "0");
}

// EOS chassis names recorded from an Arista 7800R3 (line cards from slot 3, 36 ports each):
// Linux cannot carry a '/' in an interface name, so this is the page, not a namespace.
TEST_F(SwitchNaming, EosChassisPortsBySlotAndPort) {
    build({{"z1-ctsw01", "eos firstSlot=3 portsPerSlot=36"}});
    // z1-ctsw01: p1, p2 to the racks' RTSWs, p3.. uplinks; 4 ports declared.
    const std::vector<If> box = {
        {3001, "Ethernet3/1/1", "", 1},    {3009, "Ethernet3/2/1", "", 1},
        {3005, "Ethernet3/1/5", "", 2},    {999001, "Management1/1", "", 2},
        {1000001, "Port-Channel1", "", 2}, {5000001, "Loopback0", "", 1},
        {4001, "Ethernet4/1/1", "", 2},  // port 37: above what the model declares
    };
    ingest(page(box), {.switchName = "z1-ctsw01"});
    EXPECT_TRUE(openLinkDown().empty()) << openLinkDown()[0];
    auto down = box;
    down[1].oper = 2;  // Ethernet3/2/1 = front-panel port 2
    ingest(page(down), {.switchName = "z1-ctsw01"});
    ASSERT_EQ(openLinkDown().size(), 1u);
    EXPECT_EQ(openLinkDown()[0], linkAt("z1-ctsw01", 2));
    const auto unknown = hub_->unknownNames("unknown_port");
    ASSERT_EQ(unknown.size(), 1u);
    EXPECT_EQ(unknown[0].name, "z1-ctsw01/Ethernet4/1/1");
    EXPECT_EQ(metric("unknown_port"), "1") << "one name, however many samples";
    EXPECT_EQ(hub_->unknownNames("not_a_port").size(), 4u);
}

// The defect as reported: a Cumulus box with no scheme declared took PortChannel0001 for port
// 1 and flapped link_down on swp1's link every scrape.
TEST_F(SwitchNaming, WithoutADeclaredSchemeOnlyLoomsOwnNamesMap) {
    build({});
    const std::vector<If> box = {
        {1, "swp1", "", 1},      {2, "swp2", "", 1},         {10, "PortChannel0001", "", 2},
        {11, "Vlan1000", "", 2}, {12, "Management1", "", 2}, {13, "Ethernet3/1/1", "", 2},
    };
    for (int i = 0; i < 5; ++i) ingest(page(box), {.switchName = "z1-r001-rtsw"});
    EXPECT_TRUE(events_.empty()) << events_[0].kind << " " << events_[0].location;
}

TEST_F(SwitchNaming, TwoIfIndexesNamingOnePortAreAConflictNeitherBelieved) {
    build({{"z1-r001-rtsw", "cumulus"}});
    // swp1 deleted and made again: net-snmp keeps the old row (down) beside the new one (up).
    std::vector<If> box = {{5, "swp1", "", 2}, {9, "swp1", "", 1}, {2, "swp2", "", 1}};
    for (int i = 0; i < 3; ++i) {
        auto rep = ingest(page(box), {.switchName = "z1-r001-rtsw"});
        EXPECT_EQ(rep.applied, 4u) << "swp2's four samples only";
    }
    EXPECT_TRUE(events_.empty()) << events_[0].kind << " " << events_[0].location;
    const auto p1 = layout_->portByName("z1-r001-rtsw", "p1");
    EXPECT_TRUE(std::isnan(hub_->portValue(p1, PortCounter::OperStatus))) << "not believed";
    const auto c = hub_->unknownNames("port_conflict");
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].name, "z1-r001-rtsw/p1");
    EXPECT_EQ(c[0].detail,
              "ifIndex 5 (swp1) and ifIndex 9 (swp1) both name this port; neither "
              "is believed");
    // Resolved (snmpd restarted, the stale row gone): believed again.
    box.erase(box.begin());
    ingest(page(box), {.switchName = "z1-r001-rtsw"});
    EXPECT_EQ(hub_->portValue(p1, PortCounter::OperStatus), 1);
    box[0].oper = 2;
    ingest(page(box), {.switchName = "z1-r001-rtsw"});
    ASSERT_EQ(openLinkDown().size(), 1u);
    EXPECT_EQ(openLinkDown()[0], linkAt("z1-r001-rtsw", 1));
}

TEST_F(SwitchNaming, TheCatalogueIsBoundedPerReason) {
    build({{"z1-r001-rtsw", "cumulus"}});
    for (int round = 0; round < 3; ++round) {
        std::vector<If> box;
        for (int i = 0; i < 200; ++i)
            box.push_back({1000 + i, "Vlan" + std::to_string(round * 200 + i), "", 1});
        ingest(page(box), {.switchName = "z1-r001-rtsw"});
    }
    const auto all = hub_->unknownNames("not_a_port", 10'000);
    EXPECT_EQ(all.size(), 256u);
    EXPECT_EQ(all.front().lastSeenMs, now_) << "newest first";
    EXPECT_EQ(metric("not_a_port"), "600") << "distinct names seen";
    EXPECT_EQ(hub_->unknownNames("", 5).size(), 5u);
}

// SONiC's own SNMP agent (sonic-snmpagent, rfc2863.py) answers ifName with the port's
// front-panel alias and ifAlias with its description, which sites set to the peer: ifName
// etp2 with ifAlias "Ethernet4" is front-panel port 2. Loom read only EthernetK names, so
// every port of a real SONiC box was ignored as not_a_port, and took a description of a port's
// shape for the port.
TEST_F(SwitchNaming, SonicsAgentNamesPortsByTheirAliasAndItsIfAliasIsADescription) {
    build({{"z1-r001-rtsw", "sonic lanes=8"}});
    std::vector<If> box = {
        {1, "etp1", "z1-r001-h0-nic0", 1},    {9, "etp2", "Ethernet4", 1}, {17, "etp3", "", 1},
        {1001, "PortChannel0001", "etp1", 2}, {2001, "Vlan1000", "", 1},   {10000, "eth0", "", 1},
    };
    auto rep = ingest(page(box), {.switchName = "z1-r001-rtsw"});
    EXPECT_EQ(rep.unknownTotal(), 0u);
    EXPECT_EQ(rep.applied, 12u) << "etp1..etp3: four objects each";
    EXPECT_TRUE(events_.empty()) << events_[0].kind << " " << events_[0].location;
    box[1].oper = 2;  // etp2 down
    ingest(page(box), {.switchName = "z1-r001-rtsw"});
    ASSERT_EQ(openLinkDown().size(), 1u);
    EXPECT_EQ(openLinkDown()[0], linkAt("z1-r001-rtsw", 2)) << "not port 4, its description";
    EXPECT_EQ(hub_->unknownNames("not_a_port").size(), 3u);
}

// ifOperStatus as IF-MIB defines it (1 up, 2 down, 3 testing, 4 unknown, 5 dormant, 6
// notPresent, 7 lowerLayerDown): an agent that cannot tell (unknown) or a port under test
// opens no critical link_down; an empty cage, a PHY down or a dormant port does.
TEST_F(SwitchNaming, OperStatusValuesAsIfMibDefinesThem) {
    build({{"z1-r001-rtsw", "cumulus"}});
    std::vector<If> box;
    for (int v = 1; v <= 7; ++v) box.push_back({v, "swp" + std::to_string(v), "", 1});
    ingest(page(box), {.switchName = "z1-r001-rtsw"});
    for (int v = 1; v <= 7; ++v) box[v - 1].oper = v;
    ingest(page(box), {.switchName = "z1-r001-rtsw"});
    std::vector<std::string> want;
    for (int port : {2, 5, 6, 7}) want.push_back(linkAt("z1-r001-rtsw", port));
    auto got = openLinkDown();
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
    const auto l3 = layout_->ports()[layout_->portByName("z1-r001-rtsw", "p3")].linkIndex;
    EXPECT_EQ(hub_->packed(Topic::LinkHealth)[l3], kLinkUp) << "testing keeps the last state";
}

// snmp_exporter's EnumAsStateSet (a generator option sites use for ifOperStatus): a line per
// state, the state in a label, 1 on the current one. The 0 lines are no "down".
TEST_F(SwitchNaming, OperStatusAsAStateSet) {
    build({{"z1-r001-rtsw", "cumulus"}});
    auto stateSet = [](std::string_view current) {
        std::string out = "# HELP ifOperStatus x\n# TYPE ifOperStatus gauge\n";
        for (std::string_view st :
             {"down", "dormant", "lowerLayerDown", "notPresent", "testing", "unknown", "up"})
            out += "ifOperStatus{ifAlias=\"\",ifIndex=\"1\",ifName=\"swp1\",ifOperStatus=\"" +
                   std::string(st) + "\"} " + (st == current ? "1" : "0") + "\n";
        return out;
    };
    // Before: each 0 line was a "down" and the last line won, so every scrape of an up port
    // opened and closed a link_down (and a down port read as up when `up` came last).
    ingest(stateSet("up"), {.switchName = "z1-r001-rtsw"});
    ingest(stateSet("up"), {.switchName = "z1-r001-rtsw"});
    EXPECT_TRUE(events_.empty()) << events_.size() << " events, the first " << events_[0].kind;
    ingest(stateSet("lowerLayerDown"), {.switchName = "z1-r001-rtsw"});
    ASSERT_EQ(openLinkDown().size(), 1u);
    EXPECT_EQ(openLinkDown()[0], linkAt("z1-r001-rtsw", 1));
    ingest(stateSet("up"), {.switchName = "z1-r001-rtsw"});
    EXPECT_TRUE(openLinkDown().empty());
    EXPECT_EQ(events_.size(), 2u) << "one open, one close";
}

// ifHCInOctets is a 64-bit counter, written by snmp_exporter as a float (1.8446744e+19 near
// the top): across its wrap the increase is what went through, not the new value alone; and a
// port with no ifHighSpeed (an agent that leaves it out, or 0) is measured against its
// inventory speed and opens no link_speed.
TEST_F(SwitchNaming, A64BitOctetCounterWrapsAndAMissingIfHighSpeedIsTheInventorys) {
    build({{"z1-r001-rtsw", "cumulus"}});
    auto octets = [](const std::string& v, const std::string& speed) {
        std::string out =
            "# HELP ifHCInOctets x\n# TYPE ifHCInOctets counter\n"
            "ifHCInOctets{ifAlias=\"\",ifIndex=\"1\",ifName=\"swp1\"} " +
            v + "\n";
        if (!speed.empty())
            out +=
                "# HELP ifHighSpeed x\n# TYPE ifHighSpeed gauge\n"
                "ifHighSpeed{ifAlias=\"\",ifIndex=\"1\",ifName=\"swp1\"} " +
                speed + "\n";
        return out + "ifOperStatus{ifAlias=\"\",ifIndex=\"1\",ifName=\"swp1\"} 1\n";
    };
    const auto p1 = layout_->portByName("z1-r001-rtsw", "p1");
    // 25 GB before the top of 2^64, then 25 GB after it, a second later: 50 GB/s = 400 Gb/s.
    ingest(octets("1.8446744048709552e+19", ""), {.switchName = "z1-r001-rtsw"});
    ingest(octets("2.5e+10", ""), {.switchName = "z1-r001-rtsw"});
    EXPECT_NEAR(hub_->portUtil(p1), 100, 0.5) << "the wrap's increase is 50 GB, not 25 GB";
    // Half that rate, ifHighSpeed 0 (no speed known): still against the 400G of the inventory.
    ingest(octets("5e+10", "0"), {.switchName = "z1-r001-rtsw"});
    EXPECT_NEAR(hub_->portUtil(p1), 50, 0.5);
    EXPECT_TRUE(events_.empty()) << events_[0].kind << " " << events_[0].message;
}

// At 24k every switch's management, loopback, port-channel and VLAN interfaces are ~16,000
// names, far more than the catalogue keeps: a name it evicted and then sees again is not a new
// name, or not_a_port counted every scrape's samples again (396,381 in two minutes of the 24k
// scrape farm, for ~16,400 names).
TEST_F(SwitchNaming, ANameSeenAgainAfterTheCatalogueDroppedItIsNotCountedAgain) {
    build({{"z1-r001-rtsw", "cumulus"}});
    for (int scrape = 0; scrape < 3; ++scrape)
        for (int round = 0; round < 3; ++round) {
            std::vector<If> box;
            for (int i = 0; i < 200; ++i)
                box.push_back({1000 + i, "Vlan" + std::to_string(round * 200 + i), "", 1});
            ingest(page(box), {.switchName = "z1-r001-rtsw"});
        }
    EXPECT_EQ(hub_->unknownNames("not_a_port", 10'000).size(), 256u);
    EXPECT_EQ(metric("not_a_port"), "600") << "distinct names seen, each once";
}

// SONiC's agent answers ifHighSpeed 40000 for a port whose speed it does not know
// (sonic-snmpagent rfc2863.py: `entry.get("speed", 40000)`): on a sonic-scheme switch that is
// no speed, so it opens no link_speed and utilization is measured against the inventory's 400G;
// a port that says 200000 still opens it, and so does 40000 on a switch of another scheme.
TEST_F(SwitchNaming, SonicsUnknownSpeedPlaceholderIsNoSpeed) {
    build({{"z1-r001-rtsw", "sonic lanes=8"}, {"z1-r002-rtsw", "cumulus"}});
    auto linkSpeed = [&] {
        std::vector<std::string> out;
        for (const auto& e : hub_->openEvents())
            if (e.kind == "link_speed") out.push_back(e.location);
        std::sort(out.begin(), out.end());
        return out;
    };
    std::vector<If> sonic = {{1, "Ethernet0", "etp1", 1, "40000"},
                             {9, "Ethernet8", "etp2", 1, "40000"},
                             {17, "Ethernet16", "etp3", 1, "400000"}};
    std::vector<If> cumulus = {{1, "swp1", "", 1, "40000"}, {2, "swp2", "", 1, "400000"}};
    for (int i = 0; i < 2; ++i) {
        ingest(page(sonic), {.switchName = "z1-r001-rtsw"});
        ingest(page(cumulus), {.switchName = "z1-r002-rtsw"});
    }
    EXPECT_EQ(linkSpeed(), std::vector<std::string>{linkAt("z1-r002-rtsw", 1)})
        << "only the Cumulus port at 40G";
    // 100 GB in a second on the SONiC port whose speed is unknown: against its rated 400G.
    const auto p1 = layout_->portByName("z1-r001-rtsw", "p1");
    auto octets = [](const std::string& v) {
        return "# HELP ifHCInOctets x\n# TYPE ifHCInOctets counter\n"
               "ifHCInOctets{ifAlias=\"etp1\",ifIndex=\"1\",ifName=\"Ethernet0\"} " +
               v + "\n";
    };
    ingest(octets("0"), {.switchName = "z1-r001-rtsw"});
    ingest(octets("2.5e+10"), {.switchName = "z1-r001-rtsw"});
    EXPECT_NEAR(hub_->portUtil(p1), 50, 5) << "2.5e10 bytes/s of 400G, not of a 40G placeholder";
    // A real slow port on SONiC still says so.
    sonic[1].speed = "200000";
    ingest(page(sonic), {.switchName = "z1-r001-rtsw"});
    EXPECT_EQ(linkSpeed(),
              (std::vector<std::string>{linkAt("z1-r001-rtsw", 2), linkAt("z1-r002-rtsw", 1)}));
}

}  // namespace
}  // namespace loom::telemetry
