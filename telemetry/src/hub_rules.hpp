// The failure-detection rules of the hub (docs/api.md, Events): one HubWork per ingest or
// tick, holding the ingest lock's view of the State; it opens and closes events and keeps the
// per-GPU and per-port rule state. Included by telemetry_hub.cpp only.
#pragma once

#include <algorithm>

#include "hub_state.hpp"

namespace loom::telemetry::detail {

class HubWork {
public:
    using State = TelemetryHub::State;
    HubWork(State& s, const DetectionConfig& cfg,
            std::unordered_map<std::string, FailureEvent>& open, std::mutex& openMutex,
            std::vector<FailureEvent>& out, const std::string& keyPrefix,
            std::atomic<std::uint64_t>& keySeq)
        : s_(s),
          cfg_(cfg),
          open_(open),
          openMutex_(openMutex),
          out_(out),
          keyPrefix_(keyPrefix),
          keySeq_(keySeq) {}

    // What the samples of this ingest came from (IngestIdentity::origin); a tick has none.
    void setOrigin(std::string_view origin) {
        originName_ = origin;
        origin_ = originClass(origin);
        originIndex_ = -1;
    }
    // When this ingest's page arrived (the hub's clock). A GPU's and a host NIC's age — the
    // map's "no data" after detection.staleAfterSeconds, gpu_missing, the straggler finder's
    // 15 s on a NIC — is counted from its arrival, not from the timestamp the page may carry: a
    // pusher whose clock runs 2 min behind loomd's read as no data while it reported every
    // second, and one 10 min ahead as fresh for 10 min after it stopped. Rates and event times
    // keep the samples' own timestamps (rate() over the series' own clock), and so do switch
    // ports (TelemetryHub::portRates reads every counter's time back from the port's newest).
    void setArrival(std::int64_t now) { arrivalMs_ = now; }
    std::int64_t seenAt(std::int64_t t) const { return arrivalMs_ != 0 ? arrivalMs_ : t; }
    // Whether a sample of this work's origin is evidence about an event opened by `stored`:
    // the same kind of origin, or an event whose origin is not known. The clock (a tick) may
    // close what it times out.
    bool sameOrigin(std::uint8_t stored) const {
        return stored == kOriginAny || origin_ == kOriginAny || stored == origin_;
    }

    void openEvent(std::string_view kind, Severity sev, std::string location, std::uint32_t rack,
                   std::string_view zone, std::string message, std::int64_t t,
                   std::vector<std::pair<std::string, std::string>> labels = {},
                   std::vector<std::string> downEnds = {}) {
        FailureEvent e;
        e.origin = std::string(originName_);
        e.downEnds = std::move(downEnds);
        e.kind = std::string(kind);
        e.severity = sev;
        e.location = std::move(location);
        if (rack != kNoIndex) {
            e.rack = s_.L->racks()[rack].name;
            e.zone = s_.L->racks()[rack].zone;
        } else {
            e.zone = std::string(zone);
        }
        e.message = std::move(message);
        e.openedAtMs = t;
        e.labels = std::move(labels);
        e.key = keyPrefix_ + ':' + std::to_string(keySeq_.fetch_add(1, kRelaxed) + 1);
        {
            std::lock_guard lk(openMutex_);
            open_[e.kind + '\0' + e.location] = e;
        }
        out_.push_back(std::move(e));
        ++opened_;
    }
    // Events this work opened: loom_events_opened_total. A link_down sent again because its
    // ends changed (finish()) is in the events delivered but is not an open.
    std::uint64_t opened() const { return opened_; }
    // Events the rules closed: loom_events_closed_total (a close by hand is not one of them).
    std::uint64_t closed() const { return closed_; }

    void closeEvent(std::string_view kind, const std::string& location, std::int64_t t,
                    std::string reason = {}) {
        FailureEvent e;
        {
            std::lock_guard lk(openMutex_);
            auto it = open_.find(std::string(kind) + '\0' + location);
            if (it == open_.end()) return;
            e = std::move(it->second);
            open_.erase(it);
        }
        e.closedAtMs = std::max(t, e.openedAtMs);
        e.closeReason = reason.empty() ? recoveredReason() : std::move(reason);
        out_.push_back(std::move(e));
        ++closed_;
    }

    std::string recoveredReason() const {
        return originName_.empty() ? std::string("recovered")
                                   : "recovered (reported by " + std::string(originName_) + ")";
    }

    // ---- GPUs
    static constexpr std::uint8_t gpuKindOf(GpuField f) {
        switch (f) {
            case GpuField::Xid:
                return kXid;
            case GpuField::EccDbe:
                return kEccDbe;
            case GpuField::RowRemapFailure:
                return kRowRemap;
            case GpuField::Temp:
                return kTemp;
            case GpuField::NvlinkCrc:
                return kNvlink;
            case GpuField::ClockEventReasons:
                return kThrottled;
            default:
                return 0;
        }
    }
    // A push or a scrape holds an event open on this GPU: the simulator leaves it alone.
    bool gpuReal(std::uint32_t g) const { return (s_.gpuOrigin[g] & kGpuRealMask) != 0; }
    // Whether `kind` is open on g, or closed by hand and held back: opening it does nothing.
    bool gpuHeld(std::uint32_t g, std::uint8_t kind) const {
        return ((s_.gpuOpen[g] | s_.gpuSuppressed[g]) & kind) != 0;
    }
    void gpuOpen(std::uint32_t g, std::uint8_t kind, Severity sev, std::string msg, std::int64_t t,
                 std::vector<std::pair<std::string, std::string>> labels = {}) {
        if (gpuHeld(g, kind)) return;
        s_.gpuOpen[g] |= kind;
        storeOrigin(s_.gpuOrigin[g], kind, origin_);
        if (sev == Severity::Critical) s_.gpuCrit[g] |= kind;
        updateGpuHealth(g);
        const auto& name = s_.L->gpuNames()[g];
        openEvent(gpuKindName(kind), sev, name, s_.L->gpuRack()[g], {}, name + ": " + msg, t,
                  std::move(labels));
    }
    void gpuClose(std::uint32_t g, std::uint8_t kind, std::int64_t t, std::string reason = {}) {
        s_.gpuSuppressed[g] &= static_cast<std::uint8_t>(~kind);  // the condition cleared
        if (!(s_.gpuOpen[g] & kind)) return;
        s_.gpuOpen[g] &= static_cast<std::uint8_t>(~kind);
        s_.gpuCrit[g] &= static_cast<std::uint8_t>(~kind);
        storeOrigin(s_.gpuOrigin[g], kind, kOriginAny);
        updateGpuHealth(g);
        closeEvent(gpuKindName(kind), s_.L->gpuNames()[g], t, std::move(reason));
    }
    // Hold-down (DetectionConfig::thresholdHoldDownSeconds): the condition of g's open `kind`
    // event is clear at t; true once it has been clear for the hold-down (then it may close).
    bool clearLongEnough(std::uint32_t g, std::uint8_t kind, std::int64_t t) {
        const auto holdMs = static_cast<std::int64_t>(cfg_.thresholdHoldDownSeconds * 1000);
        if (holdMs <= 0) return true;
        const std::uint64_t key = std::uint64_t{g} << 8 | kind;
        auto [it, fresh] = s_.clearSince.try_emplace(key, t);
        if (t - it->second < holdMs) return false;
        s_.clearSince.erase(it);
        return true;
    }
    // The condition is back while the event is open: the hold-down starts again.
    void stillHeld(std::uint32_t g, std::uint8_t kind) {
        if (!s_.clearSince.empty()) s_.clearSince.erase(std::uint64_t{g} << 8 | kind);
    }

