// Issue 39's fault suite, item 1: a restart changes nothing a user can see. An XID 79 and a
// NIC-side link_down are pushed, the XID acknowledged; loomd stops and a new one starts on the
// same database, with and without the simulator. Events (ids, acknowledgement), GPU and link
// health must be equal before and after, on REST and on the stream, after the simulator's first
// samples or a switch-side "up"; only the source that reported each failure closes it.
#include <atomic>
#include <functional>
#include <optional>
#include <set>

#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

class RestartEvidence : public ServerFixture, public ::testing::WithParamInterface<bool> {
protected:
    Server& start() {
        ServerConfig cfg;
        cfg.streamInterval = 200ms;
        auto& s = startServer(cfg, Routes::All);
        EXPECT_TRUE(eventually([&] {
            auto r = post(s.port(), "/api/v1/telemetry",
                          "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"z1-r001-h0\"} 1\n");
            return r.status == 200 && r.j().value("applied", 0) == 1;
        })) << "the telemetry hub never took the hall layout";
        return s;
    }
    void stop() {
        // Telemetry first, as `loomd serve` does; the rows were stored before (the test waits).
        telemetry_.back()->stop();
        scrapers_.back()->stop();
        servers_.back()->stop();
    }
    static bool eventually(const std::function<bool()>& cond,
                           std::chrono::milliseconds limit = 15s) {
        return loom::testing::eventually(cond, limit);
    }
    HttpResult post(std::uint16_t port, const std::string& target, const std::string& body) {
        return request(
            port, "POST", target, tokens_["operator"], body,
            {{"Content-Type", target == "/api/v1/telemetry" ? "text/plain" : "application/json"}});
    }
    // The host's node_exporter page as pushed: node_infiniband_info of its eight ConnectX-7 (which
    // device is which NIC is read from them, issue 35) and mlx5_5's port state.
    std::string nicPage(int state) const {
        std::string page;
        for (int d = 0; d < 8; ++d)
            page += "node_infiniband_info{board_id=\"MT_0000000838\",device=\"mlx5_" +
                    std::to_string(d) + "\",firmware_version=\"28.39.1002\",hca_type=\"MT4129\"," +
                    "instance=\"" + host_ + ":9100\"} 1\n";
        return page + "node_infiniband_state_id{device=\"mlx5_5\",port=\"1\",instance=\"" + host_ +
               ":9100\"} " + std::to_string(state) + "\n";
    }
    json get(std::uint16_t port, const std::string& target) {
        auto r = request(port, "GET", target, tokens_["viewer"]);
        EXPECT_EQ(r.status, 200) << target << ": " << r.body;
        return r.j();
    }
    // A counter of /metrics (-1 when absent).
    double metric(std::uint16_t port, const std::string& name) {
        const auto body = request(port, "GET", "/metrics", tokens_["viewer"]).body;
        const auto at = body.find("\n" + name + " ");
        return at == std::string::npos ? -1 : std::stod(body.substr(at + name.size() + 2));
    }

