// Issue 39's reproduction with a real loomd (item 1): push an XID 79 and a NIC-side link down,
// acknowledge the XID ("INC-42 tech on the way"), `kill -9` loomd, start it again — with
// `--simulate`, then without it after a second kill — and read every view loomctl has: the open
// events (ids, acknowledgement), the GPU's and the link's health. They must equal what was there
// before the kill; the simulator's first samples and a switch-side "up" close nothing.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "loom/client/client.hpp"
#include "loom/testing/eventually.hpp"
#include "loomctl_e2e.hpp"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

class RestartKill : public LoomctlE2e {
protected:
    nlohmann::json json(const std::vector<std::string>& args) {
        auto r = loomctl(args);
        EXPECT_EQ(r.exitCode, 0) << r.err;
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        return j.is_discarded() ? nlohmann::json::object() : j;
    }
    int post(const std::string& path, const std::string& body, const std::string& type) {
        client::Client http(client::ClientConfig{url_, loomd_.token});
        auto r = http.send("POST", path, {.body = body, .contentType = type});
        return r ? r->status : 0;
    }
    // What loomctl shows of the two failures.
    std::string view() {
        std::set<std::string> lines;
        for (const auto& loc : {gpu_, link_}) {
            const auto evs = json({"events", "--open", "--location", loc, "-o", "json"});
            for (const auto& e : evs.value("items", nlohmann::json::array()))
                lines.insert(std::to_string(e.value("id", 0)) + " " + e.value("kind", "") +
                             " ack=" + e.value("ackComment", "") +
                             " origin=" + e.value("origin", "") + " ends=" + e["downEnds"].dump());
        }
        for (const auto& g : json({"get", "gpus", "--field", "health=failed", "-o", "json"})
                                 .value("items", nlohmann::json::array()))
            lines.insert("failed gpu " + g.value("name", ""));
        for (const auto& l : json({"get", "links", "--field", "health=failed", "-o", "json"})
                                 .value("items", nlohmann::json::array()))
            lines.insert("failed link " + l.value("name", ""));
        // The job on the failures: its open events as loomctl's table, describe and the API
        // count them (issue 39 item 2: one number).
        lines.insert("job llama: " + jobCounts());
        std::string out;
        for (const auto& l : lines) out += l + "\n";
        return out;
    }
    std::string jobCounts() {
        auto table = loomctl({"get", "jobs"});
        std::string column = "?";
        {
            std::istringstream in(table.out);
            std::string header, row;
            std::getline(in, header);
            const auto at = header.find("EVENTS");
            while (std::getline(in, row))
                if (row.starts_with("llama ") && at != std::string::npos && at < row.size())
                    column = row.substr(at, row.find(' ', at) - at);
        }
        const auto described = loomctl({"describe", "job", "llama"}).out;
        std::string listed = "?";
        if (auto p = described.find("Open events ("); p != std::string::npos)
            listed = described.substr(p + 13, described.find(')', p) - p - 13);
        const auto doc = json({"get", "jobs", "llama", "-o", "json"});
        const auto api = doc.contains("health") && doc["health"].is_object()
                             ? std::to_string(doc["health"].value("openEvents", -1))
                             : std::string("?");
        return "table " + column + ", describe " + listed + ", api " + api;
    }
    void restart(const std::vector<std::string>& extra) {
        const std::string hostPort = url_.substr(url_.find("//") + 2);
        loomd_.listen = hostPort.substr(0, hostPort.find('/'));
        loomd_.stop(SIGKILL);
        ASSERT_EQ(loomd_.serve(extra), "");
        ASSERT_TRUE(eventually([&] { return loomctl({"get", "racks"}).exitCode == 0; }, 60s));
    }

    const std::string host_ = "z1-r001-h1";
    const std::string gpu_ = "z1-r001-h1-gpu5";
    std::string link_;
};

