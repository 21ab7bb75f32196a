// End-to-end tests of loomd's server core: a real Server on port 0 over a real PostgreSQL
// (tests/support harness), driven by a real Beast HTTP client and a real WebSocket client.
#include "beast_client.hpp"

#include "loom/db/event_repo.hpp"
#include "loom/db/notify.hpp"
#include "loom/inventory/natural_order.hpp"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

namespace loom::backend {
namespace {

// The fixture's HTTP/WebSocket clients and namespace aliases (beast, http, net, tcp, json).
using namespace testing;
using WsClientT = WsClient;

// The shared fixture (server_fixture.hpp); the apply test starts from an empty inventory.
class ServerTest : public ServerFixture {
protected:
    int sampleRacks() const override {
        return std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()).find("Apply") !=
                       std::string::npos
                   ? 0
                   : 4;
    }
};

TEST_F(ServerTest, HealthAndReadinessNeedNoToken) {
    auto& s = startServer();
    EXPECT_EQ(request(s.port(), "GET", "/healthz").status, 200);
    auto ready = request(s.port(), "GET", "/readyz");
    EXPECT_EQ(ready.status, 200) << ready.body;
    EXPECT_GE(ready.j()["schemaVersion"].get<int>(), 2);
}

// The auth matrix over every route is auth_matrix_test.cpp.

TEST_F(ServerTest, BadInputGetsFourHundredsWithPathAndMessage) {
    ServerConfig cfg;
    auto& s = startServer(cfg);
    auto op = tokens_["operator"];
    struct Case {
        std::string method, target, body, contentType;
        int status;
        std::string expectInBody;
    };
    std::vector<Case> cases{
        {"POST", "/api/v1/apply", "{\"a\": [1, 2", "application/json", 400, "\"line\""},
        {"POST", "/api/v1/apply", "a: [1, 2\nb: c", "application/yaml", 400, "\"line\""},
        {"POST", "/api/v1/apply", "", "application/json", 400, "body"},
        {"PATCH", "/api/v1/racks/z1-r001", R"({"labels": {"a": 5}})", "application/json", 400,
         "labels.a"},
        {"PATCH", "/api/v1/racks/z1-r001", R"({"labels": "x"})", "application/json", 400,
         "\"path\":\"labels\""},
        {"PATCH", "/api/v1/racks/z1-r001", R"({"state": "in_service"})", "application/json", 400,
         "cannot be patched"},
        {"PATCH", "/api/v1/racks/z1-r001", "labels:\n  a: [1\n", "application/yaml", 400,
         "line"},
        {"GET", "/api/v1/widgets", "", "", 404, "no route"},
        {"GET", "/api/v1/racks/nope", "", "", 404, "not found"},
        {"GET", "/api/v1/racks?limit=abc", "", "", 400, "limit"},
        {"GET", "/api/v1/racks?limit=100000", "", "", 400, "5000"},
        {"GET", "/api/v1/racks?colour=red", "", "", 400, "unknown filter 'colour'"},
        {"GET", "/api/v1/racks?cursor=zz", "", "", 400, "cursor"},
        {"DELETE", "/api/v1/racks", "", "", 405, "not allowed"},
        {"GET", "/api/v1/fabric/routes/no-such-switch", "", "", 404, "no-such-switch"},
        {"GET", "/api/v1/fabric/export?format=pdf", "", "", 400, "format"},
        {"POST", "/api/v1/fabric/impact", R"({"hosts": [1]})", "application/json", 400,
         "hosts[0]"},
    };
    for (auto& c : cases) {
        std::vector<std::pair<std::string, std::string>> h;
        if (!c.contentType.empty()) h.emplace_back("Content-Type", c.contentType);
        auto r = request(s.port(), c.method, c.target, op, c.body, h);
        EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << " " << c.body << ": "
                                      << r.body;
        EXPECT_NE(r.body.find(c.expectInBody), std::string::npos)
            << c.method << " " << c.target << ": " << r.body;
        auto j = r.j();
        EXPECT_TRUE(j.contains("error") && j["error"].contains("code") &&
                    j["error"].contains("message"))
            << r.body;
    }
    // Oversize: 9 MiB on an 8 MiB route, refused from Content-Length before the body is read.
    std::string big(9u << 20, 'x');
    auto r = request(s.port(), "PATCH", "/api/v1/racks/z1-r001", op, big,
                     {{"Content-Type", "application/json"}});
    EXPECT_EQ(r.status, 413);
    EXPECT_NE(r.body.find("8388608"), std::string::npos) << r.body;
    // The server survived all of it.
    EXPECT_EQ(request(s.port(), "GET", "/healthz").status, 200);
}

TEST_F(ServerTest, ETagAndIfMatch) {
    auto& s = startServer();
    auto op = tokens_["operator"];
    auto g = request(s.port(), "GET", "/api/v1/racks/z1-r002", op);
    ASSERT_EQ(g.status, 200) << g.body;
    std::string etag = g.headers["ETag"];
    EXPECT_EQ(etag, "\"" + std::to_string(g.j()["resourceVersion"].get<long>()) + "\"");
    EXPECT_EQ(g.j()["zone"], "z1");
    auto p = request(s.port(), "PATCH", "/api/v1/racks/z1-r002", op,
                     R"({"labels":{"team":"ml"}})", {{"If-Match", etag}});
    ASSERT_EQ(p.status, 200) << p.body;
    EXPECT_EQ(p.j()["labels"]["team"], "ml");
    EXPECT_NE(p.headers["ETag"], etag);
    auto stale = request(s.port(), "PATCH", "/api/v1/racks/z1-r002", op,
                         R"({"labels":{"team":"infra"}})", {{"If-Match", etag}});
    EXPECT_EQ(stale.status, 412) << stale.body;
    EXPECT_EQ(stale.j()["error"]["code"], "precondition_failed");
    // The label filter sees the change; null removes a label.
    auto l = request(s.port(), "GET", "/api/v1/racks?label.team=ml", op);
    ASSERT_EQ(l.status, 200);
    ASSERT_EQ(l.j()["items"].size(), 1u);
    auto rm = request(s.port(), "PATCH", "/api/v1/racks/z1-r002", op, R"({"labels":{"team":null}})");
    ASSERT_EQ(rm.status, 200) << rm.body;
    EXPECT_FALSE(rm.j()["labels"].contains("team"));
    // change_log has the actor.
    auto conn = connect();
    auto actor = conn.queryValue(
        "SELECT actor FROM change_log WHERE kind = 'rack' AND name = 'z1-r002' ORDER BY id DESC "
        "LIMIT 1");
    ASSERT_TRUE(actor && actor->has_value());
    EXPECT_EQ(**actor, "operator-token");
}

TEST_F(ServerTest, CursorPaginationVisitsEveryObjectOnce) {
    auto& s = startServer();
    auto v = tokens_["viewer"];
    std::set<std::string> seen;
    std::string cursor, last;
    int pages = 0;
    for (;;) {
        auto r = request(s.port(), "GET",
                         "/api/v1/gpus?limit=10" + (cursor.empty() ? "" : "&cursor=" + cursor), v);
        ASSERT_EQ(r.status, 200) << r.body;
        auto j = r.j();
        for (auto& item : j["items"]) {
            auto name = item["name"].get<std::string>();
            if (!last.empty()) EXPECT_TRUE(naturalLess(last, name)) << last << " " << name;
            last = name;
            EXPECT_TRUE(seen.insert(name).second);
        }
        ++pages;
        if (!j.contains("nextCursor")) break;
        cursor = j["nextCursor"];
    }
    EXPECT_EQ(seen.size(), 64u);
    EXPECT_EQ(pages, 7);
    auto f = request(s.port(), "GET", "/api/v1/gpus?host=z1-r001-h0&index=3", v);
    ASSERT_EQ(f.status, 200);
    ASSERT_EQ(f.j()["items"].size(), 1u);
    EXPECT_EQ(f.j()["items"][0]["name"], "z1-r001-h0-gpu3");
    // NetBox's lookups (issue 12 item 4): field__op, values as parameters, errors naming the field.
    auto count = [&](const std::string& q) -> long {
        auto r = request(s.port(), "GET", "/api/v1/" + q, v);
        EXPECT_EQ(r.status, 200) << q << ": " << r.body;
        return r.status == 200 ? static_cast<long>(r.j()["items"].size()) : -1;
    };
    EXPECT_EQ(count("gpus?limit=1000&name__ic=R001-H0"), 8);
    EXPECT_EQ(count("gpus?limit=1000&name__isw=z1-r002"), 16);
    EXPECT_EQ(count("gpus?limit=1000&name__iew=GPU7"), 8);
    EXPECT_EQ(count("gpus?limit=1000&index__gte=6"), 16);
    EXPECT_EQ(count("gpus?limit=1000&index__lt=2&host=z1-r001-h0"), 2);
    EXPECT_EQ(count("gpus?limit=1000&index__n=0"), 56);
    EXPECT_EQ(count("gpus?limit=1000&name__nic=gpu1"), 56);
    EXPECT_EQ(count("gpus?limit=1000&name__ie=Z1-R001-H0-GPU3"), 1);
    EXPECT_EQ(count("gpus?limit=1000&name__ic=%25"), 0) << "% is a character, not a wildcard";
    EXPECT_EQ(count("gpus?limit=1000&name__ic=_"), 0) << "_ is a character, not a wildcard";
    EXPECT_EQ(count("gpus?limit=1000&serial__empty=false") + count("gpus?limit=1000&serial__empty=true"), 64);
    auto badOp = request(s.port(), "GET", "/api/v1/gpus?name__regex=x", v);
    EXPECT_EQ(badOp.status, 400);
    EXPECT_EQ(badOp.j()["error"].value("path", ""), "name__regex") << badOp.body;
    EXPECT_NE(badOp.body.find("isw"), std::string::npos) << badOp.body;
    EXPECT_EQ(request(s.port(), "GET", "/api/v1/gpus?serial__empty=maybe", v).status, 400);
    EXPECT_EQ(request(s.port(), "GET", "/api/v1/gpus?bogus__ic=1", v).status, 400);
    auto y = request(s.port(), "GET", "/api/v1/racks?limit=1", v, "", {{"Accept", "application/yaml"}});
    EXPECT_EQ(y.status, 200);
    EXPECT_NE(y.body.find("items:"), std::string::npos) << y.body;
}

// Relation filters and repeated filters (issue 12 item 4), checked against joins the test does
// itself over the full lists, so no count is written down by hand.
TEST_F(ServerTest, RelationFiltersMatchTheJoinsAndRepeatedFiltersAreAlternatives) {
    auto& s = startServer();
    auto v = tokens_["viewer"];
    auto list = [&](const std::string& q) {
        auto sep = q.find('?') == std::string::npos ? "?" : "&";
        auto r = request(s.port(), "GET", "/api/v1/" + q + sep + "limit=5000", v);
        EXPECT_EQ(r.status, 200) << q << ": " << r.body;
        std::vector<nlohmann::json> out;
        if (r.status == 200) {
            auto body = r.j();
            for (auto& i : body["items"]) out.push_back(i);
        }
        return out;
    };
    auto names = [](const std::vector<nlohmann::json>& items) {
        std::set<std::string> n;
        for (auto& i : items) n.insert(i["name"].get<std::string>());
        return n;
    };
    const auto hosts = list("hosts"), gpus = list("gpus"), ports = list("ports"), links = list("links");
    ASSERT_FALSE(links.empty());
    std::map<std::string, std::string> rackOfHost, deviceOfPort;
    for (auto& h : hosts) rackOfHost[h["name"]] = h["rack"];
    for (auto& p : ports) deviceOfPort[p["name"]] = p["device"];

    // gpus?rack= is the GPUs whose host is in the rack.
    std::set<std::string> want;
    for (auto& g : gpus)
        if (rackOfHost[g["host"]] == "z1-r002") want.insert(g["name"]);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(names(list("gpus?rack=z1-r002")), want);
    std::map<std::string, std::string> zoneOfRack;
    for (auto& r : list("racks")) zoneOfRack[r["name"]] = r["zone"];
    std::set<std::string> inZ1;  // the fixture has one zone; zone=no-such-zone below is empty
    for (auto& g : gpus)
        if (zoneOfRack[rackOfHost[g["host"]]] == "z1") inZ1.insert(g["name"]);
    EXPECT_FALSE(inZ1.empty());
    EXPECT_EQ(names(list("gpus?zone=z1")), inZ1);
    EXPECT_TRUE(list("gpus?zone=no-such-zone").empty());

    // Every port's peer, peerPort and link are the other end of its cable; ports?peer= and
    // links?switch= agree with that join.
    std::map<std::string, std::pair<std::string, std::string>> peerOf;  // port -> peer port, link
    for (auto& l : links) {
        peerOf[l["aPort"]] = {l["bPort"], l["name"]};
        peerOf[l["bPort"]] = {l["aPort"], l["name"]};
    }
    int cabled = 0;
    for (auto& p : ports) {
        auto it = peerOf.find(p["name"]);
        if (it == peerOf.end()) {
            EXPECT_TRUE(p["peer"].is_null()) << p.dump();
            continue;
        }
        ++cabled;
        EXPECT_EQ(p["peerPort"], it->second.first) << p.dump();
        EXPECT_EQ(p["link"], it->second.second) << p.dump();
        EXPECT_EQ(p["peer"], deviceOfPort[it->second.first]) << p.dump();
    }
    EXPECT_EQ(cabled, static_cast<int>(2 * links.size()));
    const std::string rtsw = "z1-r001-rtsw";
    std::set<std::string> rtswLinks, rtswPeers, ctswSide;
    for (auto& l : links) {
        auto a = deviceOfPort[l["aPort"]], b = deviceOfPort[l["bPort"]];
        if (a != rtsw && b != rtsw) continue;
        rtswLinks.insert(l["name"]);
        rtswPeers.insert(a == rtsw ? l["bPort"] : l["aPort"]);
    }
    ASSERT_FALSE(rtswLinks.empty());
    EXPECT_EQ(names(list("links?switch=" + rtsw)), rtswLinks);
    EXPECT_EQ(names(list("links?device=" + rtsw)), rtswLinks);
    EXPECT_EQ(names(list("ports?peer=" + rtsw)), rtswPeers);
    EXPECT_EQ(list("links?switch__n=" + rtsw).size(), links.size() - rtswLinks.size());
    // The RTSW's uplinks: its ports whose peer is a CTSW.
    for (auto& p : list("ports?device=" + rtsw + "&peer__ic=ctsw")) {
        EXPECT_NE(p["peer"].get<std::string>().find("ctsw"), std::string::npos) << p.dump();
        ctswSide.insert(p["peerPort"]);
    }
    EXPECT_FALSE(ctswSide.empty());
    // A pattern on the peer is tested per listed port, an exact name through the peer's own
    // ports: both give exactly the join's answer, alone, negated and combined.
    std::set<std::string> peerCtsw, rtswOrCtswPeers, twoRacks;
    for (auto& p : ports)
        if (!p["peer"].is_null() && p["peer"].get<std::string>().find("ctsw") != std::string::npos)
            peerCtsw.insert(p["name"]);
    ASSERT_FALSE(peerCtsw.empty());
    EXPECT_EQ(names(list("ports?peer__ic=CTSW")), peerCtsw);
    EXPECT_EQ(list("ports?peer__nic=ctsw").size(), ports.size() - peerCtsw.size());
    const auto rtswPorts = static_cast<std::size_t>(std::count_if(
        ports.begin(), ports.end(), [&](auto& p) { return p["device"] == rtsw; }));
    EXPECT_EQ(list("ports?device=" + rtsw + "&peer__nic=ctsw").size(), rtswPorts - ctswSide.size());
    EXPECT_EQ(names(list("ports?peer__ic=ctsw&peer__ic=" + rtsw)).size(),
              peerCtsw.size() + rtswPeers.size());
    const std::string ctsw = deviceOfPort[*ctswSide.begin()];
    for (auto& p : ports)
        if (p["peer"] == rtsw || p["peer"] == ctsw) rtswOrCtswPeers.insert(p["name"]);
    EXPECT_EQ(names(list("ports?peer=" + rtsw + "&peer=" + ctsw)), rtswOrCtswPeers);
    EXPECT_EQ(list("ports?peer__n=" + rtsw + "&peer__n=" + ctsw).size(),
              ports.size() - rtswOrCtswPeers.size());
    std::set<std::string> atEither;
    for (auto& l : links)
        if (deviceOfPort[l["aPort"]] == rtsw || deviceOfPort[l["bPort"]] == rtsw ||
            deviceOfPort[l["aPort"]] == ctsw || deviceOfPort[l["bPort"]] == ctsw)
            atEither.insert(l["name"]);
    EXPECT_EQ(names(list("links?switch=" + rtsw + "&switch=" + ctsw)), atEither);
    for (auto& g : gpus)
        if (rackOfHost[g["host"]] == "z1-r001" || rackOfHost[g["host"]] == "z1-r003")
            twoRacks.insert(g["name"]);
    EXPECT_EQ(names(list("gpus?rack=z1-r001&rack=z1-r003")), twoRacks);
    EXPECT_EQ(names(list("gpus?rack=z1-r003&rack=z1-r001&rack=z1-r001")), twoRacks);
    auto one = *ctswSide.begin();
    auto byPeerPort = list("ports?peerPort=" + one);
    ASSERT_EQ(byPeerPort.size(), 1u);
    EXPECT_EQ(byPeerPort[0]["device"], rtsw);
    EXPECT_EQ(list("ports?link=" + byPeerPort[0]["link"].get<std::string>()).size(), 2u);

    // A filter given twice is an alternative; a negated one given twice excludes both.
    EXPECT_EQ(names(list("racks?name=z1-r001&name=z1-r003")),
              (std::set<std::string>{"z1-r001", "z1-r003"}));
    EXPECT_EQ(list("gpus?index__n=0&index__n=1").size(), gpus.size() * 6 / 8);
    EXPECT_EQ(list("gpus?rack=z1-r001&rack=z1-r002&index=0").size(), 4u);
    auto empty = request(s.port(), "GET", "/api/v1/gpus?rack__empty=true", v);
    EXPECT_EQ(empty.status, 400) << empty.body;
    EXPECT_EQ(empty.j()["error"].value("path", ""), "rack__empty");
    auto unknown = request(s.port(), "GET", "/api/v1/ports?bogus=1", v);
    EXPECT_EQ(unknown.status, 400);
    EXPECT_NE(unknown.body.find("peer"), std::string::npos)
        << "the valid filters are listed: " << unknown.body;
}

// health=ok|degraded|failed (and __n) partitions the GPUs and links exactly as each object's
// own `health` field says, for events of both severities and of several kinds on one GPU.
TEST_F(ServerTest, HealthFiltersPartitionAsTheHealthFieldSays) {
    auto& s = startServer();
    auto v = tokens_["viewer"];
    auto list = [&](const std::string& q) {
        auto r = request(s.port(), "GET", "/api/v1/" + q + "&limit=5000", v);
        EXPECT_EQ(r.status, 200) << q << ": " << r.body;
        std::map<std::string, std::string> out;  // name -> its health field
        if (r.status == 200) {
            auto body = r.j();
            for (auto& i : body["items"]) out[i["name"]] = i.value("health", "");
        }
        return out;
    };
    auto conn = connect();
    auto event = [](std::string kind, std::string severity, std::string location) {
        db::EventRecord e;
        e.kind = std::move(kind);
        e.severity = std::move(severity);
        e.location = std::move(location);
        e.openedAtMs = 1'700'000'000'000;
        return e;
    };
    // z1-r001's cables in service: a planned link is `not in service` whatever is open on it.
    ASSERT_TRUE(conn.exec("UPDATE racks SET state = 'in_service' WHERE name = 'z1-r001'"));
    ASSERT_TRUE(conn.exec("UPDATE links SET state = 'active' WHERE name LIKE '%z1-r001-rtsw/%'"));
    const auto allLinks = list("links?name__n=none");
    ASSERT_FALSE(allLinks.empty());
    const std::string link = allLinks.begin()->first;
    ASSERT_EQ(allLinks.at(link), "up") << link;
    auto ids = db::insertEvents(conn, {event("gpu_ecc_sbe", "warning", "z1-r001-h0-gpu1"),
                                      event("gpu_xid", "critical", "z1-r001-h0-gpu2"),
                                      event("gpu_ecc_sbe", "warning", "z1-r001-h0-gpu3"),
                                      event("gpu_xid", "critical", "z1-r001-h0-gpu3"),
                                      event("link_errors", "warning", link)});
    ASSERT_TRUE(ids) << ids.error().toString();
    auto closedWarning = event("gpu_ecc_sbe", "warning", "z1-r001-h0-gpu4");
    ASSERT_TRUE(db::insertEvents(conn, {closedWarning}));
    ASSERT_TRUE(db::closeEvents(
        conn, {{.kind = "gpu_ecc_sbe", .location = "z1-r001-h0-gpu4", .closedAtMs = 1'700'000'001'000}}));

    const auto all = list("gpus?name__n=none");
    const auto failed = list("gpus?health=failed"), degraded = list("gpus?health=degraded"),
               ok = list("gpus?health=ok"), notOk = list("gpus?health__n=ok");
    using Names = std::set<std::string>;
    auto keys = [](const std::map<std::string, std::string>& m) {
        Names n;
        for (auto& [k, _] : m) n.insert(k);
        return n;
    };
    EXPECT_EQ(keys(failed), (Names{"z1-r001-h0-gpu2", "z1-r001-h0-gpu3"}));
    EXPECT_EQ(keys(degraded), (Names{"z1-r001-h0-gpu1"}));
    EXPECT_EQ(keys(notOk), (Names{"z1-r001-h0-gpu1", "z1-r001-h0-gpu2", "z1-r001-h0-gpu3"}));
    EXPECT_EQ(ok.size() + degraded.size() + failed.size(), all.size());
    EXPECT_TRUE(ok.contains("z1-r001-h0-gpu4")) << "a closed event does not count";
    for (auto* part : {&failed, &degraded, &ok})
        for (auto& [name, health] : *part) EXPECT_EQ(health, all.at(name)) << name;
    for (auto& [name, health] : failed) EXPECT_EQ(health, "failed") << name;
    for (auto& [name, health] : ok) EXPECT_EQ(health, "ok") << name;
    EXPECT_EQ(keys(list("links?health=degraded")), (Names{link}));
    EXPECT_EQ(list("links?health__n=degraded").size(), allLinks.size() - 1);
    // The link's state comes first (docs/api.md, "Link health"): every link is in one word.
    const auto notInService = list("links?health=not+in+service"), up = list("links?health=up");
    EXPECT_FALSE(notInService.empty());
    EXPECT_FALSE(up.empty());
    for (auto& [name, health] : notInService) EXPECT_EQ(health, "not in service") << name;
    for (auto& [name, health] : up) EXPECT_EQ(health, "up") << name;
    EXPECT_EQ(notInService.size() + up.size() + 1, allLinks.size());
    auto bad = request(s.port(), "GET", "/api/v1/gpus?health=broken", v);
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_EQ(bad.j()["error"].value("path", ""), "health") << bad.body;
}

TEST_F(ServerTest, ApplyDryRunAndApplyOverHttp) {
    auto& s = startServer();
    auto op = tokens_["operator"];
    // dev-small from the repository, if the spec parser and the file are there.
    std::ifstream f(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml");
    if (!f) GTEST_SKIP() << "configs/clusters/dev-small.yaml not present";
    std::string spec((std::istreambuf_iterator<char>(f)), {});
    auto dry = request(s.port(), "POST", "/api/v1/apply?dryRun=true", op, spec,
                       {{"Content-Type", "application/yaml"}});
    ASSERT_EQ(dry.status, 200) << dry.body;
    EXPECT_FALSE(dry.j()["applied"].get<bool>());
    auto real = request(s.port(), "POST", "/api/v1/apply?prune=true", op, spec,
                        {{"Content-Type", "application/yaml"}});
    ASSERT_EQ(real.status, 200) << real.body;
    EXPECT_TRUE(real.j()["applied"].get<bool>());
    auto again = request(s.port(), "POST", "/api/v1/apply?prune=true", op, spec,
                         {{"Content-Type", "application/yaml"}});
    ASSERT_EQ(again.status, 200) << again.body;
    EXPECT_FALSE(again.j()["applied"].get<bool>());
    EXPECT_TRUE(again.j()["plan"]["empty"].get<bool>());
    auto sum = request(s.port(), "GET", "/api/v1/summary", op);
    EXPECT_EQ(sum.status, 200);
    EXPECT_EQ(sum.j()["kinds"]["gpus"]["total"], 64);
}


// The subscription snapshot is the base of the next delta, even before the first tick ran
// (it used to be read fresh while the tick diffed against its own previous run, so the first
// tick sent a second snapshot and the delta never came).
TEST_F(ServerTest, StreamSendsHelloSnapshotThenCoalescedDeltas) {
    auto values = std::make_shared<std::vector<std::uint8_t>>(64, 10);
    auto mu = std::make_shared<std::mutex>();
    topicSource_ = [values, mu](std::string_view, std::vector<std::uint8_t>& out) {
        std::lock_guard l(*mu);
        out = *values;
        return true;
    };
    ServerConfig cfg;
    cfg.streamInterval = std::chrono::milliseconds(100);
    auto& s = startServer(cfg);
    WsClientT c;
    c.open(s.port(), tokens_["viewer"]);
    auto hello = c.read();
    EXPECT_EQ(hello["type"], "hello");
    EXPECT_EQ(hello["role"], "viewer");
    c.send({{"op", "subscribe"}, {"topics", {"gpu.util", "events"}}});
    auto snap = c.read();
    ASSERT_EQ(snap["type"], "snapshot") << snap.dump();
    EXPECT_EQ(snap["count"], 64);
    auto bytes = decodeBase64(snap["data"]);
    ASSERT_EQ(bytes.size(), 64u);
    EXPECT_EQ(bytes[5], 10);
    {
        std::lock_guard l(*mu);
        (*values)[5] = 77;
        (*values)[6] = 78;
    }
    auto d = c.read();
    ASSERT_EQ(d["type"], "delta") << d.dump();
    EXPECT_GT(d["seq"].get<std::uint64_t>(), snap["seq"].get<std::uint64_t>());
    auto pairs = decodeBase64(d["data"]);
    ASSERT_EQ(pairs.size(), 10u);  // two (u32 index, u8 value) pairs
    EXPECT_EQ(pairs[0], 5);
    EXPECT_EQ(pairs[4], 77);
    EXPECT_EQ(pairs[5], 6);
    EXPECT_EQ(pairs[9], 78);
    // Events published by a handler reach subscribers.
    s.services().publish("events", {{"type", "event"}, {"event", {{"id", 1}}}});
    for (int i = 0; i < 5; ++i) {
        auto m = c.read();
        if (m["type"] == "event") {
            EXPECT_EQ(m["event"]["id"], 1);
            return;
        }
    }
    ADD_FAILURE() << "no event message";
}

// resumeFrom: the same loomd replays what a client missed; a seq from another loomd (or from
// before this process) gets a resync, never a wrong replay. seq starts at the process's start
// time in microseconds, so a restarted or second loomd never reuses one.
TEST_F(ServerTest, ResumeReplaysOnTheSameLoomdAndResyncsAcrossLoomds) {
    auto& first = startServer();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto& second = startServer();
    auto openAt = [&](Server& s, std::optional<std::uint64_t> resumeFrom) {
        auto c = std::make_unique<WsClientT>();
        c->open(s.port(), tokens_["viewer"]);
        json sub = {{"op", "subscribe"}, {"topics", {"provisioning"}}};
        if (resumeFrom) sub["resumeFrom"] = *resumeFrom;
        auto hello = c->read();
        EXPECT_EQ(hello["type"], "hello");
        c->send(sub);
        return std::pair{std::move(c), hello["seq"].get<std::uint64_t>()};
    };
    auto [a, helloA] = openAt(first, std::nullopt);
    EXPECT_GT(helloA, 1'600'000'000'000'000ull) << "seq starts at the start time in microseconds";
    auto [b0, helloB] = openAt(second, std::nullopt);
    EXPECT_GT(helloB, helloA) << "the later loomd's seqs are above the earlier one's";
    // Wait for a's subscription to be live (the ping's pong comes after it), then publish.
    a->send({{"op", "ping"}});
    ASSERT_EQ(a->read()["type"], "pong");
    first.services().publishLocal(
        "provisioning", {{"type", "provisioning"}, {"rack", "z1-r001"}, {"from", "planned"}, {"to", "delivered"}});
    auto m = a->read();
    ASSERT_EQ(m["type"], "provisioning") << m.dump();
    const auto seenSeq = m["seq"].get<std::uint64_t>();

    // Same loomd, resuming from before the message: it is replayed.
    auto [replayed, h1] = openAt(first, helloA);
    auto r = replayed->readFor(std::chrono::seconds(5));
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)["type"], "provisioning") << r->dump();
    EXPECT_EQ((*r)["seq"], seenSeq);

    // Another loomd, resuming from the first one's seq (below its start): resync.
    auto [other, h2] = openAt(second, seenSeq);
    auto rs = other->readFor(std::chrono::seconds(5));
    ASSERT_TRUE(rs);
    EXPECT_EQ((*rs)["type"], "resync") << rs->dump();

    // The first loomd, resuming from a seq it never published (the later loomd's): resync.
    auto [ahead, h3] = openAt(first, helloB + 1'000'000);
    auto ra = ahead->readFor(std::chrono::seconds(5));
    ASSERT_TRUE(ra);
    EXPECT_EQ((*ra)["type"], "resync") << ra->dump();
}

TEST_F(ServerTest, StreamRejectsMissingToken) {
    auto& s = startServer();
    WsClientT c;
    beast::get_lowest_layer(c.raw().ws).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
    beast::error_code ec;
    c.raw().ws.handshake("127.0.0.1", "/api/v1/stream", ec);
    EXPECT_TRUE(ec);
}

TEST_F(ServerTest, SlowClientIsCutOffAndOthersKeepTheirPace) {
    // A big array that changes completely every tick: ~90 KB frames.
    auto counter = std::make_shared<std::atomic<int>>(0);
    topicSource_ = [counter](std::string_view, std::vector<std::uint8_t>& out) {
        out.assign(64 * 1024, std::uint8_t(counter->fetch_add(1) % 100));
        return true;
    };
    ServerConfig cfg;
    cfg.streamInterval = std::chrono::milliseconds(50);
    cfg.wsQueueFrames = 4;
    cfg.wsSlowTicks = 3;
    auto& s = startServer(cfg);
    WsClientT slow, fast;
    slow.open(s.port(), tokens_["viewer"]);
    // The slow client shrinks its receive buffer and then never reads.
    beast::get_lowest_layer(slow.raw().ws).socket().set_option(net::socket_base::receive_buffer_size(4096));
    slow.read();
    slow.send({{"op", "subscribe"}, {"topics", {"gpu.util"}}});
    fast.open(s.port(), tokens_["viewer"]);
    fast.read();
    fast.send({{"op", "subscribe"}, {"topics", {"gpu.util"}}});
    auto t0 = std::chrono::steady_clock::now();
    int frames = 0;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)) {
        auto m = fast.read();
        if (m["type"] == "snapshot" || m["type"] == "delta") ++frames;
    }
    // 3 s at 50 ms: ~60 rounds; the fast client must see nearly all despite the slow one.
    EXPECT_GE(frames, 40);
    // The slow client was given up on (once its socket buffers and queue are full: on a
    // loaded machine that can take longer than the 3 s above).
    HttpResult metrics;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
        metrics = request(s.port(), "GET", "/metrics", tokens_["viewer"]);
        if (metrics.body.find("loom_ws_slow_disconnects_total 1") != std::string::npos) break;
    }
    EXPECT_NE(metrics.body.find("loom_ws_slow_disconnects_total 1"), std::string::npos)
        << metrics.body.substr(0, 3000);
}

