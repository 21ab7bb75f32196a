// Helpers for the tests that run real daemons: shell commands with their output, polling
// with a deadline, network namespaces that clean up after themselves.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace loom::fabric::daemons {

struct ShellRun {
    int rc = -1;
    std::string out;  // stdout and stderr
};

inline ShellRun sh(const std::string& cmd) {
    ShellRun r;
    FILE* p = ::popen(("( " + cmd + " ) 2>&1").c_str(), "r");
    if (!p) return r;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int st = ::pclose(p);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Polls `done` until it holds or `limit` passes; true when it held.
inline bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds limit,
                    std::chrono::milliseconds step = std::chrono::milliseconds(100)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return done();
        std::this_thread::sleep_for(step);
    }
    return true;
}

// Why network namespaces cannot be used here, or "" when they can (root, `ip netns` allowed).
inline std::string netnsUnavailable() {
    if (::geteuid() != 0) return "network namespaces need root (CAP_SYS_ADMIN); running as uid " +
                                 std::to_string(::geteuid());
    auto name = "loomprobe" + std::to_string(::getpid());
    auto r = sh("ip netns add " + name + " && ip netns exec " + name + " ip link set lo up && ip netns del " + name);
    if (r.rc != 0) return "the kernel refuses network namespaces here: " + r.out;
    return "";
}

}  // namespace loom::fabric::daemons
