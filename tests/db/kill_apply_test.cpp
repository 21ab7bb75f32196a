// Fault suite (issue 18, item 1): `loomd apply` on an empty state dir, SIGKILLed at a random
// moment (initdb, PostgreSQL start, migrations, the apply itself), and then run again: the
// following run must succeed with no manual step, and leave a state dir that is whole
// (loom.conf included, the log PostgreSQL's own, no server or initdb left behind).
//
// LOOM_KILL_RUNS sets the number of kills (default 10; bench/faults/kill_apply runs 100) and
// LOOM_KILL_SEED the random seed (printed, to replay a failure). Runs <build>/bin/loomd;
// skipped when it is not built.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;
using namespace std::chrono;

std::string loomdPath() {
    const char* env = std::getenv("LOOM_LOOMD");
    return env && *env ? env : LOOMD_PATH;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

pid_t spawnApply(const fs::path& state, const fs::path& out) {
    std::string spec = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml";
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = open("/dev/null", O_RDONLY);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(loomdPath().c_str(), "loomd", "apply", "-f", spec.c_str(), "--state-dir",
              state.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    return pid;
}

// Exit code, or -1 when it had to be killed after `limit`.
int waitFor(pid_t pid, milliseconds limit) {
    auto until = steady_clock::now() + limit;
    int status = 0;
    while (steady_clock::now() < until) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        std::this_thread::sleep_for(milliseconds(10));
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

bool alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

pid_t pidIn(const fs::path& file) {
    std::ifstream in(file);
    long pid = 0;
    in >> pid;
    return static_cast<pid_t>(pid);
}

// Whatever a failed iteration left running on `state`: stopped, so the next one is clean.
void reap(const fs::path& state) {
    if (pid_t pm = pidIn(state / "pgdata" / "postmaster.pid"); alive(pm)) {
        kill(pm, SIGQUIT);
        for (int i = 0; i < 500 && alive(pm); ++i) std::this_thread::sleep_for(milliseconds(10));
    }
    if (pid_t init = pidIn(state / "initdb.pid"); alive(init)) kill(-init, SIGKILL);
}

class KillApply : public ::testing::Test {
protected:
    void SetUp() override {
        if (!fs::exists(loomdPath())) GTEST_SKIP() << loomdPath() << " not built";
        char tmpl[] = "/tmp/loom-kill-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        tmp_ = tmpl;
    }
    void TearDown() override {
        std::error_code ec;
        if (!tmp_.empty()) fs::remove_all(tmp_, ec);
    }
    fs::path tmp_;
};

TEST_F(KillApply, EveryRunAfterAKillAtARandomMomentSucceeds) {
    const char* runsEnv = std::getenv("LOOM_KILL_RUNS");
    const int runs = runsEnv && *runsEnv ? std::atoi(runsEnv) : 10;
    const char* seedEnv = std::getenv("LOOM_KILL_SEED");
    const unsigned seed = seedEnv && *seedEnv ? unsigned(std::strtoul(seedEnv, nullptr, 10))
                                              : std::random_device{}();
    std::mt19937 rng(seed);
    std::cout << "[ figures ] " << runs << " kills, LOOM_KILL_SEED=" << seed << "\n";

    // An uninterrupted run first: it must work, and its duration is the window the kills
    // fall into (initdb is most of it).
    milliseconds window;
    {
        fs::path state = tmp_ / "calibrate";
        auto t0 = steady_clock::now();
        int rc = waitFor(spawnApply(state, tmp_ / "calibrate.out"), seconds(120));
        window = duration_cast<milliseconds>(steady_clock::now() - t0);
        ASSERT_EQ(rc, 0) << slurp(tmp_ / "calibrate.out");
        reap(state);
        fs::remove_all(state);
    }
    std::cout << "[ figures ] an uninterrupted apply on an empty state dir: " << window.count()
              << " ms\n";

    int survived = 0;
    std::uniform_int_distribution<int> at(0, int(window.count()));
    for (int i = 0; i < runs; ++i) {
        fs::path state = tmp_ / ("s" + std::to_string(i));
        int delay = at(rng);
        pid_t victim = spawnApply(state, tmp_ / "victim.out");
        std::this_thread::sleep_for(milliseconds(delay));
        kill(victim, SIGKILL);
        int status = 0;
        waitpid(victim, &status, 0);

        // The following run: no manual step in between.
        int rc = waitFor(spawnApply(state, tmp_ / "next.out"), seconds(120));
        std::string out = slurp(tmp_ / "next.out");
        bool ok = rc == 0 && (out.find("applied: ") != std::string::npos ||
                              out.find("no changes") != std::string::npos);
        EXPECT_TRUE(ok) << "kill #" << i << " after " << delay << " ms (LOOM_KILL_SEED=" << seed
                        << "): the next run exited " << rc << ":\n"
                        << out << "\nvictim's output:\n"
                        << slurp(tmp_ / "victim.out");
        // The state dir is whole and nothing was left running.
        std::string conf = slurp(state / "pgdata" / "postgresql.conf");
        EXPECT_NE(conf.find("include_if_exists = 'loom.conf'"), std::string::npos) << "kill #" << i;
        EXPECT_TRUE(fs::exists(state / "pgdata" / "loom.conf")) << "kill #" << i;
        EXPECT_FALSE(fs::exists(state / "pgdata.initdb")) << "kill #" << i;
        struct stat st {};
        ASSERT_EQ(stat((state / "postgres.log").c_str(), &st), 0);
        if (geteuid() == 0) {
            struct passwd* pw = getpwnam("postgres");
            ASSERT_NE(pw, nullptr);
            EXPECT_EQ(st.st_uid, pw->pw_uid) << "postgres.log must be the postgres user's";
        }
        EXPECT_EQ(st.st_mode & 0777, 0600u);
        EXPECT_FALSE(alive(pidIn(state / "pgdata" / "postmaster.pid")))
            << "kill #" << i << ": the following run left PostgreSQL running";
        if (ok) ++survived;
        reap(state);
        std::error_code ec;
        fs::remove_all(state, ec);
    }
    std::cout << "[ figures ] " << survived << " of " << runs
              << " runs after a kill succeeded\n";
    EXPECT_EQ(survived, runs);
}

}  // namespace
