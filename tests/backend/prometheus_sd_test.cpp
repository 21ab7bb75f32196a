// Prometheus HTTP SD out (issue 20): GET /api/v1/sd/prometheus?exporter=dcgm|node|snmp lists
// the exporters of the hosts and switches whose rack is rolled in, following the live
// inventory, and the real `prometheus` (Debian's 2.42, scripts/bootstrap) with http_sd_configs
// pointed at loomd lists those hosts in its /api/v1/targets with Loom's labels.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "loom/backend/loomd_config.hpp"
#include "loom/backend/scrape_targets.hpp"
#include "processes.hpp"
#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class PrometheusSd : public ServerFixture {
protected:
    Server& startSd() {
        TargetTemplates& t = targetTemplates_;  // the fixture registers the SD routes with them
        t.dcgm = "http://{host}:9400/metrics";
        t.node = "http://{host}:9100/metrics";
        t.snmp = "http://{exporter}/snmp?target={switch}&module=if_mib";
        t.snmpExporter = "127.0.0.1:9116";
        scrapeOptions_.interval = std::chrono::hours(1);  // these hosts do not exist: SD only
        return startServer({}, Routes::All);
    }
    HttpResult sd(Server& s, const std::string& query) {
        return request(s.port(), "GET", "/api/v1/sd/prometheus" + query, tokens_["viewer"]);
    }
    // The SD groups of `exporter` by their host/switch label.
    std::map<std::string, json> groups(Server& s, const std::string& exporter) {
        auto r = sd(s, "?exporter=" + exporter);
        EXPECT_EQ(r.status, 200) << r.body;
        std::map<std::string, json> out;
        for (const auto& g : r.j()) {
            const auto& l = g["labels"];
            out[l.contains("host") ? l["host"].get<std::string>()
                                   : l.value("switch", std::string("?"))] = g;
        }
        return out;
    }
    void advance(Server& s, const std::string& rack, int times) {
        for (int i = 0; i < times; ++i) {
            auto r = request(s.port(), "POST", "/api/v1/racks/" + rack + "/advance",
                             tokens_["operator"], "");
            ASSERT_EQ(r.status, 200) << rack << " advance " << i << ": " << r.body;
        }
    }
    static bool eventually(const std::function<bool()>& ok, std::chrono::milliseconds limit = 10s) {
        return loom::testing::eventually(ok, limit);
    }
};

TEST_F(PrometheusSd, ListsTheExportersOfRolledInRacksWithLoomsLabels) {
    auto& s = startSd();
    auto bad = sd(s, "?exporter=dcmg");
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_EQ(bad.j()["error"].value("path", ""), "exporter") << bad.body;
    EXPECT_EQ(sd(s, "").status, 400);
    // Every rack planned: no host exporter answers yet.
    EXPECT_TRUE(groups(s, "dcgm").empty());
    // z1-r001 to powered (planned -> delivered -> racked -> cabled -> powered).
    advance(s, "z1-r001", 4);
    ASSERT_TRUE(eventually([&] { return groups(s, "node").size() == 2; }))
        << sd(s, "?exporter=node").body;
    auto node = groups(s, "node");
    ASSERT_TRUE(node.contains("z1-r001-h0")) << sd(s, "?exporter=node").body;
    const auto& g = node["z1-r001-h0"];
    EXPECT_EQ(g["targets"], json::array({"z1-r001-h0:9100"})) << g.dump();
    EXPECT_EQ(g["labels"].value("rack", ""), "z1-r001") << g.dump();
    EXPECT_EQ(g["labels"].value("zone", ""), "z1") << g.dump();
    EXPECT_EQ(g["labels"].value("role", ""), "host") << g.dump();
    EXPECT_FALSE(g["labels"].value("state", "").empty()) << g.dump();
    EXPECT_EQ(g["labels"].value("__metrics_path__", ""), "/metrics") << g.dump();
    EXPECT_EQ(groups(s, "dcgm")["z1-r001-h1"]["targets"], json::array({"z1-r001-h1:9400"}));
    // snmp: the rolled-in rack's RTSW and the zone's CTSWs (outside racks), through the exporter.
    auto snmp = groups(s, "snmp");
    ASSERT_TRUE(snmp.contains("z1-r001-rtsw")) << sd(s, "?exporter=snmp").body;
    EXPECT_FALSE(snmp.contains("z1-r002-rtsw")) << "a planned rack's switch is listed";
    const auto& sw = snmp["z1-r001-rtsw"];
    EXPECT_EQ(sw["targets"], json::array({"127.0.0.1:9116"})) << sw.dump();
    EXPECT_EQ(sw["labels"].value("__param_target", ""), "z1-r001-rtsw") << sw.dump();
    EXPECT_EQ(sw["labels"].value("__param_module", ""), "if_mib") << sw.dump();
    EXPECT_EQ(sw["labels"].value("instance", ""), "z1-r001-rtsw") << sw.dump();
    EXPECT_EQ(sw["labels"].value("role", ""), "rtsw") << sw.dump();
}

