// End to end: loomctl against a real `loomd serve` on its embedded PostgreSQL (port 0).
#include "loomd_harness.hpp"

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
        spec_ = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml";
        ASSERT_EQ(loomd_.prepare("loomctl-e2e", spec_), "");
        ASSERT_EQ(loomd_.serve(), "");
        state_ = loomd_.state;
        url_ = loomd_.url;
    }
    void TearDown() override { loomd_.cleanup(); }

    ProcessResult loomctl(std::vector<std::string> args) { return loomd_.loomctl(args); }

    LoomdHarness loomd_;
    fs::path state_;
    std::string spec_, url_;
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