    void updateGpuHealth(std::uint32_t g) {
        std::uint8_t h = s_.gpuCrit[g] ? kGpuFailed : s_.gpuOpen[g] ? kGpuWarning : kGpuOk;
        s_.gpuEventHealth[g].store(h, kRelaxed);
    }

    void gpuSample(std::uint32_t g, GpuField f, double v, std::int64_t t) {
        // An open event is the business of the source that raised it: another source's sample
        // of that field neither closes it nor moves its rule state (issue 39).
        if (const auto k = gpuKindOf(f);
            k && (s_.gpuOpen[g] & k) && !sameOrigin(originOf(s_.gpuOrigin[g], k)))
            return;
        switch (f) {
            case GpuField::Xid: {
                if (!std::isfinite(v)) return;
                int code = static_cast<int>(v);
                if (code == 0) {
                    gpuClose(g, kXid, t);
                    return;
                }
                if (std::find(cfg_.ignoredXids.begin(), cfg_.ignoredXids.end(), code) !=
                    cfg_.ignoredXids.end())
                    return;
                bool crit = std::find(cfg_.criticalXids.begin(), cfg_.criticalXids.end(), code) !=
                            cfg_.criticalXids.end();
                // DCGM_FI_DEV_XID_ERRORS is the last XID, not a count: a warning XID open on g
                // and now a critical one (XID 92, then 79 when the GPU falls off the bus) is a
                // failed GPU. The warning closes as superseded and the critical one opens, as
                // gpu_temp escalates; a critical XID open stays, whatever XID follows.
                if (crit && (s_.gpuOpen[g] & kXid) && !(s_.gpuCrit[g] & kXid))
                    gpuClose(g, kXid, t, "superseded by XID " + std::to_string(code));
                gpuOpen(g, kXid, crit ? Severity::Critical : Severity::Warning,
                        "XID " + std::to_string(code), t, {{"xid", std::to_string(code)}});
                return;
            }
            case GpuField::EccDbe:
                if (!cfg_.eccDoubleBit || !std::isfinite(v)) return;
                if (v > 0)
                    gpuOpen(g, kEccDbe, Severity::Critical,
                            "double-bit ECC errors: " + formatNumber(v), t);
                else
                    gpuClose(g, kEccDbe, t);
                return;
            case GpuField::RowRemapFailure:
                if (!cfg_.rowRemapFailure || !std::isfinite(v)) return;
                if (v > 0)
                    gpuOpen(g, kRowRemap, Severity::Critical, "row remapping failed", t);
                else
                    gpuClose(g, kRowRemap, t);
                return;
            case GpuField::Temp: {
                if (!std::isfinite(v)) return;
                std::uint8_t lvl = s_.tempLevel[g], next = lvl;
                double hy = cfg_.tempHysteresisC;
                if (v >= cfg_.tempCriticalC)
                    next = 2;
                else if (lvl == 2 && v >= cfg_.tempCriticalC - hy)
                    next = 2;
                else if (v >= cfg_.tempWarningC)
                    next = 1;
                else if (lvl >= 1 && v >= cfg_.tempWarningC - hy)
                    next = 1;
                else
                    next = 0;
                // Hold-down: an open event only escalates (warning -> critical: one more event)
                // and closes once the GPU has stayed below warning - hysteresis for the
                // hold-down; cooling from critical to warning changes nothing.
                if (next > 0 && next <= lvl) {
                    stillHeld(g, kTemp);
                    return;
                }
                if (next == 0) {
                    if (lvl == 0) return;
                    if (!(s_.gpuOpen[g] & kTemp)) {  // closed by hand meanwhile
                        s_.tempLevel[g] = 0;
                        gpuClose(g, kTemp, t);
                        return;
                    }
                    if (!clearLongEnough(g, kTemp, t)) return;
                    s_.tempLevel[g] = 0;
                    gpuClose(g, kTemp, t);
                    return;
                }
                s_.tempLevel[g] = next;
                stillHeld(g, kTemp);
                gpuClose(g, kTemp, t);
                gpuOpen(g, kTemp, next == 2 ? Severity::Critical : Severity::Warning,
                        "temperature " + formatNumber(v) + " C (threshold " +
                            formatNumber(next == 2 ? cfg_.tempCriticalC : cfg_.tempWarningC) +
                            " C)",
                        t);
                return;
            }
            case GpuField::EccSbe: {
                // Its rate for the straggler finder, over the counter's own samples.
                if (!std::isfinite(v)) return;
                const double prev = s_.sbePrev[g];
                const std::int64_t pt = s_.sbePrevMs[g];
                if (t <= pt) return;
                s_.sbePrev[g] = v;
                s_.sbePrevMs[g] = t;
                if (std::isfinite(prev))
                    s_.sbeRate[g] = static_cast<float>(counterIncrease(prev, v) * 1000.0 /
                                                       static_cast<double>(t - pt));
                return;
            }
            case GpuField::NvlinkCrc: {
                float prev = s_.nvPrev[g];
                std::int64_t pt = s_.nvPrevMs[g];
                s_.nvPrev[g] = static_cast<float>(v);
                s_.nvPrevMs[g] = t;
                if (cfg_.nvlinkCrcPerSecond <= 0 || !std::isfinite(prev) || t <= pt || v < prev)
                    return;
                double rate = (v - prev) * 1000.0 / static_cast<double>(t - pt);
                s_.nvRate[g] = static_cast<float>(rate);
                if (rate > cfg_.nvlinkCrcPerSecond) {
                    stillHeld(g, kNvlink);
                    gpuOpen(g, kNvlink, Severity::Warning,
                            "NVLink CRC errors " + formatNumber(rate) + "/s", t);
                } else if (rate < cfg_.nvlinkCrcPerSecond / 2 &&
                           (!(s_.gpuOpen[g] & kNvlink) || clearLongEnough(g, kNvlink, t))) {
                    gpuClose(g, kNvlink, t);
                }
                return;
            }
            case GpuField::ClockEventReasons: {
                if (!std::isfinite(v) || v < 0) return;
                const auto mask = static_cast<std::uint32_t>(v);
                const auto bad = mask & kThrottleAlarmMask;
                auto& run = s_.throttleRun[g];
                if (!bad) {
                    run = 0;
                    if (!(s_.gpuOpen[g] & kThrottled) || clearLongEnough(g, kThrottled, t))
                        gpuClose(g, kThrottled, t);
                    return;
                }
                stillHeld(g, kThrottled);
                if (run < 255) ++run;
                if (cfg_.throttledIntervals <= 0 || run < cfg_.throttledIntervals) return;
                // Already open (every sample of a throttled GPU says so): no message to build.
                if (gpuHeld(g, kThrottled)) return;
                std::string names;
                for (const auto& n : clockEventReasonNames(bad))
                    names += (names.empty() ? "" : ",") + n;
                gpuOpen(g, kThrottled, Severity::Warning,
                        "clocks throttled (" + names + ") for " + std::to_string(run) + " samples",
                        t, {{"reasons", names}});
                return;
            }
            default:
                return;
        }
    }

