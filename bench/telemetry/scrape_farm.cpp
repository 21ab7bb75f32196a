// scrape_farm: a farm of exporter endpoints for loomd's scraper to pull (issue 20, "Scrape").
//
//   scrape_farm serve --list FILE --control ADDR:PORT [--node-page FILE]
//   scrape_farm probe --control ADDR:PORT --loomd ADDR:PORT --token T [--count N]
//                     [--gap-ms MS] [--hosts FILE]
//   scrape_farm page dcgm HOST | page snmp PORTS [NAMING]
//
// serve: one process, one thread, one Asio io_context (epoll). FILE has one line per exporter:
//   dcgm ENTITY ADDRESS PORT            a dcgm-exporter of host ENTITY (8 H100s) at ADDRESS:PORT
//   node ENTITY ADDRESS PORT            a node_exporter (InfiniBand collector, 8 ConnectX ports)
//   snmp ENTITY ADDRESS PORTS [NAMING]  a switch of PORTS front-panel ports behind the one
//                                       snmp_exporter, named as its NOS names them (NAMING: the
//                                       switch's portNaming, port_naming.hpp's canonical text,
//                                       e.g. "eos firstSlot=3 portsPerSlot=36"; none: swpN)
//   snmp-exporter - ADDRESS PORT        where that snmp_exporter listens (?target=ADDRESS picks)
// Every page is rendered once, in the exporter's own format, with its HTTP header in front
// (keep-alive); a request costs one read and one write of that buffer. The node page is the
// real node_exporter 1.5 output given by --node-page (`collect[]=infiniband` of 8 mlx5 ports).
// The control listener takes `POST /set?entity=HOST&gpu=G&power=W`: that GPU's
// DCGM_FI_DEV_POWER_USAGE becomes W and the host's page is rendered again.
// Prints "farm listening: N endpoints, B bytes of pages" once every socket is bound.
//
// page: one page body on stdout, as serve renders it (bench/telemetry/pages/ were recorded so).
//
// probe: COUNT times (default 100), GAP-MS apart (default 400): a random host of --hosts (one
// name a line) gets a new power value on a random GPU through the farm's control port, and
// GET /api/v1/telemetry/gpus/<host>-gpu<G> on loomd is polled every 10 ms until it shows the
// value: scrape-to-map latency, from before the change was sent. Prints one JSON line with
// count, p50, p90, p99, max (ms) and misses (not seen within 10 s).
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "loom/inventory/port_naming.hpp"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// One host's dcgm-exporter page: every field Loom reads (docs/telemetry.md), 8 GPUs, the labels
// dcgm-exporter 3.3 writes (with its HPC job mapping: hpc_job).
struct DcgmField {
    const char* name;
    const char* type;
    const char* help;
    double value;
};
const DcgmField kDcgmFields[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 1980},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 2619},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", 41},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 38},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 312.448},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).", 81630482211},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", 0},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 97},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 38},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", 2123},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 79032},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
     0},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
     0},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors", 0},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors", 0},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", 0},
    {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
     "Total number of NVLink flow-control CRC errors.", 0},
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask).", 4},
    {"DCGM_FI_DEV_POWER_VIOLATION", "counter",
     "Throttling duration due to power constraints (in us).", 1822004},
    {"DCGM_FI_DEV_THERMAL_VIOLATION", "counter",
     "Throttling duration due to thermal constraints (in us).", 0},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
     "Ratio of time the graphics engine is active (in %).", 0.953211},
    {"DCGM_FI_PROF_SM_ACTIVE", "gauge",
     "The ratio of cycles an SM has at least 1 warp assigned (in %).", 0.921007},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data (in %).",
     0.402113},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active (in %).", 0.612004},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "counter",
     "The number of bytes of active pcie tx data including both header and payload.", 4.1932e+09},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "counter",
     "The number of bytes of active pcie rx data including both header and payload.", 9.8812e+09},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", "counter",
     "The number of bytes of active NvLink tx (transmit) data including both header and payload.",
     7.7201e+11},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", "counter",
     "The number of bytes of active NvLink rx (read) data including both header and payload.",
     7.7199e+11},
};
constexpr int kPowerField = 4;

