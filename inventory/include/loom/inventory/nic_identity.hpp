// NIC identity: which RDMA device of a host is backend NIC i (rail i) and which is a frontend
// NIC, read from what the hardware reports and never from the kernel's enumeration order alone
// (issue 35 item 4).
//
// node_exporter's InfiniBand collector names each device as the host names it -- the kernel's
// mlx5_N, or rdma-core's persistent NAME_PCI name (ibp24s0, rocep152s0f1, ibP1p2s0) -- and
// reports its PCI device type: node_infiniband_info{device="mlx5_3",hca_type="MT4129"}. On a
// Grand Teton the frontend ConnectX-6 Dx (MT4125) can enumerate before the eight ConnectX-7
// (MT4129) backend NICs and shift every mlx5_N by one. The cluster spec's host model says what
// each NIC is (docs/cluster-spec.md, "NIC identity"): its hca_type (backendNicHcaType,
// frontendNicHcaType; by default from the NIC model's name, hcaTypeOfNicModel) and optionally
// its PCI address (backendNicPci, frontendNicPci: one per NIC, in rail order). The inventory
// stores both per NIC (Nic::hcaType, Nic::pci).
//
// resolveNicDevices reads one host's devices (one node_exporter page) against that:
//   1. a device whose name carries a PCI address that the model declares is that NIC;
//   2. otherwise its hca_type says backend or frontend, and the backend devices take the
//      remaining rails in device order (mlx5_2 before mlx5_10) -- only when there are exactly
//      as many of them as rails left, and only when the backend type is not also a frontend's;
//   3. a model that names no hca type (an unknown NIC model, none declared) keeps mlx5_N =
//      rail N, unless the page shows more devices than backend NICs;
//   anything else -- a type of no NIC of the model, a count that does not match, a device with
//   no node_infiniband_info line -- is reported (the device, or the whole host), not guessed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"

namespace loom::inventory {

// What node_infiniband_info{hca_type} reports for a NIC model: "MT" and the PCI device id in
// decimal (ConnectX-7 -> "MT4129", ConnectX-6 Dx -> "MT4125", BlueField-3 -> "MT41692").
// Case, spaces and dashes in the name do not matter; empty for a model not in the table.
std::string_view hcaTypeOfNicModel(std::string_view model);

// The PCI address an rdma-core NAME_PCI device name carries, as "DDDD:BB:SS.F"
// ("ibp24s0" -> "0000:18:00.0", "rocep152s0f1" -> "0000:98:00.1", "ibP1p2s0f0" ->
// "0001:02:00.0"); empty for a name without one (mlx5_3, a slot-named ibs3).
std::string pciOfRdmaDevice(std::string_view device);

// A PCI address as the spec may write it ("18:00.0", "0000:18:00.0", upper or lower case hex),
// canonical ("0000:18:00.0"); InvalidArgument otherwise.
Result<std::string> canonicalPci(std::string_view text);

// What the inventory says about one NIC of a host.
struct NicDecl {
    std::string hcaType;  // "" = not declared
    std::string pci;      // canonical, "" = not declared
};
struct HostNicIdentity {
    std::vector<NicDecl> backend;  // by NIC index (= rail)
    std::vector<NicDecl> frontend;
};

// One device of a host's page.
struct RdmaDevice {
    std::string_view name;     // "mlx5_3", "rocep24s0"
    std::string_view hcaType;  // node_infiniband_info's; empty: the page had no info line
};

struct DeviceRole {
    enum Kind : std::uint8_t { Backend, Frontend, Unknown };
    Kind kind = Unknown;
    int rail = -1;    // Backend: the NIC index
    std::string why;  // Frontend and Unknown: in words
};

struct NicResolution {
    std::vector<DeviceRole> devices;  // one per input device, in its order
    // Non-empty: the host's devices do not match its model (why, in words), and none is
    // believed -- every device is Unknown.
    std::string hostProblem;
};

NicResolution resolveNicDevices(const HostNicIdentity& id, std::span<const RdmaDevice> devices);

}  // namespace loom::inventory
