// TelemetryHub: construction, layout changes, event bookkeeping, ingest and the once-a-second
// tick (time-based rules, rollups). The rules are in hub_rules.hpp, the state in
// hub_state.hpp, the packed arrays and /metrics in hub_packing.cpp.
#include "loom/telemetry/telemetry_hub.hpp"

#include <charconv>
#include <iterator>
#include <unordered_set>

#include "hub_rules.hpp"
#include "hub_state.hpp"
#include "loom/inventory/unix_time.hpp"

namespace loom::telemetry {
using namespace detail;

TelemetryHub::TelemetryHub(std::shared_ptr<const HallLayout> layout, HubOptions options)
    : options_(std::move(options)),
      shared_(std::make_unique<Shared>()),
      state_(std::make_shared<State>(layout ? std::move(layout)
                                            : std::make_shared<const HallLayout>())) {
    if (!options_.clock) options_.clock = unixMs;
    state_->history = std::make_shared<HubHistory>(state_->nG, state_->nL);
}

TelemetryHub::~TelemetryHub() = default;

std::int64_t TelemetryHub::now(std::int64_t nowMs) const {
    return nowMs != 0 ? nowMs : options_.clock();
}

std::shared_ptr<TelemetryHub::State> TelemetryHub::current() const {
    std::lock_guard lk(stateMutex_);
    return state_;
}

std::shared_ptr<const HallLayout> TelemetryHub::layout() const { return current()->L; }

// A restore, a close by hand or a close another loomd stored: the ingest lock, then the rule
// state of the current layout changes as the rules' own would. The work delivers nothing
// itself; its caller delivers what it changed.
struct TelemetryHub::OutsideWork {
    explicit OutsideWork(TelemetryHub& hub)
        : ingest(hub.ingestMutex_),
          state(hub.current()),
          work(*state, hub.options_.detection, hub.shared_->open, hub.eventsMutex_, none,
               hub.shared_->keyPrefix, hub.shared_->keySeq) {}

