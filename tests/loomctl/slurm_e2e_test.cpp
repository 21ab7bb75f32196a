// Slurm sync end to end (issue 15 item 1): a real slurmctld and four slurmd of Debian's
// slurm-wlm (auth/none, all on localhost, the recipe of tests/jobs/data/slurm/README.md), a
// real `loomd serve` and loomctl. Jobs are submitted with sbatch and cancelled with scancel;
// loomd learns of them from `squeue --json -t all`, by `loomctl jobs sync-slurm` and by its own
// poller (jobs.slurm in loomd.yaml). Skips, saying why, when the Slurm daemons are not
// installed (scripts/bootstrap installs them) or do not come up.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "loom/client/client.hpp"
#include "loom/testing/eventually.hpp"
#include "loomd_harness.hpp"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

// dev-small's first four hosts: Slurm's node names are Loom's host names.
const std::vector<std::string> kNodes = {"z1-r001-h0", "z1-r001-h1", "z1-r002-h0", "z1-r002-h1"};

int freePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

std::string which(const std::string& name) {
    for (const char* dir : {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"})
        if (::access((std::string(dir) + "/" + name).c_str(), X_OK) == 0)
            return std::string(dir) + "/" + name;
    return {};
}

// The Slurm cluster: one per test suite (the daemons take a few seconds to come up).
struct SlurmCluster {
    fs::path dir, conf;
    std::vector<pid_t> daemons;
    std::string why;  // why it is not running; empty when it is

    ProcessResult run(const std::string& cmd, const std::vector<std::string>& args) const {
        return runProcess(which(cmd), args, {{"SLURM_CONF", conf.string()}});
    }

    pid_t spawn(const std::string& bin, const std::vector<std::string>& args) {
        pid_t pid = ::fork();
        if (pid == 0) {
            ::setpgid(0, 0);
            ::setenv("SLURM_CONF", conf.c_str(), 1);
            // Their foreground logging goes to a file beside their logs, not the test's output.
            const auto out = dir / "log" / (fs::path(bin).filename().string() + ".out");
            const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                ::dup2(fd, 1);
                ::dup2(fd, 2);
            }
            std::vector<char*> argv{const_cast<char*>(bin.c_str())};
            for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            ::execv(bin.c_str(), argv.data());
            ::_exit(127);
        }
        daemons.push_back(pid);
        return pid;
    }

    void start() {
        for (const char* bin : {"slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"})
            if (which(bin).empty()) {
                why = std::string(bin) +
                      " is not installed (apt-get install slurmctld slurmd slurm-client; "
                      "scripts/bootstrap does)";
                return;
            }
        dir = fs::temp_directory_path() / ("loom-slurm-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        for (const char* d : {"state", "spool", "log"}) fs::create_directories(dir / d);
        conf = dir / "slurm.conf";
        std::ofstream c(conf);
        c << "ClusterName=loomtest\nSlurmctldHost=localhost\n"
          << "SlurmctldPort=" << freePort() << "\nSlurmdPort=" << freePort() << "\n"
          << "AuthType=auth/none\nCredType=cred/none\nSlurmUser=root\nSlurmdUser=root\n"
          << "StateSaveLocation=" << (dir / "state").string() << "\n"
          << "SlurmdSpoolDir=" << (dir / "spool").string() << "/%n\n"
          << "SlurmctldPidFile=" << (dir / "slurmctld.pid").string() << "\n"
          << "SlurmdPidFile=" << (dir / "slurmd-%n.pid").string() << "\n"
          << "SlurmctldLogFile=" << (dir / "log/slurmctld.log").string() << "\n"
          << "SlurmdLogFile=" << (dir / "log/slurmd-%n.log").string() << "\n"
          << "ProctrackType=proctrack/pgid\nTaskPlugin=task/none\nSelectType=select/linear\n"
          << "SchedulerType=sched/builtin\nReturnToService=2\nMpiDefault=none\n"
          << "JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n";
        for (const auto& n : kNodes)
            c << "NodeName=" << n << " NodeHostname=localhost Port=" << freePort()
              << " CPUs=2 State=UNKNOWN\n";
        c << "PartitionName=train Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
        c.close();
        spawn(which("slurmctld"), {"-D", "-c", "-f", conf.string()});
        for (const auto& n : kNodes) spawn(which("slurmd"), {"-D", "-N", n, "-f", conf.string()});
        ProcessResult info;
        const bool up = eventually(
            [&] {
                info = run("sinfo", {"-h", "-N", "-o", "%N %T"});
                if (info.exitCode != 0) return false;
                int idle = 0;
                for (std::size_t p = 0; (p = info.out.find(" idle", p)) != std::string::npos; ++p)
                    ++idle;
                return idle == static_cast<int>(kNodes.size());
            },
            40s, 250ms);
        if (!up) {
            std::ifstream log(dir / "log/slurmctld.log");
            std::string tail((std::istreambuf_iterator<char>(log)), {});
            if (tail.size() > 1500) tail = tail.substr(tail.size() - 1500);
            why =
                "slurmctld + 4 slurmd did not report 4 idle nodes within 40 s (sinfo: " + info.out +
                info.err + "); slurmctld.log ends:\n" + tail;
        }
    }

    // Submits `sbatch -J name -N n [-w nodes] --wrap cmd`; the job id, or "" (and `why`).
    std::string submit(const std::string& name, int n, const std::string& nodes,
                       const std::string& cmd, std::string& err) const {
        // The job's output goes beside the daemons' logs, not into the test's directory.
        std::vector<std::string> args = {
            "-J", name, "-N", std::to_string(n), "-o", (dir / "log" / "slurm-%j.out").string()};
        if (!nodes.empty()) args.insert(args.end(), {"-w", nodes});
        args.insert(args.end(), {"--wrap", cmd});
        auto r = run("sbatch", args);
        const std::string head = "Submitted batch job ";
        if (r.exitCode != 0 || r.out.rfind(head, 0) != 0) {
            err = "sbatch: " + r.out + r.err;
            return {};
        }
        auto id = r.out.substr(head.size());
        while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) id.pop_back();
        return id;
    }

    void stop() {
        if (!conf.empty() && daemons.size() > 0) {
            run("scancel", {"--user", "root"});
            // slurmd must see its steps end before it stops: shut down earlier, a job's
            // slurmstepd outlives it (orphaned, waiting for a slurmd that is gone).
            eventually(
                [&] {
                    auto q = run("squeue", {"-h", "-t", "R,CG,S", "-o", "%i"});
                    return q.exitCode == 0 && q.out.empty();
                },
                30s, 250ms);
            run("scontrol", {"shutdown"});
        }
        for (pid_t pid : daemons) {
            bool gone = eventually(
                [&] {
                    int st = 0;
                    return ::waitpid(pid, &st, WNOHANG) == pid;
                },
                5s);
            if (!gone) {
                ::kill(-pid, SIGKILL);
                ::waitpid(pid, nullptr, 0);
            }
        }
        daemons.clear();
        if (!dir.empty()) fs::remove_all(dir);
    }
};

SlurmCluster* gSlurm = nullptr;

class SlurmE2e : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (::access(LOOMD_BIN, X_OK) != 0) return;
        gSlurm = new SlurmCluster;
        gSlurm->start();
    }
    static void TearDownTestSuite() {
        if (gSlurm) gSlurm->stop();
        delete gSlurm;
        gSlurm = nullptr;
    }

    void SetUp() override {
        if (::access(LOOMD_BIN, X_OK) != 0) GTEST_SKIP() << "loomd is not built: " << LOOMD_BIN;
        ASSERT_NE(gSlurm, nullptr);
        if (!gSlurm->why.empty()) GTEST_SKIP() << "Slurm cannot run here: " << gSlurm->why;
        // loomctl's --from-command runs squeue, which finds the cluster by SLURM_CONF.
        ::setenv("SLURM_CONF", gSlurm->conf.c_str(), 1);
    }
    void TearDown() override {
        loomd_.cleanup();
        gSlurm->run("scancel", {"--user", "root"});
    }

    // The job as GET /api/v1/jobs/slurm-<id> shows it (null when there is none).
    json job(const std::string& id) {
        client::Client http(client::ClientConfig{loomd_.url, loomd_.token});
        auto r = http.send("GET", "/api/v1/jobs/slurm-" + id);
        if (!r || r->status != 200) return json();
        return json::parse(r->body, nullptr, false);
    }

    LoomdHarness loomd_;
};

