// `events`: failure and provisioning events, as a table or followed live over the stream;
// `events ack ID` and `events close ID` acknowledge or close one by hand (operator).
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

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
    std::string forDuration;  // --for: stop following after this long
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

std::vector<std::pair<std::string, std::string>> eventQuery(const EventsOptions& o) {
    std::vector<std::pair<std::string, std::string>> q;
    if (!o.severity.empty()) q.emplace_back("severity", o.severity);
    if (!o.kind.empty()) q.emplace_back("kind", o.kind);
    if (!o.location.empty()) q.emplace_back("location", o.location);
    if (o.open) q.emplace_back("open", "true");
    return q;
}

json fetchEvents(client::Client& client, std::vector<std::pair<std::string, std::string>> q,
                 std::optional<std::chrono::system_clock::time_point> since, std::size_t limit) {
    if (since) q.emplace_back("since", client::formatRfc3339(*since));
    q.emplace_back("limit", std::to_string(limit));
    auto r = orExit(client.getJson("/api/v1/events?" + client::queryString(q)), client);
    return r.is_object() && r.contains("items") ? r["items"] : json::array();
}

// `events --follow`, the way `kubectl get --watch` behaves: the history oldest first, then
// every new event in the same columns (fixed widths, so live rows line up with the header) or
// the same JSON shape (one event object per line: a live rack transition is rendered as the
// `rack_transition` event the server records for it). When the stream breaks (loomd restarted,
// network) it reconnects with backoff and resumes by `seq`; when the server cannot replay (another
// loomd, a restart) it refetches the events opened since shortly before the break. Whatever is
// printed twice by that overlap is dropped: an event is printed once per (id, state, acked).
// It stops only on Ctrl-C (or after --for).
class Follower {
public:
    Follower(const EventsOptions& o, client::Client& client) : o_(o), client_(client) {
        if (!o.forDuration.empty()) {
            auto d = client::parseDuration(o.forDuration);
            if (!d) failWith(Error::invalid("--for expects a duration like 30s, 15m or 1h (got \"" + o.forDuration + "\")"));
            deadline_ = std::chrono::steady_clock::now() + *d;
        }
    }

    void run(std::optional<std::chrono::system_clock::time_point> since) {
        if (o_.output == "table") std::cout << line(kHeader);
        const auto historyAt = std::chrono::system_clock::now();
        printOldestFirst(fetchEvents(client_, eventQuery(o_), since, o_.limit));
        std::cout.flush();
        // A first subscribe asks to resume from 0: a loomd answers `resync` once the subscription
        // is live, and the events opened between the history fetch and then are fetched again.
        lostAt_ = historyAt;
        std::int64_t resumeFrom = 0;
        auto backoff = std::chrono::milliseconds(500);
        while (!expired()) {
            auto res = client_.stream({"events", "provisioning"}, resumeFrom, [&](const json& m) {
                return onMessage(m, resumeFrom, backoff);
            });
            if (expired()) break;
            if (!res && (res.error().code == Errc::Unauthorized || res.error().code == Errc::Forbidden ||
                         res.error().code == Errc::InvalidArgument))
                orExit(std::move(res), client_);
            std::cerr << "loomctl: the event stream broke ("
                      << (res ? std::string("closed by the server") : res.error().message)
                      << "); reconnecting in " << backoff.count() << " ms\n";
            if (!lostAt_) lostAt_ = std::chrono::system_clock::now();
            auto wake = std::chrono::steady_clock::now() + backoff;
            if (deadline_ && wake > *deadline_) wake = *deadline_;
            std::this_thread::sleep_until(wake);
            backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
        }
    }

private:
    bool expired() const { return deadline_ && std::chrono::steady_clock::now() >= *deadline_; }

    bool onMessage(const json& m, std::int64_t& resumeFrom, std::chrono::milliseconds& backoff) {
        if (auto s = m.find("seq"); s != m.end() && s->is_number_integer())
            resumeFrom = std::max(resumeFrom, s->get<std::int64_t>());
        const std::string type = client::field(m, "type");
        if (type == "hello") {
            backoff = std::chrono::milliseconds(500);
            return !expired();
        }
        if (type == "resync" && lostAt_) {
            // What happened while we were away: events opened since shortly before the break.
            printOldestFirst(fetchEvents(client_, eventQuery(o_), *lostAt_ - std::chrono::seconds(5), 5000));
            lostAt_.reset();
        } else if (type == "event" && m.contains("event") && m["event"].is_object()) {
            lostAt_.reset();  // resumed by replay: nothing to refetch
            print(m["event"]);
        } else if (type == "provisioning" && !client::field(m, "rack").empty()) {
            print(transitionEvent(m));
        }
        std::cout.flush();
        return !expired();
    }

