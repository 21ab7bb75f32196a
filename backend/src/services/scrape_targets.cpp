#include "loom/backend/scrape_targets.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <unordered_map>

#include "loom/backend/http_url.hpp"
#include "loom/inventory/model.hpp"

namespace loom::backend {

namespace {

constexpr std::array<std::string_view, 4> kPlaceholders = {"{host}", "{switch}", "{exporter}",
                                                           "{address}"};

bool validLabelName(std::string_view s) {
    auto alpha = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    };
    if (s.empty() || !alpha(s[0])) return false;
    for (char c : s)
        if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
    return true;
}

// A query component as Prometheus will send it again (it encodes __param_ values itself).
std::string percentDecode(std::string_view s) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            out += s[i] == '+' ? ' ' : s[i];
        }
    }
    return out;
}

std::string_view entityPlaceholder(ExporterKind k) {
    return k == ExporterKind::Snmp ? "{switch}" : "{host}";
}

}  // namespace

std::string_view exporterKindName(ExporterKind k) {
    switch (k) {
        case ExporterKind::Dcgm:
            return "dcgm";
        case ExporterKind::Node:
            return "node";
        case ExporterKind::Snmp:
            return "snmp";
    }
    return "dcgm";
}

std::optional<ExporterKind> parseExporterKind(std::string_view s) {
    if (s == "dcgm") return ExporterKind::Dcgm;
    if (s == "node") return ExporterKind::Node;
    if (s == "snmp") return ExporterKind::Snmp;
    return std::nullopt;
}

const std::string& TargetTemplates::of(ExporterKind k) const {
    switch (k) {
        case ExporterKind::Dcgm:
            return dcgm;
        case ExporterKind::Node:
            return node;
        case ExporterKind::Snmp:
            return snmp;
    }
    return dcgm;
}

Result<void> checkTemplate(ExporterKind kind, std::string_view tmpl) {
    for (std::size_t at = tmpl.find('{'); at != std::string_view::npos;
         at = tmpl.find('{', at + 1)) {
        bool known = false;
        for (auto p : kPlaceholders) known = known || tmpl.substr(at, p.size()) == p;
        if (!known) {
            auto end = tmpl.find('}', at);
            return fail(Error::invalid(
                "unknown placeholder '" +
                std::string(tmpl.substr(at, end == std::string_view::npos ? 16 : end - at + 1)) +
                "' in '" + std::string(tmpl) + "'; known: {host} (dcgm, node), {switch} and " +
                "{exporter} (snmp), {address} (any)"));
        }
    }
    // Every target of a kind needs its own URL: the entity's name or its address in it.
    const auto need = entityPlaceholder(kind);
    if (tmpl.find(need) == std::string_view::npos &&
        tmpl.find("{address}") == std::string_view::npos)
        return fail(Error::invalid("a " + std::string(exporterKindName(kind)) +
                                   " template must contain " + std::string(need) +
                                   " or {address}, not '" + std::string(tmpl) + "'"));
    const auto other = kind == ExporterKind::Snmp ? "{host}" : "{switch}";
    if (tmpl.find(other) != std::string_view::npos)
        return fail(Error::invalid(std::string(other) + " has no meaning in a " +
                                   std::string(exporterKindName(kind)) + " template"));
    if (auto u = parseHttpUrl(expandTemplate(tmpl, "entity-1", "exporter-1:9116")); !u)
        return fail(u.error());
    return {};
}

std::string expandTemplate(std::string_view tmpl, std::string_view entity,
                           std::string_view exporter, std::string_view address) {
    if (address.empty()) address = entity;
    const bool v6 = address.find(':') != std::string_view::npos;
    std::string out;
    out.reserve(tmpl.size() + entity.size());
    for (std::size_t i = 0; i < tmpl.size();) {
        if (tmpl[i] == '{') {
            if (tmpl.substr(i, 6) == "{host}") {
                out += entity;
                i += 6;
                continue;
            }
            if (tmpl.substr(i, 8) == "{switch}") {
                out += entity;
                i += 8;
                continue;
            }
            if (tmpl.substr(i, 10) == "{exporter}") {
                out += exporter;
                i += 10;
                continue;
            }
            if (tmpl.substr(i, 9) == "{address}") {
                if (v6) out += '[';
                out += address;
                if (v6) out += ']';
                i += 9;
                continue;
            }
        }
        out += tmpl[i++];
    }
    return out;
}

