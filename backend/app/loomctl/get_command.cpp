// `get KIND [NAME]` and `describe KIND NAME`: reading inventory objects.
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"
#include "loomctl/describe_cables.hpp"

#include <cstdio>
#include <iostream>
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <thread>
#include <optional>
#include <string_view>

namespace loom::loomctl {

using nlohmann::json;

namespace {

struct GetOptions {
    std::string kind;
    std::string name;
    std::string output = "table";
    std::vector<std::string> labels;  // key=value
    std::vector<std::string> fields;  // key=value
    std::size_t limit = 0;
    bool noHeaders = false;
    std::string sortBy;
    bool watch = false;
};

std::pair<std::string, std::string> splitKeyValue(const std::string& s, const char* flag) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
        failWith(Error::invalid(std::string(flag) + " expects key=value, got \"" + s + "\""));
    }
    return {s.substr(0, eq), s.substr(eq + 1)};
}

std::string kindOrExit(const std::string& kind) {
    auto k = resolveKind(kind);
    if (!k) {
        failWith(Error::invalid("unknown kind \"" + kind + "\"; kinds: " + kindList()));
    }
    return *k;
}

void printObjects(const std::string& kind, const std::vector<json>& items,
                  client::OutputFormat fmt, bool single, bool noHeaders) {
    using client::OutputFormat;
    switch (fmt) {
        case OutputFormat::Json:
            std::cout << (single ? items.front() : json{{"items", items}}).dump(2) << '\n';
            break;
        case OutputFormat::Yaml:
            std::cout << client::toYaml(single ? items.front() : json{{"items", items}});
            break;
        case OutputFormat::Name:
            for (const auto& o : items) std::cout << singularKind(kind) << '/' << client::field(o, "name") << '\n';
            break;
        case OutputFormat::Table:
        case OutputFormat::Wide:
            if (items.empty()) {
                std::cerr << "No " << kind << " found.\n";
                break;
            }
            std::cout << client::renderTable(
                client::columnsForKind(kind, fmt == OutputFormat::Wide, items), items,
                !noHeaders);
            break;
    }
}

// `-o jsonpath=TEMPLATE`: the template, or nullopt for another format.
std::optional<std::string> jsonPathOf(const std::string& output) {
    for (std::string_view prefix : {"jsonpath=", "jsonpath:"})
        if (output.starts_with(prefix)) return output.substr(prefix.size());
    return std::nullopt;
}

void printJsonPath(const json& doc, const std::string& tmpl) {
    auto text = client::renderJsonPath(doc, tmpl);
    if (!text) failWith(text.error());
    std::cout << *text;
    if (text->empty() || text->back() != '\n') std::cout << '\n';
}

// `get KIND --watch`, as kubectl's: the list, then a row each time one of the listed objects
// changes, in the list's columns (widths fixed by the first list). Driven by the stream: a rack
// or host transition (topic provisioning) or an event at an object (events: its health) fetches
// that object again; a new inventory generation (an apply) or a resync lists them all again.
// Only rows whose resourceVersion changed are printed. Reconnects like `events --follow`.
class Watcher {
public:
    Watcher(std::string kind, const GetOptions& o, client::Client& client,
            std::vector<std::pair<std::string, std::string>> filters)
        : kind_(std::move(kind)), o_(o), client_(client), filters_(std::move(filters)) {}