    // A live rack transition as the event the server records for it (docs/api.md, Events).
    static json transitionEvent(const json& m) {
        const std::string rack = client::field(m, "rack"), from = client::field(m, "from"),
                          to = client::field(m, "to"), reason = client::field(m, "reason"),
                          phase = client::field(m, "phase");
        const std::string at = client::formatRfc3339(std::chrono::system_clock::now());
        json labels = {{"from", from}, {"to", to}};
        if (!reason.empty()) labels["reason"] = reason;
        if (!phase.empty()) labels["phase"] = phase;
        return {{"id", nullptr},
                {"severity", "info"},
                {"kind", "rack_transition"},
                {"location", rack},
                {"rack", rack},
                {"state", "closed"},
                {"message", rack + ": " + from + " -> " + to + (reason.empty() ? "" : " (" + reason + ")")},
                {"source", "provisioning"},
                {"openedAt", at},
                {"closedAt", at},
                {"labels", labels}};
    }

    void printOldestFirst(const json& newestFirst) {
        for (auto it = newestFirst.rbegin(); it != newestFirst.rend(); ++it) print(*it);
    }

    void print(const json& e) {
        if (!matches(e, o_)) return;
        if (!once(e)) return;
        if (o_.output == "json") std::cout << e.dump() << '\n';
        else if (o_.output == "yaml") std::cout << "---\n" << client::toYaml(e);
        else std::cout << line(eventRow(e));
    }

    // true the first time this (id, state, acked) is seen. A transition has no id on the stream
    // but one in the history: the same rack, from and to within a minute is the same one (a
    // refetch overlaps the stream by seconds; a real repeat of a transition takes longer).
    bool once(const json& e) {
        if (client::field(e, "kind") == "rack_transition") {
            const json l = e.value("labels", json::object());
            const std::string key = client::field(e, "location") + "|" +
                                    l.value("from", "") + "|" + l.value("to", "");
            const auto now = std::chrono::steady_clock::now();
            auto [it, fresh] = transitions_.try_emplace(key, now);
            if (!fresh && now - it->second < std::chrono::minutes(1)) return false;
            it->second = now;
            return true;
        }
        return seen_
            .insert(client::field(e, "id") + "|" + client::field(e, "state") + "|" +
                    client::field(e, "closedAt") + "|" + client::field(e, "acknowledgedBy"))
            .second;
    }

    // Fixed column widths: live rows are printed one at a time and must line up.
    static std::string line(const std::vector<std::string>& row) {
        static constexpr std::size_t kWidths[] = {8, 8, 10, 24, 36, 14};
        std::string out;
        for (std::size_t i = 0; i < row.size(); ++i) {
            std::string cell = row[i].empty() ? "<none>" : row[i];
            out += cell;
            if (i + 1 == row.size()) break;
            const std::size_t w = i < std::size(kWidths) ? kWidths[i] : 0;
            out += std::string(cell.size() + 1 < w ? w - cell.size() : 2, ' ');
        }
        return out + '\n';
    }

    const EventsOptions& o_;
    client::Client& client_;
    std::optional<std::chrono::steady_clock::time_point> deadline_;
    std::optional<std::chrono::system_clock::time_point> lostAt_;
    std::unordered_set<std::string> seen_;
    std::unordered_map<std::string, std::chrono::steady_clock::time_point> transitions_;
};

void runEvents(const EventsOptions& o) {
    auto client = makeClient();
    std::optional<std::chrono::system_clock::time_point> since;
    if (!o.since.empty()) {
        auto d = client::parseDuration(o.since);
        if (!d) failWith(Error::invalid("--since expects a duration like 90s, 15m, 1h or 2d (got \"" + o.since + "\")"));
        since = std::chrono::system_clock::now() - *d;
    }
    if (o.follow) {
        Follower(o, client).run(since);
        return;
    }
    json items = fetchEvents(client, eventQuery(o), since, o.limit);
    if (o.output == "json") {
        std::cout << json{{"items", items}}.dump(2) << '\n';
    } else if (o.output == "yaml") {
        std::cout << client::toYaml(json{{"items", items}});
    } else if (items.empty()) {
        std::cerr << "No events found.\n";
    } else {
        std::vector<std::vector<std::string>> rows{kHeader};
        for (const auto& e : items) rows.push_back(eventRow(e));
        std::cout << client::renderRows(rows);
    }
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
    ev->add_flag("-f,--follow", o->follow,
                 "print the history oldest first, then every new event as it happens (WebSocket "
                 "stream; reconnects and resumes when loomd restarts; stop with Ctrl-C)");
    ev->add_option("--for", o->forDuration, "with --follow: stop after this long (30s, 15m, 1h)");
    ev->add_option("-o,--output", o->output, "table (default), json ({\"items\": [...]}; with --follow one event object per line) or yaml")
        ->check(CLI::IsMember({"table", "json", "yaml"}));
    ev->callback([o, ev] {
        if (!ev->get_subcommands().empty()) return;  // ack or close ran
        runEvents(*o);
    });
}

}  // namespace loom::loomctl