    // A GPU that falls off the bus (XID 79, which DCGM often cannot even report: NVIDIA/DCGM#162)
    // vanishes from its host's dcgm-exporter page: its series stop while the host's other GPUs
    // go on. Once it has not been reported for detection.staleAfterSeconds while a GPU of the
    // same host has, gpu_missing (critical) opens on it and fails it; its next sample closes
    // it. A host whose GPUs all went quiet (its exporter down, a scrape gap, the host down)
    // opens nothing: no page is no evidence. A GPU never reported, one not in service, or one
    // already failed by a critical event (an XID 79 that DCGM did report) is left alone.
    void tickGpus(std::int64_t now) {
        const auto staleMs = static_cast<std::int64_t>(cfg_.staleAfterSeconds * 1000);
        if (staleMs <= 0) return;
        const auto& L = *s_.L;
        const auto& admin = L.gpuAdmin();
        for (std::uint32_t h = 0; h < L.hostCount(); ++h) {
            const auto [first, n] = L.hostGpus(h);
            if (n < 2) continue;
            std::int64_t newest = 0;
            for (std::uint32_t g = first; g < first + n; ++g)
                newest = std::max(newest, s_.gpuSeen[g].load(kRelaxed));
            if (newest == 0 || now - newest >= staleMs) continue;
            for (std::uint32_t g = first; g < first + n; ++g) {
                const auto seen = s_.gpuSeen[g].load(kRelaxed);
                if (seen == 0 || now - seen < staleMs || s_.gpuCrit[g] != 0 ||
                    gpuHeld(g, kMissing) ||
                    (admin[g] != AdminState::InService && admin[g] != AdminState::Down))
                    continue;
                gpuOpen(g, kMissing, Severity::Critical,
                        "not reported for " + formatNumber(static_cast<double>(now - seen) / 1000) +
                            " s while its host's other GPUs are (fallen off the bus?)",
                        now);
            }
        }
    }

    // Two dcgm-exporters of one GPU (a DaemonSet beside a host service, both scraped): a
    // second source's samples of a GPU that its first source sent within kSourceHoldMs are
    // counted (IngestReport::duplicates) and not taken, as a port counter's are. XID is a gauge
    // each exporter resets when it starts: one source's 0 and the other's 79 opened and closed
    // gpu_xid at every scrape. Once the first has been quiet for kSourceHoldMs the second takes
    // the GPU over. Unnamed sources (pushes) are not told apart.
    bool gpuSourceTakes(std::uint32_t g, std::uint8_t source) {
        if (source == 0) return true;
        auto& owner = s_.gpuSrc[g];
        const std::uint32_t now32 = rateClock(arrivalMs_), at = s_.gpuSrcAt[g];
        if (owner != 0 && owner != source && at != 0 && now32 - at < kSourceHoldMs) {
            ++duplicates;
            return false;
        }
        owner = source;
        s_.gpuSrcAt[g] = now32;
        return true;
    }

    // ---- ports and links
    std::uint8_t& openBits(std::uint32_t p) {
        auto l = s_.L->ports()[p].linkIndex;
        return l != kNoIndex ? s_.linkOpen[l] : s_.pdet[p].open;
    }
    std::uint16_t& originBits(std::uint32_t p) {
        auto l = s_.L->ports()[p].linkIndex;
        return l != kNoIndex ? s_.linkOrigin[l] : s_.pdet[p].origin;
    }
    // A push or a scrape holds an event open on this port's link: the simulator leaves it alone.
    bool portReal(std::uint32_t p) { return (originBits(p) & kLinkRealMask) != 0; }
    bool linkReal(std::uint32_t l) const { return (s_.linkOrigin[l] & kLinkRealMask) != 0; }
    // link_down is evidence per end (downEnds): any real source may report an end up, but the
    // simulator never speaks for a link a real source reported, nor the other way round.
    bool mayClose(std::uint8_t stored, std::uint8_t kind) const {
        if (kind != kDown) return sameOrigin(stored);
        return stored == kOriginAny || origin_ == kOriginAny ||
               (stored == kOriginSim) == (origin_ == kOriginSim);
    }
    // The ends of link l (or of the lone port p) that are known down now: "nic", then the
    // switch ports.
    std::vector<std::string> downEndsOf(std::uint32_t p) const {
        std::vector<std::string> ends;
        auto l = s_.L->ports()[p].linkIndex;
        if (l == kNoIndex) {
            ends.push_back(s_.L->portName(p));
            return ends;
        }
        return downEndsOfLink(l);
    }
    std::vector<std::string> downEndsOfLink(std::uint32_t l) const {
        std::vector<std::string> ends;
        if (nicUpOf(l) == 0) ends.emplace_back("nic");
        const auto& link = s_.L->links()[l];
        for (auto q : {link.aPort, link.bPort})
            if (q != kNoIndex && s_.portDown[q].load(kRelaxed) == 1)
                ends.push_back(s_.L->portName(q));
        return ends;
    }
    std::uint8_t& suppressedBits(std::uint32_t p) {
        auto l = s_.L->ports()[p].linkIndex;
        return l != kNoIndex ? s_.linkSuppressed[l] : s_.pdet[p].suppressed;
    }
    std::string portLocation(std::uint32_t p) const {
        auto l = s_.L->ports()[p].linkIndex;
        return l != kNoIndex ? s_.L->links()[l].name : s_.L->portName(p);
    }
    std::uint32_t portRack(std::uint32_t p) const {
        auto l = s_.L->ports()[p].linkIndex;
        if (l != kNoIndex) return s_.L->links()[l].rackIndex;
        return s_.L->switches()[s_.L->ports()[p].switchIndex].rackIndex;
    }
    bool inService(std::uint32_t p) const {
        auto l = s_.L->ports()[p].linkIndex;
        return l == kNoIndex || linkInService(l);
    }
    void portOpen(std::uint32_t p, std::uint8_t kind, Severity sev, std::string msg,
                  std::int64_t t) {
        auto& bits = openBits(p);
        if ((bits | suppressedBits(p)) & kind) return;
        bits |= kind;
        if (kind == kDown && (bits & kFlap)) bits |= kDownHeldByFlap;
        storeOrigin(originBits(p), kind, origin_);
        updateLinkFlags(p);
        const auto& sw = s_.L->switches()[s_.L->ports()[p].switchIndex];
        openEvent(linkKindName(kind), sev, portLocation(p), portRack(p), sw.zone,
                  s_.L->portName(p) + ": " + msg, t, {},
                  kind == kDown ? downEndsOf(p) : std::vector<std::string>{});
    }
    void portClose(std::uint32_t p, std::uint8_t kind, std::int64_t t, std::string reason = {}) {
        auto& bits = openBits(p);
        if ((bits & kind) && !mayClose(originOf(originBits(p), kind), kind)) return;
        suppressedBits(p) &= static_cast<std::uint8_t>(~kind);  // the condition cleared
        if (!(bits & kind)) return;
        bits &= static_cast<std::uint8_t>(~(kind == kDown ? kDownBits : kind));
        storeOrigin(originBits(p), kind, kOriginAny);
        updateLinkFlags(p);
        closeEvent(linkKindName(kind), portLocation(p), t, std::move(reason));
    }
    // The ends of link l's open link_down may have changed (an end went down after it opened,
    // or one came back while another is still down): noted here, sent once at finish().
    void endsMayHaveChanged(std::uint32_t l) {
        if (s_.linkOpen[l] & kDown) endsChanged_.push_back(l);
    }
    // The end of an ingest, tick or layout change: each open link_down whose ends changed is
    // sent again (same key) with the ends down now, once however many of its ends moved in
    // this sample — or, when it opened in this sample, its open says them and nothing more is
    // sent. The writer stores them on the open row (db::insertEvents), so a restarted loomd
    // holds down the ends that are down now, not those of the moment it opened (issue 39).
    void finish() {
        if (endsChanged_.empty()) return;
        std::sort(endsChanged_.begin(), endsChanged_.end());
        endsChanged_.erase(std::unique(endsChanged_.begin(), endsChanged_.end()),
                           endsChanged_.end());
        for (auto l : endsChanged_) {
            if (!(s_.linkOpen[l] & kDown)) continue;  // closed since: the close says so
            auto ends = downEndsOfLink(l);
            if (ends.empty()) continue;
            std::lock_guard lk(openMutex_);
            auto it = open_.find(std::string(linkKindName(kDown)) + '\0' + s_.L->links()[l].name);
            if (it == open_.end() || it->second.downEnds == ends) continue;
            it->second.downEnds = ends;
            auto sent = std::find_if(out_.rbegin(), out_.rend(), [&](const FailureEvent& e) {
                return e.open() && e.key == it->second.key;
            });
            if (sent != out_.rend())
                sent->downEnds = std::move(ends);
            else
                out_.push_back(it->second);
        }
        endsChanged_.clear();
    }
    void updateLinkFlags(std::uint32_t p) {
        auto l = s_.L->ports()[p].linkIndex;
        if (l != kNoIndex) updateLinkFlagsOf(l);
    }
    void updateLinkFlagsOf(std::uint32_t l) {
        s_.linkDegraded[l].store((s_.linkOpen[l] & kDown)                              ? 2
                                 : (s_.linkOpen[l] & (kFlap | kErrors | kPfc | kSlow)) ? 1
                                                                                       : 0,
                                 kRelaxed);
    }

