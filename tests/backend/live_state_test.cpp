// One live truth (issue 11): every change — operator actions, a second loomd, a restart —
// reaches the hall, the stream, the fabric's link states, degradation and detection within a
// second, and all of them agree. Real loomd servers over HTTP/WebSocket on the harness's
// PostgreSQL; every wait is a deadline, and the deadline is the requirement.
#include <zlib.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <random>
#include <thread>

#include "gunzip.hpp"
#include "loom/db/native.hpp"
#include "loom/db/notify.hpp"
#include "loom/fabric/export.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/topology.hpp"
#include "loom/provisioning/link_service.hpp"
#include "rest_fixture.hpp"
#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class LiveState : public RestFixture {
protected:
    // A server as `loomd serve` wires it: LISTEN/NOTIFY on the stream channel, so committed
    // changes of any loomd (and of `loomd apply`) reach it.
    Server& startLive() {
        ServerConfig cfg;
        cfg.streamInterval = 200ms;
        auto& s = startServer(cfg, Routes::All);
        linkPeers(s);
        return s;
    }

    // Polls until `ok` holds; returns the time it took, or nullopt after `limit`.
    static std::optional<std::chrono::milliseconds> within(std::chrono::milliseconds limit,
                                                           const std::function<bool()>& ok) {
        const auto t0 = Clock::now();
        while (Clock::now() - t0 < limit) {
            if (ok())
                return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
            std::this_thread::sleep_for(10ms);
        }
        return ok() ? std::optional(limit) : std::nullopt;
    }

    // A router built anew from the stored states: what every loomd's routes must become.
    std::optional<fabric::Router> storedStatesRouter() {
        auto conn = connect();
        auto inv = db::loadInventory(conn);
        if (!inv) {
            ADD_FAILURE() << inv.error().toString();
            return std::nullopt;
        }
        auto topo = fabric::buildTopology(*inv, {.plannedIsUp = true, .storedLinkStates = true});
        if (!topo) {
            ADD_FAILURE() << topo.error().toString();
            return std::nullopt;
        }
        std::optional<fabric::Router> fresh;
        fresh.emplace(std::move(*topo));
        return fresh;
    }
    // Every switch's routes on `s` are `fresh`'s within a second.
    void expectRoutesOf(Server& s, const fabric::Router& fresh) {
        for (const auto& sw : fresh.topology().switchNames) {
            auto want = json::parse(fabric::routesJson(fresh, fresh.topology().findSwitch(sw)));
            EXPECT_TRUE(within(1s, [&] { return get(s, "/api/v1/fabric/routes/" + sw) == want; }))
                << sw;
        }
    }
    HttpResult act(Server& s, const std::string& rack, const std::string& action,
                   const std::string& reason = "") {
        return request(s.port(), "POST", "/api/v1/racks/" + rack + "/" + action,
                       tokens_["operator"], reason.empty() ? "" : json{{"reason", reason}}.dump());
    }
    std::string rackState(Server& s, const std::string& rack) {
        const auto hall = get(s, "/api/v1/hall");  // not a temporary: the loop borrows from it
        for (const auto& r : hall["racks"])
            if (r.value("name", "") == rack) return r.value("state", "");
        return "";
    }
    // Stored link states of the rack's cables (name LIKE the rack's prefix), "state:count".
    std::map<std::string, int> linkStates(const std::string& rack) {
        auto conn = connect();
        auto& c = db::native(conn);
        pqxx::work tx(c);
        std::map<std::string, int> out;
        for (const auto& row :
             tx.exec_params("SELECT state, count(*) FROM links WHERE name LIKE $1 GROUP BY state",
                            "%" + rack + "-%"))
            out[row[0].c_str()] = row[1].as<int>();
        return out;
    }
    json bundle(Server& s, const std::string& a, const std::string& b) {
        const auto topo = get(s, "/api/v1/fabric/topology");
        for (const auto& x : topo["bundles"])
            if (x.value("a", "") == a && x.value("b", "") == b) return x;
        return {};
    }
    json degradation(Server& s, const std::string& rack) {
        const auto map = get(s, "/api/v1/fabric/degradation");
        for (const auto& x : map["racks"])
            if (x.value("name", "") == rack) return x;
        return {};
    }
    void bringIntoService(Server& s, const std::string& rack) {
        for (int i = 0; i < 7; ++i) {
            auto r = act(s, rack, "advance");
            ASSERT_EQ(r.status, 200) << rack << " advance " << i << ": " << r.body;
        }
    }
};