Result<void> readAddressFile(std::string_view text, std::string_view fileName,
                             std::unordered_map<std::string, std::string>& out) {
    int lineNo = 0;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        ++lineNo;
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        std::vector<std::string_view> words;
        for (std::size_t i = 0; i < line.size();) {
            if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
                ++i;
                continue;
            }
            std::size_t j = i;
            while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
            words.push_back(line.substr(i, j - i));
            i = j;
        }
        if (words.empty()) continue;
        const auto where = std::string(fileName) + ":" + std::to_string(lineNo);
        boost::system::error_code ec;
        boost::asio::ip::make_address(std::string(words[0]), ec);
        if (ec)
            return fail(Error::invalid("'" + std::string(words[0]) +
                                           "' is not an IPv4 or IPv6 address (hosts(5) lines are "
                                           "ADDRESS NAME [NAME...])",
                                       where, lineNo));
        if (words.size() < 2)
            return fail(Error::invalid("address " + std::string(words[0]) + " names no host", where,
                                       lineNo));
        for (std::size_t w = 1; w < words.size(); ++w)
            out.emplace(std::string(words[w]), std::string(words[0]));
    }
    return {};
}

bool rackIsScraped(std::string_view s) {
    return !(s == "planned" || s == "delivered" || s == "racked" || s == "cabled" ||
             s == "drained" || s == "decommissioned");
}

std::vector<ExporterTarget> expandTargets(const TargetTemplates& templates,
                                          const inventory::Inventory& inv, ExporterKind kind) {
    std::vector<ExporterTarget> out;
    const std::string& tmpl = templates.of(kind);
    if (tmpl.empty()) return out;
    const KindOptions& ko = templates.optionsOf(kind);
    std::unordered_map<std::string_view, const inventory::Rack*> racks;
    for (const auto& r : inv.racks) racks.emplace(r.name, &r);
    auto address = [&](const inventory::Text& name) -> std::string_view {
        auto it = templates.addresses.find(name.str());
        return it == templates.addresses.end() ? std::string_view{} : std::string_view(it->second);
    };
    if (kind != ExporterKind::Snmp) {
        for (const auto& h : inv.hosts) {
            auto it = racks.find(h.rack);
            if (it == racks.end() || !rackIsScraped(it->second->state)) continue;
            if (h.state == "rma" || h.state == "decommissioned") continue;
            // `state` is the rack's lifecycle state (docs/api.md: hosts and switches in a rack
            // follow it): a Prometheus job keeping state="in_service" keeps a rolled-in rack.
            out.push_back({kind, h.name.str(),
                           expandTemplate(tmpl, h.name, templates.snmpExporter, address(h.name)),
                           h.rack.str(), it->second->zone.str(), "host", it->second->state.str(),
                           ko.interval, ko.timeout});
        }
        return out;
    }
    for (const auto& sw : inv.switches) {
        if (sw.state == "decommissioned") continue;
        const auto role = inventory::switchRoleName(sw.role);
        if (!ko.roles.empty() &&
            std::find(ko.roles.begin(), ko.roles.end(), role) == ko.roles.end())
            continue;
        std::string state = sw.state.str();  // a switch outside racks: its own
        if (!sw.rack.empty()) {
            auto it = racks.find(sw.rack);
            if (it != racks.end() && !rackIsScraped(it->second->state)) continue;
            if (it != racks.end()) state = it->second->state.str();
        }
        out.push_back({kind, sw.name.str(),
                       expandTemplate(tmpl, sw.name, templates.snmpExporter, address(sw.name)),
                       sw.rack.str(), sw.zone.str(), std::string(role), std::move(state),
                       ko.interval, ko.timeout});
    }
    return out;
}

nlohmann::json prometheusSd(const std::vector<ExporterTarget>& targets, std::string_view cluster) {
    auto groups = nlohmann::json::array();
    for (const auto& t : targets) {
        auto u = parseHttpUrl(t.url);
        if (!u) continue;  // templates are checked when loomd.yaml is read
        nlohmann::json labels = {{"cluster", cluster},
                                 {"rack", t.rack},
                                 {"zone", t.zone},
                                 {"role", t.role},
                                 {"state", t.state}};
        labels[t.kind == ExporterKind::Snmp ? "switch" : "host"] = t.entity;
        if (t.kind == ExporterKind::Snmp) labels["instance"] = t.entity;
        std::string_view target = u->target;
        const auto q = target.find('?');
        labels["__metrics_path__"] = std::string(target.substr(0, q));
        if (q != std::string_view::npos) {
            std::string_view query = target.substr(q + 1);
            while (!query.empty()) {
                const auto amp = query.find('&');
                std::string_view kv = query.substr(0, amp);
                query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
                if (kv.empty()) continue;
                const auto eq = kv.find('=');
                // Prometheus refuses a whole SD answer with one invalid label name
                // ([a-zA-Z_][a-zA-Z0-9_]*): a parameter such as node_exporter's collect[] goes
                // in the job's `params:` instead (docs/telemetry.md).
                const std::string name = percentDecode(kv.substr(0, eq));
                if (!validLabelName(name)) continue;
                labels["__param_" + name] =
                    eq == std::string_view::npos ? std::string() : percentDecode(kv.substr(eq + 1));
            }
        }
        groups.push_back({{"targets", {u->host + ":" + u->port}}, {"labels", std::move(labels)}});
    }
    return groups;
}

}  // namespace loom::backend
