// The event lifecycle over the public API of a real loomd on a real PostgreSQL (issue 11 item 5,
// issue 18 item 2): acknowledge and close by hand (REST, roles, errors, the stream sees the
// updated event), a hand-closed event does not reopen while its condition persists, flapping
// closes after its hold-down, rack transitions land in the event history, an open XID survives
// a restart as a failed GPU, and a PostgreSQL outage loses and merges no event.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "loom/db/notify.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

class EventLifecycle : public ServerFixture {
protected:
    // A loomd with telemetry; returns once a harmless sample is applied (the fixture already
    // waits for the live state, so this also proves the hub has the hall layout).
    Server& start() {
        ServerConfig cfg;
        cfg.streamInterval = 200ms;
        auto& s = startServer(cfg, Routes::All);
        bool ready = eventually([&] {
            auto r = post(s.port(), "/api/v1/telemetry",
                          "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"z1-r001-h0\"} 1\n");
            return r.status == 200 && r.j().value("applied", 0) == 1;
        });
        EXPECT_TRUE(ready) << "the telemetry hub never took the hall layout";
        return s;
    }

    // Subscribes and waits until the server has taken the subscription (a ping after it is
    // answered in order), so no message published afterwards is missed.
    static void subscribe(WsClient& c, const json& topics) {
        c.send({{"op", "subscribe"}, {"topics", topics}});
        c.send({{"op", "ping"}});
        ASSERT_TRUE(readUntil(c, [](const json& m) { return m.value("type", "") == "pong"; }));
    }

    static bool eventually(const std::function<bool()>& cond,
                           std::chrono::milliseconds limit = 15s) {
        return loom::testing::eventually(cond, limit);
    }

    static std::optional<json> readUntil(WsClient& c, const std::function<bool(const json&)>& want,
                                         std::chrono::milliseconds limit = 15s) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            auto m = c.readFor(std::max(left, std::chrono::milliseconds(1)));
            if (!m) return std::nullopt;
            if (want(*m)) return m;
        }
        return std::nullopt;
    }

    HttpResult post(std::uint16_t port, const std::string& target, const std::string& body = "",
                    const std::string& role = "operator") {
        return request(
            port, "POST", target, tokens_[role], body,
            {{"Content-Type", target == "/api/v1/telemetry" ? "text/plain" : "application/json"}});
    }
    json events(std::uint16_t port, const std::string& query) {
        auto r = request(port, "GET", "/api/v1/events?" + query, tokens_["viewer"]);
        EXPECT_EQ(r.status, 200) << r.body;
        return r.j().value("items", json::array());
    }
    static std::string xid(const std::string& host, int gpu, int code) {
        return "DCGM_FI_DEV_XID_ERRORS{gpu=\"" + std::to_string(gpu) + "\",Hostname=\"" + host +
               "\"} " + std::to_string(code) + "\n";
    }
    static std::size_t indexOf(const json& names, const std::string& name) {
        for (std::size_t i = 0; i < names.size(); ++i)
            if (names[i] == name) return i;
        return names.size();
    }
    static std::optional<int> snapshotValue(const json& m, const std::string& topic,
                                            std::size_t i) {
        if (m.value("type", "") != "snapshot" || m.value("topic", "") != topic) return std::nullopt;
        auto bytes = decodeBase64(m.value("data", ""));
        return i < bytes.size() ? std::optional<int>(bytes[i]) : std::nullopt;
    }
    static bool isEvent(const json& m, std::int64_t id) {
        return m.value("type", "") == "event" && m["event"].value("id", std::int64_t{0}) == id;
    }

    // pg_ctl of the test harness's PostgreSQL (as `postgres` when running as root).
    static bool pgCtl(const std::string& verb) {
        auto* pg = loom::testing::sharedPostgres();
        if (!pg) return false;
        const std::string data = (pg->stateDir() / "pgdata").string();
        std::string cmd = "/usr/lib/postgresql/15/bin/pg_ctl " + verb + " -s -w -t 60 " +
                          (verb == "stop" ? "-m fast " : "") + "-D '" + data + "' -l '" +
                          pg->logFile().string() + "' >/dev/null 2>&1";
        if (::geteuid() == 0) cmd = "runuser -u postgres -- " + cmd;
        return std::system(cmd.c_str()) == 0;
    }
};