std::string num(double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.17g", v);
    return b;
}

std::string httpWrap(const std::string& body) {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\nConnection: keep-alive\r\n\r\n" + body;
}

struct Host {
    std::string name;
    double power[8];
    std::uint64_t seed;
};

std::string dcgmPage(const Host& h) {
    std::string out;
    out.reserve(64 << 10);
    for (int f = 0; f < int(std::size(kDcgmFields)); ++f) {
        const auto& d = kDcgmFields[f];
        out += "# HELP ";
        out += d.name;
        out += ' ';
        out += d.help;
        out += "\n# TYPE ";
        out += d.name;
        out += ' ';
        out += d.type;
        out += '\n';
        for (int g = 0; g < 8; ++g) {
            char uuid[64];
            std::snprintf(uuid, sizeof uuid, "GPU-%08llx-%04x-%04x-%04x-%012llx",
                          static_cast<unsigned long long>(h.seed & 0xffffffff), g, 0x5c1b, 0x9c3a,
                          static_cast<unsigned long long>((h.seed >> 8) & 0xffffffffffffULL));
            char bus[32];
            std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + 0x10 * g);
            out += d.name;
            out += "{gpu=\"" + std::to_string(g) + "\",UUID=\"" + uuid + "\",pci_bus_id=\"" + bus +
                   "\",device=\"nvidia" + std::to_string(g) +
                   "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"" + h.name +
                   "\",DCGM_FI_DRIVER_VERSION=\"535.129.03\",hpc_job=\"" +
                   std::to_string(4000000 + h.seed % 5000) + "\"} ";
            out += num(f == kPowerField ? h.power[g] : d.value);
            out += '\n';
        }
    }
    return out;
}

// The interfaces a switch of that NOS carries beside its front-panel ports (management,
// loopback, a port-channel, a VLAN): a real walk lists them, and Loom must ignore them.
std::vector<std::string> otherInterfaces(const loom::inventory::PortNaming& n) {
    using Scheme = loom::inventory::PortNaming::Scheme;
    switch (n.scheme) {
        case Scheme::Sonic:
            return {"eth0", "lo", "Loopback0", "PortChannel0001", "Vlan1000", "docker0"};
        case Scheme::Eos:
            return {"Management1", "Loopback0", "Port-Channel1", "Vlan1000"};
        case Scheme::Cumulus:
            return {"eth0", "lo", "bond0", "vlan1000", "mgmt"};
        default:
            return {"lo", "mgmt0"};
    }
}

