#include "loom/provisioning/executor.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

using namespace loom::provisioning;
using namespace std::chrono_literals;

namespace {

RackContext rack(const std::string& name, int attempt = 1) {
    RackContext c;
    c.rack = name;
    c.hosts = {name + "-h0", name + "-h1"};
    for (const auto& h : c.hosts) {
        std::vector<std::string> g;
        for (int i = 0; i < 8; ++i) g.push_back(h + "-gpu" + std::to_string(i));
        c.gpus.push_back(g);
    }
    for (int p = 1; p <= 34; ++p)
        c.plannedLinks.push_back({name + "-rtsw/p" + std::to_string(p), "peer" + std::to_string(p)});
    c.attempt = attempt;
    return c;
}

struct Tally {
    int physicalFails = 0, miscabled = 0, hostFails = 0, lowBw = 0;
    bool operator==(const Tally&) const = default;
};

Tally runAll(SimulatedExecutor& ex, int racks) {
    Tally t;
    for (int i = 0; i < racks; ++i) {
        auto c = rack("r" + std::to_string(i));
        if (!ex.physical(c, RackState::Delivered).ok) ++t.physicalFails;
        auto seen = ex.observeCabling(c);
        if (!checkCabling(c.plannedLinks, *seen).ok()) ++t.miscabled;
        auto b = ex.burnIn(c);
        for (const auto& h : b->hosts) t.hostFails += !h.passed;
        if (b->busBwGBps < 40) ++t.lowBw;
    }
    return t;
}

}  // namespace

TEST(SimulatedExecutor, SameSeedSameOutcomesWhateverTheOrder) {
    SimulatedConfig cfg;
    cfg.seed = 42;
    cfg.physicalFailRate = 0.05;
    cfg.miscablingRate = 0.1;
    cfg.hostDiagFailRate = 0.05;
    cfg.busBwFailRate = 0.05;
    SimulatedExecutor a(cfg), b(cfg);
    EXPECT_EQ(runAll(a, 2000), runAll(b, 2000));
    // Per-call determinism, independent of call order: rack 7 asked first or last.
    auto c7 = rack("r7");
    auto first = a.burnIn(c7)->busBwGBps;
    runAll(a, 50);
    EXPECT_EQ(a.burnIn(c7)->busBwGBps, first);
    cfg.seed = 43;
    SimulatedExecutor other(cfg);
    EXPECT_NE(runAll(other, 2000), runAll(a, 2000));
}

TEST(SimulatedExecutor, FailureRatesAreRoughlyHonoured) {
    SimulatedConfig cfg;
    cfg.seed = 7;
    cfg.physicalFailRate = 0.1;
    cfg.miscablingRate = 0.2;
    cfg.hostDiagFailRate = 0.05;
    cfg.busBwFailRate = 0.1;
    SimulatedExecutor ex(cfg);
    auto t = runAll(ex, 5000);
    EXPECT_NEAR(t.physicalFails / 5000.0, 0.1, 0.02);
    EXPECT_NEAR(t.miscabled / 5000.0, 0.2, 0.02);
    EXPECT_NEAR(t.hostFails / 10000.0, 0.05, 0.01);
    EXPECT_NEAR(t.lowBw / 5000.0, 0.1, 0.02);
}

TEST(SimulatedExecutor, RetryGetsAFreshDraw) {
    SimulatedConfig cfg;
    cfg.miscablingRate = 0.5;
    SimulatedExecutor ex(cfg);
    int changed = 0;
    for (int i = 0; i < 200; ++i) {
        auto c1 = rack("r" + std::to_string(i), 1), c2 = rack("r" + std::to_string(i), 2);
        changed += checkCabling(c1.plannedLinks, *ex.observeCabling(c1)).ok() !=
                   checkCabling(c2.plannedLinks, *ex.observeCabling(c2)).ok();
    }
    EXPECT_GT(changed, 50);
}

TEST(CommandExecutor, RunsCommandAndCapturesOutput) {
    auto r = runCommand("echo hello; echo err >&2; exit 3", 5s);
    EXPECT_EQ(r.exitCode, 3);
    EXPECT_FALSE(r.timedOut);
    EXPECT_NE(r.output.find("hello"), std::string::npos);
    EXPECT_NE(r.output.find("err"), std::string::npos);
}