    // The other switch end of p's link (kNoIndex if none).
    std::uint32_t peer(std::uint32_t p) const {
        auto l = s_.L->ports()[p].linkIndex;
        if (l == kNoIndex) return kNoIndex;
        const auto& link = s_.L->links()[l];
        return link.aPort == p ? link.bPort : link.aPort;
    }

    // After `no shutdown` a port trains its PHY for a few seconds (lowerLayerDown or down, then
    // up: 2-5 s for 400G optics with link training, longer on copper with autonegotiation). A
    // port still down this long after it was enabled has failed to come up.
    static constexpr std::int64_t kEnableGraceMs = 10'000;
    static bool startedAfterEnable(const State::PortDet& d, std::int64_t t) {
        return d.adminUpAt != 0 && t - d.adminUpAt < kEnableGraceMs;
    }
    // A link (or lone port) with a switch end down on purpose is no failure, whichever end says
    // it is down: the switch's peer port and the host's NIC go down because it was shut.
    bool excused(std::uint32_t p) const {
        const auto l = s_.L->ports()[p].linkIndex;
        if (l == kNoIndex) return s_.portDown[p].load(kRelaxed) == 2;
        return linkExcused(l);
    }
    bool linkExcused(std::uint32_t l) const {
        const auto& link = s_.L->links()[l];
        for (auto q : {link.aPort, link.bPort})
            if (q != kNoIndex && s_.portDown[q].load(kRelaxed) == 2) return true;
        return false;
    }

    // IF-MIB ifAdminStatus: 1 up, 2 down (an operator shut the port), 3 testing. A shut port is
    // down on purpose: no link_down opens on its link from any end, an open one closes as the
    // operator's ("administratively down"), and the link reads drained. Enabled again, the port
    // has kEnableGraceMs to come up before its down state is a failure again; the ends still
    // down after that open link_down on their next sample (every scrape repeats them).
    void adminStatus(std::uint32_t p, double v, std::int64_t t) {
        if (v != 1 && v != 2 && v != 3) return;
        auto& d = s_.pdet[p];
        const bool down = v == 2;
        if (down == d.adminDown) return;
        d.adminDown = down;
        const auto l = s_.L->ports()[p].linkIndex;
        if (!down) {
            d.adminUpAt = t;
            return;
        }
        d.adminUpAt = 0;
        s_.portDown[p].store(2, kRelaxed);
        if (l != kNoIndex) endsMayHaveChanged(l);
        if (openBits(p) & kDown)
            portClose(p, kDown, t,
                      "administratively down (" + s_.L->portName(p) + ": ifAdminStatus down)");
    }

    // IF-MIB ifOperStatus: 1 up; 2 down, 5 dormant, 6 notPresent (an empty cage), 7
    // lowerLayerDown (the PHY below is down): the port passes no traffic, the link is down (and
    // 0, Loom's own loom_port_oper_status for down). 3 testing and 4 unknown say neither (an
    // agent that cannot tell, a test an operator runs), nor does any other value: the port keeps
    // the state it had, and no link_down opens on an `unknown` (it did: a critical event).
    static bool operStatusSaysAnything(double v) {
        return v == 1 || v == 0 || v == 2 || v == 5 || v == 6 || v == 7;
    }
    void operStatus(std::uint32_t p, double v, std::int64_t t) {
        if (!operStatusSaysAnything(v)) return;
        auto& d = s_.pdet[p];
        std::int8_t up = v == 1 ? 1 : 0;
        const bool starting = startedAfterEnable(d, t);
        if (up) d.adminUpAt = 0;  // enabled and up: started
        const bool onPurpose = !up && (d.adminDown || starting);
        s_.portDown[p].store(up ? 0 : onPurpose ? 2 : 1, kRelaxed);
        std::int8_t was = d.lastOper;
        d.lastOper = up;
        // A shut port going down, or an enabled one coming up, is an operator's doing: no flap.
        if (was != -1 && was != up && cfg_.flapTransitions > 0 && !onPurpose && !starting) {
            auto windowMs = static_cast<std::int64_t>(cfg_.flapWindowSeconds * 1000);
            if (t - d.flapWindowStart > windowMs) {
                d.flapWindowStart = t;
                d.flapCount = 0;
            }
            ++d.flapCount;
            d.lastTransition = t;
            if (d.flapCount >= cfg_.flapTransitions && inService(p))
                portOpen(p, kFlap, Severity::Warning,
                         std::to_string(d.flapCount) + " state changes in " +
                             formatNumber(cfg_.flapWindowSeconds) + " s",
                         t);
        }
        d.downBy = up ? 0 : originIndex();
        if (!cfg_.linkDown) return;
        if (!up) {
            if (inService(p) && !excused(p))
                portOpen(p, kDown, Severity::Critical, "oper status down", t);
        } else {
            // A link is down while either end is; close only when the other end is not down.
            auto q = peer(p);
            auto l = s_.L->ports()[p].linkIndex;
            const bool nicDown = l != kNoIndex && nicUpOf(l) == 0 && !excused(p);
            if ((q == kNoIndex || s_.portDown[q].load(kRelaxed) != 1) && !nicDown &&
                !heldByFlapping(openBits(p)))
                portClose(p, kDown, t);
        }
        if (was != up)
            if (auto l = s_.L->ports()[p].linkIndex; l != kNoIndex) endsMayHaveChanged(l);
    }