TEST_F(RestartKill, FailuresAndAcknowledgementsSurviveKillNine) {
    for (int i = 0; i < 7; ++i)
        ASSERT_EQ(loomctl({"rack", "advance", "z1-r001", "--reason", "restart-test"}).exitCode, 0);
    for (const auto& l :
         json({"get", "links", "-o", "json"}).value("items", nlohmann::json::array()))
        if (l.value("name", "").find(host_ + "-nic5/") != std::string::npos) link_ = l["name"];
    ASSERT_FALSE(link_.empty());
    {
        client::Client http(client::ClientConfig{url_, loomd_.token});
        auto put =
            http.send("PUT", "/api/v1/jobs/llama",
                      {.body = "apiVersion: loom/v1\nkind: Job\nmetadata: {name: llama}\n"
                               "spec: {owner: alice, hosts: 'z1-r001-h[0-1]', state: running}\n",
                       .contentType = "application/yaml"});
        ASSERT_TRUE(put);
        ASSERT_EQ(put->status, 201) << put->body;
    }
    // node_exporter's page names the devices by hca_type (docs/cluster-spec.md, "NIC identity"):
    // dev-small's 8 backend ConnectX-7 (MT4129) and its frontend ConnectX-6 Dx (MT4125).
    std::string failing = "DCGM_FI_DEV_XID_ERRORS{gpu=\"5\",Hostname=\"" + host_ + "\"} 79\n";
    for (int d = 0; d <= 8; ++d)
        failing += "node_infiniband_info{device=\"mlx5_" + std::to_string(d) + "\",hca_type=\"" +
                   (d < 8 ? "MT4129" : "MT4125") + "\",instance=\"" + host_ + ":9100\"} 1\n";
    for (int d = 0; d <= 8; ++d)
        failing += "node_infiniband_state_id{device=\"mlx5_" + std::to_string(d) +
                   "\",port=\"1\",instance=\"" + host_ + ":9100\"} " + (d == 5 ? "1" : "4") + "\n";
    // The cables follow the rack into service before a down NIC is a failure: wait for the
    // link (a NIC reported down before then opens its event from the clock, with no origin —
    // a known gap, see issue 39's closing note), then push until both events are open.
    ASSERT_TRUE(eventually(
        [&] {
            for (const auto& l :
                 json({"get", "links", "-o", "json"}).value("items", nlohmann::json::array()))
                if (l.value("name", "") == link_) return l.value("state", "") == "active";
            return false;
        },
        30s));
    ASSERT_TRUE(eventually(
        [&] {
            EXPECT_LT(post("/api/v1/telemetry", failing, "text/plain"), 300);
            return view().find("link_down") != std::string::npos &&
                   view().find("gpu_xid") != std::string::npos;
        },
        30s))
        << view();
    const auto xid = json({"events", "--location", gpu_, "-o", "json"});
    const auto id = xid["items"][0].value("id", 0);
    ASSERT_EQ(post("/api/v1/events/" + std::to_string(id) + "/ack",
                   R"({"comment": "INC-42 tech on the way"})", "application/json"),
              200);
    // The job's views settle (the jobs view reacts within a second).
    std::string counts;
    ASSERT_TRUE(eventually(
        [&] {
            counts = jobCounts();
            for (const char* n : {"2", "3"})
                if (counts == std::string("table ") + n + ", describe " + n + ", api " + n)
                    return true;
            return false;
        },
        20s))
        << counts << " (the XID and the link_down, and job_degraded if its NIC cable costs busbw)";
    const std::string before = view();
    for (const char* want :
         {"failed gpu z1-r001-h1-gpu5", "ack=INC-42 tech on the way", "origin=push ends=[\"nic\"]"})
        EXPECT_NE(before.find(want), std::string::npos) << want << " in:\n" << before;

    // kill -9, then `serve --simulate`: the simulator's first samples (XID 0, ports up).
    restart({"--simulate"});
    std::this_thread::sleep_for(4s);
    // Closed is closed: a view that differs for good fails here. The wait is for the jobs view,
    // which counts what the hub restored a moment after the restart.
    std::string after;
    auto same = [&] { return (after = view()) == before; };
    EXPECT_TRUE(eventually(same, 15s)) << "after:\n" << after << "before:\n" << before;
    // kill -9 again, no simulator: the switch end reports up, the NIC is still down.
    restart({});
    // The link's switch end ("z1-r001-rtsw/p13"), as snmp_exporter names it.
    const auto dash = link_.find("--");
    const auto sw = link_.find("rtsw") > dash ? link_.substr(dash + 2) : link_.substr(0, dash);
    const auto swSlash = sw.rfind('/');
    // (503 until the restarted loomd's live state is loaded.)
    ASSERT_TRUE(eventually(
        [&] {
            return post("/api/v1/telemetry",
                        "ifOperStatus{instance=\"" + sw.substr(0, swSlash) + "\",ifName=\"swp" +
                            sw.substr(swSlash + 2) + "\"} 1\n",
                        "text/plain") == 200;
        },
        30s));
    std::this_thread::sleep_for(1500ms);
    EXPECT_TRUE(eventually(same, 15s)) << "after:\n" << after << "before:\n" << before;
    EXPECT_EQ(json({"events", "--location", link_, "-o", "json"})["items"].size(), 1u)
        << "the link event's history split";
}

}  // namespace
}  // namespace loom::testing
