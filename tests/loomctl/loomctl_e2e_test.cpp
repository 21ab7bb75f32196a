// End to end: loomctl against a real `loomd serve` on its embedded PostgreSQL (port 0).
#include "loomctl_e2e.hpp"
#include "loom/client/client.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include "loom/testing/eventually.hpp"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(LoomctlE2e, GetDiffAndErrorsAgainstARealServer) {
    auto racks = loomctl({"get", "racks"});
    ASSERT_EQ(racks.exitCode, 0) << racks.err;
    EXPECT_NE(racks.out.find("NAME"), std::string::npos) << racks.out;
    EXPECT_NE(racks.out.find("z1-r001"), std::string::npos) << racks.out;
    EXPECT_NE(racks.out.find("z1-s01"), std::string::npos) << racks.out;

    auto json = loomctl({"get", "gpus", "-o", "json"});
    ASSERT_EQ(json.exitCode, 0) << json.err;
    EXPECT_NE(json.out.find("z1-r004-h1-gpu7"), std::string::npos);

    // The stored inventory equals the spec: no diff (exit 0).
    auto same = loomctl({"diff", "-f", spec_});
    EXPECT_EQ(same.exitCode, 0) << same.out << same.err;

    // A missing object: the server's 404, exit 1.
    auto missing = loomctl({"get", "racks", "no-such-rack"});
    EXPECT_EQ(missing.exitCode, 1);
    EXPECT_NE(missing.err.find("no-such-rack"), std::string::npos) << missing.err;

    // A wrong token: 401 with a hint, exit 1.
    auto denied = runProcess(LOOMCTL_BIN, {"get", "racks"},
                             {{"LOOM_SERVER", url_}, {"LOOM_TOKEN", "loom_wrong"}, {"HOME", state_}});
    EXPECT_NE(denied.exitCode, 0);
}

