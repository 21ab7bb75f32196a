// The telemetry hub's memory and ingest CPU at a cluster spec's size, with the whole hall in
// service and the simulator driving it (what loomd --simulate does at 1 Hz):
//   layout      GPUs, switch port slots (by kind: unused slot 0, cabled, uncabled; backend or
//               frontend switch), backend links (with a NIC end or switch-to-switch)
//   reporting   after the steps: the port slots with any sample, per counter
//   memory      TelemetryHub::memoryBytes() and the heap the hub holds (mallinfo2's in-use
//               bytes after the hub, less before it: arrays, history, rule state)
//   cpu         per step: the ingest of the step's page (in the simulator's chunks), CPU and
//               wall, and the tick's CPU (getrusage)
//
//   snmp        with --snmp: then two snmp_exporter walks of every switch (IF-MIB, every
//               declared port: ifOperStatus, the 64-bit octet and packet counters, errors,
//               discards, ifHighSpeed), the hub's memory after them: a real scrape's shape
//   digest      with --digest: then full-fidelity steps of a second simulator (every counter;
//               its counters restart below the first's: resets), a page of odd values (NaN,
//               negative, fractional, +Inf, -0, 2^53, 2^32 +- 1), node_exporter pages of the
//               NIC ends (down, flapping, errors, restarts) and ticks; an FNV-1a hash of
//               every answer (every port's counters and utilization, every GPU's fields, the
//               five packed arrays, the events, rollups and a sample of the history): the same
//               binary before and after a storage change must print the same digest
//
//   build/bin/loom_hub_memory [--snmp] [--digest] [spec.yaml] [steps]
//       (default meta-98k-roce.yaml, 20 steps)
#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom/inventory/port_naming.hpp"
#include "loom/inventory/spec.hpp"
#include "loom/telemetry/simulator.hpp"
#include "loom/telemetry/telemetry_hub.hpp"

using namespace loom;
using namespace loom::telemetry;

