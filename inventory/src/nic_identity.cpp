#include "loom/inventory/nic_identity.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <tuple>

namespace loom::inventory {
namespace {

// "ConnectX-6 Dx" -> "connectx6dx": the table's key.
std::string nicModelKey(std::string_view model) {
    std::string k;
    for (unsigned char c : model)
        if (std::isalnum(c)) k.push_back(static_cast<char>(std::tolower(c)));
    return k;
}

// Parses the decimal digits at s[i..]; false when there are none (or too many).
bool readDecimal(std::string_view s, std::size_t& i, unsigned& out) {
    std::size_t j = i;
    while (j < s.size() && j - i < 6 && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i || (j < s.size() && s[j] >= '0' && s[j] <= '9')) return false;
    std::from_chars(s.data() + i, s.data() + j, out);
    i = j;
    return true;
}

// The order devices take the rails in: by PCI address when the name has one, mlx5_N by N
// (mlx5_2 before mlx5_10), anything else by name.
auto deviceOrderKey(std::string_view name) {
    std::string pci = pciOfRdmaDevice(name);
    unsigned n = 0;
    std::size_t i = 5;
    if (pci.empty() && name.starts_with("mlx5_") && readDecimal(name, i, n) && i == name.size())
        return std::tuple(1, std::string(), n, std::string(name));
    if (!pci.empty()) return std::tuple(0, std::move(pci), 0u, std::string(name));
    return std::tuple(2, std::string(), 0u, std::string(name));
}

std::string joinTypes(const std::vector<NicDecl>& nics) {
    std::vector<std::string> types;
    for (const auto& n : nics)
        if (!n.hcaType.empty() && std::find(types.begin(), types.end(), n.hcaType) == types.end())
            types.push_back(n.hcaType);
    std::string out;
    for (const auto& t : types) out += (out.empty() ? "" : "/") + t;
    return out.empty() ? "none" : out;
}

bool hasType(const std::vector<NicDecl>& nics, std::string_view t) {
    return std::any_of(nics.begin(), nics.end(), [&](const NicDecl& n) { return n.hcaType == t; });
}

}  // namespace

std::string_view hcaTypeOfNicModel(std::string_view model) {
    // PCI device ids of the Mellanox/NVIDIA adapters (the kernel's mlx5 driver table).
    static constexpr std::pair<std::string_view, std::string_view> kTable[] = {
        {"connectx4", "MT4115"},   {"connectx4lx", "MT4117"}, {"connectx5", "MT4119"},
        {"connectx5ex", "MT4121"}, {"connectx6", "MT4123"},   {"connectx6dx", "MT4125"},
        {"connectx6lx", "MT4127"}, {"connectx7", "MT4129"},   {"connectx8", "MT4131"},
        {"bluefield2", "MT41686"}, {"bluefield3", "MT41692"},
    };
    const std::string key = nicModelKey(model);
    for (const auto& [name, type] : kTable)
        if (key == name) return type;
    return {};
}

std::string pciOfRdmaDevice(std::string_view d) {
    // rdma-core's rdma_rename NAME_PCI: <protocol>[P<domain>]p<bus>s<slot>[f<function>[v<vf>]],
    // every number in decimal.
    std::size_t i = 0;
    for (std::string_view prefix : {"roce", "rdma", "opa", "ib", "iw"})
        if (d.starts_with(prefix)) {
            i = prefix.size();
            break;
        }
    if (i == 0) return {};
    unsigned domain = 0, bus = 0, slot = 0, fn = 0;
    if (i < d.size() && d[i] == 'P') {
        ++i;
        if (!readDecimal(d, i, domain)) return {};
    }
    if (i >= d.size() || d[i] != 'p') return {};
    ++i;
    if (!readDecimal(d, i, bus) || i >= d.size() || d[i] != 's') return {};
    ++i;
    if (!readDecimal(d, i, slot)) return {};
    if (i < d.size() && d[i] == 'f') {
        ++i;
        if (!readDecimal(d, i, fn)) return {};
        if (i < d.size() && d[i] == 'v') return {};  // a virtual function: no NIC of the model
    }
    if (i != d.size() || domain > 0xffff || bus > 0xff || slot > 0x1f || fn > 7) return {};
    char out[16];
    std::snprintf(out, sizeof out, "%04x:%02x:%02x.%u", domain, bus, slot, fn);
    return out;
}

Result<std::string> canonicalPci(std::string_view text) {
    auto bad = [&] {
        return std::unexpected(Error::invalid("\"" + std::string(text.substr(0, 40)) +
                                              "\" is no PCI address (DDDD:BB:SS.F, e.g. "
                                              "0000:18:00.0)"));
    };
    unsigned v[4] = {0, 0, 0, 0};
    const unsigned max[4] = {0xffff, 0xff, 0x1f, 7};
    // Fields from the right: function after '.', then slot, bus and an optional domain.
    const auto dot = text.rfind('.');
    if (dot == std::string_view::npos || text.size() > 16) return bad();
    std::vector<std::string_view> parts;
    std::string_view head = text.substr(0, dot);
    while (true) {
        auto c = head.find(':');
        parts.push_back(head.substr(0, c));
        if (c == std::string_view::npos) break;
        head.remove_prefix(c + 1);
    }
    if (parts.size() < 2 || parts.size() > 3) return bad();
    if (parts.size() == 2) parts.insert(parts.begin(), "0");
    parts.push_back(text.substr(dot + 1));
    for (int f = 0; f < 4; ++f) {
        const auto p = parts[f];
        if (p.empty() || p.size() > 4) return bad();
        auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v[f], f == 3 ? 10 : 16);
        if (ec != std::errc() || end != p.data() + p.size() || v[f] > max[f]) return bad();
    }
    char out[16];
    std::snprintf(out, sizeof out, "%04x:%02x:%02x.%u", v[0], v[1], v[2], v[3]);
    return std::string(out);
}