TEST_F(LiveState, RackTransitionsReachHallStreamFabricAndDetectionWithinASecond) {
    auto& s = startLive();
    WsClient c;
    c.open(s.port(), tokens_["viewer"]);
    c.send({{"op", "subscribe"}, {"topics", {"inventory", "events"}}});

    // Into service: the hall, the cables, the fabric and degradation all say so within 1 s.
    bringIntoService(s, "z1-r002");
    auto t = within(1s, [&] { return rackState(s, "z1-r002") == "in_service"; });
    ASSERT_TRUE(t) << "hall still says " << rackState(s, "z1-r002");
    EXPECT_EQ(linkStates("z1-r002"), (std::map<std::string, int>{{"active", 18}}));
    ASSERT_TRUE(within(1s, [&] {
        return bundle(s, "z1-r002-rtsw", "z1-ctsw1").value("up", -1) == 1;
    })) << bundle(s, "z1-r002-rtsw", "z1-ctsw1").dump();
    EXPECT_EQ(bundle(s, "z1-r001-rtsw", "z1-ctsw1").value("up", -1), 0);  // still planned
    auto d = degradation(s, "z1-r002");
    EXPECT_TRUE(d.value("inService", false)) << d.dump();
    EXPECT_EQ(d.value("busBwNormalized", -1.0), 100.0) << d.dump();
    EXPECT_FALSE(degradation(s, "z1-r001").value("inService", true));  // not a 0 % rack
    const auto hallVersion = get(s, "/api/v1/hall")["stateVersion"];
    bool announced = false;
    for (auto deadline = Clock::now() + 2s; !announced && Clock::now() < deadline;) {
        auto m = c.readFor(200ms);
        if (m && m->value("type", "") == "inventory" && (*m)["stateVersion"] == hallVersion)
            announced = true;
    }
    EXPECT_TRUE(announced) << "no inventory message with the hall's stateVersion " << hallVersion;

    // Detection follows at once: a port of a cable that just entered service opens link_down.
    const std::string op = tokens_["operator"];
    ASSERT_LT(request(s.port(), "POST", "/api/v1/telemetry", op,
                      "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 1\n")
                  .status,
              300);
    ASSERT_LT(request(s.port(), "POST", "/api/v1/telemetry", op,
                      "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 0\n")
                  .status,
              300);
    EXPECT_TRUE(within(1s, [&] {
        const auto events = get(s, "/api/v1/events?kind=link_down");
        for (const auto& e : events["items"])
            if (e.value("location", "").find("z1-r002-rtsw/p17") != std::string::npos) return true;
        return false;
    })) << get(s, "/api/v1/events").dump();
    ASSERT_LT(request(s.port(), "POST", "/api/v1/telemetry", op,
                      "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 1\n")
                  .status,
              300);

    // Drain and undrain are exact inverses: the cables, routes and degradation come back.
    const auto routesBefore = get(s, "/api/v1/fabric/routes/z1-ctsw1");
    ASSERT_EQ(act(s, "z1-r002", "drain").status, 200);
    ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);  // draining -> drained
    ASSERT_TRUE(within(1s, [&] { return rackState(s, "z1-r002") == "drained"; }));
    EXPECT_EQ(linkStates("z1-r002"), (std::map<std::string, int>{{"drained", 18}}));
    EXPECT_TRUE(
        within(1s, [&] { return bundle(s, "z1-r002-rtsw", "z1-ctsw1").value("up", -1) == 0; }));
    EXPECT_FALSE(degradation(s, "z1-r002").value("inService", true));
    EXPECT_NE(get(s, "/api/v1/fabric/routes/z1-ctsw1"), routesBefore);
    ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);  // drained -> in_service
    ASSERT_TRUE(within(1s, [&] { return rackState(s, "z1-r002") == "in_service"; }));
    EXPECT_EQ(linkStates("z1-r002"), (std::map<std::string, int>{{"active", 18}}));
    EXPECT_TRUE(
        within(1s, [&] { return get(s, "/api/v1/fabric/routes/z1-ctsw1") == routesBefore; }));
    EXPECT_TRUE(degradation(s, "z1-r002").value("inService", false));

    // Fail and repair: down, then back to not in service at racked (no traffic until it
    // has been burned in and validated again).
    ASSERT_EQ(act(s, "z1-r002", "fail", "PDU lost").status, 200);
    ASSERT_TRUE(within(1s, [&] { return rackState(s, "z1-r002") == "failed"; }));
    EXPECT_EQ(linkStates("z1-r002"), (std::map<std::string, int>{{"down", 18}}));
    ASSERT_EQ(act(s, "z1-r002", "repair").status, 200);
    ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);  // repair -> racked
    ASSERT_TRUE(within(1s, [&] { return rackState(s, "z1-r002") == "racked"; }));
    EXPECT_EQ(linkStates("z1-r002"), (std::map<std::string, int>{{"planned", 18}}));
}