    std::unique_lock<std::mutex> ingest;
    std::shared_ptr<State> state;
    std::vector<FailureEvent> none;
    HubWork work;
};

namespace {

// IF-MIB's ifOperStatus names (RFC 2863) as numbers; 4 (unknown) for any other word.
double ifOperStatusValue(std::string_view state) {
    static constexpr std::string_view kStates[] = {
        "up", "down", "testing", "unknown", "dormant", "notPresent", "lowerLayerDown"};
    for (std::size_t i = 0; i < std::size(kStates); ++i)
        if (state == kStates[i]) return static_cast<double>(i + 1);
    return 4;
}

using State = TelemetryHub::State;

// A new layout with the same structure (a state refresh): every index means the same GPU,
// port and link, so the values carry over by index — without a copy: `next` (a Carried State)
// shares the atomic arrays readers see with `old` (a reader still holding `old` reads the same
// values) and takes over the arrays only the ingest mutex's holder touches, which the caller
// holds and which nothing reads through `old` once `next` is current. At 98k GPUs a copy was
// ~114 MB per refresh, two States' worth live while it ran.
void carryByIndex(State& old, State& next) {
    next.gpu = old.gpu;
    next.gpuSeen = old.gpuSeen;
    next.gpuEventHealth = old.gpuEventHealth;
    next.gpuOpen = std::move(old.gpuOpen);
    next.gpuCrit = std::move(old.gpuCrit);
    next.tempLevel = std::move(old.tempLevel);
    next.gpuSuppressed = std::move(old.gpuSuppressed);
    next.gpuOrigin = std::move(old.gpuOrigin);
    next.nvPrev = std::move(old.nvPrev);
    next.nvPrevMs = std::move(old.nvPrevMs);
    next.nvRate = std::move(old.nvRate);
    next.throttleRun = std::move(old.throttleRun);
    next.clearSince = std::move(old.clearSince);
    next.sbePrev = std::move(old.sbePrev);
    next.sbePrevMs = std::move(old.sbePrevMs);
    next.sbeRate = std::move(old.sbeRate);
    next.gpuSrc = std::move(old.gpuSrc);
    next.gpuSrcAt = std::move(old.gpuSrcAt);
    {
        // The API reads gpuJob through any State it holds: copied, not taken.
        std::lock_guard lk(old.jobMutex);
        next.gpuJob = old.gpuJob;
    }
    next.port = old.port;
    next.utilIn = old.utilIn;
    next.utilOut = old.utilOut;
    next.portSeen = old.portSeen;
    next.portDown = old.portDown;
    next.pdet = std::move(old.pdet);
    next.gpuLink = old.gpuLink;
    next.nicUp = std::move(old.nicUp);
    next.nicDownBy = std::move(old.nicDownBy);
    next.originNames = old.originNames;
    next.nicDowned = std::move(old.nicDowned);
    next.nicFlapAt = std::move(old.nicFlapAt);
    next.nicRates = std::move(old.nicRates);
    next.nicUtil = old.nicUtil;
    next.nicSeen = old.nicSeen;
    next.linkOpen = std::move(old.linkOpen);
    next.linkSuppressed = std::move(old.linkSuppressed);
    next.linkOrigin = std::move(old.linkOrigin);
    next.linkDegraded = old.linkDegraded;
    // The minute in progress goes on: a rollout refreshes states every few seconds, and a
    // fresh State here lost every rollup minute it cut.
    next.minuteStart = old.minuteStart;
    next.rollSamples = old.rollSamples;
    next.rackUtilSum = std::move(old.rackUtilSum);
    next.rackTempSum = std::move(old.rackTempSum);
    next.rackPowerSum = std::move(old.rackPowerSum);
    next.rackUtilMax = std::move(old.rackUtilMax);
    next.rackTempMax = std::move(old.rackTempMax);
    next.rackUtilN = std::move(old.rackUtilN);
    next.rackTempN = std::move(old.rackTempN);
    next.rackPowerN = std::move(old.rackPowerN);
    next.rackUnhealthyMax = std::move(old.rackUnhealthyMax);
    next.rackReporting = std::move(old.rackReporting);
    next.swUtilSum = std::move(old.swUtilSum);
    next.swErrStart = std::move(old.swErrStart);
    next.swDiscStart = std::move(old.swDiscStart);
    next.swPfcStart = std::move(old.swPfcStart);
    next.swUtilMax = std::move(old.swUtilMax);
    next.swUtilN = std::move(old.swUtilN);
    next.swDownMax = std::move(old.swDownMax);
    next.history = old.history;
}

// Another structure: carry values over by name, so a layout change does not blank the maps
// for a scrape.
void carryByName(const State& old, State& next) {
    next.originNames = old.originNames;
    const auto& oldNames = old.L->gpuNames();
    std::vector<std::uint32_t> gpuMap(old.nG, kNoIndex), linkMap(old.nL, kNoIndex);
    for (std::uint32_t l = 0; l < old.nL; ++l)
        linkMap[l] = next.L->linkByName(old.L->links()[l].name);
    for (std::uint32_t g = 0; g < old.nG; ++g) {
        auto ng = next.L->gpuByName(oldNames[g]);
        gpuMap[g] = ng;
        if (ng == kNoIndex) continue;
        for (int f = 0; f < kGpuFieldCount; ++f) (*next.gpu)[f].store(ng, (*old.gpu)[f].load(g));
        next.gpuSeen[ng].store(old.gpuSeen[g].load(kRelaxed), kRelaxed);
        next.gpuEventHealth[ng].store(old.gpuEventHealth[g].load(kRelaxed), kRelaxed);
        next.gpuOpen[ng] = old.gpuOpen[g];
        next.gpuCrit[ng] = old.gpuCrit[g];
        next.tempLevel[ng] = old.tempLevel[g];
        next.gpuSuppressed[ng] = old.gpuSuppressed[g];
        next.gpuOrigin[ng] = old.gpuOrigin[g];
        next.throttleRun[ng] = old.throttleRun[g];
        next.sbePrev[ng] = old.sbePrev[g];
        next.sbePrevMs[ng] = old.sbePrevMs[g];
        next.sbeRate[ng] = old.sbeRate[g];
        next.gpuSrc[ng] = old.gpuSrc[g];
        next.gpuSrcAt[ng] = old.gpuSrcAt[g];
        std::lock_guard lk(old.jobMutex);
        next.gpuJob[ng] = old.gpuJob[g];
    }
    for (std::uint32_t p = 0; p < old.nP; ++p) {
        const auto& op = old.L->ports()[p];
        auto np =
            next.L->portByName(old.L->switches()[op.switchIndex].name, std::to_string(op.number));
        if (np == kNoIndex || op.number == 0) continue;
        for (int c = 0; c < kPortCounterCount; ++c)
            (*next.port)[c].store(np, (*old.port)[c].load(p));
        next.utilIn[np].store(old.utilIn[p].load(kRelaxed), kRelaxed);
        next.utilOut[np].store(old.utilOut[p].load(kRelaxed), kRelaxed);
        next.portSeen[np].store(old.portSeen[p].load(kRelaxed), kRelaxed);
        next.portDown[np].store(old.portDown[p].load(kRelaxed), kRelaxed);
        next.pdet[np] = old.pdet[p];
        auto ol = op.linkIndex, nl = next.L->ports()[np].linkIndex;
        if (ol != kNoIndex && nl != kNoIndex) {
            next.linkOpen[nl] = old.linkOpen[ol];
            next.linkSuppressed[nl] = old.linkSuppressed[ol];
            next.linkOrigin[nl] = old.linkOrigin[ol];
            next.linkDegraded[nl].store(old.linkDegraded[ol].load(kRelaxed), kRelaxed);
        }
    }
    next.history = std::make_shared<HubHistory>(next.nG, next.nL);
    if (old.history) carryHistory(*old.history, *next.history, gpuMap, linkMap);
}

}  // namespace

void TelemetryHub::setLayout(std::shared_ptr<const HallLayout> layout) {
    std::unique_lock ingest(ingestMutex_);
    auto old = current();
    const bool sameStructure = layout && old->L->layoutVersion() == layout->layoutVersion() &&
                               old->nG == layout->gpuCount() && old->nP == layout->portCount() &&
                               old->nL == layout->linkCount();
    auto next = std::make_shared<State>(std::move(layout),
                                        sameStructure ? State::Fill::Carried : State::Fill::Fresh);
    if (sameStructure)
        carryByIndex(*old, *next);
    else
        carryByName(*old, *next);
    // Open events the old layout could not place (restored before the first layout arrived,
    // or an entity the old layout lacked) get their rule state here.
    // Then the links this layout put in service whose down state was already known fail now.
    std::vector<FailureEvent> events;
    {
        HubWork work(*next, options_.detection, shared_->open, eventsMutex_, events,
                     shared_->keyPrefix, shared_->keySeq);
        auto now = this->now(0);
        {
            std::lock_guard lk(eventsMutex_);
            for (const auto& [k, e] : shared_->open) work.markOpen(e, now);
        }
        work.openDownLinksInService(now);
        work.finish();
        shared_->opened.fetch_add(work.opened(), kRelaxed);
        shared_->closed.fetch_add(work.closed(), kRelaxed);
    }
    {
        std::lock_guard lk(stateMutex_);
        state_ = std::move(next);
    }
    deliver(ingest, events);
}

std::size_t TelemetryHub::restoreOpenEvents(const std::vector<FailureEvent>& events) {
    OutsideWork w(*this);
    std::vector<FailureEvent> restored;
    {
        std::lock_guard lk(eventsMutex_);
        auto now = this->now(0);
        for (const auto& e : events) {
            if (!e.open()) continue;
            // An event this hub opened is held, or closed by it with the close on its way to
            // the database: a read of the row before that close takes nothing back.
            if (!e.key.empty() && e.key.starts_with(shared_->keyPrefix) &&
                !shared_->open.contains(e.kind + '\0' + e.location))
                continue;
            // Already known (this hub opened it, or a second restore): keep the live one, but
            // learn the stored id.
            auto [it, inserted] = shared_->open.try_emplace(e.kind + '\0' + e.location, e);
            if (!inserted) {
                if (it->second.id == 0 && (it->second.key == e.key || e.key.empty()))
                    it->second.id = e.id;
                continue;
            }
            w.work.markOpen(e, now);
            restored.push_back(e);
        }
    }
    const auto n = restored.size();
    shared_->restored.fetch_add(n, kRelaxed);
    if (n == 0) return 0;
    // Views that mirror the open events took their copy when they attached, which may have been
    // before this restore (the database came late, or the view came first): they hear it now,
    // in order with the events the rules deliver (the delivery lock before the ingest lock goes,
    // as in deliver).
    std::unique_lock dl(shared_->deliverMutex);
    w.ingest.unlock();
    for (const auto& l : shared_->restoreListeners) l(restored);
    return n;
}

void TelemetryHub::learnStoredIds(const std::vector<FailureEvent>& stored) {
    std::lock_guard lk(eventsMutex_);
    for (const auto& e : stored) {
        if (e.id == 0 || e.key.empty()) continue;
        auto it = shared_->open.find(e.kind + '\0' + e.location);
        if (it != shared_->open.end() && it->second.id == 0 && it->second.key == e.key)
            it->second.id = e.id;
    }
}

bool TelemetryHub::closedByHand(const std::string& kind, const std::string& location,
                                std::int64_t id) {
    OutsideWork w(*this);
    std::vector<FailureEvent> closed;
    {
        std::lock_guard lk(eventsMutex_);
        auto it = shared_->open.find(kind + '\0' + location);
        if (it == shared_->open.end()) return false;
        // A different stored row (an older event of the same kind and place): not ours to drop.
        if (id != 0 && it->second.id != 0 && it->second.id != id) return false;
        closed.push_back(std::move(it->second));
        shared_->open.erase(it);
    }
    w.work.forgetOpen(kind, location, /*holdBack=*/true);
    shared_->closedByHand.fetch_add(1, kRelaxed);
    // The listeners mirror the open events (the jobs view counts a job's): they hear the close
    // too, or a job would count an event closed by hand until a restart (issue 39 item 2). The
    // writer's close of the row finds it closed already and changes nothing.
    auto& e = closed.front();
    e.closedAtMs = std::max(now(0), e.openedAtMs);
    e.closeReason = "closed by hand";
    deliver(w.ingest, closed);
    return true;
}

bool TelemetryHub::closedElsewhere(const FailureEvent& stored, bool byHand) {
    if (stored.open() || stored.id == 0) return false;
    OutsideWork w(*this);
    std::vector<FailureEvent> closed;
    {
        std::lock_guard lk(eventsMutex_);
        auto it = shared_->open.find(stored.kind + '\0' + stored.location);
        if (it == shared_->open.end()) return false;
        // The row it holds, by id; held without an id yet (this hub opened it and the writer
        // has not said which row it is), the one opened before that close. An event opened
        // since the close is a new one.
        const auto& held = it->second;
        if (held.id != 0 ? held.id != stored.id : held.openedAtMs >= stored.closedAtMs)
            return false;
        closed.push_back(std::move(it->second));
        shared_->open.erase(it);
    }
    w.work.forgetOpen(stored.kind, stored.location, byHand);
    shared_->closedElsewhere.fetch_add(1, kRelaxed);
    // The listeners mirror the open events (the jobs view): they hear the close as stored. The
    // writer's close of the row finds it closed already and changes nothing.
    auto& e = closed.front();
    e.id = stored.id;
    e.closedAtMs = std::max(stored.closedAtMs, e.openedAtMs);
    e.closeReason = stored.closeReason;
    deliver(w.ingest, closed);
    return true;
}

void TelemetryHub::addEventListener(EventListener l) {
    std::lock_guard lk(shared_->deliverMutex);
    shared_->listeners.push_back(std::move(l));
}

void TelemetryHub::addRestoreListener(RestoreListener l) {
    std::lock_guard lk(shared_->deliverMutex);
    shared_->restoreListeners.push_back(std::move(l));
}

std::vector<FailureEvent> TelemetryHub::openEvents() const {
    std::lock_guard lk(eventsMutex_);
    std::vector<FailureEvent> v;
    v.reserve(shared_->open.size());
    for (const auto& [k, e] : shared_->open) v.push_back(e);
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
        return std::tie(a.openedAtMs, a.kind, a.location) <
               std::tie(b.openedAtMs, b.kind, b.location);
    });
    return v;
}

