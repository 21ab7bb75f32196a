// The fixture of loomctl's end-to-end tests (loomctl_e2e_test.cpp,
// loomctl_fields_e2e_test.cpp): a real `loomd serve` on its embedded PostgreSQL (port 0) with
// dev-small applied, loomctl run against it in the foreground or in the background.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "loomd_harness.hpp"

namespace loom::testing {

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

    // loomctl in the background (a --follow or --watch), its output in files.
    pid_t spawnLoomctl(std::vector<std::string> args, const std::filesystem::path& out,
                       const std::filesystem::path& err) {
        pid_t pid = ::fork();
        if (pid == 0) {
            std::FILE* o = std::fopen(out.c_str(), "w");
            std::FILE* e = std::fopen(err.c_str(), "w");
            ::dup2(::fileno(o), 1);
            ::dup2(::fileno(e), 2);
            ::setenv("LOOM_SERVER", url_.c_str(), 1);
            ::setenv("LOOM_TOKEN", loomd_.token.c_str(), 1);
            ::setenv("HOME", state_.c_str(), 1);
            std::vector<char*> argv{const_cast<char*>(LOOMCTL_BIN)};
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(LOOMCTL_BIN, argv.data());
            ::_exit(127);
        }
        return pid;
    }
    static std::string readFile(const std::filesystem::path& p) {
        std::ifstream in(p);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

    LoomdHarness loomd_;
    std::filesystem::path state_;
    std::string spec_, url_;
};

}  // namespace loom::testing
