// The real node_exporter (Debian's prometheus-node-exporter 1.5) for two hosts of the sample
// cluster, each run with --path.sysfs on a fixture tree of 8 ConnectX ports
// (class/infiniband/mlx5_N/{board_id,fw_ver,hca_type}, ports/1/{state,phys_state,rate,
// counters/*}), scraped by loomd's scraper through the node template `http://{address}:PORT/
// metrics` and telemetry.targets.addresses (each host of the cluster on its own loopback
// address, two of them with a node_exporter there): a port whose state
// file says DOWN opens link_down on that host's backend link and ACTIVE closes it; a rising
// link_downed opens link_flapping; a counter reset opens nothing. Issue 35 item 4: a host whose
// frontend ConnectX-6 Dx enumerated first (mlx5_0, hca_type MT4125) has its backend NIC 3 at
// mlx5_4, and a host showing seven ConnectX-7 for eight backend NICs is listed under
// `unknown` (nic_identity) with no event, whatever its ports say.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "beast_client.hpp"
#include "processes.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kNodeExporter = "/usr/bin/prometheus-node-exporter";

void writeFile(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
}

// One host's sysfs: its RDMA devices mlx5_0.. of the given hca_types (default: eight
// ConnectX-7), port 1 ACTIVE at 400 Gb/s, every counter 0.
class NodeExporterProcess {
public:
    NodeExporterProcess(fs::path dir, std::string address, std::uint16_t port,
                        std::vector<std::string> hcaTypes = std::vector<std::string>(8, "MT4129"))
        : dir_(std::move(dir)), address_(std::move(address)), port_(port) {
        for (std::size_t n = 0; n < hcaTypes.size(); ++n) {
            const auto dev = dir_ / "sys/class/infiniband" / ("mlx5_" + std::to_string(n));
            const bool frontend = hcaTypes[n] == "MT4125";  // a ConnectX-6 Dx
            writeFile(dev / "board_id", frontend ? "MT_0000000359" : "MT_0000000838");
            writeFile(dev / "fw_ver", frontend ? "22.39.1002" : "28.39.1002");
            writeFile(dev / "hca_type", hcaTypes[n]);
            writeFile(dev / "ports/1/state", "4: ACTIVE");
            writeFile(dev / "ports/1/phys_state", "5: LinkUp");
            writeFile(dev / "ports/1/rate",
                      frontend ? "100 Gb/sec (4X EDR)" : "400 Gb/sec (4X NDR)");
            for (const char* c : {"link_downed", "link_error_recovery", "port_rcv_errors",
                                  "port_xmit_wait", "port_rcv_data", "port_xmit_data",
                                  "port_rcv_packets", "port_xmit_packets", "symbol_error"})
                writeFile(dev / "ports/1/counters" / c, "0");
        }
    }
    bool start() {
        if (!process_.start({kNodeExporter, "--path.sysfs=" + (dir_ / "sys").string(),
                             "--collector.disable-defaults", "--collector.infiniband",
                             "--web.listen-address=" + address_ + ":" + std::to_string(port_)},
                            dir_ / "node_exporter.log"))
            return false;
        return loom::testing::eventually(
            [&] {
                net::io_context ioc;
                tcp::socket sock(ioc);
                beast::error_code ec;
                sock.connect(tcp::endpoint(net::ip::make_address(address_), port_), ec);
                return !ec;
            },
            10s);
    }
    void set(int device, const std::string& file, const std::string& text) {
        writeFile(
            dir_ / "sys/class/infiniband" / ("mlx5_" + std::to_string(device)) / "ports/1" / file,
            text);
    }

private:
    fs::path dir_;
    std::string address_;
    std::uint16_t port_;
    ChildProcess process_;
};

class NodeExporter : public ServerFixture {};