void TelemetryHub::deliver(std::unique_lock<std::mutex>& ingestLock,
                           std::vector<FailureEvent>& events) {
    if (events.empty()) return;
    // Opens and closes are counted by the work that made them: an open event here may be a
    // link_down sent again with new ends, a close one made by hand (closedByHand counts it).
    // Take the delivery lock before letting the next ingest in, so listeners see events in the
    // order the rules produced them.
    std::unique_lock dl(shared_->deliverMutex);
    ingestLock.unlock();
    for (const auto& e : events)
        for (const auto& l : shared_->listeners) l(e);
}

Result<IngestReport> TelemetryHub::ingestText(std::string_view body, std::int64_t nowMs,
                                              IngestIdentity identity) {
    auto t0 = std::chrono::steady_clock::now();
    std::int64_t now = this->now(nowMs);
    IngestReport rep;
    std::vector<FailureEvent> events;
    std::unique_lock lock(ingestMutex_);
    auto st = current();
    State& s = *st;
    const HallLayout& L = *s.L;
    HubWork work(s, options_.detection, shared_->open, eventsMutex_, events, shared_->keyPrefix,
                 shared_->keySeq);
    const auto& table = metricTable();
    work.setOrigin(identity.origin);
    work.setArrival(now);
    // The simulator does not speak for a GPU or link on which a push or a scrape holds an
    // event open: that source says when it recovered (issue 39).
    const bool simulated = originClass(identity.origin) == kOriginSim;
    const std::uint8_t sourceTag = detail::sourceTag(identity.source);

    std::string_view lastName;
    MetricInfo info;
    std::string_view lastHost, lastSwitch;
    std::uint32_t lastHostIdx = kNoIndex, lastSwitchIdx = kNoIndex;
    std::uint32_t targetHostIdx = kNoIndex;  // identity.host's index, once looked up
    std::string scratch;
    // snmp_exporter pages: port samples held until the page is read (conflict check).
    struct Held {
        std::uint32_t port;
        std::uint8_t counter;
        double value;
        std::int64_t t;
    };
    std::vector<Held> held;
    std::unordered_map<std::uint32_t, std::pair<std::uint64_t, std::string>> pagePorts;
    std::unordered_set<std::uint32_t> conflicts;
    // node_exporter pages: NIC samples held until the page is read, since which device is which
    // NIC needs every device's node_infiniband_info line (inventory/nic_identity.hpp).
    struct NicHost {
        std::uint32_t host;
        std::vector<std::string> device, hcaType;  // device names as the page gives them
    };
    struct NicHeld {
        std::uint32_t host;  // index into nicHosts
        std::uint32_t device;
        std::uint8_t counter;
        double value;
        std::int64_t t;
    };
    std::vector<NicHost> nicHosts;
    std::unordered_map<std::uint32_t, std::uint32_t> nicHostSlot;  // layout host -> nicHosts
    std::vector<NicHeld> nicHeld;
    UnknownCatalog::Page names;
    auto unknown = [&](UnknownReason r, std::string_view what, std::string_view name,
                       std::string_view detail = {}) {
        names.add(r, name.substr(0, 128), detail);
        if (r == UnknownReason::NotAPort || r == UnknownReason::PortConflict) {
            ++rep.ignored;  // by design: listed, never counted as unknown
            return;
        }
        ++rep.unknown[static_cast<int>(r)];
        if (rep.unknownExamples.size() < 10) {
            std::string ex = std::string(what) + " " + std::string(name.substr(0, 128));
            if (std::find(rep.unknownExamples.begin(), rep.unknownExamples.end(), ex) ==
                rep.unknownExamples.end())
                rep.unknownExamples.push_back(std::move(ex));
        }
    };
    // Escaped label values are rare (never in host or switch names); resolve them on demand.
    auto labelValue = [&](const PromLabel* l) -> std::string_view {
        if (!l) return {};
        if (!l->escaped) return l->value;
        unescapeLabelValue(l->value, scratch);
        return scratch;
    };

    auto parsed = parsePromText(
        body,
        [&](const PromSample& smp) {
            if (!sameText(smp.name, lastName)) {
                lastName = smp.name;
                auto it = table.find(smp.name);
                info = it == table.end() ? MetricInfo{} : it->second;
            }
            if (info.type == MetricInfo::Ignored) {
                ++rep.ignored;
                return;
            }
            std::int64_t t = smp.hasTimestamp ? smp.timestampMs : now;
            double v = smp.value * info.scale;
            if (info.type == MetricInfo::Gpu) {
                std::uint32_t g = kNoIndex;
                auto host = labelValue(smp.findLabel("Hostname"));
                if (host.empty() && smp.label("UUID").empty()) host = identity.host;
                auto gpuLabel = smp.label("gpu");
                int gi = -1;
                std::uint32_t hostIdx = kNoIndex;
                if (!host.empty()) {
                    if (!sameText(host, lastHost) || lastHostIdx == kNoIndex) {
                        lastHostIdx = L.hostByName(host);
                        lastHost = host.data() == scratch.data() ? std::string_view{} : host;
                    }
                    hostIdx = lastHostIdx;
                    if (hostIdx != kNoIndex && parseSmallInt(gpuLabel, gi))
                        g = L.gpuOfHost(hostIdx, gi);
                }
                if (g == kNoIndex) {
                    auto uuid = smp.label("UUID");
                    if (!uuid.empty()) g = L.gpuByUuid(uuid);
                    // A scraped page is its target host's whatever Hostname no host of the
                    // inventory it names: in Kubernetes dcgm-exporter's Hostname is its pod's
                    // name ("nvidia-dcgm-exporter-cwbcm") unless NODE_NAME is set
                    // (NVIDIA/dcgm-exporter#78, #129); on a cloud VM the OS's own name
                    // ("ip-172-31-54-152"). As Prometheus's `instance`, the target says whose
                    // page it is. A Hostname that names another known host still wins.
                    if (g == kNoIndex && hostIdx == kNoIndex && !identity.host.empty() &&
                        parseSmallInt(gpuLabel, gi)) {
                        if (targetHostIdx == kNoIndex) targetHostIdx = L.hostByName(identity.host);
                        g = L.gpuOfHost(targetHostIdx, gi);
                    }
                    if (g == kNoIndex) {
                        if (!host.empty() && hostIdx == kNoIndex)
                            unknown(UnknownReason::UnknownHost, "host", host);
                        else if (!host.empty())
                            unknown(UnknownReason::UnknownGpu, "gpu",
                                    std::string(host) + "/" + std::string(gpuLabel));
                        else if (!uuid.empty())
                            unknown(UnknownReason::UnknownUuid, "uuid", uuid);
                        else
                            unknown(UnknownReason::MissingLabels, "metric", smp.name);
                        return;
                    }
                }
                if (simulated && work.gpuReal(g)) return;
                if (!work.gpuSourceTakes(g, sourceTag)) return;  // a second exporter of it
                auto f = static_cast<GpuField>(info.id);
                (*s.gpu)[info.id].store(g, static_cast<float>(v));
                s.gpuSeen[g].store(now, kRelaxed);  // when it arrived: HubWork::setArrival
                if (s.gpuOpen[g] & kMissing) work.gpuClose(g, kMissing, t);  // reported again
                if (f == GpuField::Xid || f == GpuField::EccDbe || f == GpuField::RowRemapFailure ||
                    f == GpuField::Temp || f == GpuField::NvlinkCrc || f == GpuField::EccSbe ||
                    f == GpuField::ClockEventReasons)
                    work.gpuSample(g, f, v, t);
                // dcgm-exporter's HPC job mapping labels every field of a GPU with its job; a
                // sample without the label says the GPU has none (the mapping file is gone).
                if (auto job = labelValue(smp.findLabel("hpc_job")); job != s.gpuJob[g]) {
                    std::lock_guard jl(s.jobMutex);
                    s.gpuJob[g].assign(job.data(), job.size());
                }
                ++rep.applied;
                return;
            }
            if (info.type == MetricInfo::Nic) {
                // node_exporter names no host: the target's (or a pushed page's `instance`).
                std::string_view host = identity.host;
                if (host.empty()) {
                    host = labelValue(smp.findLabel("instance"));
                    host = host.substr(0, host.rfind(':'));
                }
                auto dev = smp.label("device");
                if (host.empty() || dev.empty()) {
                    unknown(UnknownReason::MissingLabels, "metric", smp.name);
                    return;
                }
                const auto h = L.hostByName(host);
                if (h == kNoIndex) {
                    unknown(UnknownReason::UnknownHost, "host", host);
                    return;
                }
                // Which NIC the device is, is known once the page is read (its hca_type, its
                // PCI address, the host model's NICs): held until then.
                auto [slot, fresh] =
                    nicHostSlot.try_emplace(h, static_cast<std::uint32_t>(nicHosts.size()));
                if (fresh) nicHosts.push_back(NicHost{h, {}, {}});
                const auto hi = nicHosts.begin() + slot->second;
                auto di = std::find(hi->device.begin(), hi->device.end(), dev);
                if (di == hi->device.end()) {
                    if (hi->device.size() >= 64) {  // no host has more: a bound, not a rule
                        unknown(UnknownReason::UnknownPort, "nic",
                                std::string(host) + "/" + std::string(dev.substr(0, 64)),
                                "more than 64 RDMA devices on one host");
                        return;
                    }
                    di = hi->device.insert(hi->device.end(), std::string(dev.substr(0, 64)));
                    hi->hcaType.emplace_back();
                }
                const auto dIdx = static_cast<std::uint32_t>(di - hi->device.begin());
                if (info.id == detail::kNicInfo) {
                    hi->hcaType[dIdx] = std::string(smp.label("hca_type").substr(0, 32));
                    ++rep.ignored;  // read, not stored
                    return;
                }
                nicHeld.push_back(
                    {static_cast<std::uint32_t>(hi - nicHosts.begin()), dIdx, info.id, v, t});
                return;
            }
            // Switch port: Loom's `port` label, or an interface as the switch names it (ifName,
            // snmp_exporter's IF-MIB lookup), read by the switch's port naming scheme.
            const PromLabel* swl = smp.findLabel("switch");
            if (!swl) swl = smp.findLabel("instance");
            const PromLabel* pl = smp.findLabel("port");
            const PromLabel* ifl = pl ? nullptr : smp.findLabel("ifName");
            if (!pl) pl = ifl;
            if ((!swl && identity.switchName.empty()) || !pl) {
                unknown(UnknownReason::MissingLabels, "metric", smp.name);
                return;
            }
            // No switch label: the page is the scrape target's switch (snmp_exporter's pages
            // carry ifName and ifIndex only).
            std::string_view sw = swl ? labelValue(swl) : identity.switchName;
            if (swl && swl->name == "instance") sw = sw.substr(0, sw.rfind(':'));  // "host:9116"
            if (!sameText(sw, lastSwitch) || lastSwitchIdx == kNoIndex) {
                lastSwitchIdx = L.switchByName(sw);
                lastSwitch = swl && swl->escaped ? std::string_view{} : sw;
            }
            if (lastSwitchIdx == kNoIndex) {
                unknown(UnknownReason::UnknownSwitch, "switch", sw);
                return;
            }
            if (ifl && (info.id == static_cast<std::uint8_t>(PortCounter::OperStatus) ||
                        info.id == detail::kPortAdminStatus)) {
                // snmp_exporter's EnumAsStateSet (a generator option): one line per state with
                // the state as a label, 1 on the current one; the others say nothing.
                if (const auto st = smp.label(info.id == detail::kPortAdminStatus ? "ifAdminStatus"
                                                                                  : "ifOperStatus");
                    !st.empty()) {
                    if (v != 1) {
                        ++rep.ignored;
                        return;
                    }
                    v = ifOperStatusValue(st);
                }
            }
            if (ifl) {
                const auto ifName = labelValue(ifl);
                const auto ip = L.interfacePort(lastSwitchIdx, ifName, smp.label("ifAlias"));
                switch (ip.kind) {
                    case InterfacePort::NotAPort:
                    case InterfacePort::SubPort: {
                        const auto& naming = *L.switches()[lastSwitchIdx].naming;
                        unknown(UnknownReason::NotAPort, "interface",
                                std::string(sw) + "/" + std::string(ifName),
                                ip.kind == InterfacePort::SubPort
                                    ? "breakout sub-port of p" + std::to_string(ip.number)
                                    : "no front-panel port of scheme " +
                                          std::string(naming.scheme ==
                                                              inventory::PortNaming::Scheme::Default
                                                          ? "default"
                                                          : inventory::portNamingText(naming)));
                        return;
                    }
                    case InterfacePort::OutOfRange:
                        unknown(UnknownReason::UnknownPort, "port",
                                std::string(sw) + "/" + std::string(ifName),
                                "port " + std::to_string(ip.number) +
                                    " is above the model's port count");
                        return;
                    case InterfacePort::Uncabled:
                        if (ip.port == kNoIndex) {
                            ++rep.ignored;  // an uncabled port of a known switch
                            return;
                        }
                        break;
                    case InterfacePort::Tracked:
                        break;
                }
                // The simulator does not speak for a port a real source holds (issue 39).
                if (simulated && work.portReal(ip.port)) return;
                // Held until the page is read: two ifIndexes naming one port (a deleted
                // interface net-snmp keeps in ifTable beside its successor) are a conflict,
                // and neither is believed.
                std::uint64_t ifIndex = 0;  // the label's value + 1; 0 = none
                if (auto ix = smp.label("ifIndex"); !ix.empty() && ix.size() <= 10) {
                    std::uint64_t n = 0;
                    if (std::from_chars(ix.data(), ix.data() + ix.size(), n).ptr ==
                        ix.data() + ix.size())
                        ifIndex = n + 1;
                }
                if (ifIndex != 0) {
                    auto [it, fresh] = pagePorts.try_emplace(ip.port, ifIndex, std::string());
                    if (fresh) it->second.second = std::string(ifName.substr(0, 64));
                    if (it->second.first != ifIndex) {
                        if (conflicts.emplace(ip.port).second)
                            unknown(UnknownReason::PortConflict, "port", L.portName(ip.port),
                                    "ifIndex " + std::to_string(it->second.first - 1) + " (" +
                                        it->second.second + ") and ifIndex " +
                                        std::to_string(ifIndex - 1) + " (" +
                                        std::string(ifName.substr(0, 64)) +
                                        ") both name this port; neither is believed");
                        else
                            names.add(UnknownReason::PortConflict, L.portName(ip.port), {});
                        return;
                    }
                    held.push_back({ip.port, static_cast<std::uint8_t>(info.id), v, t});
                    return;
                }
                work.portSample(ip.port, static_cast<PortCounter>(info.id), v, t, sourceTag);
                ++rep.applied;
                return;
            }
            bool exists = false;
            auto p = L.portBySwitch(lastSwitchIdx, labelValue(pl), &exists);
            if (p == kNoIndex && exists) {
                ++rep.ignored;  // an uncabled port of a known switch: nothing to track
                return;
            }
            if (p == kNoIndex) {
                unknown(UnknownReason::UnknownPort, "port",
                        std::string(sw) + "/" + std::string(labelValue(pl)));
                return;
            }
            if (simulated && work.portReal(p)) return;
            work.portSample(p, static_cast<PortCounter>(info.id), v, t, sourceTag);
            ++rep.applied;
        },
        options_.limits);
    // The held NIC samples, each host's devices told apart by its model's NICs.
    std::vector<inventory::NicResolution> nicRoles;
    nicRoles.reserve(nicHosts.size());
    for (const auto& nh : nicHosts) {
        std::vector<inventory::RdmaDevice> devs;
        devs.reserve(nh.device.size());
        for (std::size_t d = 0; d < nh.device.size(); ++d)
            devs.push_back({nh.device[d], nh.hcaType[d]});
        nicRoles.push_back(inventory::resolveNicDevices(L.hostNics(nh.host), devs));
    }
    {
        for (const auto& h : nicHeld) {
            const auto& nh = nicHosts[h.host];
            const auto& roles = nicRoles[h.host];
            const std::string& hostName = L.hostName(nh.host);
            const auto& role = roles.devices[h.device];
            const std::string name = hostName + "/" + nh.device[h.device];
            if (!roles.hostProblem.empty()) {
                unknown(UnknownReason::NicIdentity, "host", hostName, roles.hostProblem);
                continue;
            }
            if (role.kind == inventory::DeviceRole::Frontend) {
                unknown(UnknownReason::NotAPort, "nic", name, role.why);
                continue;
            }
            if (role.kind != inventory::DeviceRole::Backend) {
                unknown(UnknownReason::UnknownPort, "nic", name, role.why);
                continue;
            }
            const auto g = L.gpuOfHost(nh.host, role.rail);
            const auto l = g == kNoIndex ? kNoIndex : (*s.gpuLink)[g];
            if (l == kNoIndex) {
                unknown(UnknownReason::UnknownPort, "nic", name,
                        "backend NIC " + std::to_string(role.rail) + " has no backend link");
                continue;
            }
            if (simulated && work.linkReal(l)) continue;
            work.nicSample(g, l, h.counter, h.value, h.t);
            ++rep.applied;
        }
    }
    for (const auto& h : held) {
        if (conflicts.count(h.port)) {
            ++rep.ignored;
            continue;
        }
        work.portSample(h.port, static_cast<PortCounter>(h.counter), h.value, h.t, sourceTag);
        ++rep.applied;
    }
    {
        std::uint64_t fresh[kUnknownReasonCount] = {};
        shared_->unknownNames.merge(names, identity.origin, now, fresh);
        for (int i = 0; i < kUnknownReasonCount; ++i)
            if (fresh[i]) shared_->unknown[i].fetch_add(fresh[i], kRelaxed);
    }

    rep.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rep.duplicates = work.duplicates;
    shared_->duplicates.fetch_add(work.duplicates, kRelaxed);
    shared_->bodies.fetch_add(1, kRelaxed);
    shared_->ingestMicros.fetch_add(static_cast<std::uint64_t>(rep.ms * 1000), kRelaxed);
    shared_->applied.fetch_add(rep.applied, kRelaxed);
    shared_->ignored.fetch_add(rep.ignored, kRelaxed);
    if (parsed)
        rep.samples = parsed->samples;
    else
        rep.samples = rep.applied + rep.ignored + rep.unknownTotal();
    shared_->samples.fetch_add(rep.samples, kRelaxed);
    work.finish();
    shared_->opened.fetch_add(work.opened(), kRelaxed);
    shared_->closed.fetch_add(work.closed(), kRelaxed);
    deliver(lock, events);
    if (!parsed) {
        shared_->badBodies.fetch_add(1, kRelaxed);
        return fail(parsed.error());
    }
    return rep;
}

