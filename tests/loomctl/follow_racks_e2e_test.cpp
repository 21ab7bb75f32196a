// Issue 35: hosts and switches follow their rack's lifecycle state (docs/api.md, "Hosts and
// switches follow their racks"), as a user reads it from a real `loomd serve`: discovery's
// `state` label (GET /api/v1/sd/prometheus), GET /api/v1/switches and /hosts, loomctl's tables,
// `loomctl get switches --watch` (the stream) — and a restarted loomd says the same, routes and
// fabric topology included. A switch outside racks (CTSW, ATSW, fcsw) serves its zone: in
// service while a rack of its zone is. The fabric reads a switch's state as its rack's cables
// (GET /fabric/topology's `state`: a failed rack's RTSW is down, a drained one's drained, the
// zone's switches not in service once its last rack left service).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "loom/client/client.hpp"
#include "loom/testing/eventually.hpp"
#include "loomctl_e2e.hpp"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class FollowRacks : public LoomctlE2e {
protected:
    // loomd again, with exporter templates (discovery): the hosts do not exist, so each target
    // is tried once an hour at most.
    void serveWithTargets(int sig = SIGTERM) {
        const auto cfg = state_ / "loomd.yaml";
        std::ofstream(cfg)
            << "telemetry:\n  targets:\n"
               "    dcgm: {url: \"http://{host}:9400/metrics\", intervalMs: 3600000}\n"
               "    snmp: {url: \"http://{exporter}/snmp?target={switch}&module=if_mib\","
               " intervalMs: 3600000}\n"
               "    snmpExporter: \"127.0.0.1:9\"\n";
        const std::string hostPort = url_.substr(url_.find("//") + 2);
        loomd_.listen = hostPort.substr(0, hostPort.find('/'));
        loomd_.stop(sig);
        ASSERT_EQ(loomd_.serve({"--config", cfg.string()}), "");
        ASSERT_TRUE(eventually([&] { return loomctl({"get", "racks"}).exitCode == 0; }, 60s));
    }
    json get(const std::string& path) {
        client::Client http(client::ClientConfig{url_, loomd_.token});
        auto r = http.getJson(path);
        EXPECT_TRUE(r) << path << ": " << (r ? "" : r.error().toString());
        return r ? *r : json::object();
    }
    // name -> the `state` label of each discovered target of `exporter`.
    std::map<std::string, std::string> discovered(const std::string& exporter) {
        std::map<std::string, std::string> out;
        for (const auto& g : get("/api/v1/sd/prometheus?exporter=" + exporter)) {
            const auto& l = g["labels"];
            out[l.value("host", l.value("switch", std::string("?")))] = l.value("state", "");
        }
        return out;
    }
    // The STATE column of loomctl's table for `name`.
    std::string tableState(const std::string& kind, const std::string& name) {
        auto r = loomctl({"get", kind, name});
        std::istringstream in(r.out);
        std::string header, row;
        std::getline(in, header);
        std::getline(in, row);
        const auto at = header.find("STATE");
        if (at == std::string::npos || at >= row.size()) return "?";
        return row.substr(at, row.find(' ', at) - at);
    }
    // What a user can see of `names`' states, every view side by side.
    json views(const std::vector<std::string>& switches, const std::vector<std::string>& hosts) {
        json v;
        const auto snmp = discovered("snmp"), dcgm = discovered("dcgm");
        // The RTSW's uplinks in service, from the fabric's bundles (not a temporary: borrowed),
        // and each switch's word in the fabric ("up" exactly when `up`).
        std::map<std::string, int> up;
        std::map<std::string, std::string> fabric;
        const auto topology = get("/api/v1/fabric/topology");
        for (const auto& b : topology["bundles"]) up[b.value("a", "")] += b.value("up", 0);
        for (const auto& x : topology["switches"])
            fabric[x.value("name", "")] = x.value("up", false) == (x.value("state", "") == "up")
                                              ? x.value("state", "")
                                              : "(up contradicts state)";
        for (const auto& s : switches) {
            v[s] = {{"api", get("/api/v1/switches/" + s).value("state", "")},
                    {"loomctl", tableState("switches", s)},
                    {"sd", snmp.contains(s) ? snmp.at(s) : "(not listed)"},
                    {"uplinksUp", up.contains(s) ? json(up[s]) : json("-")},
                    {"fabric", fabric.contains(s) ? fabric[s] : "-"}};
        }
        for (const auto& h : hosts)
            v[h] = {{"api", get("/api/v1/hosts/" + h).value("state", "")},
                    {"loomctl", tableState("hosts", h)},
                    {"sd", dcgm.contains(h) ? dcgm.at(h) : "(not listed)"}};
        return v;
    }
    static json say(const std::string& state, const std::string& sd, json uplinksUp,
                    const std::string& fabric) {
        return {{"api", state},
                {"loomctl", state},
                {"sd", sd},
                {"uplinksUp", uplinksUp},
                {"fabric", fabric}};
    }
    static json sayHost(const std::string& state, const std::string& sd) {
        return {{"api", state}, {"loomctl", state}, {"sd", sd}};
    }
};