NicResolution resolveNicDevices(const HostNicIdentity& id, std::span<const RdmaDevice> devices) {
    NicResolution res;
    res.devices.resize(devices.size());
    const std::size_t rails = id.backend.size();
    std::vector<bool> railTaken(rails, false);
    auto fail = [&](std::string why) {
        res.hostProblem = std::move(why);
        for (auto& d : res.devices) d = DeviceRole{DeviceRole::Unknown, -1, res.hostProblem};
        return res;
    };
    // A rail given twice (two devices naming one PCI address, a page listing a device twice):
    // nothing on the host is believed.
    auto take = [&](std::size_t di, int rail) {
        if (railTaken[static_cast<std::size_t>(rail)]) return false;
        railTaken[static_cast<std::size_t>(rail)] = true;
        res.devices[di] = DeviceRole{DeviceRole::Backend, rail, {}};
        return true;
    };

    // 1. By PCI address, where both the name and the model have one.
    std::vector<std::size_t> rest;
    for (std::size_t di = 0; di < devices.size(); ++di) {
        const auto& d = devices[di];
        const std::string pci = pciOfRdmaDevice(d.name);
        bool placed = false;
        if (!pci.empty()) {
            for (std::size_t r = 0; r < rails && !placed; ++r)
                if (id.backend[r].pci == pci) {
                    if (!id.backend[r].hcaType.empty() && !d.hcaType.empty() &&
                        d.hcaType != id.backend[r].hcaType)
                        return fail(std::string(d.name) + " at " + pci + " reports hca_type " +
                                    std::string(d.hcaType) + ", backend NIC " + std::to_string(r) +
                                    " there is " + id.backend[r].hcaType);
                    if (!take(di, static_cast<int>(r)))
                        return fail("two devices at PCI " + pci + " (backend NIC " +
                                    std::to_string(r) + ")");
                    placed = true;
                }
            for (const auto& f : id.frontend)
                if (!placed && f.pci == pci) {
                    res.devices[di] =
                        DeviceRole{DeviceRole::Frontend, -1, "frontend NIC at " + pci};
                    placed = true;
                }
            const bool modelHasPci = std::any_of(id.backend.begin(), id.backend.end(),
                                                 [](const NicDecl& n) { return !n.pci.empty(); }) ||
                                     std::any_of(id.frontend.begin(), id.frontend.end(),
                                                 [](const NicDecl& n) { return !n.pci.empty(); });
            if (!placed && modelHasPci) {
                res.devices[di] =
                    DeviceRole{DeviceRole::Unknown, -1, "no NIC of the host model at PCI " + pci};
                placed = true;
            }
        }
        if (!placed) rest.push_back(di);
    }
    if (rest.empty()) return res;

    // 2. By hca_type.
    std::string backendType;
    bool oneType = true;
    for (const auto& n : id.backend) {
        if (n.hcaType.empty()) continue;
        if (backendType.empty()) backendType = n.hcaType;
        if (n.hcaType != backendType) oneType = false;
    }
    if (!backendType.empty()) {
        if (!oneType)
            return fail("the host model's backend NICs are of several hca types (" +
                        joinTypes(id.backend) + "): declare backendNicPci");
        std::vector<std::size_t> backend;
        for (auto di : rest) {
            const auto& d = devices[di];
            if (d.hcaType.empty()) {
                res.devices[di] = DeviceRole{DeviceRole::Unknown, -1,
                                             "no node_infiniband_info{hca_type} for the device"};
            } else if (d.hcaType == backendType) {
                if (hasType(id.frontend, backendType))
                    return fail("backend and frontend NICs are both " + backendType +
                                ": hca_type cannot tell them apart; declare backendNicPci and "
                                "name devices by PCI (rdma-core NAME_PCI)");
                backend.push_back(di);
            } else if (hasType(id.frontend, d.hcaType)) {
                res.devices[di] = DeviceRole{DeviceRole::Frontend, -1,
                                             "frontend NIC (" + std::string(d.hcaType) + ")"};
            } else {
                res.devices[di] =
                    DeviceRole{DeviceRole::Unknown, -1,
                               "hca_type " + std::string(d.hcaType.substr(0, 32)) +
                                   " is no NIC of the host model (backend " + backendType +
                                   ", frontend " + joinTypes(id.frontend) + ")"};
            }
        }
        std::vector<int> free;
        for (std::size_t r = 0; r < rails; ++r)
            if (!railTaken[r]) free.push_back(static_cast<int>(r));
        if (backend.size() != free.size()) {
            std::string names;
            for (std::size_t k = 0; k < backend.size() && k < 12; ++k)
                names += (k ? ", " : "") + std::string(devices[backend[k]].name.substr(0, 32));
            return fail("the host model has " + std::to_string(free.size()) + " backend NICs (" +
                        backendType + ") to place, the host reports " +
                        std::to_string(backend.size()) +
                        (names.empty() ? std::string() : " (" + names + ")"));
        }
        std::sort(backend.begin(), backend.end(), [&](std::size_t a, std::size_t b) {
            return deviceOrderKey(devices[a].name) < deviceOrderKey(devices[b].name);
        });
        for (std::size_t k = 0; k < backend.size(); ++k)
            if (!take(backend[k], free[k]))
                return fail("backend NIC " + std::to_string(free[k]) + " placed twice");
        return res;
    }

    // 3. No hca type declared: mlx5_N is rail N, unless the page shows more devices than the
    // host has backend NICs (then the order cannot be trusted).
    std::size_t described = 0;
    for (auto di : rest)
        if (!devices[di].hcaType.empty()) ++described;
    if (described > rails)
        return fail(std::to_string(described) + " RDMA devices for " + std::to_string(rails) +
                    " backend NICs and the host model names no hca type to tell them apart: "
                    "declare backendNicHcaType");
    for (auto di : rest) {
        const auto name = devices[di].name;
        unsigned n = 0;
        std::size_t i = 5;
        if (name.starts_with("mlx5_") && readDecimal(name, i, n) && i == name.size() && n < rails) {
            if (!take(di, static_cast<int>(n)))
                return fail("backend NIC " + std::to_string(n) + " named twice");
        } else {
            res.devices[di] = DeviceRole{DeviceRole::Unknown, -1,
                                         "not mlx5_N of a backend NIC, and the host model names "
                                         "no hca type"};
        }
    }
    return res;
}

}  // namespace loom::inventory