TEST_F(EventLifecycle, AckAndCloseByHandOverRestAndStream) {
    auto& s = start();
    const auto port = s.port();
    WsClient c;
    c.open(port, tokens_["viewer"]);
    subscribe(c, {"events"});

    ASSERT_LT(post(port, "/api/v1/telemetry", xid("z1-r001-h0", 2, 79)).status, 300);
    auto opened = readUntil(c, [](const json& m) {
        return m.value("type", "") == "event" &&
               m["event"].value("location", "") == "z1-r001-h0-gpu2";
    });
    ASSERT_TRUE(opened) << "no event message for the XID";
    const json& e0 = (*opened)["event"];
    const auto id = e0.value("id", std::int64_t{0});
    ASSERT_GT(id, 0) << e0.dump();
    // One shape: the lifecycle fields are there from the first message.
    EXPECT_EQ(e0.value("state", ""), "open");
    EXPECT_TRUE(e0["acknowledgedBy"].is_null());
    EXPECT_TRUE(e0["acknowledgedAt"].is_null());
    EXPECT_TRUE(e0["closedBy"].is_null());
    EXPECT_EQ(e0.value("source", ""), "telemetry");
    const std::string base = "/api/v1/events/" + std::to_string(id);

    // Roles, bad ids, bad bodies.
    EXPECT_EQ(post(port, base + "/ack", "", "viewer").status, 403);
    EXPECT_EQ(post(port, "/api/v1/events/abc/ack").status, 400);
    EXPECT_EQ(post(port, "/api/v1/events/0/close").status, 400);
    EXPECT_EQ(post(port, "/api/v1/events/987654321/ack").status, 404);
    auto bad = post(port, base + "/ack", R"({"comment": 5})");
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_EQ(bad.j()["error"].value("path", ""), "comment") << bad.body;
    EXPECT_EQ(post(port, base + "/ack", R"({"note": "x"})").status, 400);
    EXPECT_EQ(post(port, base + "/ack", "{not json").status, 400);

    // Acknowledge: 200 with the event, the stream sees the same.
    auto ack = post(port, base + "/ack", R"({"comment": "replacing the GPU"})");
    ASSERT_EQ(ack.status, 200) << ack.body;
    EXPECT_EQ(ack.j().value("acknowledgedBy", ""), "operator-token");
    EXPECT_FALSE(ack.j()["acknowledgedAt"].is_null());
    EXPECT_EQ(ack.j().value("ackComment", ""), "replacing the GPU");
    EXPECT_EQ(ack.j().value("state", ""), "open");
    auto acked = readUntil(c, [&](const json& m) {
        return isEvent(m, id) && !m["event"]["acknowledgedBy"].is_null();
    });
    ASSERT_TRUE(acked) << "the acknowledgement never reached the stream";
    EXPECT_EQ((*acked)["event"].value("acknowledgedBy", ""), "operator-token");
    // Acknowledging again keeps the first acknowledgement.
    auto again = post(port, base + "/ack", R"({"comment": "second"})", "admin");
    ASSERT_EQ(again.status, 200);
    EXPECT_EQ(again.j().value("acknowledgedBy", ""), "operator-token");
    EXPECT_EQ(again.j().value("ackComment", ""), "replacing the GPU");
    EXPECT_EQ(events(port, "acknowledged=true&location=z1-r001-h0-gpu2").size(), 1u);

    // Close by hand: who and why recorded; a second close is a conflict.
    auto closed = post(port, base + "/close", R"({"reason": "RMA opened"})");
    ASSERT_EQ(closed.status, 200) << closed.body;
    EXPECT_EQ(closed.j().value("state", ""), "closed");
    EXPECT_EQ(closed.j().value("closedBy", ""), "operator-token");
    EXPECT_EQ(closed.j().value("closeReason", ""), "RMA opened");
    EXPECT_FALSE(closed.j()["closedAt"].is_null());
    auto seen = readUntil(c, [&](const json& m) {
        return isEvent(m, id) && m["event"].value("state", "") == "closed";
    });
    ASSERT_TRUE(seen) << "the close never reached the stream";
    EXPECT_EQ((*seen)["event"].value("closedBy", ""), "operator-token");
    auto twice = post(port, base + "/close");
    EXPECT_EQ(twice.status, 409) << twice.body;
    EXPECT_NE(twice.body.find("operator-token"), std::string::npos) << twice.body;

    // The condition persists (the GPU still reports XID 79): no new event...
    ASSERT_LT(post(port, "/api/v1/telemetry", xid("z1-r001-h0", 2, 79)).status, 300);
    // ...until it clears and returns: then a new event, a new row.
    ASSERT_LT(post(port, "/api/v1/telemetry", xid("z1-r001-h0", 2, 0)).status, 300);
    ASSERT_LT(post(port, "/api/v1/telemetry", xid("z1-r001-h0", 2, 79)).status, 300);
    ASSERT_TRUE(eventually([&] { return events(port, "location=z1-r001-h0-gpu2").size() == 2; }))
        << events(port, "location=z1-r001-h0-gpu2").dump();
    auto rows = events(port, "location=z1-r001-h0-gpu2");
    EXPECT_EQ(rows[0].value("state", ""), "open");
    EXPECT_GT(rows[0].value("id", std::int64_t{0}), id);
    EXPECT_EQ(rows[1].value("closedBy", ""), "operator-token");  // untouched by the recovery
    // The recovery of the hand-closed event did not publish a second close of it.
    EXPECT_EQ(rows[1].value("closeReason", ""), "RMA opened");

    // Filters: a bogus kind names the known ones; state=; source=.
    auto bogus = request(port, "GET", "/api/v1/events?kind=bogus", tokens_["viewer"]);
    EXPECT_EQ(bogus.status, 400);
    EXPECT_NE(bogus.body.find("gpu_xid"), std::string::npos) << bogus.body;
    EXPECT_NE(bogus.body.find("rack_transition"), std::string::npos) << bogus.body;
    EXPECT_EQ(request(port, "GET", "/api/v1/events?state=maybe", tokens_["viewer"]).status, 400);
    EXPECT_EQ(events(port, "state=open&location=z1-r001-h0-gpu2").size(), 1u);
    EXPECT_EQ(events(port, "state=closed&kind=gpu_xid").size(), 1u);
    EXPECT_EQ(events(port, "source=telemetry&kind=gpu_xid").size(), 2u);
    auto badSource = request(port, "GET", "/api/v1/events?source=bogus", tokens_["viewer"]);
    EXPECT_EQ(badSource.status, 400);
    EXPECT_EQ(badSource.j()["error"].value("path", ""), "source") << badSource.body;
    EXPECT_NE(badSource.body.find("jobs"), std::string::npos)
        << "every source is named: " << badSource.body;
}