    // What a user sees of the two failures: the open events at their places (id, kind,
    // acknowledgement, origin, ends), the health of the GPU and the link on REST and in the
    // stream's first snapshot.
    struct View {
        std::set<std::string> events;
        std::string gpuHealth, linkHealth;
        int gpuStream = -1, linkStream = -1;
        bool operator==(const View&) const = default;
    };
    View view(std::uint16_t port) {
        View v;
        for (const auto& loc : {gpu_, link_}) {
            const auto doc = get(port, "/api/v1/events?state=open&location=" + loc);
            for (const auto& e : doc["items"])
                v.events.insert(
                    std::to_string(e.value("id", 0)) + " " + e.value("kind", "") + " ack=" +
                    (e["acknowledgedBy"].is_null() ? "" : e["acknowledgedBy"].get<std::string>()) +
                    "/" + e.value("ackComment", "") + " origin=" + e.value("origin", "") +
                    " ends=" + e["downEnds"].dump());
        }
        v.gpuHealth = get(port, "/api/v1/gpus/" + gpu_).value("health", "");
        // Link names hold '/': the list filtered by health, not the object's path.
        v.linkHealth = "up";
        // The document is held: a range-for over get(...)["items"] would dangle.
        const auto failed = get(port, "/api/v1/links?health=failed");
        for (const auto& l : failed["items"])
            if (l.value("name", "") == link_) v.linkHealth = l.value("health", "");
        const auto hall = get(port, "/api/v1/hall");
        auto indexOf = [](const json& names, const std::string& n) {
            for (std::size_t i = 0; i < names.size(); ++i)
                if (names[i] == n) return i;
            return names.size();
        };
        WsClient c;
        c.open(port, tokens_["viewer"]);
        c.send({{"op", "subscribe"}, {"topics", {"gpu.health", "link.health"}}});
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while ((v.gpuStream < 0 || v.linkStream < 0) &&
               std::chrono::steady_clock::now() < deadline) {
            auto m = c.readFor(2s);
            if (!m) break;
            if (m->value("type", "") != "snapshot") continue;
            const auto bytes = decodeBase64(m->value("data", ""));
            const auto topic = m->value("topic", "");
            if (topic == "gpu.health") {
                const auto i = indexOf(hall["gpus"], gpu_);
                if (i < bytes.size()) v.gpuStream = bytes[i];
            } else if (topic == "link.health") {
                const auto i = indexOf(hall["links"], link_);
                if (i < bytes.size()) v.linkStream = bytes[i];
            }
        }
        return v;
    }
    static std::string describe(const View& v) {
        std::string s = "gpu " + v.gpuHealth + "/" + std::to_string(v.gpuStream) + ", link " +
                        v.linkHealth + "/" + std::to_string(v.linkStream) + ", events:";
        for (const auto& e : v.events) s += "\n  " + e;
        return s;
    }

    // The switch end of a backend link ("z1-r004-rtsw/p13" of
    // "z1-r004-h1-nic5/p1--z1-r004-rtsw/p13": the NIC end is named first).
    static std::string switchEndOf(const std::string& link) {
        const auto dash = link.find("--");
        const auto a = link.substr(0, dash), b = link.substr(dash + 2);
        return a.find("-nic") != std::string::npos ? b : a;
    }

    const std::string host_ = "z1-r004-h1";
    const std::string gpu_ = "z1-r004-h1-gpu5";
    std::string link_;  // the backend link of gpu5's NIC (mlx5_5)
};

