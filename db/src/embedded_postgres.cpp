#include "loom/db/embedded_postgres.hpp"

#include "loom/db/native.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

namespace fs = std::filesystem;

namespace loom::db {
namespace {

struct RunAs {
    bool drop = false;  // we are root: run as postgres
    uid_t uid = 0;
    gid_t gid = 0;
};

Result<RunAs> runAsUser() {
    RunAs r;
    if (geteuid() != 0) return r;
    struct passwd* pw = getpwnam("postgres");
    if (!pw)
        return fail(Error::unavailable(
            "running as root, but there is no `postgres` system user to run PostgreSQL as "
            "(install postgresql-15: scripts/bootstrap)"));
    r.drop = true;
    r.uid = pw->pw_uid;
    r.gid = pw->pw_gid;
    return r;
}

// Runs a PostgreSQL tool (as postgres when we are root) with stdin from /dev/null and
// stdout/stderr appended to `output`. No fd of ours leaks into it: pg_ctl's postmaster outlives
// us, and an inherited pipe would keep our caller's reader waiting for EOF forever.
// `dieWithUs`: the kernel kills the tool when we die (initdb: a half-made cluster is useless
// to anyone, and one left running would race the next start). `started` gets the child's pid.
int runTool(const RunAs& as, const std::vector<std::string>& argv, const fs::path& output,
            bool dieWithUs = false, const std::function<void(pid_t)>& started = {}) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        // Own session: a Ctrl-C on our terminal must not reach the postmaster.
        setsid();
        int in = open("/dev/null", O_RDONLY);
        int out = open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (in >= 0) dup2(in, 0);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
        closefrom(3);
        if (as.drop) {
            if (setgroups(0, nullptr) != 0 || setgid(as.gid) != 0 || setuid(as.uid) != 0) _exit(126);
        }
        // After setuid: a change of credentials clears the parent-death signal.
        if (dieWithUs && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
            _exit(125);
        // Predictable messages regardless of the caller's locale.
        setenv("LC_ALL", "C", 1);
        execv(args[0], args.data());
        _exit(127);
    }
    if (started) started(pid);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string tail(const fs::path& file, int lines) {
    std::ifstream in(file);
    std::deque<std::string> last;
    std::string line;
    while (std::getline(in, line)) {
        last.push_back(line);
        if (static_cast<int>(last.size()) > lines) last.pop_front();
    }
    std::string out;
    for (const auto& l : last) out += "    " + l + "\n";
    return out;
}

bool processAlive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

pid_t readPid(const fs::path& file) {
    std::ifstream in(file);
    long pid = 0;
    if (!(in >> pid)) return 0;
    return static_cast<pid_t>(pid);
}

// The command name of a live process ("" when gone): a pid in a file left by a dead process
// may since have been given to something else.
std::string processName(pid_t pid) {
    if (!processAlive(pid)) return "";
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
}

// Creates `file` if missing and gives it to the user PostgreSQL runs as, mode 0600. A log
// created by a root process (an interrupted start of an older loomd) would otherwise stop
// pg_ctl, running as postgres, from opening it.
Result<void> prepareOwnedFile(const fs::path& file, const RunAs& as) {
    int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail(Error::unavailable("cannot create " + file.string() + ": " +
                                       std::strerror(errno)));
    bool ok = (!as.drop || fchown(fd, as.uid, as.gid) == 0) && fchmod(fd, 0600) == 0;
    int err = errno;
    close(fd);
    if (!ok)
        return fail(Error::unavailable("cannot give " + file.string() +
                                       " to the postgres user: " + std::strerror(err)));
    return {};
}

// The processes of process group `pgid` that are initdb or the postgres it runs.
std::vector<pid_t> initdbGroup(pid_t pgid) {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "stat");
        std::string stat;
        std::getline(in, stat);
        // pid (comm) state ppid pgrp ...; comm may hold spaces: split at the last ')'.
        auto open = stat.find('('), close = stat.rfind(')');
        if (open == std::string::npos || close == std::string::npos) continue;
        std::string comm = stat.substr(open + 1, close - open - 1);
        std::istringstream rest(stat.substr(close + 1));
        char state = 0;
        long ppid = 0, pgrp = 0;
        if (!(rest >> state >> ppid >> pgrp)) continue;
        if (pgrp == pgid && (comm == "initdb" || comm == "postgres"))
            out.push_back(static_cast<pid_t>(std::stol(name)));
    }
    return out;
}