// Two loomds on one database, wired through NOTIFY as `loomd serve` wires them: an ack and a
// close on one reach a stream client of the other.
TEST_F(EventLifecycle, AckAndCloseReachTheOtherLoomd) {
    auto& a = start();
    auto& b = start();
    auto& na = linkPeers(a, "loom_stream_test");
    auto& nb = linkPeers(b, "loom_stream_test");
    ASSERT_TRUE(eventually([&] { return na.connected() && nb.connected(); }));
    ASSERT_LT(post(a.port(), "/api/v1/telemetry", xid("z1-r002-h0", 1, 48)).status, 300);
    ASSERT_TRUE(
        eventually([&] { return events(a.port(), "location=z1-r002-h0-gpu1").size() == 1; }));
    const auto id = events(a.port(), "location=z1-r002-h0-gpu1")[0].value("id", std::int64_t{0});
    WsClient c;
    c.open(b.port(), tokens_["viewer"]);
    subscribe(c, {"events"});
    ASSERT_EQ(post(a.port(), "/api/v1/events/" + std::to_string(id) + "/ack").status, 200);
    auto acked = readUntil(c, [&](const json& m) {
        return isEvent(m, id) && m["event"]["acknowledgedBy"] == "operator-token";
    });
    EXPECT_TRUE(acked) << "the ack on one loomd never reached the other's stream";
    ASSERT_EQ(post(a.port(), "/api/v1/events/" + std::to_string(id) + "/close").status, 200);
    auto closed = readUntil(c, [&](const json& m) {
        return isEvent(m, id) && m["event"].value("state", "") == "closed";
    });
    EXPECT_TRUE(closed) << "the close on one loomd never reached the other's stream";
    // The other loomd lists it the same way (one database).
    EXPECT_EQ(events(b.port(), "location=z1-r002-h0-gpu1")[0].value("closedBy", ""),
              "operator-token");
}

