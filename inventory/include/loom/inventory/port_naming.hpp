// Port naming: how a switch's network OS names its front-panel ports, declared once per switch
// model in the cluster spec (or per switch in spec.overrides.switches), so telemetry maps an
// interface name (IF-MIB ifName) to Loom's 1-based port number and
// ignores everything else on the box (lo, mgmt0, PortChannel0001, Vlan1000, Loopback0,
// tunnels). docs/cluster-spec.md ("Port naming") lists the schemes:
//
//   cumulus               swpN -> port N; a breakout swpNs0 -> port N, swpNsM (M>0) a sub-port
//
// In every scheme the first lane of a broken-out port stands for the port (Loom's inventory
// cables front-panel ports); the other lanes are sub-ports, ignored and listed.
//   sonic lanes=8         EthernetK -> port K/8+1 (K a multiple of 8; other K are breakout
//                         sub-ports); the front-panel alias sonic-snmpagent gives as ifName,
//                         "etpN" / "EthN/1" / "EthernetN/1", -> port N ("etpNb", "EthN/2":
//                         sub-ports). ifAlias is the port's description there: never used
//   eos                   EthernetP or EthernetP/1 -> port P (EthernetP/L, L>1: sub-port)
//   eos firstSlot=3 portsPerSlot=36
//                         chassis: EthernetS/P[/L] -> port (S-firstSlot)*portsPerSlot + P
//   regex base=1 pattern=^et-0/0/(\d+)$
//                         the first capture is the port number; base = the first port's
//                         number in the name (0 for zero-based names)
//   "" (none declared)    Loom's own pN, swpN, EthernetN or N -> port N
//
//   auto n = parsePortNaming("sonic lanes=8");          // Result<PortNaming>
//   auto m = matchPort(*n, "Ethernet8", "");            // {PortMatch::Port, 2}
//   matchPort(*n, "PortChannel0001", "").kind == PortMatch::NotAPort
//
// The canonical text (portNamingText) is what the inventory stores in Switch::portNaming and
// what the API shows. No allocation on the match path except for the regex scheme.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <string_view>

#include "loom/inventory/error.hpp"

namespace loom::inventory {

struct PortNaming {
    enum class Scheme : std::uint8_t { Default, Cumulus, Sonic, Eos, Regex };
    Scheme scheme = Scheme::Default;
    int lanes = 0;         // sonic: lanes (EthernetK steps) per front-panel port
    int firstSlot = 0;     // eos chassis: the first line card's slot (3 on a 7800R3)
    int portsPerSlot = 0;  // eos chassis: ports per line card (0 = fixed-configuration box)
    int base = 1;          // regex: the number the first port carries in the name
    std::string pattern;   // regex: ECMAScript, anchored by the caller's ^...$
    std::shared_ptr<const std::regex> re;
};

struct PortMatch {
    enum Kind : std::uint8_t {
        Port,      // a front-panel port: `port` is its 1-based number
        SubPort,   // a breakout sub-port of front-panel port `port` (Loom tracks the port)
        NotAPort,  // no port of the scheme (loopback, management, port-channel, VLAN, tunnel)
    };
    Kind kind = NotAPort;
    int port = 0;
};

std::string_view portSchemeName(PortNaming::Scheme s);  // "default", "cumulus", ...

// Parses the canonical text ("sonic lanes=8"); InvalidArgument names what is wrong.
Result<PortNaming> parsePortNaming(std::string_view text);
std::string portNamingText(const PortNaming& n);

// The port an interface name denotes under the scheme. `ifAlias` is the interface's
// description on every NOS Loom knows (SONiC, EOS, Cumulus): no scheme takes a port from it.
PortMatch matchPort(const PortNaming& n, std::string_view ifName, std::string_view ifAlias = {});

// The name the switch gives front-panel port `port` (simulators, benchmarks, test pages):
// swpN, Ethernet<lanes*(N-1)>, EthernetN/1 or Ethernet<slot>/<p>/1; "pN" for a regex scheme.
std::string interfaceName(const PortNaming& n, int port);

}  // namespace loom::inventory
