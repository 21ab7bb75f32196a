// Per-job health and impact, live (issue 15 item 2), over the real server: a running job's
// busbw on the current link states, the links it crosses and its GPUs; a link the telemetry
// sees down under the job lowers its busbw, opens a job_degraded event naming the link and is
// pushed on the jobs topic; the repair closes the event; a failed GPU shows in the job's GPUs.
#include <cmath>
#include <set>

#include "loom/db/job_repo.hpp"
#include "loom/testing/eventually.hpp"
#include "rest_fixture.hpp"
#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;
using loom::testing::eventually;

class JobsHealth : public RestFixture {
protected:
    void bringIntoService(Server& s, const std::string& rack) {
        for (int i = 0; i < 7; ++i) {
            auto r = request(s.port(), "POST", "/api/v1/racks/" + rack + "/advance",
                             tokens_["operator"]);
            ASSERT_EQ(r.status, 200) << rack << " advance " << i << ": " << r.body;
        }
    }
    void telemetry(Server& s, const std::string& body) {
        auto r = request(s.port(), "POST", "/api/v1/telemetry", tokens_["operator"], body);
        ASSERT_LT(r.status, 300) << r.body;
    }
    // Reads stream messages until one satisfies `want` (or 15 s pass: the view reacts to a wake
    // at once, and to a missed one on its 5 s timer; a loaded CI machine adds seconds). Every
    // message read is checked against the order below.
    std::optional<json> await(WsClient& c, const std::function<bool(const json&)>& want) {
        for (auto deadline = std::chrono::steady_clock::now() + 15s;
             std::chrono::steady_clock::now() < deadline;) {
            auto m = c.readFor(200ms);
            if (m) inOrder(*m);
            if (m && want(*m)) return m;
        }
        return std::nullopt;
    }
    // One order every client can rely on (issue 39): llama's job_degraded is open only while
    // its health says degraded. The health turns degraded before the event opens, and the event
    // closes before the health turns back, so a client never holds "ok" beside an open
    // job_degraded (the LoomctlE2e flake: `get jobs` said ok, `describe job` listed the event).
    void inOrder(const json& m) {
        const auto type = m.value("type", "");
        if (type == "event" && m["event"].value("kind", "") == "job_degraded" &&
            m["event"].value("location", "") == "llama") {
            degradedOpen_ = m["event"].value("state", "") == "open";
            EXPECT_TRUE(!degradedOpen_ || healthDegraded_)
                << "job_degraded opened before the job's health said degraded: " << m.dump();
        } else if (type == "jobHealth" && m.value("name", "") == "llama" &&
                   m["health"].is_object()) {
            healthDegraded_ = m["health"].value("degraded", false);
            EXPECT_TRUE(healthDegraded_ || !degradedOpen_)
                << "the job's health says " << m["health"].value("status", "")
                << " while its job_degraded is open: " << m.dump();
        }
    }
    bool degradedOpen_ = false, healthDegraded_ = false;
};

const char* kHealthJob = R"(apiVersion: loom/v1
kind: Job
metadata: {name: llama}
spec:
  owner: alice
  hosts: z1-r[001-002]-h[0-1]
  state: running
)";

