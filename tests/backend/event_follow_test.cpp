// Issue 39, "a restart, a leader change or a reconnect changes nothing a user can see", on two
// loomds of one database: every loomd follows the stored open events. A push reaches one loomd;
// the recovery its source sends next may reach the other, leader or not, and closes the event
// there — the same row, its acknowledgement kept, closedBy empty and the reason saying who
// reported it — and both loomds' REST, stream, GPU health and job detail agree. An event both
// loomds opened at the same place is one row, and each loomd's job detail lists it with that
// row's id.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "loom/testing/eventually.hpp"
#include "rest_fixture.hpp"
#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

// loom::testing::eventually with this file's limit (a name of its own: unity batches join this
// file's anonymous namespace with its neighbours').
bool followsWithin(const std::function<bool()>& cond, std::chrono::milliseconds limit = 15s) {
    return loom::testing::eventually(cond, limit);
}

const char* kFollowedJob = R"(apiVersion: loom/v1
kind: Job
metadata: {name: llama}
spec:
  owner: alice
  hosts: z1-r004-h[0-1]
  state: running
)";

class EventFollow : public RestFixture {
protected:
    // Two loomds on this database, linked as `loomd serve` links them (NOTIFY on a channel of
    // this test) unless `linked` is false; A leads. Both tick every 200 ms.
    void startTwo(bool linked = true) {
        ASSERT_TRUE(connect().exec("UPDATE racks SET state = 'in_service'"));
        telemetryOptions_.tickSeconds = 0.2;
        a_ = &startServer({}, Routes::All);
        a_->setLeaderFlag([this] { return aLeads_.load(); });
        b_ = &startServer({}, Routes::All);
        b_->setLeaderFlag([this] { return bLeads_.load(); });
        if (linked)
            for (auto* s : {a_, b_}) linkPeers(*s, "loom_event_follow_test");
        for (auto* s : {a_, b_})
            ASSERT_TRUE(followsWithin([&] {
                auto r = post(*s, "/api/v1/telemetry",
                              "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"" + host_ + "\"} 1\n",
                              "text/plain");
                return r.status == 200 && r.j().value("applied", 0) == 1;
            })) << "a telemetry hub never took the hall layout";
        auto put = request(a_->port(), "PUT", "/api/v1/jobs/llama", tokens_["operator"],
                           kFollowedJob, {{"Content-Type", "application/yaml"}});
        ASSERT_EQ(put.status, 201) << put.body;
    }
    void pushXid(Server& s, int code) {
        auto r = post(s, "/api/v1/telemetry",
                      "DCGM_FI_DEV_XID_ERRORS{gpu=\"5\",Hostname=\"" + host_ + "\"} " +
                          std::to_string(code) + "\n",
                      "text/plain");
        ASSERT_EQ(r.status, 200) << r.body;
        ASSERT_EQ(r.j().value("applied", 0), 1) << r.body;
    }
    // The GPU's events as stored (every state), newest first.
    json events(Server& s) { return get(s, "/api/v1/events?location=" + gpu_)["items"]; }
    // The GPU's health as REST gives it (from the stored events) and whether the loomd's own
    // failure list (its hub: the web's failure counter, the stream's gpu.health) has it:
    // "failed/listed" or "ok/-".
    std::string gpuHealth(Server& s) {
        std::string listed = "-";
        const auto failures = get(s, "/api/v1/failures");
        for (const auto& f : failures.value("items", json::array()))
            if (f.value("name", "") == gpu_) listed = "listed";
        return get(s, "/api/v1/gpus/" + gpu_).value("health", "") + "/" + listed;
    }
    // What the job detail lists: "kind location #id", and its count.
    std::string detail(Server& s) {
        const auto h = get(s, "/api/v1/jobs/llama")["health"];
        if (!h.is_object()) return "no health";
        std::string out = std::to_string(h.value("openEvents", -1)) + ":";
        for (const auto& e : h.value("events", json::array()))
            out += " " + e.value("kind", "") + " " + e.value("location", "") + " #" +
                   std::to_string(e.value("id", std::int64_t{0}));
        return out;
    }
    std::string listed(std::int64_t id) const {
        return "1: gpu_xid " + gpu_ + " #" + std::to_string(id);
    }
    // Reads `c` until an events message about event `id` in `state` comes (false: none in 10 s).
    static bool streamSays(WsClient& c, std::int64_t id, const std::string& state, json* got) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            auto m = c.readFor(10s);
            if (!m) return false;
            if (m->value("type", "") != "event" || !(*m)["event"].is_object()) continue;
            const auto& e = (*m)["event"];
            if (e.value("id", std::int64_t{0}) == id && e.value("state", "") == state) {
                *got = e;
                return true;
            }
        }
        return false;
    }
    void subscribe(WsClient& c, Server& s) {
        c.open(s.port(), tokens_["viewer"]);
        c.send({{"op", "subscribe"}, {"topics", {"events"}}});
    }
    double metric(Server& s, const std::string& name) {
        const auto body = request(s.port(), "GET", "/metrics", tokens_["viewer"]).body;
        const auto at = body.find("\n" + name + " ");
        return at == std::string::npos ? -1 : std::stod(body.substr(at + name.size() + 2));
    }
    // An XID 79 pushed to A, stored and acknowledged there; its id.
    // `followedIn`: how long B's hub took to hold it after A took the push.
    std::int64_t openOnAAndAck(const std::string& comment, long long* followedIn = nullptr) {
        const auto t0 = std::chrono::steady_clock::now();
        pushXid(*a_, 79);
        if (followedIn) {
            EXPECT_TRUE(loom::testing::eventually(
                [&] { return !telemetry_[1]->hub().openEvents().empty(); }, 10s, 1ms));
            *followedIn = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - t0)
                              .count();
        }
        EXPECT_TRUE(followsWithin([&] { return events(*a_).size() == 1; }));
        const auto id = events(*a_)[0].value("id", std::int64_t{0});
        EXPECT_EQ(post(*a_, "/api/v1/events/" + std::to_string(id) + "/ack",
                       json{{"comment", comment}}.dump())
                      .status,
                  200);
        return id;
    }
    // The closed event as a user sees it: the one row of the GPU, closed by the push's
    // recovery, its acknowledgement kept; the same on both loomds.
    void expectClosedByRecovery(std::int64_t id, const std::string& ack) {
        for (auto* s : {a_, b_}) {
            const auto items = events(*s);
            ASSERT_EQ(items.size(), 1u) << "the history split: " << items.dump();
            const auto& e = items[0];
            EXPECT_EQ(e.value("id", std::int64_t{0}), id);
            EXPECT_EQ(e.value("state", ""), "closed") << e.dump();
            EXPECT_TRUE(e["closedBy"].is_null()) << e.dump();
            EXPECT_EQ(e.value("closeReason", ""), "recovered (reported by push)") << e.dump();
            EXPECT_EQ(e.value("ackComment", ""), ack) << e.dump();
        }
    }

    Server* a_ = nullptr;
    Server* b_ = nullptr;
    std::atomic<bool> aLeads_{true}, bLeads_{false};
    const std::string host_ = "z1-r004-h1";
    const std::string gpu_ = "z1-r004-h1-gpu5";
};