TEST_F(PrometheusSd, TemplatesAreCheckedWhenLoomdYamlIsRead) {
    auto ok = readLoomdConfig(
        "telemetry:\n  targets:\n    dcgm: \"http://{host}:9400/metrics\"\n"
        "    snmp: \"http://{exporter}/snmp?target={switch}&module=if_mib\"\n"
        "    snmpExporter: \"exp:9116\"\n");
    ASSERT_TRUE(ok) << ok.error().toString();
    EXPECT_EQ(ok->targets.dcgm, "http://{host}:9400/metrics");
    auto typo =
        readLoomdConfig("telemetry:\n  targets:\n    dcgm: \"http://{hots}:9400/metrics\"\n");
    ASSERT_FALSE(typo);
    EXPECT_NE(typo.error().message.find("{hots}"), std::string::npos) << typo.error().toString();
    EXPECT_EQ(typo.error().line, 3) << typo.error().toString();
    auto noHost = readLoomdConfig("telemetry:\n  targets:\n    node: \"http://n1:9100/metrics\"\n");
    ASSERT_FALSE(noHost);
    EXPECT_NE(noHost.error().message.find("{host}"), std::string::npos)
        << noHost.error().toString();
    auto noExporter = readLoomdConfig(
        "telemetry:\n  targets:\n    snmp: \"http://{exporter}/snmp?target={switch}\"\n");
    ASSERT_FALSE(noExporter);
    EXPECT_NE(noExporter.error().message.find("snmpExporter"), std::string::npos);
    auto unknownKey = readLoomdConfig("telemetry:\n  targets:\n    ndoe: \"http://{host}:1/\"\n");
    ASSERT_FALSE(unknownKey);
    EXPECT_NE(unknownKey.error().message.find("node"), std::string::npos)
        << unknownKey.error().toString();
}