// GET /api/v1/hall (11.9 MB of JSON at 98k) gzipped once per layout object, not per request:
// the gzipped form decodes to the plain one, has its own ETag (another representation), both
// ETags answer 304, and a rack transition makes a new layout whose gzipped form follows it.
TEST_F(LiveState, TheHallIsGzippedOncePerLayoutWithItsOwnETag) {
    auto& s = startLive();
    const std::vector<std::pair<std::string, std::string>> gzipped{
        {"Accept-Encoding", "gzip, deflate"}};
    auto plain = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"]);
    ASSERT_EQ(plain.status, 200) << plain.body;
    EXPECT_EQ(plain.headers.count("Content-Encoding"), 0u);
    auto gz = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"], "", gzipped);
    ASSERT_EQ(gz.status, 200);
    EXPECT_EQ(gz.headers["Content-Encoding"], "gzip");
    EXPECT_EQ(gz.headers["Vary"], "Accept-Encoding");
    EXPECT_EQ(gunzip(gz.body), plain.body);
    EXPECT_LT(gz.body.size() * 3, plain.body.size());
    EXPECT_NE(gz.headers["ETag"], plain.headers["ETag"]);
    EXPECT_EQ(gz.headers["ETag"],
              plain.headers["ETag"].substr(0, plain.headers["ETag"].size() - 1) + "-gz\"");
    auto again = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"], "", gzipped);
    EXPECT_EQ(again.body, gz.body);
    for (const auto& etag : {plain.headers["ETag"], gz.headers["ETag"]}) {
        auto h = gzipped;
        h.emplace_back("If-None-Match", etag);
        auto nm = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"], "", h);
        EXPECT_EQ(nm.status, 304) << etag;
        EXPECT_TRUE(nm.body.empty());
    }

    ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);
    ASSERT_TRUE(within(1s, [&] { return rackState(s, "z1-r002") == "delivered"; }));
    auto gz2 = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"], "", gzipped);
    auto plain2 = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"]);
    ASSERT_EQ(gz2.status, 200);
    EXPECT_NE(gz2.headers["ETag"], gz.headers["ETag"]);
    const auto hall2 = json::parse(gunzip(gz2.body), nullptr, false);
    ASSERT_TRUE(hall2.is_object());
    EXPECT_EQ(hall2, plain2.j());
    std::string state;
    for (const auto& r : hall2["racks"])
        if (r.value("name", "") == "z1-r002") state = r.value("state", "");
    EXPECT_EQ(state, "delivered");
    auto h = gzipped;
    h.emplace_back("If-None-Match", gz.headers["ETag"]);
    EXPECT_EQ(request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"], "", h).status, 200)
        << "the old layout's ETag must not answer 304";
}

