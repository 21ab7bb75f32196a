// How loomd picks the reconciler's executor: loomd.yaml's provisioning section, --simulate,
// environment overrides; bad keys and values are errors naming the key and line.
#include "loom/backend/loomd_config.hpp"
#include "loom/backend/provisioning_service.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace loom::backend {
namespace {

// loomd.yaml text -> the settings loomd serve would use (file, --simulate, environment).
Result<ExecutorSettings> settings(std::string_view yaml, bool simulate) {
    auto cfg = readLoomdConfig(yaml);
    if (!cfg) return fail(cfg.error());
    return executorSettings(cfg->provisioning, simulate);
}

class ExecutorSettingsTest : public ::testing::Test {
protected:
    void SetUp() override {
        for (auto v : {"LOOM_PROVISIONING_EXECUTOR", "LOOM_PROVISIONING_SEED",
                       "LOOM_PROVISIONING_FAIL_RATE", "LOOM_PROVISIONING_DELAY_MS"})
            ::unsetenv(v);
    }
    void TearDown() override { SetUp(); }
};

TEST_F(ExecutorSettingsTest, OffUnlessSimulated) {
    auto off = settings("", false);
    ASSERT_TRUE(off) << off.error().toString();
    EXPECT_EQ(off->kind, "off");
    EXPECT_EQ(makeExecutor(*off), nullptr);
    auto sim = settings("listen: 127.0.0.1:0\n", true);
    ASSERT_TRUE(sim);
    EXPECT_EQ(sim->kind, "simulated");
    ASSERT_NE(makeExecutor(*sim), nullptr);
    EXPECT_EQ(makeExecutor(*sim)->name(), "simulated");
}

TEST_F(ExecutorSettingsTest, YamlSectionAndEnvironmentOverride) {
    const char* yaml =
        "provisioning:\n"
        "  executor: command\n"
        "  seed: 7\n"
        "  failRate: 0.5\n"
        "  command:\n"
        "    hostDiag: \"echo {host}\"\n"
        "    timeoutSeconds: 5\n";
    auto s = settings(yaml, true);  // the file wins over --simulate's default
    ASSERT_TRUE(s) << s.error().toString();
    EXPECT_EQ(s->kind, "command");
    EXPECT_EQ(s->simulated.seed, 7u);
    EXPECT_DOUBLE_EQ(s->simulated.hostDiagFailRate, 0.5);
    EXPECT_EQ(s->command.hostDiag, "echo {host}");
    EXPECT_EQ(s->command.timeout, std::chrono::seconds(5));
    EXPECT_EQ(makeExecutor(*s)->name(), "command");

    ::setenv("LOOM_PROVISIONING_EXECUTOR", "simulated", 1);
    ::setenv("LOOM_PROVISIONING_SEED", "42", 1);
    auto e = settings(yaml, false);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind, "simulated");
    EXPECT_EQ(e->simulated.seed, 42u);
}

TEST_F(ExecutorSettingsTest, BadInputNamesKeyAndLine) {
    auto unknown = settings("provisioning:\n  executr: simulated\n", false);
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().path, "provisioning.executr");
    EXPECT_EQ(unknown.error().line, 2);
    auto kind = settings("provisioning:\n  seed: 1\n  executor: magic\n", false);
    ASSERT_FALSE(kind);
    EXPECT_EQ(kind.error().line, 3);
    EXPECT_NE(kind.error().message.find("off, simulated or command"), std::string::npos);
    auto type = settings("provisioning:\n  seed: [1, 2]\n", false);
    ASSERT_FALSE(type);
    auto rate = settings("provisioning:\n  failRate: 1.5\n", false);
    ASSERT_FALSE(rate);
    auto cmd = settings("provisioning:\n  command:\n    hostdiag: x\n", false);
    ASSERT_FALSE(cmd);
    EXPECT_EQ(cmd.error().path, "provisioning.command.hostdiag");
    EXPECT_EQ(cmd.error().line, 3);
    ::setenv("LOOM_PROVISIONING_EXECUTOR", "bogus", 1);
    EXPECT_FALSE(settings("", false));
}

}  // namespace
}  // namespace loom::backend