// {address}: a name -> address map (inline, or a hosts(5) file) for names that do not resolve.
TEST_F(PrometheusSd, AddressMapReachesHostsByAddress) {
    const auto dir = fs::temp_directory_path() / ("loom-sd-addr-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto hosts = (dir / "exporters.hosts").string();
    std::ofstream(hosts) << "# loopback farm\n127.0.3.1  z1-r001-h0 z1-r001-h0.mgmt\n"
                            "fd00::7 z1-r001-rtsw\n127.0.3.9 z1-r001-h1\n";
    auto cfg = readLoomdConfig(
        "telemetry:\n  targets:\n    dcgm: \"http://{address}:9400/metrics\"\n"
        "    snmp: \"http://{exporter}/snmp?target={address}\"\n"
        "    snmpExporter: \"127.0.0.1:9116\"\n"
        "    addresses: {z1-r001-h1: 10.0.0.2}\n"
        "    addressFile: " +
        hosts + "\n");
    ASSERT_TRUE(cfg) << cfg.error().toString();
    EXPECT_EQ(cfg->targets.addresses.at("z1-r001-h0"), "127.0.3.1");
    EXPECT_EQ(cfg->targets.addresses.at("z1-r001-h0.mgmt"), "127.0.3.1");
    EXPECT_EQ(cfg->targets.addresses.at("z1-r001-h1"), "10.0.0.2");  // inline wins over the file
    targetTemplates_ = cfg->targets;
    scrapeOptions_.interval = std::chrono::hours(1);
    auto& s = startServer({}, Routes::All);
    advance(s, "z1-r001", 4);  // planned -> powered: scraped
    ASSERT_TRUE(eventually([&] { return groups(s, "dcgm").size() == 2; }));
    auto dcgm = groups(s, "dcgm");
    EXPECT_EQ(dcgm["z1-r001-h0"]["targets"], json::array({"127.0.3.1:9400"}));
    EXPECT_EQ(dcgm["z1-r001-h1"]["targets"], json::array({"10.0.0.2:9400"}));
    EXPECT_EQ(dcgm["z1-r001-h0"]["labels"]["host"], "z1-r001-h0");  // the entity keeps its name
    auto snmp = groups(s, "snmp");
    EXPECT_EQ(snmp["z1-r001-rtsw"]["labels"]["__param_target"], "[fd00::7]");
    // A switch not in the map is reached by its name.
    EXPECT_EQ(snmp["z1-ctsw1"]["labels"]["__param_target"], "z1-ctsw1");

    // Bad input names the place.
    std::ofstream(hosts) << "127.0.3.1 z1-r001-h0\n\n999.1.1.1 z1-r001-h1\n";
    auto bad = readLoomdConfig("telemetry:\n  targets:\n    addressFile: " + hosts + "\n");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find(hosts + ":3"), std::string::npos) << bad.error().toString();
    EXPECT_NE(bad.error().message.find("999.1.1.1"), std::string::npos) << bad.error().toString();
    std::ofstream(hosts) << "127.0.3.1\n";
    bad = readLoomdConfig("telemetry:\n  targets:\n    addressFile: " + hosts + "\n");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("names no host"), std::string::npos)
        << bad.error().toString();
    bad = readLoomdConfig("telemetry:\n  targets:\n    addressFile: /nonexistent/x.hosts\n");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("cannot read"), std::string::npos) << bad.error().toString();
    bad = readLoomdConfig("telemetry:\n  targets:\n    addresses: {h1: \"a b\"}\n");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().path, "telemetry.targets.addresses.h1") << bad.error().toString();
    bad = readLoomdConfig("telemetry:\n  targets:\n    addresses: [1]\n");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("must be a map"), std::string::npos)
        << bad.error().toString();
    // {address} alone is enough to tell targets apart.
    EXPECT_TRUE(readLoomdConfig("telemetry:\n  targets:\n    node: \"http://{address}:9100/\"\n"));
    fs::remove_all(dir);
}

