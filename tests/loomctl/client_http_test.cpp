// The HTTP client against a small in-process server: pagination, error bodies, auth header,
// unreachable servers, the WebSocket stream.
#include <gtest/gtest.h>

#include "loom/client/client.hpp"
#include "stub_server.hpp"

namespace loom::client {
namespace {

using nlohmann::json;
using loom::testing::StubRequest;
using loom::testing::StubResponse;
using loom::testing::StubServer;

// Pages of `per` racks named r000.. out of `total`, keyed by the cursor (the last name).
StubResponse pagedRacks(const StubRequest& r, int total) {
    int limit = 500, start = 0;
    auto q = r.target.find('?');
    std::string query = q == std::string::npos ? "" : r.target.substr(q + 1);
    std::size_t pos = 0;
    while (pos < query.size()) {
        auto amp = query.find('&', pos);
        std::string kv = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
        auto eq = kv.find('=');
        std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        if (k == "limit") limit = std::stoi(v);
        if (k == "cursor") start = std::stoi(v);
        pos = amp == std::string::npos ? query.size() : amp + 1;
    }
    json items = json::array();
    for (int i = start; i < std::min(total, start + limit); ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "r%03d", i);
        items.push_back({{"name", name}, {"state", "planned"}});
    }
    json body = {{"items", items}};
    if (start + limit < total) body["nextCursor"] = std::to_string(start + limit);
    return {200, body.dump()};
}

TEST(ClientHttp, ListFollowsNextCursorAndSendsTheToken) {
    StubServer s([](const StubRequest& r) { return pagedRacks(r, 25); });
    Client c(ClientConfig{s.url(), "tok123"});
    auto items = c.list("racks", {{"state", "planned"}}, 0, 10);
    ASSERT_TRUE(items) << items.error().toString();
    ASSERT_EQ(items->size(), 25u);
    EXPECT_EQ((*items)[24]["name"], "r024");
    auto reqs = s.requests();
    ASSERT_EQ(reqs.size(), 3u);
    EXPECT_EQ(reqs[0].target, "/api/v1/racks?state=planned&limit=10");
    EXPECT_EQ(reqs[1].target, "/api/v1/racks?state=planned&limit=10&cursor=10");
    EXPECT_EQ(reqs[0].authorization, "Bearer tok123");
    EXPECT_EQ(reqs[0].accept, "application/json");
}

TEST(ClientHttp, ListStopsAtMax) {
    StubServer s([](const StubRequest& r) { return pagedRacks(r, 100); });
    Client c(ClientConfig{s.url()});
    auto items = c.list("racks", {}, 15, 10);
    ASSERT_TRUE(items);
    EXPECT_EQ(items->size(), 15u);
    auto reqs = s.requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_NE(reqs[1].target.find("limit=5"), std::string::npos);  // only what is still wanted
}

TEST(ClientHttp, ErrorBodyKeepsMessagePathAndLine) {
    StubServer s([](const StubRequest&) {
        return StubResponse{400, R"({"error":{"code":"invalid_argument","message":"must be > 0",)"
                                 R"("path":"spec.zones[2].racks","line":14}})"};
    });
    Client c(ClientConfig{s.url()});
    auto r = c.postJson("/api/v1/apply", json::object());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_EQ(r.error().toString(), "spec.zones[2].racks: must be > 0 (line 14)");
    EXPECT_FALSE(isConnectionError(r.error()));
}

TEST(ClientHttp, StatusesMapToErrorCodes) {
    int status = 0;
    StubServer s([&](const StubRequest&) {
        return StubResponse{status, R"({"error":{"code":"x","message":"m"}})"};
    });
    Client c(ClientConfig{s.url()});
    for (auto [st, code] : std::vector<std::pair<int, Errc>>{{401, Errc::Unauthorized},
                                                             {403, Errc::Forbidden},
                                                             {404, Errc::NotFound},
                                                             {409, Errc::Conflict},
                                                             {412, Errc::PreconditionFailed},
                                                             {413, Errc::TooLarge},
                                                             {503, Errc::Unavailable},
                                                             {500, Errc::Internal}}) {
        status = st;
        auto r = c.getJson("/api/v1/racks");
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code, code) << st;
    }
}

TEST(ClientHttp, NonJsonErrorBodyIsShownRaw) {
    StubServer s([](const StubRequest&) { return StubResponse{502, "upstream down\n", "text/plain"}; });
    Client c(ClientConfig{s.url()});
    auto r = c.getJson("/healthz");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "HTTP 502 Bad Gateway: upstream down");
}

TEST(ClientHttp, YamlBodiesAreSentWithTheirContentType) {
    StubServer s([](const StubRequest&) { return StubResponse{200, R"({"applied":true})"}; });
    Client c(ClientConfig{s.url()});
    RequestOptions o;
    o.body = "apiVersion: loom/v1\n";
    o.contentType = "application/yaml";
    std::size_t lastDone = 0, lastTotal = 0;
    o.progress = [&](std::size_t d, std::size_t t) { lastDone = d, lastTotal = t; };
    auto r = c.call("POST", "/api/v1/apply?dryRun=true", std::move(o));
    ASSERT_TRUE(r);
    EXPECT_TRUE((*r)["applied"].get<bool>());
    auto reqs = s.requests();
    EXPECT_EQ(reqs[0].contentType, "application/yaml");
    EXPECT_EQ(reqs[0].body, "apiVersion: loom/v1\n");
    EXPECT_EQ(lastDone, lastTotal);
    EXPECT_EQ(lastTotal, 20u);
}

TEST(ClientHttp, RefusedConnectionIsAConnectionError) {
    // Bind a port, then close it: nothing listens there afterwards.
    std::string url;
    { StubServer s([](const StubRequest&) { return StubResponse{}; }); url = s.url(); }
    Client c(ClientConfig{url});
    auto r = c.getJson("/api/v1/racks");
    ASSERT_FALSE(r);
    EXPECT_TRUE(isConnectionError(r.error())) << r.error().message;
    EXPECT_NE(r.error().message.find(url), std::string::npos);
}

TEST(ClientHttp, BadServerUrlFailsEveryCall) {
    Client c(ClientConfig{"localhost:8480"});
    auto r = c.getJson("/healthz");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
}

TEST(ClientHttp, StreamSubscribesAndDeliversTextFrames) {
    StubServer s([](const StubRequest&) { return StubResponse{}; });
    s.streamFrames = {R"({"type":"hello","seq":1})",
                      R"({"type":"event","seq":2,"event":{"id":17,"severity":"critical"}})"};
    Client c(ClientConfig{s.url(), "tok"});
    std::vector<json> got;
    auto r = c.stream({"events"}, 5, [&](const json& m) {
        got.push_back(m);
        return true;
    });
    ASSERT_TRUE(r) << r.error().toString();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1]["event"]["id"], 17);
    auto sub = json::parse(s.lastSubscribe);
    EXPECT_EQ(sub["op"], "subscribe");
    EXPECT_EQ(sub["topics"][0], "events");
    EXPECT_EQ(sub["resumeFrom"], 5);
    EXPECT_EQ(s.requests()[0].authorization, "Bearer tok");
}

TEST(ClientHttp, StreamByeIsAnErrorWithTheReason) {
    StubServer s([](const StubRequest&) { return StubResponse{}; });
    s.streamFrames = {R"({"type":"bye","reason":"client too slow: 64 frames behind"})"};
    Client c(ClientConfig{s.url()});
    auto r = c.stream({"events"}, std::nullopt, [](const json&) { return true; });
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("client too slow"), std::string::npos);
}

}  // namespace
}  // namespace loom::client