    // A port up below its inventory speed (ifHighSpeed 200000 on a 400G port: a lane or an
    // optic gone, the link renegotiated) opens link_speed, a warning, on its link; its full
    // speed closes it. A port known down says nothing about its speed (link_down covers it), nor
    // does a speed of 0 (an interface that reports none).
    // The host end says its own speed too (nicSpeedRule): the link has one link_speed event,
    // whichever end saw it first, open while either end says it is slow.
    void speedRule(std::uint32_t p, double bps, std::int64_t t) {
        const double want = s_.L->ports()[p].speedGbps * 1e9;
        if (want <= 0 || !std::isfinite(bps) || bps <= 0) return;
        if (bps >= want * 0.999) {
            const auto l = s_.L->ports()[p].linkIndex;
            if (l == kNoIndex || (!nicSlow(l) && !portSlow(peer(p)))) portClose(p, kSlow, t);
        } else if (s_.pdet[p].lastOper != 0 && inService(p)) {
            portOpen(p, kSlow, Severity::Warning,
                     "up at " + formatNumber(bps / 1e9) + " Gb/s, rated " +
                         formatNumber(want / 1e9) + " Gb/s",
                     t);
        }
    }

    // Whether an end of a link says now that it runs below its rated speed: a switch port up
    // whose last speed is under its inventory speed; a host NIC not known down whose
    // node_infiniband_rate_bytes_per_second is under its link's speed.
    bool portSlow(std::uint32_t p) const {
        if (p == kNoIndex) return false;
        const double want = s_.L->ports()[p].speedGbps * 1e9;
        const double bps = s_.portVal(PortCounter::SpeedBps, p);
        return want > 0 && std::isfinite(bps) && bps > 0 && bps < want * 0.999 &&
               s_.pdet[p].lastOper != 0;
    }
    // A NIC's rated speed: its cable's, else the switch port's at the other end.
    double nicRatedBps(std::uint32_t l) const {
        const auto& link = s_.L->links()[l];
        if (link.speedGbps > 0) return link.speedGbps * 1e9;
        for (auto p : {link.bPort, link.aPort})
            if (p != kNoIndex && s_.L->ports()[p].speedGbps > 0)
                return s_.L->ports()[p].speedGbps * 1e9;
        return 0;
    }
    bool nicSlow(std::uint32_t l) const {
        const auto n = s_.nicOfLink(l);
        if (n == kNoIndex || s_.nicUp[n] == 0) return false;
        const double want = nicRatedBps(l), bps = double{s_.nicRates[n].speedBytes} * 8;
        return want > 0 && std::isfinite(bps) && bps > 0 && bps < want * 0.999;
    }
    // node_infiniband_rate_bytes_per_second of the NIC n, the host end of link l: below the
    // link's rated speed (a ConnectX-7 that trained at 200G on a 400G cable) it opens the link's
    // link_speed, as the switch end's ifHighSpeed does; its full speed closes it unless a switch
    // end still says slow. A NIC known down says nothing about its speed (link_down covers it).
    void nicSpeedRule(std::uint32_t n, std::uint32_t l, double bytesPerSecond, std::int64_t t) {
        const double want = nicRatedBps(l), bps = bytesPerSecond * 8;
        if (want <= 0 || !std::isfinite(bps) || bps <= 0) return;
        if (bps >= want * 0.999) {
            const auto& link = s_.L->links()[l];
            if (!portSlow(link.aPort) && !portSlow(link.bPort)) linkCloseEv(l, kSlow, t);
        } else if (s_.nicUp[n] != 0 && linkInService(l) && !linkHeld(l, kSlow)) {
            linkOpenEv(l, kSlow, Severity::Warning,
                       "host NIC up at " + formatNumber(bps / 1e9) + " Gb/s, rated " +
                           formatNumber(want / 1e9) + " Gb/s",
                       t);
        }
    }

    void rateRule(std::uint32_t p, std::uint8_t kind, double rate, double threshold,
                  std::string_view what, std::int64_t t) {
        if (threshold <= 0) return;
        if (rate > threshold && inService(p))
            portOpen(p, kind, Severity::Warning,
                     std::string(what) + " " + formatNumber(rate) + "/s", t);
        else if (rate < threshold / 2)
            portClose(p, kind, t);
    }

    // A second source sends a counter the first still sends (its last sample is younger than
    // this): the second's samples are counted as duplicates and not taken.
    static constexpr std::int64_t kSourceHoldMs = 30'000;
    std::uint64_t duplicates = 0;  // this ingest's

    // `source`: detail::sourceTag of the page's IngestIdentity::source.
    // SONiC's agent answers ifHighSpeed 40000 for a port whose speed it does not know
    // (sonic-snmpagent, rfc2863.py get_high_speed: the APPL_DB port entry's `speed`, 40000 when
    // the entry has none: a port not configured yet, or down before its speed was set). On a
    // switch of the sonic scheme that is no speed, as 0 is — unless the port is rated 40G,
    // where it is the speed. (A real 40G renegotiation of a faster port on SONiC cannot be told
    // from it; the host end's rate still reports it, nicSpeedRule.)
    bool sonicSpeedPlaceholder(std::uint32_t p, double bps) const {
        if (bps != 40e9) return false;
        const auto& port = s_.L->ports()[p];
        if (port.speedGbps == 40 || port.switchIndex == kNoIndex) return false;
        const auto& sw = s_.L->switches()[port.switchIndex];
        return sw.naming && sw.naming->scheme == inventory::PortNaming::Scheme::Sonic;
    }

