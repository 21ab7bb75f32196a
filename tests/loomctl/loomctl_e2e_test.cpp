// End to end: loomctl against a real `loomd serve` on its embedded PostgreSQL (port 0).
#include "process.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace loom::testing {
namespace {

namespace fs = std::filesystem;

class LoomctlE2e : public ::testing::Test {
protected:
    void SetUp() override {
        if (::access(LOOMD_BIN, X_OK) != 0) GTEST_SKIP() << "loomd is not built: " << LOOMD_BIN;
        state_ = fs::temp_directory_path() / ("loomctl-e2e-" + std::to_string(::getpid()));
        fs::remove_all(state_);
        fs::create_directories(state_);
        spec_ = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml";
        auto applied = runProcess(LOOMD_BIN, {"apply", "-f", spec_, "--state-dir", state_});
        ASSERT_EQ(applied.exitCode, 0) << applied.out << applied.err;
        auto tok = runProcess(LOOMD_BIN, {"token", "create", "--role", "admin", "--name", "e2e",
                                          "--state-dir", state_});
        ASSERT_EQ(tok.exitCode, 0) << tok.err;
        auto nl = tok.out.find_last_not_of("\n");
        auto start = tok.out.rfind('\n', nl);
        token_ = tok.out.substr(start == std::string::npos ? 0 : start + 1, nl - start);
        ASSERT_EQ(token_.rfind("loom_", 0), 0u) << tok.out;

        int out[2];
        ASSERT_EQ(::pipe(out), 0);
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(out[1], 1);
            ::close(out[0]);
            ::execl(LOOMD_BIN, LOOMD_BIN, "serve", "--listen", "127.0.0.1:0", "--state-dir",
                    state_.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(out[1]);
        FILE* f = ::fdopen(out[0], "r");
        char line[512];
        while (std::fgets(line, sizeof line, f)) {
            std::string l(line);
            if (auto p = l.find("http://"); p != std::string::npos) {
                url_ = l.substr(p);
                while (!url_.empty() && (url_.back() == '\n' || url_.back() == '\r')) url_.pop_back();
                break;
            }
        }
        out_ = f;  // keep the pipe open: loomd may write more
        ASSERT_FALSE(url_.empty()) << "loomd serve printed no URL";
    }

    void TearDown() override {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            int st = 0;
            ::waitpid(pid_, &st, 0);
        }
        if (out_) std::fclose(out_);
        if (!state_.empty()) fs::remove_all(state_);
    }

    ProcessResult loomctl(std::vector<std::string> args) {
        return runProcess(LOOMCTL_BIN, args,
                          {{"LOOM_SERVER", url_}, {"LOOM_TOKEN", token_}, {"HOME", state_}});
    }

    fs::path state_;
    std::string spec_, token_, url_;
    pid_t pid_ = -1;
    FILE* out_ = nullptr;
};

TEST_F(LoomctlE2e, GetDiffAndErrorsAgainstARealServer) {
    auto racks = loomctl({"get", "racks"});
    ASSERT_EQ(racks.exitCode, 0) << racks.err;
    EXPECT_NE(racks.out.find("NAME"), std::string::npos) << racks.out;
    EXPECT_NE(racks.out.find("z1-r001"), std::string::npos) << racks.out;
    EXPECT_NE(racks.out.find("z1-s01"), std::string::npos) << racks.out;

    auto json = loomctl({"get", "gpus", "-o", "json"});
    ASSERT_EQ(json.exitCode, 0) << json.err;
    EXPECT_NE(json.out.find("z1-r004-h1-gpu7"), std::string::npos);

    // The stored inventory equals the spec: no diff (exit 0).
    auto same = loomctl({"diff", "-f", spec_});
    EXPECT_EQ(same.exitCode, 0) << same.out << same.err;

    // A missing object: the server's 404, exit 1.
    auto missing = loomctl({"get", "racks", "no-such-rack"});
    EXPECT_EQ(missing.exitCode, 1);
    EXPECT_NE(missing.err.find("no-such-rack"), std::string::npos) << missing.err;

    // A wrong token: 401 with a hint, exit 1.
    auto denied = runProcess(LOOMCTL_BIN, {"get", "racks"},
                             {{"LOOM_SERVER", url_}, {"LOOM_TOKEN", "loom_wrong"}, {"HOME", state_}});
    EXPECT_NE(denied.exitCode, 0);
}

}  // namespace
}  // namespace loom::testing
