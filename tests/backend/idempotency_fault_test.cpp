// Fault suite (issue 18, item 6): POST /api/v1/apply with an Idempotency-Key. A retry with
// the same key returns the first answer (same status, same body) and applies nothing, even
// when the inventory was changed meanwhile by other means; the same key with another request
// is a 422; an expired key is a new request; a malformed key is a 400 naming the header.
#include "server_fixture.hpp"

#include <fstream>
#include <future>

namespace loom::backend::testing {
namespace {

class Idempotency : public ServerFixture {
protected:
    int sampleRacks() const override { return 0; }
    void SetUp() override {
        ServerFixture::SetUp();
        std::ifstream f(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml");
        ASSERT_TRUE(f) << "configs/clusters/dev-small.yaml";
        spec_.assign(std::istreambuf_iterator<char>(f), {});
        renamed_ = spec_;
        auto at = renamed_.find("  name: dev-small\n");
        ASSERT_NE(at, std::string::npos);
        renamed_.replace(at, 18, "  name: dev-small-renamed\n");
    }
    HttpResult apply(std::uint16_t port, const std::string& body, const std::string& key,
                     const std::string& query = "") {
        std::vector<std::pair<std::string, std::string>> h{{"Content-Type", "application/yaml"}};
        if (!key.empty()) h.emplace_back("Idempotency-Key", key);
        return request(port, "POST", "/api/v1/apply" + query, tokens_["operator"], body, h);
    }
    std::string value(const std::string& sql) {
        auto conn = connect();
        return conn.queryValue(sql)->value_or("");
    }
    std::string spec_, renamed_;
};

TEST_F(Idempotency, ARetryReturnsTheFirstAnswerAndAppliesNothing) {
    auto& s = startServer();
    auto first = apply(s.port(), spec_, "key-1");
    ASSERT_EQ(first.status, 200) << first.body;
    ASSERT_TRUE(first.j()["applied"].get<bool>());
    EXPECT_EQ(first.headers.count("Idempotent-Replayed"), 0u);
    const std::string runs = value("SELECT count(*) FROM apply_runs");

    // The inventory changes by other means (an apply without the key renames the cluster).
    auto other = apply(s.port(), renamed_, "");
    ASSERT_EQ(other.status, 200) << other.body;
    ASSERT_TRUE(other.j()["applied"].get<bool>());
    const std::string generation = value("SELECT generation FROM inventory_state");

    // The retry: the first answer, byte for byte, and nothing applied (re-applying would have
    // renamed the cluster back and added an apply run).
    auto retry = apply(s.port(), spec_, "key-1");
    EXPECT_EQ(retry.status, first.status);
    EXPECT_EQ(retry.body, first.body);
    EXPECT_EQ(retry.headers["Idempotent-Replayed"], "true");
    EXPECT_EQ(value("SELECT cluster FROM inventory_state"), "dev-small-renamed");
    EXPECT_EQ(value("SELECT generation FROM inventory_state"), generation);
    EXPECT_EQ(value("SELECT count(*) FROM apply_runs"), std::to_string(std::stoi(runs) + 1));

    // The same key for another request: refused, naming the header.
    auto reused = apply(s.port(), renamed_, "key-1");
    EXPECT_EQ(reused.status, 422) << reused.body;
    EXPECT_EQ(reused.j()["error"]["path"], "Idempotency-Key") << reused.body;
    auto pruned = apply(s.port(), spec_, "key-1", "?prune=true");
    EXPECT_EQ(pruned.status, 422) << pruned.body;

    // Keys are per actor: another operator's key-1 is its own.
    // (an admin token may apply too)
    auto admin = request(s.port(), "POST", "/api/v1/apply", tokens_["admin"], renamed_,
                         {{"Content-Type", "application/yaml"}, {"Idempotency-Key", "key-1"}});
    EXPECT_EQ(admin.status, 200) << admin.body;
    EXPECT_NE(admin.body, first.body);

    // A "no changes" answer is remembered too, and so is its key.
    auto same = apply(s.port(), renamed_, "key-2");
    ASSERT_EQ(same.status, 200) << same.body;
    EXPECT_FALSE(same.j()["applied"].get<bool>());
    EXPECT_EQ(apply(s.port(), renamed_, "key-2").body, same.body);

    // An expired key is a new request: this one applies.
    ASSERT_TRUE(connect().exec("UPDATE idempotency_keys SET expires_at = now() - interval '1 s' "
                               "WHERE key = 'key-1'"));
    auto fresh = apply(s.port(), spec_, "key-1");
    EXPECT_EQ(fresh.status, 200) << fresh.body;
    EXPECT_TRUE(fresh.j()["applied"].get<bool>()) << fresh.body;
    EXPECT_EQ(value("SELECT cluster FROM inventory_state"), "dev-small");

    // Dry runs are not recorded: the same key may then be used for the real apply.
    auto dry = apply(s.port(), renamed_, "key-3", "?dryRun=true");
    EXPECT_EQ(dry.status, 200);
    auto real = apply(s.port(), renamed_, "key-3");
    EXPECT_EQ(real.status, 200);
    EXPECT_TRUE(real.j()["applied"].get<bool>()) << real.body;
}

TEST_F(Idempotency, MalformedKeysAreRefusedNamingTheHeader) {
    auto& s = startServer();
    for (std::string key : {std::string("has space"), std::string(201, 'k'), std::string("tab\tkey")}) {
        auto r = apply(s.port(), spec_, key);
        EXPECT_EQ(r.status, 400) << key << ": " << r.body;
        EXPECT_EQ(r.j()["error"]["path"], "Idempotency-Key") << r.body;
    }
    EXPECT_EQ(value("SELECT count(*) FROM apply_runs"), "0");
}

TEST_F(Idempotency, ConcurrentRequestsWithOneKeyApplyOnce) {
    auto& s = startServer();
    auto one = std::async(std::launch::async, [&] { return apply(s.port(), spec_, "race"); });
    auto two = std::async(std::launch::async, [&] { return apply(s.port(), spec_, "race"); });
    auto a = one.get(), b = two.get();
    // One applies; the other gets that answer, or 409 while the first was still running.
    for (const auto* r : {&a, &b}) EXPECT_TRUE(r->status == 200 || r->status == 409) << r->body;
    EXPECT_EQ(value("SELECT count(*) FROM apply_runs"), "1");
    auto later = apply(s.port(), spec_, "race");
    EXPECT_EQ(later.status, 200);
    EXPECT_EQ(later.headers["Idempotent-Replayed"], "true");
    EXPECT_TRUE(later.j()["applied"].get<bool>());
}

}  // namespace
}  // namespace loom::backend::testing