TEST_F(JobsHealth, ALinkDownUnderAJobLowersItsBusbwOpensAnEventAndTheRepairClosesIt) {
    auto& s = startServer({}, Routes::All);
    // Links alarm only in service: both racks of the job go into service.
    bringIntoService(s, "z1-r001");
    bringIntoService(s, "z1-r002");
    auto put = request(s.port(), "PUT", "/api/v1/jobs/llama", tokens_["operator"], kHealthJob,
                       {{"Content-Type", "application/yaml"}});
    ASSERT_EQ(put.status, 201) << put.body;
    std::string pending = kHealthJob;
    pending.replace(pending.find("name: llama"), 11, "name: later");
    pending.replace(pending.find("state: running"), 14, "state: pending");
    ASSERT_EQ(request(s.port(), "PUT", "/api/v1/jobs/later", tokens_["operator"], pending,
                      {{"Content-Type", "application/yaml"}})
                  .status,
              201);

    // The sample racks have 16 NICs under 2 x 400 G uplinks: the 4-host ring sends 8 flows up
    // each rack's 800 G, 100 G each = 25 % of the NIC rate.
    json h;
    ASSERT_TRUE(eventually(
        [&] {
            h = get(s, "/api/v1/jobs/llama")["health"];
            return h.is_object() && h.value("busBw", -1.0) == 25.0;
        },
        5s))
        << h.dump();
    EXPECT_FALSE(h["degraded"].get<bool>());
    EXPECT_EQ(h["status"], "ok");
    EXPECT_EQ(h["gpus"]["total"], 32);
    EXPECT_EQ(h["gpus"]["ok"], 32);
    EXPECT_EQ(h["linksCrossed"], 32 + 4);  // 32 NIC cables, 2 uplinks per rack
    EXPECT_TRUE(h["linksDown"].empty());
    const std::string uplink = "z1-r002-rtsw/p17--z1-ctsw1/p2";
    auto links = h["links"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(links.begin(), links.end(), uplink), links.end()) << h["links"].dump();
    EXPECT_TRUE(get(s, "/api/v1/jobs/later")["health"].is_null()) << "pending jobs carry none";

    WsClient ws;
    ws.open(s.port(), tokens_["viewer"]);
    ws.send({{"op", "subscribe"}, {"topics", {"jobs", "events"}}});

    // The uplink goes down (the port was up, then reports down): link_down, rerouted, and the
    // job keeps one uplink of its rack: 12.5 %.
    telemetry(s, "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 1\n");
    telemetry(s, "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 0\n");
    auto pushed = await(ws, [](const json& m) {
        return m.value("type", "") == "jobHealth" && m.value("name", "") == "llama" &&
               m["health"].value("busBw", -1.0) == 12.5;
    });
    ASSERT_TRUE(pushed) << get(s, "/api/v1/jobs/llama")["health"].dump();
    EXPECT_TRUE((*pushed)["health"]["degraded"].get<bool>());
    EXPECT_EQ((*pushed)["health"]["status"], "degraded");
    EXPECT_EQ((*pushed)["health"]["linksDown"], json::array({uplink}));
    const std::string message = "job llama degraded to 12.5% busbw by link " + uplink + " down";
    auto opened = await(ws, [&](const json& m) {
        return m.value("type", "") == "event" && m["event"].value("kind", "") == "job_degraded" &&
               m["event"].value("state", "") == "open";
    });
    ASSERT_TRUE(opened) << get(s, "/api/v1/events?kind=job_degraded").dump();
    EXPECT_EQ((*opened)["event"]["message"], message);
    EXPECT_EQ((*opened)["event"]["location"], "llama");
    EXPECT_EQ((*opened)["event"]["source"], "jobs");
    EXPECT_EQ((*opened)["event"]["severity"], "warning");

    // Every view agrees: the job, the list, the event history, and the detail's events.
    h = get(s, "/api/v1/jobs/llama")["health"];
    EXPECT_EQ(h["busBw"], 12.5);
    EXPECT_EQ(h["healthyBusBw"], 25.0);
    ASSERT_FALSE(h["events"].empty()) << h.dump();
    EXPECT_EQ(h["events"][0]["kind"], "link_down");
    EXPECT_EQ(h["events"][0]["location"], uplink);
    // One count (issue 39): the link's event and the job's own job_degraded, each once.
    ASSERT_TRUE(eventually(
        [&] {
            h = get(s, "/api/v1/jobs/llama")["health"];
            return h["openEvents"] == 2;
        },
        std::chrono::seconds(10)))
        << h.dump();
    ASSERT_EQ(h["events"].size(), 2u) << h.dump();
    EXPECT_EQ(h["events"][1]["kind"], "job_degraded");
    EXPECT_EQ(h["events"][1]["location"], "llama");
    EXPECT_EQ(h["events"][1]["id"], (*opened)["event"]["id"]);
    ASSERT_FALSE(h["bottlenecks"].empty());
    // Rack 2's last uplink, and rack 1's uplink to the CTSW that still reaches rack 2.
    std::set<std::string> tight;
    for (const auto& b : h["bottlenecks"]) tight.insert(b["link"].get<std::string>());
    EXPECT_TRUE(tight.contains("z1-r002-rtsw/p18--z1-ctsw2/p2")) << h["bottlenecks"].dump();
    EXPECT_TRUE(tight.contains("z1-r001-rtsw/p18--z1-ctsw2/p1")) << h["bottlenecks"].dump();
    auto list = get(s, "/api/v1/jobs?state=running");
    ASSERT_EQ(list["items"].size(), 1u);
    EXPECT_EQ(list["items"][0]["health"]["busBw"], 12.5);
    EXPECT_FALSE(list["items"][0]["health"].contains("links")) << "lists carry the summary";
    auto events = get(s, "/api/v1/events?kind=job_degraded&state=open&source=jobs");
    ASSERT_EQ(events["items"].size(), 1u);
    EXPECT_EQ(events["items"][0]["message"], message);
    auto metrics = request(s.port(), "GET", "/metrics", tokens_["viewer"]).body;
    EXPECT_NE(metrics.find("loom_jobs_tracked 1\n"), std::string::npos);
    EXPECT_NE(metrics.find("loom_jobs_degraded 1\n"), std::string::npos);

    // The repair: back to 25 %, the event closes.
    telemetry(s, "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 1\n");
    auto closed = await(ws, [](const json& m) {
        return m.value("type", "") == "event" && m["event"].value("kind", "") == "job_degraded" &&
               m["event"].value("state", "") == "closed";
    });
    ASSERT_TRUE(closed) << get(s, "/api/v1/events?kind=job_degraded").dump();
    // The health follows its event's close (it never comes before it: inOrder).
    ASSERT_TRUE(eventually(
        [&] {
            h = get(s, "/api/v1/jobs/llama")["health"];
            return !h.value("degraded", true);
        },
        5s))
        << h.dump();
    EXPECT_EQ(h["openEvents"], 0) << h.dump();
    EXPECT_EQ(h["busBw"], 25.0);
    EXPECT_FALSE(h["degraded"].get<bool>());
    EXPECT_EQ(h["status"], "ok");
    EXPECT_TRUE(get(s, "/api/v1/events?kind=job_degraded&state=open")["items"].empty());

    // A critical XID on one of its GPUs: the job's GPUs say so.
    telemetry(s, "DCGM_FI_DEV_XID_ERRORS{gpu=\"3\",Hostname=\"z1-r001-h1\"} 79\n");
    ASSERT_TRUE(eventually(
        [&] {
            h = get(s, "/api/v1/jobs/llama")["health"];
            return h["gpus"].value("failed", 0) == 1;
        },
        5s))
        << h.dump();
    EXPECT_EQ(h["gpus"]["ok"], 31);
    EXPECT_EQ(h["gpusNotOk"], json::parse(R"([{"name": "z1-r001-h1-gpu3", "health": "failed"}])"));
    EXPECT_EQ(h["busBw"], 25.0) << "a GPU is not a link: the busbw holds";
    EXPECT_EQ(h["status"], "gpu-failed");
    EXPECT_EQ(get(s, "/api/v1/jobs?state=running")["items"][0]["health"]["status"], "gpu-failed");

    // The job ends: it leaves the view.
    std::string done = kHealthJob;
    done.replace(done.find("state: running"), 14, "state: completed");
    ASSERT_EQ(request(s.port(), "PUT", "/api/v1/jobs/llama", tokens_["operator"], done,
                      {{"Content-Type", "application/yaml"}})
                  .status,
              200);
    EXPECT_TRUE(eventually([&] { return get(s, "/api/v1/jobs/llama")["health"].is_null(); }, 5s));
}