// An initdb whose loomd was killed: it dies with its parent (PR_SET_PDEATHSIG), but the
// bootstrap postgres it runs may still be finishing, and one started by an older loomd runs on
// in its own session. Kill what is left of its process group (runTool's setsid makes initdb
// the leader) and wait until it is gone, so nothing writes into the directory we remove next.
void killLeftoverInitdb(const fs::path& pidFile, bool verbose) {
    pid_t pgid = readPid(pidFile);
    if (pgid > 0) {
        for (int i = 0; i < 500; ++i) {
            auto left = initdbGroup(pgid);
            if (left.empty()) break;
            if (verbose && i == 0)
                std::cerr << "loom: stopping an interrupted initdb (process group " << pgid
                          << ")\n";
            for (pid_t p : left) kill(p, SIGKILL);
            usleep(10'000);
        }
    }
    std::error_code ec;
    fs::remove(pidFile, ec);
}

// A postmaster.pid naming a process that is gone, or is not PostgreSQL (its pid reused after
// a reboot or in a container), makes pg_ctl believe the server runs. Only called under the
// state dir lock.
void removeStalePostmasterPid(const fs::path& pgdata, bool verbose) {
    const fs::path file = pgdata / "postmaster.pid";
    if (!fs::exists(file)) return;
    pid_t pid = readPid(file);
    std::string name = processName(pid);
    if (name == "postgres" || name == "postmaster") return;
    if (verbose) std::cerr << "loom: removing a stale " << file.string() << "\n";
    std::error_code ec;
    fs::remove(file, ec);
}

// Whether the running server of `pgdata` has its socket in `dir` (postmaster.pid line 5 is
// the socket directory). Waits briefly for a server that is still writing that file.
bool listensOn(const fs::path& pgdata, const fs::path& dir) {
    for (int i = 0; i < 100; ++i) {
        std::ifstream in(pgdata / "postmaster.pid");
        std::vector<std::string> lines;
        std::string line;
        while (std::getline(in, line)) lines.push_back(line);
        if (lines.size() >= 5) return fs::path(lines[4]) == dir;
        usleep(100'000);
    }
    return true;  // cannot tell: let the connection attempt report what is wrong
}

constexpr const char* kIncludeLine = "include_if_exists = 'loom.conf'";

// Our settings live in loom.conf; postgresql.conf only includes it. Checked on every start:
// a data dir made by an interrupted older loomd may lack the line, and PostgreSQL would then
// come up with the stock settings (TCP on 127.0.0.1, a socket in /var/run/postgresql).
Result<void> ensureIncludesLoomConf(const fs::path& pgdata) {
    const fs::path conf = pgdata / "postgresql.conf";
    {
        std::ifstream in(conf);
        if (!in)
            return fail(Error::unavailable("cannot read " + conf.string()));
        std::string line;
        while (std::getline(in, line))
            if (line == kIncludeLine) return {};
    }
    std::ofstream out(conf, std::ios::app);
    out << "\n# Loom: settings for the embedded server live in loom.conf\n" << kIncludeLine << "\n";
    out.close();
    if (!out) return fail(Error::unavailable("cannot write " + conf.string()));
    return {};
}

// A data dir is complete when initdb finished: PG_VERSION is written early, pg_control and
// postgresql.conf late. Only an older loomd (which ran initdb in place) can leave one that is
// not; it holds no data.
bool completeDataDir(const fs::path& pgdata) {
    return fs::exists(pgdata / "PG_VERSION") && fs::exists(pgdata / "global" / "pg_control") &&
           fs::exists(pgdata / "postgresql.conf");
}

void syncDir(const fs::path& dir) {
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

// PostgreSQL (as postgres) must be able to reach the state dir. Under /root that is not the
// case; grant search-only permission on the ancestors that lack it, and say so.
void ensureReachable(const fs::path& dir, bool verbose) {
    for (fs::path p = dir.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
        struct stat st {};
        if (stat(p.c_str(), &st) != 0) continue;
        if (st.st_mode & S_IXOTH) continue;
        if (chmod(p.c_str(), st.st_mode | S_IXOTH) == 0)
            std::cerr << "loom: granted search permission (o+x) on " << p.string()
                      << " so the postgres user can reach " << dir.string() << "\n";
        (void)verbose;
    }
}

// A lock file serialises start/stop decisions of processes sharing one state dir.
class DirLock {
public:
    explicit DirLock(const fs::path& file) {
        fd_ = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd_ >= 0)
            while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
            }
    }
    ~DirLock() {
        if (fd_ >= 0) close(fd_);
    }
    DirLock(const DirLock&) = delete;
    DirLock& operator=(const DirLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace

fs::path defaultStateDir() {
    if (const char* s = std::getenv("LOOM_STATE_DIR"); s && *s) return fs::path(s);
    if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return fs::path(x) / "loom";
    const char* home = std::getenv("HOME");
    if (!home || !*home) {
        struct passwd* pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : "/tmp";
    }
    return fs::path(home) / ".local" / "state" / "loom";
}

Result<std::unique_ptr<EmbeddedPostgres>> EmbeddedPostgres::start(EmbeddedOptions options) {
    if (options.stateDir.empty()) options.stateDir = defaultStateDir();
    std::error_code ec;
    options.stateDir = fs::absolute(options.stateDir, ec).lexically_normal();
    if (options.stateDir.filename().empty()) options.stateDir = options.stateDir.parent_path();
    std::unique_ptr<EmbeddedPostgres> pg(new EmbeddedPostgres(std::move(options)));
    if (auto r = pg->run(); !r) return fail(r.error());
    return pg;
}

Result<void> EmbeddedPostgres::run() {
    const fs::path& dir = options_.stateDir;
    const fs::path pgdata = dir / "pgdata";
    const fs::path log = logFile();
    const std::string bin = options_.binDir;

    std::string socketPath = (dir / (".s.PGSQL." + std::to_string(options_.port))).string();
    if (socketPath.size() > 107)
        return fail(Error::invalid("state directory path too long for a Unix socket (" +
                                   std::to_string(socketPath.size()) +
                                   " > 107 bytes): " + dir.string(),
                                   "--state-dir"));
    if (dir.string().find('\'') != std::string::npos)
        return fail(Error::invalid("state directory path must not contain a quote: " +
                                   dir.string(), "--state-dir"));
    if (access((bin + "/pg_ctl").c_str(), X_OK) != 0)
        return fail(Error::unavailable("PostgreSQL 15 not found (" + bin +
                                       "/pg_ctl); run scripts/bootstrap or pass --db URL"));

    auto as = runAsUser();
    if (!as) return fail(as.error());

    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return fail(Error::unavailable("cannot create state directory " + dir.string() + ": " +
                                       ec.message()));
    if (as->drop) {
        if (chown(dir.c_str(), as->uid, as->gid) != 0)
            return fail(Error::unavailable("cannot give " + dir.string() +
                                           " to the postgres user: " + std::strerror(errno)));
        ensureReachable(dir, options_.verbose);
    }
    chmod(dir.c_str(), 0700);

    DirLock lock(dir / "loom.lock");

    auto fixOwner = [&](const fs::path& p) {
        if (as->drop) (void)!chown(p.c_str(), as->uid, as->gid);
    };
    auto writeLoomConf = [&](const fs::path& data) -> Result<void> {
        const fs::path file = data / "loom.conf";
        std::ofstream conf(file, std::ios::trunc);
        conf << "listen_addresses = ''\n"
             << "unix_socket_directories = '" << dir.string() << "'\n"
             << "unix_socket_permissions = 0700\n"
             << "port = " << options_.port << "\n"
             << "max_connections = 100\n"
             << "shared_buffers = 128MB\n"
             // No replication from an embedded server: minimal WAL is cheaper for bulk loads.
             << "wal_level = minimal\nmax_wal_senders = 0\n"
             << "max_wal_size = 2GB\n"
             << "fsync = " << (options_.fsync ? "on" : "off") << "\n";
        if (!options_.fsync) conf << "synchronous_commit = off\nfull_page_writes = off\n";
        conf.close();
        if (!conf) return fail(Error::unavailable("cannot write " + file.string()));
        fixOwner(file);
        if (chmod(file.c_str(), 0600) != 0)
            return fail(Error::unavailable("cannot chmod " + file.string()));
        return {};
    };

    // Every file PostgreSQL writes to is its own before any tool runs (runTool opens the
    // output as us, i.e. as root: a fresh log would be root's and pg_ctl -l could not open it).
    if (auto r = prepareOwnedFile(log, *as); !r) return r;

    // initdb runs into a scratch directory that is renamed to pgdata only once it is complete
    // and configured: a kill at any moment leaves either no pgdata or a whole one.
    const fs::path scratch = dir / "pgdata.initdb";
    const fs::path initdbPid = dir / "initdb.pid";
    killLeftoverInitdb(initdbPid, options_.verbose);
    if (fs::exists(pgdata) && !completeDataDir(pgdata)) {
        std::cerr << "loom: removing the incomplete data directory " << pgdata.string()
                  << " (an interrupted initdb)\n";
        fs::remove_all(pgdata, ec);
        if (ec)
            return fail(Error::unavailable("cannot remove " + pgdata.string() + ": " +
                                           ec.message()));
    }
    if (!fs::exists(pgdata)) {
        if (options_.verbose) std::cerr << "loom: initdb " << pgdata.string() << "\n";
        for (int i = 0; i < 5; ++i) {  // a dying bootstrap postgres may still add a file
            fs::remove_all(scratch, ec);
            if (!ec) break;
            usleep(100'000);
        }
        if (ec)
            return fail(Error::unavailable("cannot remove " + scratch.string() + ": " +
                                           ec.message()));
        std::vector<std::string> args = {bin + "/initdb", "-D", scratch.string(), "-U", "postgres",
                                         "-A", "trust", "-E", "UTF8", "--locale=C"};
        if (!options_.fsync) args.push_back("--no-sync");
        int rc = runTool(*as, args, log, /*dieWithUs=*/true, [&](pid_t pid) {
            std::ofstream(initdbPid, std::ios::trunc) << pid << "\n";
        });
        fs::remove(initdbPid, ec);
        if (rc != 0)
            return fail(Error::unavailable("initdb failed (exit " + std::to_string(rc) +
                                           "); last lines of " + log.string() + ":\n" +
                                           tail(log, 20)));
        if (auto r = ensureIncludesLoomConf(scratch); !r) return r;
        if (auto r = writeLoomConf(scratch); !r) return r;
        syncDir(scratch);
        fs::rename(scratch, pgdata, ec);
        if (ec)
            return fail(Error::unavailable("cannot rename " + scratch.string() + " to " +
                                           pgdata.string() + ": " + ec.message()));
        syncDir(dir);
    } else {
        fs::remove_all(scratch, ec);  // an initdb that was interrupted after a complete one
        if (auto r = ensureIncludesLoomConf(pgdata); !r) return r;
        // Rewritten on every start so an fsync choice or a moved state dir takes effect.
        if (auto r = writeLoomConf(pgdata); !r) return r;
    }
    removeStalePostmasterPid(pgdata, options_.verbose);

    const fs::path ownerFile = dir / "loom-owner.pid";
    int status = runTool(*as, {bin + "/pg_ctl", "status", "-D", pgdata.string()}, "/dev/null");
    if (status == 0 && !listensOn(pgdata, dir)) {
        // A server started without our settings (its loomd was killed before loom.conf was
        // included): it listens elsewhere, nobody can reach it. Restart it with them.
        std::cerr << "loom: restarting the PostgreSQL on " << pgdata.string()
                  << ": it was started without Loom's settings (loom.conf)\n";
        runTool(*as,
                {bin + "/pg_ctl", "stop", "-w", "-t", "60", "-s", "-m", "fast", "-D",
                 pgdata.string()},
                log);
        status = runTool(*as, {bin + "/pg_ctl", "status", "-D", pgdata.string()}, "/dev/null");
    }
    if (status == 0) {
        // Running: another live loomd owns it, or it survived a crash of its owner.
        reused_ = true;
        pid_t ownerPid = readPid(ownerFile);
        owner_ = !(processAlive(ownerPid) && ownerPid != getpid());
        if (options_.verbose)
            std::cerr << "loom: reusing PostgreSQL on " << dir.string()
                      << (owner_ ? " (adopted)" : " (owned by pid " + std::to_string(ownerPid) + ")")
                      << "\n";
    }
    auto startServer = [&]() -> Result<void> {
        if (options_.verbose) std::cerr << "loom: starting PostgreSQL on " << dir.string() << "\n";
        int rc = runTool(*as,
                         {bin + "/pg_ctl", "start", "-w", "-t", "120", "-s", "-D", pgdata.string(),
                          "-l", log.string()},
                         log);
        fixOwner(log);
        if (rc != 0) {
            // Started meanwhile by a pg_ctl of a killed loomd that ran on in its own session?
            // Then it is that server we use (and own: its starter is gone).
            if (runTool(*as, {bin + "/pg_ctl", "status", "-D", pgdata.string()}, "/dev/null") == 0) {
                pid_t ownerPid = readPid(ownerFile);
                owner_ = !(processAlive(ownerPid) && ownerPid != getpid());
                return {};
            }
            return fail(Error::unavailable("PostgreSQL failed to start (pg_ctl exit " +
                                           std::to_string(rc) + "); last lines of " +
                                           log.string() + ":\n" + tail(log, 20)));
        }
        owner_ = true;
        return {};
    };
    if (status != 0)
        if (auto r = startServer(); !r) return r;
    if (owner_) std::ofstream(ownerFile, std::ios::trunc) << getpid() << "\n";

    // The database itself. A server we reuse may still be starting, recovering from a crash,
    // or shutting down (its loomd was killed in `pg_ctl stop`): wait for it, and start it
    // again once it is down, instead of failing the command.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    try {
        std::optional<pqxx::connection> opened;
        const std::string url =
            Database::fromSocket(dir.string(), options_.port, "postgres").connectionString();
        while (!opened) {
            try {
                opened.emplace(url);
            } catch (const pqxx::broken_connection&) {
                if (std::chrono::steady_clock::now() >= deadline) throw;
                usleep(100'000);
                if (runTool(*as, {bin + "/pg_ctl", "status", "-D", pgdata.string()}, "/dev/null") != 0) {
                    removeStalePostmasterPid(pgdata, options_.verbose);
                    if (auto r = startServer(); !r) return r;
                    std::ofstream(ownerFile, std::ios::trunc) << getpid() << "\n";
                }
            }
        }
        pqxx::connection& conn = *opened;
        pqxx::nontransaction tx(conn);
        if (tx.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", options_.database)
                .empty()) {
            try {
                tx.exec("CREATE DATABASE " + quoteIdentifier(options_.database));
            } catch (const pqxx::sql_error& e) {
                // A killed loomd's CREATE DATABASE still running on the server committed
                // between our check and ours: the database is there, which is all we want.
                // PostgreSQL says so as 42P04, or — when the two inserts into pg_database race
                // — as 23505 on pg_database_datname_index.
                if (e.sqlstate() != "42P04" && e.sqlstate() != "23505") throw;
            }
        }
    } catch (...) {
        return fail(translateException("embedded PostgreSQL on " + dir.string()));
    }
    return {};
}

Database EmbeddedPostgres::database() const {
    return Database::fromSocket(options_.stateDir.string(), options_.port, options_.database);
}

Result<void> EmbeddedPostgres::stop() {
    if (stopped_ || !owner_) return {};
    stopped_ = true;
    auto as = runAsUser();
    if (!as) return fail(as.error());
    DirLock lock(options_.stateDir / "loom.lock");
    const fs::path pgdata = options_.stateDir / "pgdata";
    int rc = runTool(*as,
                     {options_.binDir + "/pg_ctl", "stop", "-w", "-t", "60", "-s", "-m", "fast",
                      "-D", pgdata.string()},
                     logFile());
    std::error_code ec;
    fs::remove(options_.stateDir / "loom-owner.pid", ec);
    // Already down (stopped by a process that adopted it, or by hand) is not a failure.
    if (rc != 0 &&
        runTool(*as, {options_.binDir + "/pg_ctl", "status", "-D", pgdata.string()}, "/dev/null") == 3)
        rc = 0;
    if (rc != 0)
        return fail(Error::unavailable("pg_ctl stop failed (exit " + std::to_string(rc) +
                                       "); see " + logFile().string()));
    return {};
}

EmbeddedPostgres::~EmbeddedPostgres() {
    if (auto r = stop(); !r) std::cerr << "loom: " << r.error().toString() << "\n";
}

}  // namespace loom::db