    void run() {
        auto items = list();
        if (json_) {
            for (const auto& obj : items) print(obj);
        } else {
            cols_ = client::columnsForKind(kind_, o_.output == "wide", items);
            widths_.assign(cols_.size(), 0);
            for (std::size_t c = 0; c < cols_.size(); ++c) widths_[c] = cols_[c].header.size();
            for (const auto& obj : items)
                for (std::size_t c = 0; c < cols_.size(); ++c)
                    widths_[c] = std::max(widths_[c], cell(c, obj).size());
            if (!o_.noHeaders) {
                std::vector<std::string> h;
                for (const auto& col : cols_) h.push_back(col.header);
                std::cout << line(h);
            }
            for (const auto& obj : items) print(obj);
        }
        std::cout.flush();
        std::int64_t resumeFrom = 0;
        auto backoff = std::chrono::milliseconds(500);
        for (;;) {
            auto res = client_.stream({"provisioning", "events", "inventory"}, resumeFrom, [&](const json& m) {
                if (auto sq = m.find("seq"); sq != m.end() && sq->is_number_integer())
                    resumeFrom = std::max(resumeFrom, sq->get<std::int64_t>());
                onMessage(m);
                backoff = std::chrono::milliseconds(500);
                std::cout.flush();
                return true;
            });
            if (!res && (res.error().code == Errc::Unauthorized || res.error().code == Errc::Forbidden))
                orExit(std::move(res), client_);
            std::cerr << "loomctl: the stream broke (" << (res ? "closed by the server" : res.error().message)
                      << "); reconnecting in " << backoff.count() << " ms\n";
            std::this_thread::sleep_for(backoff);
            backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
        }
    }

private:
    std::vector<json> list() {
        return orExit(client_.list(kind_, filters_, 0, 5000), client_);
    }

    void onMessage(const json& m) {
        const std::string type = client::field(m, "type");
        if (type == "resync" || type == "inventory") {
            for (const auto& obj : list()) print(obj);
        } else if (type == "provisioning") {
            refetch(kind_ == "racks" ? client::field(m, "rack") : kind_ == "hosts" ? client::field(m, "host") : "");
        } else if (type == "event" && m.contains("event") && m["event"].is_object()) {
            const json& e = m["event"];
            std::string where = client::field(e, "location");
            if (kind_ == "racks") where = client::field(e, "rack");
            else if (kind_ == "switches") where = where.substr(0, where.find('/'));
            refetch(where);
        }
    }

    void refetch(const std::string& name) {
        if (name.empty() || !seen_.count(name)) return;  // not one of the listed objects
        auto obj = client_.getJson("/api/v1/" + kind_ + "/" + client::urlEncode(name));
        if (obj) print(*obj);
    }

    void print(const json& obj) {
        const std::string name = client::field(obj, "name"), rv = client::field(obj, "resourceVersion");
        auto [it, fresh] = seen_.try_emplace(name, rv);
        if (!fresh && it->second == rv) return;  // unchanged
        it->second = rv;
        if (json_) {
            std::cout << obj.dump() << '\n';
        } else {
            std::vector<std::string> row;
            for (std::size_t c = 0; c < cols_.size(); ++c) row.push_back(cell(c, obj));
            std::cout << line(row);
        }
    }

    std::string cell(std::size_t c, const json& obj) const {
        std::string v = cols_[c].cell(obj);
        return v.empty() ? "<none>" : v;
    }

    std::string line(const std::vector<std::string>& row) const {
        std::string out;
        for (std::size_t c = 0; c < row.size(); ++c) {
            out += row[c];
            if (c + 1 < row.size()) out += std::string(widths_[c] + 3 - std::min(row[c].size(), widths_[c] + 1), ' ');
        }
        return out + '\n';
    }

    std::string kind_;
    const GetOptions& o_;
    client::Client& client_;
    std::vector<std::pair<std::string, std::string>> filters_;
    bool json_ = o_.output == "json";
    std::vector<client::Column> cols_;
    std::vector<std::size_t> widths_;
    std::map<std::string, std::string> seen_;  // name -> last printed resourceVersion
};