// The real Prometheus, its http_sd_configs pointed at loomd (bearer token of a viewer).
// Every template docs/telemetry.md shows (node with collect[]=infiniband, dcgm, snmp through
// the exporter by {switch} and by {address}), discovered by the real Prometheus 2.42 with the
// job stanzas the docs give: each job keeps its targets (an invalid label name in an SD answer
// made Prometheus drop all of them), and `state` is the rack's lifecycle state.
TEST_F(PrometheusSd, RealPrometheusDiscoversEveryDocumentedTemplate) {
    const char* bin = "/usr/bin/prometheus";
    if (!fs::exists(bin))
        GTEST_SKIP()
            << "prometheus not installed (apt-get install prometheus; see scripts/bootstrap)";
    TargetTemplates& t = targetTemplates_;
    t.dcgm = "http://{host}:9400/metrics";
    t.node = "http://{host}:9100/metrics?collect[]=infiniband";
    t.snmp = "http://{exporter}/snmp?target={address}&module=if_mib";
    t.snmpExporter = "127.0.0.1:9116";
    t.addresses["z1-r002-rtsw"] = "10.0.2.1";
    scrapeOptions_.interval = std::chrono::hours(1);  // these hosts do not exist: SD only
    auto& s = startServer({}, Routes::All);
    advance(s, "z1-r002", 4);
    ASSERT_TRUE(eventually([&] { return groups(s, "node").size() == 2; }));
    const auto node = groups(s, "node");
    for (const auto& [name, g] : node) {
        for (const auto& [label, value] : g["labels"].items())
            EXPECT_EQ(label.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"),
                      std::string::npos)
                << "not a Prometheus label name: " << label;
        EXPECT_EQ(g["labels"].value("state", ""), "powered") << "the rack's state: " << g.dump();
    }

    const std::uint16_t webPort = freePort();  // Prometheus's web API
    const fs::path dir = fs::temp_directory_path() / ("loom-prom-sd-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    auto job = [&](const std::string& name, const std::string& exporter, const std::string& extra) {
        return "  - job_name: " + name + "\n" + extra +
               "    http_sd_configs:\n"
               "      - url: http://127.0.0.1:" +
               std::to_string(s.port()) + "/api/v1/sd/prometheus?exporter=" + exporter +
               "\n"
               "        refresh_interval: 1s\n"
               "        authorization: {type: Bearer, credentials: " +
               tokens_["viewer"] + "}\n";
    };
    // The stanzas of docs/telemetry.md ("Your own Prometheus").
    std::ofstream(dir / "prometheus.yml")
        << "global: {scrape_interval: 5s, scrape_timeout: 1s}\n"
           "scrape_configs:\n"
        << job("loom-node", "node", "    params: {'collect[]': [infiniband]}\n")
        << job("loom-dcgm", "dcgm", "") << job("loom-snmp", "snmp", "");
    const fs::path log = dir / "prometheus.log";
    fs::remove(log);  // this run's only
    struct RemoveDir {
        fs::path dir;
        ~RemoveDir() {
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    } removeDir{dir};
    ChildProcess prometheus;  // stopped before its directory goes
    ASSERT_TRUE(prometheus.start({bin, "--config.file=" + (dir / "prometheus.yml").string(),
                                  "--storage.tsdb.path=" + (dir / "data").string(),
                                  "--web.listen-address=127.0.0.1:" + std::to_string(webPort)},
                                 log));

    json got;
    std::map<std::string, std::vector<std::string>> urls;  // job -> scrape URLs
    bool listed = eventually(
        [&] {
            auto r = request(webPort, "GET", "/api/v1/targets?state=active", "");
            if (r.status != 200) return false;
            got = r.j();
            urls.clear();
            for (const auto& t : got["data"]["activeTargets"]) {
                const auto& l = t["labels"];
                if (l.value("state", "") != "powered" || l.value("rack", "z1-r002") != "z1-r002")
                    continue;
                urls[l.value("job", "")].push_back(t.value("scrapeUrl", ""));
            }
            return urls["loom-node"].size() == 2 && urls["loom-dcgm"].size() == 2 &&
                   !urls["loom-snmp"].empty();
        },
        30s);
    std::ifstream logIn(log);
    std::string logText((std::istreambuf_iterator<char>(logIn)), {});
    ASSERT_TRUE(listed) << got.dump().substr(0, 3000) << "\nprometheus log:\n"
                        << logText.substr(logText.size() > 3000 ? logText.size() - 3000 : 0);
    std::sort(urls["loom-node"].begin(), urls["loom-node"].end());
    EXPECT_EQ(urls["loom-node"][0], "http://z1-r002-h0:9100/metrics?collect%5B%5D=infiniband");
    bool rtsw = false;
    for (const auto& u : urls["loom-snmp"])
        rtsw = rtsw || u == "http://127.0.0.1:9116/snmp?module=if_mib&target=10.0.2.1";
    EXPECT_TRUE(rtsw) << "z1-r002-rtsw by its address; got " << got.dump().substr(0, 3000);
    EXPECT_EQ(logText.find("not a valid label name"), std::string::npos) << logText;
}

}  // namespace
}  // namespace loom::backend::testing
