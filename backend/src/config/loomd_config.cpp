#include "loom/backend/loomd_config.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <limits>

#include "loom/client/client.hpp"
#include "loom/inventory/input_guard.hpp"
#include "loom/inventory/model.hpp"
#include "loom/inventory/yaml_reader.hpp"

namespace loom::backend {
namespace {

namespace yaml = inventory::yaml;
using yaml::MapReader;

constexpr long long kMaxInt = 2'147'483'647;

void readServer(const YAML::Node& n, ServerConfig& c) {
    MapReader r(
        n, "server",
        {"ioThreads", "dbThreads", "maxConnections", "headerLimitBytes", "headerTimeoutSeconds",
         "bodyTimeoutSeconds", "idleTimeoutSeconds", "maxBodyMiBInFlight", "tlsCert", "tlsKey"});
    c.ioThreads = int(r.integer("ioThreads", c.ioThreads, 1, 256));
    c.dbThreads = int(r.integer("dbThreads", c.dbThreads, 1, 1024));
    c.maxConnections = std::size_t(
        r.integer("maxConnections", static_cast<long long>(c.maxConnections), 1, 10'000'000));
    c.headerLimit = std::size_t(
        r.integer("headerLimitBytes", static_cast<long long>(c.headerLimit), 1024, 16 << 20));
    c.headerTimeout =
        std::chrono::seconds(r.integer("headerTimeoutSeconds", c.headerTimeout.count(), 1, 86400));
    c.bodyTimeout =
        std::chrono::seconds(r.integer("bodyTimeoutSeconds", c.bodyTimeout.count(), 1, 86400));
    c.idleTimeout =
        std::chrono::seconds(r.integer("idleTimeoutSeconds", c.idleTimeout.count(), 1, 86400));
    c.maxBodyBytesInFlight =
        std::size_t(r.integer("maxBodyMiBInFlight",
                              static_cast<long long>(c.maxBodyBytesInFlight >> 20), 1, 1 << 20))
        << 20;
    c.tlsCert = r.string("tlsCert", c.tlsCert);
    c.tlsKey = r.string("tlsKey", c.tlsKey);
    if (c.tlsCert.empty() != c.tlsKey.empty())
        yaml::failAt("tlsCert and tlsKey go together (both or neither)", "server", r.line());
}

void readStream(const YAML::Node& n, ServerConfig& c) {
    MapReader r(n, "stream",
                {"intervalMs", "queueFrames", "slowTicks", "replayBuffer", "deflateLevel"});
    c.streamInterval =
        std::chrono::milliseconds(r.integer("intervalMs", c.streamInterval.count(), 50, 60'000));
    c.wsQueueFrames = std::size_t(
        r.integer("queueFrames", static_cast<long long>(c.wsQueueFrames), 1, 1'000'000));
    c.wsSlowTicks = int(r.integer("slowTicks", c.wsSlowTicks, 1, 10'000));
    c.replayBuffer = std::size_t(
        r.integer("replayBuffer", static_cast<long long>(c.replayBuffer), 0, 10'000'000));
    c.wsDeflateLevel = int(r.integer("deflateLevel", c.wsDeflateLevel, 0, 9));
}

std::vector<int> xidList(const MapReader& r, std::string_view key, std::vector<int> def) {
    if (!r.has(key)) return def;
    std::vector<int> out;
    yaml::forEachItem(r.get(key), r.at(key), 1000,
                      [&](const YAML::Node& v, const std::string& path) {
                          out.push_back(int(MapReader::asInt(v, path, 1, 1000)));  // XID codes
                      });
    return out;
}

void readDetection(const YAML::Node& n, telemetry::DetectionConfig& c) {
    MapReader d(n, "detection",
                {"xid", "temperature", "eccDoubleBit", "rowRemapFailure", "nvlinkCrcPerSecond",
                 "linkDown", "flapping", "linkErrorsPerSecond", "pfcPausePerSecond",
                 "staleAfterSeconds", "throttledIntervals", "thresholdHoldDownSeconds"});
    if (d.has("xid")) {
        MapReader x(d.get("xid"), d.at("xid"), {"critical", "ignore"});
        c.criticalXids = xidList(x, "critical", c.criticalXids);
        c.ignoredXids = xidList(x, "ignore", c.ignoredXids);
    }
    if (d.has("temperature")) {
        MapReader t(d.get("temperature"), d.at("temperature"),
                    {"warningC", "criticalC", "hysteresisC"});
        c.tempWarningC = t.number("warningC", c.tempWarningC, 0, 200);
        c.tempCriticalC = t.number("criticalC", c.tempCriticalC, 0, 200);
        c.tempHysteresisC = t.number("hysteresisC", c.tempHysteresisC, 0, 50);
        if (c.tempCriticalC < c.tempWarningC)
            yaml::failAt("must be >= warningC", t.at("criticalC"),
                         t.keyLine("criticalC") ? t.keyLine("criticalC") : t.line());
    }
    c.eccDoubleBit = d.boolean("eccDoubleBit", c.eccDoubleBit);
    c.rowRemapFailure = d.boolean("rowRemapFailure", c.rowRemapFailure);
    c.linkDown = d.boolean("linkDown", c.linkDown);
    c.nvlinkCrcPerSecond = d.number("nvlinkCrcPerSecond", c.nvlinkCrcPerSecond, 0, 1e12);
    c.linkErrorsPerSecond = d.number("linkErrorsPerSecond", c.linkErrorsPerSecond, 0, 1e12);
    c.pfcPausePerSecond = d.number("pfcPausePerSecond", c.pfcPausePerSecond, 0, 1e12);
    c.staleAfterSeconds = d.number("staleAfterSeconds", c.staleAfterSeconds, 1, 86400);
    c.throttledIntervals = int(d.integer("throttledIntervals", c.throttledIntervals, 0, 255));
    c.thresholdHoldDownSeconds =
        d.number("thresholdHoldDownSeconds", c.thresholdHoldDownSeconds, 0, 86400);
    if (d.has("flapping")) {
        MapReader f(d.get("flapping"), d.at("flapping"),
                    {"transitions", "windowSeconds", "quietIntervals", "intervalSeconds"});
        c.flapTransitions = int(f.integer("transitions", c.flapTransitions, 0, 1000));
        c.flapWindowSeconds = f.number("windowSeconds", c.flapWindowSeconds, 1, 86400);
        c.flapQuietIntervals = int(f.integer("quietIntervals", c.flapQuietIntervals, 1, 1000));
        c.flapIntervalSeconds = f.number("intervalSeconds", c.flapIntervalSeconds, 0.1, 3600);
    }
}

void readSimulator(const YAML::Node& n, telemetry::SimulatorConfig& c) {
    MapReader s(n, "simulator",
                {"seed", "fill", "minJobGpus", "maxJobGpus", "jobMeanMinutes", "xidPerGpuHour",
                 "eccDbePerGpuHour", "overheatPerGpuHour", "flapPerLinkHour",
                 "rtswDownPerSwitchHour", "fullFidelity"});
    c.seed = std::uint64_t(s.integer("seed", static_cast<long long>(c.seed), 0,
                                     std::numeric_limits<long long>::max()));
    c.fill = s.number("fill", c.fill, 0, 1);
    c.minJobGpus = int(s.integer("minJobGpus", c.minJobGpus, 1, 10'000'000));
    c.maxJobGpus = int(s.integer("maxJobGpus", c.maxJobGpus, 1, 10'000'000));
    c.jobMeanMinutes = s.number("jobMeanMinutes", c.jobMeanMinutes, 0.1, 1e6);
    c.xidPerGpuHour = s.number("xidPerGpuHour", c.xidPerGpuHour, 0, 10);
    c.eccDbePerGpuHour = s.number("eccDbePerGpuHour", c.eccDbePerGpuHour, 0, 10);
    c.overheatPerGpuHour = s.number("overheatPerGpuHour", c.overheatPerGpuHour, 0, 10);
    c.flapPerLinkHour = s.number("flapPerLinkHour", c.flapPerLinkHour, 0, 10);
    c.rtswDownPerSwitchHour = s.number("rtswDownPerSwitchHour", c.rtswDownPerSwitchHour, 0, 10);
    c.fullFidelity = s.boolean("fullFidelity", c.fullFidelity);
    if (c.maxJobGpus < c.minJobGpus)
        yaml::failAt("must be >= minJobGpus (" + std::to_string(c.minJobGpus) + ")",
                     s.at("maxJobGpus"),
                     s.keyLine("maxJobGpus") ? s.keyLine("maxJobGpus") : s.line());
}

void readTargets(const MapReader& t, TargetTemplates& out) {
    if (!t.has("targets")) return;
    MapReader m(t.get("targets"), t.at("targets"),
                {"dcgm", "node", "snmp", "snmpExporter", "addresses", "addressFile"});
    for (auto kind : {ExporterKind::Dcgm, ExporterKind::Node, ExporterKind::Snmp}) {
        const std::string key(exporterKindName(kind));
        std::string& tmpl = out.of(kind);
        std::string where = m.at(key);
        int line = m.keyLine(key);
        // A template, or {url: TEMPLATE, intervalMs, timeoutMs, roles} (roles: snmp only).
        if (m.has(key) && m.get(key).IsMap()) {
            MapReader k(
                m.get(key), m.at(key),
                kind == ExporterKind::Snmp
                    ? std::vector<std::string_view>{"url", "intervalMs", "timeoutMs", "roles"}
                    : std::vector<std::string_view>{"url", "intervalMs", "timeoutMs"});
            KindOptions& ko = out.optionsOf(kind);
            tmpl = k.requireString("url");
            where = k.at("url");
            line = k.keyLine("url");
            ko.interval = std::chrono::milliseconds(k.integer("intervalMs", 0, 100, 86'400'000));
            ko.timeout = std::chrono::milliseconds(k.integer("timeoutMs", 0, 10, 3'600'000));
            if (k.has("roles"))
                yaml::forEachItem(k.get("roles"), k.at("roles"), 32,
                                  [&](const YAML::Node& v, const std::string& path) {
                                      auto r = MapReader::asString(v, path);
                                      if (!inventory::parseSwitchRole(r))
                                          yaml::failAt("'" + r + "' is not a switch role", path,
                                                       yaml::lineOf(v));
                                      ko.roles.push_back(std::move(r));
                                  });
        } else {
            tmpl = m.string(key, tmpl);
        }
        if (tmpl.empty()) continue;
        if (auto ok = checkTemplate(kind, tmpl); !ok) yaml::failAt(ok.error().message, where, line);
    }
    out.snmpExporter = m.string("snmpExporter", out.snmpExporter);
    if (out.snmp.find("{exporter}") != std::string::npos && out.snmpExporter.empty())
        yaml::failAt("the snmp template uses {exporter}: set snmpExporter (host:port)",
                     m.at("snmp"), m.keyLine("snmp"));
    // {address}: listed names first, then the file's (an inline entry overrides the file).
    if (m.has("addresses")) {
        const auto node = m.get("addresses");
        const auto path = m.at("addresses");
        if (!node.IsMap())
            yaml::failAt(
                "must be a map of host or switch name to address, got " + yaml::describe(node),
                path, yaml::lineOf(node));
        for (const auto& kv : node) {
            const auto name = MapReader::asString(kv.first, path);
            const auto addr = MapReader::asString(kv.second, path + "." + name);
            const bool ok =
                !addr.empty() && addr.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789.-:") == std::string::npos;
            if (!ok)
                yaml::failAt("'" + addr + "' is not an address or host name", path + "." + name,
                             yaml::lineOf(kv.second));
            out.addresses.emplace(name, addr);
        }
    }
    if (m.has("addressFile")) {
        const auto file = m.string("addressFile");
        std::ifstream in(file, std::ios::binary);
        if (!in)
            yaml::failAt("cannot read '" + file + "'", m.at("addressFile"),
                         m.keyLine("addressFile"));
        std::string text((std::istreambuf_iterator<char>(in)), {});
        if (auto ok = readAddressFile(text, file, out.addresses); !ok)
            yaml::failAt(ok.error().path + ": " + ok.error().message, m.at("addressFile"),
                         m.keyLine("addressFile"));
    }
}

void readTelemetry(const YAML::Node& n, std::vector<ScrapeTarget>& out, TargetTemplates& targets) {
    MapReader t(n, "telemetry", {"scrape", "targets"});
    readTargets(t, targets);
    if (!t.has("scrape")) return;
    yaml::forEachItem(
        t.get("scrape"), t.at("scrape"), 100'000,
        [&](const YAML::Node& v, const std::string& path) {
            ScrapeTarget target;
            if (v.IsScalar()) {
                target.url = MapReader::asString(v, path);
            } else if (v.IsMap()) {
                MapReader m(v, path, {"url", "intervalMs", "timeoutMs"});
                target.url = m.requireString("url");
                target.interval = std::chrono::milliseconds(
                    m.integer("intervalMs", target.interval.count(), 100, 86'400'000));
                target.timeout = std::chrono::milliseconds(
                    m.integer("timeoutMs", target.timeout.count(), 10, 3'600'000));
            } else {
                yaml::failAt(
                    "must be a URL or {url, intervalMs, timeoutMs}, got " + yaml::describe(v), path,
                    yaml::lineOf(v));
            }
            if (auto ok = parseHttpUrl(target.url); !ok)
                yaml::failAt(ok.error().message, v.IsMap() ? path + ".url" : path, yaml::lineOf(v));
            out.push_back(std::move(target));
        });
}

void readAlerting(const YAML::Node& n, AlertingConfig& c) {
    MapReader a(n, "alerting",
                {"alertmanagers", "resendSeconds", "timeoutMs", "maxBackoffSeconds", "externalUrl",
                 "cluster"});
    if (a.has("alertmanagers"))
        yaml::forEachItem(a.get("alertmanagers"), a.at("alertmanagers"), 16,
                          [&](const YAML::Node& v, const std::string& path) {
                              std::string url = MapReader::asString(v, path);
                              if (auto ok = client::parseUrl(url); !ok)
                                  yaml::failAt(ok.error().message, path, yaml::lineOf(v));
                              c.alertmanagers.push_back(std::move(url));
                          });
    // Below Alertmanager's resolve_timeout (5 min by default), and the 4x validity of a firing
    // alert stays under an hour.
    c.resendInterval =
        std::chrono::seconds(a.integer("resendSeconds", c.resendInterval.count(), 1, 900));
    c.timeout = std::chrono::milliseconds(a.integer("timeoutMs", c.timeout.count(), 100, 600'000));
    c.maxBackoff =
        std::chrono::seconds(a.integer("maxBackoffSeconds", c.maxBackoff.count(), 1, 3600));
    c.externalUrl = a.string("externalUrl", c.externalUrl);
    if (!c.externalUrl.empty())
        if (auto ok = client::parseUrl(c.externalUrl); !ok)
            yaml::failAt(ok.error().message, a.at("externalUrl"), a.keyLine("externalUrl"));
    c.cluster = a.string("cluster", c.cluster);
}

void readJobs(const YAML::Node& n, SlurmSyncConfig& c) {
    MapReader j(n, "jobs", {"slurm"});
    if (!j.has("slurm") || j.get("slurm").IsNull()) return;
    MapReader s(j.get("slurm"), j.at("slurm"), {"command", "intervalSeconds", "timeoutSeconds"});
    c.command = s.requireString("command");
    if (c.command.find_first_not_of(" \t") == std::string::npos)
        yaml::failAt("must be a command like \"squeue --json -t all\", not empty", s.at("command"),
                     s.keyLine("command"));
    c.interval = std::chrono::seconds(s.integer("intervalSeconds", c.interval.count(), 1, 3600));
    c.timeout = std::chrono::seconds(s.integer("timeoutSeconds", c.timeout.count(), 1, 3600));
}

void readProvisioning(const YAML::Node& n, ExecutorSettings& out) {
    MapReader p(n, "provisioning",
                {"executor", "seed", "failRate", "miscablingRate", "delayMs", "command"});
    if (p.has("executor")) {
        out.kind = p.string("executor");
        if (out.kind != "off" && out.kind != "simulated" && out.kind != "command")
            yaml::failAt("must be off, simulated or command, not '" + out.kind + "'",
                         p.at("executor"), p.keyLine("executor"));
    }
    out.simulated.seed = std::uint64_t(p.integer("seed", static_cast<long long>(out.simulated.seed),
                                                 0, std::numeric_limits<long long>::max()));
    out.simulated.hostDiagFailRate = p.number("failRate", out.simulated.hostDiagFailRate, 0, 1);
    out.simulated.miscablingRate = p.number("miscablingRate", out.simulated.miscablingRate, 0, 1);
    if (p.has("delayMs")) {
        const std::chrono::milliseconds d(p.integer("delayMs", 0, 0, kMaxInt));
        out.simulated.physicalDelay = out.simulated.cablingDelay = out.simulated.burnInDelay = d;
    }
    if (p.has("command")) {
        MapReader c(p.get("command"), p.at("command"),
                    {"hostDiag", "rackBandwidth", "lldp", "physical", "timeoutSeconds"});
        out.command.hostDiag = c.string("hostDiag", out.command.hostDiag);
        out.command.rackBandwidth = c.string("rackBandwidth", out.command.rackBandwidth);
        out.command.lldp = c.string("lldp", out.command.lldp);
        out.command.physical = c.string("physical", out.command.physical);
        out.command.timeout = std::chrono::seconds(
            c.integer("timeoutSeconds", out.command.timeout.count(), 1, 7 * 86400));
    }
}

}  // namespace

Result<LoomdConfig> readLoomdConfig(std::string_view text) {
    LoomdConfig cfg;
    if (text.size() > kLoomdConfigMaxBytes)
        return fail(Error{Errc::TooLarge, "loomd.yaml is " + std::to_string(text.size()) +
                                              " bytes, above the limit of 1 MiB"});
    if (auto ok = checkText(text, "loomd.yaml"); !ok) return fail(ok.error());
    if (auto ok = checkYamlShape(text, {.maxNodes = 500'000, .maxDepth = 16}); !ok)
        return fail(ok.error());
    try {
        YAML::Node root = YAML::Load(std::string(text));
        if (!root.IsDefined() || root.IsNull()) return cfg;
        MapReader top(root, "",
                      {"listen", "server", "stream", "detection", "simulator", "telemetry",
                       "provisioning", "alerting", "jobs"});
        cfg.listen = top.string("listen");
        // A section written with no value ("detection:") keeps every default.
        auto section = [&](std::string_view key, auto&& read) {
            if (YAML::Node n = top.get(key); n.IsDefined() && !n.IsNull()) read(n);
        };
        section("server", [&](const YAML::Node& n) { readServer(n, cfg.server); });
        section("stream", [&](const YAML::Node& n) { readStream(n, cfg.server); });
        section("detection", [&](const YAML::Node& n) { readDetection(n, cfg.detection); });
        section("simulator", [&](const YAML::Node& n) { readSimulator(n, cfg.simulator); });
        section("telemetry",
                [&](const YAML::Node& n) { readTelemetry(n, cfg.scrape, cfg.targets); });
        section("provisioning",
                [&](const YAML::Node& n) { readProvisioning(n, cfg.provisioning); });
        section("alerting", [&](const YAML::Node& n) { readAlerting(n, cfg.alerting); });
        section("jobs", [&](const YAML::Node& n) { readJobs(n, cfg.slurm); });
    } catch (const yaml::Failure& f) {
        return fail(f.error);
    } catch (const YAML::Exception& e) {
        return fail(
            Error::invalid("malformed YAML: " + e.msg, "", e.mark.line >= 0 ? e.mark.line + 1 : 0));
    }
    return cfg;
}

Result<LoomdConfig> loadLoomdConfig(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return fail(Error::invalid("cannot read " + file.string()));
    std::string text;
    text.resize(kLoomdConfigMaxBytes + 1);
    in.read(text.data(), std::streamsize(text.size()));
    text.resize(std::size_t(in.gcount()));
    return readLoomdConfig(text);
}

}  // namespace loom::backend