TEST_F(NodeExporter, HostNicStateAndLinkDownedOnTheBackendLinks) {
    if (!fs::exists(kNodeExporter))
        GTEST_SKIP() << kNodeExporter << " is not installed (scripts/bootstrap installs it)";
    ASSERT_TRUE(connect().exec("UPDATE racks SET state = 'in_service'"));
    // What apply stores for a Grand Teton (docs/cluster-spec.md, "NIC identity"): ConnectX-7
    // backend NICs (MT4129) and a ConnectX-6 Dx frontend NIC (MT4125); the sample cluster has
    // no frontend NICs, so each host gets one.
    ASSERT_TRUE(connect().exec("UPDATE nics SET hca_type = 'MT4129' WHERE network = 'backend'"));
    ASSERT_TRUE(connect().exec(
        "INSERT INTO nics (name, sort_key, host_id, index, network, model, speed_gbps, hca_type) "
        "SELECT name || '-fe0', name || '-fe0', id, 0, 'frontend', 'ConnectX-6-Dx', 100, 'MT4125' "
        "FROM hosts"));
    const fs::path dir =
        fs::temp_directory_path() / ("loom-node-exporter-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    // Every host of dev-small on its own loopback address, one port for all (as on a real
    // fleet: the same port on every host); z1-r001-h0 and z1-r002-h1 run node_exporter.
    const auto port = freePort();
    for (int r = 1; r <= 4; ++r)
        for (int h = 0; h < 2; ++h)
            targetTemplates_.addresses["z1-r00" + std::to_string(r) + "-h" + std::to_string(h)] =
                "127.0.0." + std::to_string(10 + 2 * r + h);
    // z1-r001-h0 as a Grand Teton may enumerate: the frontend ConnectX-6 Dx first (mlx5_0),
    // the eight ConnectX-7 after it (mlx5_1..8). z1-r003-h0 shows seven ConnectX-7 only.
    std::vector<std::string> frontendFirst = {"MT4125"};
    frontendFirst.resize(9, "MT4129");
    NodeExporterProcess h0(dir / "z1-r001-h0", targetTemplates_.addresses["z1-r001-h0"], port,
                           frontendFirst),
        h1(dir / "z1-r002-h1", targetTemplates_.addresses["z1-r002-h1"], port),
        odd(dir / "z1-r003-h0", targetTemplates_.addresses["z1-r003-h0"], port,
            std::vector<std::string>(7, "MT4129"));
    ASSERT_TRUE(h0.start()) << "node_exporter did not start";
    ASSERT_TRUE(h1.start()) << "node_exporter did not start";
    ASSERT_TRUE(odd.start()) << "node_exporter did not start";
    targetTemplates_.node = "http://{address}:" + std::to_string(port) + "/metrics";
    scrapeOptions_.interval = 200ms;
    auto& s = startServer({}, Routes::All);
    const auto viewer = tokens_["viewer"];
    auto get = [&](const std::string& target) {
        auto r = request(s.port(), "GET", target, viewer);
        EXPECT_EQ(r.status, 200) << r.body;
        return r.j();
    };
    ASSERT_TRUE(loom::testing::eventually(
        [&] { return get("/api/v1/telemetry/targets?kind=node&up=true")["total"] == 3; }, 10s))
        << get("/api/v1/telemetry/targets").dump(1);
    // The other five hosts are targets too, on their own addresses, refused (no exporter there).
    const auto all = get("/api/v1/telemetry/targets?kind=node");
    EXPECT_EQ(all["total"], 8) << all.dump(1);
    for (const auto& t : all["items"])
        if (t["entity"] == "z1-r002-h1")
            EXPECT_EQ(t["url"], "http://127.0.0.15:" + std::to_string(port) + "/metrics");
    auto open = [&](const std::string& kind) {
        std::vector<std::string> out;
        // The document is held: a range-for over get(...)["items"] would dangle.
        const auto doc = get("/api/v1/events?kind=" + kind + "&state=open");
        for (const auto& e : doc["items"]) out.push_back(e.value("location", ""));
        return out;
    };
    // The cables follow their racks into service (live sync) before detection counts them.
    ASSERT_TRUE(loom::testing::eventually(
        [&] { return !get("/api/v1/links?state=active&limit=1")["items"].empty(); }, 20s));
    std::this_thread::sleep_for(600ms);
    EXPECT_TRUE(open("link_down").empty());
    EXPECT_TRUE(open("link_flapping").empty());

    // z1-r003-h0's devices do not match its model: listed, and nothing of it believed.
    ASSERT_TRUE(loom::testing::eventually(
        [&] { return !get("/api/v1/telemetry/unknown?reason=nic_identity")["items"].empty(); },
        10s));
    const auto listed = get("/api/v1/telemetry/unknown?reason=nic_identity")["items"];
    ASSERT_EQ(listed.size(), 1u) << listed.dump(1);
    EXPECT_EQ(listed[0]["name"], "z1-r003-h0");
    EXPECT_NE(listed[0]["detail"].get<std::string>().find("the host reports 7"), std::string::npos)
        << listed[0].dump();
    odd.set(2, "state", "1: DOWN");
    // The frontend NIC of z1-r001-h0 is listed as ignored, not as unknown.
    const auto ignored = get("/api/v1/telemetry/unknown?reason=not_a_port")["items"];
    ASSERT_EQ(ignored.size(), 1u) << ignored.dump(1);
    EXPECT_EQ(ignored[0]["name"], "z1-r001-h0/mlx5_0");

    // mlx5_4 of z1-r001-h0 (its fourth ConnectX-7) goes DOWN: link_down on its backend NIC 3's
    // link, nowhere else -- and nothing from z1-r003-h0's down port.
    h0.set(4, "state", "1: DOWN");
    ASSERT_TRUE(loom::testing::eventually([&] { return open("link_down").size() == 1; }, 10s));
    const auto down = open("link_down")[0];
    EXPECT_NE(down.find("z1-r001-h0-nic3/p1"), std::string::npos) << down;
    h0.set(4, "state", "4: ACTIVE");
    ASSERT_TRUE(loom::testing::eventually([&] { return open("link_down").empty(); }, 10s));

    // link_downed of z1-r002-h1's mlx5_5 rises: link_flapping there.
    h1.set(5, "counters/link_downed", "2");
    ASSERT_TRUE(loom::testing::eventually([&] { return open("link_flapping").size() == 1; }, 10s));
    EXPECT_NE(open("link_flapping")[0].find("z1-r002-h1-nic5/p1"), std::string::npos);
    // Counters reset (the driver reloaded): no new event anywhere.
    const auto before = get("/api/v1/events?limit=100")["items"].size();
    h1.set(5, "counters/link_downed", "0");
    h1.set(2, "counters/link_downed", "0");
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(get("/api/v1/events?limit=100")["items"].size(), before);
    auto t = get("/api/v1/telemetry/targets?entity=z1-r002-h1")["items"];
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0]["up"], true);
    EXPECT_GT(t[0]["samples"].get<int>(), 16);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace loom::backend::testing