    void portSample(std::uint32_t p, PortCounter c, double v, std::int64_t t,
                    std::uint8_t source = 0) {
        if (static_cast<std::uint8_t>(c) == kPortAdminStatus) {
            if (std::isfinite(v)) adminStatus(p, v, t);
            return;
        }
        if (c == PortCounter::SpeedBps && sonicSpeedPlaceholder(p, v)) v = 0;  // not known
        auto& d = s_.pdet[p];
        const int slot = ratedSlot(c);
        auto& col = (*s_.port)[static_cast<std::size_t>(c)];
        if (slot < 0) {
            col.store(p, v);
            s_.portSeen[p].store(t, kRelaxed);
            if (c == PortCounter::OperStatus) operStatus(p, v, t);
            if (c == PortCounter::SpeedBps) speedRule(p, v, t);
            return;
        }
        // Each counter on its own (issue 34 item 1): its own previous value and time, so a
        // page with other counters of the port in between changes nothing.
        const std::uint32_t now32 = rateClock(t), at = d.at[slot];
        const std::uint32_t gap = now32 - at;  // wrapping: any gap under 49 days
        auto& owner = d.src[slot];
        bool fresh = at == 0;  // no previous sample: no rate yet
        if (source != 0 && owner != 0 && source != owner) {
            if (at != 0 && gap < kSourceHoldMs) {
                ++duplicates;  // the first source still sends it: reported, not mixed in
                return;
            }
            fresh = true;  // the first one went quiet: a new baseline, no rate across two
        }
        // Older than its last sample (a late page): not taken, the rate stays.
        if (!fresh && at != 0 && gap >= 0x80000000u) return;
        if (source != 0) owner = source;
        const double old = col.load(p);
        col.store(p, v);
        s_.portSeen[p].store(t, kRelaxed);
        if (!fresh && at != 0 && gap == 0) return;  // the same instant again: nothing to rate
        d.at[slot] = now32;
        double r = kNaN;
        if (!fresh && std::isfinite(old) && std::isfinite(v) && gap > 0)
            r = counterIncrease(old, v) * 1000.0 / static_cast<double>(gap);
        if (std::isnan(r)) {
            if (slot >= 2) d.rate[slot - 2] = static_cast<float>(kNaN);
            return;
        }
        switch (c) {
            case PortCounter::InOctets:
            case PortCounter::OutOctets: {
                float u = static_cast<float>(std::min(100.0, r * 8 / s_.speedBps(p) * 100));
                (c == PortCounter::InOctets ? s_.utilIn : s_.utilOut)[p].store(u, kRelaxed);
                return;
            }
            case PortCounter::InErrors:
            case PortCounter::OutErrors:
                d.rate[slot - 2] = static_cast<float>(r);
                rateRule(p, kErrors, sumRates(d, 2), cfg_.linkErrorsPerSecond, "errors", t);
                return;
            case PortCounter::InPfcPause:
            case PortCounter::OutPfcPause:
                d.rate[slot - 2] = static_cast<float>(r);
                rateRule(p, kPfc, sumRates(d, 6), cfg_.pfcPausePerSecond, "PFC pause frames", t);
                return;
            default:
                d.rate[slot - 2] = static_cast<float>(r);
                return;
        }
    }
    // In + out of the pair at `slot`, `slot + 1` (a direction never rated adds nothing).
    static double sumRates(const State::PortDet& d, int slot) {
        const float a = d.rateOf(slot), b = d.rateOf(slot + 1);
        return (std::isfinite(a) ? a : 0.0) + (std::isfinite(b) ? b : 0.0);
    }

    // ---- the host end of a backend link (node_exporter InfiniBand)
    bool linkHeld(std::uint32_t l, std::uint8_t kind) const {
        return ((s_.linkOpen[l] | s_.linkSuppressed[l]) & kind) != 0;
    }
    void linkOpenEv(std::uint32_t l, std::uint8_t kind, Severity sev, const std::string& msg,
                    std::int64_t t) {
        if (linkHeld(l, kind)) return;
        s_.linkOpen[l] |= kind;
        // node_exporter's link_downed rise opens link_flapping at the first down: a NIC down in
        // the page that raised it is that one down, not yet flapping (it closes on its up).
        if (kind == kDown && (s_.linkOpen[l] & kFlap) &&
            std::find(nicFlapsOpenedNow_.begin(), nicFlapsOpenedNow_.end(), l) ==
                nicFlapsOpenedNow_.end())
            s_.linkOpen[l] |= kDownHeldByFlap;
        storeOrigin(s_.linkOrigin[l], kind, origin_);
        updateLinkFlagsOf(l);
        const auto& link = s_.L->links()[l];
        openEvent(linkKindName(kind), sev, link.name, link.rackIndex, {}, link.name + ": " + msg, t,
                  {}, kind == kDown ? downEndsOfLink(l) : std::vector<std::string>{});
    }
    void linkCloseEv(std::uint32_t l, std::uint8_t kind, std::int64_t t) {
        if ((s_.linkOpen[l] & kind) && !mayClose(originOf(s_.linkOrigin[l], kind), kind)) return;
        s_.linkSuppressed[l] &= static_cast<std::uint8_t>(~kind);
        if (!(s_.linkOpen[l] & kind)) return;
        s_.linkOpen[l] &= static_cast<std::uint8_t>(~(kind == kDown ? kDownBits : kind));
        storeOrigin(s_.linkOrigin[l], kind, kOriginAny);
        updateLinkFlagsOf(l);
        closeEvent(linkKindName(kind), s_.L->links()[l].name, t);
    }
    bool linkInService(std::uint32_t l) const {
        auto a = s_.L->linkAdmin()[l];
        return a == AdminState::InService || a == AdminState::Down;
    }

    // After a layout change (TelemetryHub::setLayout): a link in service whose switch port or
    // host NIC was already reported down opens link_down now. Its down sample came while the
    // link was not in service (no failure then), and the exporter may not sample again for
    // seconds; until then the map would draw a known-down link as healthy. Events open only
    // once (portOpen/linkOpenEv skip what is open or closed by hand).
    // Each opens with the origin of the report that said the end was down (issue 39: else
    // any source, the simulator too, could close it).
    void openDownLinksInService(std::int64_t t) {
        if (!cfg_.linkDown) return;
        const auto& links = s_.L->links();
        for (std::uint32_t l = 0; l < links.size(); ++l) {
            if (!linkInService(l) || linkHeld(l, kDown)) continue;
            if (linkExcused(l)) continue;  // shut on purpose
            for (auto p : {links[l].aPort, links[l].bPort})
                if (p != kNoIndex && s_.portDown[p].load(kRelaxed) == 1) {
                    asOrigin(s_.pdet[p].downBy);
                    portOpen(p, kDown, Severity::Critical, "oper status down", t);
                }
            if (const auto n = s_.nicOfLink(l); n != kNoIndex && s_.nicUp[n] == 0) {
                asOrigin(s_.nicDownBy[n]);
                linkOpenEv(l, kDown, Severity::Critical, "host NIC port not ACTIVE", t);
            }
        }
        setOrigin({});
    }
    // This work's origin in originNames (1-based; 0 when it has none or the table is full).
    std::uint16_t originIndex() {
        if (originName_.empty()) return 0;
        if (originIndex_ < 0) {
            auto& names = *s_.originNames;
            auto it = std::find(names.begin(), names.end(), originName_);
            if (it != names.end()) {
                originIndex_ = static_cast<int>(it - names.begin()) + 1;
            } else if (names.size() < kMaxOriginNames) {
                names.emplace_back(originName_);
                originIndex_ = static_cast<int>(names.size());
            } else {
                originIndex_ = 0;
            }
        }
        return static_cast<std::uint16_t>(originIndex_);
    }
    static constexpr std::size_t kMaxOriginNames = 4096;
    // Speak as the origin recorded at index i (0: none).
    void asOrigin(std::uint16_t i) {
        const auto& names = *s_.originNames;
        setOrigin(i != 0 && i <= names.size() ? std::string_view(names[i - 1])
                                              : std::string_view());
    }

    // -1 unknown, 0 not ACTIVE, 1 ACTIVE: the NIC end of link l (-1: it has none).
    std::int8_t nicUpOf(std::uint32_t l) const {
        const auto n = s_.nicOfLink(l);
        return n == kNoIndex ? std::int8_t{-1} : s_.nicUp[n];
    }

