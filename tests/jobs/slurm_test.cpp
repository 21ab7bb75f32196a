// The Slurm adapter (issue 15 item 1): the outputs of the real `squeue --json -t all` and
// `scontrol show job` of slurm-wlm 22.05.8 (tests/jobs/data/slurm/README.md says how they were
// recorded) become the same Job objects of source slurm; bad text is an error naming the place.
#include "loom/jobs/slurm.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace loom::jobs {
namespace {

std::string readData(const std::string& name) {
    std::ifstream in(std::string(LOOM_JOBS_TEST_DATA) + "/slurm/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void expectRecordedJobs(const std::vector<Job>& jobs) {
    ASSERT_EQ(jobs.size(), 4u);
    const auto& llama = jobs[0];
    EXPECT_EQ(llama.name, "slurm-1");
    EXPECT_EQ(llama.owner, "root");
    EXPECT_EQ(llama.state, JobState::Running);
    EXPECT_EQ(llama.source, JobSource::Slurm);
    EXPECT_EQ(llama.hosts, (std::vector<std::string>{"z1-r001-h0", "z1-r001-h1"}));
    EXPECT_EQ(llama.tensorParallel, kGpusPerHost);
    EXPECT_EQ(llama.labels, (inventory::Labels{{"slurm.id", "1"},
                                               {"slurm.name", "llama"},
                                               {"slurm.partition", "train"},
                                               {"slurm.state", "RUNNING"}}));
    EXPECT_EQ(jobs[1].name, "slurm-2");
    EXPECT_EQ(jobs[1].state, JobState::Failed) << "cancelled";
    EXPECT_EQ(jobs[1].hosts, (std::vector<std::string>{"z1-r002-h0"}));
    EXPECT_EQ(jobs[2].name, "slurm-3");
    EXPECT_EQ(jobs[2].state, JobState::Pending);
    EXPECT_TRUE(jobs[2].hosts.empty()) << "pending: no nodes yet";
    EXPECT_EQ(jobs[3].labels[1].second, "quick");
    EXPECT_EQ(jobs[3].state, JobState::Pending);
}

TEST(Slurm, SqueueJsonOfARealSlurmctldBecomesJobs) {
    auto jobs = parseSqueueJson(readData("squeue-22.05.8.json"));
    ASSERT_TRUE(jobs) << jobs.error().toString();
    expectRecordedJobs(*jobs);
}

TEST(Slurm, ScontrolShowJobGivesTheSameJobs) {
    auto a = parseScontrolShowJob(readData("scontrol-show-job-22.05.8.txt"));
    ASSERT_TRUE(a) << a.error().toString();
    expectRecordedJobs(*a);
    auto b = parseSqueueJson(readData("squeue-22.05.8.json"));
    ASSERT_TRUE(b);
    EXPECT_EQ(*a, *b);
    auto none = parseScontrolShowJob("No jobs in the system\n");
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    // Only that line alone means no jobs: a job may be named so.
    auto named =
        parseScontrolShowJob("JobId=9 JobName=No jobs in the system\n   JobState=PENDING\n");
    ASSERT_TRUE(named) << named.error().toString();
    ASSERT_EQ(named->size(), 1u);
    EXPECT_EQ((*named)[0].labels[1].second, "No jobs in the system");
}

TEST(Slurm, BadOutputIsAnErrorNamingThePlace) {
    auto notJson = parseSqueueJson("squeue: error: Could not establish a configuration source");
    ASSERT_FALSE(notJson);
    EXPECT_EQ(notJson.error().code, Errc::InvalidArgument);
    auto badNodes = parseSqueueJson(
        R"({"jobs": [{"job_id": 7, "name": "x", "user_name": "bob", "job_state": "RUNNING",
            "partition": "p", "nodes": "z1-r[001-"}]})");
    ASSERT_FALSE(badNodes);
    EXPECT_EQ(badNodes.error().path, "jobs[0].nodes") << badNodes.error().toString();
    auto noJobs = parseSqueueJson(R"({"meta": {}})");
    ASSERT_FALSE(noJobs);
    EXPECT_EQ(noJobs.error().path, "jobs");
    auto garbage = parseScontrolShowJob("hello world\n");
    ASSERT_FALSE(garbage);
    EXPECT_EQ(garbage.error().path, "line 1");
    // scontrol's errors name its own key, at its line.
    auto badList = parseScontrolShowJob(
        "JobId=1 JobName=a\n   JobState=RUNNING\n\nJobId=2 JobName=b\n   UserId=bob(1001)\n"
        "   NodeList=z1-r[001-\n");
    ASSERT_FALSE(badList);
    EXPECT_EQ(badList.error().path, "job 1.NodeList") << badList.error().toString();
    EXPECT_EQ(badList.error().line, 6) << badList.error().toString();
    EXPECT_EQ(slurmJobState("CANCELLED by 0"), JobState::Failed);
    EXPECT_EQ(slurmJobState("COMPLETING"), JobState::Running);
    EXPECT_EQ(slurmJobState("COMPLETED"), JobState::Completed);
}

