// The token list in natural order of the names (issue 12: every list of the API), revoked tokens
// included. Real PostgreSQL (tests/support).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/db/token_repo.hpp"
#include "loom/testing/postgres.hpp"

namespace {

class TokenList : public loom::testing::PostgresTest {};

TEST_F(TokenList, IsInNaturalOrderOfTheNames) {
    auto conn = connect();
    // Created out of order; bytewise, ci-10 and ci-11 would come before ci-2.
    const std::vector<std::string> created{"ci-10", "ci-2", "bot", "ci-11", "ci-1", "ci-02"};
    int i = 0;
    for (const auto& name : created)
        ASSERT_TRUE(
            loom::db::createToken(conn, name, "viewer", "hash-" + std::to_string(i++), "test"));
    ASSERT_TRUE(loom::db::revokeToken(conn, "ci-11"));
    auto list = loom::db::listTokens(conn);
    ASSERT_TRUE(list) << list.error().toString();
    std::vector<std::string> names;
    for (const auto& t : *list) names.push_back(t.name);
    EXPECT_EQ(names, (std::vector<std::string>{"bot", "ci-1", "ci-2", "ci-02", "ci-10", "ci-11"}));
}

}  // namespace
