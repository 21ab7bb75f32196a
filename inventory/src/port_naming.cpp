// Port naming schemes: canonical text <-> PortNaming, and interface name -> port.
#include "loom/inventory/port_naming.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

namespace loom::inventory {
namespace {

// Interface names longer than this are no port of any scheme (IF-MIB's ifName is at most 64
// octets on the platforms Loom knows); it also bounds the regex scheme's work per name.
constexpr std::size_t kMaxName = 64;
constexpr std::size_t kMaxPattern = 200;

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// A decimal number of 1..6 digits at s[i..], advancing i; -1 when none.
int number(std::string_view s, std::size_t& i) {
    std::size_t j = i;
    while (j < s.size() && isDigit(s[j])) ++j;
    if (j == i || j - i > 6) return -1;
    int n = 0;
    std::from_chars(s.data() + i, s.data() + j, n);
    i = j;
    return n;
}

// s is `prefix` followed by numbers separated by '/', nothing else: the numbers (at most 3).
bool slashNumbers(std::string_view s, std::string_view prefix, std::vector<int>& out) {
    out.clear();
    if (!s.starts_with(prefix)) return false;
    std::size_t i = prefix.size();
    for (;;) {
        int n = number(s, i);
        if (n < 0 || out.size() == 3) return false;
        out.push_back(n);
        if (i == s.size()) return true;
        if (s[i] != '/') return false;
        ++i;
    }
}

PortMatch port(int n) { return n > 0 ? PortMatch{PortMatch::Port, n} : PortMatch{}; }
PortMatch subPort(int n) { return n > 0 ? PortMatch{PortMatch::SubPort, n} : PortMatch{}; }

// Loom's own names and the plain conventions: pN, swpN, EthernetN, N.
PortMatch matchDefault(std::string_view s) {
    for (std::string_view prefix : {"p", "swp", "Ethernet", ""}) {
        if (!s.starts_with(prefix)) continue;
        std::size_t i = prefix.size();
        int n = number(s, i);
        if (n > 0 && i == s.size()) return port(n);
    }
    return {};
}

PortMatch matchCumulus(std::string_view s) {
    if (!s.starts_with("swp")) return {};
    std::size_t i = 3;
    int n = number(s, i);
    if (n <= 0) return {};
    if (i == s.size()) return port(n);
    if (s[i] != 's') return {};
    ++i;
    int m = number(s, i);
    if (m < 0 || i != s.size()) return {};
    // The first lane of a broken-out port stands for the port, as in every scheme.
    return m == 0 ? port(n) : subPort(n);
}

// SONiC's front-panel alias: etpN (etpNa, etpNb: breakout), EthN/M, EthernetN/M (M 1: the port).
// Not a bare EthernetN: that is SONiC's own (lane-numbered) name.
PortMatch matchSonicAlias(std::string_view a) {
    for (std::string_view prefix : {"etp", "Eth", "Ethernet"}) {
        if (!a.starts_with(prefix)) continue;
        std::size_t i = prefix.size();
        int n = number(a, i);
        if (n <= 0) continue;
        if (prefix == "etp" && i == a.size()) return port(n);
        if (prefix == "etp" && i + 1 == a.size() && a[i] >= 'a' && a[i] <= 'z')
            return a[i] == 'a' ? port(n) : subPort(n);
        if (i < a.size() && a[i] == '/') {
            ++i;
            int m = number(a, i);
            if (m < 0 || i != a.size()) continue;
            return m == 1 ? port(n) : subPort(n);
        }
    }
    return {};
}

// sonic-snmpagent (sonic_ax_impl/mibs/ietf/rfc2863.py) answers ifName with the port's
// front-panel alias ("etp17", "Ethernet17/1" on some SKUs) and ifAlias with the port's
// description from CONFIG_DB (free text, often the peer: "Ethernet4/1/1" or "to ctsw01"):
// the port is the alias in ifName, or SONiC's lane-numbered name (EthernetK, as net-snmp on a
// SONiC box or a Linux namespace names it) by its lane; the description never decides it.
PortMatch matchSonic(const PortNaming& n, std::string_view s, std::string_view /*alias*/) {
    if (auto a = matchSonicAlias(s); a.kind != PortMatch::NotAPort) return a;
    if (!s.starts_with("Ethernet")) return {};
    std::size_t i = 8;
    int k = number(s, i);
    if (k < 0 || i != s.size()) return {};
    const int lanes = n.lanes > 0 ? n.lanes : 1;
    return k % lanes == 0 ? port(k / lanes + 1) : subPort(k / lanes + 1);
}

PortMatch matchEos(const PortNaming& n, std::string_view s) {
    thread_local std::vector<int> v;
    if (!slashNumbers(s, "Ethernet", v)) return {};
    if (n.portsPerSlot > 0) {
        // Chassis: EthernetS/P or EthernetS/P/L.
        if (v.size() < 2) return {};
        const int slot = v[0] - n.firstSlot, p = v[1];
        if (slot < 0 || p < 1 || p > n.portsPerSlot) return {};
        const int num = slot * n.portsPerSlot + p;
        return v.size() == 3 && v[2] != 1 ? subPort(num) : port(num);
    }
    if (v.size() > 2) return {};
    return v.size() == 2 && v[1] != 1 ? subPort(v[0]) : port(v[0]);
}

PortMatch matchRegex(const PortNaming& n, std::string_view s) {
    if (!n.re) return {};
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_match(s.begin(), s.end(), m, *n.re) || m.size() < 2 || !m[1].matched) return {};
    std::string_view cap(&*m[1].first, static_cast<std::size_t>(m[1].length()));
    std::size_t i = 0;
    int v = number(cap, i);
    if (v < 0 || i != cap.size()) return {};
    return port(v - n.base + 1);
}

Result<int> intValue(std::string_view key, std::string_view v, int lo, int hi) {
    std::size_t i = 0;
    int n = number(v, i);
    if (n < lo || n > hi || i != v.size())
        return fail(Error::invalid(std::string(key) + " must be an integer in " +
                                   std::to_string(lo) + ".." + std::to_string(hi) + ", not \"" +
                                   std::string(v) + "\""));
    return n;
}

}  // namespace

