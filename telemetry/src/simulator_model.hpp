// The simulator's world state (Simulator::Model), shared by simulator_model.cpp (built from a
// layout, following layout changes) and simulator.cpp (one step of the world, written as
// Prometheus text). Internal to the telemetry module.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/telemetry/simulator.hpp"

namespace loom::telemetry {
namespace sim {

// What a rack's lifecycle state lets the simulated world do there.
enum class RackMode : std::uint8_t { Off, Idle, BurnIn, Serving };

inline RackMode rackMode(std::string_view state) {
    if (state == "in_service") return RackMode::Serving;
    if (state == "burn_in") return RackMode::BurnIn;
    if (state == "powered" || state == "validated" || state == "draining" || state == "drained" ||
        state == "maintenance")
        return RackMode::Idle;
    return RackMode::Off;
}

struct Job {
    std::uint64_t serial = 0;
    std::vector<std::uint32_t> racks;
    std::int64_t startMs = 0, endMs = 0, periodMs = 5000, offsetMs = 0;
    bool spansRacks = false, spansZones = false;
    bool live = true;
    // A job of another source (setHeldRacks): run as one of ours, never reported by
    // runningJobs(), never ended by the simulated world.
    bool held = false;
};

}  // namespace sim

struct Simulator::Model {
    std::shared_ptr<const HallLayout> L;
    std::mt19937_64 rng;
    // The exporters' "{...} " label prefixes of every GPU and port slot, in one buffer: at 98k
    // GPUs a std::string each was ~700k strings (a 32-byte header apiece, most on the heap).
    std::string labelText;
    std::vector<std::uint32_t> gpuLabelAt, portLabelAt;  // offsets, one past the last entry too
    std::string_view gpuLabel(std::uint32_t g) const {
        return std::string_view(labelText).substr(gpuLabelAt[g], gpuLabelAt[g + 1] - gpuLabelAt[g]);
    }
    std::string_view portLabel(std::uint32_t p) const {
        return std::string_view(labelText).substr(portLabelAt[p],
                                                  portLabelAt[p + 1] - portLabelAt[p]);
    }
    std::vector<std::uint32_t> emitPorts;  // port slots written each step
    std::vector<sim::Job> jobs;
    std::vector<std::int32_t> rackJob;    // -1 idle
    std::vector<sim::RackMode> rackMode;  // from the layout's rack states
    std::uint32_t gpusBusy = 0;
    // GPU failure state.
    std::vector<std::uint8_t> xid;
    std::vector<std::int64_t> xidUntil, eccUntil, hotUntil;
    std::vector<std::uint16_t> ecc;
    std::vector<std::uint8_t> lastXid, lastEcc;  // what was last written (live mode)
    // Injected stragglers (injectStraggler): active causes per GPU and per link this step
    // (0 none, 1 + cause) and the correctable-ECC counter they drive.
    struct Injection {
        StragglerCause cause;
        std::uint32_t target;
        std::int64_t startMs, endMs;
    };
    std::vector<Injection> stragglers;
    std::vector<std::uint8_t> strag, linkStrag;
    std::int64_t nextInjectMs = 0;
    std::uint32_t injected = 0;  // demo injections so far (cycles the causes)
    // Port error, discard and PFC pause counters (written only when they moved).
    std::vector<double> errCnt, discCnt, pfcCnt;
    std::vector<std::uint8_t> portMoved;
    std::vector<double> sbe, lastSbe;
    std::vector<double> energy;
    // Links and ports.
    std::vector<float> linkUtil;
    std::vector<std::uint8_t> linkDown;
    std::vector<double> inOct, outOct;
    std::vector<std::pair<std::uint32_t, std::int64_t>> flaps;     // link, start
    std::vector<std::pair<std::uint32_t, std::int64_t>> rtswDown;  // switch, until
    std::vector<std::uint32_t> rtsws, flappable;
    std::int64_t lastMs = 0;
    std::uint64_t stepNo = 0;
    std::string chunk;  // the chunked step's buffer, reused
};

}  // namespace loom::telemetry
