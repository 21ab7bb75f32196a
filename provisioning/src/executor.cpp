#include "loom/provisioning/executor.hpp"

#include "loom/inventory/splitmix.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

namespace loom::provisioning {
namespace {

std::uint64_t hashStr(std::string_view s, std::uint64_t h) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return h;
}

std::string attemptKey(const RackContext& ctx, std::string_view step) {
    return ctx.rack + "|" + std::string(step) + "|" + std::to_string(ctx.attempt);
}

void sleepFor(std::chrono::milliseconds d) {
    if (d.count() > 0) std::this_thread::sleep_for(d);
}

}  // namespace

double SimulatedExecutor::draw(std::string_view key) const {
    const auto h = splitmix64(hashStr(key, 1469598103934665603ULL ^ splitmix64(cfg_.seed)));
    return static_cast<double>(h >> 11) * 0x1.0p-53;
}

StepOutput SimulatedExecutor::physical(const RackContext& ctx, RackState to) {
    sleepFor(cfg_.physicalDelay);
    const auto step = std::string(stateName(to));
    if (draw(attemptKey(ctx, step)) < cfg_.physicalFailRate)
        return {false, "simulated: " + step + " not confirmed", ""};
    return {true, "", "simulated: " + step + " confirmed"};
}

Result<std::vector<ObservedNeighbour>> SimulatedExecutor::observeCabling(const RackContext& ctx) {
    sleepFor(cfg_.cablingDelay);
    std::vector<ObservedNeighbour> out;
    out.reserve(ctx.plannedLinks.size());
    for (const auto& l : ctx.plannedLinks) out.push_back({l.port, l.peer});
    if (!out.empty() && draw(attemptKey(ctx, "cabling")) < cfg_.miscablingRate) {
        // Swap the peers of two ports: the classic crossed pair.
        const auto n = out.size();
        const auto i = static_cast<std::size_t>(draw(attemptKey(ctx, "cabling-port")) * n) % n;
        const auto j = (i + 1) % n;
        if (n > 1)
            std::swap(out[i].peer, out[j].peer);
        else
            out[i].peer.clear();
    }
    return out;
}

Result<BurnInResult> SimulatedExecutor::burnIn(const RackContext& ctx) {
    sleepFor(cfg_.burnInDelay);
    BurnInResult r;
    for (std::size_t h = 0; h < ctx.hosts.size(); ++h) {
        HostDiag d;
        d.host = ctx.hosts[h];
        d.diagnostic = "dcgmi diag -r " + std::to_string(ctx.burnIn.gpuDiagLevel) + " (simulated)";
        const auto key = attemptKey(ctx, "diag:" + d.host);
        d.passed = draw(key) >= cfg_.hostDiagFailRate;
        if (!d.passed) {
            const auto& gpus = h < ctx.gpus.size() ? ctx.gpus[h] : std::vector<std::string>{};
            if (!gpus.empty()) {
                const auto g = static_cast<std::size_t>(draw(key + ":gpu") * gpus.size()) % gpus.size();
                d.failedGpus.push_back(gpus[g]);
                d.output = "simulated dcgmi diag -r " + std::to_string(ctx.burnIn.gpuDiagLevel) +
                           ": FAIL " + gpus[g];
            } else {
                d.output = "simulated dcgmi diag: FAIL";
            }
        } else {
            d.output = "simulated dcgmi diag -r " + std::to_string(ctx.burnIn.gpuDiagLevel) + ": PASS";
        }
        r.hosts.push_back(std::move(d));
    }
    const double jitter = 1.0 + 0.04 * (draw(attemptKey(ctx, "bw")) - 0.5);
    r.busBwGBps = cfg_.busBwGBps * jitter;
    if (draw(attemptKey(ctx, "bw-fail")) < cfg_.busBwFailRate) r.busBwGBps *= 0.55;
    char line[96];
    std::snprintf(line, sizeof line, "simulated all_reduce_perf: Avg bus bandwidth : %.2f", r.busBwGBps);
    r.output = line;
    return r;
}