// A (the leader) opens an XID from a push; it is acknowledged. B follows it (the GPU is failed
// there too, the job detail lists it), and the recovery pushed to B closes it on both.
TEST_F(EventFollow, ARecoveryThatReachesAFollowerClosesTheLeadersEvent) {
    startTwo();
    std::int64_t id = 0;
    long long followedIn = -1;
    ASSERT_NO_FATAL_FAILURE(id = openOnAAndAck("INC-44 reseat", &followedIn));
    std::printf("push to A -> the event held by B's hub: %lld ms\n", followedIn);
    std::string health, listedB;
    EXPECT_TRUE(followsWithin([&] {
        health = gpuHealth(*b_);
        return health == "failed/listed";
    })) << "B does not follow the event A opened: the GPU is "
        << health << " on B";
    EXPECT_TRUE(followsWithin([&] {
        listedB = detail(*b_);
        return listedB == listed(id) && detail(*a_) == listed(id);
    })) << "job detail on A: "
        << detail(*a_) << ", on B: " << listedB;

    WsClient streamA, streamB;
    subscribe(streamA, *a_);
    subscribe(streamB, *b_);
    std::this_thread::sleep_for(200ms);  // the subscriptions took
    const auto t0 = std::chrono::steady_clock::now();
    pushXid(*b_, 0);
    // Closed on both, the GPU ok on both, the job detail empty on both.
    ASSERT_TRUE(followsWithin(
        [&] {
            return events(*a_)[0].value("state", "") == "closed" &&
                   events(*b_)[0].value("state", "") == "closed" && gpuHealth(*a_) == "ok/-" &&
                   gpuHealth(*b_) == "ok/-" && detail(*a_) == "0:" && detail(*b_) == "0:";
        },
        10s))
        << "A: " << events(*a_).dump() << " " << gpuHealth(*a_) << " " << detail(*a_)
        << "\nB: " << events(*b_).dump() << " " << gpuHealth(*b_) << " " << detail(*b_);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    std::printf("recovery on the follower -> closed and GPU ok on both loomds: %lld ms\n",
                static_cast<long long>(ms));
    expectClosedByRecovery(id, "INC-44 reseat");
    json got;
    for (auto* c : {&streamA, &streamB}) {
        ASSERT_TRUE(streamSays(*c, id, "closed", &got)) << "a stream never said it closed";
        EXPECT_EQ(got.value("closeReason", ""), "recovered (reported by push)") << got.dump();
        EXPECT_EQ(got.value("ackComment", ""), "INC-44 reseat") << got.dump();
    }
    // Closed once: by B's rules; A forgot it, as closed elsewhere.
    EXPECT_EQ(metric(*b_, "loom_events_closed_total"), 1);
    EXPECT_EQ(metric(*a_, "loom_events_closed_total"), 0);
    EXPECT_EQ(metric(*a_, "loom_events_closed_elsewhere_total"), 1);
    // A new XID on A after the recovery is a new event.
    pushXid(*a_, 79);
    ASSERT_TRUE(followsWithin([&] { return events(*a_).size() == 2; }))
        << "a new report after the recovery elsewhere opened nothing: " << events(*a_).dump();
    // Closed by hand on B once B holds it: A forgets it too, and holds the kind back until the
    // condition clears, as B does (A's next XID 79 opens nothing).
    const auto second = events(*a_)[0].value("id", std::int64_t{0});
    ASSERT_TRUE(followsWithin([&] { return detail(*b_) == listed(second); })) << detail(*b_);
    ASSERT_EQ(post(*b_, "/api/v1/events/" + std::to_string(second) + "/close",
                   R"({"reason": "GPU replaced"})")
                  .status,
              200);
    EXPECT_TRUE(followsWithin([&] { return gpuHealth(*a_) == "ok/-" && detail(*a_) == "0:"; }))
        << "A still holds the event closed by hand on B: " << gpuHealth(*a_) << ", " << detail(*a_);
    pushXid(*a_, 79);
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(events(*a_).size(), 2u) << "not held back on A: " << events(*a_).dump();
}