// Issue 17 item 2: a switch's config with ?previous=true carries the config as it was before
// its last change: a drain reroutes the CTSW, and its previous config is exactly what GET
// returned before the drain, at an older version; the undrain brings the old text back and
// the previous one is then the drained one. A bad value is a 400 naming the parameter.
TEST_F(LiveState, ASwitchConfigCarriesItsPreviousVersion) {
    auto& s = startLive();
    bringIntoService(s, "z1-r001");
    bringIntoService(s, "z1-r002");
    ASSERT_TRUE(within(1s, [&] { return rackState(s, "z1-r002") == "in_service"; }));
    const std::string path = "/api/v1/fabric/config/z1-ctsw1";
    const auto before = get(s, path);
    EXPECT_FALSE(before.contains("previous")) << "only when asked";

    ASSERT_EQ(act(s, "z1-r002", "drain").status, 200);
    ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);  // draining -> drained
    json drained;
    ASSERT_TRUE(within(2s, [&] {
        drained = get(s, path + "?previous=true");
        return drained["config"] != before["config"];
    })) << drained.dump();
    EXPECT_GT(drained["version"].get<std::int64_t>(), before["version"].get<std::int64_t>());
    ASSERT_TRUE(drained["previous"].is_object()) << drained.dump();
    EXPECT_EQ(drained["previous"]["config"], before["config"]);
    EXPECT_LT(drained["previous"]["version"].get<std::int64_t>(),
              drained["version"].get<std::int64_t>());
    EXPECT_GE(drained["previous"]["version"].get<std::int64_t>(),
              before["version"].get<std::int64_t>());
    EXPECT_NE(drained["config"].get<std::string>().find("(drained)"), std::string::npos);

    ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);  // drained -> in_service
    json back;
    ASSERT_TRUE(within(2s, [&] {
        back = get(s, path + "?previous=true");
        return back["config"] == before["config"];
    })) << back.dump();
    ASSERT_TRUE(back["previous"].is_object()) << back.dump();
    EXPECT_EQ(back["previous"]["config"], drained["config"]);

    auto bad = request(s.port(), "GET", path + "?previous=yes", tokens_["viewer"]);
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_EQ(bad.j()["error"].value("path", ""), "previous") << bad.body;
    EXPECT_TRUE(get(s, path + "?previous=false").contains("config"));
}

