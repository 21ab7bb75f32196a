// The name search indexes (migration 0022's trigram GINs on ports and links, on lower(name)
// since 0032) that a bulk apply
// drops before its COPY are built in loomd's background, on a connection of their own: at
// start (an apply stopped between its commit and the build left them missing) and after an
// apply, whose answer does not wait for them. Lists answer, exactly, meanwhile.
#include <fstream>

#include "loom/testing/eventually.hpp"
#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;
using loom::testing::eventually;

class NameIndexBuild : public ServerFixture {
protected:
    int sampleRacks() const override { return 0; }
    std::string nameIndexes() {
        auto conn = connect();
        return conn
            .queryValue(
                "SELECT count(*) FROM pg_indexes WHERE indexname IN "
                "('ports_name_trgm', 'links_name_trgm')")
            ->value_or("?");
    }
    void dropNameIndexes() {
        auto conn = connect();
        // IF EXISTS: migration 0032 drops them too (they come back on lower(name) from the
        // same background build).
        ASSERT_TRUE(
            conn.queryValue("DROP INDEX IF EXISTS ports_name_trgm, links_name_trgm; SELECT 1"));
        ASSERT_EQ(nameIndexes(), "0");
    }
    std::string devSmall() {
        std::ifstream f(std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml");
        return {std::istreambuf_iterator<char>(f), {}};
    }
};

TEST_F(NameIndexBuild, MissingIndexesAreBuiltAfterStartAndAfterAnApply) {
    dropNameIndexes();
    auto& s = startServer();
    EXPECT_TRUE(eventually([&] { return nameIndexes() == "2"; }, 15s))
        << "loomd's start did not build the name indexes";

    // Dropped again (as a bulk apply does), then an apply over the API: built after it.
    dropNameIndexes();
    auto applied = request(s.port(), "POST", "/api/v1/apply", tokens_["operator"], devSmall(),
                           {{"Content-Type", "application/yaml"}});
    ASSERT_EQ(applied.status, 200) << applied.body;
    auto listed =
        request(s.port(), "GET", "/api/v1/ports?name__ic=rtsw&limit=5000", tokens_["viewer"]);
    ASSERT_EQ(listed.status, 200) << listed.body;
    const auto withoutIndexes = listed.j()["items"].size();
    EXPECT_GT(withoutIndexes, 0u);
    EXPECT_TRUE(eventually([&] { return nameIndexes() == "2"; }, 15s))
        << "the apply did not lead to the name indexes being built";
    listed = request(s.port(), "GET", "/api/v1/ports?name__ic=rtsw&limit=5000", tokens_["viewer"]);
    EXPECT_EQ(listed.j()["items"].size(), withoutIndexes) << "the same list with the indexes";
}

}  // namespace
}  // namespace loom::backend::testing