// The console's GPU and link sparklines: GET /api/v1/telemetry/rollups?scope=gpu|link serves the
// hub's last hour, the minute in progress marked partial; bad scopes and names are 4xx.
TEST_F(EventLifecycle, GpuAndLinkHistoryFromTheRollupsApi) {
    auto& s = start();
    const auto port = s.port();
    auto hall = request(port, "GET", "/api/v1/hall", tokens_["viewer"]).j();
    std::string link;
    for (const auto& n : hall["links"]) {
        std::string name = n;
        if (name.rfind("z1-r002-rtsw/p", 0) == 0) {
            link = name;
            break;
        }
    }
    ASSERT_FALSE(link.empty());
    const std::string portName = link.substr(13, link.find("--") - 13);
    ASSERT_LT(post(port, "/api/v1/telemetry",
                   "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\",Hostname=\"z1-r002-h1\"} 77\n"
                   "DCGM_FI_DEV_POWER_USAGE{gpu=\"3\",Hostname=\"z1-r002-h1\"} 612\n"
                   "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"" +
                       portName + "\"} 2\n")
                  .status,
              300);
    auto get = [&](const std::string& q) {
        return request(port, "GET", "/api/v1/telemetry/rollups?" + q, tokens_["viewer"]);
    };
    json last;
    ASSERT_TRUE(eventually([&] {  // the hub samples once a second
        auto items = get("scope=gpu&name=z1-r002-h1-gpu3").j().value("items", json::array());
        if (items.empty()) return false;
        last = items.back();
        return last["utilAvg"].is_number();
    })) << last.dump();
    EXPECT_EQ(last.value("scope", ""), "gpu");
    EXPECT_EQ(last.value("name", ""), "z1-r002-h1-gpu3");
    EXPECT_TRUE(last.value("partial", false));
    EXPECT_DOUBLE_EQ(last.value("utilAvg", 0.0), 77);
    EXPECT_DOUBLE_EQ(last.value("powerAvgW", 0.0), 612);
    EXPECT_TRUE(last["tempMax"].is_null());  // never reported
    std::string encoded;
    for (char c : link) encoded += c == '/' ? std::string("%2F") : std::string(1, c);
    ASSERT_TRUE(eventually([&] {
        auto items = get("scope=link&name=" + encoded).j().value("items", json::array());
        if (items.empty()) return false;
        last = items.back();
        return last.value("downSamples", 0) >= 1;
    })) << last.dump();
    EXPECT_GE(last.value("samples", 0), last.value("downSamples", 0));
    EXPECT_DOUBLE_EQ(last.value("utilAvg", -1.0), 0);  // down: no traffic

    auto bad = get("scope=host&name=x");
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(bad.j()["error"].value("path", ""), "scope");
    bad = get("scope=gpu");
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(bad.j()["error"].value("path", ""), "name");
    EXPECT_EQ(get("scope=gpu&name=z9-r001-h0-gpu0").status, 404);
    EXPECT_EQ(get("scope=link&name=nope").status, 404);
    EXPECT_EQ(get("scope=rack&name=z1-r002").status, 200);  // the stored rollups as before
}

TEST_F(EventLifecycle, FlappingClosesAfterTheHoldDown) {
    ASSERT_TRUE(
        connect().exec("UPDATE racks SET state = 'in_service'"));  // cables follow (live sync)
    telemetryOptions_.hub.detection.flapTransitions = 3;
    telemetryOptions_.hub.detection.flapWindowSeconds = 60;
    telemetryOptions_.hub.detection.flapQuietIntervals = 2;
    telemetryOptions_.hub.detection.flapIntervalSeconds = 1;
    auto& s = start();
    const auto port = s.port();
    auto hall = request(port, "GET", "/api/v1/hall", tokens_["viewer"]).j();
    std::string link, portName;
    for (const auto& n : hall["links"]) {
        std::string name = n;
        if (name.rfind("z1-r002-rtsw/p", 0) == 0) {
            link = name;
            portName = name.substr(13, name.find("--") - 13);
            break;
        }
    }
    ASSERT_FALSE(link.empty()) << hall["links"].dump();
    auto oper = [&](int v) {
        return post(port, "/api/v1/telemetry",
                    "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"" + portName + "\"} " +
                        std::to_string(v) + "\n");
    };
    for (int v : {1, 0, 1, 0, 1}) ASSERT_LT(oper(v).status, 300);
    ASSERT_TRUE(eventually([&] {
        return events(port, "kind=link_flapping&state=open").size() == 1;
    })) << events(port, "kind=link_flapping").dump();
    const auto openedAt = std::chrono::steady_clock::now();
    // Quiet (the link stays up): closed after 2 x 1 s, long before the 60 s window.
    ASSERT_TRUE(eventually([&] {
        return events(port, "kind=link_flapping&state=closed").size() == 1;
    })) << events(port, "kind=link_flapping").dump();
    EXPECT_GE(std::chrono::steady_clock::now() - openedAt, 1500ms);
    auto ev = events(port, "kind=link_flapping")[0];
    EXPECT_TRUE(ev["closedBy"].is_null());  // closed by the rules
    EXPECT_EQ(ev.value("location", ""), link);
    // The link_down that opened during the flapping closed when it came back up.
    EXPECT_EQ(events(port, "kind=link_down&state=open").size(), 0u);
}