// snmp_exporter 0.21's if_mib walk of one switch (configs/exporters/snmp.yml: ifName lookup):
// its front-panel ports by the switch's port naming (swpN, Ethernet<lane>, Ethernet3/1/1),
// then its other interfaces, each with its own ifIndex.
std::string snmpPage(int ports, std::uint64_t seed, const loom::inventory::PortNaming& naming) {
    std::vector<std::string> names;
    for (int p = 1; p <= ports; ++p)
        names.push_back(naming.scheme == loom::inventory::PortNaming::Scheme::Default
                            ? "swp" + std::to_string(p)
                            : loom::inventory::interfaceName(naming, p));
    for (auto& o : otherInterfaces(naming)) names.push_back(std::move(o));
    struct Obj {
        const char* name;
        const char* type;
        const char* help;
    };
    const Obj objs[] = {
        {"ifOperStatus", "gauge",
         "The current operational state of the interface. - 1.3.6.1.2.1.2.2.1.8"},
        {"ifHighSpeed", "gauge",
         "An estimate of the interface's current bandwidth in units of 1,000,000 bits per second - "
         "1.3.6.1.2.1.31.1.1.1.15"},
        {"ifHCInOctets", "counter",
         "The total number of octets received on the interface, including framing characters - "
         "1.3.6.1.2.1.31.1.1.1.6"},
        {"ifHCOutOctets", "counter",
         "The total number of octets transmitted out of the interface, including framing "
         "characters - 1.3.6.1.2.1.31.1.1.1.10"},
        {"ifHCInUcastPkts", "counter",
         "The number of packets, delivered by this sub-layer to a higher (sub-)layer, which were "
         "not addressed to a multicast or broadcast address at this sub-layer - "
         "1.3.6.1.2.1.31.1.1.1.7"},
        {"ifHCOutUcastPkts", "counter",
         "The total number of packets that higher-level protocols requested be transmitted, and "
         "which were not addressed to a multicast or broadcast address at this sub-layer, "
         "including those that were discarded or not sent - 1.3.6.1.2.1.31.1.1.1.11"},
        {"ifInErrors", "counter",
         "For packet-oriented interfaces, the number of inbound packets that contained errors "
         "preventing them from being deliverable to a higher-layer protocol - "
         "1.3.6.1.2.1.2.2.1.14"},
        {"ifOutErrors", "counter",
         "For packet-oriented interfaces, the number of outbound packets that could not be "
         "transmitted because of errors - 1.3.6.1.2.1.2.2.1.20"},
        {"ifInDiscards", "counter",
         "The number of inbound packets which were chosen to be discarded even though no errors "
         "had been detected to prevent their being deliverable to a higher-layer protocol - "
         "1.3.6.1.2.1.2.2.1.13"},
        {"ifOutDiscards", "counter",
         "The number of outbound packets which were chosen to be discarded even though no errors "
         "had been detected to prevent their being transmitted - 1.3.6.1.2.1.2.2.1.19"},
    };
    std::string out;
    out.reserve(std::size_t(ports) * 900 + 2048);
    for (const auto& o : objs) {
        out += std::string("# HELP ") + o.name + " " + o.help + "\n# TYPE " + o.name + " " +
               o.type + "\n";
        for (int p = 1; p <= int(names.size()); ++p) {
            double v = 0;
            const std::string n(o.name);
            if (n == "ifOperStatus")
                v = 1;
            else if (n == "ifHighSpeed")
                v = 400000;
            else if (n.find("Octets") != std::string::npos)
                v = double((seed * 7919 + p) % 1000000) * 1e6;
            else if (n.find("Pkts") != std::string::npos)
                v = double((seed * 104729 + p) % 1000000) * 1e3;
            out += n + "{ifIndex=\"" + std::to_string(p) + "\",ifName=\"" + names[p - 1] + "\"} " +
                   num(v) + "\n";
        }
    }
    out +=
        "# HELP snmp_scrape_duration_seconds Total SNMP time scrape took (walk and processing).\n"
        "# TYPE snmp_scrape_duration_seconds gauge\nsnmp_scrape_duration_seconds 0.042107\n"
        "# HELP snmp_scrape_pdus_returned PDUs returned from walk.\n"
        "# TYPE snmp_scrape_pdus_returned gauge\nsnmp_scrape_pdus_returned " +
        std::to_string(names.size() * 11) +
        "\n# HELP snmp_scrape_walk_duration_seconds Time SNMP walk/bulkwalk took.\n"
        "# TYPE snmp_scrape_walk_duration_seconds gauge\n"
        "snmp_scrape_walk_duration_seconds 0.041882\n";
    return out;
}

struct Farm {
    net::io_context ioc{1};
    // Pages by "address:port" (dcgm, node) or by "snmp:" + target address.
    std::unordered_map<std::string, std::shared_ptr<const std::string>> pages;
    std::unordered_map<std::string, Host> hosts;          // by name
    std::unordered_map<std::string, std::string> dcgmAt;  // host name -> "address:port"
    std::string snmpAt;
    std::uint64_t requests = 0;

    net::awaitable<void> session(tcp::socket sock, std::string key) {
        beast::flat_buffer buf;
        for (;;) {
            http::request_parser<http::empty_body> parser;
            beast::error_code ec;
            co_await http::async_read(sock, buf, parser,
                                      net::redirect_error(net::use_awaitable, ec));
            if (ec) co_return;  // the scraper closed (or stopped)
            std::shared_ptr<const std::string> page;
            if (key == snmpAt) {
                const auto tv = parser.get().target();
                const std::string_view t(tv.data(), tv.size());
                const auto at = t.find("target=");
                auto end = t.find('&', at);
                if (at != std::string_view::npos) {
                    auto it = pages.find(
                        "snmp:" + std::string(t.substr(
                                      at + 7, end == std::string_view::npos ? end : end - at - 7)));
                    if (it != pages.end()) page = it->second;
                }
            } else if (auto it = pages.find(key); it != pages.end()) {
                page = it->second;
            }
            static const std::string notFound =
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n";
            ++requests;
            // The page's buffer lives until the write ends even if /set replaces it meanwhile.
            beast::error_code wec;
            co_await net::async_write(sock, net::buffer(page ? *page : notFound),
                                      net::redirect_error(net::use_awaitable, wec));
            if (wec) co_return;
        }
    }

