#include "loom/db/embedded_postgres.hpp"

#include "loom/db/native.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <sstream>

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
int runTool(const RunAs& as, const std::vector<std::string>& argv, const fs::path& output) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
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
        // Predictable messages regardless of the caller's locale.
        setenv("LC_ALL", "C", 1);
        execv(args[0], args.data());
        _exit(127);
    }
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

    if (!fs::exists(pgdata / "PG_VERSION")) {
        if (options_.verbose) std::cerr << "loom: initdb " << pgdata.string() << "\n";
        fs::remove_all(pgdata, ec);  // a half-made data dir from an interrupted initdb
        std::vector<std::string> args = {bin + "/initdb", "-D", pgdata.string(), "-U", "postgres",
                                         "-A", "trust", "-E", "UTF8", "--locale=C"};
        if (!options_.fsync) args.push_back("--no-sync");
        int rc = runTool(*as, args, log);
        fixOwner(log);
        if (rc != 0)
            return fail(Error::unavailable("initdb failed (exit " + std::to_string(rc) +
                                           "); last lines of " + log.string() + ":\n" +
                                           tail(log, 20)));
        std::ofstream conf(pgdata / "postgresql.conf", std::ios::app);
        conf << "\n# Loom: settings for the embedded server live in loom.conf\n"
                "include_if_exists = 'loom.conf'\n";
    }

    // Rewritten on every start so an fsync choice or a moved state dir takes effect.
    {
        std::ofstream conf(pgdata / "loom.conf", std::ios::trunc);
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
        if (!options_.fsync)
            conf << "synchronous_commit = off\nfull_page_writes = off\n";
        conf.close();
        fixOwner(pgdata / "loom.conf");
    }

    const fs::path ownerFile = dir / "loom-owner.pid";
    int status = runTool(*as, {bin + "/pg_ctl", "status", "-D", pgdata.string()}, "/dev/null");
    if (status == 0) {
        // Running: another live loomd owns it, or it survived a crash of its owner.
        reused_ = true;
        pid_t ownerPid = readPid(ownerFile);
        owner_ = !(processAlive(ownerPid) && ownerPid != getpid());
        if (options_.verbose)
            std::cerr << "loom: reusing PostgreSQL on " << dir.string()
                      << (owner_ ? " (adopted)" : " (owned by pid " + std::to_string(ownerPid) + ")")
                      << "\n";
    } else {
        if (options_.verbose) std::cerr << "loom: starting PostgreSQL on " << dir.string() << "\n";
        int rc = runTool(*as,
                         {bin + "/pg_ctl", "start", "-w", "-t", "120", "-s", "-D", pgdata.string(),
                          "-l", log.string()},
                         log);
        fixOwner(log);
        if (rc != 0)
            return fail(Error::unavailable("PostgreSQL failed to start (pg_ctl exit " +
                                           std::to_string(rc) + "); last lines of " +
                                           log.string() + ":\n" + tail(log, 20)));
        owner_ = true;
    }
    if (owner_) {
        std::ofstream(ownerFile, std::ios::trunc) << getpid() << "\n";
    }

    // The database itself.
    try {
        pqxx::connection conn(
            Database::fromSocket(dir.string(), options_.port, "postgres").connectionString());
        pqxx::nontransaction tx(conn);
        if (tx.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", options_.database)
                .empty())
            tx.exec("CREATE DATABASE " + quoteIdentifier(options_.database));
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
