// A real loomd for loomctl's end-to-end tests: a state directory (embedded PostgreSQL) with a
// cluster spec applied and an admin token, and `loomd serve --listen 127.0.0.1:0` as a child
// process whose URL is read from its first line of output. Methods return "" or what failed.
#pragma once

#include "process.hpp"

#include <sys/wait.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace loom::testing {

struct LoomdHarness {
    std::filesystem::path state;
    std::string token, url;
    std::string listen = "127.0.0.1:0";  // set to the first URL's host:port to restart in place
    pid_t pid = -1;
    FILE* out = nullptr;

    // A fresh state dir under /tmp named `name`, `loomd apply -f spec`, an admin token.
    std::string prepare(const std::string& name, const std::string& spec) {
        state = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
        std::filesystem::remove_all(state);
        std::filesystem::create_directories(state);
        auto applied = runProcess(LOOMD_BIN, {"apply", "-f", spec, "--state-dir", state});
        if (applied.exitCode != 0) return "loomd apply: " + applied.out + applied.err;
        auto tok = runProcess(LOOMD_BIN, {"token", "create", "--role", "admin", "--name", name,
                                          "--state-dir", state});
        if (tok.exitCode != 0) return "loomd token create: " + tok.err;
        auto nl = tok.out.find_last_not_of("\n");
        auto start = tok.out.rfind('\n', nl);
        token = tok.out.substr(start == std::string::npos ? 0 : start + 1, nl - start);
        if (token.rfind("loom_", 0) != 0) return "no token in: " + tok.out;
        return {};
    }

    // Starts `loomd serve` on the state dir with extra arguments and environment.
    std::string serve(const std::vector<std::string>& extra = {},
                      const std::map<std::string, std::string>& env = {}) {
        int fds[2];
        if (::pipe(fds) != 0) return "pipe failed";
        std::vector<std::string> args = {LOOMD_BIN, "serve", "--listen", listen, "--state-dir",
                                         state.string()};
        args.insert(args.end(), extra.begin(), extra.end());
        pid = ::fork();
        if (pid == 0) {
            ::dup2(fds[1], 1);
            ::close(fds[0]);
            for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(LOOMD_BIN, argv.data());
            ::_exit(127);
        }
        ::close(fds[1]);
        out = ::fdopen(fds[0], "r");  // kept open: loomd may write more
        url.clear();
        char line[512];
        while (std::fgets(line, sizeof line, out)) {
            std::string l(line);
            if (auto p = l.find("http://"); p != std::string::npos) {
                url = l.substr(p);
                while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
                return {};
            }
        }
        return "loomd serve printed no URL";
    }

    void stop(int sig = SIGTERM) {
        if (pid > 0) {
            ::kill(pid, sig);
            int st = 0;
            ::waitpid(pid, &st, 0);
            pid = -1;
        }
        if (out) std::fclose(out);
        out = nullptr;
    }

    // Stops loomd and removes the state; a SIGKILLed loomd leaves its PostgreSQL running (the
    // next loomd adopts it), so it is stopped here if still up.
    void cleanup() {
        stop(SIGTERM);
        if (state.empty()) return;
        if (std::filesystem::exists(state / "pgdata")) {
            std::string cmd = "/usr/lib/postgresql/15/bin/pg_ctl stop -s -m immediate -D '" +
                              (state / "pgdata").string() + "' >/dev/null 2>&1";
            if (::geteuid() == 0) cmd = "runuser -u postgres -- " + cmd;
            (void)std::system(cmd.c_str());
        }
        std::filesystem::remove_all(state);
    }

    ProcessResult loomctl(const std::vector<std::string>& args) const {
        return runProcess(LOOMCTL_BIN, args, {{"LOOM_SERVER", url}, {"LOOM_TOKEN", token}, {"HOME", state}});
    }
};

}  // namespace loom::testing