    net::awaitable<void> accept(tcp::acceptor a, std::string key) {
        for (;;) {
            beast::error_code ec;
            tcp::socket sock(ioc);
            co_await a.async_accept(sock, net::redirect_error(net::use_awaitable, ec));
            if (ec) continue;
            net::co_spawn(ioc, session(std::move(sock), key), net::detached);
        }
    }

    net::awaitable<void> control(tcp::socket sock) {
        beast::flat_buffer buf;
        for (;;) {
            http::request<http::string_body> req;
            beast::error_code ec;
            co_await http::async_read(sock, buf, req, net::redirect_error(net::use_awaitable, ec));
            if (ec) co_return;
            std::map<std::string, std::string> q;
            const auto tv = req.target();
            std::string_view t(tv.data(), tv.size());
            if (auto qm = t.find('?'); qm != std::string_view::npos) {
                std::string_view rest = t.substr(qm + 1);
                while (!rest.empty()) {
                    auto amp = rest.find('&');
                    auto kv = rest.substr(0, amp);
                    auto eq = kv.find('=');
                    if (eq != std::string_view::npos)
                        q[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
                    rest =
                        amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
                }
            }
            http::response<http::string_body> res{http::status::ok, 11};
            auto h = hosts.find(q["entity"]);
            int g = q.count("gpu") ? std::atoi(q["gpu"].c_str()) : -1;
            if (h == hosts.end() || g < 0 || g > 7 || !q.count("power")) {
                res.result(http::status::bad_request);
                res.body() = "need entity=HOST (a dcgm host of the list), gpu=0..7, power=W\n";
            } else {
                h->second.power[g] = std::atof(q["power"].c_str());
                pages[dcgmAt[h->first]] =
                    std::make_shared<const std::string>(httpWrap(dcgmPage(h->second)));
                res.body() = "ok\n";
            }
            res.keep_alive(true);
            res.prepare_payload();
            beast::error_code wec;
            co_await http::async_write(sock, res, net::redirect_error(net::use_awaitable, wec));
            if (wec) co_return;
        }
    }

    net::awaitable<void> acceptControl(tcp::acceptor a) {
        for (;;) {
            beast::error_code ec;
            tcp::socket sock(ioc);
            co_await a.async_accept(sock, net::redirect_error(net::use_awaitable, ec));
            if (ec) continue;
            net::co_spawn(ioc, control(std::move(sock)), net::detached);
        }
    }

    bool listen(const std::string& address, const std::string& port, std::string key) {
        beast::error_code ec;
        tcp::endpoint ep(net::ip::make_address(address, ec), std::uint16_t(std::stoi(port)));
        if (ec) {
            std::cerr << "scrape_farm: bad address " << address << "\n";
            return false;
        }
        tcp::acceptor a(ioc);
        a.open(ep.protocol(), ec);
        if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
        if (!ec) a.bind(ep, ec);
        if (!ec) a.listen(512, ec);
        if (ec) {
            std::cerr << "scrape_farm: listen " << address << ":" << port << ": " << ec.message()
                      << "\n";
            return false;
        }
        net::co_spawn(ioc, accept(std::move(a), std::move(key)), net::detached);
        return true;
    }
};

std::pair<std::string, std::string> splitHostPort(const std::string& s) {
    auto c = s.rfind(':');
    return {s.substr(0, c), s.substr(c + 1)};
}

int serve(const std::map<std::string, std::string>& opt) {
    Farm farm;
    std::ifstream list(opt.at("--list"));
    if (!list) {
        std::cerr << "scrape_farm: cannot read --list " << opt.at("--list") << "\n";
        return 2;
    }
    std::string nodePage;
    if (opt.count("--node-page")) {
        std::ifstream f(opt.at("--node-page"));
        if (!f) {
            std::cerr << "scrape_farm: cannot read --node-page " << opt.at("--node-page") << "\n";
            return 2;
        }
        nodePage = httpWrap(std::string((std::istreambuf_iterator<char>(f)), {}));
    }
    auto node = std::make_shared<const std::string>(nodePage);
    std::size_t endpoints = 0, bytes = 0, lineNo = 0;
    std::string line;
    std::uint64_t seed = 1;
    while (std::getline(list, line)) {
        ++lineNo;
        std::istringstream in(line);
        std::string kind, entity, address, port;
        if (!(in >> kind >> entity >> address >> port)) continue;
        ++seed;
        std::shared_ptr<const std::string> page;
        if (kind == "dcgm") {
            Host h{entity, {}, seed * 0x9e3779b97f4a7c15ULL};
            for (double& p : h.power) p = kDcgmFields[kPowerField].value;
            page = std::make_shared<const std::string>(httpWrap(dcgmPage(h)));
            farm.hosts[entity] = h;
            farm.dcgmAt[entity] = address + ":" + port;
        } else if (kind == "node") {
            if (nodePage.empty()) {
                std::cerr << "scrape_farm: node targets need --node-page\n";
                return 2;
            }
            page = node;
        } else if (kind == "snmp") {
            // The rest of the line: the switch's port naming ("eos firstSlot=3 ...").
            std::string text;
            std::getline(in >> std::ws, text);
            auto naming = loom::inventory::parsePortNaming(text);
            if (!naming) {
                std::cerr << "scrape_farm: " << opt.at("--list") << ":" << lineNo << ": "
                          << naming.error().message << "\n";
                return 2;
            }
            farm.pages["snmp:" + address] = std::make_shared<const std::string>(
                httpWrap(snmpPage(std::stoi(port), seed, *naming)));
            bytes += farm.pages["snmp:" + address]->size();
            ++endpoints;
            continue;
        } else if (kind == "snmp-exporter") {
            farm.snmpAt = address + ":" + port;
            if (!farm.listen(address, port, farm.snmpAt)) return 1;
            continue;
        } else {
            std::cerr << "scrape_farm: " << opt.at("--list") << ":" << lineNo << ": unknown kind '"
                      << kind << "'\n";
            return 2;
        }
        const auto key = address + ":" + port;
        farm.pages[key] = page;
        bytes += page->size();
        ++endpoints;
        if (!farm.listen(address, port, key)) return 1;
    }
    auto [ca, cp] = splitHostPort(opt.at("--control"));
    tcp::acceptor ctl(farm.ioc,
                      tcp::endpoint(net::ip::make_address(ca), std::uint16_t(std::stoi(cp))));
    std::cout << "farm listening: " << endpoints << " endpoints, " << bytes << " bytes of pages"
              << std::endl;
    net::co_spawn(farm.ioc, farm.acceptControl(std::move(ctl)), net::detached);
    farm.ioc.run();
    return 0;
}

// A blocking HTTP/1.1 GET/POST on a kept connection.
struct Client {
    net::io_context ioc;
    beast::tcp_stream s{ioc};
    beast::flat_buffer buf;
    std::string host, port, token;
    Client(std::string hp, std::string tok) : token(std::move(tok)) {
        std::tie(host, port) = splitHostPort(hp);
        s.connect(tcp::endpoint(net::ip::make_address(host), std::uint16_t(std::stoi(port))));
    }
    http::response<http::string_body> call(http::verb v, const std::string& target) {
        http::request<http::empty_body> req{v, target, 11};
        req.set(http::field::host, host);
        if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
        req.keep_alive(true);
        http::write(s, req);
        http::response<http::string_body> res;
        http::read(s, buf, res);
        return res;
    }
};

int probe(const std::map<std::string, std::string>& opt) {
    std::vector<std::string> hosts;
    std::ifstream hf(opt.at("--hosts"));
    for (std::string l; std::getline(hf, l);)
        if (!l.empty()) hosts.push_back(l);
    if (hosts.empty()) {
        std::cerr << "scrape_farm probe: --hosts lists no host\n";
        return 2;
    }
    const int count = opt.count("--count") ? std::stoi(opt.at("--count")) : 100;
    const int gapMs = opt.count("--gap-ms") ? std::stoi(opt.at("--gap-ms")) : 400;
    Client farm(opt.at("--control"), "");
    Client loomd(opt.at("--loomd"), opt.at("--token"));
    std::mt19937_64 rng(20);
    std::vector<double> lat;
    int misses = 0;
    for (int i = 0; i < count; ++i) {
        const auto& h = hosts[rng() % hosts.size()];
        const int g = int(rng() % 8);
        const double power = 100 + i + 0.25;  // a value no GPU had before
        const auto t0 = Clock::now();
        auto r = farm.call(http::verb::post, "/set?entity=" + h + "&gpu=" + std::to_string(g) +
                                                 "&power=" + num(power));
        if (r.result_int() != 200) {
            std::cerr << "farm /set: " << r.result_int() << " " << r.body();
            return 1;
        }
        bool seen = false;
        while (Clock::now() - t0 < std::chrono::seconds(10)) {
            auto d = loomd.call(http::verb::get,
                                "/api/v1/telemetry/gpus/" + h + "-gpu" + std::to_string(g));
            if (d.result_int() == 200) {
                auto j = nlohmann::json::parse(d.body(), nullptr, false);
                if (j.is_object() && j["power"].is_number() &&
                    std::abs(j["power"].get<double>() - power) < 1e-6) {
                    seen = true;
                    break;
                }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (seen)
            lat.push_back(ms);
        else
            ++misses;
        std::this_thread::sleep_for(std::chrono::milliseconds(gapMs));
    }
    std::sort(lat.begin(), lat.end());
    auto q = [&](double p) {
        if (lat.empty()) return 0.0;
        return lat[std::min(lat.size() - 1, std::size_t(std::ceil(p * double(lat.size()))) - 1)];
    };
    nlohmann::json out = {{"probe", "scrape_to_map"},
                          {"count", lat.size()},
                          {"misses", misses},
                          {"p50_ms", q(0.5)},
                          {"p90_ms", q(0.9)},
                          {"p99_ms", q(0.99)},
                          {"max_ms", lat.empty() ? 0.0 : lat.back()}};
    std::cout << out.dump() << std::endl;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if ((argc == 4 || argc == 5) && std::string(argv[1]) == "page") {
        const std::string kind = argv[2];
        if (kind == "dcgm") {
            Host h{argv[3], {}, 2 * 0x9e3779b97f4a7c15ULL};
            for (double& p : h.power) p = kDcgmFields[kPowerField].value;
            std::cout << dcgmPage(h);
            return 0;
        }
        if (kind == "snmp") {
            auto naming = loom::inventory::parsePortNaming(argc == 5 ? argv[4] : "");
            if (!naming) {
                std::cerr << "scrape_farm: " << naming.error().message << "\n";
                return 2;
            }
            std::cout << snmpPage(std::atoi(argv[3]), 2, *naming);
            return 0;
        }
    }
    if (argc < 2 || (std::string(argv[1]) != "serve" && std::string(argv[1]) != "probe")) {
        std::cerr << "usage: scrape_farm serve --list FILE --control ADDR:PORT [--node-page FILE]\n"
                     "       scrape_farm probe --control ADDR:PORT --loomd ADDR:PORT --token T "
                     "--hosts FILE [--count N] [--gap-ms MS]\n"
                     "       scrape_farm page dcgm HOST | page snmp PORTS [NAMING]\n";
        return 2;
    }
    std::map<std::string, std::string> opt;
    for (int i = 2; i + 1 < argc; i += 2) opt[argv[i]] = argv[i + 1];
    const std::string mode = argv[1];
    for (const char* need :
         mode == "serve" ? std::vector<const char*>{"--list", "--control"}
                         : std::vector<const char*>{"--control", "--loomd", "--token", "--hosts"})
        if (!opt.count(need)) {
            std::cerr << "scrape_farm " << mode << ": " << need << " is required\n";
            return 2;
        }
    try {
        return mode == "serve" ? serve(opt) : probe(opt);
    } catch (const std::exception& e) {
        std::cerr << "scrape_farm " << mode << ": " << e.what() << "\n";
        return 1;
    }
}