void TelemetryHub::tick(std::int64_t nowMs) {
    std::int64_t now = this->now(nowMs);
    std::vector<FailureEvent> events;
    std::unique_lock lock(ingestMutex_);
    auto st = current();
    State& s = *st;
    const HallLayout& L = *s.L;
    HubWork work(s, options_.detection, shared_->open, eventsMutex_, events, shared_->keyPrefix,
                 shared_->keySeq);
    work.tickPorts(now);
    work.tickGpus(now);

    // Rollups: complete the previous minute, then sample the current state into it.
    std::int64_t minute = now - (now % 60000);
    if (s.minuteStart != 0 && minute != s.minuteStart && s.rollSamples > 0) {
        Rollup r;
        r.minuteStartMs = s.minuteStart;
        for (std::uint32_t i = 0; i < L.racks().size(); ++i) {
            if (L.racks()[i].gpuCount == 0) continue;
            RackRollup rr;
            rr.rack = i;
            rr.utilAvg =
                s.rackUtilN[i] ? static_cast<float>(s.rackUtilSum[i] / s.rackUtilN[i]) : NAN;
            rr.utilMax = s.rackUtilN[i] ? s.rackUtilMax[i] : NAN;
            rr.tempAvg =
                s.rackTempN[i] ? static_cast<float>(s.rackTempSum[i] / s.rackTempN[i]) : NAN;
            rr.tempMax = s.rackTempN[i] ? s.rackTempMax[i] : NAN;
            rr.powerAvgW =
                s.rackPowerN[i] ? static_cast<float>(s.rackPowerSum[i] / s.rackPowerN[i]) : NAN;
            rr.gpusReporting = s.rackReporting[i];
            rr.gpusUnhealthy = s.rackUnhealthyMax[i];
            if (s.rackUtilN[i] || s.rackTempN[i]) r.racks.push_back(rr);
        }
        for (std::uint32_t i = 0; i < L.switches().size(); ++i) {
            const auto& sw = L.switches()[i];
            double err = 0, disc = 0, pfc = 0;
            for (std::uint32_t p = sw.portOffset; p < sw.portOffset + sw.portSlots; ++p) {
                s.addErrorCounters(p, err, disc, pfc);
            }
            if (s.swUtilN[i] == 0 && std::isnan(s.swErrStart[i])) continue;
            SwitchRollup sr;
            sr.sw = i;
            sr.utilAvg = s.swUtilN[i] ? static_cast<float>(s.swUtilSum[i] / s.swUtilN[i]) : NAN;
            sr.utilMax = s.swUtilN[i] ? s.swUtilMax[i] : NAN;
            // Counter increase over the minute; a reset (negative) counts from zero.
            auto delta = [](double now, double start) {
                if (std::isnan(start)) return 0.0;
                return now >= start ? now - start : now;
            };
            sr.errors = delta(err, s.swErrStart[i]);
            sr.discards = delta(disc, s.swDiscStart[i]);
            sr.pfcPause = delta(pfc, s.swPfcStart[i]);
            sr.portsDown = s.swDownMax[i];
            r.switches.push_back(sr);
            s.swErrStart[i] = err;
            s.swDiscStart[i] = disc;
            s.swPfcStart[i] = pfc;
        }
        {
            std::lock_guard lk(eventsMutex_);
            shared_->rollups.push_back(std::move(r));
            if (shared_->rollups.size() > 60) shared_->rollups.erase(shared_->rollups.begin());
        }
        std::fill(s.rackUtilSum.begin(), s.rackUtilSum.end(), 0);
        std::fill(s.rackTempSum.begin(), s.rackTempSum.end(), 0);
        std::fill(s.rackPowerSum.begin(), s.rackPowerSum.end(), 0);
        std::fill(s.rackUtilMax.begin(), s.rackUtilMax.end(), 0.f);
        std::fill(s.rackTempMax.begin(), s.rackTempMax.end(), 0.f);
        for (auto* v : {&s.rackUtilN, &s.rackTempN, &s.rackPowerN, &s.rackUnhealthyMax,
                        &s.rackReporting, &s.swUtilN, &s.swDownMax})
            std::fill(v->begin(), v->end(), 0u);
        std::fill(s.swUtilSum.begin(), s.swUtilSum.end(), 0);
        std::fill(s.swUtilMax.begin(), s.swUtilMax.end(), 0.f);
        s.rollSamples = 0;
    }
    s.minuteStart = minute;
    ++s.rollSamples;
    auto staleMs = static_cast<std::int64_t>(options_.detection.staleAfterSeconds * 1000);
    sampleHistory(*s.history, s, now, staleMs);
    for (std::uint32_t ri = 0; ri < L.racks().size(); ++ri) {
        const auto& rk = L.racks()[ri];
        std::uint32_t reporting = 0, unhealthy = 0;
        for (std::uint32_t g = rk.gpuOffset; g < rk.gpuOffset + rk.gpuCount; ++g) {
            if (!s.fresh(s.gpuSeen[g].load(kRelaxed), now, staleMs)) continue;
            ++reporting;
            if (s.gpuEventHealth[g].load(kRelaxed) != 0) ++unhealthy;
            float u = s.gpuVal(GpuField::Util, g), t = s.gpuVal(GpuField::Temp, g),
                  w = s.gpuVal(GpuField::Power, g);
            if (std::isfinite(u)) {
                s.rackUtilSum[ri] += u;
                s.rackUtilMax[ri] = std::max(s.rackUtilMax[ri], u);
                ++s.rackUtilN[ri];
            }
            if (std::isfinite(t)) {
                s.rackTempSum[ri] += t;
                s.rackTempMax[ri] = std::max(s.rackTempMax[ri], t);
                ++s.rackTempN[ri];
            }
            if (std::isfinite(w)) {
                s.rackPowerSum[ri] += w;
                ++s.rackPowerN[ri];
            }
        }
        s.rackReporting[ri] = std::max(s.rackReporting[ri], reporting);
        s.rackUnhealthyMax[ri] = std::max(s.rackUnhealthyMax[ri], unhealthy);
    }
    for (std::uint32_t si = 0; si < L.switches().size(); ++si) {
        const auto& sw = L.switches()[si];
        std::uint32_t down = 0;
        bool any = false;
        double err = 0, disc = 0, pfc = 0;
        for (std::uint32_t p = sw.portOffset; p < sw.portOffset + sw.portSlots; ++p) {
            if (!s.fresh(s.portSeen[p].load(kRelaxed), now, staleMs)) continue;
            any = true;
            if (s.portDown[p].load(kRelaxed)) ++down;
            float u = std::max(s.utilIn[p].load(kRelaxed), s.utilOut[p].load(kRelaxed));
            if (std::isfinite(u) && L.ports()[p].linkIndex != kNoIndex) {
                s.swUtilSum[si] += u;
                s.swUtilMax[si] = std::max(s.swUtilMax[si], u);
                ++s.swUtilN[si];
            }
            if (std::isnan(s.swErrStart[si])) {
                s.addErrorCounters(p, err, disc, pfc);
            }
        }
        if (any && std::isnan(s.swErrStart[si])) {
            s.swErrStart[si] = err;
            s.swDiscStart[si] = disc;
            s.swPfcStart[si] = pfc;
        }
        s.swDownMax[si] = std::max(s.swDownMax[si], down);
    }
    work.finish();
    shared_->opened.fetch_add(work.opened(), kRelaxed);
    shared_->closed.fetch_add(work.closed(), kRelaxed);
    deliver(lock, events);
}

std::vector<UnknownName> TelemetryHub::unknownNames(std::string_view reason,
                                                    std::size_t limit) const {
    return shared_->unknownNames.list(reason, limit);
}

std::vector<Rollup> TelemetryHub::takeRollups() {
    std::lock_guard lk(eventsMutex_);
    return std::exchange(shared_->rollups, {});
}

}  // namespace loom::telemetry
