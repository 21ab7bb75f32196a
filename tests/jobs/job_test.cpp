#include "loom/jobs/job.hpp"

#include <gtest/gtest.h>

namespace loom::jobs {
namespace {

TEST(JobDocument, ReadsAJobWithAHostlist) {
    auto job = parseJobDocument(R"(apiVersion: loom/v1
kind: Job
metadata:
  name: llama-70b
  labels: {team: llm}
spec:
  owner: alice
  hosts: z1-r[002-001]-h[0-1]
  pattern: allgather
  tensorParallel: 4
  state: running
)");
    ASSERT_FALSE(job.has_value());  // [002-001] is a reversed range
    EXPECT_EQ(job.error().path, "spec.hosts");
    EXPECT_EQ(job.error().line, 8);
    EXPECT_NE(job.error().message.find("column 10"), std::string::npos) << job.error().message;

    job = parseJobDocument(R"(apiVersion: loom/v1
kind: Job
metadata:
  name: llama-70b
  labels: {team: llm}
spec:
  owner: alice
  hosts: z1-r[001-002]-h[0-1],z1-r001-h0
  pattern: allgather
  tensorParallel: 4
  state: running
)");
    ASSERT_TRUE(job.has_value()) << job.error().toString();
    EXPECT_EQ(job->name, "llama-70b");
    EXPECT_EQ(job->owner, "alice");
    EXPECT_EQ(job->hosts,
              (std::vector<std::string>{"z1-r001-h0", "z1-r001-h1", "z1-r002-h0", "z1-r002-h1"}));
    EXPECT_EQ(job->gpus(), 32);
    EXPECT_EQ(job->pattern, fabric::Collective::AllGather);
    EXPECT_EQ(job->tensorParallel, 4);
    EXPECT_EQ(job->state, JobState::Running);
    EXPECT_EQ(job->source, JobSource::Apply);
    ASSERT_EQ(job->labels.size(), 1u);
    EXPECT_EQ(job->labels[0], (std::pair<std::string, std::string>{"team", "llm"}));
}

TEST(JobDocument, ReadsJsonAndAHostListWithDefaults) {
    auto job = parseJobDocument(
        R"({"apiVersion": "loom/v1", "kind": "Job", "metadata": {"name": "j1"},
            "spec": {"hosts": ["z1-r002-h0", "z1-r001-h1"]}})",
        JobSource::Simulator);
    ASSERT_TRUE(job.has_value()) << job.error().toString();
    EXPECT_EQ(job->hosts, (std::vector<std::string>{"z1-r001-h1", "z1-r002-h0"}));
    EXPECT_EQ(job->pattern, fabric::Collective::AllReduce);
    EXPECT_EQ(job->state, JobState::Pending);
    EXPECT_EQ(job->tensorParallel, 1);
    EXPECT_EQ(job->source, JobSource::Simulator);
}

TEST(JobDocument, ErrorsNamePathAndLine) {
    struct Case {
        const char* spec;  // lines 6.. of the document
        const char* path;
        int line;
        const char* message;
    } cases[] = {
        {"  hosts: h1\n  patern: allreduce\n", "spec.patern", 7, "did you mean \"pattern\""},
        {"  hosts: h1\n  pattern: ring\n", "spec.pattern", 7, "unknown pattern \"ring\""},
        {"  hosts: h1\n  tensorParallel: 3\n", "spec.tensorParallel", 7, "must divide"},
        {"  hosts: h1\n  tensorParallel: 16\n", "spec.tensorParallel", 7, "8"},
        {"  hosts: h1\n  state: done\n", "spec.state", 7, "unknown state \"done\""},
        {"  hosts: [h1, \"a b\"]\n", "spec.hosts[1]", 6, "not allowed"},
        {"  hosts: []\n", "spec.hosts", 6, "at least one host"},
        {"  owner: x\n", "spec.hosts", 6, "missing required key"},
    };
    for (auto& c : cases) {
        std::string doc = "apiVersion: loom/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n";
        doc += c.spec;
        auto job = parseJobDocument(doc);
        ASSERT_FALSE(job.has_value()) << c.spec;
        EXPECT_EQ(job.error().code, Errc::InvalidArgument) << c.spec;
        EXPECT_EQ(job.error().path, c.path) << c.spec << " -> " << job.error().toString();
        EXPECT_EQ(job.error().line, c.line) << c.spec << " -> " << job.error().toString();
        EXPECT_NE(job.error().message.find(c.message), std::string::npos)
            << c.spec << " -> " << job.error().toString();
    }
    auto wrongKind = parseJobDocument(
        "apiVersion: loom/v1\nkind: Cluster\nmetadata: {name: j}\nspec: {hosts: h1}\n");
    ASSERT_FALSE(wrongKind.has_value());
    EXPECT_EQ(wrongKind.error().path, "kind");
    auto badName = parseJobDocument(
        "apiVersion: loom/v1\nkind: Job\nmetadata: {name: 'a/b'}\nspec: {hosts: h1}\n");
    ASSERT_FALSE(badName.has_value());
    EXPECT_EQ(badName.error().path, "metadata.name");
    auto notYaml = parseJobDocument("apiVersion: [\n");
    ASSERT_FALSE(notYaml.has_value());
    EXPECT_EQ(notYaml.error().code, Errc::InvalidArgument);
}

}  // namespace
}  // namespace loom::jobs

namespace loom::jobs {
namespace {

// Overlap (issue 34 item 5): the document says whether it shares; the overlap names each other
// job with the hosts both name, and the error names the first job and its hosts as a hostlist.
TEST(JobOverlap, SharesHostsIsReadAndOverlapsNameTheJobAndTheHosts) {
    auto doc = [](std::string extra) {
        return parseJobDocument(
            "apiVersion: loom/v1\nkind: Job\nmetadata: {name: b}\nspec:\n"
            "  hosts: z1-r[001-003]-h[0-1]\n  state: running\n" +
            extra);
    };
    auto plain = doc("");
    ASSERT_TRUE(plain) << plain.error().toString();
    EXPECT_FALSE(plain->sharesHosts);
    auto shares = doc("  sharesHosts: true\n");
    ASSERT_TRUE(shares);
    EXPECT_TRUE(shares->sharesHosts);
    auto bad = doc("  sharesHosts: maybe\n");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().path, "spec.sharesHosts");

    Job a{.name = "a", .hosts = {"z1-r001-h1", "z1-r002-h0", "z1-r009-h0"}};
    Job c{.name = "c", .hosts = {"z1-r003-h1"}};
    Job d{.name = "d", .hosts = {"z2-r001-h0"}};
    auto ov = hostOverlaps("b", plain->hosts, {a, *plain, c, d});
    ASSERT_EQ(ov.size(), 2u) << "b itself and d are not overlaps";
    EXPECT_EQ(ov[0].job, "a");
    EXPECT_EQ(ov[0].hosts, (std::vector<std::string>{"z1-r001-h1", "z1-r002-h0"}));
    EXPECT_EQ(ov[1].job, "c");
    auto e = overlapError(*plain, ov);
    EXPECT_EQ(e.code, Errc::Conflict);
    EXPECT_EQ(e.path, "spec.hosts");
    EXPECT_NE(e.message.find("2 hosts of running job 'a' (z1-r001-h1,z1-r002-h0)"),
              std::string::npos)
        << e.message;
    EXPECT_NE(e.message.find("1 other running job ('c')"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("sharesHosts"), std::string::npos);
    EXPECT_TRUE(hostOverlaps("b", plain->hosts, {d}).empty());
}

}  // namespace
}  // namespace loom::jobs