// The simulator's jobs are Job objects (source simulator, sim-NNNN on whole racks in service)
// and carry their health like any other job.
TEST_F(JobsHealth, SimulatedJobsAreStoredAndCarryTheirHealth) {
    telemetryOptions_.simulate = true;
    telemetryOptions_.tickSeconds = 0.2;
    auto& s = startServer({}, Routes::All);
    for (const char* rack : {"z1-r001", "z1-r002", "z1-r003", "z1-r004"}) bringIntoService(s, rack);
    json items;
    ASSERT_TRUE(eventually(
        [&] {
            items = get(s, "/api/v1/jobs?source=simulator&state=running")["items"];
            for (const auto& j : items)
                if (j["health"].is_object()) return true;
            return false;
        },
        15s))
        << items.dump();
    for (const auto& j : items) {
        EXPECT_EQ(j["name"].get<std::string>().rfind("sim-", 0), 0u) << j.dump();
        EXPECT_EQ(j["owner"], "simulator");
        EXPECT_EQ(j["hostCount"].get<int>() % 2, 0) << "whole racks of 2 hosts";
        EXPECT_EQ(j["tensorParallel"], 8);
    }
}

// A simulated job an earlier `loomd serve --simulate` left running is not running when the
// leader does not simulate: it becomes completed (and a job of another source is left alone),
// instead of showing as running, with health, forever.
TEST_F(JobsHealth, ALeaderThatDoesNotSimulateEndsTheSimulatorsLeftoverJobs) {
    {
        auto conn = connect();
        jobs::Job sim;
        sim.name = "sim-0007";
        sim.owner = "simulator";
        sim.hosts = {"z1-r001-h0", "z1-r001-h1"};
        sim.state = jobs::JobState::Running;
        sim.source = jobs::JobSource::Simulator;
        auto r = db::syncJobs(conn, jobs::JobSource::Simulator, {sim});
        ASSERT_TRUE(r) << r.error().toString();
        ASSERT_EQ(r->created, 1);
    }
    telemetryOptions_.simulate = false;
    telemetryOptions_.tickSeconds = 0.2;
    auto& s = startServer({}, Routes::All);
    auto put = request(s.port(), "PUT", "/api/v1/jobs/llama", tokens_["operator"], kHealthJob,
                       {{"Content-Type", "application/yaml"}});
    ASSERT_EQ(put.status, 201) << put.body;
    json job;
    ASSERT_TRUE(eventually(
        [&] {
            job = get(s, "/api/v1/jobs/sim-0007");
            return job.value("state", "") == "completed";
        },
        10s))
        << job.dump();
    EXPECT_EQ(get(s, "/api/v1/jobs/llama")["state"], "running") << "another source's job stays";
}