TEST_F(ServerTest, MetricsPassPromtool) {
    auto& s = startServer();
    request(s.port(), "GET", "/api/v1/racks", tokens_["viewer"]);
    request(s.port(), "GET", "/api/v1/racks", "");
    auto m = request(s.port(), "GET", "/metrics", tokens_["viewer"]);
    ASSERT_EQ(m.status, 200);
    EXPECT_NE(m.body.find("loom_http_requests_total{route=\"/api/v1/racks\",method=\"GET\",code=\"200\"}"),
              std::string::npos);
    EXPECT_NE(m.body.find("loom_db_pool_size"), std::string::npos);
    std::string path = "/tmp/loom-metrics-" + std::to_string(::getpid()) + ".txt";
    std::ofstream(path) << m.body;
    if (std::system("command -v promtool >/dev/null") != 0) GTEST_SKIP() << "no promtool";
    int rc = std::system(("promtool check metrics < " + path + " > " + path + ".out 2>&1").c_str());
    std::string text;
    {
        std::ifstream out(path + ".out");
        text.assign(std::istreambuf_iterator<char>(out), {});
    }
    std::remove(path.c_str());  // 174 pairs of these were left in /tmp by earlier runs
    std::remove((path + ".out").c_str());
    EXPECT_EQ(rc, 0) << text;
}

TEST_F(ServerTest, TwoInstancesFanOutThroughNotify) {
    auto& a = startServer();
    auto& b = startServer();
    auto& na = linkPeers(a, "loom_stream_test");
    auto& nb = linkPeers(b, "loom_stream_test");
    for (int i = 0; i < 100 && !(na.connected() && nb.connected()); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    WsClientT c;
    c.open(b.port(), tokens_["viewer"]);
    c.read();
    c.send({{"op", "subscribe"}, {"topics", {"events"}}});
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    a.services().publish("events", {{"type", "event"}, {"event", {{"id", 42}}}});
    auto m = c.read();
    EXPECT_EQ(m["type"], "event");
    EXPECT_EQ(m["event"]["id"], 42);
}

}  // namespace
}  // namespace loom::backend
