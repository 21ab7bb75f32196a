// configs/exporters/ and docs/telemetry.md against the metric table (issue 20, item 1: what Loom
// reads is written once, in code): the dcgm-exporter counters file lists exactly the DCGM fields
// Loom reads, the snmp_exporter module walks exactly the IF-MIB objects Loom reads (with ifName
// as the lookup label, and the real snmp_exporter 0.21 accepts it), node_exporter's flags turn
// on the collector whose metrics Loom reads (and node_exporter 1.5's real page has them all),
// and the page of each source reaches the hub with nothing ignored.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "hub_fixture.hpp"
#include "loom/telemetry/metric_table.hpp"

namespace loom::telemetry {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = LOOM_SOURCE_DIR;

std::string readAll(const fs::path& p) {
    std::ifstream in(p);
    EXPECT_TRUE(in) << "cannot read " << p;
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::set<std::string> tableNames(std::string_view source) {
    std::set<std::string> out;
    for (const auto& m : metricNames())
        if (m.source == source) out.emplace(m.name);
    return out;
}

std::string trim(std::string s) {
    const auto b = s.find_first_not_of(" \t\r");
    const auto e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

class ExporterConfigs : public HubFixture {
protected:
    void SetUp() override { makeHub({.zones = 1, .racksPerZone = 2, .ctswPerZone = 2}); }
};

TEST_F(ExporterConfigs, DcgmCountersListEveryFieldLoomReads) {
    std::set<std::string> listed;
    std::istringstream in(readAll(kRoot / "configs/exporters/dcgm-counters.csv"));
    int lineNo = 0;
    std::string page;
    for (std::string line; std::getline(in, line);) {
        ++lineNo;
        if (trim(line).empty() || trim(line)[0] == '#') continue;
        // dcgm-exporter's format: field, type, help.
        std::istringstream cols(line);
        std::string field, type, help;
        std::getline(cols, field, ',');
        std::getline(cols, type, ',');
        std::getline(cols, help);
        field = trim(field), type = trim(type), help = trim(help);
        EXPECT_TRUE(type == "gauge" || type == "counter") << "line " << lineNo << ": " << line;
        EXPECT_FALSE(help.empty()) << "line " << lineNo << ": " << line;
        EXPECT_TRUE(listed.insert(field).second) << "line " << lineNo << ": listed twice";
        page += "# TYPE " + field + " " + type + "\n" + field + "{gpu=\"0\",UUID=\"GPU-x\"," +
                "Hostname=\"" + inv_.hosts[0].name + "\",hpc_job=\"4711\"} 1\n";
    }
    auto want = tableNames("dcgm");
    // Before DCGM 3.3 the clock event reasons had another name: the file names it in a comment.
    want.erase("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS");
    EXPECT_EQ(listed, want);
    // Every field of the file is one the hub keeps: nothing of the page is ignored.
    auto rep = ingest(page);
    EXPECT_EQ(rep.ignored, 0u);
    EXPECT_EQ(rep.applied, listed.size());
    EXPECT_EQ(rep.unknownTotal(), 0u);
}

TEST_F(ExporterConfigs, SnmpModuleHasEveryIfMibObjectLoomReads) {
    const auto file = kRoot / "configs/exporters/snmp.yml";
    const auto doc = YAML::LoadFile(file.string());
    const auto mod = doc["if_mib"];
    ASSERT_TRUE(mod.IsMap()) << "snmp.yml has no module if_mib (the template's module=if_mib)";
    constexpr std::string_view kIfName = "1.3.6.1.2.1.31.1.1.1.1";
    std::set<std::string> walked;
    for (const auto& w : mod["walk"]) walked.insert(w.as<std::string>());
    EXPECT_TRUE(walked.count(std::string(kIfName))) << "ifName is not walked";
    // The page's prose wraps lines: "ifName\n1.3.6..." reads as "ifName 1.3.6...".
    auto docs = readAll(kRoot / "docs/telemetry.md");
    std::replace(docs.begin(), docs.end(), '\n', ' ');
    std::set<std::string> metrics;
    std::string page;
    for (const auto& m : mod["metrics"]) {
        const auto name = m["name"].as<std::string>();
        const auto oid = m["oid"].as<std::string>();
        metrics.insert(name);
        EXPECT_TRUE(walked.count(oid)) << name << " " << oid << " is not walked";
        // docs/telemetry.md gives each object's numeric OID for sites writing their own module.
        EXPECT_NE(docs.find(name + " " + oid), std::string::npos)
            << "docs/telemetry.md does not say '" << name << " " << oid << "'";
        ASSERT_TRUE(m["indexes"].IsSequence()) << name;
        EXPECT_EQ(m["indexes"][0]["labelname"].as<std::string>(), "ifIndex") << name;
        ASSERT_TRUE(m["lookups"].IsSequence()) << name << " has no ifName lookup";
        EXPECT_EQ(m["lookups"][0]["labelname"].as<std::string>(), "ifName") << name;
        EXPECT_EQ(m["lookups"][0]["oid"].as<std::string>(), kIfName) << name;
        page += name + "{ifIndex=\"1\",ifName=\"swp1\"} 1\n";
    }
    EXPECT_EQ(metrics, tableNames("snmp"));
    // A page in the module's shape, from the target switch: every object lands on its port.
    auto rep = ingest(page, {.switchName = inv_.switches[0].name});
    EXPECT_EQ(rep.ignored + rep.applied, metrics.size());
    EXPECT_EQ(rep.unknownTotal(), 0u);

    const char* exporter = "/usr/bin/prometheus-snmp-exporter";
    if (!fs::exists(exporter)) {
        std::cout << "[ SKIPPED  ] " << exporter
                  << " is not installed (scripts/bootstrap installs it): module not run\n";
        return;
    }
    // The real snmp_exporter 0.21 reads the module (and refuses a broken one: the check bites).
    const auto cmd = std::string(exporter) + " --dry-run --config.file=";
    EXPECT_EQ(std::system((cmd + file.string() + " >/dev/null 2>&1").c_str()), 0);
    const auto broken = fs::temp_directory_path() / "loom-broken-snmp.yml";
    std::ofstream(broken) << "if_mib:\n  walk: [1.3.6.1.2.1.2.2.1.8]\n  metrics:\n"
                             "  - name: ifOperStatus\n    oid: 1.3.6.1.2.1.2.2.1.8\n"
                             "    typo: gauge\n";
    EXPECT_NE(std::system((cmd + broken.string() + " >/dev/null 2>&1").c_str()), 0);
    fs::remove(broken);
}

TEST_F(ExporterConfigs, NodeExporterArgsEnableTheInfinibandCollector) {
    const auto args = readAll(kRoot / "configs/exporters/node_exporter.args");
    EXPECT_NE(args.find("\n--collector.infiniband"), std::string::npos);
    // node_exporter 1.5's real page (bench/telemetry/pages/, recorded with --path.sysfs on 8
    // ConnectX ports) has every node metric Loom reads; the template asks for that collector.
    const auto page = readAll(kRoot / "bench/telemetry/pages/node_exporter_infiniband.txt");
    for (const auto& name : tableNames("node")) {
        // node_infiniband_info's first label is board_id: its mlx5_7 line, wherever device is.
        const auto at = page.find("\n" + name + "{");
        ASSERT_NE(at, std::string::npos) << name;
        bool mlx5_7 = false;
        for (auto line = at; line != std::string::npos && !mlx5_7;
             line = page.find("\n" + name + "{", line + 1))
            mlx5_7 =
                page.substr(line, page.find('\n', line + 1) - line).find("device=\"mlx5_7\"") !=
                std::string::npos;
        EXPECT_TRUE(mlx5_7) << name;
    }
    EXPECT_NE(readAll(kRoot / "docs/telemetry.md").find("collect[]=infiniband"), std::string::npos);
    auto rep = ingest(page, {.host = inv_.hosts[0].name});
    // Every metric of every port, but node_infiniband_info: read (which device is which NIC),
    // not stored.
    EXPECT_EQ(rep.applied, 8 * (tableNames("node").size() - 1));
    EXPECT_EQ(rep.unknownTotal(), 0u);
}

TEST_F(ExporterConfigs, TheTelemetryPageNamesEveryMetricLoomReads) {
    const auto docs = readAll(kRoot / "docs/telemetry.md");
    for (const auto& m : metricNames()) {
        // The page shortens DCGM field lists as `_GPU_TEMP` after the first full name and the
        // loom_port_{in,out}_... families as one brace form: accept either.
        std::string shortName(m.name);
        if (shortName.starts_with("DCGM_FI_DEV"))
            shortName = shortName.substr(11);
        else if (shortName.starts_with("DCGM_FI_PROF"))
            shortName = shortName.substr(12);
        const bool brace =
            m.source == "loom" && (docs.find("loom_port_{in,out}_") != std::string::npos);
        EXPECT_TRUE(docs.find(std::string(m.name)) != std::string::npos ||
                    docs.find("`" + shortName) != std::string::npos ||
                    docs.find(", " + shortName) != std::string::npos || brace)
            << "docs/telemetry.md does not mention " << m.name;
    }
}

}  // namespace
}  // namespace loom::telemetry