// `loomctl get targets [--field kind=dcgm] [--field up=false] [--field entity=NAME]`: loomd's
// exporter targets (GET /api/v1/telemetry/targets), not an inventory kind.
void runGetTargets(const GetOptions& o) {
    const auto jsonPath = jsonPathOf(o.output);
    auto fmt = jsonPath ? std::optional(client::OutputFormat::Json)
                        : client::parseOutputFormat(o.output);
    if (!fmt || *fmt == client::OutputFormat::Name)
        failWith(Error::invalid("-o must be table, wide, yaml, json or jsonpath=TEMPLATE for "
                                "targets (got \"" + o.output + "\")"));
    std::string query;
    for (const auto& f : o.fields) {
        auto [k, v] = splitKeyValue(f, "--field");
        if (k != "kind" && k != "up" && k != "entity")
            failWith(Error::invalid("targets filter by kind, up or entity, not \"" + k + "\""));
        query += (query.empty() ? "?" : "&") + k + "=" + client::urlEncode(v);
    }
    if (!o.name.empty()) query += (query.empty() ? "?" : "&") + std::string("entity=") +
                                  client::urlEncode(o.name);
    auto client = makeClient();
    auto doc = orExit(client.getJson("/api/v1/telemetry/targets" + query), client);
    if (jsonPath) return printJsonPath(doc, *jsonPath);
    if (*fmt == client::OutputFormat::Json) {
        std::cout << doc.dump(2) << '\n';
        return;
    }
    if (*fmt == client::OutputFormat::Yaml) {
        std::cout << client::toYaml(doc);
        return;
    }
    std::vector<json> items = doc.value("items", json::array());
    if (items.empty()) {
        std::cerr << "No targets found.\n";
        return;
    }
    auto str = [](const char* key) {
        return [key](const json& j) {
            const auto& v = j.at(key);
            return v.is_string() ? v.get<std::string>() : v.dump();
        };
    };
    std::vector<client::Column> cols = {
        {"KIND", str("kind")},
        {"ENTITY", str("entity")},
        {"UP", [](const json& j) { return std::string(j.value("up", false) ? "yes" : "no"); }},
        {"DURATION", [](const json& j) {
             char b[32];
             std::snprintf(b, sizeof b, "%.3fs", j.value("durationSeconds", 0.0));
             return std::string(b);
         }},
        {"SAMPLES", str("samples")},
        {"ERRORS", str("errors")},
        {"LAST-ERROR", str("lastError")}};
    if (*fmt == client::OutputFormat::Wide) cols.insert(cols.begin() + 2, {"URL", str("url")});
    std::cout << client::renderTable(cols, items, !o.noHeaders);
}

void runGet(const GetOptions& o) {
    if (o.kind == "targets" || o.kind == "target") return runGetTargets(o);
    std::string kind = kindOrExit(o.kind);
    const auto jsonPath = jsonPathOf(o.output);
    auto fmt = jsonPath ? std::optional(client::OutputFormat::Json) : client::parseOutputFormat(o.output);
    if (!fmt)
        failWith(Error::invalid("-o must be table, wide, yaml, json, name or jsonpath=TEMPLATE (got \"" +
                                o.output + "\")"));
    auto client = makeClient();
    if (!o.name.empty()) {
        auto obj = orExit(client.getJson("/api/v1/" + kind + "/" + client::urlEncode(o.name)), client);
        if (jsonPath) return printJsonPath(obj, *jsonPath);
        printObjects(kind, {obj}, *fmt, true, o.noHeaders);
        return;
    }
    std::vector<std::pair<std::string, std::string>> filters;
    for (const auto& l : o.labels) {
        auto [k, v] = splitKeyValue(l, "-l");
        filters.emplace_back("label." + k, v);
    }
    for (const auto& f : o.fields) {
        auto [k, v] = splitKeyValue(f, "--field");
        filters.emplace_back(k, v);
    }
    if (o.watch) {
        if (o.output != "table" && o.output != "wide" && o.output != "json")
            failWith(Error::invalid("--watch prints table, wide or json (one object per line)"));
        Watcher(kind, o, client, filters).run();
        return;
    }
    auto items = orExit(client.list(kind, filters, o.limit,
                                    o.limit > 0 && o.limit < 5000 ? o.limit : 5000),
                        client);
    if (!o.sortBy.empty())
        if (auto sorted = client::sortByJsonPath(items, o.sortBy); !sorted) failWith(sorted.error());
    if (jsonPath) return printJsonPath(json{{"items", items}}, *jsonPath);
    printObjects(kind, items, *fmt, false, o.noHeaders);
}

