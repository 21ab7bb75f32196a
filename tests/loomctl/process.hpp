// Runs a child process with arguments, extra environment and stdin; captures its output.
#pragma once

#include <sys/wait.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace loom::testing {

struct ProcessResult {
    int exitCode = -1;  // 128+signal when killed
    std::string out;
    std::string err;
};

// Blocks until the child exits. `env` entries override or add to the parent's environment;
// an empty value removes the variable.
inline ProcessResult runProcess(const std::string& bin, const std::vector<std::string>& args,
                                const std::map<std::string, std::string>& env = {},
                                const std::string& input = {}) {
    int outPipe[2], errPipe[2], inPipe[2];
    if (::pipe2(outPipe, O_CLOEXEC) != 0 || ::pipe2(errPipe, O_CLOEXEC) != 0 ||
        ::pipe2(inPipe, O_CLOEXEC) != 0) {
        return {};
    }
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(inPipe[0], 0);
        ::dup2(outPipe[1], 1);
        ::dup2(errPipe[1], 2);
        for (const auto& [k, v] : env) {
            if (v.empty()) ::unsetenv(k.c_str());
            else ::setenv(k.c_str(), v.c_str(), 1);
        }
        std::vector<char*> argv{const_cast<char*>(bin.c_str())};
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(bin.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    ::close(inPipe[0]);
    // Feed stdin fully before reading (test inputs are small) and close it.
    std::size_t off = 0;
    ::signal(SIGPIPE, SIG_IGN);
    while (off < input.size()) {
        ssize_t n = ::write(inPipe[1], input.data() + off, input.size() - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
    }
    ::close(inPipe[1]);
    ProcessResult r;
    pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
    int open = 2;
    char buf[8192];
    while (open > 0) {
        if (::poll(fds, 2, -1) < 0) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
            ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n <= 0) {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open;
            } else {
                (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
            }
        }
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

}  // namespace loom::testing
