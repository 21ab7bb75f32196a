// Real programs the backend tests run beside loomd (node_exporter, Prometheus, Alertmanager):
// a loopback port to give one, and the child itself, started with its output in a log file and
// stopped (SIGTERM, waited for) when the test is done with it.
//
//   ChildProcess p;
//   ASSERT_TRUE(p.start({"/usr/bin/prometheus-node-exporter",
//                        "--web.listen-address=127.0.0.1:" + std::to_string(freePort())},
//                       dir / "node_exporter.log"));
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace loom::backend::testing {

// A loopback port the kernel just handed out and took back, for a child to listen on.
inline std::uint16_t freePort() {
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor a(
        ioc, {boost::asio::ip::make_address("127.0.0.1"), std::uint16_t{0}});
    return a.local_endpoint().port();
}

class ChildProcess {
public:
    ChildProcess() = default;
    ~ChildProcess() { stop(); }
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    // Runs argv[0] (a path) with `argv`, stdout and stderr appended to `log`. False when it
    // cannot be started (or is running already).
    bool start(const std::vector<std::string>& argv, const std::filesystem::path& log) {
        if (pid_ > 0 || argv.empty()) return false;
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        const int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) pid_ = 0;
        return rc == 0;
    }
    // SIGTERM, and waits until it has exited; nothing when it is not running.
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = 0;
    }

    // The child's process id; 0 when it is not running.
    pid_t pid() const { return pid_; }

private:
    pid_t pid_ = 0;
};

}  // namespace loom::backend::testing