TEST_F(EventLifecycle, RackTransitionsAreEventsInTheSameHistory) {
    auto& s = start();
    const auto port = s.port();
    // A rack action through the API writes an audit row; its event comes with it.
    auto r = post(port, "/api/v1/racks/z1-r003/advance", R"({"reason": "arrived on the dock"})");
    ASSERT_LT(r.status, 300) << r.body;
    auto items = events(port, "kind=rack_transition&rack=z1-r003");
    ASSERT_EQ(items.size(), 1u) << items.dump();
    const auto& e = items[0];
    EXPECT_EQ(e.value("source", ""), "provisioning");
    EXPECT_EQ(e.value("severity", ""), "info");
    EXPECT_EQ(e.value("state", ""), "closed");
    EXPECT_EQ(e.value("openedAt", ""), e.value("closedAt", ""));
    EXPECT_EQ(e.value("zone", ""), "z1");
    EXPECT_EQ(e["labels"].value("from", ""), "planned");
    EXPECT_EQ(e["labels"].value("to", ""), "delivered");
    EXPECT_EQ(e["labels"].value("actor", ""), "operator-token");
    EXPECT_EQ(e["labels"].value("reason", ""), "arrived on the dock");
    EXPECT_EQ(e.value("message", ""), "z1-r003: planned -> delivered (arrived on the dock)");
    // Exactly one event per audit row of the rack.
    auto audit = connect().queryValue(
        "SELECT count(*) FROM provisioning_audit WHERE entity_kind = 'rack' AND entity = "
        "'z1-r003'");
    ASSERT_TRUE(audit);
    EXPECT_EQ(std::to_string(items.size()), audit->value());
    // The history lists it with the failure events, newest first.
    EXPECT_EQ(events(port, "source=provisioning").size(), 1u);
}

// dcgm-exporter's clock event reasons and HPC job label through the push API: the GPU detail
// names the reasons and the job, and a thermal reason held for 3 samples is a stored
// gpu_throttled event (sw_power_cap alone on another GPU never is).
TEST_F(EventLifecycle, ThrottledGpuAndItsJobInTheGpuDetail) {
    // The close below is the recovery itself, not the hold-down's (60 s by default): 1 s here.
    telemetryOptions_.hub.detection.thresholdHoldDownSeconds = 1;
    auto& s = start();
    const auto port = s.port();
    auto page = [](int thermalBits) {
        std::string out =
            "# HELP DCGM_FI_DEV_CLOCKS_EVENT_REASONS Current clock event reasons (bitmask).\n"
            "# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge\n";
        for (int g : {2, 3})
            out += "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"" + std::to_string(g) +
                   "\",UUID=\"GPU-x" + std::to_string(g) +
                   "\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia" + std::to_string(g) +
                   "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"z1-r002-h0\","
                   "DCGM_FI_DRIVER_VERSION=\"535.129.03\",hpc_job=\"slurm-981\"} " +
                   std::to_string(g == 2 ? thermalBits : 0x4) + "\n";
        return out;
    };
    for (int i = 0; i < 3; ++i) ASSERT_EQ(post(port, "/api/v1/telemetry", page(0x44)).status, 200);
    ASSERT_TRUE(
        eventually([&] { return events(port, "kind=gpu_throttled&state=open").size() == 1; }));
    auto open = events(port, "kind=gpu_throttled");
    ASSERT_EQ(open.size(), 1u) << open.dump();
    EXPECT_EQ(open[0].value("location", ""), "z1-r002-h0-gpu2");
    EXPECT_EQ(open[0].value("severity", ""), "warning");
    auto d = request(port, "GET", "/api/v1/telemetry/gpus/z1-r002-h0-gpu2", tokens_["viewer"]);
    ASSERT_EQ(d.status, 200) << d.body;
    EXPECT_EQ(d.j()["job"], "slurm-981") << d.body;
    EXPECT_EQ(d.j()["clockEventReasons"]["mask"], 0x44) << d.body;
    EXPECT_EQ(d.j()["clockEventReasons"]["names"], json({"sw_power_cap", "hw_thermal"})) << d.body;
    EXPECT_EQ(d.j()["clockEventReasons"]["throttled"], true) << d.body;
    auto other =
        request(port, "GET", "/api/v1/telemetry/gpus/z1-r002-h0-gpu3", tokens_["viewer"]).j();
    EXPECT_EQ(other["clockEventReasons"]["throttled"], false) << other.dump();
    EXPECT_EQ(other["clockEventReasons"]["names"], json({"sw_power_cap"}));
    auto never =
        request(port, "GET", "/api/v1/telemetry/gpus/z1-r002-h0-gpu4", tokens_["viewer"]).j();
    EXPECT_TRUE(never["clockEventReasons"].is_null() && never["job"].is_null()) << never.dump();
    // The reason clears: the stored event closes.
    // The reason clears and stays clear (samples keep coming, as from an exporter): the stored
    // event closes once the hold-down has passed.
    ASSERT_TRUE(eventually([&] {
        EXPECT_EQ(post(port, "/api/v1/telemetry", page(0x0)).status, 200);
        return events(port, "kind=gpu_throttled&state=closed").size() == 1;
    }));
}

