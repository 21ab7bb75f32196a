// Overlap and lemons over the real server and PostgreSQL (issue 34 items 5 and 6): a running job
// on another running job's hosts is a 409 naming that job and the hosts unless its document
// shares them; lemon strikes stored before loomd starts make its leader open a `lemon` event per
// lemon, GET /api/v1/lemons and a job's detail list them, and placement leaves a lemon's rack
// out while the job fits without it.
#include "loom/db/lemon_repo.hpp"
#include "loom/inventory/unix_time.hpp"
#include "loom/testing/eventually.hpp"
#include "rest_fixture.hpp"
#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;
using loom::testing::eventually;

class Lemons : public RestFixture {
protected:
    HttpResult putJob(Server& s, const std::string& name, const std::string& hosts,
                      bool shares = false) {
        const std::string doc = "apiVersion: loom/v1\nkind: Job\nmetadata: {name: " + name +
                                "}\nspec:\n  owner: alice\n  hosts: " + hosts +
                                "\n  state: running\n" + (shares ? "  sharesHosts: true\n" : "");
        return request(s.port(), "PUT", "/api/v1/jobs/" + name, tokens_["operator"], doc,
                       {{"Content-Type", "application/yaml"}});
    }
};

TEST_F(Lemons, OverlapIsRefusedUnlessSharedAndLemonsAreShownEventedAndAvoided) {
    {
        auto conn = connect();
        const auto now = unixMs();
        std::vector<jobs::LemonStrike> strikes;
        for (const char* job : {"old-1", "old-2", "old-3"}) {
            strikes.push_back(
                {"z1-r003-h0", "host", "z1-r003-h0", job, "host_slow", now - 3600'000});
            strikes.push_back({"z1-r001-h1-gpu0", "gpu", "z1-r001-h1", job, "xid", now - 60'000});
        }
        strikes.push_back({"z1-r004-h1", "host", "z1-r004-h1", "old-1", "host_slow", now - 1000});
        ASSERT_TRUE(db::recordStrikes(conn, strikes));
    }
    auto& s = startServer({}, Routes::All);

    ASSERT_EQ(putJob(s, "a", "z1-r[001-002]-h[0-1]").status, 201);
    auto clash = putJob(s, "b", "z1-r002-h[0-1]");
    ASSERT_EQ(clash.status, 409) << clash.body;
    const auto err = clash.j()["error"];
    EXPECT_EQ(err["path"], "spec.hosts");
    EXPECT_NE(err["message"].get<std::string>().find("running job 'a' (z1-r002-h[0-1])"),
              std::string::npos)
        << err;
    EXPECT_EQ(request(s.port(), "GET", "/api/v1/jobs/b", tokens_["viewer"]).status, 404);
    auto shared = putJob(s, "b", "z1-r002-h[0-1]", /*shares=*/true);
    ASSERT_EQ(shared.status, 201) << shared.body;
    EXPECT_EQ(shared.j()["sharesHosts"], true);

    // The leader's first pass reads the strikes: one lemon event per lemon.
    json events;
    ASSERT_TRUE(eventually(
        [&] {
            events = get(s, "/api/v1/events?kind=lemon&state=open");
            return events["items"].size() == 2;
        },
        20s))
        << events.dump();
    std::set<std::string> where;
    for (const auto& e : events["items"]) {
        where.insert(e["location"].get<std::string>());
        EXPECT_EQ(e["source"], "jobs");
        EXPECT_NE(e["message"].get<std::string>().find("is a lemon: the suspect or a failure in 3 "
                                                       "jobs in 7 days"),
                  std::string::npos)
            << e;
    }
    EXPECT_EQ(where, (std::set<std::string>{"z1-r003-h0", "z1-r001-h1-gpu0"}));

    auto lemons = get(s, "/api/v1/lemons");
    EXPECT_EQ(lemons["rule"]["jobs"], 3);
    ASSERT_EQ(lemons["items"].size(), 3u) << lemons.dump();
    EXPECT_EQ(lemons["items"][2]["name"], "z1-r004-h1");
    EXPECT_EQ(lemons["items"][2]["lemon"], false);
    EXPECT_EQ(lemons["items"][2]["jobs"], 1);
    auto one = get(s, "/api/v1/lemons?host=z1-r001-h1");
    ASSERT_EQ(one["items"].size(), 1u);
    EXPECT_EQ(one["items"][0]["name"], "z1-r001-h1-gpu0");
    // A rack's view asks once for its hosts and their GPUs.
    auto rack1 = get(s, "/api/v1/lemons?rack=z1-r001");
    ASSERT_EQ(rack1["items"].size(), 1u) << rack1.dump();
    EXPECT_EQ(rack1["items"][0]["name"], "z1-r001-h1-gpu0");
    EXPECT_EQ(rack1["items"][0]["lemon"], true);
    auto rack3 = get(s, "/api/v1/lemons?rack=z1-r003");
    ASSERT_EQ(rack3["items"].size(), 1u) << rack3.dump();
    EXPECT_EQ(rack3["items"][0]["name"], "z1-r003-h0");
    EXPECT_TRUE(get(s, "/api/v1/lemons?rack=z1-r002")["items"].empty());
    EXPECT_TRUE(get(s, "/api/v1/lemons?rack=no-such-rack")["items"].empty());
    auto hostAndRack =
        request(s.port(), "GET", "/api/v1/lemons?host=z1-r001-h1&rack=z1-r001", tokens_["viewer"]);
    EXPECT_EQ(hostAndRack.status, 400);
    EXPECT_EQ(hostAndRack.j()["error"]["path"], "rack");
    EXPECT_EQ(request(s.port(), "GET", "/api/v1/lemons?row=x", tokens_["viewer"]).status, 400);

    auto a = get(s, "/api/v1/jobs/a");
    ASSERT_EQ(a["lemons"].size(), 1u) << a.dump();
    EXPECT_EQ(a["lemons"][0]["name"], "z1-r001-h1-gpu0");
    EXPECT_EQ(a["lemons"][0]["strikes"].size(), 3u);
    EXPECT_TRUE(get(s, "/api/v1/jobs/b")["lemons"].empty());

    // Placement: z1-r003 (a lemon host) and z1-r004 in service and free; one rack's worth goes
    // to z1-r004, two take the lemon's rack as the last resort.
    for (const char* rack : {"z1-r003", "z1-r004"})
        for (int i = 0; i < 7; ++i)
            ASSERT_EQ(request(s.port(), "POST", std::string("/api/v1/racks/") + rack + "/advance",
                              tokens_["operator"])
                          .status,
                      200);
    json p;
    ASSERT_TRUE(eventually(
        [&] {
            auto r = request(s.port(), "POST", "/api/v1/placement", tokens_["viewer"],
                             R"({"gpus": 16})");
            if (r.status != 200) return false;
            p = r.j();
            // Both racks in the jobs view: the lemon's left out, the other available.
            return p["availableRacks"] == 1 && p["lemonRacksAvoided"] == 1;
        },
        15s))
        << p.dump();
    EXPECT_EQ(p["racks"], json::array({"z1-r004"}));
    EXPECT_EQ(p["lemonRacksAvoided"], 1);
    auto both =
        request(s.port(), "POST", "/api/v1/placement", tokens_["viewer"], R"({"gpus": 32})");
    ASSERT_EQ(both.status, 200) << both.body;
    EXPECT_EQ(both.j()["racks"], json::array({"z1-r003", "z1-r004"}));
    EXPECT_EQ(both.j()["lemonRacksUsed"], 1);
}

}  // namespace
}  // namespace loom::backend::testing