// Jobs submitted to Slurm reach loomd by `loomctl jobs sync-slurm --from-command` with their
// nodes, a cancelled one ends as failed; a file without a job still running ends it as
// completed; bad output is refused naming the place.
TEST_F(SlurmE2e, SyncSlurmFromTheCommandAndFromAFile) {
    const auto spec = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml";
    ASSERT_EQ(loomd_.prepare("slurm-e2e-cli", spec), "");
    ASSERT_EQ(loomd_.serve(), "");

    std::string err;
    const auto llama = gSlurm->submit("llama", 2, "z1-r001-h[0-1]", "sleep 600", err);
    ASSERT_FALSE(llama.empty()) << err;
    const auto gpt = gSlurm->submit("gpt", 1, "z1-r002-h0", "sleep 600", err);
    ASSERT_FALSE(gpt.empty()) << err;
    // Both run (Slurm schedules within a second or two).
    ASSERT_TRUE(eventually(
        [&] {
            auto q = gSlurm->run("squeue", {"-h", "-t", "R", "-o", "%i"});
            return q.out.find(llama + "\n") != std::string::npos &&
                   q.out.find(gpt + "\n") != std::string::npos;
        },
        30s, 200ms));

    auto synced = loomd_.loomctl({"jobs", "sync-slurm", "--from-command"});
    ASSERT_EQ(synced.exitCode, 0) << synced.out << synced.err;
    // Every job squeue lists is new to this loomd (jobs an earlier test cancelled are listed
    // for MinJobAge too).
    std::smatch m;
    ASSERT_TRUE(std::regex_match(
        synced.out, m, std::regex("slurm: ([0-9]+) jobs, ([0-9]+) new, 0 updated, 0 ended\n")))
        << synced.out;
    EXPECT_EQ(m[1], m[2]);
    EXPECT_GE(std::stoi(m[1]), 2);
    const std::string total = m[1];
    auto j = job(llama);
    ASSERT_TRUE(j.is_object()) << "slurm-" << llama << " not in loomd";
    EXPECT_EQ(j["state"], "running") << j.dump();
    EXPECT_EQ(j["source"], "slurm");
    EXPECT_EQ(j["owner"], "root");
    EXPECT_EQ(j["hosts"], json({"z1-r001-h0", "z1-r001-h1"})) << j.dump();
    EXPECT_EQ(j["nodelist"], "z1-r001-h[0-1]");
    EXPECT_EQ(j["labels"]["slurm.name"], "llama");
    EXPECT_EQ(j["labels"]["slurm.partition"], "train");
    auto listed = loomd_.loomctl({"get", "jobs"});
    EXPECT_NE(listed.out.find("slurm-" + llama), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find("slurm-" + gpt), std::string::npos) << listed.out;
    EXPECT_EQ(loomd_.loomctl({"jobs", "sync-slurm", "--from-command"}).out,
              "slurm: " + total + " jobs, 0 new, 0 updated, 0 ended\n");

    // scancel: squeue lists it CANCELLED for MinJobAge; loomd has it failed, finishedAt set.
    ASSERT_EQ(gSlurm->run("scancel", {llama}).exitCode, 0);
    ASSERT_TRUE(eventually(
        [&] {
            auto q = gSlurm->run("squeue", {"-h", "-t", "all", "-j", llama, "-o", "%T"});
            return q.out.rfind("CANCELLED", 0) == 0;
        },
        20s, 200ms));
    synced = loomd_.loomctl({"jobs", "sync-slurm", "--from-command", "squeue --json -t all"});
    ASSERT_EQ(synced.exitCode, 0) << synced.err;
    EXPECT_EQ(synced.out, "slurm: " + total + " jobs, 0 new, 1 updated, 0 ended\n");
    j = job(llama);
    EXPECT_EQ(j["state"], "failed") << j.dump();
    EXPECT_EQ(j["labels"]["slurm.state"], "CANCELLED") << j.dump();
    EXPECT_TRUE(j["finishedAt"].is_string()) << j.dump();
    EXPECT_EQ(job(gpt)["state"], "running");

    // A file (e.g. squeue run elsewhere) that no longer lists gpt: it ended, not deleted.
    const auto file = loomd_.state / "squeue.json";
    std::ofstream(file) << R"({"jobs": []})";
    synced = loomd_.loomctl({"jobs", "sync-slurm", "-f", file.string(), "-o", "json"});
    ASSERT_EQ(synced.exitCode, 0) << synced.err;
    auto answer = json::parse(synced.out);
    EXPECT_EQ(answer["finished"], 1) << synced.out;
    j = job(gpt);
    EXPECT_EQ(j["state"], "completed") << j.dump();
    EXPECT_TRUE(j["finishedAt"].is_string());
    EXPECT_EQ(job(llama)["state"], "failed") << "an ended job stays as it ended";

    // Bad input: exit 2, the message names the file and the place.
    std::ofstream(file) << R"({"jobs": [{"job_id": 7, "nodes": "z1-r[001-"}]})";
    auto bad = loomd_.loomctl({"jobs", "sync-slurm", "-f", file.string()});
    EXPECT_EQ(bad.exitCode, 2);
    EXPECT_NE(bad.err.find("squeue.json: jobs[0].nodes: job 7: "), std::string::npos) << bad.err;
    std::ofstream(file) << "squeue: error: Unable to contact slurm controller\n";
    bad = loomd_.loomctl({"jobs", "sync-slurm", "-f", file.string()});
    EXPECT_EQ(bad.exitCode, 2);
    EXPECT_NE(bad.err.find("not the JSON object of `squeue --json`"), std::string::npos) << bad.err;
    bad = loomd_.loomctl({"jobs", "sync-slurm", "--from-command", "false"});
    EXPECT_EQ(bad.exitCode, 1);
    EXPECT_NE(bad.err.find("'false' failed (exit 1); nothing was synced"), std::string::npos)
        << bad.err;
    EXPECT_EQ(loomd_.loomctl({"jobs", "sync-slurm"}).exitCode, 2) << "neither -f nor a command";
    EXPECT_EQ(job(gpt)["state"], "completed") << "a refused sync changed nothing";
}

// The leader loomd polls Slurm itself (jobs.slurm in loomd.yaml): a job submitted with sbatch
// appears with its nodes within seconds, scancel ends it; /metrics counts the syncs.
TEST_F(SlurmE2e, TheLeaderPollsSlurm) {
    const auto spec = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml";
    ASSERT_EQ(loomd_.prepare("slurm-e2e-poll", spec), "");
    const auto cfg = loomd_.state / "loomd.yaml";
    std::ofstream(cfg) << "jobs:\n  slurm:\n    command: \"squeue --json -t all\"\n"
                          "    intervalSeconds: 1\n";
    ASSERT_EQ(loomd_.serve({"--config", cfg.string()}, {{"SLURM_CONF", gSlurm->conf.string()}}),
              "");

    std::string err;
    const auto id = gSlurm->submit("mistral", 2, "z1-r002-h[0-1]", "sleep 600", err);
    ASSERT_FALSE(id.empty()) << err;
    json j;
    ASSERT_TRUE(eventually(
        [&] {
            j = job(id);
            return j.is_object() && j["state"] == "running";
        },
        30s, 200ms))
        << j.dump();
    EXPECT_EQ(j["hosts"], json({"z1-r002-h0", "z1-r002-h1"})) << j.dump();
    EXPECT_EQ(j["labels"]["slurm.name"], "mistral");
    // Listed with the live health of a running job (its GPUs and busbw).
    client::Client http(client::ClientConfig{loomd_.url, loomd_.token});
    auto list = http.getJson("/api/v1/jobs?source=slurm&state=running");
    ASSERT_TRUE(list) << list.error().toString();
    ASSERT_EQ((*list)["items"].size(), 1u) << list->dump();
    EXPECT_EQ((*list)["items"][0]["gpus"], 16);

    ASSERT_EQ(gSlurm->run("scancel", {id}).exitCode, 0);
    ASSERT_TRUE(eventually(
        [&] {
            j = job(id);
            return j.is_object() && j["state"] == "failed";
        },
        30s, 200ms))
        << j.dump();
    EXPECT_EQ(j["labels"]["slurm.state"], "CANCELLED");

    auto metrics = http.send("GET", "/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("loom_slurm_sync_failures_total 0\n"), std::string::npos)
        << metrics->body.substr(metrics->body.find("loom_slurm"), 600);
    EXPECT_EQ(metrics->body.find("loom_slurm_syncs_total 0\n"), std::string::npos);
    EXPECT_EQ(metrics->body.find("loom_slurm_jobs -1\n"), std::string::npos);
    EXPECT_NE(metrics->body.find("loom_slurm_jobs "), std::string::npos);
}

}  // namespace
}  // namespace loom::testing
