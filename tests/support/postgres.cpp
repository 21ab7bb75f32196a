#include "loom/testing/postgres.hpp"

#include "loom/db/migrations.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>

namespace fs = std::filesystem;

namespace loom::testing {
namespace {

constexpr const char* kTemplate = "loom_template";

struct Harness {
    fs::path dir;
    std::unique_ptr<db::EmbeddedPostgres> pg;
    std::string error;
    std::atomic<int> next{0};

    ~Harness() {
        bool keep = std::getenv("LOOM_TEST_KEEP") != nullptr;
        if (keep) {
            std::cerr << "loom test harness: keeping " << dir << " (LOOM_TEST_KEEP)\n";
            return;
        }
        if (pg) (void)pg->stop();
        pg.reset();
        std::error_code ec;
        if (!dir.empty()) fs::remove_all(dir, ec);
    }
};

// Stops servers of earlier test binaries that died without cleaning up.
void reapOrphans() {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/tmp", ec)) {
        const fs::path p = entry.path();
        if (p.filename().string().rfind("loom-test-", 0) != 0) continue;
        std::ifstream in(p / "loom-owner.pid");
        long pid = 0;
        if (!(in >> pid) || pid <= 0) continue;
        if (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;
        std::string cmd = "runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl stop -s -m immediate -D '" +
                          (p / "pgdata").string() + "' >/dev/null 2>&1";
        if (geteuid() != 0)
            cmd = "/usr/lib/postgresql/15/bin/pg_ctl stop -s -m immediate -D '" +
                  (p / "pgdata").string() + "' >/dev/null 2>&1";
        (void)std::system(cmd.c_str());
        fs::remove_all(p, ec);
    }
}

Harness& harness() {
    static Harness h;
    static std::once_flag once;
    std::call_once(once, [] {
        reapOrphans();
        char tmpl[] = "/tmp/loom-test-XXXXXX";
        if (!mkdtemp(tmpl)) {
            h.error = "mkdtemp failed";
            return;
        }
        h.dir = tmpl;
        auto pg = db::EmbeddedPostgres::start({.stateDir = h.dir, .fsync = false,
                                               .database = kTemplate});
        if (!pg) {
            h.error = pg.error().toString();
            return;
        }
        h.pg = std::move(*pg);
        auto conn = h.pg->database().connect();
        if (!conn) {
            h.error = conn.error().toString();
            return;
        }
        if (auto m = db::migrate(*conn); !m) h.error = "migrating the template: " + m.error().toString();
    });
    return h;
}

}  // namespace

db::EmbeddedPostgres* sharedPostgres() {
    Harness& h = harness();
    if (!h.error.empty()) {
        ADD_FAILURE() << "test PostgreSQL unavailable: " << h.error;
        return nullptr;
    }
    return h.pg.get();
}

std::string createTestDatabase() {
    Harness& h = harness();
    if (!h.pg) return {};
    std::string name = "t_" + std::to_string(getpid()) + "_" + std::to_string(h.next++);
    auto admin = h.pg->database().withDatabase("postgres").connect();
    if (!admin) {
        ADD_FAILURE() << admin.error().toString();
        return {};
    }
    // STRATEGY FILE_COPY: the template is tiny and fsync is off, so copying files beats
    // WAL-logging every block (PostgreSQL 15's default).
    auto r = admin->exec("CREATE DATABASE " + db::quoteIdentifier(name) + " TEMPLATE " +
                         kTemplate + " STRATEGY FILE_COPY");
    if (!r) {
        ADD_FAILURE() << "creating " << name << ": " << r.error().toString();
        return {};
    }
    return name;
}

void dropTestDatabase(const std::string& name) {
    Harness& h = harness();
    if (!h.pg || name.empty()) return;
    auto admin = h.pg->database().withDatabase("postgres").connect();
    if (!admin) return;
    (void)admin->exec("DROP DATABASE IF EXISTS " + db::quoteIdentifier(name) + " WITH (FORCE)");
}

void PostgresTest::SetUp() {
    auto* pg = sharedPostgres();
    ASSERT_NE(pg, nullptr);
    name_ = createTestDatabase();
    ASSERT_FALSE(name_.empty());
    database_ = pg->database().withDatabase(name_);
}

void PostgresTest::TearDown() {
    if (std::getenv("LOOM_TEST_KEEP")) return;
    dropTestDatabase(name_);
}

db::Connection PostgresTest::connect() {
    auto c = database_.connect();
    if (!c) {
        ADD_FAILURE() << "connecting to " << name_ << ": " << c.error().toString();
        std::abort();  // a test without its database cannot continue meaningfully
    }
    return std::move(*c);
}

}  // namespace loom::testing