// Issue 39: what a Slurm output may hold is bounded before a name is built. A 2 KB body stored
// 134 MB of names; an 8 MB body cost +167 MB before its 400.
TEST(Slurm, OutputsAreBoundedInNamesAndBytes) {
    auto job = [](int id, const std::string& nodes) {
        return R"({"job_id": )" + std::to_string(id) + R"(, "job_state": "RUNNING", "nodes": ")" +
               nodes + "\"}";
    };
    // One job of names longer than a stored name: refused at the column, nothing expanded.
    auto longNames =
        parseSqueueJson(R"({"jobs": [)" + job(1, std::string(1990, 'n') + "[1-65536]") + "]}");
    ASSERT_FALSE(longNames);
    EXPECT_EQ(longNames.error().path, "jobs[0].nodes");
    EXPECT_NE(longNames.error().message.find("names of more than 128 characters"),
              std::string::npos)
        << longNames.error().message;
    // One job over the hosts of a job.
    auto bigJob = parseSqueueJson(R"({"jobs": [)" + job(1, "h[1-16385]") + "]}");
    ASSERT_FALSE(bigJob);
    EXPECT_EQ(bigJob.error().code, Errc::TooLarge);
    // Jobs each within a job's limit, together over the output's: 9 x 16,384 > 131,072 hosts.
    std::string body = R"({"jobs": [)";
    for (int i = 0; i < 9; ++i) body += (i ? "," : "") + job(i + 1, "h[00001-16384]");
    auto many = parseSqueueJson(body + "]}");
    ASSERT_FALSE(many);
    EXPECT_EQ(many.error().code, Errc::TooLarge);
    EXPECT_EQ(many.error().path, "jobs[8].nodes");
    EXPECT_NE(many.error().message.find("131072 hosts"), std::string::npos) << many.error().message;
    // 8 jobs of 16,384 hosts fit.
    body = R"({"jobs": [)";
    for (int i = 0; i < 8; ++i) body += (i ? "," : "") + job(i + 1, "h[00001-16384]");
    auto fits = parseSqueueJson(body + "]}");
    ASSERT_TRUE(fits) << fits.error().toString();
    EXPECT_EQ(fits->size(), 8u);
    // Fields that are not read are skipped while parsing, whatever their size...
    std::string skipped = R"({"meta": {"x": [)";
    for (int i = 0; i < 300'000; ++i) skipped += "1,";
    skipped += R"(1]}, "jobs": [{"job_id": 5, "flags": [)";
    for (int i = 0; i < 300'000; ++i) skipped += "1,";
    skipped += R"(1], "job_state": "PENDING"}]})";
    auto ok = parseSqueueJson(skipped);
    ASSERT_TRUE(ok) << ok.error().toString();
    ASSERT_EQ(ok->size(), 1u);
    EXPECT_EQ((*ok)[0].name, "slurm-5");
    // ... and what is kept is at most 200,000 values, as every request body.
    std::string kept = R"({"jobs": [)";
    for (int i = 0; i < 200'001; ++i) kept += i ? ",{}" : "{}";
    auto tooMany = parseSqueueJson(kept + "]}");
    ASSERT_FALSE(tooMany);
    EXPECT_EQ(tooMany.error().code, Errc::TooLarge);
    EXPECT_NE(tooMany.error().message.find("200000 JSON values"), std::string::npos);
    auto deep = parseSqueueJson(R"({"jobs": [{"name": )" + std::string(100, '[') +
                                std::string(100, ']') + "}]}");
    ASSERT_FALSE(deep);
    EXPECT_NE(deep.error().message.find("deeper than 64"), std::string::npos)
        << deep.error().message;
    // A user name of 10,000 characters is not an owner.
    auto user = parseSqueueJson(R"({"jobs": [{"job_id": 5, "user_name": ")" +
                                std::string(10'000, 'u') + R"("}]})");
    ASSERT_FALSE(user);
    EXPECT_EQ(user.error().path, "jobs[0].user_name");
    EXPECT_NE(user.error().message.find("at most 256 characters"), std::string::npos);
    // scontrol's text gets the same bounds.
    auto scontrol =
        parseScontrolShowJob("JobId=1 JobName=a\n   NodeList=" + std::string(200, 'n') + "[1-3]\n");
    ASSERT_FALSE(scontrol);
    EXPECT_EQ(scontrol.error().path, "job 0.NodeList");
}

}  // namespace
}  // namespace loom::jobs
