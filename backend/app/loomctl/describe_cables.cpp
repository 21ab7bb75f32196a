// `describe`'s cable sections, as NetBox shows an interface's cable trace and UFM a device's
// neighbours: a device's peers (its cabled ports grouped by the device at the other end) and, for
// a host, NIC or port, the trace up the backend fabric (NIC → RTSW → CTSW → ATSW, or leaf →
// spine → core), one tier per line. Everything comes from the public list API: ports carry their
// `link`, `peerPort` and `peer`, and switches are fetched by name with repeated filters.
#include "loomctl/describe_cables.hpp"

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "loom/inventory/model.hpp"

namespace loom::loomctl {
namespace {

using Json = nlohmann::json;
using Items = std::vector<Json>;

std::string str(const Json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The switches among `names` by name, 32 names per request (the server's filter limit).
std::map<std::string, Json> switchesByName(client::Client& c, const std::set<std::string>& names) {
    std::map<std::string, Json> out;
    std::vector<std::pair<std::string, std::string>> filters;
    auto flush = [&] {
        if (filters.empty()) return;
        if (auto items = c.list("switches", filters, 0, 5000))
            for (auto& s : *items) out[str(s, "name")] = s;
        filters.clear();
    };
    for (const auto& n : names) {
        filters.emplace_back("name", n);
        if (filters.size() == 32) flush();
    }
    flush();
    return out;
}

int tierOf(const Json& sw) {
    auto role = inventory::parseSwitchRole(str(sw, "role"));
    return role ? inventory::switchTier(*role) : 0;
}

// "a, b, c" or "a … z (N)" for long lists.
std::string nameList(const std::vector<std::string>& names) {
    if (names.size() <= 4) {
        std::string s;
        for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
        return s;
    }
    return names.front() + " … " + names.back() + " (" + std::to_string(names.size()) + ")";
}

// "18 in_service" / "17 in_service, 1 drained".
std::string stateCounts(const std::map<std::string, int>& states) {
    std::string s;
    for (const auto& [state, n] : states)
        s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + state;
    return s;
}

struct PeerGroup {
    std::vector<std::string> localPorts;
    std::map<std::string, int> states;  // port state -> count
};

// The device's cabled ports grouped by the device at the other end, in name order.
std::map<std::string, PeerGroup> peersOf(client::Client& c, const std::string& device) {
    std::map<std::string, PeerGroup> groups;
    auto ports = c.list("ports", {{"device", device}}, 0, 5000);
    if (!ports) return groups;
    for (const auto& p : *ports) {
        auto peer = str(p, "peer");
        if (peer.empty()) continue;
        auto& g = groups[peer];
        g.localPorts.push_back(str(p, "name"));
        g.states[str(p, "state")]++;
    }
    return groups;
}

void traceUp(client::Client& c, const std::string& start, std::map<std::string, Json> switches);

}  // namespace

void printIndented(const std::string& text) {
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        std::cout << "  " << text.substr(pos, nl - pos) << '\n';
        pos = nl == std::string::npos ? text.size() : nl + 1;
    }
}

void printPeers(client::Client& c, const std::string& device) {
    auto groups = peersOf(c, device);
    std::cout << "Peers:";
    if (groups.empty()) {
        std::cout << " <none>\n";
        return;
    }
    std::cout << '\n';
    std::set<std::string> names;
    for (const auto& [peer, g] : groups) names.insert(peer);
    auto switches = switchesByName(c, names);
    std::vector<std::vector<std::string>> rows{
        {"PEER", "ROLE", "LINKS", "LOCAL-PORTS", "PORT-STATES"}};
    for (const auto& [peer, g] : groups) {
        auto sw = switches.find(peer);
        std::string role = sw != switches.end() ? str(sw->second, "role") : "";
        rows.push_back({peer, role.empty() ? "-" : role, std::to_string(g.localPorts.size()),
                        nameList(g.localPorts), stateCounts(g.states)});
    }
    printIndented(client::renderRows(rows));
}

void printTrace(client::Client& c, const std::string& kind, const std::string& name) {
    // The first hop: the object's own cabled ports (a host's through its NICs).
    Items ports;
    if (kind == "hosts") {
        if (auto p = c.list("ports", {{"host", name}}, 0, 5000)) ports = std::move(*p);
    } else if (kind == "nics") {
        if (auto p = c.list("ports", {{"device", name}}, 0, 5000)) ports = std::move(*p);
    } else if (kind == "ports") {
        if (auto p = c.list("ports", {{"name", name}}, 0, 1)) ports = std::move(*p);
    }
    std::cout << "Trace:";
    std::vector<std::vector<std::string>> hop{{"PORT", "LINK", "PEER-PORT", "PEER", "STATE"}};
    std::set<std::string> firstSwitches;
    for (const auto& p : ports) {
        if (str(p, "peer").empty()) continue;
        hop.push_back(
            {str(p, "name"), str(p, "link"), str(p, "peerPort"), str(p, "peer"), str(p, "state")});
        firstSwitches.insert(str(p, "peer"));
    }
    if (hop.size() == 1) {
        std::cout << " <no cabled port>\n";
        return;
    }
    std::cout << '\n';
    printIndented(client::renderRows(hop));

    // Then up the tiers from each first switch (the backend RTSW, the frontend FSW): each line is
    // one switch and where its uplinks go (peers of a higher tier); the next line follows the
    // first of them (ECMP peers are alike).
    const auto first = switchesByName(c, firstSwitches);
    for (const auto& start : firstSwitches) {
        if (first.find(start) == first.end()) continue;
        traceUp(c, start, first);
    }
}

namespace {

void traceUp(client::Client& c, const std::string& start, std::map<std::string, Json> switches) {
    std::string at = start;
    for (int guard = 0; guard < 6 && !at.empty(); ++guard) {
        auto self = switches.find(at);
        if (self == switches.end()) break;
        const int tier = tierOf(self->second);
        auto groups = peersOf(c, at);
        std::set<std::string> names;
        for (const auto& [peer, g] : groups) names.insert(peer);
        auto peers = switchesByName(c, names);
        std::vector<std::string> up;
        std::map<std::string, int> states;
        std::size_t links = 0;
        std::string upRole;
        for (const auto& [peer, g] : groups) {
            auto sw = peers.find(peer);
            if (sw == peers.end() || tierOf(sw->second) <= tier) continue;
            up.push_back(peer);
            upRole = str(sw->second, "role");
            links += g.localPorts.size();
            for (const auto& [s, n] : g.states) states[s] += n;
        }
        std::cout << "  " << at << " (" << str(self->second, "role") << ")";
        if (up.empty()) {
            std::cout << ": top of the fabric\n";
            break;
        }
        std::cout << " ⇒ " << links << " uplink" << (links == 1 ? "" : "s") << " to " << up.size()
                  << ' ' << upRole << ": " << nameList(up) << "; ports " << stateCounts(states)
                  << '\n';
        switches = std::move(peers);
        at = up.front();
    }
}

}  // namespace
}  // namespace loom::loomctl