// The fabric's router is rerouted in place (a copy per change was ~400 MB at 98k): requests
// read it under a shared lock while rack transitions reroute it. Two clients read config
// (with ?previous=true), degradation, topology and an export throughout drain/undrain rounds;
// every answer is whole (200, its fields there) and the last reroute is what they see after.
TEST_F(LiveState, FabricReadsRunBesideReroutesInPlace) {
    auto& s = startLive();
    bringIntoService(s, "z1-r001");
    bringIntoService(s, "z1-r002");
    std::atomic<bool> stop{false};
    std::atomic<int> reads{0}, bad{0};
    std::mutex badMutex;
    std::string firstBad;
    auto reader = [&] {
        const char* paths[] = {"/api/v1/fabric/config/z1-ctsw1?previous=true",
                               "/api/v1/fabric/degradation", "/api/v1/fabric/topology",
                               "/api/v1/fabric/export?format=frr"};
        for (int i = 0; !stop; ++i) {
            const std::string path = paths[i % 4];
            auto r = request(s.port(), "GET", path, tokens_["viewer"]);
            const auto j = r.j();
            const bool whole = r.status == 200 && j.is_object() &&
                               (j.contains("config") || j.contains("racks") ||
                                j.contains("switches") || j.contains("files"));
            if (!whole) {
                ++bad;
                std::lock_guard lock(badMutex);
                if (firstBad.empty())
                    firstBad = path + ": " + std::to_string(r.status) + " " + r.body.substr(0, 300);
            }
            ++reads;
        }
    };
    std::thread t1(reader), t2(reader);
    for (int round = 0; round < 3; ++round) {
        ASSERT_EQ(act(s, "z1-r002", "drain").status, 200);
        ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);  // draining -> drained
        ASSERT_TRUE(
            within(2s, [&] { return !degradation(s, "z1-r002").value("inService", true); }));
        ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);  // drained -> in_service
        ASSERT_TRUE(
            within(2s, [&] { return degradation(s, "z1-r002").value("inService", false); }));
    }
    stop = true;
    t1.join();
    t2.join();
    EXPECT_EQ(bad.load(), 0) << firstBad;
    EXPECT_GT(reads.load(), 12);
    EXPECT_EQ(bundle(s, "z1-r002-rtsw", "z1-ctsw1").value("up", -1), 1)
        << bundle(s, "z1-r002-rtsw", "z1-ctsw1").dump();
    const auto cfg = get(s, "/api/v1/fabric/config/z1-ctsw1?previous=true");
    EXPECT_TRUE(cfg["previous"].is_object()) << cfg.dump();
    EXPECT_EQ(cfg.value("config", ""),
              get(s, "/api/v1/fabric/config/z1-ctsw1").value("config", "x"));
}

TEST_F(LiveState, ASecondLoomdOnTheSameDatabaseSeesEveryChangeWithinASecond) {
    auto& a = startLive();
    auto& b = startLive();
    WsClient c;
    c.open(b.port(), tokens_["viewer"]);
    c.send({{"op", "subscribe"}, {"topics", {"inventory"}}});
    bringIntoService(a, "z1-r003");
    auto t = within(1s, [&] { return rackState(b, "z1-r003") == "in_service"; });
    ASSERT_TRUE(t) << "second loomd still says " << rackState(b, "z1-r003");
    EXPECT_TRUE(
        within(1s, [&] { return bundle(b, "z1-r003-rtsw", "z1-ctsw2").value("up", -1) == 1; }));
    ASSERT_EQ(act(b, "z1-r003", "fail", "smoke").status, 200);
    EXPECT_TRUE(within(1s, [&] { return rackState(a, "z1-r003") == "failed"; }));
    EXPECT_TRUE(
        within(1s, [&] { return bundle(a, "z1-r003-rtsw", "z1-ctsw2").value("up", -1) == 0; }));
    // Both refresh on the same NOTIFY, each at its own pace: within a second they agree.
    EXPECT_TRUE(within(1s, [&] { return get(a, "/api/v1/hall") == get(b, "/api/v1/hall"); }))
        << get(a, "/api/v1/hall").dump() << "\n"
        << get(b, "/api/v1/hall").dump();
    EXPECT_TRUE(within(1s, [&] {
        return get(a, "/api/v1/fabric/degradation") == get(b, "/api/v1/fabric/degradation");
    }));
}

