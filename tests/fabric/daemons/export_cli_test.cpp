// `loomctl fabric export` end to end on a spec: --gzip gives the same bytes as the plain
// files (zcat), the default dump has no names (node-name-map has them) and is smaller than
// --names, --no-names is the default, --lids-only is smaller still and still one line per
// entry, bad options exit 2.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "daemon_util.hpp"

namespace loom::fabric {
namespace {

namespace fs = std::filesystem;
using namespace daemons;

const std::string kLoomctl = std::string(LOOM_BINARY_DIR) + "/bin/loomctl";
const std::string kSpec = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small-ib.yaml";

TEST(FabricExportCli, GzipAndNoNamesAndBadOptions) {
    ASSERT_EQ(::access(kLoomctl.c_str(), X_OK), 0) << kLoomctl;
    auto dir = fs::temp_directory_path() / ("loom-export-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    auto ex = [&](const std::string& sub, const std::string& args) {
        return sh(kLoomctl + " fabric export -f " + kSpec + " --format opensm -o " + (dir / sub).string() + " " + args);
    };
    auto plain = ex("plain", "");
    ASSERT_EQ(plain.rc, 0) << plain.out;
    auto gz = ex("gz", "--gzip --threads 3");
    ASSERT_EQ(gz.rc, 0) << gz.out;
    for (auto name : {"opensm-lfts.dump", "guid2lid", "node-name-map"}) {
        auto a = slurp(dir / "plain" / name);
        ASSERT_FALSE(a.empty()) << name;
        auto b = sh("zcat " + (dir / "gz" / (std::string(name) + ".gz")).string());
        EXPECT_EQ(b.rc, 0);
        EXPECT_EQ(b.out, a) << name;
    }
    auto named = ex("named", "--names");
    ASSERT_EQ(named.rc, 0) << named.out;
    auto slim = ex("slim", "--no-names");
    ASSERT_EQ(slim.rc, 0) << slim.out;
    auto full = slurp(dir / "named" / "opensm-lfts.dump");
    auto small = slurp(dir / "plain" / "opensm-lfts.dump");
    EXPECT_EQ(slurp(dir / "slim" / "opensm-lfts.dump"), small) << "--no-names is the default";
    EXPECT_LT(small.size() * 3, full.size() * 2);
    EXPECT_EQ(std::count(small.begin(), small.end(), '\n'), std::count(full.begin(), full.end(), '\n'));
    EXPECT_EQ(small.find("Channel Adapter"), std::string::npos);
    EXPECT_NE(full.find("Channel Adapter"), std::string::npos);
    auto map = slurp(dir / "plain" / "node-name-map");
    EXPECT_NE(map.find(" \"su001-leaf1\"\n"), std::string::npos) << map.substr(0, 400);
    EXPECT_EQ(slurp(dir / "named" / "node-name-map"), map);
    auto bare = ex("bare", "--lids-only");
    ASSERT_EQ(bare.rc, 0) << bare.out;
    auto smallest = slurp(dir / "bare" / "opensm-lfts.dump");
    EXPECT_LT(smallest.size(), small.size() / 2);
    EXPECT_EQ(std::count(smallest.begin(), smallest.end(), '\n'), std::count(full.begin(), full.end(), '\n'));
    EXPECT_EQ(smallest.find("portguid"), std::string::npos);
    EXPECT_EQ(slurp(dir / "bare" / "guid2lid"), slurp(dir / "plain" / "guid2lid"))
        << "guid2lid comes with it, unchanged";

    EXPECT_EQ(ex("bad", "--threads -1").rc, 2);
    EXPECT_EQ(ex("bad", "--names --lids-only").rc, 2);
    EXPECT_EQ(ex("bad", "--names --no-names").rc, 2);
    EXPECT_EQ(sh(kLoomctl + " fabric export -f " + kSpec + " --format frr -o " + (dir / "bad").string()).rc, 2)
        << "frr on an InfiniBand fabric";
    fs::remove_all(dir);
}

// `loomctl fabric verify`: RoCE checks the summarised tables by default, --per-rack the full
// ones; both count the same pairs and fail (exit 1) on the same lost rack.
TEST(FabricVerifyCli, SummarisedByDefaultPerRackOnRequest) {
    ASSERT_EQ(::access(kLoomctl.c_str(), X_OK), 0) << kLoomctl;
    const std::string spec = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml";
    auto verify = [&](const std::string& args) {
        return sh(kLoomctl + " fabric verify -f " + spec + " " + args);
    };
    auto line = [](const std::string& out, const std::string& key) {
        auto at = out.find(key);
        return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
    };
    auto sum = verify("");
    ASSERT_EQ(sum.rc, 0) << sum.out;
    EXPECT_NE(sum.out.find("summarised entries checked"), std::string::npos) << sum.out;
    auto full = verify("--per-rack");
    ASSERT_EQ(full.rc, 0) << full.out;
    EXPECT_EQ(full.out.find("summarised"), std::string::npos) << full.out;
    EXPECT_EQ(line(sum.out, "rack pairs"), line(full.out, "rack pairs"));
    EXPECT_EQ(line(sum.out, "routes per fabric link"), line(full.out, "routes per fabric link"));

    auto lost = verify("--fail-switch z1-r001-rtsw");
    auto lostFull = verify("--fail-switch z1-r001-rtsw --per-rack");
    EXPECT_EQ(lost.rc, 1) << lost.out;
    EXPECT_EQ(lostFull.rc, 1) << lostFull.out;
    EXPECT_NE(line(lost.out, "rack pairs").find("(unreachable 6)"), std::string::npos) << lost.out;
    EXPECT_EQ(line(lost.out, "rack pairs"), line(lostFull.out, "rack pairs"));
}

// RoCE json: summarised by default (zone aggregates), --per-rack gives one route per rack.
TEST(FabricExportCli, JsonSummarisedOrPerRack) {
    ASSERT_EQ(::access(kLoomctl.c_str(), X_OK), 0) << kLoomctl;
    const std::string spec = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/dev-small.yaml";
    auto dir = fs::temp_directory_path() / ("loom-export-json-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    auto ex = [&](const std::string& sub, const std::string& args) {
        return sh(kLoomctl + " fabric export -f " + spec + " --format json -o " + (dir / sub).string() + " " + args);
    };
    auto summarised = ex("sum", "");
    ASSERT_EQ(summarised.rc, 0) << summarised.out;
    auto perRack = ex("rack", "--per-rack");
    ASSERT_EQ(perRack.rc, 0) << perRack.out;
    // dev-small: one zone of 4 racks (10.128.0.0/24); an ATSW holds the zone's aggregate.
    auto a = slurp(dir / "sum" / "routes" / "atsw01.json");
    auto b = slurp(dir / "rack" / "routes" / "atsw01.json");
    EXPECT_NE(a.find("\"summarised\":true"), std::string::npos) << a;
    EXPECT_NE(a.find("\"10.128.0.0/24\":"), std::string::npos) << a;
    EXPECT_EQ(b.find("summarised"), std::string::npos) << b;
    EXPECT_NE(b.find("\"10.128.0.192/26\":"), std::string::npos) << b;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace loom::fabric
