#include "loom/db/job_repo.hpp"

#include <gtest/gtest.h>

#include "loom/db/migrations.hpp"
#include "loom/inventory/natural_order.hpp"
#include "loom/testing/postgres.hpp"

namespace {

using loom::jobs::Job;
using loom::jobs::JobSource;
using loom::jobs::JobState;

class JobRepo : public loom::testing::PostgresTest {};

Job makeJob(std::string name, std::vector<std::string> hosts, JobState state = JobState::Running) {
    Job j;
    j.name = std::move(name);
    j.owner = "alice";
    j.hosts = std::move(hosts);
    j.state = state;
    j.labels = {{"team", "llm"}};
    return j;
}

TEST_F(JobRepo, PutCreatesReplacesAndKeepsTheVersionWhenNothingChanged) {
    auto conn = connect();
    auto job = makeJob("llama", {"z1-r001-h0", "z1-r001-h1", "z1-r002-h0", "z1-r002-h1"});
    auto w = loom::db::putJob(conn, job, {.actor = "ci"});
    ASSERT_TRUE(w) << w.error().toString();
    EXPECT_TRUE(w->created);
    EXPECT_EQ(w->stored.job, job);
    EXPECT_EQ(w->stored.nodelist, "z1-r[001-002]-h[0-1]");
    EXPECT_EQ(w->stored.resourceVersion, 1);
    EXPECT_TRUE(w->stored.finishedAt.empty());

    auto same = loom::db::putJob(conn, job, {.actor = "ci"});
    ASSERT_TRUE(same);
    EXPECT_FALSE(same->created);
    EXPECT_FALSE(same->changed);
    EXPECT_EQ(same->stored.resourceVersion, 1);

    job.state = JobState::Completed;
    auto stale = loom::db::putJob(conn, job, {.ifMatch = 7, .actor = "ci"});
    ASSERT_FALSE(stale);
    EXPECT_EQ(stale.error().code, loom::Errc::PreconditionFailed);
    auto done = loom::db::putJob(conn, job, {.ifMatch = 1, .actor = "ci"});
    ASSERT_TRUE(done) << done.error().toString();
    EXPECT_TRUE(done->changed);
    EXPECT_EQ(done->stored.resourceVersion, 2);
    EXPECT_FALSE(done->stored.finishedAt.empty());
    EXPECT_EQ(conn.queryValue("SELECT count(*) FROM change_log WHERE kind = 'job'")->value(), "2");

    auto got = loom::db::getJob(conn, "llama");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->job.state, JobState::Completed);
    auto gone = loom::db::deleteJob(conn, "llama");
    ASSERT_TRUE(gone);
    EXPECT_EQ(loom::db::getJob(conn, "llama").error().code, loom::Errc::NotFound);
    EXPECT_EQ(loom::db::deleteJob(conn, "llama").error().code, loom::Errc::NotFound);
}

TEST_F(JobRepo, ListsWithFiltersLookupsAndPages) {
    auto conn = connect();
    ASSERT_TRUE(loom::db::putJob(conn, makeJob("a-llama", {"h1", "h2"})));
    ASSERT_TRUE(loom::db::putJob(conn, makeJob("b-mixtral", {"h2", "h3"}, JobState::Pending)));
    auto c = makeJob("c-gpt", {"h4"});
    c.owner = "bob";
    c.labels = {{"team", "rl"}};
    ASSERT_TRUE(loom::db::putJob(conn, c));
    auto names = [&](loom::db::JobQuery q) {
        auto page = loom::db::listJobs(conn, q);
        EXPECT_TRUE(page) << page.error().toString();
        std::string s;
        for (auto& j : page->items) s += (s.empty() ? "" : " ") + j.job.name;
        return s;
    };
    EXPECT_EQ(names({}), "a-llama b-mixtral c-gpt");
    EXPECT_EQ(names({.filters = {{"state", "running"}}}), "a-llama c-gpt");
    EXPECT_EQ(names({.filters = {{"host", "h2"}}}), "a-llama b-mixtral");
    EXPECT_EQ(names({.filters = {{"name__ic", "LLAMA"}}}), "a-llama");
    EXPECT_EQ(names({.filters = {{"label.team", "rl"}}}), "c-gpt");
    EXPECT_EQ(names({.filters = {{"hostCount__gte", "2"}, {"owner", "alice"}}}),
              "a-llama b-mixtral");
    auto first = loom::db::listJobs(conn, {.limit = 2});
    ASSERT_TRUE(first);
    ASSERT_FALSE(first->nextCursor.empty());
    EXPECT_EQ(names({.limit = 2, .cursor = first->nextCursor}), "c-gpt");
    auto bad = loom::db::listJobs(conn, {.filters = {{"zone", "z1"}}});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().path, "zone");
    EXPECT_NE(bad.error().message.find("valid: name, owner"), std::string::npos);
}

