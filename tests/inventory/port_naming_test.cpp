// Port naming schemes (issue 35): each NOS's interface names -> front-panel port, everything
// else on the box no port; the schemes reach the inventory through the cluster spec (a switch
// model's portNaming, a per-switch override) and bad declarations name their place.
#include "loom/inventory/port_naming.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "loom/inventory/spec.hpp"

namespace loom::inventory {
namespace {

PortNaming scheme(std::string_view text) {
    auto n = parsePortNaming(text);
    EXPECT_TRUE(n) << text << ": " << n.error().toString();
    return n ? *n : PortNaming{};
}

std::string show(PortMatch m) {
    switch (m.kind) {
        case PortMatch::Port:
            return "p" + std::to_string(m.port);
        case PortMatch::SubPort:
            return "sub" + std::to_string(m.port);
        case PortMatch::NotAPort:
            break;
    }
    return "-";
}

// What sites' switches carry besides front-panel ports: never a port of any scheme.
constexpr std::string_view kNotPorts[] = {
    "lo",
    "eth0",
    "mgmt0",
    "Management1",
    "Management1/1",
    "PortChannel0001",
    "Port-Channel1",
    "Vlan1000",
    "Loopback0",
    "Tunnel1",
    "bond0",
    "bridge",
    "vxlan48",
    "docker0",
    "CPU",
    "Ethernet-Backplane1",
    "swp",
    "Ethernet",
    "",
};

TEST(PortNaming, NonPortInterfacesMatchNoScheme) {
    for (auto text : {"", "cumulus", "sonic lanes=8", "eos", "eos firstSlot=3 portsPerSlot=36",
                      "regex base=1 pattern=^et-0/0/(\\d+)$"}) {
        const auto n = scheme(text);
        for (auto name : kNotPorts)
            EXPECT_EQ(show(matchPort(n, name)), "-") << "scheme \"" << text << "\": " << name;
    }
}

TEST(PortNaming, Cumulus) {
    const auto n = scheme("cumulus");
    EXPECT_EQ(show(matchPort(n, "swp1")), "p1");
    EXPECT_EQ(show(matchPort(n, "swp32")), "p32");
    EXPECT_EQ(show(matchPort(n, "swp3s0")), "p3");
    EXPECT_EQ(show(matchPort(n, "swp3s1")), "sub3");
    EXPECT_EQ(show(matchPort(n, "Ethernet1")), "-");
    EXPECT_EQ(show(matchPort(n, "swp0")), "-");
    EXPECT_EQ(show(matchPort(n, "swp1x")), "-");
}

TEST(PortNaming, SonicLanesAndAlias) {
    const auto n = scheme("sonic lanes=8");
    EXPECT_EQ(show(matchPort(n, "Ethernet0")), "p1");
    EXPECT_EQ(show(matchPort(n, "Ethernet8")), "p2");
    EXPECT_EQ(show(matchPort(n, "Ethernet504")), "p64");
    EXPECT_EQ(show(matchPort(n, "Ethernet4")), "sub1") << "a 2x200G breakout's second half";
    // sonic-snmpagent's ifName is the front-panel alias (rfc2863.py: interface_name returns
    // the alias map's entry): etpN, etpNa/etpNb for a breakout, EthN/M or EthernetN/M.
    EXPECT_EQ(show(matchPort(n, "etp1")), "p1");
    EXPECT_EQ(show(matchPort(n, "etp17")), "p17");
    EXPECT_EQ(show(matchPort(n, "etp17a")), "p17");
    EXPECT_EQ(show(matchPort(n, "etp17b")), "sub17");
    EXPECT_EQ(show(matchPort(n, "Ethernet17/1")), "p17");
    EXPECT_EQ(show(matchPort(n, "Eth17/2")), "sub17");
    EXPECT_EQ(show(matchPort(n, "etp")), "-");
    EXPECT_EQ(show(matchPort(n, "etp1ab")), "-");
    // Its ifAlias is the port's description (rfc2863.py: interface_alias), free text that often
    // names the peer: it never decides the port (it used to win, so a description "Ethernet4"
    // or "etp7" moved the port's samples to port 4 or 7).
    EXPECT_EQ(show(matchPort(n, "Ethernet8", "etp2")), "p2");
    EXPECT_EQ(show(matchPort(n, "Ethernet16", "etp7")), "p3");
    EXPECT_EQ(show(matchPort(n, "Ethernet16", "Ethernet4")), "p3");
    EXPECT_EQ(show(matchPort(n, "Ethernet16", "Ethernet4/1/1")), "p3");
    EXPECT_EQ(show(matchPort(n, "etp3", "Ethernet4/1/1")), "p3");
    EXPECT_EQ(show(matchPort(n, "Ethernet4", "etp1b")), "sub1");
    EXPECT_EQ(show(matchPort(n, "Ethernet2", "Eth1/2")), "sub1");
    EXPECT_EQ(show(matchPort(n, "Ethernet8", "uplink to ctsw")), "p2") << "a description";
    EXPECT_EQ(show(matchPort(n, "PortChannel0001", "etp1")), "-") << "no port, whatever alias";
    EXPECT_EQ(show(matchPort(n, "swp1")), "-");
    EXPECT_EQ(show(matchPort(scheme("sonic lanes=4"), "Ethernet4")), "p2");
}

TEST(PortNaming, EosFixedAndChassis) {
    const auto fixed = scheme("eos");
    EXPECT_EQ(show(matchPort(fixed, "Ethernet1")), "p1");
    EXPECT_EQ(show(matchPort(fixed, "Ethernet17/1")), "p17");
    EXPECT_EQ(show(matchPort(fixed, "Ethernet17/3")), "sub17");
    EXPECT_EQ(show(matchPort(fixed, "Ethernet3/1/1")), "-") << "a chassis name on a fixed box";
    const auto chassis = scheme("eos firstSlot=3 portsPerSlot=36");
    EXPECT_EQ(show(matchPort(chassis, "Ethernet3/1/1")), "p1");
    EXPECT_EQ(show(matchPort(chassis, "Ethernet3/1")), "p1");
    EXPECT_EQ(show(matchPort(chassis, "Ethernet3/36/1")), "p36");
    EXPECT_EQ(show(matchPort(chassis, "Ethernet4/1/1")), "p37");
    EXPECT_EQ(show(matchPort(chassis, "Ethernet18/36/1")), "p576");
    EXPECT_EQ(show(matchPort(chassis, "Ethernet3/1/5")), "sub1");
    EXPECT_EQ(show(matchPort(chassis, "Ethernet1/1/1")), "-") << "a supervisor slot";
    EXPECT_EQ(show(matchPort(chassis, "Ethernet3/37/1")), "-");
    EXPECT_EQ(show(matchPort(chassis, "Ethernet5")), "-");
}

TEST(PortNaming, RegexCapturesThePortNumber) {
    const auto n = scheme("regex base=0 pattern=^et-0/0/(\\d+)$");
    EXPECT_EQ(show(matchPort(n, "et-0/0/0")), "p1");
    EXPECT_EQ(show(matchPort(n, "et-0/0/35")), "p36");
    EXPECT_EQ(show(matchPort(n, "et-0/0/35.0")), "-");
    EXPECT_EQ(show(matchPort(n, "xe-0/0/1")), "-");
    EXPECT_EQ(show(matchPort(n, std::string(500, 'a'))), "-") << "bounded";
}

TEST(PortNaming, DefaultIsLoomsOwnNamesOnly) {
    const PortNaming n;
    EXPECT_EQ(show(matchPort(n, "p17")), "p17");
    EXPECT_EQ(show(matchPort(n, "17")), "p17");
    EXPECT_EQ(show(matchPort(n, "swp17")), "p17");
    EXPECT_EQ(show(matchPort(n, "Ethernet17")), "p17");
    EXPECT_EQ(show(matchPort(n, "Ethernet3/1/1")), "-");
    EXPECT_EQ(show(matchPort(n, "swp1s0")), "-");
}

TEST(PortNaming, InterfaceNamesMapBackToTheirPorts) {
    for (auto text : {"", "cumulus", "sonic lanes=8", "eos", "eos firstSlot=3 portsPerSlot=36"}) {
        const auto n = scheme(text);
        for (int p : {1, 2, 36, 37, 128, 576})
            EXPECT_EQ(show(matchPort(n, interfaceName(n, p))), "p" + std::to_string(p))
                << text << " " << interfaceName(n, p);
    }
    EXPECT_EQ(interfaceName(scheme("eos firstSlot=3 portsPerSlot=36"), 37), "Ethernet4/1/1");
    EXPECT_EQ(interfaceName(scheme("sonic lanes=8"), 2), "Ethernet8");
}

TEST(PortNaming, CanonicalTextRoundTrips) {
    for (auto text : {"cumulus", "sonic lanes=8", "eos", "eos firstSlot=3 portsPerSlot=36",
                      "regex base=1 pattern=^Eth (\\d+)$"})
        EXPECT_EQ(portNamingText(scheme(text)), text);
    EXPECT_EQ(portNamingText(scheme("default")), "");
}

TEST(PortNaming, BadDeclarationsSayWhatIsWrong) {
    auto msg = [](std::string_view text) {
        auto n = parsePortNaming(text);
        return n ? std::string("accepted") : n.error().message;
    };
    EXPECT_NE(msg("junos").find("unknown port naming scheme \"junos\""), std::string::npos);
    EXPECT_NE(msg("sonic").find("needs lanes=N"), std::string::npos);
    EXPECT_NE(msg("sonic lanes=0").find("lanes must be an integer in 1..16"), std::string::npos);
    EXPECT_NE(msg("cumulus lanes=4").find("takes no \"lanes\""), std::string::npos);
    EXPECT_NE(msg("eos firstSlot=3").find("both firstSlot and portsPerSlot"), std::string::npos);
    EXPECT_NE(msg("regex pattern=^swp\\d+$").find("no capture group"), std::string::npos);
    EXPECT_NE(msg("regex pattern=^swp(\\d+$").find("no valid regular expression"),
              std::string::npos);
    EXPECT_NE(msg("regex").find("needs pattern="), std::string::npos);
}

constexpr std::string_view kSpec = R"(apiVersion: loom/v1
kind: Cluster
metadata: {name: naming}
spec:
  site: {name: lab}
  models:
    hosts: [{name: gt}]
    switches:
      - {name: minipack2, ports: 128, portNaming: {scheme: sonic, lanes: 8}}
      - {name: arista-7800r3, ports: 576, portNaming: "eos firstSlot=3 portsPerSlot=36"}
  zones: [{racks: 2, hostModel: gt}]
  fabric:
    type: roce
    rtsw: {model: minipack2, uplinks: 2}
    ctsw: {model: arista-7800r3, perZone: 2}
  overrides:
    switches:
      - {name: z1-r002-rtsw, portNaming: cumulus}
)";

TEST(PortNaming, DeclaredOnTheModelOverriddenPerSwitch) {
    auto inv = loadClusterSpec(kSpec);
    ASSERT_TRUE(inv) << inv.error().toString();
    std::map<std::string, std::string> naming;
    for (const auto& s : inv->switches) naming[s.name.str()] = s.portNaming.str();
    EXPECT_EQ(naming["z1-r001-rtsw"], "sonic lanes=8");
    EXPECT_EQ(naming["z1-r002-rtsw"], "cumulus");
    EXPECT_EQ(naming["z1-ctsw01"], "eos firstSlot=3 portsPerSlot=36");
}

TEST(PortNaming, ABadDeclarationInASpecNamesItsPlace) {
    std::string spec(kSpec);
    spec.replace(spec.find("lanes: 8"), 8, "lanes: 0");
    auto inv = loadClusterSpec(spec);
    ASSERT_FALSE(inv);
    EXPECT_EQ(inv.error().path, "spec.models.switches[0].portNaming") << inv.error().toString();
    EXPECT_NE(inv.error().message.find("lanes"), std::string::npos);
    spec = kSpec;
    spec.replace(spec.find("portNaming: cumulus"), 19, "portNaming: junos");
    inv = loadClusterSpec(spec);
    ASSERT_FALSE(inv);
    EXPECT_EQ(inv.error().path, "spec.overrides.switches[0].portNaming") << inv.error().toString();
}

}  // namespace
}  // namespace loom::inventory