    // A sample of the NIC n (the GPU whose NIC it is), the end of link l = gpuLink[n].
    void nicSample(std::uint32_t n, std::uint32_t l, std::uint8_t counter, double v,
                   std::int64_t t) {
        if (!std::isfinite(v)) return;
        if (counter >= kNicRxBytes) {
            nicCounter(n, l, counter, v, t);
            return;
        }
        if (counter == kNicStateId) {
            const std::int8_t up = v == 4 ? 1 : 0;  // IB port state 4 = ACTIVE
            const std::int8_t was = s_.nicUp[n];
            s_.nicUp[n] = up;
            s_.nicDownBy[n] = up ? 0 : originIndex();
            if (!cfg_.linkDown) return;
            if (was != up) endsMayHaveChanged(l);
            if (!up) {
                // Every scrape of a down port says so: build the message only to open.
                if (linkInService(l) && !linkHeld(l, kDown) && !linkExcused(l))
                    linkOpenEv(l, kDown, Severity::Critical,
                               "host NIC port state " + formatNumber(v) + " (not ACTIVE)", t);
                return;
            }
            // A link is down while either end is: close only when no switch end is down.
            const auto& link = s_.L->links()[l];
            auto down = [&](std::uint32_t p) {
                return p != kNoIndex && s_.portDown[p].load(kRelaxed) == 1;
            };
            if (!down(link.aPort) && !down(link.bPort) && !heldByFlapping(s_.linkOpen[l]))
                linkCloseEv(l, kDown, t);
            return;
        }
        // link_downed_total: each rise is the link going down and up again. The first sample
        // and a counter reset (a reboot, a driver reload) count nothing, as rate() would.
        const double prev = s_.nicDowned[n];
        s_.nicDowned[n] = v;
        if (!std::isfinite(prev) || v <= prev) return;
        s_.nicFlapAt[n] = t;
        if (cfg_.flapTransitions > 0 && linkInService(l) && !linkHeld(l, kFlap)) {
            linkOpenEv(l, kFlap, Severity::Warning,
                       "host NIC link went down " + formatNumber(v - prev) + " time(s)", t);
            nicFlapsOpenedNow_.push_back(l);
        }
    }

    // The NIC end's byte, wait and error counters: rates as Prometheus's rate() takes them (a
    // value below the last is a counter that restarted from 0: its increase is the value); the
    // first sample gives none. Utilization = max(rx, tx) over the port's speed
    // (rate_bytes_per_second, else the switch end's); received errors over
    // detection.linkErrorsPerSecond open link_errors on the link (closed below half of it).
    void nicCounter(std::uint32_t nic, std::uint32_t l, std::uint8_t counter, double v,
                    std::int64_t t) {
        auto& n = s_.nicRates[nic];
        if (counter == kNicRateBytes) {
            if (v > 0) n.speedBytes = static_cast<float>(v);
            nicSpeedRule(nic, l, v, t);
            return;
        }
        const int i = counter - kNicRxBytes;
        const double prev = n.last[i];
        const std::int64_t prevT = n.at[i];
        n.last[i] = v;
        n.at[i] = t;
        if (!std::isfinite(prev) || t <= prevT) return;
        const double increase = v >= prev ? v - prev : v;
        const double rate = increase * 1000.0 / static_cast<double>(t - prevT);
        n.rate[i] = static_cast<float>(rate);
        if (counter == kNicRxBytes || counter == kNicTxBytes) {
            double speed = n.speedBytes;
            if (!(speed > 0)) {
                const auto& link = s_.L->links()[l];
                const auto p = link.bPort != kNoIndex ? link.bPort : link.aPort;
                speed = p != kNoIndex ? s_.speedBps(p) / 8 : 50e9;
            }
            const double rx = n.rate[kNicRxBytes - kNicRxBytes];
            const double tx = n.rate[kNicTxBytes - kNicRxBytes];
            double u = std::isfinite(rx) ? rx : 0;
            if (std::isfinite(tx)) u = std::max(u, tx);
            s_.nicUtil[nic].store(static_cast<float>(std::min(100.0, u / speed * 100)), kRelaxed);
            s_.nicSeen[nic].store(seenAt(t), kRelaxed);
            return;
        }
        if (counter == kNicRcvErrors && cfg_.linkErrorsPerSecond > 0) {
            if (rate > cfg_.linkErrorsPerSecond && linkInService(l))
                linkOpenEv(l, kErrors, Severity::Warning,
                           "host NIC receive errors " + formatNumber(rate) + "/s", t);
            else if (rate < cfg_.linkErrorsPerSecond / 2)
                linkCloseEv(l, kErrors, t);
        }
    }

    // A link that flaps (a dirty optic, a marginal cable: down and up every few seconds) is held
    // down: a link_down opened while link_flapping was already open (the link failing again
    // within the episode) does not close on the ups between flaps; it closes with the flapping,
    // once the link has been quiet through its hold-down (tickPorts) and every end is up. The
    // first down of an episode closes on its up as ever (one down is no flapping), so an episode
    // is at most two link_down events and one link_flapping, however many flaps.
    static bool heldByFlapping(std::uint8_t bits) {
        return (bits & kFlap) && (bits & kDown) && (bits & kDownHeldByFlap);
    }
    // Whether an end of p's link (or p alone) is down as a failure now.
    bool endFailing(std::uint32_t p) const {
        const auto l = s_.L->ports()[p].linkIndex;
        if (l == kNoIndex) return s_.portDown[p].load(kRelaxed) == 1;
        if (nicUpOf(l) == 0 && !linkExcused(l)) return true;
        const auto& link = s_.L->links()[l];
        for (auto q : {link.aPort, link.bPort})
            if (q != kNoIndex && s_.portDown[q].load(kRelaxed) == 1) return true;
        return false;
    }

    // Time passing: flapping windows expire, and an open link_flapping event closes once the
    // link (both ends) has had no state change for the hold-down (quietIntervals x
    // intervalSeconds), like Alertmanager resolving an alert whose condition stopped.
    void tickPorts(std::int64_t now) {
        auto windowMs = static_cast<std::int64_t>(cfg_.flapWindowSeconds * 1000);
        auto quietMs =
            static_cast<std::int64_t>(cfg_.flapQuietIntervals * cfg_.flapIntervalSeconds * 1000);
        auto quiet = [&](std::uint32_t p) {
            return p == kNoIndex || now - s_.pdet[p].lastTransition >= quietMs;
        };
        for (std::uint32_t p = 0; p < s_.nP; ++p) {
            auto& d = s_.pdet[p];
            if (d.flapCount != 0 && now - d.lastTransition > windowMs) d.flapCount = 0;
            const auto l = s_.L->ports()[p].linkIndex;
            const auto n = l == kNoIndex ? kNoIndex : s_.nicOfLink(l);
            const bool nicQuiet =
                l == kNoIndex || now - (n == kNoIndex ? 0 : s_.nicFlapAt[n]) >= quietMs;
            if ((openBits(p) & kFlap) && quiet(p) && quiet(peer(p)) && nicQuiet) {
                const bool held = heldByFlapping(openBits(p));
                d.flapCount = 0;
                portClose(p, kFlap, now);
                // The link_down the flapping held open closes with it when every end is up.
                if (held && !(openBits(p) & kFlap) && !endFailing(p))
                    portClose(p, kDown, now, "recovered: up since the link stopped flapping");
            }
        }
    }