// Natural order (0024): both writers fill the sort key, the list and its pages follow it
// (train-2 before train-10), and migrate fills the keys of jobs written before 0024.
TEST_F(JobRepo, ListsAreInNaturalOrderWhoeverWroteTheJob) {
    auto conn = connect();
    for (int i : {10, 2, 1})
        ASSERT_TRUE(loom::db::putJob(
            conn, makeJob("train-" + std::to_string(i), {"h1-" + std::to_string(i)})));
    std::vector<Job> sim;
    for (int i : {12, 9, 11, 3}) sim.push_back(makeJob("train-" + std::to_string(i), {"h2"}));
    ASSERT_TRUE(loom::db::syncJobs(conn, JobSource::Simulator, sim));
    auto keysRight = [&] {
        auto rows = conn.queryRows("SELECT name, coalesce(sort_key, '') FROM jobs");
        EXPECT_TRUE(rows);
        for (auto& r : *rows) EXPECT_EQ(r[1], loom::naturalSortKey(r[0])) << r[0];
        return rows->size();
    };
    EXPECT_EQ(keysRight(), 7u);
    std::string all;
    loom::db::JobQuery q{.limit = 3};
    for (int page = 0; page < 4; ++page) {
        auto p = loom::db::listJobs(conn, q);
        ASSERT_TRUE(p) << p.error().toString();
        for (auto& j : p->items) all += (all.empty() ? "" : " ") + j.job.name;
        if (p->nextCursor.empty()) break;
        q.cursor = p->nextCursor;
    }
    EXPECT_EQ(all, "train-1 train-2 train-3 train-9 train-10 train-11 train-12");
    std::string running;
    const auto inState = loom::db::jobsInState(conn, JobState::Running);
    ASSERT_TRUE(inState) << inState.error().toString();
    for (auto& j : *inState) running += (running.empty() ? "" : " ") + j.job.name;
    EXPECT_EQ(running, all);

    // As a database made before 0024: no keys, the check not yet validated.
    ASSERT_TRUE(conn.exec(
        "ALTER TABLE jobs DROP CONSTRAINT jobs_sort_key_set; UPDATE jobs SET sort_key = NULL; "
        "ALTER TABLE jobs ADD CONSTRAINT jobs_sort_key_set CHECK (sort_key IS NOT NULL) NOT "
        "VALID"));
    ASSERT_TRUE(loom::db::migrate(conn));
    EXPECT_EQ(keysRight(), 7u);
    EXPECT_EQ(conn.queryValue("SELECT convalidated::text FROM pg_constraint WHERE conname = "
                              "'jobs_sort_key_set'")
                  ->value(),
              "true");
}

