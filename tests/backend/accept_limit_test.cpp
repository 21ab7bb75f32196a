// Issue 39 item 4: at the common open-file limit (`ulimit -n 1024`), 1,100 idle connections
// made loomd's accept loop spin at 76 % of a core and write 2.3 M log lines in ~6 s. A real
// `loomd serve` on the harness's PostgreSQL, its limit set with prlimit(2): it lowers its
// connection cap to what the limit leaves (the rest are closed at accept), and when accept
// fails all the same (EMFILE, the limit lowered under it) it backs off, with one log line per
// 10 s. Its CPU time and its log are read while the connections stay open.
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "beast_client.hpp"
#include "processes.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

// utime + stime of a process, in seconds.
double cpuSeconds(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    double ticks = 0;
    // Fields after the name start at 3 (state); utime and stime are 14 and 15.
    for (int i = 3; i <= 15 && rest >> field; ++i)
        if (i >= 14) ticks += std::stod(field);
    return ticks / double(::sysconf(_SC_CLK_TCK));
}

std::string readFile(const std::filesystem::path& p) {
    std::ifstream f(p);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::size_t countOf(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size())
        ++n;
    return n;
}

class AcceptLimit : public ServerFixture {};

TEST_F(AcceptLimit, IdleConnectionsAtTheFileLimitNeitherSpinNorFloodTheLog) {
    if (::access(LOOMD_BIN, X_OK) != 0) GTEST_SKIP() << LOOMD_BIN << " is not built";
    if (::access("/usr/bin/prlimit", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/prlimit";
    // This process opens 1,100 connections besides its own descriptors.
    rlimit own{};
    ::getrlimit(RLIMIT_NOFILE, &own);
    if (own.rlim_max < 2048) GTEST_SKIP() << "hard open-file limit " << own.rlim_max;
    if (own.rlim_cur < 2048) {
        own.rlim_cur = own.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &own);
    }

    const auto dir = std::filesystem::temp_directory_path() /
                     ("loom-accept-limit-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto log = dir / "loomd.log";
    const std::uint16_t port = freePort();
    ChildProcess loomd;
    // `ulimit -n 1024` for loomd alone: prlimit(1) sets it and execs loomd (the same pid).
    ASSERT_TRUE(
        loomd.start({"/usr/bin/prlimit", "--nofile=1024:1024", LOOMD_BIN, "serve", "--listen",
                     "127.0.0.1:" + std::to_string(port), "--db", database().connectionString()},
                    log));
    const pid_t pid = loomd.pid();
    rlimit limit{};
    ASSERT_TRUE(loom::testing::eventually(
        [&] { return request(port, "GET", "/healthz").status == 200; }, 30s))
        << readFile(log);
    // 1,024 less the 128 kept for the database, the scrapes and files.
    ASSERT_NE(readFile(log).find("lowered to 896"), std::string::npos) << readFile(log);

    net::io_context ioc;
    std::vector<tcp::socket> idle;
    auto openIdle = [&](int n) {
        for (int i = 0; i < n; ++i) {
            tcp::socket sock(ioc);
            beast::error_code ec;
            sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
            if (!ec) idle.push_back(std::move(sock));
        }
    };
    auto spinFor = [&](std::chrono::seconds window) {
        const double before = cpuSeconds(pid);
        std::this_thread::sleep_for(window);
        return (cpuSeconds(pid) - before) / std::chrono::duration<double>(window).count();
    };

    // 1,100 idle connections: 896 are kept, the rest closed at accept.
    openIdle(1100);
    const double cpuCapped = spinFor(3s);
    EXPECT_LT(cpuCapped, 0.2) << "share of a core with 1,100 idle connections";
    auto metrics = request(port, "GET", "/metrics");  // refused too: all 896 slots are taken
    EXPECT_EQ(metrics.status, 0);

    // Now the limit drops under the open connections: accept fails with EMFILE. It backs off and
    // says so once, not once per try.
    idle.clear();  // the server closes its ends when it reads EOF
    ASSERT_TRUE(loom::testing::eventually(
        [&] { return request(port, "GET", "/healthz").status == 200; }, 15s));
    limit = {200, 1024};
    ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &limit, nullptr), 0);
    openIdle(400);
    const double cpuEmfile = spinFor(3s);
    EXPECT_LT(cpuEmfile, 0.2) << "share of a core while accept fails with EMFILE";
    const std::string text = readFile(log);
    EXPECT_GE(countOf(text, "accept: "), 1u) << text.substr(0, 4000);
    EXPECT_LE(countOf(text, "accept: "), 2u) << text.substr(0, 4000);
    EXPECT_LT(text.size(), 64u * 1024) << "log bytes";

    // Once the connections end, it serves again.
    idle.clear();
    limit = {1024, 1024};
    ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &limit, nullptr), 0);
    EXPECT_TRUE(loom::testing::eventually(
        [&] { return request(port, "GET", "/healthz").status == 200; }, 15s));
    loomd.stop();
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom::backend::testing