TEST_F(EventLifecycle, OpenXidSurvivesARestartAsAFailedGpu) {
    ASSERT_TRUE(
        connect().exec("UPDATE racks SET state = 'in_service'"));  // cables follow (live sync)
    const std::string gpu = "z1-r004-h1-gpu5";
    std::int64_t id = 0;
    std::string link;
    {
        auto& s = start();
        ASSERT_LT(post(s.port(), "/api/v1/telemetry", xid("z1-r004-h1", 5, 79)).status, 300);
        // And a link of z1-r004's RTSW goes down.
        auto hall = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"]).j();
        for (const auto& n : hall["links"])
            if (std::string(n).rfind("z1-r004-rtsw/p", 0) == 0) link = n;
        ASSERT_FALSE(link.empty());
        const std::string portName = link.substr(13, link.find("--") - 13);
        ASSERT_LT(
            post(s.port(), "/api/v1/telemetry",
                 "loom_port_oper_status{switch=\"z1-r004-rtsw\",port=\"" + portName + "\"} 0\n")
                .status,
            300);
        ASSERT_TRUE(
            eventually([&] { return events(s.port(), "kind=link_down&state=open").size() == 1; }));
        ASSERT_TRUE(eventually(
            [&] { return events(s.port(), "location=" + gpu + "&state=open").size() == 1; }));
        id = events(s.port(), "location=" + gpu)[0].value("id", std::int64_t{0});
        auto other = request(s.port(), "GET", "/api/v1/gpus/z1-r004-h1-gpu4", tokens_["viewer"]);
        EXPECT_EQ(other.j().value("health", ""), "ok") << other.body;
        auto g = request(s.port(), "GET", "/api/v1/gpus/" + gpu, tokens_["viewer"]);
        ASSERT_EQ(g.status, 200) << g.body;
        EXPECT_EQ(g.j().value("health", ""), "failed") << g.body;
        // Stop this loomd (telemetry first, as `loomd serve` does).
        telemetry_.back()->stop();
        servers_.back()->stop();
    }
    // A new loomd on the same database: no telemetry at all yet.
    auto& s2 = start();
    const auto port = s2.port();
    auto g = request(port, "GET", "/api/v1/gpus/" + gpu, tokens_["viewer"]);
    ASSERT_EQ(g.status, 200) << g.body;
    EXPECT_EQ(g.j().value("health", ""), "failed");
    auto failed = request(port, "GET", "/api/v1/gpus?health=failed", tokens_["viewer"]);
    ASSERT_EQ(failed.status, 200) << failed.body;
    ASSERT_EQ(failed.j()["items"].size(), 1u) << failed.body;
    EXPECT_EQ(failed.j()["items"][0].value("name", ""), gpu);
    auto links = request(port, "GET", "/api/v1/links?health=failed", tokens_["viewer"]);
    ASSERT_EQ(links.status, 200) << links.body;
    ASSERT_EQ(links.j()["items"].size(), 1u) << links.body;
    EXPECT_EQ(links.j()["items"][0].value("name", ""), link);
    auto sw = request(port, "GET", "/api/v1/switches/z1-r004-rtsw", tokens_["viewer"]);
    EXPECT_EQ(sw.j().value("health", ""), "degraded") << sw.body;
    EXPECT_EQ(request(port, "GET", "/api/v1/switches/z1-r001-rtsw", tokens_["viewer"])
                  .j()
                  .value("health", ""),
              "ok");
    // The live view agrees: gpu.health of that GPU is 2 (failed) in the first snapshot.
    auto hall = request(port, "GET", "/api/v1/hall", tokens_["viewer"]).j();
    auto index = indexOf(hall["gpus"], gpu);
    ASSERT_LT(index, hall["gpus"].size());
    WsClient c;
    c.open(port, tokens_["viewer"]);
    c.send({{"op", "subscribe"}, {"topics", {"gpu.health", "link.health", "events"}}});
    std::optional<json> snap, linkSnap;
    ASSERT_TRUE(readUntil(c, [&](const json& m) {
        if (m.value("type", "") == "snapshot" && m.value("topic", "") == "gpu.health") snap = m;
        if (m.value("type", "") == "snapshot" && m.value("topic", "") == "link.health")
            linkSnap = m;
        return snap && linkSnap;
    }));
    EXPECT_EQ(snapshotValue(*snap, "gpu.health", index), std::optional<int>(2));
    // The link is down (2) before any sample about it arrived.
    EXPECT_EQ(snapshotValue(*linkSnap, "link.health", indexOf(hall["links"], link)),
              std::optional<int>(2));
    // The same XID still reported opens nothing new; recovery closes the stored row.
    ASSERT_LT(post(port, "/api/v1/telemetry", xid("z1-r004-h1", 5, 79)).status, 300);
    ASSERT_LT(post(port, "/api/v1/telemetry", xid("z1-r004-h1", 5, 0)).status, 300);
    auto closed = readUntil(c, [&](const json& m) {
        return isEvent(m, id) && m["event"].value("state", "") == "closed";
    });
    ASSERT_TRUE(closed) << "the restored event was not closed by the recovery";
    auto rows = events(port, "location=" + gpu);
    ASSERT_EQ(rows.size(), 1u) << rows.dump();
    EXPECT_EQ(
        request(port, "GET", "/api/v1/gpus/" + gpu, tokens_["viewer"]).j().value("health", ""),
        "ok");
}