// Overlap (issue 34 item 5): a running job on hosts another running job holds is refused,
// naming the other job and the hosts, unless it says it shares them; the simulator's jobs give
// way; a job keeps the hosts it already runs on; Slurm's jobs are stored as Slurm reports them,
// marked shared.
TEST_F(JobRepo, ARunningJobOnAnotherRunningJobsHostsIsRefusedUnlessItSharesThem) {
    auto conn = connect();
    ASSERT_TRUE(
        loom::db::putJob(conn, makeJob("llama", {"z1-r001-h0", "z1-r001-h1", "z1-r002-h0"})));
    auto clash =
        loom::db::putJob(conn, makeJob("mixtral", {"z1-r001-h1", "z1-r002-h0", "z1-r003-h0"}));
    ASSERT_FALSE(clash);
    EXPECT_EQ(clash.error().code, loom::Errc::Conflict);
    EXPECT_EQ(clash.error().path, "spec.hosts");
    EXPECT_NE(clash.error().message.find("running job 'llama'"), std::string::npos)
        << clash.error().message;
    EXPECT_NE(clash.error().message.find("z1-r001-h1"), std::string::npos);
    EXPECT_NE(clash.error().message.find("z1-r002-h0"), std::string::npos);
    EXPECT_EQ(clash.error().message.find("z1-r003-h0"), std::string::npos);
    EXPECT_FALSE(loom::db::getJob(conn, "mixtral")) << "nothing half-written";

    // Pending there is fine; it is refused when it becomes running.
    ASSERT_TRUE(loom::db::putJob(
        conn, makeJob("mixtral", {"z1-r001-h1", "z1-r002-h0", "z1-r003-h0"}, JobState::Pending)));
    EXPECT_FALSE(
        loom::db::putJob(conn, makeJob("mixtral", {"z1-r001-h1", "z1-r002-h0", "z1-r003-h0"})));
    // A finished job holds nothing.
    ASSERT_TRUE(loom::db::putJob(conn, makeJob("old", {"z1-r009-h0"}, JobState::Completed)));
    ASSERT_TRUE(loom::db::putJob(conn, makeJob("new", {"z1-r009-h0"})));

    auto shared = makeJob("mixtral", {"z1-r001-h1", "z1-r002-h0", "z1-r003-h0"});
    shared.sharesHosts = true;
    auto w = loom::db::putJob(conn, shared);
    ASSERT_TRUE(w) << w.error().toString();
    EXPECT_TRUE(w->stored.job.sharesHosts);
    // llama re-applied unchanged keeps its hosts although mixtral shares them now; a new host
    // of mixtral's is refused.
    auto again =
        loom::db::putJob(conn, makeJob("llama", {"z1-r001-h0", "z1-r001-h1", "z1-r002-h0"}));
    ASSERT_TRUE(again) << again.error().toString();
    EXPECT_FALSE(again->changed);
    EXPECT_FALSE(loom::db::putJob(
        conn, makeJob("llama", {"z1-r001-h0", "z1-r001-h1", "z1-r002-h0", "z1-r003-h0"})));

    // The simulator's jobs give way: an applied job is not refused on them.
    ASSERT_TRUE(
        loom::db::syncJobs(conn, JobSource::Simulator, {makeJob("sim-0001", {"z1-r020-h0"})}));
    ASSERT_TRUE(loom::db::putJob(conn, makeJob("real", {"z1-r020-h0"})));

    // Slurm: two of its jobs on one node (4 GPUs each) and one on llama's host are stored,
    // marked shared; one alone is not.
    std::vector<Job> slurm{makeJob("slurm-1", {"n1"}), makeJob("slurm-2", {"n1"}),
                           makeJob("slurm-3", {"z1-r001-h0"}), makeJob("slurm-4", {"n2"})};
    for (auto& j : slurm) j.source = JobSource::Slurm;
    auto r = loom::db::syncJobs(conn, JobSource::Slurm, slurm);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->created, 4);
    for (auto [name, want] :
         {std::pair{"slurm-1", true}, {"slurm-2", true}, {"slurm-3", true}, {"slurm-4", false}}) {
        auto s = loom::db::getJob(conn, name);
        ASSERT_TRUE(s) << name;
        EXPECT_EQ(s->job.sharesHosts, want) << name;
    }
    // The same list again changes nothing.
    r = loom::db::syncJobs(conn, JobSource::Slurm, slurm);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->updated, 0);
}

TEST_F(JobRepo, SyncWritesOneSourcesJobsInBulkAndFinishesTheGoneOnes) {
    auto conn = connect();
    ASSERT_TRUE(loom::db::putJob(conn, makeJob("mine", {"h1"})));  // source apply
    std::vector<Job> sim;
    for (int i = 0; i < 2000; ++i)
        sim.push_back(makeJob("sim-" + std::to_string(i), {"z1-r" + std::to_string(i) + "-h0",
                                                           "z1-r" + std::to_string(i) + "-h1"}));
    sim.push_back(makeJob("mine", {"h9"}));  // a name another source owns: left alone
    auto r = loom::db::syncJobs(conn, JobSource::Simulator, sim);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->created, 2000);
    EXPECT_EQ(r->updated, 0);
    EXPECT_EQ(loom::db::getJob(conn, "mine")->job.hosts, std::vector<std::string>{"h1"});
    EXPECT_EQ(loom::db::getJob(conn, "sim-7")->job.source, JobSource::Simulator);

    // Half end, one changes state; the same list again changes nothing.
    sim.resize(1000);
    sim[3].state = JobState::Failed;
    r = loom::db::syncJobs(conn, JobSource::Simulator, sim);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->created, 0);
    EXPECT_EQ(r->updated, 1);
    EXPECT_EQ(r->finished, 1000);
    EXPECT_EQ(loom::db::getJob(conn, "sim-1500")->job.state, JobState::Completed);
    EXPECT_EQ(loom::db::getJob(conn, "mine")->job.state, JobState::Running);
    r = loom::db::syncJobs(conn, JobSource::Simulator, sim);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->created + r->updated + r->finished, 0);
    auto running = loom::db::jobsInState(conn, JobState::Running);
    ASSERT_TRUE(running);
    EXPECT_EQ(running->size(), 1000u);  // 999 simulator jobs + mine

    // Finished jobs of that source are kept for keepFinishedSeconds, then deleted.
    r = loom::db::syncJobs(conn, JobSource::Simulator, sim, /*keepFinishedSeconds=*/-1);
    ASSERT_TRUE(r);
    EXPECT_EQ(loom::db::getJob(conn, "sim-1500").error().code, loom::Errc::NotFound);
    EXPECT_TRUE(loom::db::getJob(conn, "sim-999"));
}

}  // namespace