// Placement on the live fabric: racks in service, not in a job, away from a lost uplink; first
// fit by name as the baseline; bad requests are 400s naming the field, too many GPUs a 409.
// An uplink reported down while its rack was still being provisioned (its cables not in
// service: no failure) fails as soon as the rack goes into service, with no further sample —
// the order CI once hit by chance in the placement test below.
TEST_F(JobsHealth, AnUplinkReportedDownBeforeItsRackIsInServiceFailsWhenItIs) {
    auto& s = startServer({}, Routes::All);
    telemetry(s, "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 1\n");
    telemetry(s, "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 0\n");
    EXPECT_TRUE(get(s, "/api/v1/links?switch=z1-r002-rtsw&health=failed")["items"].empty())
        << "a planned link being down is no failure";
    bringIntoService(s, "z1-r002");
    json failed;
    EXPECT_TRUE(eventually(
        [&] {
            failed = get(s, "/api/v1/links?switch=z1-r002-rtsw&health=failed")["items"];
            return failed.size() == 1;
        },
        3s))
        << failed.dump();
}

TEST_F(JobsHealth, PlacementAvoidsALostUplinkAndRacksInAJob) {
    auto& s = startServer({}, Routes::All);
    for (const char* rack : {"z1-r001", "z1-r002", "z1-r003"}) bringIntoService(s, rack);
    auto place = [&](const json& body) {
        return request(s.port(), "POST", "/api/v1/placement", tokens_["viewer"], body.dump());
    };
    telemetry(s, "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 1\n");
    telemetry(s, "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} 0\n");
    HttpResult r;
    // Two racks: z1-r002 kept one of its two uplinks; the ring over r001 and r003 keeps 25 %
    // (the sample racks are 8:1), first fit by name takes r001 and r002: 12.5 %. One down sample
    // is enough even if it arrives before this loomd's live state has the rack in service (the
    // hub opens the failure when the link comes into service; CI once caught it missing).
    ASSERT_TRUE(eventually(
        [&] {
            r = place({{"gpus", 32}});
            return r.status == 200 && r.j()["racks"] == json::array({"z1-r001", "z1-r003"});
        },
        5s))
        << r.status << " " << r.body;
    auto p = r.j();
    EXPECT_EQ(p["busBw"], 25.0);
    EXPECT_EQ(p["gpusPlaced"], 32);
    EXPECT_EQ(p["hostCount"], 4);
    EXPECT_EQ(p["zones"], 1);
    EXPECT_EQ(p["availableRacks"], 3);
    EXPECT_EQ(p["firstFit"]["racks"], json::array({"z1-r001", "z1-r002"}));
    EXPECT_EQ(p["firstFit"]["busBw"], 12.5);
    EXPECT_EQ(p["firstFit"]["nodelist"], "z1-r[001-002]-h[0-1]");

    // A running job takes z1-r001: a one-rack job goes to z1-r003.
    ASSERT_EQ(request(s.port(), "PUT", "/api/v1/jobs/llama", tokens_["operator"], kHealthJob,
                      {{"Content-Type", "application/yaml"}})
                  .status,
              201);
    std::string one = kHealthJob;
    one.replace(one.find("z1-r[001-002]-h[0-1]"), 20, "z1-r001-h[0-1]");
    ASSERT_EQ(request(s.port(), "PUT", "/api/v1/jobs/llama", tokens_["operator"], one,
                      {{"Content-Type", "application/yaml"}})
                  .status,
              200);
    ASSERT_TRUE(eventually(
        [&] {
            r = place({{"gpus", 16}, {"pattern", "allreduce"}});
            // Both PUTs reached the jobs view: the job holds z1-r001 only, so r002 is free
            // again (checking the nodelist alone passed on the first PUT's state in CI).
            return r.status == 200 && r.j()["nodelist"] == "z1-r003-h[0-1]" &&
                   r.j()["availableRacks"] == 2;
        },
        5s))
        << r.body;

    auto tooMany = place({{"gpus", 64}});
    EXPECT_EQ(tooMany.status, 409) << tooMany.body;
    EXPECT_NE(tooMany.body.find("only 32 GPUs"), std::string::npos) << tooMany.body;
    auto notANumber = place({{"gpus", "many"}});
    EXPECT_EQ(notANumber.status, 400);
    EXPECT_EQ(notANumber.j()["error"]["path"], "gpus");
    auto badPattern = place({{"gpus", 16}, {"pattern", "ring"}});
    EXPECT_EQ(badPattern.status, 400);
    EXPECT_EQ(badPattern.j()["error"]["path"], "pattern");
}

