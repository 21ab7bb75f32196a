// loomd.yaml's one reader (backend/loomd_config.hpp): the shipped file, every section's
// values, and mistakes named by key path and line -- never ignored, never a crash.
#include "loom/backend/loomd_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "loom/backend/scrape_targets.hpp"
#include "loom/inventory/spec.hpp"

namespace loom::backend {
namespace {

using namespace std::chrono_literals;

Error errorOf(std::string_view yaml) {
    auto c = readLoomdConfig(yaml);
    EXPECT_FALSE(c) << "accepted:\n" << yaml;
    return c ? Error{} : c.error();
}

TEST(LoomdConfig, TheShippedFileReadsAsTheDefaults) {
    auto shipped = loadLoomdConfig(std::filesystem::path(LOOM_SOURCE_DIR) / "configs/loomd.yaml");
    ASSERT_TRUE(shipped) << shipped.error().toString();
    const LoomdConfig defaults;
    EXPECT_EQ(shipped->listen, "127.0.0.1:8480");
    EXPECT_EQ(shipped->server.ioThreads, defaults.server.ioThreads);
    EXPECT_EQ(shipped->server.dbThreads, defaults.server.dbThreads);
    EXPECT_EQ(shipped->server.maxConnections, defaults.server.maxConnections);
    EXPECT_EQ(shipped->server.headerLimit, defaults.server.headerLimit);
    EXPECT_EQ(shipped->server.headerTimeout, defaults.server.headerTimeout);
    EXPECT_EQ(shipped->server.bodyTimeout, defaults.server.bodyTimeout);
    EXPECT_EQ(shipped->server.idleTimeout, defaults.server.idleTimeout);
    EXPECT_EQ(shipped->server.maxBodyBytesInFlight, defaults.server.maxBodyBytesInFlight);
    EXPECT_EQ(shipped->server.streamInterval, defaults.server.streamInterval);
    EXPECT_EQ(shipped->server.wsQueueFrames, defaults.server.wsQueueFrames);
    EXPECT_EQ(shipped->server.wsSlowTicks, defaults.server.wsSlowTicks);
    EXPECT_EQ(shipped->server.replayBuffer, defaults.server.replayBuffer);
    EXPECT_EQ(shipped->server.wsDeflateLevel, defaults.server.wsDeflateLevel);
    EXPECT_TRUE(shipped->scrape.empty());
    EXPECT_EQ(shipped->provisioning.kind, "");

    // Every commented-out section of the shipped file, uncommented, is valid as written: the
    // documentation cannot drift from the reader.
    // Example lines are "#" + spaces + "key:" or "- item"; prose comments are not.
    std::ifstream in(std::filesystem::path(LOOM_SOURCE_DIR) / "configs/loomd.yaml");
    const std::regex example(R"(^(\s*)# ?(\s*(?:- |[A-Za-z][A-Za-z0-9]*:).*)$)");
    std::string text, line;
    std::smatch m;
    while (std::getline(in, line))
        text += (std::regex_match(line, m, example) ? m[1].str() + m[2].str() : line) + "\n";
    auto all = readLoomdConfig(text);
    ASSERT_TRUE(all) << all.error().toString() << "\n" << text;
    EXPECT_EQ(all->detection.flapTransitions, 3);
    EXPECT_EQ(all->provisioning.kind, "off");
    EXPECT_EQ(all->provisioning.command.timeout, 1800s);
    EXPECT_EQ(all->simulator.maxJobGpus, 4096);
    ASSERT_EQ(all->alerting.alertmanagers.size(), 1u);
    EXPECT_EQ(all->alerting.resendInterval, 60s);
    ASSERT_EQ(all->scrape.size(), 2u);
    EXPECT_EQ(all->scrape[1].interval, 10000ms);
    EXPECT_EQ(all->server.tlsCert, "/etc/loom/tls.crt");
    EXPECT_EQ(all->slurm.command, "squeue --json -t all");
    EXPECT_EQ(all->slurm.interval, 10s);
    EXPECT_FALSE(shipped->slurm.enabled());
}

TEST(LoomdConfig, EverySectionsValuesLand) {
    auto c = readLoomdConfig(R"(
listen: 0.0.0.0:9000
server: {ioThreads: 4, dbThreads: 8, headerTimeoutSeconds: 3}
stream: {intervalMs: 250, queueFrames: 8, slowTicks: 2, replayBuffer: 10, deflateLevel: 0}
detection:
  xid: {critical: [79, 48]}
  temperature: {warningC: 80, criticalC: 90}
  flapping: {transitions: 5, windowSeconds: 120, quietIntervals: 4, intervalSeconds: 15}
  linkErrorsPerSecond: 2
  eccDoubleBit: false
simulator: {seed: 9, xidPerGpuHour: 0.01, fill: 0.5, fullFidelity: true}
telemetry:
  scrape:
    - http://gpu-1:9400/metrics
    - {url: "http://sw-1:9116/snmp?target=leaf-1", intervalMs: 5000, timeoutMs: 2000}
provisioning: {executor: simulated, seed: 7, delayMs: 20}
)");
    ASSERT_TRUE(c) << c.error().toString();
    EXPECT_EQ(c->listen, "0.0.0.0:9000");
    EXPECT_EQ(c->server.ioThreads, 4);
    EXPECT_EQ(c->server.dbThreads, 8);
    EXPECT_EQ(c->server.headerTimeout, 3s);
    EXPECT_EQ(c->server.streamInterval, 250ms);
    EXPECT_EQ(c->server.wsQueueFrames, 8u);
    EXPECT_EQ(c->server.replayBuffer, 10u);
    EXPECT_EQ(c->server.wsDeflateLevel, 0);
    EXPECT_EQ(c->detection.criticalXids, (std::vector<int>{79, 48}));
    EXPECT_EQ(c->detection.ignoredXids, (std::vector<int>{13, 31, 43, 45}));  // default kept
    EXPECT_EQ(c->detection.tempWarningC, 80);
    EXPECT_EQ(c->detection.flapTransitions, 5);
    EXPECT_EQ(c->detection.flapQuietIntervals, 4);
    EXPECT_EQ(c->detection.flapIntervalSeconds, 15);
    EXPECT_EQ(c->detection.linkErrorsPerSecond, 2);
    EXPECT_FALSE(c->detection.eccDoubleBit);
    EXPECT_EQ(c->simulator.seed, 9u);
    EXPECT_DOUBLE_EQ(c->simulator.xidPerGpuHour, 0.01);
    EXPECT_DOUBLE_EQ(c->simulator.fill, 0.5);
    EXPECT_TRUE(c->simulator.fullFidelity);
    ASSERT_EQ(c->scrape.size(), 2u);
    EXPECT_EQ(c->scrape[0].url, "http://gpu-1:9400/metrics");
    EXPECT_EQ(c->scrape[1].interval, 5000ms);
    EXPECT_EQ(c->scrape[1].timeout, 2000ms);
    EXPECT_EQ(c->provisioning.kind, "simulated");
    EXPECT_EQ(c->provisioning.simulated.seed, 7u);
    EXPECT_EQ(c->provisioning.simulated.burnInDelay, 20ms);

    // Empty text, or a section with no value, is every default.
    auto empty = readLoomdConfig("");
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->simulator.seed, LoomdConfig{}.simulator.seed);
    auto bare = readLoomdConfig("detection:\nsimulator:\n");
    ASSERT_TRUE(bare) << bare.error().toString();
    EXPECT_EQ(bare->detection.flapTransitions, 3);
}

// A template may carry its own interval and timeout, and the snmp one the switch roles it covers
// (issue 20: a site walks its switches every 10-30 s; the issue's 1,536 snmp targets of the 24k
// cluster are its RTSWs). The 24k reference inventory, every rack in service, expands to that.
TEST(LoomdConfig, TemplatesCarryIntervalTimeoutAndSwitchRoles) {
    auto c = readLoomdConfig(R"(
telemetry:
  targets:
    dcgm: "http://{host}:9400/metrics"
    node: {url: "http://{host}:9100/metrics", intervalMs: 2000}
    snmp: {url: "http://{exporter}/snmp?target={switch}&module=if_mib", intervalMs: 15000,
           timeoutMs: 10000, roles: [rtsw]}
    snmpExporter: "127.0.0.1:9116"
)");
    ASSERT_TRUE(c) << c.error().toString();
    const auto& t = c->targets;
    EXPECT_EQ(t.node, "http://{host}:9100/metrics");
    EXPECT_EQ(t.optionsOf(ExporterKind::Dcgm).interval, 0ms);  // the scraper's
    EXPECT_EQ(t.optionsOf(ExporterKind::Node).interval, 2000ms);
    EXPECT_EQ(t.optionsOf(ExporterKind::Snmp).interval, 15000ms);
    EXPECT_EQ(t.optionsOf(ExporterKind::Snmp).timeout, 10000ms);
    EXPECT_EQ(t.optionsOf(ExporterKind::Snmp).roles, std::vector<std::string>{"rtsw"});

    auto inv = inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) +
                                              "/configs/clusters/meta-24k-roce.yaml");
    ASSERT_TRUE(inv) << inv.error().toString();
    for (auto& r : inv->racks) r.state = "in_service";
    auto snmp = expandTargets(t, *inv, ExporterKind::Snmp);
    ASSERT_EQ(snmp.size(), 1536u);  // the RTSWs, none of the 1,748 other switches
    for (const auto& s : snmp) {
        ASSERT_EQ(s.role, "rtsw") << s.entity;
        ASSERT_EQ(s.interval, 15000ms);
        ASSERT_EQ(s.timeout, 10000ms);
    }
    auto node = expandTargets(t, *inv, ExporterKind::Node);
    ASSERT_EQ(node.size(), 3072u);
    EXPECT_EQ(node[0].interval, 2000ms);
    EXPECT_EQ(expandTargets(t, *inv, ExporterKind::Dcgm)[0].interval, 0ms);
    // Without roles every switch is scraped: 3,284 in the 24k cluster.
    auto all = t;
    all.optionsOf(ExporterKind::Snmp).roles.clear();
    EXPECT_EQ(expandTargets(all, *inv, ExporterKind::Snmp).size(), 3284u);

    auto e = errorOf(
        "telemetry:\n  targets:\n    snmp: {url: \"http://x:9116/snmp?target={switch}\","
        " roles: [rtsw, tor]}\n");
    EXPECT_EQ(e.path, "telemetry.targets.snmp.roles[1]");
    EXPECT_NE(e.message.find("'tor' is not a switch role"), std::string::npos) << e.message;
    e = errorOf(
        "telemetry:\n  targets:\n    dcgm: {url: \"http://{host}:9400/m\", roles: [rtsw]}\n");
    EXPECT_EQ(e.path, "telemetry.targets.dcgm.roles");  // roles are the snmp template's only
    e = errorOf(
        "telemetry:\n  targets:\n    node:\n      url: \"http://{host}:9100/m\"\n"
        "      intervalMs: 50\n");
    EXPECT_EQ(e.path, "telemetry.targets.node.intervalMs");
    EXPECT_EQ(e.line, 5);
    e = errorOf("telemetry:\n  targets:\n    node: {intervalMs: 5000}\n");
    EXPECT_EQ(e.path, "telemetry.targets.node.url");
    e = errorOf("telemetry:\n  targets:\n    node:\n      url: \"http://{switch}:9100/m\"\n");
    EXPECT_EQ(e.path, "telemetry.targets.node.url");
    EXPECT_EQ(e.line, 4);
}