// Jobs (issue 15): `apply -f job.yaml` creates one, `get jobs` lists it with its expected
// busbw, `describe job` shows its health; a bad document is exit 2 naming file and line.
TEST_F(LoomctlE2e, JobsAreAppliedListedWithTheirBusbwAndDescribed) {
    const auto file = state_ / "job.yaml";
    std::ofstream(file) << "apiVersion: loom/v1\nkind: Job\nmetadata: {name: llama}\nspec:\n"
                           "  owner: alice\n  hosts: z1-r[001-002]-h[0-1]\n  state: running\n";
    auto applied = loomctl({"apply", "-f", file.string()});
    ASSERT_EQ(applied.exitCode, 0) << applied.err;
    EXPECT_EQ(applied.out, "job/llama created\n");
    EXPECT_EQ(loomctl({"apply", "-f", file.string()}).out, "job/llama unchanged\n");

    // diff and --dry-run of a job, as for a cluster spec: field by field, nothing written.
    auto same = loomctl({"diff", "-f", file.string()});
    EXPECT_EQ(same.exitCode, 0) << same.out << same.err;
    EXPECT_EQ(same.out, "");
    const auto changed = state_ / "job-bob.yaml";
    std::ofstream(changed) << "apiVersion: loom/v1\nkind: Job\nmetadata: {name: llama}\nspec:\n"
                              "  owner: bob\n  hosts: z1-r001-h[0-1]\n  state: running\n";
    auto diff = loomctl({"diff", "-f", changed.string()});
    EXPECT_EQ(diff.exitCode, 1) << diff.err;
    EXPECT_EQ(diff.out,
              "~ job/llama\n    owner: \"alice\" -> \"bob\"\n"
              "    hosts: \"z1-r[001-002]-h[0-1]\" -> \"z1-r001-h[0-1]\"\n");
    auto dry = loomctl({"apply", "-f", changed.string(), "--dry-run"});
    EXPECT_EQ(dry.exitCode, 0) << dry.err;
    EXPECT_NE(dry.out.find("plan (dry run, nothing written): job/llama configured"),
              std::string::npos)
        << dry.out;
    EXPECT_NE(loomctl({"get", "jobs", "llama"}).out.find("alice"), std::string::npos)
        << "the dry run wrote nothing";
    const auto other = state_ / "job-other.yaml";
    std::ofstream(other) << "apiVersion: loom/v1\nkind: Job\nmetadata: {name: other}\nspec:\n"
                            "  owner: alice\n  hosts: z1-r003-h0\n  pattern: bogus\n";
    auto badDiff = loomctl({"diff", "-f", other.string()});
    EXPECT_EQ(badDiff.exitCode, 2);
    EXPECT_NE(badDiff.err.find("job-other.yaml:7: spec.pattern"), std::string::npos)
        << badDiff.err;

    // Racks not in service carry no traffic (their cables are planned): 0 %, and the job is
    // degraded from the start (its NIC cables carry nothing), not "ok".
    ProcessResult got;
    ASSERT_TRUE(eventually(
        [&] {
            got = loomctl({"get", "jobs"});
            return got.out.find(" 0% ") != std::string::npos;
        },
        std::chrono::seconds(10)))
        << got.out << got.err;
    EXPECT_NE(got.out.find("degraded"), std::string::npos) << got.out;
    // In service, dev-small's RTSWs have as many uplinks as NICs: the ring runs at 100 %.
    for (const char* rack : {"z1-r001", "z1-r002"})
        for (int i = 0; i < 7; ++i)
            ASSERT_EQ(loomctl({"rack", "advance", rack, "--reason", "jobs-test"}).exitCode, 0)
                << rack << " advance " << i;
    ASSERT_TRUE(eventually(
        [&] {
            got = loomctl({"get", "jobs"});
            return got.out.find("100%") != std::string::npos;
        },
        std::chrono::seconds(10)))
        << got.out << got.err;
    EXPECT_NE(got.out.find("BUSBW"), std::string::npos) << got.out;
    std::string row = got.out.substr(got.out.find("llama"));
    row = row.substr(0, row.find('\n'));
    for (const char* cell : {"alice", "32", "allreduce", "running", "100%", "ok"})
        EXPECT_NE(row.find(cell), std::string::npos) << cell << " in: " << row;

    auto described = loomctl({"describe", "job", "llama"});
    ASSERT_EQ(described.exitCode, 0) << described.err;
    for (const char* part : {"Nodelist:", "z1-r[001-002]-h[0-1]",
                             "Health:            ok: busbw 100% of the NIC rate\n",
                             "  GPUs:            32: 32 ok, 0 warning, 0 failed, 0 quarantined\n",
                             "  Links down (0): <none>\n", "  Open events (0): <none>\n"})
        EXPECT_NE(described.out.find(part), std::string::npos) << part << " in:\n" << described.out;
    EXPECT_EQ(described.out.find("z1-r001-h0\n"), std::string::npos) << "hosts listed one by one";
    EXPECT_NE(described.out.find("Straggler: <none>\nStragglers: <none>\nSuspects: <none>\n"),
              std::string::npos)
        << described.out;
    EXPECT_NE(described.out.find("Lemons: <none>\n"), std::string::npos) << described.out;

    // One GPU of the job throttles (dcgm-exporter text pushed as an exporter would): within a
    // few of loomd's 1 Hz ticks the straggler finder names it, with the evidence.
    client::Client http(client::ClientConfig{url_, loomd_.token});
    auto push = [&](bool throttled) {
        std::string text;
        for (int rack = 1; rack <= 2; ++rack)
            for (int h = 0; h < 2; ++h)
                for (int g = 0; g < 8; ++g) {
                    const std::string l = "{gpu=\"" + std::to_string(g) + "\",Hostname=\"z1-r00" +
                                          std::to_string(rack) + "-h" + std::to_string(h) + "\"} ";
                    const bool hot = throttled && rack == 2 && h == 1 && g == 5;
                    text += "DCGM_FI_DEV_SM_CLOCK" + l + (hot ? "1140" : "1980") + "\n";
                    text += "DCGM_FI_DEV_GPU_TEMP" + l + (hot ? "90" : std::to_string(70 + g % 3)) +
                            "\n";
                    text += "DCGM_FI_DEV_POWER_USAGE" + l + (hot ? "480" : "690") + "\n";
                    // dcgm-exporter's clock event reasons: hw_thermal (0x40) on the hot GPU
                    text += "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" + l + (hot ? "64" : "0") + "\n";
                }
        auto r = http.send("POST", "/api/v1/telemetry", {.body = text, .contentType = "text/plain"});
        ASSERT_TRUE(r) << r.error().toString();
        ASSERT_LT(r->status, 300) << r->body;
    };
    ASSERT_TRUE(eventually(
        [&] {
            push(true);
            described = loomctl({"describe", "job", "llama"});
            return described.out.find("Suspects:\n  1. z1-r002-h1-gpu5 (thermal_throttle, score ") !=
                       std::string::npos &&
                   described.out.find("Stragglers:\n  1. z1-r002-h1-gpu5 (thermal_throttle, score ") !=
                       std::string::npos &&
                   described.out.find("Straggler: z1-r002-h1-gpu5 (thermal_throttle, since ") !=
                       std::string::npos;
        },
        // The finder ranks a job 30 s after it first sees it (its warm-up, issue 34 item 2).
        std::chrono::seconds(50), std::chrono::milliseconds(300)))
        << described.out;
    EXPECT_NE(described.out.find("     z1-r002-h1-gpu5: clocks held back (hw_thermal), SM clock "
                                 "1,140 MHz vs job median 1,980, 90 °C; the other 31 ranks wait\n"),
              std::string::npos)
        << described.out;

    // The straggler event struck the GPU and its host once (issue 34 item 6): one job, no lemon.
    std::string host;
    ASSERT_TRUE(eventually(
        [&] {
            host = loomctl({"describe", "host", "z1-r002-h1"}).out;
            return host.find("  z1-r002-h1: 1 job: llama (thermal_throttle)\n") != std::string::npos;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(300)))
        << host;
    EXPECT_NE(host.find("Lemon: no (a lemon: the suspect or a failure in 3 jobs within 7 days)\n"),
              std::string::npos)
        << host;
    EXPECT_NE(host.find("  z1-r002-h1-gpu5: 1 job: llama (thermal_throttle)\n"), std::string::npos)
        << host;

    // Placement: both racks in service are in the job: nothing is free (exit 1, says why).
    auto full = loomctl({"jobs", "place", "--gpus", "16"});
    EXPECT_EQ(full.exitCode, 1) << full.out;
    EXPECT_NE(full.err.find("only 0 GPUs"), std::string::npos) << full.err;
    EXPECT_EQ(loomctl({"jobs", "place", "--gpus", "0"}).exitCode, 2);

    std::ofstream(file) << "apiVersion: loom/v1\nkind: Job\nmetadata: {name: llama}\nspec:\n"
                           "  hosts: z1-r[001-002\n";
    auto bad = loomctl({"apply", "-f", file.string()});
    EXPECT_EQ(bad.exitCode, 2);
    EXPECT_NE(bad.err.find("job.yaml:5: spec.hosts"), std::string::npos) << bad.err;
}

// Ports and links have '/' in their names ("z1-r001-rtsw/p1"): loomctl sends it as %2F and
// loomd splits the path before decoding, so get and describe find them by name (issue 12).
TEST_F(LoomctlE2e, PortsAndLinksAreFetchedByTheirNames) {
    auto links = loomctl({"get", "links", "-o", "json", "--limit", "3"});
    ASSERT_EQ(links.exitCode, 0) << links.err;
    auto items = nlohmann::json::parse(links.out)["items"];
    ASSERT_FALSE(items.empty()) << links.out;
    const std::string link = items[0]["name"];
    ASSERT_NE(link.find('/'), std::string::npos) << link;

    auto described = loomctl({"describe", "link", link});
    ASSERT_EQ(described.exitCode, 0) << described.err;
    EXPECT_NE(described.out.find(link), std::string::npos) << described.out;

    const std::string port = link.substr(0, link.find("--"));
    auto got = loomctl({"get", "ports", port, "-o", "json"});
    ASSERT_EQ(got.exitCode, 0) << got.err;
    EXPECT_EQ(nlohmann::json::parse(got.out)["name"], port) << got.out;

    // -o jsonpath and --sort-by: ports in natural order (p2 before p10), kubectl's template.
    auto ports = loomctl({"get", "ports", "--field", "device=z1-r001-rtsw", "--sort-by", ".name", "-o",
                          "jsonpath={range .items[*]}{.name}{\"\\n\"}{end}"});
    ASSERT_EQ(ports.exitCode, 0) << ports.err;
    const auto p2 = ports.out.find("z1-r001-rtsw/p2\n"), p10 = ports.out.find("z1-r001-rtsw/p10\n");
    ASSERT_NE(p2, std::string::npos) << ports.out;
    ASSERT_NE(p10, std::string::npos) << ports.out;
    EXPECT_LT(p2, p10) << ports.out;
    // The server's own order is the same natural order (0021's sort key).
    auto unsorted = loomctl({"get", "ports", "--field", "device=z1-r001-rtsw", "-o",
                             "jsonpath={range .items[*]}{.name}{\"\\n\"}{end}"});
    ASSERT_EQ(unsorted.exitCode, 0) << unsorted.err;
    EXPECT_EQ(unsorted.out, ports.out);
    auto one = loomctl({"describe", "link", link, "-o", "jsonpath={.name}"});
    ASSERT_EQ(one.exitCode, 0) << one.err;
    EXPECT_EQ(one.out, link + "\n");
    EXPECT_EQ(loomctl({"get", "racks", "-o", "jsonpath={.items[?(@.x)]}"}).exitCode, 2);

    // A '/' sent as it is splits the name: a 404 that says how to send it.
    auto raw = runProcess("/usr/bin/curl", {"-s", "-H", "Authorization: Bearer " + loomd_.token,
                                            url_ + "/api/v1/ports/" + port});
    EXPECT_NE(raw.out.find("%2F"), std::string::npos) << raw.out;
}

// describe shows where cables go (issue 12 item 1): a switch's peers by device, a host's trace
// NIC -> RTSW -> CTSW -> ATSW. The expected peers are read from the link list, not written here.
TEST_F(LoomctlE2e, DescribeShowsPeersAndTheTraceUpTheFabric) {
    auto links = loomctl({"get", "links", "--field", "switch=z1-r001-rtsw", "-o", "json"});
    ASSERT_EQ(links.exitCode, 0) << links.err;
    std::set<std::string> peers;
    const auto list = nlohmann::json::parse(links.out);
    for (auto& l : list["items"]) {
        for (const char* end : {"aPort", "bPort"}) {
            std::string port = l[end];
            auto device = port.substr(0, port.find('/'));
            if (device != "z1-r001-rtsw") peers.insert(device);
        }
    }
    ASSERT_GE(peers.size(), 3u) << links.out;

    auto sw = loomctl({"describe", "switch", "z1-r001-rtsw"});
    ASSERT_EQ(sw.exitCode, 0) << sw.err;
    const auto at = sw.out.find("Peers:");
    ASSERT_NE(at, std::string::npos) << sw.out;
    for (const auto& p : peers) EXPECT_NE(sw.out.find(p, at), std::string::npos) << p << "\n" << sw.out;
    EXPECT_NE(sw.out.find("ctsw", at), std::string::npos) << "the peers' roles: " << sw.out;

    auto host = loomctl({"describe", "host", "z1-r001-h0"});
    ASSERT_EQ(host.exitCode, 0) << host.err;
    const auto trace = host.out.find("Trace:");
    ASSERT_NE(trace, std::string::npos) << host.out;
    EXPECT_NE(host.out.find("z1-r001-rtsw/p", trace), std::string::npos) << host.out;
    EXPECT_NE(host.out.find("z1-r001-rtsw (rtsw) ⇒", trace), std::string::npos) << host.out;
    EXPECT_NE(host.out.find("ctsw: z1-ctsw01", trace), std::string::npos) << host.out;
    EXPECT_NE(host.out.find("(ctsw) ⇒", trace), std::string::npos) << "the CTSW tier goes on to the ATSWs: "
                                                                    << host.out;
    EXPECT_NE(host.out.find("atsw", trace), std::string::npos) << host.out;

    // A port shows its peer; a relation filter through loomctl --field.
    auto port = loomctl({"get", "ports", "--field", "peer=z1-r001-rtsw", "-o", "json"});
    ASSERT_EQ(port.exitCode, 0) << port.err;
    EXPECT_FALSE(nlohmann::json::parse(port.out)["items"].empty()) << port.out;
    auto bad = loomctl({"get", "gpus", "--field", "rack__empty=true"});
    EXPECT_EQ(bad.exitCode, 2) << bad.out << bad.err;
}

// `events --follow -o json` across a loomd restart: every transition exactly once, whether it
// happened before the restart (live), while loomctl was reconnecting (refetched), or after
// (live again); loomctl does not exit when loomd goes away (issue 12 item 5).
TEST_F(LoomctlE2e, EventsFollowSurvivesALoomdRestartAndPrintsEachEventOnce) {
    const fs::path outFile = state_ / "follow.out", errFile = state_ / "follow.err";
    pid_t follower = spawnLoomctl({"events", "--follow", "-o", "json", "--kind", "rack_transition",
                                   "--for", "120s"},
                                  outFile, errFile);
    ASSERT_GT(follower, 0);
    auto output = [&] { return readFile(outFile); };
    auto count = [](const std::string& text, const std::string& what) {
        std::size_t n = 0;
        for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
        return n;
    };
    auto advance = [&](const std::string& rack) {
        auto r = loomctl({"rack", "advance", rack, "--reason", "follow-test"});
        return r.exitCode == 0 ? std::string() : r.err;
    };
    // Live: the follower may still be connecting, so keep advancing racks until one shows.
    ASSERT_EQ(advance("z1-r001"), "");
    ASSERT_TRUE(eventually([&] { return count(output(), "z1-r001: planned -> delivered") == 1; },
                           std::chrono::seconds(30)))
        << output();

    // Restart loomd on the same port; advance z1-r002 as soon as it is back (the follower is
    // still backing off, so it must refetch it), then z1-r003 once the follower is back.
    const std::string hostPort = url_.substr(url_.find("//") + 2);
    loomd_.listen = hostPort.substr(0, hostPort.find('/'));
    loomd_.stop(SIGTERM);
    ASSERT_EQ(loomd_.serve(), "");
    ASSERT_EQ(loomd_.url, url_);
    ASSERT_EQ(advance("z1-r002"), "");
    ASSERT_TRUE(eventually([&] { return count(output(), "z1-r002: planned -> delivered") >= 1; },
                           std::chrono::seconds(30)))
        << output();
    ASSERT_EQ(advance("z1-r003"), "");
    ASSERT_TRUE(eventually([&] { return count(output(), "z1-r003: planned -> delivered") >= 1; },
                           std::chrono::seconds(30)))
        << output();
    std::this_thread::sleep_for(std::chrono::seconds(2));  // a late duplicate would show by now
    ::kill(follower, SIGINT);
    int status = 0;
    ::waitpid(follower, &status, 0);

    const std::string text = output();
    for (const char* rack : {"z1-r001", "z1-r002", "z1-r003"})
        EXPECT_EQ(count(text, std::string(rack) + ": planned -> delivered"), 1u) << rack << "\n" << text;
    std::size_t lines = 0;
    for (std::size_t at = 0, next; at < text.size(); at = next + 1) {
        next = text.find('\n', at);
        if (next == std::string::npos) next = text.size();
        if (next == at) continue;
        auto e = nlohmann::json::parse(text.substr(at, next - at), nullptr, false);
        ASSERT_TRUE(e.is_object()) << text.substr(at, next - at);
        EXPECT_EQ(e.value("kind", ""), "rack_transition");
        ++lines;
    }
    EXPECT_EQ(lines, 3u) << text;
    std::ifstream err(errFile);
    EXPECT_NE(std::string(std::istreambuf_iterator<char>(err), {}).find("reconnecting"),
              std::string::npos);
}

// `get racks --watch`: the list, then a row in the same columns when a rack changes (issue 12
// item 3).
TEST_F(LoomctlE2e, GetWatchPrintsARowWhenARackChanges) {
    const fs::path outFile = state_ / "watch.out", errFile = state_ / "watch.err";
    pid_t watcher = spawnLoomctl({"get", "racks", "--watch"}, outFile, errFile);
    ASSERT_GT(watcher, 0);
    auto count = [](const std::string& text, const std::string& what) {
        std::size_t n = 0;
        for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
        return n;
    };
    ASSERT_TRUE(eventually([&] { return count(readFile(outFile), "z1-r004 ") == 1; }, std::chrono::seconds(30)))
        << readFile(outFile) << readFile(errFile);
    // The watcher subscribes after the list: advance until its row shows (a transition made
    // before the subscription is live would not be seen; then the next one is).
    bool seen = false;
    for (const char* step : {"advance", "advance", "advance"}) {
        ASSERT_EQ(loomctl({"rack", step, "z1-r004", "--reason", "watch-test"}).exitCode, 0);
        if (eventually([&] { return count(readFile(outFile), "z1-r004 ") >= 2; }, std::chrono::seconds(5))) {
            seen = true;
            break;
        }
    }
    ::kill(watcher, SIGINT);
    int status = 0;
    ::waitpid(watcher, &status, 0);
    const std::string text = readFile(outFile);
    ASSERT_TRUE(seen) << text << readFile(errFile);
    const std::string header = text.substr(0, text.find('\n'));
    const auto last = text.rfind("z1-r004 ");
    const std::string row = text.substr(last, text.find('\n', last) - last);
    EXPECT_EQ(row.find("delivered"), header.find("STATE")) << header << "\n" << row;
    EXPECT_EQ(count(text, "z1-r001 "), 1u) << "an unchanged rack is printed once:\n" << text;
}

// Labels set by hand survive an apply of the unchanged spec; a label the spec sets is the
// spec's (a hand change is refused, naming it); kubectl's --overwrite and key- (issue 12 item 2).
TEST_F(LoomctlE2e, TokenCreateWithoutANameAsTheReadmeShows) {
    auto made = runProcess(LOOMD_BIN, {"token", "create", "--role", "operator", "--state-dir", state_.string()});
    ASSERT_EQ(made.exitCode, 0) << made.err;
    EXPECT_EQ(made.out.rfind("loom_", 0), 0u) << made.out;
    EXPECT_NE(made.err.find("token 'operator-"), std::string::npos) << made.err;
    auto list = runProcess(LOOMD_BIN, {"token", "list", "--state-dir", state_.string()});
    ASSERT_EQ(list.exitCode, 0) << list.err;
    EXPECT_NE(list.out.find("operator-20"), std::string::npos) << list.out;
    auto me = loomctl({"get", "racks", "z1-r001", "--token", made.out.substr(0, made.out.find('\n'))});
    EXPECT_EQ(me.exitCode, 0) << me.err;
}

TEST_F(LoomctlE2e, EventsHistoryAckAndClose) {
    auto adv = loomctl({"rack", "advance", "z1-r002", "--reason", "on the dock"});
    ASSERT_EQ(adv.exitCode, 0) << adv.err;
    auto list = loomctl({"events", "--kind", "rack_transition", "-o", "json"});
    ASSERT_EQ(list.exitCode, 0) << list.err;
    auto doc = nlohmann::json::parse(list.out, nullptr, false);
    ASSERT_TRUE(doc.is_object() && doc["items"].size() == 1) << list.out;
    const auto& e = doc["items"][0];
    EXPECT_EQ(e.value("location", ""), "z1-r002");
    EXPECT_EQ(e.value("source", ""), "provisioning");
    EXPECT_EQ(e.value("message", ""), "z1-r002: planned -> delivered (on the dock)");
    const std::string id = std::to_string(e.value("id", 0));
    // The table shows it with its id.
    auto table = loomctl({"events"});
    ASSERT_EQ(table.exitCode, 0) << table.err;
    EXPECT_NE(table.out.find("ID"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("rack_transition"), std::string::npos) << table.out;

    auto ack = loomctl({"events", "ack", id, "--comment", "seen", "-o", "json"});
    ASSERT_EQ(ack.exitCode, 0) << ack.err;
    auto acked = nlohmann::json::parse(ack.out, nullptr, false);
    EXPECT_EQ(acked.value("acknowledgedBy", ""), "loomctl-e2e") << ack.out;
    EXPECT_EQ(acked.value("ackComment", ""), "seen");
    auto line = loomctl({"events", "ack", id});
    EXPECT_EQ(line.exitCode, 0) << line.err;
    EXPECT_NE(line.out.find("event/" + id + " acknowledged"), std::string::npos) << line.out;
    // A transition event is closed from the start: closing it is a conflict (exit 1).
    auto close = loomctl({"events", "close", id, "--reason", "x"});
    EXPECT_EQ(close.exitCode, 1) << close.out;
    EXPECT_NE(close.err.find("already closed"), std::string::npos) << close.err;
    // Bad input: exit 2 naming the problem.
    auto bad = loomctl({"events", "ack", "abc"});
    EXPECT_EQ(bad.exitCode, 2);
    auto kind = loomctl({"events", "--kind", "bogus"});
    EXPECT_EQ(kind.exitCode, 2);
    EXPECT_NE(kind.err.find("gpu_xid"), std::string::npos) << kind.err;
    auto none = loomctl({"events", "close", "987654321"});
    EXPECT_EQ(none.exitCode, 1);
    EXPECT_NE(none.err.find("not found"), std::string::npos) << none.err;
}

// A GPU's firmware (issue 10): a field added with one line in inventory/kinds.hpp and its
// migration (0023), nothing else. PATCH sets it, GET and the list's filter return it, `loomctl
// get gpus -o wide` shows it (the narrow table does not), an apply that updates the GPU's spec
// fields keeps it, and a kind without the field refuses it.
}  // namespace
}  // namespace loom::testing