// "resourceVersion" -> "Resource Version"
std::string title(const std::string& key) {
    std::string t;
    for (std::size_t i = 0; i < key.size(); ++i) {
        char c = key[i];
        if (i == 0) t += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        else if (std::isupper(static_cast<unsigned char>(c))) (t += ' ') += c;
        else if (c == '_') t += ' ';
        else t += c;
    }
    return t;
}

// A job's health as a person reads it (-o yaml has every field): the word of `get jobs`, the
// busbw against its healthy value, GPUs by health, and the links down, bottlenecks, GPUs not ok
// and open events under it, each list cut at 10 names.
void printJobHealth(const json& h, const std::string& state) {
    if (!h.is_object()) {
        std::cout << "Health:            " << (state == "running" ? "<being computed>" : "<none>")
                  << (state == "running" ? "" : " (kept for running jobs)") << '\n';
        return;
    }
    auto pct = [](const json& v) {
        char b[32];
        std::snprintf(b, sizeof b, "%.1f%%", v.is_number() ? v.get<double>() : 0.0);
        std::string t = b;
        if (t.ends_with(".0%")) t.erase(t.size() - 3, 2);
        return t;
    };
    std::cout << "Health:            " << client::jobHealthWord(h) << ": busbw "
              << pct(h.value("busBw", json(0))) << " of the NIC rate";
    if (h.value("degraded", false)) std::cout << ", down from " << pct(h.value("healthyBusBw", json(0)));
    std::cout << '\n';
    if (h.contains("error")) std::cout << "  Error:           " << client::field(h, "error") << '\n';
    const json g = h.value("gpus", json::object());
    std::cout << "  GPUs:            " << g.value("total", 0) << ": " << g.value("ok", 0) << " ok, "
              << g.value("warning", 0) << " warning, " << g.value("failed", 0) << " failed, "
              << g.value("quarantined", 0) << " quarantined\n";
    std::cout << "  Links crossed:   " << h.value("linksCrossed", 0) << '\n';
    auto list = [](const char* title, const json& items, auto&& text) {
        const std::size_t n = items.is_array() ? items.size() : 0;
        std::cout << "  " << title << " (" << n << "):";
        if (n == 0) std::cout << " <none>";
        std::cout << '\n';
        for (std::size_t i = 0; i < n && i < 10; ++i) std::cout << "    " << text(items[i]) << '\n';
        if (n > 10) std::cout << "    ... and " << (n - 10) << " more (-o yaml lists them all)\n";
    };
    list("Links down", h.value("linksDown", json::array()),
         [](const json& l) { return client::scalarText(l); });
    list("Bottlenecks", h.value("bottlenecks", json::array()), [](const json& b) {
        char rate[64];
        std::snprintf(rate, sizeof rate, "%g flows, %g Gb/s each", b.value("flows", 0.0),
                      b.value("gbpsPerFlow", 0.0));
        return client::field(b, "link") + " " + client::field(b, "direction") + ": " + rate;
    });
    list("GPUs not ok", h.value("gpusNotOk", json::array()), [](const json& x) {
        return client::field(x, "name") + " (" + client::field(x, "health") + ")";
    });
    list("Open events", h.value("events", json::array()), [](const json& e) {
        return client::field(e, "severity") + " " + client::field(e, "kind") + " " +
               client::field(e, "location") + ": " + client::field(e, "message");
    });
    if (auto u = h.find("unknownHosts"); u != h.end() && u->is_array() && !u->empty())
        list("Hosts not in the fabric", *u, [](const json& x) { return client::scalarText(x); });
}