TEST(LoomdConfig, MistakesNameKeyPathAndLine) {
    auto e = errorOf("listen: x\nstream:\n  intervalMs: 10\n");
    EXPECT_EQ(e.path, "stream.intervalMs");
    EXPECT_EQ(e.line, 3);
    EXPECT_NE(e.message.find(">= 50"), std::string::npos) << e.message;

    e = errorOf("stream:\n  deflateLevel: 10\n");
    EXPECT_EQ(e.path, "stream.deflateLevel");
    EXPECT_NE(e.message.find("<= 9"), std::string::npos) << e.message;

    e = errorOf("stream:\n  intervalMS: 100\n");  // a typo gets a suggestion
    EXPECT_EQ(e.path, "stream.intervalMS");
    EXPECT_EQ(e.line, 2);
    EXPECT_NE(e.message.find("intervalMs"), std::string::npos) << e.message;

    e = errorOf("detection:\n  temperature:\n    warningC: hot\n");
    EXPECT_EQ(e.path, "detection.temperature.warningC");
    EXPECT_EQ(e.line, 3);
    e = errorOf("detection:\n  xid: {critical: [79, -1]}\n");
    EXPECT_EQ(e.path, "detection.xid.critical[1]");
    e = errorOf("detection:\n  tempWarning: 3\n");
    EXPECT_EQ(e.path, "detection.tempWarning");
    EXPECT_EQ(e.line, 2);
    e = errorOf("detection:\n  flapping: {quietIntervals: 2.5}\n");
    EXPECT_EQ(e.path, "detection.flapping.quietIntervals");
    e = errorOf("detection:\n  temperature: {warningC: 90, criticalC: 80}\n");
    EXPECT_EQ(e.path, "detection.temperature.criticalC");

    e = errorOf("simulator:\n  seed: 1\n  xidRate: 3\n");
    EXPECT_EQ(e.path, "simulator.xidRate");
    EXPECT_EQ(e.line, 3);
    e = errorOf("simulator:\n  fill: 2\n");
    EXPECT_EQ(e.path, "simulator.fill");
    e = errorOf("simulator:\n  seed: [1]\n");
    EXPECT_EQ(e.path, "simulator.seed");
    e = errorOf("simulator:\n  minJobGpus: 64\n  maxJobGpus: 8\n");
    EXPECT_EQ(e.path, "simulator.maxJobGpus");
    EXPECT_EQ(e.line, 3);
    e = errorOf("simulator:\n  fullFidelity: \"yes\"\n");  // a quoted string is not a boolean
    EXPECT_EQ(e.path, "simulator.fullFidelity");

    e = errorOf("telemetry:\n  scrape:\n    - https://x/metrics\n");
    EXPECT_EQ(e.path, "telemetry.scrape[0]");
    EXPECT_EQ(e.line, 3);
    e = errorOf("telemetry:\n  scrape:\n    - {url: \"http://a:99999/m\"}\n");
    EXPECT_EQ(e.path, "telemetry.scrape[0].url");
    e = errorOf("telemetry:\n  scrape:\n    - {url: http://a/m, every: 5}\n");
    EXPECT_EQ(e.path, "telemetry.scrape[0].every");
    e = errorOf("telemetry:\n  scrape: http://a/m\n");
    EXPECT_EQ(e.path, "telemetry.scrape");
    EXPECT_EQ(e.line, 2);

    e = errorOf("jobs:\n  slurm:\n    intervalSeconds: 5\n");
    EXPECT_EQ(e.path, "jobs.slurm.command");
    e = errorOf("jobs:\n  slurm:\n    command: \" \"\n");
    EXPECT_EQ(e.path, "jobs.slurm.command");
    EXPECT_EQ(e.line, 3);
    e = errorOf("jobs:\n  slurm: {command: squeue --json, intervalSeconds: 0}\n");
    EXPECT_EQ(e.path, "jobs.slurm.intervalSeconds");
    e = errorOf("jobs:\n  squeue: {command: x}\n");
    EXPECT_EQ(e.path, "jobs.squeue");
    EXPECT_EQ(e.line, 2);

    e = errorOf("server:\n  tlsCert: /a.crt\n");
    EXPECT_EQ(e.path, "server");
    e = errorOf("server:\n  ioThreads: 2\n  ioThreads: 3\n");
    EXPECT_EQ(e.path, "server.ioThreads");
    EXPECT_EQ(e.line, 3);
    EXPECT_NE(e.message.find("duplicate"), std::string::npos);
    e = errorOf("lisen: 1.2.3.4:5\n");
    EXPECT_EQ(e.path, "lisen");
    EXPECT_NE(e.message.find("listen"), std::string::npos) << e.message;

    e = errorOf("provisioning:\n  seed: 1\n  executor: magic\n");
    EXPECT_EQ(e.line, 3);
    EXPECT_NE(e.message.find("off, simulated or command"), std::string::npos);
}

TEST(LoomdConfig, HostileFilesAreRefusedNotLoaded) {
    EXPECT_EQ(errorOf("detection: [\n").code, Errc::InvalidArgument);
    EXPECT_EQ(errorOf("- a\n- b\n").code, Errc::InvalidArgument);  // not a mapping
    EXPECT_EQ(errorOf(std::string(kLoomdConfigMaxBytes + 1, '#')).code, Errc::TooLarge);
    // An alias bomb: 9 levels of 10 aliases = 10^9 nodes if expanded.
    std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
    for (char c = 'b'; c <= 'j'; ++c) {
        bomb += std::string(1, c) + ": &" + c + " [";
        for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + char(c - 1);
        bomb += "]\n";
    }
    EXPECT_EQ(errorOf(bomb).code, Errc::TooLarge);
    EXPECT_EQ(errorOf(std::string("listen: \"a\0b\"\n", 15)).code, Errc::InvalidArgument);
    EXPECT_FALSE(loadLoomdConfig("/nonexistent/loomd.yaml"));
}

}  // namespace
}  // namespace loom::backend