TEST_F(EventLifecycle, PostgresOutageLosesAndMergesNoEvent) {
    auto& s = start();
    const auto port = s.port();
    const std::string op = tokens_["operator"];
    // 200 open/close pairs over the 64 GPUs of the sample cluster (so GPUs reopen: a lost close
    // would merge the next XID into its row), PostgreSQL stopped for ~12 s in the middle.
    constexpr int kPairs = 200;
    std::vector<std::pair<std::string, int>> gpus;
    for (int r = 1; r <= 4; ++r)
        for (int h = 0; h < 2; ++h)
            for (int g = 0; g < 8; ++g)
                gpus.emplace_back("z1-r00" + std::to_string(r) + "-h" + std::to_string(h), g);
    std::atomic<int> sent{0};
    std::atomic<bool> failed{false};
    std::thread feeder([&] {
        for (int i = 0; i < kPairs && !failed; ++i) {
            const auto& [host, g] = gpus[i % gpus.size()];
            // The ingest path does not need the database (needsDb = false): 200 all along.
            auto a = request(port, "POST", "/api/v1/telemetry", op, xid(host, g, 79),
                             {{"Content-Type", "text/plain"}});
            auto b = request(port, "POST", "/api/v1/telemetry", op, xid(host, g, 0),
                             {{"Content-Type", "text/plain"}});
            if (a.status != 200 || b.status != 200) failed = true;
            ++sent;
            std::this_thread::sleep_for(40ms);  // pacing: ~8 s for the 200 pairs
        }
    });
    ASSERT_TRUE(eventually([&] { return sent >= 40; }, 30s));
    // LOOM_OUTAGE_SECONDS (default 12) sets the outage; issue 18's figure is for 10 s. Longer
    // than the token cache's 10 s: ingest keeps its last token answer while the database is
    // away (AuthCache::kStaleGrace) instead of refusing with 503 (it did, under load).
    int outage = 12;
    if (const char* e = std::getenv("LOOM_OUTAGE_SECONDS")) outage = std::max(1, std::atoi(e));
    ASSERT_TRUE(pgCtl("stop"));
    const int atStop = sent;
    std::this_thread::sleep_for(
        std::chrono::seconds(outage));  // the outage itself, not an assertion
    const int atStart = sent;
    // Past the token cache's TTL with the database still down: the token's last answer holds.
    auto late = request(port, "POST", "/api/v1/telemetry", op,
                        "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"z1-r001-h0\"} 40\n",
                        {{"Content-Type", "text/plain"}});
    EXPECT_EQ(late.status, 200) << late.body;
    ASSERT_TRUE(pgCtl("start"));
    const auto restarted = std::chrono::steady_clock::now();
    feeder.join();
    ASSERT_FALSE(failed) << "an ingest was refused";
    EXPECT_GE(atStart - atStop, 50) << "too few pairs arrived during the outage to mean anything";
    // Afterwards: exactly 200 rows, all closed, none merged (each open its own row).
    auto conn = connect();
    ASSERT_TRUE(eventually(
        [&] {
            auto n = conn.queryValue(
                "SELECT count(*) FILTER (WHERE closed_at IS NOT NULL) FROM events "
                "WHERE kind = 'gpu_xid'");
            return n && n->value() == std::to_string(kPairs);
        },
        60s))
        << conn.queryValue(
                   "SELECT count(*) || ' rows, ' || count(closed_at) || ' closed' FROM events")
               ->value();
    std::cout << "outage " << outage << " s: " << atStart - atStop << " of " << kPairs
              << " XID open/close pairs arrived while PostgreSQL was down; all stored "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - restarted)
                     .count()
              << " ms after it was back\n";
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM events WHERE kind = 'gpu_xid'")->value(),
              std::to_string(kPairs));
    EXPECT_EQ(conn.queryValue("SELECT count(DISTINCT event_key) FROM events WHERE kind = 'gpu_xid'")
                  ->value(),
              std::to_string(kPairs));
    // Per GPU: as many rows as pairs sent to it, and no row spans another's open time.
    EXPECT_EQ(
        conn.queryValue("SELECT count(*) FROM events a JOIN events b ON a.location = b.location "
                        "AND a.id < b.id AND a.kind = 'gpu_xid' AND b.kind = 'gpu_xid' "
                        "AND b.opened_at < a.closed_at")
            ->value(),
        "0");
    // Nothing dropped (the pool's first request after the restart may be a 503: retried).
    HttpResult metrics;
    ASSERT_TRUE(eventually([&] {
        metrics = request(port, "GET", "/metrics", tokens_["viewer"]);
        return metrics.status == 200;
    })) << metrics.body;
    EXPECT_NE(metrics.body.find("loom_event_writer_dropped_total 0\n"), std::string::npos)
        << metrics.body;
}