void runDescribe(const std::string& kindArg, const std::string& name, const std::string& output) {
    std::string kind = kindOrExit(kindArg);
    auto client = makeClient();
    auto obj = orExit(client.getJson("/api/v1/" + kind + "/" + client::urlEncode(name)), client);
    if (output == "json") {
        std::cout << obj.dump(2) << '\n';
        return;
    }
    if (output == "yaml") {
        std::cout << client::toYaml(obj);
        return;
    }
    if (auto tmpl = jsonPathOf(output)) return printJsonPath(obj, *tmpl);
    json suspects, straggler, stragglers, lemons, health;
    if (kind == "jobs") {
        // The straggler finder's suspects get their own section, after the rest.
        if (auto it = obj.find("suspects"); it != obj.end()) {
            suspects = *it;
            obj.erase(it);
        }
        if (auto it = obj.find("stragglers"); it != obj.end()) {
            stragglers = *it;
            obj.erase(it);
        }
        if (auto it = obj.find("lemons"); it != obj.end()) {
            lemons = *it;
            obj.erase(it);
        }
        if (auto it = obj.find("straggler"); it != obj.end()) {
            straggler = *it;
            obj.erase(it);
        }
        // A job's host and link lists run to thousands of names: the text shows the nodelist
        // and the counts (-o json has them all).
        obj.erase("hosts");
        if (auto h = obj.find("health"); h != obj.end()) {
            health = *h;
            obj.erase(h);
        }
    }

    // kubectl's layout: "Key:   value" with values aligned; labels one per line.
    std::vector<std::pair<std::string, std::string>> lines;
    lines.emplace_back("Name", client::field(obj, "name"));
    lines.emplace_back("Kind", client::field(obj, "kind").empty() ? singularKind(kind)
                                                                    : client::field(obj, "kind"));
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        if (it.key() == "name" || it.key() == "kind" || it.key() == "labels" ||
            it.key() == "annotations")
            continue;
        if (it.value().is_structured()) continue;
        const bool time = it.value().is_string() && it.key().ends_with("At");
        lines.emplace_back(title(it.key()), time ? shownTime(it.value().get<std::string>())
                                                 : client::scalarText(it.value()));
    }
    std::size_t w = 0;
    for (const auto& [k, v] : lines) w = std::max(w, k.size());
    w = std::max<std::size_t>(w, std::string_view("Annotations").size());
    auto pad = [&](const std::string& k) { return k + ":" + std::string(w - k.size() + 2, ' '); };
    for (const auto& [k, v] : lines) std::cout << pad(k) << (v.empty() ? "<none>" : v) << '\n';
    // Labels as key=value, annotations as key: value (kubectl's), one per line.
    auto printMap = [&](const char* title, const char* key, const char* sep) {
        std::cout << pad(title);
        auto m = obj.find(key);
        if (m == obj.end() || !m->is_object() || m->empty()) {
            std::cout << "<none>\n";
            return;
        }
        bool first = true;
        for (auto it = m->begin(); it != m->end(); ++it) {
            if (!first) std::cout << std::string(w + 3, ' ');
            std::cout << it.key() << sep << client::scalarText(it.value()) << '\n';
            first = false;
        }
    };
    printMap("Labels", "labels", "=");
    printMap("Annotations", "annotations", ": ");
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        if (it.key() == "labels" || it.key() == "annotations" || !it.value().is_structured())
            continue;
        std::cout << title(it.key()) << ":\n";
        std::string y = client::toYaml(it.value());
        printIndented(y);
    }

    if (kind == "jobs") printJobHealth(health, client::field(obj, "state"));

    // A job's stragglers: the open event's suspect, then the ranking now, with the evidence.
    if (kind == "jobs" && suspects.is_array()) {
        std::cout << "Straggler:";
        if (straggler.is_object())
            std::cout << ' ' << client::field(straggler, "location") << " ("
                      << client::field(straggler, "cause") << ", since "
                      << shownTime(client::field(straggler, "openedAt")) << ")\n";
        else
            std::cout << " <none>\n";
        // Every open straggler event of the job (one per suspect location, highest score
        // first): the first is the Straggler above.
        std::cout << "Stragglers:";
        if (!stragglers.is_array() || stragglers.empty()) std::cout << " <none>";
        std::cout << '\n';
        // One numbered list for both: "N. location (cause, score S[, since T])" and its evidence.
        auto ranked = [&](const json& list, bool since) {
            std::string text;
            int k = 0;
            for (const auto& sp : list) {
                char score[32];
                std::snprintf(score, sizeof score, "%.1f", sp.value("score", 0.0));
                text += std::to_string(++k) + ". " + client::field(sp, "location") + " (" +
                        client::field(sp, "cause") + ", score " + score +
                        (since ? ", since " + shownTime(client::field(sp, "openedAt")) : "") +
                        ")\n   " + client::field(sp, "evidence") + "\n";
            }
            printIndented(text);
        };
        if (stragglers.is_array()) ranked(stragglers, true);
        std::cout << "Suspects:";
        if (suspects.empty()) std::cout << " <none>";
        std::cout << '\n';
        ranked(suspects, false);
    }
    // The lemons among the job's hosts and GPUs (issue 34): the suspect, or a failure, in
    // several jobs within loomd's window.
    if (kind == "jobs") {
        std::cout << "Lemons:";
        if (!lemons.is_array() || lemons.empty()) std::cout << " <none>";
        std::cout << '\n';
        if (lemons.is_array())
            for (const auto& l : lemons)
                printIndented(client::field(l, "name") + " (" + client::field(l, "kind") + "): " +
                              std::to_string(l.value("jobs", 0)) + " jobs: " +
                              client::field(l, "message") + "\n");
    }
    // A host's lemon strikes: its own and its GPUs' (GET /api/v1/lemons?host=).
    if (kind == "hosts") {
        auto l = client.getJson("/api/v1/lemons?host=" + client::urlEncode(name));
        std::cout << "Lemon:";
        if (!l) {
            std::cout << " <unknown: " << l.error().message << ">\n";
        } else {
            const auto items = l->value("items", json::array());
            bool lemon = false;
            for (const auto& x : items) lemon |= x.value("lemon", false);
            const auto rule = l->value("rule", json::object());
            std::cout << (lemon ? " yes" : " no") << " (a lemon: the suspect or a failure in "
                      << rule.value("jobs", 0) << " jobs within "
                      << rule.value("windowSeconds", 0) / 86400 << " days)\n";
            for (const auto& x : items)
                printIndented(client::field(x, "name") + ": " +
                              std::to_string(x.value("jobs", 0)) + " job" +
                              (x.value("jobs", 0) == 1 ? "" : "s") +
                              (x.value("lemon", false) ? " (lemon)" : "") + ": " +
                              [&] {
                                  std::string s;
                                  for (const auto& k : x.value("strikes", json::array()))
                                      s += (s.empty() ? "" : ", ") + client::scalarText(k);
                                  return s;
                              }() +
                              "\n");
        }
    }

    // What is inside: the children a person asks about next.
    struct Child {
        const char* kind;
        const char* parent;
        const char* filter;
    };
    static const Child kChildren[] = {{"zones", "sites", "site"},   {"rows", "zones", "zone"},
                                      {"racks", "rows", "row"},     {"hosts", "racks", "rack"},
                                      {"switches", "racks", "rack"}, {"gpus", "hosts", "host"},
                                      {"nics", "hosts", "host"},    {"ports", "switches", "device"}};
    for (const auto& c : kChildren) {
        if (kind != c.parent) continue;
        auto items = client.list(c.kind, {{c.filter, name}}, 200, 200);
        if (!items) continue;  // the object itself printed; its children are a courtesy
        std::cout << title(c.kind) << ":";
        if (items->empty()) {
            std::cout << " <none>\n";
            continue;
        }
        std::cout << '\n';
        std::string t = client::renderTable(client::columnsForKind(c.kind, false, *items), *items);
        printIndented(t);
    }

    // Where its cables go: a device's peers; a host's, NIC's or port's trace up the fabric.
    if (kind == "switches" || kind == "nics") printPeers(client, name);
    if (kind == "hosts" || kind == "nics" || kind == "ports") printTrace(client, kind, name);

    // Recent events at this location (a rack's events name the rack; others the object).
    auto ev = client.getJson("/api/v1/events?" +
                             client::queryString({{kind == "racks" ? "rack" : "location", name},
                                                   {"limit", "10"}}));
    std::cout << "Events:";
    if (!ev || !ev->contains("items") || (*ev)["items"].empty()) {
        std::cout << " <none>\n";
        return;
    }
    std::cout << '\n';
    std::vector<std::vector<std::string>> rows{{"SEVERITY", "KIND", "AGE", "LOCATION", "MESSAGE"}};
    for (const auto& e : (*ev)["items"]) {
        rows.push_back({client::field(e, "severity"), client::field(e, "kind"),
                        client::ageOf(client::field(e, "openedAt")), client::field(e, "location"),
                        client::field(e, "message")});
    }
    std::string t = client::renderRows(rows);
    printIndented(t);
}

}  // namespace