// The jobs view routes its own copy of the live fabric (its link states are the stored ones
// with the links telemetry reports down forced down; since session 15 it shares the fabric
// state's topology arrays): after every driven change its answer for a job is the fabric
// state's answer for the same hosts (POST /fabric/impact: busbw and bottlenecks), except while
// telemetry holds a link down that the stored states do not — a stored drain and undrain, a
// telemetry link_down and its recovery, a layout change (a rack applied), and a link_down after
// that rebuild.
TEST_F(JobsHealth, TheJobsViewAnswersAsTheFabricStateAfterEveryDrivenChange) {
    // One uplink goes down and up twice within seconds below: a flapping link, whose second
    // link_down is held until the flapping stops (docs/api.md, Events). This test is about the
    // jobs view against the fabric state, not flapping: the flapping rule is off.
    telemetryOptions_.hub.detection.flapTransitions = 0;
    auto& s = startServer({}, Routes::All);
    bringIntoService(s, "z1-r001");
    bringIntoService(s, "z1-r002");
    ASSERT_EQ(request(s.port(), "PUT", "/api/v1/jobs/llama", tokens_["operator"], kHealthJob,
                      {{"Content-Type", "application/yaml"}})
                  .status,
              201);
    const json hosts = {"z1-r001-h0", "z1-r001-h1", "z1-r002-h0", "z1-r002-h1"};
    // (busBw rounded as the job shows it, bottlenecks) of the job and of the fabric state.
    auto job = [&] {
        auto h = get(s, "/api/v1/jobs/llama")["health"];
        return h.is_object() ? json{h["busBw"], h["bottlenecks"]} : json();
    };
    auto fabric = [&] {
        auto r = request(s.port(), "POST", "/api/v1/fabric/impact", tokens_["viewer"],
                         json{{"hosts", hosts}, {"collective", "allreduce"}}.dump());
        EXPECT_EQ(r.status, 200) << r.body;
        auto j = r.j();
        return json{std::round(j["busBwNormalized"].get<double>() * 10) / 10, j["bottlenecks"]};
    };
    // Both settle to `bw` (the view updates on its own thread), and then agree in full.
    auto expectBoth = [&](double bw, const char* after) {
        json a, b;
        EXPECT_TRUE(eventually(
            [&] {
                a = job();
                b = fabric();
                return a == b && b[0] == bw;
            },
            10s))
            << after << ": job " << a.dump() << "\nfabric state " << b.dump();
    };
    // The view alone sees the telemetry: `jobBw` there, the fabric state `fabricBw`.
    auto expectApart = [&](double jobBw, double fabricBw, const char* after) {
        json a;
        EXPECT_TRUE(eventually(
            [&] {
                a = job();
                return a.is_array() && a[0] == jobBw;
            },
            10s))
            << after << ": " << a.dump();
        EXPECT_EQ(fabric()[0], fabricBw) << after;
    };
    auto linkDown = [&](bool down) {
        telemetry(s, "loom_port_oper_status{switch=\"z1-r002-rtsw\",port=\"p17\"} " +
                         std::string(down ? "0" : "1") + "\n");
    };
    expectBoth(25.0, "start");

    // Stored states: rack 2 drained (its cables drained: the job is cut), then back in service.
    auto act = [&](const char* action) {
        auto r = request(s.port(), "POST", std::string("/api/v1/racks/z1-r002/") + action,
                         tokens_["operator"], R"({"reason": "test"})");
        ASSERT_EQ(r.status, 200) << action << ": " << r.body;
    };
    act("drain");
    act("advance");  // draining -> drained
    expectBoth(0.0, "rack drained");
    act("advance");  // drained -> in_service
    expectBoth(25.0, "rack back in service");

    // Telemetry: the uplink down for the view only, then recovered.
    linkDown(false);
    linkDown(true);
    expectApart(12.5, 25.0, "telemetry link_down");
    linkDown(false);
    expectBoth(25.0, "link_down recovered");

    // A layout change: a fifth rack applied (both rebuild their routing), then the same uplink
    // down again: the rebuilt view finds it by name in the new topology.
    {
        auto conn = connect();
        auto desired = loom::testing::sampleCluster(1, 5);
        auto snap = db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << snap.error().toString();
        auto p = inventory::plan(desired, snap->inventory);
        ASSERT_FALSE(p.empty());
        auto applied = db::applyPlan(conn, p, desired, {.actor = "test"});
        ASSERT_TRUE(applied) << applied.error().toString();
    }
    s.services().inventoryChanged();
    ASSERT_TRUE(eventually(
        [&] {
            const auto hall = get(s, "/api/v1/hall");
            for (const auto& r : hall["racks"])
                if (r.value("name", "") == "z1-r005") return true;
            return false;
        },
        10s));
    expectBoth(25.0, "layout change");
    linkDown(true);
    expectApart(12.5, 25.0, "telemetry link_down after the layout change");
    linkDown(false);
    expectBoth(25.0, "recovered after the layout change");
}

}  // namespace
}  // namespace loom::backend::testing