std::string_view portSchemeName(PortNaming::Scheme s) {
    switch (s) {
        case PortNaming::Scheme::Default:
            return "default";
        case PortNaming::Scheme::Cumulus:
            return "cumulus";
        case PortNaming::Scheme::Sonic:
            return "sonic";
        case PortNaming::Scheme::Eos:
            return "eos";
        case PortNaming::Scheme::Regex:
            return "regex";
    }
    return "default";
}

Result<PortNaming> parsePortNaming(std::string_view text) {
    PortNaming n;
    auto trim = [](std::string_view s) {
        while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
        while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
        return s;
    };
    text = trim(text);
    if (text.empty() || text == "default") return n;
    std::string_view scheme = text.substr(0, text.find(' '));
    std::string_view rest = scheme.size() < text.size() ? trim(text.substr(scheme.size())) : "";
    if (scheme == "cumulus")
        n.scheme = PortNaming::Scheme::Cumulus;
    else if (scheme == "sonic")
        n.scheme = PortNaming::Scheme::Sonic;
    else if (scheme == "eos")
        n.scheme = PortNaming::Scheme::Eos;
    else if (scheme == "regex")
        n.scheme = PortNaming::Scheme::Regex;
    else
        return fail(Error::invalid("unknown port naming scheme \"" + std::string(scheme) +
                                   "\" (cumulus, sonic, eos or regex)"));
    while (!rest.empty()) {
        const auto eq = rest.find('=');
        if (eq == std::string_view::npos)
            return fail(Error::invalid("expected key=value, not \"" + std::string(rest) + "\""));
        const std::string_view key = rest.substr(0, eq);
        std::string_view value;
        if (key == "pattern") {  // the rest of the text, spaces included
            value = rest.substr(eq + 1);
            rest = {};
        } else {
            const auto sp = rest.find(' ', eq);
            value = rest.substr(eq + 1, sp == std::string_view::npos ? sp : sp - eq - 1);
            rest = sp == std::string_view::npos ? std::string_view{} : trim(rest.substr(sp));
        }
        auto bad = [&] {
            return fail(Error::invalid("the " + std::string(scheme) + " scheme takes no \"" +
                                       std::string(key) + "\""));
        };
        using S = PortNaming::Scheme;
        if (key == "lanes") {
            if (n.scheme != S::Sonic) return bad();
            auto v = intValue(key, value, 1, 16);
            if (!v) return fail(v.error());
            n.lanes = *v;
        } else if (key == "firstSlot" || key == "portsPerSlot") {
            if (n.scheme != S::Eos) return bad();
            auto v =
                intValue(key, value, key == "firstSlot" ? 0 : 1, key == "firstSlot" ? 64 : 1024);
            if (!v) return fail(v.error());
            (key == "firstSlot" ? n.firstSlot : n.portsPerSlot) = *v;
        } else if (key == "base") {
            if (n.scheme != S::Regex) return bad();
            auto v = intValue(key, value, 0, 1);
            if (!v) return fail(v.error());
            n.base = *v;
        } else if (key == "pattern") {
            if (n.scheme != S::Regex) return bad();
            if (value.empty() || value.size() > kMaxPattern)
                return fail(Error::invalid("pattern must be 1.." + std::to_string(kMaxPattern) +
                                           " characters"));
            n.pattern = std::string(value);
        } else {
            return bad();
        }
    }
    if (n.scheme == PortNaming::Scheme::Sonic && n.lanes == 0)
        return fail(
            Error::invalid("the sonic scheme needs lanes=N (lanes per front-panel port: "
                           "8 on a 400G box, 4 on a 100G one)"));
    if (n.scheme == PortNaming::Scheme::Eos && (n.firstSlot > 0) != (n.portsPerSlot > 0))
        return fail(Error::invalid("an eos chassis needs both firstSlot and portsPerSlot"));
    if (n.scheme == PortNaming::Scheme::Regex) {
        if (n.pattern.empty())
            return fail(
                Error::invalid("the regex scheme needs pattern=... with one capture "
                               "group for the port number"));
        try {
            auto re = std::make_shared<std::regex>(n.pattern, std::regex::ECMAScript);
            if (re->mark_count() < 1)
                return fail(Error::invalid("pattern \"" + n.pattern +
                                           "\" has no capture group for the port number"));
            n.re = std::move(re);
        } catch (const std::regex_error& e) {
            return fail(Error::invalid("pattern \"" + n.pattern +
                                       "\" is no valid regular "
                                       "expression: " +
                                       e.what()));
        }
    }
    return n;
}