TEST_F(LiveState, ARestartChangesNothingAUserCanSee) {
    auto& s = startLive();
    bringIntoService(s, "z1-r001");
    bringIntoService(s, "z1-r002");
    bringIntoService(s, "z1-r003");
    ASSERT_EQ(act(s, "z1-r002", "drain").status, 200);
    ASSERT_EQ(act(s, "z1-r002", "advance").status, 200);
    ASSERT_EQ(act(s, "z1-r003", "fail", "test").status, 200);
    ASSERT_TRUE(within(1s, [&] { return rackState(s, "z1-r003") == "failed"; }));
    ASSERT_TRUE(
        within(1s, [&] { return bundle(s, "z1-r003-rtsw", "z1-ctsw1").value("up", -1) == 0; }));
    auto views = [&](Server& x) {
        return json{{"hall", get(x, "/api/v1/hall")},
                    {"racks", get(x, "/api/v1/racks?limit=1000")["items"]},
                    {"hosts", get(x, "/api/v1/hosts?limit=1000")["items"]},
                    {"switches", get(x, "/api/v1/switches?limit=1000")["items"]},
                    {"links", get(x, "/api/v1/links?limit=1000")["items"]},
                    {"topology", get(x, "/api/v1/fabric/topology")},
                    {"degradation", get(x, "/api/v1/fabric/degradation")["racks"]},
                    {"routes", get(x, "/api/v1/fabric/routes/z1-ctsw1")}};
    };
    const auto before = views(s);
    servers_.back()->stop();
    auto& fresh = startLive();
    const auto after = views(fresh);
    for (const auto& [k, v] : before.items()) EXPECT_EQ(v, after[k]) << k;
}

// Random operator sequences over HTTP; afterwards the stored link states are what the racks'
// states say (link_service.hpp), and the server's routes equal a router built from scratch.
TEST_F(LiveState, RandomActionSequencesLeaveLinksAndRoutesWhereTheRacksSay) {
    auto& s = startLive();
    std::mt19937_64 rng(11);
    const std::vector<std::string> racks{"z1-r001", "z1-r002", "z1-r003", "z1-r004"};
    const std::vector<std::string> actions{"advance", "advance", "advance",
                                           "drain",   "fail",    "repair"};
    int applied = 0;
    for (int i = 0; i < 120; ++i) {
        auto r = act(s, racks[rng() % racks.size()], actions[rng() % actions.size()], "random");
        ASSERT_TRUE(r.status == 200 || r.status == 409) << r.status << " " << r.body;
        applied += r.status == 200;
    }
    EXPECT_GT(applied, 30);
    auto consistent = [&] {
        auto conn = connect();
        auto inv = db::loadInventory(conn);
        if (!inv) return false;
        auto want = provisioning::desiredLinkStates(provisioning::LinkOwners::of(*inv),
                                                    provisioning::rackStatesOf(*inv));
        for (std::size_t i = 0; i < inv->links.size(); ++i)
            if (inv->links[i].state != provisioning::linkStateName(want[i])) return false;
        return true;
    };
    ASSERT_TRUE(within(2s, consistent)) << "stored link states do not follow the racks";
    auto fresh = storedStatesRouter();
    ASSERT_TRUE(fresh);
    expectRoutesOf(s, *fresh);
}