TEST_F(FollowRacks, EveryViewSaysTheRacksStateAndARestartChangesNothing) {
    serveWithTargets();
    const auto watchOut = state_ / "watch.out", watchErr = state_ / "watch.err";
    const pid_t watch =
        spawnLoomctl({"get", "switches", "--watch", "-o", "json"}, watchOut, watchErr);
    const std::vector<std::string> switches{"z1-r001-rtsw", "z1-r001-fsw", "z1-r002-rtsw",
                                            "z1-ctsw01", "atsw01"};
    const std::vector<std::string> hosts{"z1-r001-h0", "z1-r002-h1"};
    for (const char* rack : {"z1-r001", "z1-r002"})
        for (int i = 0; i < 7; ++i)
            ASSERT_EQ(loomctl({"rack", "advance", rack, "--reason", "follow"}).exitCode, 0) << rack;
    json want;
    want["z1-r001-rtsw"] = say("in_service", "in_service", 16, "up");
    // Frontend: not in the backend fabric.
    want["z1-r001-fsw"] = say("in_service", "in_service", "-", "-");
    want["z1-r002-rtsw"] = say("in_service", "in_service", 16, "up");
    // Outside racks: its zone has racks in service.
    want["z1-ctsw01"] = say("in_service", "in_service", 4, "up");
    want["atsw01"] = say("in_service", "in_service", "-", "up");
    want["z1-r001-h0"] = sayHost("in_service", "in_service");
    want["z1-r002-h1"] = sayHost("in_service", "in_service");
    json seen;
    EXPECT_TRUE(eventually([&] { return (seen = views(switches, hosts)) == want; }, 10s))
        << "seen: " << seen.dump(1) << "\nwant: " << want.dump(1);

    // A failed rack's switch is failed, its cables down; the zone still has z1-r002.
    ASSERT_EQ(loomctl({"rack", "fail", "z1-r001", "--reason", "PDU lost"}).exitCode, 0);
    want["z1-r001-rtsw"] = say("failed", "failed", 0, "down");
    want["z1-r001-fsw"]["api"] = want["z1-r001-fsw"]["loomctl"] = want["z1-r001-fsw"]["sd"] =
        "failed";
    want["z1-r001-h0"] = sayHost("planned", "failed");  // a host of a failed rack is planned;
                                                        // discovery labels it with its rack's
    EXPECT_TRUE(eventually([&] { return (seen = views(switches, hosts)) == want; }, 10s))
        << "seen: " << seen.dump(1) << "\nwant: " << want.dump(1);
    // Drained: the zone's switches leave service with its last rack.
    ASSERT_EQ(loomctl({"rack", "drain", "z1-r002", "--reason", "follow"}).exitCode, 0);
    ASSERT_EQ(loomctl({"rack", "advance", "z1-r002", "--reason", "follow"}).exitCode, 0);
    want["z1-r002-rtsw"] = say("drained", "(not listed)", 0, "drained");
    want["z1-ctsw01"] = say("planned", "planned", 0, "not in service");
    want["atsw01"] = say("planned", "planned", "-", "not in service");
    want["z1-r002-h1"] = sayHost("ready", "(not listed)");
    EXPECT_TRUE(eventually([&] { return (seen = views(switches, hosts)) == want; }, 10s))
        << "seen: " << seen.dump(1) << "\nwant: " << want.dump(1);

    // The stream: `get switches --watch` printed each switch's new state as it moved.
    ::kill(watch, SIGTERM);
    ::waitpid(watch, nullptr, 0);
    std::map<std::string, std::vector<std::string>> printed;
    {
        std::istringstream in(readFile(watchOut));
        for (std::string line; std::getline(in, line);) {
            auto j = json::parse(line, nullptr, false);
            if (j.is_object()) printed[j.value("name", "")].push_back(j.value("state", ""));
        }
    }
    EXPECT_EQ(printed["z1-r001-rtsw"].front(), "planned") << readFile(watchErr);
    EXPECT_EQ(printed["z1-r001-rtsw"].back(), "failed") << readFile(watchErr);
    EXPECT_NE(
        std::find(printed["z1-r001-rtsw"].begin(), printed["z1-r001-rtsw"].end(), "in_service"),
        printed["z1-r001-rtsw"].end());
    EXPECT_EQ(printed["z1-ctsw01"].back(), "planned");
    EXPECT_EQ(printed["z1-r002-rtsw"].back(), "drained");

    // A restart shows the same, and the fabric's routes are the same.
    const auto routes = get("/api/v1/fabric/routes/z1-ctsw01");
    const auto topology = get("/api/v1/fabric/topology");
    serveWithTargets();
    EXPECT_TRUE(eventually([&] { return (seen = views(switches, hosts)) == want; }, 10s))
        << "after the restart: " << seen.dump(1) << "\nwant: " << want.dump(1);
    EXPECT_EQ(get("/api/v1/fabric/routes/z1-ctsw01"), routes);
    EXPECT_EQ(get("/api/v1/fabric/topology"), topology);
}

}  // namespace
}  // namespace loom::testing