TEST_P(RestartEvidence, FailuresAcksAndHealthSurviveARestart) {
    const bool simulate = GetParam();
    ASSERT_TRUE(connect().exec("UPDATE racks SET state = 'in_service'"));
    View before;
    std::int64_t xidId = 0, linkId = 0;
    std::string switchEnd;
    {
        auto& s = start();
        const auto port = s.port();
        const auto hall = get(port, "/api/v1/hall");
        for (const auto& l : hall["links"])
            if (l.get<std::string>().find(host_ + "-nic5/") != std::string::npos) link_ = l;
        ASSERT_FALSE(link_.empty());
        switchEnd = switchEndOf(link_);
        ASSERT_TRUE(eventually(
            [&] { return !get(port, "/api/v1/links?state=active&limit=1")["items"].empty(); },
            20s));
        ASSERT_LT(
            post(port, "/api/v1/telemetry",
                 "DCGM_FI_DEV_XID_ERRORS{gpu=\"5\",Hostname=\"" + host_ + "\"} 79\n" + nicPage(1))
                .status,
            300);
        ASSERT_TRUE(eventually([&] {
            return get(port, "/api/v1/events?state=open&location=" + gpu_)["items"].size() == 1 &&
                   get(port, "/api/v1/events?state=open&location=" + link_)["items"].size() == 1;
        }));
        xidId =
            get(port, "/api/v1/events?location=" + gpu_)["items"][0].value("id", std::int64_t{0});
        linkId =
            get(port, "/api/v1/events?location=" + link_)["items"][0].value("id", std::int64_t{0});
        auto ack = post(port, "/api/v1/events/" + std::to_string(xidId) + "/ack",
                        R"({"comment": "INC-42 tech on the way"})");
        ASSERT_EQ(ack.status, 200) << ack.body;
        before = view(port);
        EXPECT_EQ(before.gpuHealth, "failed");
        EXPECT_EQ(before.linkHealth, "down");
        EXPECT_EQ(before.gpuStream, 2);
        EXPECT_EQ(before.linkStream, 2);
        ASSERT_EQ(before.events.size(), 2u) << describe(before);
        stop();
    }

    telemetryOptions_.simulate = simulate;
    auto& s = start();
    const auto port = s.port();
    if (simulate) {
        // The simulator has reported the rack (another GPU of the host has fresh data), so its
        // samples of this GPU and link would have been taken by now.
        ASSERT_TRUE(eventually(
            [&] {
                return get(port, "/api/v1/gpus/" + host_ + "-gpu4").value("health", "") == "ok";
            },
            20s));
        std::this_thread::sleep_for(2500ms);  // two more simulator steps
    } else {
        // The switch end of the link reports up (snmp_exporter's names): the NIC is still down.
        const auto slash = switchEnd.rfind('/');
        auto up = post(port, "/api/v1/telemetry",
                       "ifOperStatus{instance=\"" + switchEnd.substr(0, slash) + "\",ifName=\"swp" +
                           switchEnd.substr(slash + 2) + "\"} 1\n");
        ASSERT_EQ(up.status, 200) << up.body;
        // Taken (it named the NIC end as a switch before, and was ignored as unknown).
        ASSERT_EQ(up.j().value("applied", 0), 1) << up.body;
        std::this_thread::sleep_for(500ms);
    }
    const View after = view(port);
    EXPECT_EQ(after, before) << "before: " << describe(before) << "\nafter: " << describe(after);
    EXPECT_EQ(get(port, "/api/v1/events?location=" + gpu_)["items"].size(), 1u)
        << "the XID's history split";
    EXPECT_EQ(get(port, "/api/v1/events?location=" + link_)["items"].size(), 1u)
        << "the link's history split";

    // The sources that reported them say recovered: both close, by their ids, saying so.
    ASSERT_LT(post(port, "/api/v1/telemetry",
                   "DCGM_FI_DEV_XID_ERRORS{gpu=\"5\",Hostname=\"" + host_ + "\"} 0\n" + nicPage(4))
                  .status,
              300);
    ASSERT_TRUE(eventually([&] {
        return get(port, "/api/v1/events?state=open&location=" + gpu_)["items"].empty() &&
               get(port, "/api/v1/events?state=open&location=" + link_)["items"].empty();
    }));
    for (const auto& [loc, id] : {std::pair{gpu_, xidId}, std::pair{link_, linkId}}) {
        const auto items = get(port, "/api/v1/events?location=" + loc)["items"];
        ASSERT_EQ(items.size(), 1u) << items.dump();
        const auto& e = items[0];
        EXPECT_EQ(e.value("id", std::int64_t{0}), id);
        EXPECT_EQ(e.value("state", ""), "closed") << e.dump();
        EXPECT_EQ(e.value("closeReason", ""), "recovered (reported by push)") << e.dump();
        if (id == xidId) {
            EXPECT_EQ(e.value("ackComment", ""), "INC-42 tech on the way");
        }
    }
}

