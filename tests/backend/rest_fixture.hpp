// A ServerFixture whose tests read a loomd's REST as the viewer and write it as the operator,
// with every read expected to answer 200: the event tests over one or two loomds
// (event_counts_test, event_follow_test, live_state_test) and the jobs tests (jobs_health_test,
// lemons_test, straggler_live_test).
//
//   class MyTest : public RestFixture {};
//   const auto jobs = get(s, "/api/v1/jobs?state=running");
//   ASSERT_EQ(post(s, "/api/v1/telemetry", body, "text/plain").status, 200);
#pragma once

#include <string>

#include "server_fixture.hpp"

namespace loom::backend::testing {

class RestFixture : public ServerFixture {
protected:
    json get(Server& s, const std::string& path) {
        auto r = request(s.port(), "GET", path, tokens_["viewer"]);
        EXPECT_EQ(r.status, 200) << path << ": " << r.body;
        return r.j();
    }
    HttpResult post(Server& s, const std::string& path, const std::string& body,
                    const std::string& type = "application/json") {
        return request(s.port(), "POST", path, tokens_["operator"], body, {{"Content-Type", type}});
    }
};

}  // namespace loom::backend::testing