// Every loomd notes the event ids published on the events topic (its own, its peers' through
// NOTIFY) and reads their rows on its next pass (issue 39). While it cannot read — here
// PostgreSQL is stopped, while peers that still reach it keep publishing — the inbox holds at
// most 10,000 ids: the rest are dropped and counted, and the first pass that reaches the
// database reads every open row instead.
TEST_F(EventLifecycle, TheFollowInboxStaysBoundedWhileTheDatabaseIsDown) {
    auto& s = start();
    const auto port = s.port();
    auto metric = [&](const std::string& name) -> std::int64_t {
        auto r = request(port, "GET", "/metrics", tokens_["viewer"]);
        const auto at = r.body.find("\n" + name + " ");
        if (r.status != 200 || at == std::string::npos) return -1;
        return std::stoll(r.body.substr(at + name.size() + 2));
    };
    auto publish = [&](std::int64_t from, std::int64_t to) {
        for (auto id = from; id <= to; ++id)
            s.deliverFromPeer(
                "events",
                json{{"type", "event"}, {"event", {{"id", id}, {"source", "telemetry"}}}}.dump());
    };
    ASSERT_EQ(metric("loom_events_follow_inbox_ids"), 0);
    ASSERT_EQ(metric("loom_events_follow_ids_dropped_total"), 0);
    ASSERT_TRUE(pgCtl("stop"));
    // One id first: the pass it wakes finds the database gone and drops its connection (taking
    // the id, and asking for a full read), or has none already; from then on a pass takes
    // nothing from the inbox until it connects.
    publish(1, 1);
    std::this_thread::sleep_for(500ms);  // a few follow passes (every 100 ms), not an assertion
    const auto before = metric("loom_events_follow_inbox_ids");
    ASSERT_GE(before, 0);
    constexpr std::int64_t kMore = 10'499;
    publish(2, 1 + kMore);
    const auto held = metric("loom_events_follow_inbox_ids");
    const auto dropped = metric("loom_events_follow_ids_dropped_total");
    ASSERT_TRUE(pgCtl("start"));
    EXPECT_EQ(held, 10'000);
    EXPECT_EQ(dropped, before + kMore - 10'000);
    // Back: a pass reads every open row and the ids kept, and the inbox is empty again.
    EXPECT_TRUE(eventually([&] { return metric("loom_events_follow_inbox_ids") == 0; }, 30s));
}

}  // namespace
}  // namespace loom::backend::testing