// The new leader before its first tick as the leader: B followed what A opened while A led, so
// the recovery that reaches B at once after A is gone closes it.
TEST_F(EventFollow, ANewLeaderClosesItsPredecessorsEventBeforeItsFirstTick) {
    startTwo();
    std::int64_t id = 0;
    ASSERT_NO_FATAL_FAILURE(id = openOnAAndAck("INC-45 reseat"));
    ASSERT_TRUE(followsWithin([&] { return gpuHealth(*b_) == "failed/listed"; }))
        << "B does not follow the event A opened";
    // A dies; B leads, and the recovery reaches it in the same moment.
    telemetry_[0]->stop();
    scrapers_[0]->stop();
    servers_[0]->stop();
    aLeads_ = false;
    bLeads_ = true;
    pushXid(*b_, 0);
    ASSERT_TRUE(followsWithin([&] { return events(*b_)[0].value("state", "") == "closed"; }, 10s))
        << events(*b_).dump();
    const auto items = events(*b_);
    ASSERT_EQ(items.size(), 1u) << "the history split: " << items.dump();
    EXPECT_EQ(items[0].value("id", std::int64_t{0}), id);
    EXPECT_TRUE(items[0]["closedBy"].is_null()) << items.dump();
    EXPECT_EQ(items[0].value("closeReason", ""), "recovered (reported by push)") << items.dump();
    EXPECT_EQ(items[0].value("ackComment", ""), "INC-45 reseat");
    EXPECT_EQ(gpuHealth(*b_), "ok/-");
    EXPECT_TRUE(followsWithin([&] { return detail(*b_) == "0:"; })) << detail(*b_);
}

// Both loomds hear the same failure before either has followed the other's event (they are
// linked only afterwards, and the full read comes every 10 s): each opens it, and it is stored
// once, under A's key. B's job detail lists it with that row's id, as A's does, and B's recovery
// closes that row on both.
TEST_F(EventFollow, AnEventBothOpenedIsListedWithItsIdOnBoth) {
    startTwo(/*linked=*/false);
    pushXid(*a_, 79);
    pushXid(*b_, 79);
    ASSERT_TRUE(followsWithin([&] { return events(*a_).size() == 1; }));
    const auto id = events(*a_)[0].value("id", std::int64_t{0});
    for (auto* s : {a_, b_}) linkPeers(*s, "loom_event_follow_test");
    std::string onA, onB;
    EXPECT_TRUE(followsWithin([&] {
        onA = detail(*a_);
        onB = detail(*b_);
        return onA == listed(id) && onB == listed(id);
    })) << "job detail on A: "
        << onA << ", on B: " << onB;
    EXPECT_EQ(events(*b_).size(), 1u) << events(*b_).dump();
    pushXid(*b_, 0);
    ASSERT_TRUE(followsWithin([&] { return events(*b_)[0].value("state", "") == "closed"; }, 10s))
        << events(*b_).dump();
    expectClosedByRecovery(id, "");
    EXPECT_TRUE(followsWithin([&] { return gpuHealth(*a_) == "ok/-" && detail(*a_) == "0:"; }, 10s))
        << "A still holds the event B closed: " << gpuHealth(*a_) << ", " << detail(*a_);
}

}  // namespace
}  // namespace loom::backend::testing