namespace {

double cpuSeconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
double heapMB() {
    malloc_trim(0);
    return static_cast<double>(mallinfo2().uordblks) / 1e6;
}

struct Digest {
    std::uint64_t h = 1469598103934665603ull;
    void bytes(const void* p, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
    }
    void num(double v) {
        if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();  // one NaN
        bytes(&v, sizeof v);
    }
    void str(std::string_view s) {
        bytes(s.data(), s.size());
        bytes("", 1);
    }
};

// Two IF-MIB walks of every switch, as snmp_exporter's if_mib module pages them (the target's
// switch is the identity; ifName as its port naming scheme names port k).
void snmpWalks(TelemetryHub& hub, const HallLayout& L, std::int64_t& t) {
    std::string page;
    for (int round = 0; round < 2; ++round) {
        t += 15000;
        for (std::uint32_t s = 0; s < L.switches().size(); ++s) {
            const auto& sw = L.switches()[s];
            page.clear();
            const auto n = sw.declaredPorts;
            auto put = [&](const char* metric, auto value) {
                for (std::uint32_t k = 1; k <= n; ++k) {
                    page += metric;
                    page += "{ifIndex=\"" + std::to_string(k) + "\",ifName=\"" +
                            inventory::interfaceName(*sw.naming, static_cast<int>(k)) + "\"} ";
                    page += std::to_string(value(k));
                    page += '\n';
                }
            };
            const std::uint64_t r = static_cast<std::uint64_t>(round);
            put("ifOperStatus", [](std::uint32_t) { return 1; });
            put("ifHCInOctets", [&](std::uint32_t k) {
                return 81234567890123ull + k * 977 + r * 6000000000000ull;
            });
            put("ifHCOutOctets", [&](std::uint32_t k) {
                return 79234567890123ull + k * 991 + r * 5900000000000ull;
            });
            put("ifHCInUcastPkts",
                [&](std::uint32_t k) { return 19834567890ull + k * 13 + r * 1460000000ull; });
            put("ifHCOutUcastPkts",
                [&](std::uint32_t k) { return 19334567890ull + k * 17 + r * 1440000000ull; });
            put("ifInErrors", [&](std::uint32_t k) { return k % 7 + r; });
            put("ifOutErrors", [&](std::uint32_t k) { return k % 5; });
            put("ifInDiscards", [&](std::uint32_t k) { return k % 11 + 3 * r; });
            put("ifOutDiscards", [&](std::uint32_t k) { return k % 13; });
            put("ifHighSpeed", [](std::uint32_t) { return 400000; });
            (void)hub.ingestText(page, t, {.switchName = sw.name});
        }
        hub.tick(t);
    }
}

// What the hub answers, hashed.
std::uint64_t digestOf(const TelemetryHub& hub, const HallLayout& L, std::int64_t t,
                       const std::vector<FailureEvent>& events,
                       const std::vector<Rollup>& rollups) {
    Digest d;
    for (std::uint32_t p = 0; p < L.portCount(); ++p) {
        for (int c = 0; c < kPortCounterCount; ++c)
            d.num(hub.portValue(p, static_cast<PortCounter>(c)));
        d.num(hub.portUtil(p));
    }
    for (std::uint32_t g = 0; g < L.gpuCount(); ++g)
        for (int f = 0; f < kGpuFieldCount; ++f) d.num(hub.gpuValue(g, static_cast<GpuField>(f)));
    for (int k = 0; k < kTopicCount; ++k) {
        auto v = hub.packed(static_cast<Topic>(k), t);
        d.bytes(v.data(), v.size());
    }
    for (const auto& e : events) {
        d.str(e.kind);
        d.str(e.location);
        d.str(e.message);
        d.str(e.rack);
        d.str(e.zone);
        d.num(static_cast<double>(e.openedAtMs));
        d.num(static_cast<double>(e.closedAtMs));
        d.num(static_cast<double>(e.severity));
    }
    for (const auto& r : rollups) {
        d.num(static_cast<double>(r.minuteStartMs));
        for (const auto& x : r.racks)
            for (double v : {double(x.rack), double(x.utilAvg), double(x.utilMax),
                             double(x.tempAvg), double(x.tempMax), double(x.powerAvgW),
                             double(x.gpusReporting), double(x.gpusUnhealthy)})
                d.num(v);
        for (const auto& x : r.switches)
            for (double v : {double(x.sw), double(x.utilAvg), double(x.utilMax), x.errors,
                             x.discards, x.pfcPause, double(x.portsDown)})
                d.num(v);
    }
    for (std::uint32_t g = 0; g < L.gpuCount(); g += 97)
        for (const auto& m : hub.gpuHistory(g, t))
            for (double v :
                 {double(m.minuteStartMs), double(m.utilAvg), double(m.utilMax), double(m.tempMax),
                  double(m.powerAvgW), double(m.fbUsedPct), double(m.samples)})
                d.num(v);
    for (std::uint32_t l = 0; l < L.linkCount(); l += 89)
        for (const auto& m : hub.linkHistory(l, t))
            for (double v : {double(m.minuteStartMs), double(m.utilAvg), double(m.utilMax),
                             double(m.downSamples), double(m.samples), m.errors})
                d.num(v);
    return d.h;
}

}  // namespace