// A switch follows its rack in the fabric as its cables do (review of issue 35): a failed rack's
// RTSW is down, a drained rack's drained, one of a rack not yet in service not in service, in
// GET /fabric/topology (`up` and `state`) as in GET /switches; the routers take it out (its own
// routes lose even its rack's prefix) exactly as a router built anew from the stored states
// does; and a CTSW's config ?previous=true is still what was served before the failure (the
// undo steps carry the switches' states, not only the cables').
TEST_F(LiveState, ARacksSwitchIsOutOfTheFabricWhileItsRackIs) {
    auto& s = startLive();
    bringIntoService(s, "z1-r001");
    bringIntoService(s, "z1-r002");
    bringIntoService(s, "z1-r003");
    auto fabricSwitch = [&](const std::string& name) {
        const auto topo = get(s, "/api/v1/fabric/topology");
        for (const auto& x : topo["switches"])
            if (x.value("name", "") == name)
                return json{{"up", x.value("up", false)}, {"state", x.value("state", "?")}};
        return json();
    };
    const json up{{"up", true}, {"state", "up"}};
    ASSERT_TRUE(within(2s, [&] { return fabricSwitch("z1-r003-rtsw")["up"] == true; }))
        << fabricSwitch("z1-r003-rtsw").dump();
    EXPECT_EQ(fabricSwitch("z1-r003-rtsw"), up);
    const std::string cfgPath = "/api/v1/fabric/config/z1-ctsw1";
    const auto before = get(s, cfgPath);

    ASSERT_EQ(act(s, "z1-r002", "fail", "PDU lost").status, 200);
    const json down{{"up", false}, {"state", "down"}};
    EXPECT_TRUE(within(2s, [&] { return fabricSwitch("z1-r002-rtsw") == down; }))
        << fabricSwitch("z1-r002-rtsw").dump();
    EXPECT_EQ(get(s, "/api/v1/switches/z1-r002-rtsw").value("state", ""), "failed");
    // Its own routing table: nothing, not even its own rack's prefix.
    const auto routes = get(s, "/api/v1/fabric/routes/z1-r002-rtsw").dump();
    EXPECT_EQ(routes.find("\"local\""), std::string::npos) << routes;
    EXPECT_NE(get(s, "/api/v1/fabric/routes/z1-r001-rtsw").dump().find("\"local\""),
              std::string::npos);
    // The CTSW's previous config is the one served before the failure.
    json now;
    ASSERT_TRUE(within(2s, [&] {
        now = get(s, cfgPath + "?previous=true");
        return now["config"] != before["config"];
    })) << now.dump();
    ASSERT_TRUE(now["previous"].is_object()) << now.dump();
    EXPECT_EQ(now["previous"]["config"], before["config"]);

    ASSERT_EQ(act(s, "z1-r003", "drain").status, 200);
    ASSERT_EQ(act(s, "z1-r003", "advance").status, 200);  // draining -> drained
    EXPECT_TRUE(within(2s, [&] {
        return fabricSwitch("z1-r003-rtsw") == json{{"up", false}, {"state", "drained"}};
    })) << fabricSwitch("z1-r003-rtsw").dump();
    EXPECT_EQ(fabricSwitch("z1-r004-rtsw"), (json{{"up", false}, {"state", "not in service"}}));
    EXPECT_EQ(fabricSwitch("z1-r001-rtsw"), up);
    EXPECT_EQ(fabricSwitch("z1-ctsw1"), up);
    // The switches alone (what loom-console asks again for their words): the same switches,
    // no bundles; a `bundles` other than true/false is a 400 naming it.
    const auto whole = get(s, "/api/v1/fabric/topology");
    const auto alone = get(s, "/api/v1/fabric/topology?bundles=false");
    EXPECT_EQ(alone["switches"], whole["switches"]);
    EXPECT_EQ(alone["bundles"], json::array());
    EXPECT_FALSE(whole["bundles"].empty());
    const auto bad =
        request(s.port(), "GET", "/api/v1/fabric/topology?bundles=no", tokens_["viewer"]);
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_EQ(bad.j()["error"].value("path", ""), "bundles") << bad.body;

    // Every switch's routes are those of a router built anew from the stored states.
    auto fresh = storedStatesRouter();
    ASSERT_TRUE(fresh);
    EXPECT_FALSE(fresh->topology().switchUp[fresh->topology().findSwitch("z1-r002-rtsw")]);
    expectRoutesOf(s, *fresh);
}

