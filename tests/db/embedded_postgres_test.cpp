// EmbeddedPostgres: start, reuse, adopt after a crash, guest mode, clean stop, clear failure.
#include "loom/db/embedded_postgres.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using loom::db::EmbeddedPostgres;

class Embedded : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/loom-emb-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    bool running() const { return fs::exists(dir_ / "pgdata" / "postmaster.pid"); }
    fs::path dir_;
};

TEST_F(Embedded, StartsReusesAdoptsAndStops) {
    auto first = EmbeddedPostgres::start({.stateDir = dir_, .fsync = false});
    ASSERT_TRUE(first) << first.error().toString();
    EXPECT_TRUE((*first)->owner());
    EXPECT_FALSE((*first)->reused());
    EXPECT_TRUE(fs::exists(dir_ / "postgres.log"));
    {
        auto conn = (*first)->database().connect();
        ASSERT_TRUE(conn) << conn.error().toString();
        EXPECT_EQ(conn->queryValue("SELECT current_database()")->value(), "loom");
        EXPECT_EQ(conn->queryValue("SHOW listen_addresses")->value(), "");
    }

    // A second process while the first is alive: a guest, which leaves the server running.
    // (Simulated in-process: the owner file names our parent, a live process that is not us.)
    std::ofstream(dir_ / "loom-owner.pid", std::ios::trunc) << getppid() << "\n";
    {
        auto guest = EmbeddedPostgres::start({.stateDir = dir_, .fsync = false});
        ASSERT_TRUE(guest) << guest.error().toString();
        EXPECT_TRUE((*guest)->reused());
        EXPECT_FALSE((*guest)->owner());
    }
    EXPECT_TRUE(running()) << "a guest must not stop the owner's server";

    // The owner crashed (its pid is gone): the next start adopts the running server.
    std::ofstream(dir_ / "loom-owner.pid", std::ios::trunc) << 999999 << "\n";
    {
        auto adopter = EmbeddedPostgres::start({.stateDir = dir_, .fsync = false});
        ASSERT_TRUE(adopter) << adopter.error().toString();
        EXPECT_TRUE((*adopter)->reused());
        EXPECT_TRUE((*adopter)->owner());
    }
    EXPECT_FALSE(running()) << "the adopter stops the server when it goes away";
    EXPECT_TRUE((*first)->stop());  // already stopped by the adopter: pg_ctl says so, no crash

    // Data survives a restart.
    auto again = EmbeddedPostgres::start({.stateDir = dir_, .fsync = false});
    ASSERT_TRUE(again) << again.error().toString();
    EXPECT_FALSE((*again)->reused());
    EXPECT_TRUE((*again)->stop());
    EXPECT_FALSE(running());
}

TEST_F(Embedded, FailureToStartReportsTheLogTail) {
    // Port 0 is invalid for PostgreSQL: initdb works, the server refuses to start.
    auto pg = EmbeddedPostgres::start({.stateDir = dir_, .fsync = false, .port = 0});
    ASSERT_FALSE(pg);
    EXPECT_EQ(pg.error().code, loom::Errc::Unavailable);
    EXPECT_NE(pg.error().message.find("PostgreSQL failed to start"), std::string::npos)
        << pg.error().message;
    EXPECT_NE(pg.error().message.find("port"), std::string::npos) << pg.error().message;
}

TEST_F(Embedded, TooLongStateDirIsRejected) {
    auto pg = EmbeddedPostgres::start({.stateDir = dir_ / std::string(120, 'x')});
    ASSERT_FALSE(pg);
    EXPECT_EQ(pg.error().code, loom::Errc::InvalidArgument);
    EXPECT_EQ(pg.error().path, "--state-dir");
}

}  // namespace