int main(int argc, char** argv) {
    bool snmp = false, digest = false;
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--snmp") == 0)
            snmp = true;
        else if (std::strcmp(argv[i], "--digest") == 0)
            digest = true;
        else
            args.emplace_back(argv[i]);
    }
    std::string spec = !args.empty()
                           ? args[0]
                           : std::string(LOOM_SOURCE_DIR) + "/configs/clusters/meta-98k-roce.yaml";
    int steps = args.size() > 1 ? std::atoi(args[1].c_str()) : 20;
    auto inv = inventory::loadClusterSpecFile(spec);
    if (!inv) {
        std::fprintf(stderr, "%s: %s\n", spec.c_str(), inv.error().toString().c_str());
        return 2;
    }
    // The whole hall in service (what the rollout of run_scale_live.sh leaves).
    for (auto& r : inv->racks) r.state = "in_service";
    for (auto& h : inv->hosts) h.state = "in_service";
    for (auto& l : inv->links) l.state = "active";
    auto L = std::make_shared<const HallLayout>(HallLayout::build(*inv));
    inv = {};

    std::size_t slot0 = 0, cabled = 0, uncabled = 0;
    for (const auto& p : L->ports()) {
        if (p.number == 0)
            ++slot0;
        else if (p.linkIndex != kNoIndex)
            ++cabled;
        else
            ++uncabled;
    }
    std::size_t nicLinks = 0;
    for (const auto& l : L->links()) nicLinks += l.gpu != kNoIndex;
    std::printf(
        "layout: %zu GPUs, %zu switches, %zu port slots (slot 0: %zu, cabled: %zu, "
        "uncabled: %zu), %zu backend links (%zu with a NIC end)\n",
        L->gpuCount(), L->switches().size(), L->portCount(), slot0, cabled, uncabled,
        L->linkCount(), nicLinks);

    std::vector<FailureEvent> events;
    std::vector<Rollup> rollups;
    const double heap0 = heapMB();
    TelemetryHub hub(L);
    hub.addEventListener([&](const FailureEvent& e) { events.push_back(e); });
    const double heapEmpty = heapMB();
    Simulator sim(L);
    const double heapSim = heapMB();
    std::int64_t t = 1'700'000'000'000;
    double cpu = 0, wall = 0, tickCpu = 0;
    std::uint64_t samples = 0;
    for (int i = 0; i < steps; ++i) {
        t += 1000;
        sim.step(t, [&](std::string_view chunk) {
            const double c0 = cpuSeconds();
            const auto w0 = std::chrono::steady_clock::now();
            auto r = hub.ingestText(chunk, t);
            if (r) samples += r->samples;
            cpu += cpuSeconds() - c0;
            wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
        });
        const double c1 = cpuSeconds();
        hub.tick(t);
        tickCpu += cpuSeconds() - c1;
        for (auto& r : hub.takeRollups()) rollups.push_back(std::move(r));
    }
    const double heapAfter = heapMB();

    auto reported = [&] {
        std::size_t any = 0;
        std::vector<std::size_t> per(kPortCounterCount);
        for (std::uint32_t p = 0; p < L->portCount(); ++p) {
            bool a = false;
            for (int c = 0; c < kPortCounterCount; ++c)
                if (!std::isnan(hub.portValue(p, static_cast<PortCounter>(c)))) {
                    ++per[c];
                    a = true;
                }
            any += a;
        }
        std::printf("%zu port slots reported; per counter:", any);
        for (auto n : per) std::printf(" %zu", n);
        std::printf("\n");
    };
    std::printf("after %d steps (%llu samples): ", steps, static_cast<unsigned long long>(samples));
    reported();
    std::printf(
        "hub memoryBytes: %.1f MB; heap: hub empty %.1f MB, simulator %.1f MB, hub "
        "after the steps %.1f MB\n",
        static_cast<double>(hub.memoryBytes()) / 1e6, heapEmpty - heap0, heapSim - heapEmpty,
        heapAfter - heapSim + (heapEmpty - heap0));
    std::printf("per step: ingest %.1f ms CPU (%.1f ms wall), tick %.1f ms CPU\n",
                cpu / steps * 1e3, wall / steps * 1e3, tickCpu / steps * 1e3);
    if (snmp) {
        const double c0 = cpuSeconds();
        snmpWalks(hub, *L, t);
        const double c1 = cpuSeconds();
        const double heapSnmp = heapMB();
        std::printf("after two snmp walks of every switch (%.1f s CPU): ", c1 - c0);
        reported();
        std::printf("hub memoryBytes: %.1f MB; heap: hub %.1f MB\n",
                    static_cast<double>(hub.memoryBytes()) / 1e6,
                    heapSnmp - heapSim + (heapEmpty - heap0));
    }
    if (digest) {
        SimulatorConfig full;
        full.fullFidelity = true;
        full.seed = 7;
        Simulator sim2(L, full);
        for (int i = 0; i < 3; ++i) {
            t += 1000;
            sim2.step(t, [&](std::string_view chunk) { (void)hub.ingestText(chunk, t); });
            hub.tick(t);
        }
        // Odd values on a few ports and GPUs of each kind.
        std::string page;
        const char* odd[] = {
            "NaN",        "-1",         "1.5",        "+Inf",  "-0", "9007199254740992",
            "4294967295", "4294967294", "4294967296", "1e300", "0"};
        int k = 0;
        for (std::uint32_t s = 0; s < L->switches().size(); s += 37)
            for (const char* m :
                 {"loom_port_oper_status", "loom_port_in_errors_total", "loom_port_in_octets_total",
                  "loom_port_speed_bps", "ifHighSpeed", "loom_port_fec_uncorrectable_total"}) {
                const int i = k++;
                page += std::string(m) + "{switch=\"" + L->switches()[s].name + "\",port=\"p" +
                        std::to_string(1 + i % 3) + "\"} " + odd[i % 11] + "\n";
            }
        for (std::uint32_t g = 0; g < L->gpuCount(); g += 1013) {
            const auto& name = L->gpuNames()[g];
            const auto& host = L->gpuHost()[g];
            page += "DCGM_FI_DEV_GPU_TEMP{gpu=\"" + name.substr(host.size() + 4) +
                    "\",Hostname=\"" + host + "\"} " + odd[k++ % 11] + "\n";
            page += "DCGM_FI_DEV_POWER_VIOLATION{gpu=\"" + name.substr(host.size() + 4) +
                    "\",Hostname=\"" + host + "\"} " + odd[k++ % 11] + "\n";
        }
        t += 1000;
        (void)hub.ingestText(page, t);
        hub.tick(t);
        // The NIC ends (node_exporter's InfiniBand collector) of every 41st GPU: up, then some
        // down, flapping and with errors, then up again with counters restarted; ticks through
        // the flapping hold-down.
        for (int round = 0; round < 4; ++round) {
            t += 5000;
            for (std::uint32_t g = round; g < L->gpuCount(); g += 41) {
                const auto& name = L->gpuNames()[g];
                const auto& host = L->gpuHost()[g];
                const std::string dev =
                    "{device=\"mlx5_" + name.substr(host.size() + 4) + "\",port=\"1\"} ";
                const bool bad = round == 1 && g % 3 == 0;
                const double base = round == 3 ? 1e6 : 1e12 + round * 4e10;
                std::string pg;
                auto put = [&](const char* m, double v) {
                    pg += m + dev + std::to_string(v) + "\n";
                };
                put("node_infiniband_state_id", bad ? 1 : 4);
                put("node_infiniband_link_downed_total", round >= 1 && g % 5 == 0 ? 2 : 0);
                put("node_infiniband_port_data_received_bytes_total", base + g);
                put("node_infiniband_port_data_transmitted_bytes_total", base * 0.9 + g);
                put("node_infiniband_port_transmit_wait_total", round * 1000.0 + g % 17);
                put("node_infiniband_port_errors_received_total", round == 2 ? g % 9 * 1e4 : 0);
                put("node_infiniband_link_error_recovery_total", round);
                if (g % 2 == 0) put("node_infiniband_rate_bytes_per_second", 5e10);
                (void)hub.ingestText(pg, t, {.host = host});
            }
            hub.tick(t);
        }
        for (int i = 0; i < 120; ++i) hub.tick(t += 1000);
        for (auto& r : hub.takeRollups()) rollups.push_back(std::move(r));
        std::printf("digest: %016llx (%zu events, %zu rollups)\n",
                    static_cast<unsigned long long>(digestOf(hub, *L, t, events, rollups)),
                    events.size(), rollups.size());
    }
    return 0;
}