// ---- commands -------------------------------------------------------------------------------

CommandResult runCommand(const std::string& command, std::chrono::milliseconds timeout,
                         std::size_t maxOutput, CommandStderr stderrMode) {
    CommandResult res;
    const auto start = std::chrono::steady_clock::now();
    const bool separate = stderrMode == CommandStderr::Separate;
    int fds[2], errFds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        res.output = std::string("pipe: ") + std::strerror(errno);
        return res;
    }
    if (separate && ::pipe2(errFds, O_CLOEXEC) != 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        res.output = std::string("pipe: ") + std::strerror(errno);
        return res;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        if (separate) {
            ::close(errFds[0]);
            ::close(errFds[1]);
        }
        res.output = std::string("fork: ") + std::strerror(errno);
        return res;
    }
    if (pid == 0) {
        // Child: own process group, so a timeout kills the whole pipeline (ssh and all).
        ::setpgid(0, 0);
        ::dup2(fds[1], STDOUT_FILENO);
        ::dup2(separate ? errFds[1] : fds[1], STDERR_FILENO);
        const int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    // Parent sets the group too: whichever of the two runs first, it exists before a kill.
    ::setpgid(pid, pid);
    ::close(fds[1]);
    if (separate) ::close(errFds[1]);
    const auto deadline = start + timeout;
    char buf[8192];
    // [0] stdout (or both), [1] stderr under Separate; -1 once at its end.
    pollfd p[2] = {{fds[0], POLLIN, 0}, {separate ? errFds[0] : -1, POLLIN, 0}};
    std::string* sinks[2] = {&res.output, &res.errorOutput};
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            res.timedOut = true;
            break;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        const int rc = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 1000)));
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) continue;
        for (int i = 0; i < 2; ++i) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const auto n = ::read(p[i].fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                ::close(p[i].fd);
                p[i].fd = -1;
                continue;
            }
            auto& out = *sinks[i];
            const auto room = maxOutput > out.size() ? maxOutput - out.size() : 0;
            if (static_cast<std::size_t>(n) > room) res.truncated = true;
            out.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
        }
    }
    for (auto& f : p)
        if (f.fd >= 0) ::close(f.fd);
    if (res.timedOut) ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // A grandchild may still hold the group alive after the shell exits; it goes too.
    if (res.timedOut) ::kill(-pid, SIGKILL);
    if (WIFEXITED(status)) res.exitCode = WEXITSTATUS(status);
    if (res.truncated) res.output += "\n[output truncated]";
    if (res.timedOut)
        res.output += "\n[killed after " + std::to_string(timeout.count()) + " ms timeout]";
    res.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    return res;
}

std::string expandTemplate(std::string_view tmpl,
                           const std::vector<std::pair<std::string, std::string>>& vars) {
    std::string out;
    std::size_t i = 0;
    while (i < tmpl.size()) {
        if (tmpl[i] == '{') {
            const auto close = tmpl.find('}', i);
            if (close != std::string_view::npos) {
                const auto key = tmpl.substr(i + 1, close - i - 1);
                bool found = false;
                for (const auto& [k, v] : vars)
                    if (k == key) {
                        // Values come from the inventory, but a name is never trusted as shell.
                        out += '\'';
                        for (char c : v) {
                            if (c == '\'')
                                out += "'\\''";
                            else
                                out += c;
                        }
                        out += '\'';
                        found = true;
                        break;
                    }
                if (found) {
                    i = close + 1;
                    continue;
                }
            }
        }
        out += tmpl[i++];
    }
    return out;
}

StepOutput CommandExecutor::physical(const RackContext& ctx, RackState to) {
    if (cfg_.physical.empty()) return {true, "", "confirmed (no physical command configured)"};
    const auto cmd = expandTemplate(cfg_.physical, {{"rack", ctx.rack}, {"state", std::string(stateName(to))}});
    auto r = runCommand(cmd, cfg_.timeout, cfg_.maxOutput);
    StepOutput o;
    o.ok = r.exitCode == 0 && !r.timedOut;
    o.output = "$ " + cmd + "\n" + r.output;
    if (!o.ok)
        o.reason = r.timedOut ? "command timed out" : "command exited " + std::to_string(r.exitCode);
    return o;
}