// A command whose output is parsed (squeue --json for the Slurm sync): stderr apart, both read
// to the end even when stderr fills its pipe first.
TEST(CommandExecutor, StderrSeparateKeepsStdoutClean) {
    auto r = runCommand("echo '{\"jobs\": []}'; head -c 200000 /dev/zero | tr '\\0' e >&2; echo done",
                        5s, 64 * 1024 * 1024, CommandStderr::Separate);
    EXPECT_EQ(r.exitCode, 0);
    EXPECT_FALSE(r.timedOut);
    EXPECT_EQ(r.output, "{\"jobs\": []}\ndone\n");
    EXPECT_EQ(r.errorOutput.size(), 200000u);
    EXPECT_EQ(r.errorOutput.find_first_not_of('e'), std::string::npos);
}

TEST(CommandExecutor, TimeoutKillsTheWholeProcessGroup) {
    const std::string pidFile = "/tmp/loom-prov-test-" + std::to_string(::getpid());
    const auto t0 = std::chrono::steady_clock::now();
    // The shell starts a grandchild that would outlive a kill of the shell alone.
    auto r = runCommand("sleep 30 & echo $! > " + pidFile + "; wait", 300ms);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_TRUE(r.timedOut);
    EXPECT_EQ(r.exitCode, -1);
    EXPECT_LT(took, 5s);
    EXPECT_NE(r.output.find("killed after 300 ms"), std::string::npos);
    std::ifstream in(pidFile);
    int pid = 0;
    in >> pid;
    ASSERT_GT(pid, 0);
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
        // A zombie re-parented to init still answers kill(0); /proc says whether it is dead.
        std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
        std::string s;
        std::getline(st, s);
        gone = s.empty() || s.find(") Z") != std::string::npos;
        if (!gone) std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(gone) << "grandchild " << pid << " still running";
    std::remove(pidFile.c_str());
}

TEST(CommandExecutor, OutputIsCapped) {
    auto r = runCommand("head -c 1000000 /dev/zero | tr '\\0' x", 10s, 1000);
    EXPECT_EQ(r.exitCode, 0);
    EXPECT_TRUE(r.truncated);
    EXPECT_LT(r.output.size(), 1100u);
}

TEST(CommandExecutor, TemplatesQuoteValues) {
    EXPECT_EQ(expandTemplate("ssh {host} dcgmi diag -r {level} {unknown}",
                             {{"host", "h0; rm -rf /"}, {"level", "3"}}),
              "ssh 'h0; rm -rf /' dcgmi diag -r '3' {unknown}");
    EXPECT_EQ(expandTemplate("{x}", {{"x", "it's"}}), "'it'\\''s'");
}

TEST(CommandExecutor, BurnInJudgesExitCodesAndParsesBandwidth) {
    CommandConfig cfg;
    // h0 passes, h1 fails naming GPU 5.
    cfg.hostDiag = "case {host} in *h1) echo 'gpu 5 fail'; exit 1;; *) echo PASS;; esac";
    cfg.rackBandwidth = "echo '# Avg bus bandwidth    : 45.25 '; echo {hosts}";
    cfg.timeout = 5s;
    CommandExecutor ex(cfg);
    auto c = rack("r1");
    auto r = ex.burnIn(c);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->hosts.size(), 2u);
    EXPECT_TRUE(r->hosts[0].passed);
    EXPECT_FALSE(r->hosts[1].passed);
    EXPECT_EQ(r->hosts[1].failedGpus, std::vector<std::string>{"r1-h1-gpu5"});
    EXPECT_DOUBLE_EQ(r->busBwGBps, 45.25);
    EXPECT_NE(r->output.find("r1-h0"), std::string::npos);
    EXPECT_EQ(r->output.find("r1-h1\n"), std::string::npos);  // only healthy hosts join
}

TEST(CommandExecutor, LldpCommandOutputBecomesObservations) {
    CommandConfig cfg;
    cfg.lldp = "printf 'sw/p1 a\\nsw/p2 b\\n'";
    CommandExecutor ex(cfg);
    auto seen = ex.observeCabling(rack("r1"));
    ASSERT_TRUE(seen);
    ASSERT_EQ(seen->size(), 2u);
    EXPECT_EQ((*seen)[1].port, "sw/p2");
    EXPECT_EQ((*seen)[1].peer, "b");
    CommandConfig none;
    EXPECT_FALSE(CommandExecutor(none).observeCabling(rack("r1")));
}
