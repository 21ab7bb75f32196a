// PostgreSQL restarted under load: writers and readers keep hitting loomd over HTTP while the
// database restarts (fast, then immediate = a crash). loomd must answer every request (2xx, or
// 503 naming the database while it is away; never a 500, never a hang), report not-ready while
// the database is down, come back by itself, and keep every write it acknowledged.
#include "server_fixture.hpp"

#include <atomic>
#include <iostream>
#include <cstdlib>
#include <map>
#include <mutex>

#include <unistd.h>

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

class PgRestart : public ServerFixture {
protected:
    // pg_ctl restart of the test harness's PostgreSQL (as `postgres` when running as root).
    static bool restartPostgres(const char* mode) {
        auto* pg = loom::testing::sharedPostgres();
        if (!pg) return false;
        const std::string data = (pg->stateDir() / "pgdata").string();
        std::string cmd = "/usr/lib/postgresql/15/bin/pg_ctl restart -s -w -t 60 -m " +
                          std::string(mode) + " -D '" + data + "' -l '" + pg->logFile().string() +
                          "' >/dev/null 2>&1";
        if (::geteuid() == 0) cmd = "runuser -u postgres -- " + cmd;
        return std::system(cmd.c_str()) == 0;
    }
};

TEST_F(PgRestart, LoomdRidesThroughAndLosesNoAcknowledgedWrite) {
    auto& s = startServer({}, Routes::Core);
    const std::string op = tokens_["operator"];
    const std::vector<std::string> racks = {"z1-r001", "z1-r002", "z1-r003"};

    std::atomic<bool> stop{false};
    std::mutex mu;
    std::map<int, int> statuses;                  // HTTP status -> count (0: no response)
    std::map<std::string, int> lastAcked;         // rack -> highest acknowledged sequence
    std::vector<std::string> badBodies;
    auto record = [&](const HttpResult& r) {
        std::lock_guard l(mu);
        ++statuses[r.status];
        if (r.status >= 500 && r.status != 503) badBodies.push_back(std::to_string(r.status) + " " + r.body);
        if (r.status == 503 && r.body.find("database") == std::string::npos)
            badBodies.push_back("503 without naming the database: " + r.body);
    };
    std::vector<std::thread> threads;
    for (const auto& rack : racks) {
        threads.emplace_back([&, rack] {
            for (int seq = 1; !stop; ++seq) {
                auto r = request(s.port(), "PATCH", "/api/v1/racks/" + rack, op,
                                 R"({"labels":{"seq":")" + std::to_string(seq) + R"("}})");
                record(r);
                if (r.status >= 200 && r.status < 300) {
                    std::lock_guard l(mu);
                    lastAcked[rack] = seq;
                }
                std::this_thread::sleep_for(5ms);
            }
        });
    }
    threads.emplace_back([&] {
        while (!stop) {
            record(request(s.port(), "GET", "/api/v1/racks?limit=3", tokens_["viewer"]));
            std::this_thread::sleep_for(5ms);
        }
    });

    std::this_thread::sleep_for(1s);
    ASSERT_TRUE(restartPostgres("fast"));
    std::this_thread::sleep_for(1500ms);
    ASSERT_TRUE(restartPostgres("immediate"));  // a crash: no checkpoint, clients cut
    std::this_thread::sleep_for(2s);

    // Back by itself: ready, and writes succeed again.
    bool ready = false;
    for (int i = 0; i < 100 && !ready; ++i) {
        ready = request(s.port(), "GET", "/readyz").status == 200;
        if (!ready) std::this_thread::sleep_for(100ms);
    }
    std::this_thread::sleep_for(1s);
    stop = true;
    for (auto& t : threads) t.join();
    EXPECT_TRUE(ready) << "loomd did not become ready again after PostgreSQL came back";
    // The pool replaced its broken connections: reads and writes work on every pool thread.
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(request(s.port(), "GET", "/api/v1/racks/z1-r004", tokens_["viewer"]).status, 200);
        EXPECT_EQ(request(s.port(), "PATCH", "/api/v1/racks/z1-r004", op,
                          R"({"labels":{"after":")" + std::to_string(i) + R"("}})").status, 200);
    }
    EXPECT_EQ(request(s.port(), "GET", "/healthz").status, 200);

    std::string summary;
    for (auto& [code, n] : statuses) summary += std::to_string(code) + ":" + std::to_string(n) + " ";
    EXPECT_EQ(statuses[0], 0) << "requests without a response (hang or reset): " << summary;
    EXPECT_GT(statuses[200], 50) << summary;
    EXPECT_TRUE(badBodies.empty()) << summary << "\n" << (badBodies.empty() ? "" : badBodies.front());
    std::cout << "statuses during two restarts: " << summary << "\n";

    // Every acknowledged write is there: the stored sequence is at least the last one that got
    // a 2xx (a later write whose outcome was unknown may also have landed).
    auto conn = connect();
    for (const auto& rack : racks) {
        auto v = conn.queryValue("SELECT user_labels->>'seq' FROM racks WHERE name = '" + rack + "'");
        ASSERT_TRUE(v && *v) << rack;
        EXPECT_GE(std::stoi(**v), lastAcked[rack]) << rack << ": an acknowledged write was lost";
        EXPECT_GT(lastAcked[rack], 0) << rack;
    }
}

}  // namespace
}  // namespace loom::backend::testing
