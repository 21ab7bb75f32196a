// The auth matrix: every route `loomd serve` registers × every role, over real HTTP.
//
// The expected role of each route is written here, from the policy of docs/api.md (reads need
// viewer, mutations operator, token and phase administration admin), not read back from the
// router, so a route registered with the wrong role fails. A route that has no case here fails
// too: adding an endpoint means adding it to this table.
#include "server_fixture.hpp"

#include <boost/system/system_error.hpp>

#include <set>

namespace loom::backend::testing {
namespace {

struct Case {
    std::string method;
    std::string pattern;  // the route it covers, as registered
    std::string target;   // a concrete request of that route
    Role needs;
    std::string body = {};
};

std::vector<Case> cases() {
    std::vector<Case> c;
    for (auto k : inventory::kAllKinds) {
        std::string base = "/api/v1/" + std::string(inventory::kindPlural(k));
        c.push_back({"GET", base, base + "?limit=2", Role::Viewer});
        c.push_back({"GET", base + "/{name}", base + "/no-such-object", Role::Viewer});
        c.push_back({"PATCH", base + "/{name}", base + "/no-such-object", Role::Operator,
                     R"({"labels":{"a":"b"}})"});
    }
    auto add = [&](std::string method, std::string pattern, std::string target, Role needs,
                   std::string body = {}) {
        c.push_back({std::move(method), std::move(pattern), std::move(target), needs, std::move(body)});
    };
    add("GET", "/healthz", "/healthz", Role::None);
    add("GET", "/readyz", "/readyz", Role::None);
    add("GET", "/metrics", "/metrics", Role::Viewer);
    add("GET", "/api/v1/summary", "/api/v1/summary", Role::Viewer);
    add("GET", "/api/v1/hall", "/api/v1/hall", Role::Viewer);
    add("POST", "/api/v1/apply", "/api/v1/apply?dryRun=true", Role::Operator, "{}");
    add("GET", "/api/v1/fabric/topology", "/api/v1/fabric/topology", Role::Viewer);
    add("GET", "/api/v1/fabric/routes/{switch}", "/api/v1/fabric/routes/z1-r001-rtsw", Role::Viewer);
    add("GET", "/api/v1/fabric/config/{switch}", "/api/v1/fabric/config/z1-r001-rtsw", Role::Viewer);
    add("GET", "/api/v1/fabric/export", "/api/v1/fabric/export?format=json", Role::Viewer);
    add("GET", "/api/v1/fabric/degradation", "/api/v1/fabric/degradation", Role::Viewer);
    add("POST", "/api/v1/fabric/impact", "/api/v1/fabric/impact", Role::Viewer,
        R"({"hosts":["z1-r001-h0","z1-r002-h0"],"collective":"allreduce"})");
    add("GET", "/api/v1/tokens", "/api/v1/tokens", Role::Admin);
    add("POST", "/api/v1/tokens", "/api/v1/tokens", Role::Admin, R"({"name":"x","role":"viewer"})");
    add("DELETE", "/api/v1/tokens/{name}", "/api/v1/tokens/no-such-token", Role::Admin);
    add("POST", "/api/v1/telemetry", "/api/v1/telemetry", Role::Operator,
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"z1-r001-h0\"} 42\n");
    add("GET", "/api/v1/events", "/api/v1/events?limit=5", Role::Viewer);
    add("POST", "/api/v1/events/{id}/ack", "/api/v1/events/987654321/ack", Role::Operator, "{}");
    add("POST", "/api/v1/events/{id}/close", "/api/v1/events/987654321/close", Role::Operator, "{}");
    add("GET", "/api/v1/telemetry/rollups", "/api/v1/telemetry/rollups?scope=rack", Role::Viewer);
    add("GET", "/api/v1/telemetry/targets", "/api/v1/telemetry/targets?kind=node", Role::Viewer);
    add("GET", "/api/v1/telemetry/unknown", "/api/v1/telemetry/unknown?limit=5", Role::Viewer);
    add("GET", "/api/v1/sd/prometheus", "/api/v1/sd/prometheus?exporter=dcgm", Role::Viewer);
    add("GET", "/api/v1/telemetry/gpus/{name}", "/api/v1/telemetry/gpus/z1-r001-h0-gpu0", Role::Viewer);
    add("GET", "/api/v1/failures", "/api/v1/failures", Role::Viewer);
    add("GET", "/api/v1/catalog/xid", "/api/v1/catalog/xid", Role::Viewer);
    add("GET", "/api/v1/legends", "/api/v1/legends", Role::Viewer);
    add("POST", "/api/v1/phaseplans", "/api/v1/phaseplans", Role::Admin, "{}");
    add("GET", "/api/v1/phases", "/api/v1/phases", Role::Viewer);
    add("POST", "/api/v1/phases/{name}/{op}", "/api/v1/phases/no-such-phase/pause", Role::Admin);
    add("POST", "/api/v1/racks/{name}/{action}", "/api/v1/racks/z1-r001/advance", Role::Operator, "{}");
    add("POST", "/api/v1/hosts/{name}/quarantine", "/api/v1/hosts/no-such-host/quarantine",
        Role::Operator, R"({"reason":"test"})");
    add("GET", "/api/v1/provisioning/audit", "/api/v1/provisioning/audit", Role::Viewer);
    add("GET", "/api/v1/jobs", "/api/v1/jobs?limit=2", Role::Viewer);
    add("GET", "/api/v1/jobs/{name}", "/api/v1/jobs/no-such-job", Role::Viewer);
    add("PUT", "/api/v1/jobs/{name}", "/api/v1/jobs/no-such-job", Role::Operator, "{}");
    add("POST", "/api/v1/jobs", "/api/v1/jobs", Role::Operator, "{}");
    add("DELETE", "/api/v1/jobs/{name}", "/api/v1/jobs/no-such-job", Role::Operator);
    add("POST", "/api/v1/jobs/sync/slurm", "/api/v1/jobs/sync/slurm", Role::Operator, "{}");
    add("POST", "/api/v1/placement", "/api/v1/placement", Role::Viewer, R"({"gpus": 16})");
    add("GET", "/api/v1/lemons", "/api/v1/lemons", Role::Viewer);
    // The web dashboard is public (the page holds no data); whoami needs any token.
    add("GET", "/", "/", Role::None);
    add("GET", "/assets/{file}", "/assets/no-such-asset.js", Role::None);
    add("GET", "/api/v1/whoami", "/api/v1/whoami", Role::Viewer);
    return c;
}

class AuthMatrix : public ServerFixture {};

TEST_F(AuthMatrix, EveryRouteAndRole) {
    auto& s = startServer({}, Routes::All);
    const auto table = cases();

    // Coverage both ways: every registered route has a case with the policy's role, and every
    // case names a registered route.
    std::set<std::pair<std::string, std::string>> covered;
    for (const auto& c : table) covered.emplace(c.method, c.pattern);
    std::set<std::pair<std::string, std::string>> registered;
    for (const auto& r : s.router().routes()) {
        registered.emplace(r.method, r.pattern);
        EXPECT_TRUE(covered.contains({r.method, r.pattern}))
            << r.method << " " << r.pattern << " has no case in the auth matrix: add one";
        for (const auto& c : table)
            if (c.method == r.method && c.pattern == r.pattern)
                EXPECT_EQ(roleName(r.role), roleName(c.needs))
                    << r.method << " " << r.pattern << " is registered with the wrong role";
    }
    for (const auto& c : table)
        EXPECT_TRUE(registered.contains({c.method, c.pattern})) << c.method << " " << c.pattern
                                                                << " is not a route any more";

    const std::pair<const char*, Role> roles[] = {
        {"", Role::None}, {"viewer", Role::Viewer}, {"operator", Role::Operator}, {"admin", Role::Admin}};
    int n = 0;
    for (const auto& c : table) {
        for (const auto& [name, role] : roles) {
            std::string tok = role == Role::None ? "" : tokens_[name];
            std::string body = c.body;
            if (c.target == "/api/v1/tokens" && c.method == "POST")
                body = R"({"name":"matrix-)" + std::to_string(n++) + R"(","role":"viewer"})";
            auto r = request(s.port(), c.method, c.target, tok, body);
            std::string what = c.method + " " + c.target + " as " + (role == Role::None ? "anonymous" : name);
            ASSERT_NE(r.status, 0) << what << ": no response";
            if (role < c.needs && role == Role::None) {
                EXPECT_EQ(r.status, 401) << what << ": " << r.body;
                EXPECT_NE(r.body.find("needs a token with role " + std::string(roleName(c.needs))),
                          std::string::npos)
                    << what << ": " << r.body;
            } else if (role < c.needs) {
                EXPECT_EQ(r.status, 403) << what << ": " << r.body;
                EXPECT_NE(r.body.find(std::string("has ") + name), std::string::npos) << what << ": " << r.body;
                EXPECT_NE(r.body.find(std::string(roleName(c.needs))), std::string::npos)
                    << what << ": the 403 should name the role needed: " << r.body;
            } else {
                // Allowed: anything but an auth failure or a server error (a 400 for "{}" as a
                // spec, a 404 for a name that does not exist, a 409 for a refused transition).
                EXPECT_NE(r.status, 401) << what << ": " << r.body;
                EXPECT_NE(r.status, 403) << what << ": " << r.body;
                EXPECT_LT(r.status, 500) << what << ": " << r.body;
            }
        }
    }

    // A token that is not one, and a revoked one.
    auto bad = request(s.port(), "GET", "/api/v1/racks", "loom_not_a_real_token");
    EXPECT_EQ(bad.status, 401);
    EXPECT_NE(bad.body.find("invalid or revoked"), std::string::npos) << bad.body;
    auto revoke = request(s.port(), "DELETE", "/api/v1/tokens/viewer-token", tokens_["admin"]);
    EXPECT_LT(revoke.status, 300) << revoke.body;
    auto revoked = request(s.port(), "GET", "/api/v1/racks", tokens_["viewer"]);
    EXPECT_EQ(revoked.status, 401) << revoked.body;
}

// The WebSocket stream needs a viewer token like every read.
TEST_F(AuthMatrix, StreamNeedsAToken) {
    auto& s = startServer({}, Routes::All);
    WsClient anonymous;
    EXPECT_THROW(anonymous.open(s.port(), ""), boost::system::system_error);
    WsClient viewer;
    viewer.open(s.port(), tokens_["viewer"]);
    auto hello = viewer.read();
    EXPECT_EQ(hello["type"], "hello");
    EXPECT_EQ(hello["role"], "viewer");
}

}  // namespace
}  // namespace loom::backend::testing