// A leader change is a restart for the loomd that takes over (issue 39 item 1: "an
// acknowledgement stays with the failure across restarts and leader changes"). loomd B runs
// beside the leader A; an XID 79 is pushed to A (a push reaches one loomd) and acknowledged. A
// dies and B leads: B shows the GPU failed and the event open and acknowledged, and the recovery
// its source then sends to B closes that event (the same id, saying who reported it).
TEST_F(RestartEvidence, ANewLeaderHoldsWhatItsPredecessorSawAndClosesItOnItsSourcesRecovery) {
    ASSERT_TRUE(connect().exec("UPDATE racks SET state = 'in_service'"));
    telemetryOptions_.tickSeconds = 0.2;
    std::atomic<bool> aLeads{true}, bLeads{false};
    auto& a = start();
    a.setLeaderFlag([&] { return aLeads.load(); });
    auto& b = start();
    b.setLeaderFlag([&] { return bLeads.load(); });
    const auto pa = a.port(), pb = b.port();
    // B's loop ticks as a follower first (a real one does for as long as the leader lives).
    std::this_thread::sleep_for(600ms);
    const std::string xid = "DCGM_FI_DEV_XID_ERRORS{gpu=\"5\",Hostname=\"" + host_ + "\"} ";
    ASSERT_LT(post(pa, "/api/v1/telemetry", xid + "79\n").status, 300);
    ASSERT_TRUE(eventually([&] {
        return get(pa, "/api/v1/events?state=open&location=" + gpu_)["items"].size() == 1;
    }));
    const auto xidId =
        get(pa, "/api/v1/events?location=" + gpu_)["items"][0].value("id", std::int64_t{0});
    auto ack = post(pa, "/api/v1/events/" + std::to_string(xidId) + "/ack",
                    R"({"comment": "INC-43 reseat"})");
    ASSERT_EQ(ack.status, 200) << ack.body;
    EXPECT_EQ(get(pa, "/api/v1/gpus/" + gpu_).value("health", ""), "failed");

    // A dies (as in a kill: nothing more from it); B takes the lead.
    telemetry_[0]->stop();
    scrapers_[0]->stop();
    servers_[0]->stop();
    aLeads = false;
    bLeads = true;
    // B's hub learns what is stored open at its first tick as the leader: the push went to A,
    // and B is not linked to A here (no NOTIFY; event_follow_test.cpp links them, and B
    // follows A's events as they open).
    ASSERT_TRUE(eventually([&] { return telemetry_[1]->hub().openEvents().size() == 1; }))
        << "the new leader did not restore the open events";
    std::string health;
    EXPECT_TRUE(eventually([&] {
        health = get(pb, "/api/v1/gpus/" + gpu_).value("health", "");
        return health == "failed";
    })) << "the new leader shows the GPU "
        << health;
    auto items = get(pb, "/api/v1/events?state=open&location=" + gpu_)["items"];
    ASSERT_EQ(items.size(), 1u) << items.dump();
    EXPECT_EQ(items[0].value("id", std::int64_t{0}), xidId);
    EXPECT_EQ(items[0].value("ackComment", ""), "INC-43 reseat");

    // The source says recovered, to the new leader: the same event closes, saying so.
    ASSERT_LT(post(pb, "/api/v1/telemetry", xid + "0\n").status, 300);
    EXPECT_TRUE(eventually([&] {
        return get(pb, "/api/v1/events?state=open&location=" + gpu_)["items"].empty();
    })) << "the new leader never closed it";
    items = get(pb, "/api/v1/events?location=" + gpu_)["items"];
    ASSERT_EQ(items.size(), 1u) << "the history split: " << items.dump();
    EXPECT_EQ(items[0].value("closeReason", ""), "recovered (reported by push)") << items.dump();
    EXPECT_EQ(get(pb, "/api/v1/gpus/" + gpu_).value("health", ""), "ok");
}