Result<std::vector<ObservedNeighbour>> CommandExecutor::observeCabling(const RackContext& ctx) {
    if (cfg_.lldp.empty())
        return fail(Error::notFound("no lldp command configured; LLDP reports come through the API"));
    const auto cmd = expandTemplate(cfg_.lldp, {{"rack", ctx.rack}});
    auto r = runCommand(cmd, cfg_.timeout, cfg_.maxOutput);
    if (r.timedOut || r.exitCode != 0)
        return fail(Error::unavailable("lldp command " +
                                       std::string(r.timedOut ? "timed out" : "failed") + ": " +
                                       r.output.substr(0, 512)));
    std::vector<ObservedNeighbour> out;
    std::istringstream in(r.output);
    std::string port, peer;
    while (in >> port >> peer) out.push_back({port, peer});
    return out;
}

Result<BurnInResult> CommandExecutor::burnIn(const RackContext& ctx) {
    BurnInResult res;
    // Hosts run in parallel: a level-3 diagnostic takes tens of minutes per host.
    std::vector<CommandResult> runs(ctx.hosts.size());
    std::vector<std::string> cmds(ctx.hosts.size());
    {
        std::vector<std::jthread> threads;
        for (std::size_t h = 0; h < ctx.hosts.size(); ++h) {
            cmds[h] = expandTemplate(cfg_.hostDiag, {{"host", ctx.hosts[h]},
                                                     {"rack", ctx.rack},
                                                     {"level", std::to_string(ctx.burnIn.gpuDiagLevel)}});
            threads.emplace_back([&, h] { runs[h] = runCommand(cmds[h], cfg_.timeout, cfg_.maxOutput); });
        }
    }
    for (std::size_t h = 0; h < ctx.hosts.size(); ++h) {
        HostDiag d;
        d.host = ctx.hosts[h];
        d.passed = runs[h].exitCode == 0 && !runs[h].timedOut;
        d.output = "$ " + cmds[h] + "\n" + runs[h].output;
        d.diagnostic = cmds[h].substr(0, 200) +
                       (runs[h].timedOut ? " (timed out)"
                                         : " (exit " + std::to_string(runs[h].exitCode) + ")");
        if (!d.passed && h < ctx.gpus.size()) {
            std::istringstream in(runs[h].output);
            std::string line;
            while (std::getline(in, line)) {
                int idx = -1;
                if (std::sscanf(line.c_str(), "gpu %d fail", &idx) == 1 && idx >= 0 &&
                    idx < static_cast<int>(ctx.gpus[h].size()))
                    d.failedGpus.push_back(ctx.gpus[h][idx]);
            }
        }
        res.hosts.push_back(std::move(d));
    }
    if (cfg_.rackBandwidth.empty()) {
        // Without a bandwidth test the threshold cannot be judged; report it as met so a site
        // that only runs diagnostics can still use the executor (stated in the docs).
        res.busBwGBps = ctx.burnIn.minBusBwGBps;
        res.output = "no rack bandwidth command configured";
        return res;
    }
    std::string hosts;
    for (std::size_t h = 0; h < ctx.hosts.size(); ++h)
        if (res.hosts[h].passed) hosts += (hosts.empty() ? "" : " ") + ctx.hosts[h];
    const auto cmd = expandTemplate(cfg_.rackBandwidth, {{"rack", ctx.rack}, {"hosts", hosts}});
    auto r = runCommand(cmd, cfg_.timeout, cfg_.maxOutput);
    res.output = "$ " + cmd + "\n" + r.output;
    const auto pos = r.output.find("Avg bus bandwidth");
    if (pos != std::string::npos) {
        const auto colon = r.output.find(':', pos);
        if (colon != std::string::npos) res.busBwGBps = std::strtod(r.output.c_str() + colon + 1, nullptr);
    }
    return res;
}

}  // namespace loom::provisioning