void addGetCommands(CLI::App& app) {
    auto o = std::make_shared<GetOptions>();
    auto* get = app.add_subcommand(
        "get", "List inventory objects of a kind, or show one (kubectl-style tables)");
    get->add_option("kind", o->kind,
                    "kind, singular or plural: " + kindList() +
                        "; or targets (loomd's exporter targets, --field kind=|up=|entity=)")
        ->required();
    get->add_option("name", o->name, "show only this object");
    get->add_option("-o,--output", o->output,
                    "table (default), wide, yaml, json, name or jsonpath=TEMPLATE (kubectl's: "
                    "'{range .items[*]}{.name}{\"\\n\"}{end}')");
    get->add_option("--sort-by", o->sortBy,
                    "sort the list by a field path, e.g. .name or {.labels.owner} (names sort "
                    "naturally: p2 before p10)");
    get->add_option("-l,--selector", o->labels, "label filter key=value (repeatable)");
    get->add_option("--field", o->fields,
                    "field filter key=value, e.g. state=in_service or zone=z1 (repeatable; the same "
                    "key again is an alternative). NetBox lookups after the key: name__ic=rtsw "
                    "(contains), __nic, __isw, __iew, __ie, __n, __gt, __gte, __lt, __lte, "
                    "__empty=true; relation filters, e.g. gpus rack= zone=, links switch= device=, "
                    "ports device= peer= link= (docs/api.md, Lists)");
    get->add_option("--limit", o->limit, "stop after N objects (default: all, pages of 5000)");
    get->add_flag("--no-headers", o->noHeaders, "omit the table header");
    get->add_flag("-w,--watch", o->watch,
                  "after the list, print a row each time one of the objects changes (WebSocket "
                  "stream; reconnects; stop with Ctrl-C)");
    get->callback([o] { runGet(*o); });

    auto kind = std::make_shared<std::string>();
    auto name = std::make_shared<std::string>();
    auto* describe = app.add_subcommand(
        "describe", "Show one object in detail: its fields, children, cable peers and trace, recent events");
    describe->add_option("kind", *kind, "kind, singular or plural")->required();
    describe->add_option("name", *name, "object name")->required();
    auto output = std::make_shared<std::string>("text");
    describe->add_option("-o,--output", *output, "text (default), json, yaml or jsonpath=TEMPLATE");
    describe->callback([kind, name, output] {
        if (*output != "text" && *output != "json" && *output != "yaml" && !jsonPathOf(*output))
            failWith(Error::invalid("-o must be text, json, yaml or jsonpath=TEMPLATE (got \"" + *output + "\")"));
        runDescribe(*kind, *name, *output);
    });
}

}  // namespace loom::loomctl
