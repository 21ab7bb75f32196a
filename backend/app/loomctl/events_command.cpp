// `events`: failure and provisioning events, as a table or followed live over the stream;
// `events ack ID` and `events close ID` acknowledge or close one by hand (operator).
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

#include <iostream>
#include <memory>

namespace loom::loomctl {

using nlohmann::json;

namespace {

struct EventsOptions {
    std::string severity;
    std::string kind;
    std::string location;
    std::string since;
    bool open = false;
    bool follow = false;
    std::size_t limit = 200;
    std::string output = "table";
};

std::vector<std::string> eventRow(const json& e) {
    std::string state = client::field(e, "state");
    if (state.empty()) state = client::field(e, "closedAt").empty() ? "open" : "closed";
    if (!client::field(e, "acknowledgedBy").empty()) state += ",acked";
    return {client::field(e, "id"), client::ageOf(client::field(e, "openedAt")), client::field(e, "severity"),
            client::field(e, "kind"), client::field(e, "location"), state,
            client::field(e, "message")};
}

const std::vector<std::string> kHeader{"ID", "AGE", "SEVERITY", "KIND", "LOCATION", "STATE", "MESSAGE"};

// `events ack ID [--comment]` / `events close ID [--reason]`: POST, then the event as the
// server returns it (a line, or -o json|yaml).
void addEventAction(CLI::App& events, const std::string& verb, const std::string& help,
                    const std::string& textFlag, const std::string& textHelp, const std::string& done) {
    struct Opts {
        std::string id, text, output = "name";
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = events.add_subcommand(verb, help);
    cmd->add_option("id", o->id, "event id (the ID column of `loomctl events`)")->required();
    cmd->add_option("--" + textFlag, o->text, textHelp);
    cmd->add_option("-o,--output", o->output, "name (default: one line), json or yaml")
        ->check(CLI::IsMember({"name", "json", "yaml"}));
    cmd->callback([o, verb, textFlag, done] {
        if (o->id.empty() || o->id.find_first_not_of("0123456789") != std::string::npos)
            failWith(Error::invalid("event id must be a positive integer, not \"" + o->id + "\"", "id"));
        auto client = makeClient();
        json body = json::object();
        if (!o->text.empty()) body[textFlag == "comment" ? "comment" : "reason"] = o->text;
        auto e = orExit(client.postJson("/api/v1/events/" + o->id + "/" + verb, body), client);
        if (o->output == "json") {
            std::cout << e.dump(2) << '\n';
            return;
        }
        if (o->output == "yaml") {
            std::cout << client::toYaml(e);
            return;
        }
        std::cout << "event/" << o->id << ' ' << done << " (" << client::field(e, "kind") << ' '
                  << client::field(e, "location") << ", " << client::field(e, "state") << ")\n";
    });
}

bool matches(const json& e, const EventsOptions& o) {
    if (!o.severity.empty() && client::field(e, "severity") != o.severity) return false;
    if (!o.kind.empty() && client::field(e, "kind") != o.kind) return false;
    if (!o.location.empty() && client::field(e, "location") != o.location &&
        client::field(e, "rack") != o.location) {
        return false;
    }
    return true;
}

void runEvents(const EventsOptions& o) {
    auto client = makeClient();
    std::vector<std::pair<std::string, std::string>> q;
    if (!o.severity.empty()) q.emplace_back("severity", o.severity);
    if (!o.kind.empty()) q.emplace_back("kind", o.kind);
    if (!o.location.empty()) q.emplace_back("location", o.location);
    if (!o.since.empty()) {
        auto d = client::parseDuration(o.since);
        if (!d) failWith(Error::invalid("--since expects a duration like 90s, 15m, 1h or 2d (got \"" + o.since + "\")"));
        q.emplace_back("since", client::formatRfc3339(std::chrono::system_clock::now() - *d));
    }
    if (o.open) q.emplace_back("open", "true");
    q.emplace_back("limit", std::to_string(o.limit));

    auto r = orExit(client.getJson("/api/v1/events?" + client::queryString(q)), client);
    json items = r.is_object() && r.contains("items") ? r["items"] : json::array();
    if (o.output == "json") {
        if (!o.follow) {
            std::cout << json{{"items", items}}.dump(2) << '\n';
            return;
        }
        for (const auto& e : items) std::cout << e.dump() << '\n';
    } else if (o.output == "yaml") {
        std::cout << client::toYaml(json{{"items", items}});
        if (!o.follow) return;
    } else {
        std::vector<std::vector<std::string>> rows{kHeader};
        for (const auto& e : items) rows.push_back(eventRow(e));
        if (items.empty() && !o.follow) {
            std::cerr << "No events found.\n";
            return;
        }
        std::cout << client::renderRows(rows);
    }
    if (!o.follow) return;
    std::cout.flush();

    // Live: every event message of the stream from now on, filtered here as on the server.
    auto res = client.stream({"events", "provisioning"}, std::nullopt, [&](const json& m) {
        std::string type = client::field(m, "type");
        if (type == "event" && m.contains("event")) {
            const json& e = m["event"];
            if (!matches(e, o)) return true;
            if (o.output == "json") std::cout << e.dump() << '\n';
            else if (o.output == "yaml") std::cout << "---\n" << client::toYaml(e);
            else {
                auto row = eventRow(e);
                std::string line;
                for (std::size_t i = 0; i < row.size(); ++i) {
                    line += row[i].empty() ? "<none>" : row[i];
                    if (i + 1 < row.size()) line += "   ";
                }
                std::cout << line << '\n';
            }
        } else if (type == "provisioning" && o.severity.empty() &&
                   (o.kind.empty() || o.kind == "provisioning")) {
            if (o.output == "json") std::cout << m.dump() << '\n';
            else {
                std::cout << "0s   info   provisioning   " << client::field(m, "rack") << "   "
                          << client::field(m, "from") << " -> " << client::field(m, "to")
                          << (client::field(m, "phase").empty() ? "" : " (" + client::field(m, "phase") + ")")
                          << '\n';
            }
        }
        std::cout.flush();
        return true;
    });
    orExit(std::move(res), client);
}

}  // namespace

void addEventsCommand(CLI::App& app) {
    auto o = std::make_shared<EventsOptions>();
    auto* ev = app.add_subcommand(
        "events", "Failure and provisioning events; --follow streams them live; ack|close ID (operator)");
    ev->require_subcommand(0, 1);
    addEventAction(*ev, "ack", "Acknowledge an event (who and when are recorded; the first acknowledgement stays)",
                   "comment", "a note kept with the acknowledgement", "acknowledged");
    addEventAction(*ev, "close",
                   "Close an open event by hand; while its condition persists no new event opens "
                   "until it clears",
                   "reason", "why (kept with the event)", "closed");
    ev->add_option("--severity", o->severity, "only this severity (info, warning, critical)");
    ev->add_option("--kind", o->kind, "only this event kind (e.g. gpu_xid, link_down)");
    ev->add_option("--location", o->location, "only events at this GPU, host, rack, switch or link");
    ev->add_option("--since", o->since, "only events opened within this duration (90s, 15m, 1h, 2d)");
    ev->add_flag("--open", o->open, "only events still open");
    ev->add_option("--limit", o->limit, "at most N past events (default 200)")->check(CLI::Range(1, 5000));
    ev->add_flag("-f,--follow", o->follow, "keep printing new events as they happen (WebSocket stream)");
    ev->add_option("-o,--output", o->output, "table (default), json (one object per line with --follow) or yaml")
        ->check(CLI::IsMember({"table", "json", "yaml"}));
    ev->callback([o, ev] {
        if (!ev->get_subcommands().empty()) return;  // ack or close ran
        runEvents(*o);
    });
}

}  // namespace loom::loomctl