std::string portNamingText(const PortNaming& n) {
    using S = PortNaming::Scheme;
    switch (n.scheme) {
        case S::Default:
            return {};
        case S::Cumulus:
            return "cumulus";
        case S::Sonic:
            return "sonic lanes=" + std::to_string(n.lanes);
        case S::Eos:
            if (n.portsPerSlot == 0) return "eos";
            return "eos firstSlot=" + std::to_string(n.firstSlot) +
                   " portsPerSlot=" + std::to_string(n.portsPerSlot);
        case S::Regex:
            return "regex base=" + std::to_string(n.base) + " pattern=" + n.pattern;
    }
    return {};
}

PortMatch matchPort(const PortNaming& n, std::string_view ifName, std::string_view ifAlias) {
    if (ifName.empty() || ifName.size() > kMaxName) return {};
    switch (n.scheme) {
        case PortNaming::Scheme::Default:
            return matchDefault(ifName);
        case PortNaming::Scheme::Cumulus:
            return matchCumulus(ifName);
        case PortNaming::Scheme::Sonic:
            return matchSonic(n, ifName, ifAlias.size() > kMaxName ? std::string_view{} : ifAlias);
        case PortNaming::Scheme::Eos:
            return matchEos(n, ifName);
        case PortNaming::Scheme::Regex:
            return matchRegex(n, ifName);
    }
    return {};
}

std::string interfaceName(const PortNaming& n, int port) {
    const std::string num = std::to_string(port);
    switch (n.scheme) {
        case PortNaming::Scheme::Default:
        case PortNaming::Scheme::Cumulus:
            return "swp" + num;
        case PortNaming::Scheme::Sonic:
            return "Ethernet" + std::to_string((port - 1) * std::max(n.lanes, 1));
        case PortNaming::Scheme::Eos:
            if (n.portsPerSlot == 0) return "Ethernet" + num + "/1";
            return "Ethernet" + std::to_string(n.firstSlot + (port - 1) / n.portsPerSlot) + "/" +
                   std::to_string((port - 1) % n.portsPerSlot + 1) + "/1";
        case PortNaming::Scheme::Regex:
            break;
    }
    return "p" + num;
}

}  // namespace loom::inventory