// A link event keeps its ends: the switch end goes down after the NIC-side link_down opened,
// then the NIC comes back. The stored event follows (ends: nic -> nic + switch port -> switch
// port), so after a restart the NIC's "up" does not close it while the switch end is down; the
// switch end's "up" does, and the history is one event.
TEST_F(RestartEvidence, ALinkEventKeepsTheEndsThatAreDownAcrossARestart) {
    ASSERT_TRUE(connect().exec("UPDATE racks SET state = 'in_service'"));
    std::string switchEnd, switchUp, switchDown;
    std::int64_t linkId = 0;
    const std::string nic =
        "node_infiniband_state_id{device=\"mlx5_5\",port=\"1\",instance=\"" + host_ + ":9100\"} ";
    auto endsOf = [&](std::uint16_t port) {
        const auto items = get(port, "/api/v1/events?state=open&location=" + link_)["items"];
        return items.size() == 1 ? items[0]["downEnds"].dump() : "open: " + items.dump();
    };
    {
        auto& s = start();
        const auto port = s.port();
        const auto hall = get(port, "/api/v1/hall");  // held: see view()
        for (const auto& l : hall["links"])
            if (l.get<std::string>().find(host_ + "-nic5/") != std::string::npos) link_ = l;
        ASSERT_FALSE(link_.empty());
        switchEnd = switchEndOf(link_);
        const auto slash = switchEnd.rfind('/');
        const auto oper = "loom_port_oper_status{switch=\"" + switchEnd.substr(0, slash) +
                          "\",port=\"" + switchEnd.substr(slash + 1) + "\"} ";
        switchUp = oper + "1\n";
        switchDown = oper + "0\n";
        ASSERT_TRUE(eventually(
            [&] { return !get(port, "/api/v1/links?state=active&limit=1")["items"].empty(); },
            20s));
        const double openedBefore = metric(port, "loom_events_opened_total");
        ASSERT_GE(openedBefore, 0);
        ASSERT_LT(post(port, "/api/v1/telemetry", nic + "1\n").status, 300);
        ASSERT_TRUE(eventually([&] { return endsOf(port) == R"(["nic"])"; })) << endsOf(port);
        linkId =
            get(port, "/api/v1/events?location=" + link_)["items"][0].value("id", std::int64_t{0});
        // The switch end goes down too: both ends, stored.
        auto down = post(port, "/api/v1/telemetry", switchDown);
        ASSERT_EQ(down.status, 200) << down.body;
        ASSERT_EQ(down.j().value("applied", 0), 1) << down.body;
        ASSERT_TRUE(eventually([&] { return endsOf(port) == "[\"nic\",\"" + switchEnd + "\"]"; }))
            << endsOf(port);
        // The NIC comes back; the switch end is still down: open, its ends the switch port.
        ASSERT_LT(post(port, "/api/v1/telemetry", nic + "4\n").status, 300);
        ASSERT_TRUE(eventually([&] { return endsOf(port) == "[\"" + switchEnd + "\"]"; }))
            << endsOf(port);
        // One event opened; its two changes of ends were sent again, not opened (issue 39).
        EXPECT_EQ(metric(port, "loom_events_opened_total"), openedBefore + 1);
        EXPECT_EQ(get(port, "/api/v1/events?location=" + link_)["items"].size(), 1u);
        stop();
    }
    auto& s = start();
    const auto port = s.port();
    EXPECT_EQ(endsOf(port), "[\"" + switchEnd + "\"]");
    // The NIC says up again: the restored event holds the switch end down, not the NIC.
    ASSERT_LT(post(port, "/api/v1/telemetry", nic + "4\n").status, 300);
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(endsOf(port), "[\"" + switchEnd + "\"]") << "the NIC's up closed a switch-side down";
    // The switch end says up: closed, the same event.
    ASSERT_LT(post(port, "/api/v1/telemetry", switchUp).status, 300);
    ASSERT_TRUE(eventually(
        [&] { return get(port, "/api/v1/events?state=open&location=" + link_)["items"].empty(); }));
    const auto items = get(port, "/api/v1/events?location=" + link_)["items"];
    ASSERT_EQ(items.size(), 1u) << "the link's history split: " << items.dump();
    EXPECT_EQ(items[0].value("id", std::int64_t{0}), linkId);
    EXPECT_EQ(items[0].value("closeReason", ""), "recovered (reported by push)") << items.dump();
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutTheSimulator, RestartEvidence, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Simulate" : "NoSimulator"; });

}  // namespace
}  // namespace loom::backend::testing