    // A stored open event (restore at start, or a new layout): set the rule state that says it
    // is open, so recovery closes it and the condition does not open it twice. False when the
    // location is not in this layout.
    bool markOpen(const FailureEvent& e, std::int64_t now) {
        const auto& L = *s_.L;
        for (std::uint8_t k = 1; k <= kLastGpuKind; k <<= 1) {
            if (gpuKindName(k) != e.kind) continue;
            auto g = L.gpuByName(e.location);
            if (g == kNoIndex) return false;
            s_.gpuOpen[g] |= k;
            storeOrigin(s_.gpuOrigin[g], k, originClass(e.origin));
            if (e.severity == Severity::Critical) s_.gpuCrit[g] |= k;
            if (k == kTemp) s_.tempLevel[g] = e.severity == Severity::Critical ? 2 : 1;
            updateGpuHealth(g);
            return true;
        }
        for (std::uint8_t k = 1; k <= kLastLinkKind; k <<= 1) {
            if (linkKindName(k) != e.kind) continue;
            std::uint32_t p = kNoIndex;
            if (auto l = L.linkByName(e.location); l != kNoIndex) {
                p = L.links()[l].aPort != kNoIndex ? L.links()[l].aPort : L.links()[l].bPort;
            } else if (auto slash = e.location.rfind('/'); slash != std::string::npos) {
                p = L.portByName(std::string_view(e.location).substr(0, slash),
                                 std::string_view(e.location).substr(slash + 1));
            }
            if (p == kNoIndex) return false;
            openBits(p) |= k;
            storeOrigin(originBits(p), k, originClass(e.origin));
            // The ends that reported down stay down until they say otherwise: a sample of the
            // other end after a restart does not close the link (issue 39).
            if (k == kDown) holdEndsDown(p, e.downEnds);
            // A restored flapping event holds down from now: it closes after a quiet period.
            if (k == kFlap && s_.pdet[p].lastTransition < now) s_.pdet[p].lastTransition = now;
            updateLinkFlags(p);
            return true;
        }
        return false;
    }

    void holdEndsDown(std::uint32_t p, const std::vector<std::string>& ends) {
        const auto& L = *s_.L;
        const auto l = L.ports()[p].linkIndex;
        for (const auto& end : ends) {
            if (end == "nic") {
                if (l == kNoIndex) continue;
                if (auto n = s_.nicOfLink(l); n != kNoIndex && s_.nicUp[n] != 1) s_.nicUp[n] = 0;
                continue;
            }
            auto slash = end.rfind('/');
            if (slash == std::string::npos) continue;
            auto q = L.portByName(std::string_view(end).substr(0, slash),
                                  std::string_view(end).substr(slash + 1));
            if (q == kNoIndex || (q != p && L.ports()[q].linkIndex != l)) continue;
            // Not a fresh sample: portSeen stays, so link.health reads the event, not a value.
            if (s_.pdet[q].lastOper != 1) s_.portDown[q].store(1, kRelaxed);
        }
    }

    // The event is closed without this hub's rules: forget it. An operator's close (holdBack)
    // holds the kind back until the condition clears. Another loomd's recovery does not: its
    // source said the condition cleared, so what this hub last heard of it is older, and the
    // next report that it failed opens a new event (issue 39: every loomd follows the stored
    // events).
    void forgetOpen(const std::string& kind, const std::string& location, bool holdBack) {
        const auto& L = *s_.L;
        for (std::uint8_t k = 1; k <= kLastGpuKind; k <<= 1) {
            if (gpuKindName(k) != kind) continue;
            auto g = L.gpuByName(location);
            if (g == kNoIndex) return;
            if (!(s_.gpuOpen[g] & k)) return;
            s_.gpuOpen[g] &= static_cast<std::uint8_t>(~k);
            s_.gpuCrit[g] &= static_cast<std::uint8_t>(~k);
            storeOrigin(s_.gpuOrigin[g], k, kOriginAny);
            if (holdBack) {
                s_.gpuSuppressed[g] |= k;
            } else {
                if (k == kTemp) s_.tempLevel[g] = 0;
                stillHeld(g, k);  // no hold-down of an event that is gone
            }
            updateGpuHealth(g);
            return;
        }
        for (std::uint8_t k = 1; k <= kLastLinkKind; k <<= 1) {
            if (linkKindName(k) != kind) continue;
            std::uint32_t p = kNoIndex;
            if (auto l = L.linkByName(location); l != kNoIndex) {
                p = L.links()[l].aPort != kNoIndex ? L.links()[l].aPort : L.links()[l].bPort;
            } else if (auto slash = location.rfind('/'); slash != std::string::npos) {
                p = L.portByName(std::string_view(location).substr(0, slash),
                                 std::string_view(location).substr(slash + 1));
            }
            if (p == kNoIndex || !(openBits(p) & k)) return;
            openBits(p) &= static_cast<std::uint8_t>(~(k == kDown ? kDownBits : k));
            storeOrigin(originBits(p), k, kOriginAny);
            if (holdBack)
                suppressedBits(p) |= k;
            else if (k == kDown)
                forgetEndsDown(p);
            updateLinkFlags(p);
            return;
        }
    }

    // Every end of p's link (or p alone) reported up elsewhere: what this hub held down of
    // them is unknown now, not down (the next sample says which).
    void forgetEndsDown(std::uint32_t p) {
        const auto& L = *s_.L;
        const auto l = L.ports()[p].linkIndex;
        auto forgetPort = [&](std::uint32_t q) {
            if (q == kNoIndex || s_.portDown[q].load(kRelaxed) == 0) return;
            s_.portDown[q].store(0, kRelaxed);
            s_.pdet[q].lastOper = -1;
        };
        if (l == kNoIndex) {
            forgetPort(p);
            return;
        }
        forgetPort(L.links()[l].aPort);
        forgetPort(L.links()[l].bPort);
        if (auto n = s_.nicOfLink(l); n != kNoIndex && s_.nicUp[n] == 0) {
            s_.nicUp[n] = -1;
            s_.nicDownBy[n] = 0;
        }
    }

private:
    State& s_;
    const DetectionConfig& cfg_;
    std::unordered_map<std::string, FailureEvent>& open_;
    std::mutex& openMutex_;
    std::vector<FailureEvent>& out_;
    const std::string& keyPrefix_;
    std::atomic<std::uint64_t>& keySeq_;
    std::string_view originName_;
    std::uint8_t origin_ = kOriginAny;
    std::vector<std::uint32_t> endsChanged_;        // links, for finish()
    std::vector<std::uint32_t> nicFlapsOpenedNow_;  // links whose NIC opened link_flapping now
    int originIndex_ = -1;                          // originIndex(), once looked up; -1: not yet
    std::int64_t arrivalMs_ = 0;                    // setArrival; 0: a tick or a layout change
    std::uint64_t opened_ = 0, closed_ = 0;
};

}  // namespace loom::telemetry::detail
