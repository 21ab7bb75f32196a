// Jobs over the real server (issue 15): PUT/POST of kind: Job documents, list with filters,
// get with ETag, delete, the jobs stream topic, and bad input as a 4xx naming the place.
#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

class JobsApi : public ServerFixture {};

const char* kJob = R"(apiVersion: loom/v1
kind: Job
metadata:
  name: llama
  labels: {team: llm}
spec:
  owner: alice
  hosts: z1-r[001-002]-h[0-1]
  pattern: allreduce
  tensorParallel: 8
  state: running
)";

std::vector<std::pair<std::string, std::string>> yaml() {
    return {{"Content-Type", "application/yaml"}};
}

TEST_F(JobsApi, PutGetListDeleteAndTheStreamTopic) {
    auto& s = startServer();
    const auto port = s.port();
    WsClient ws;
    ws.open(port, tokens_["viewer"]);
    ws.send({{"op", "subscribe"}, {"topics", {"jobs"}}, {"resumeFrom", 0}});
    // resumeFrom 0 answers resync once the subscription is live.
    for (int i = 0; i < 5; ++i) {
        auto m = ws.readFor(std::chrono::seconds(5));
        ASSERT_TRUE(m);
        if ((*m)["type"] == "resync") break;
    }

    auto viewerPut = request(port, "PUT", "/api/v1/jobs/llama", tokens_["viewer"], kJob, yaml());
    EXPECT_EQ(viewerPut.status, 403);
    auto put = request(port, "PUT", "/api/v1/jobs/llama", tokens_["operator"], kJob, yaml());
    ASSERT_EQ(put.status, 201) << put.body;
    auto j = put.j();
    EXPECT_EQ(j["nodelist"], "z1-r[001-002]-h[0-1]");
    EXPECT_EQ(j["hosts"].size(), 4u);
    EXPECT_EQ(j["gpus"], 32);
    EXPECT_EQ(j["source"], "apply");
    EXPECT_EQ(j["state"], "running");
    EXPECT_EQ(j["labels"]["team"], "llm");
    EXPECT_EQ(put.headers["ETag"], "\"1\"");

    bool sawJob = false;
    for (int i = 0; i < 10 && !sawJob; ++i) {
        auto m = ws.readFor(std::chrono::seconds(5));
        ASSERT_TRUE(m) << "no jobs message";
        sawJob = (*m)["type"] == "job" && (*m)["job"]["name"] == "llama";
    }
    EXPECT_TRUE(sawJob);

    // The same document again: 200, nothing changed.
    auto again = request(port, "POST", "/api/v1/jobs", tokens_["operator"], kJob, yaml());
    ASSERT_EQ(again.status, 200) << again.body;
    EXPECT_EQ(again.j()["changed"], false);
    EXPECT_EQ(again.j()["resourceVersion"], 1);

    auto get = request(port, "GET", "/api/v1/jobs/llama", tokens_["viewer"]);
    ASSERT_EQ(get.status, 200);
    EXPECT_EQ(get.j()["owner"], "alice");
    EXPECT_EQ(get.headers["ETag"], "\"1\"");
    EXPECT_EQ(request(port, "GET", "/api/v1/jobs/nope", tokens_["viewer"]).status, 404);

    auto list =
        request(port, "GET", "/api/v1/jobs?state=running&host=z1-r002-h1", tokens_["viewer"]);
    ASSERT_EQ(list.status, 200) << list.body;
    ASSERT_EQ(list.j()["items"].size(), 1u);
    EXPECT_EQ(list.j()["items"][0]["name"], "llama");
    auto none = request(port, "GET", "/api/v1/jobs?owner=bob", tokens_["viewer"]);
    EXPECT_EQ(none.j()["items"].size(), 0u);
    auto badFilter = request(port, "GET", "/api/v1/jobs?zone=z1", tokens_["viewer"]);
    EXPECT_EQ(badFilter.status, 400);
    EXPECT_EQ(badFilter.j()["error"]["path"], "zone");

    // A stale If-Match is a 412; the current one replaces.
    std::string done = kJob;
    done.replace(done.find("state: running"), 14, "state: completed");
    EXPECT_EQ(request(port, "PUT", "/api/v1/jobs/llama", tokens_["operator"], done,
                      {{"Content-Type", "application/yaml"}, {"If-Match", "\"9\""}})
                  .status,
              412);
    auto replaced = request(port, "PUT", "/api/v1/jobs/llama", tokens_["operator"], done,
                            {{"Content-Type", "application/yaml"}, {"If-Match", "\"1\""}});
    ASSERT_EQ(replaced.status, 200) << replaced.body;
    EXPECT_EQ(replaced.j()["state"], "completed");
    EXPECT_FALSE(replaced.j()["finishedAt"].is_null());

    auto del = request(port, "DELETE", "/api/v1/jobs/llama", tokens_["operator"]);
    ASSERT_EQ(del.status, 200) << del.body;
    EXPECT_EQ(request(port, "DELETE", "/api/v1/jobs/llama", tokens_["operator"]).status, 404);
}

TEST_F(JobsApi, BadDocumentsAre400sNamingPathAndLine) {
    auto& s = startServer();
    const auto port = s.port();
    std::string badHosts = kJob;
    badHosts.replace(badHosts.find("z1-r[001-002]"), 13, "z1-r[001-002");
    auto r = request(port, "PUT", "/api/v1/jobs/llama", tokens_["operator"], badHosts, yaml());
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.j()["error"]["path"], "spec.hosts");
    EXPECT_EQ(r.j()["error"]["line"], 8);
    EXPECT_NE(r.j()["error"]["message"].get<std::string>().find("column 13: expected ','"),
              std::string::npos)
        << r.body;

    auto other = request(port, "PUT", "/api/v1/jobs/other", tokens_["operator"], kJob, yaml());
    ASSERT_EQ(other.status, 400);
    EXPECT_EQ(other.j()["error"]["path"], "metadata.name");

    auto json = request(port, "POST", "/api/v1/jobs", tokens_["operator"],
                        R"({"apiVersion": "loom/v1", "kind": "Job", "metadata": {"name": "j"},
                            "spec": {"hosts": "h[1-99999]"}})",
                        {{"Content-Type", "application/json"}});
    EXPECT_EQ(json.status, 413) << json.body;
    auto garbage = request(port, "POST", "/api/v1/jobs", tokens_["operator"], "\x01\x02[[[",
                           {{"Content-Type", "application/yaml"}});
    EXPECT_EQ(garbage.status, 400) << garbage.body;
}

}  // namespace
}  // namespace loom::backend::testing