// The leader's live-state sync (link_service.hpp, follow_rack.hpp) repairs links and switches
// that do not follow their racks in one transaction: a reader never sees the cables follow
// while the switch does not. Both rows carry the same xmin, one `live` NOTIFY announces them,
// and loom_live_link_fixes_total counts each kind (kind="link" | kind="switch").
TEST_F(LiveState, TheLeadersSyncFixesLinksAndSwitchesInOneTransaction) {
    auto& s = startLive();
    bringIntoService(s, "z1-r001");
    const std::string link = "z1-r001-rtsw/p17--z1-ctsw1/p1";
    auto conn = connect();
    auto stateOf = [&](const char* table, const std::string& name) {
        pqxx::work tx(db::native(conn));
        auto r = tx.exec_params(
            std::string("SELECT state, xmin::text FROM ") + table + " WHERE name = $1", name);
        return r.empty() ? std::pair<std::string, std::string>{}
                         : std::pair<std::string, std::string>{r[0][0].c_str(), r[0][1].c_str()};
    };
    ASSERT_TRUE(within(2s, [&] {
        return stateOf("switches", "z1-ctsw1").first == "in_service" &&
               stateOf("links", link).first == "active";
    }));
    auto fixes = [&](const std::string& kind) {
        const auto body = request(s.port(), "GET", "/metrics", tokens_["viewer"]).body;
        const std::string series = "loom_live_link_fixes_total{kind=\"" + kind + "\"} ";
        const auto at = body.find(series);
        return at == std::string::npos ? -1.0 : std::stod(body.substr(at + series.size()));
    };
    const double linksBefore = fixes("link"), switchesBefore = fixes("switch");
    EXPECT_GE(linksBefore, 0) << "no kind=\"link\" series";
    EXPECT_GE(switchesBefore, 0) << "no kind=\"switch\" series";

    // Every `live` NOTIFY from now on, but the test's own.
    std::atomic<int> announced{0};
    db::Notifier listener(
        database(), std::string(db::kStreamChannel),
        [&](std::string_view topic, std::string_view payload) {
            if (topic == db::kLiveTopic && payload.find("\"test\"") == std::string_view::npos)
                ++announced;
        });
    ASSERT_TRUE(within(5s, [&] { return listener.connected(); }));
    // What a crash or an older loomd could leave behind: the CTSW and a cable of a rack in
    // service stored as not in service.
    {
        pqxx::work tx(db::native(conn));
        tx.exec_params("UPDATE switches SET state = 'planned' WHERE name = 'z1-ctsw1'");
        tx.exec_params("UPDATE links SET state = 'planned' WHERE name = $1", link);
        tx.exec_params("SELECT pg_notify($1, $2)", std::string(db::kStreamChannel),
                       std::string(db::kLiveTopic) + "\n{\"source\":\"test\"}");
        tx.commit();
    }
    ASSERT_TRUE(within(3s,
                       [&] {
                           return stateOf("switches", "z1-ctsw1").first == "in_service" &&
                                  stateOf("links", link).first == "active";
                       }))
        << stateOf("switches", "z1-ctsw1").first << " " << stateOf("links", link).first;
    EXPECT_EQ(stateOf("switches", "z1-ctsw1").second, stateOf("links", link).second)
        << "the switch and the cable were written by different transactions";
    std::this_thread::sleep_for(500ms);  // any second NOTIFY of the fix would be here by now
    EXPECT_EQ(announced.load(), 1);
    EXPECT_EQ(fixes("link"), linksBefore + 1);
    EXPECT_EQ(fixes("switch"), switchesBefore + 1);
    listener.stop();
}

TEST_F(LiveState, ReadyMeansTheLiveStateIsLoaded) {
    auto& s = startLive();
    EXPECT_TRUE(s.services().liveReady());
    EXPECT_TRUE(s.services().layout());
    auto r = request(s.port(), "GET", "/readyz");
    EXPECT_EQ(r.status, 200) << r.body;
    // Ingest right after ready lands (no "applied: 0, unknown_host" window).
    auto t = request(s.port(), "POST", "/api/v1/telemetry", tokens_["operator"],
                     "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\",Hostname=\"z1-r002-h1\"} 97\n");
    ASSERT_EQ(t.status, 200) << t.body;
    EXPECT_EQ(t.j().value("applied", 0), 1) << t.body;
}

}  // namespace
}  // namespace loom::backend::testing
