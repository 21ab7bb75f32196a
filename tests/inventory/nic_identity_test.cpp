// NIC identity (issue 35 item 4): a host's RDMA devices told apart by their hca_type and PCI
// address as the host model declares them, never by enumeration order alone; a host whose
// devices do not match its model is reported, not guessed.
#include "loom/inventory/nic_identity.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "loom/inventory/spec.hpp"

namespace loom::inventory {
namespace {

// A Grand Teton: eight ConnectX-7 backend NICs, one ConnectX-6 Dx frontend NIC.
HostNicIdentity grandTeton(std::vector<std::string> pci = {}, std::string fePci = {}) {
    HostNicIdentity id;
    for (int i = 0; i < 8; ++i)
        id.backend.push_back({"MT4129", pci.empty() ? std::string() : pci[std::size_t(i)]});
    id.frontend.push_back({"MT4125", fePci});
    return id;
}

// "mlx5_3=b2" (backend rail 2), "mlx5_0=fe", "mlx5_9=?" per device, in input order.
std::string show(const std::vector<RdmaDevice>& devs, const NicResolution& r) {
    std::string out;
    for (std::size_t i = 0; i < devs.size(); ++i) {
        const auto& d = r.devices[i];
        out += (i ? " " : "") + std::string(devs[i].name) + "=" +
               (d.kind == DeviceRole::Backend    ? "b" + std::to_string(d.rail)
                : d.kind == DeviceRole::Frontend ? std::string("fe")
                                                 : std::string("?"));
    }
    return out;
}

TEST(NicIdentity, TheModelNamesTheHcaType) {
    EXPECT_EQ(hcaTypeOfNicModel("ConnectX-7"), "MT4129");
    EXPECT_EQ(hcaTypeOfNicModel("ConnectX-6-Dx"), "MT4125");
    EXPECT_EQ(hcaTypeOfNicModel("connectx-6 dx"), "MT4125");
    EXPECT_EQ(hcaTypeOfNicModel("BlueField-3"), "MT41692");
    EXPECT_EQ(hcaTypeOfNicModel("Thor2"), "");
}

TEST(NicIdentity, PciAddressesFromRdmaCoreNames) {
    EXPECT_EQ(pciOfRdmaDevice("ibp24s0"), "0000:18:00.0");
    EXPECT_EQ(pciOfRdmaDevice("rocep152s0f1"), "0000:98:00.1");
    EXPECT_EQ(pciOfRdmaDevice("ibP1p2s0f0"), "0001:02:00.0");
    EXPECT_EQ(pciOfRdmaDevice("ibp0s12f4"), "0000:00:0c.4");  // rdma_rename's own example
    EXPECT_EQ(pciOfRdmaDevice("mlx5_3"), "");
    EXPECT_EQ(pciOfRdmaDevice("ibs3"), "");           // a hot-plug slot number: no address
    EXPECT_EQ(pciOfRdmaDevice("rocep24s0f0v1"), "");  // a virtual function
    EXPECT_EQ(pciOfRdmaDevice("ibp999s0"), "");       // no such bus
    EXPECT_EQ(pciOfRdmaDevice("ibp24s0x"), "");
    EXPECT_EQ(*canonicalPci("18:00.0"), "0000:18:00.0");
    EXPECT_EQ(*canonicalPci("0000:9A:00.1"), "0000:9a:00.1");
    EXPECT_FALSE(canonicalPci("18:00"));
    EXPECT_FALSE(canonicalPci("0000:18:40.0"));  // slot above 31
    EXPECT_FALSE(canonicalPci("mlx5_0"));
}

// The defect: the frontend ConnectX enumerated first and shifted every backend NIC by one.
TEST(NicIdentity, AFrontendNicEnumeratedFirstShiftsNothing) {
    std::vector<RdmaDevice> devs = {{"mlx5_0", "MT4125"}};
    for (int i = 1; i <= 8; ++i) devs.push_back({"", "MT4129"});
    std::vector<std::string> names;
    for (int i = 1; i <= 8; ++i) names.push_back("mlx5_" + std::to_string(i));
    for (int i = 1; i <= 8; ++i) devs[std::size_t(i)].name = names[std::size_t(i - 1)];
    auto r = resolveNicDevices(grandTeton(), devs);
    EXPECT_EQ(r.hostProblem, "");
    EXPECT_EQ(show(devs, r),
              "mlx5_0=fe mlx5_1=b0 mlx5_2=b1 mlx5_3=b2 mlx5_4=b3 mlx5_5=b4 mlx5_6=b5 mlx5_7=b6 "
              "mlx5_8=b7");
    // Last, or in the middle: the same backend order, by device number (mlx5_10 after mlx5_9).
    devs = {{"mlx5_0", "MT4129"}, {"mlx5_1", "MT4129"}, {"mlx5_10", "MT4129"},
            {"mlx5_2", "MT4125"}, {"mlx5_3", "MT4129"}, {"mlx5_4", "MT4129"},
            {"mlx5_5", "MT4129"}, {"mlx5_6", "MT4129"}, {"mlx5_9", "MT4129"}};
    r = resolveNicDevices(grandTeton(), devs);
    EXPECT_EQ(show(devs, r),
              "mlx5_0=b0 mlx5_1=b1 mlx5_10=b7 mlx5_2=fe mlx5_3=b2 mlx5_4=b3 mlx5_5=b4 mlx5_6=b5 "
              "mlx5_9=b6");
}

TEST(NicIdentity, AHostThatDoesNotMatchItsModelIsReportedNotGuessed) {
    // Seven ConnectX-7 (one missing or dead to the driver): which rail is gone is unknowable.
    std::vector<RdmaDevice> devs = {
        {"mlx5_0", "MT4125"}, {"mlx5_1", "MT4129"}, {"mlx5_2", "MT4129"}, {"mlx5_3", "MT4129"},
        {"mlx5_4", "MT4129"}, {"mlx5_5", "MT4129"}, {"mlx5_6", "MT4129"}, {"mlx5_7", "MT4129"}};
    auto r = resolveNicDevices(grandTeton(), devs);
    EXPECT_NE(r.hostProblem.find("8 backend NICs (MT4129) to place, the host reports 7"),
              std::string::npos)
        << r.hostProblem;
    for (const auto& d : r.devices) EXPECT_EQ(d.kind, DeviceRole::Unknown);
    // A type of no NIC of the model is that device's problem only.
    devs.push_back({"mlx5_8", "MT4129"});
    devs.push_back({"mlx5_9", "MT4123"});
    r = resolveNicDevices(grandTeton(), devs);
    EXPECT_EQ(r.hostProblem, "");
    EXPECT_EQ(r.devices[9].kind, DeviceRole::Unknown);
    EXPECT_NE(r.devices[9].why.find("hca_type MT4123 is no NIC of the host model"),
              std::string::npos);
    // A device with no node_infiniband_info line cannot be told: reported.
    devs[9].hcaType = "";
    r = resolveNicDevices(grandTeton(), devs);
    EXPECT_EQ(r.devices[9].kind, DeviceRole::Unknown);
    EXPECT_NE(r.devices[9].why.find("no node_infiniband_info"), std::string::npos);
    // Backend and frontend of one type, no PCI addresses: nothing to tell them apart.
    auto same = grandTeton();
    same.frontend[0].hcaType = "MT4129";
    devs.pop_back();
    devs[0].hcaType = "MT4129";
    r = resolveNicDevices(same, devs);
    EXPECT_NE(r.hostProblem.find("both MT4129"), std::string::npos) << r.hostProblem;
}

TEST(NicIdentity, PciAddressesPlaceEachRail) {
    // Rails declared by PCI slot, not in bus order (rail 0 at 0x9a): the names' addresses decide.
    const std::vector<std::string> pci = {"0000:9a:00.0", "0000:18:00.0", "0000:2a:00.0",
                                          "0000:3a:00.0", "0000:5d:00.0", "0000:ab:00.0",
                                          "0000:ba:00.0", "0000:db:00.0"};
    auto id = grandTeton(pci, "0000:19:00.0");
    std::vector<RdmaDevice> devs = {
        {"rocep24s0", "MT4129"},  {"rocep25s0", "MT4125"},  {"rocep42s0", "MT4129"},
        {"rocep58s0", "MT4129"},  {"rocep93s0", "MT4129"},  {"rocep154s0", "MT4129"},
        {"rocep171s0", "MT4129"}, {"rocep186s0", "MT4129"}, {"rocep219s0", "MT4129"}};
    auto r = resolveNicDevices(id, devs);
    EXPECT_EQ(r.hostProblem, "");
    EXPECT_EQ(show(devs, r),
              "rocep24s0=b1 rocep25s0=fe rocep42s0=b2 rocep58s0=b3 rocep93s0=b4 rocep154s0=b0 "
              "rocep171s0=b5 rocep186s0=b6 rocep219s0=b7");
    // A device at an address no NIC of the model has: that device is unknown.
    devs.push_back({"rocep200s0", "MT4129"});
    r = resolveNicDevices(id, devs);
    EXPECT_EQ(r.devices.back().kind, DeviceRole::Unknown);
    EXPECT_NE(r.devices.back().why.find("no NIC of the host model at PCI 0000:c8:00.0"),
              std::string::npos);
    // The hca_type at an address disagrees with the model: the host is not believed.
    devs.pop_back();
    devs[0].hcaType = "MT4125";
    r = resolveNicDevices(id, devs);
    EXPECT_NE(r.hostProblem.find("rocep24s0 at 0000:18:00.0 reports hca_type MT4125"),
              std::string::npos)
        << r.hostProblem;
}

TEST(NicIdentity, AModelWithNoHcaTypeKeepsMlx5NUnlessTheOrderIsInDoubt) {
    HostNicIdentity id;
    id.backend.resize(8);  // NICs of a model not in the table, nothing declared
    std::vector<RdmaDevice> devs = {{"mlx5_0", ""}, {"mlx5_7", ""}, {"mlx5_8", ""}};
    auto r = resolveNicDevices(id, devs);
    EXPECT_EQ(show(devs, r), "mlx5_0=b0 mlx5_7=b7 mlx5_8=?");
    // The page shows nine devices for eight NICs: one of them is something else.
    devs.clear();
    std::vector<std::string> names;
    for (int i = 0; i < 9; ++i) names.push_back("mlx5_" + std::to_string(i));
    for (const auto& n : names) devs.push_back({n, "MT4129"});
    r = resolveNicDevices(id, devs);
    EXPECT_NE(r.hostProblem.find("9 RDMA devices for 8 backend NICs"), std::string::npos)
        << r.hostProblem;
}

constexpr std::string_view kSpec = R"(apiVersion: loom/v1
kind: Cluster
metadata: {name: nics}
spec:
  site: {name: lab}
  models:
    hosts:
      - name: gt
        gpus: 2
        backendNicModel: ConnectX-7
        frontendNicModel: ConnectX-6-Dx
        backendNicPci: ["9a:00.0", "0000:18:00.0"]
      - name: custom
        gpus: 2
        backendNicModel: Thor2
        backendNicHcaType: BCM57608
    switches:
      - {name: minipack2, ports: 128}
  zones:
    - {racks: 1, hostModel: gt}
    - {racks: 1, hostModel: custom}
  fabric:
    type: roce
    rtsw: {model: minipack2, uplinks: 2}
    ctsw: {model: minipack2, perZone: 2}
)";

TEST(NicIdentity, TheSpecDeclaresItPerHostModel) {
    auto inv = loadClusterSpec(kSpec);
    ASSERT_TRUE(inv) << inv.error().toString();
    std::map<std::string, std::pair<std::string, std::string>> nic;
    for (const auto& n : inv->nics) nic[n.name.str()] = {n.hcaType.str(), n.pci.str()};
    EXPECT_EQ(nic["z1-r001-h0-nic0"],
              (std::pair<std::string, std::string>{"MT4129", "0000:9a:00.0"}));
    EXPECT_EQ(nic["z1-r001-h0-nic1"],
              (std::pair<std::string, std::string>{"MT4129", "0000:18:00.0"}));
    EXPECT_EQ(nic["z1-r001-h0-fe0"], (std::pair<std::string, std::string>{"MT4125", ""}));
    EXPECT_EQ(nic["z2-r001-h0-nic1"], (std::pair<std::string, std::string>{"BCM57608", ""}));
    EXPECT_EQ(nic["z2-r001-h0-fe0"].first, "MT4125");  // the default frontend model's

    std::string spec(kSpec);
    spec.replace(spec.find("\"9a:00.0\", "), 11, "");
    auto bad = loadClusterSpec(spec);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().path, "spec.models.hosts[0].backendNicPci") << bad.error().toString();
    EXPECT_NE(bad.error().message.find("1 addresses for 2 NICs"), std::string::npos);
    spec = kSpec;
    spec.replace(spec.find("9a:00.0"), 7, "9a:00");
    bad = loadClusterSpec(spec);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().path, "spec.models.hosts[0].backendNicPci[0]") << bad.error().toString();
    spec = kSpec;
    spec.replace(spec.find("BCM57608"), 8, "\"MT 4129\"");
    bad = loadClusterSpec(spec);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().path, "spec.models.hosts[1].backendNicHcaType") << bad.error().toString();
}

}  // namespace
}  // namespace loom::inventory
