#include "loom/backend/provisioning_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <set>
#include <span>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "config_diff.hpp"
#include "live_topology.hpp"
#include "loom/backend/telemetry_service.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/leader.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/fabric/export.hpp"
#include "loom/fabric/link_sync.hpp"
#include "loom/fabric/routes_down.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary_router.hpp"
#include "loom/fabric/topology.hpp"
#include "loom/inventory/text.hpp"
#include "loom/provisioning/link_service.hpp"
#include "loom/provisioning/reconciler.hpp"

namespace loom::backend {
namespace prov = loom::provisioning;
using prov::HostState;
using prov::RackState;

namespace {

// The cables' names are the loaded inventory's Texts (8 bytes, sharing its blocks: a cable's
// port names once for both of its planned ends, no std::string of 32 bytes and a heap block
// each). At 98k they are ~340k planned ends and ~230k cables held through a whole rollout.
using PlannedEnd = std::pair<inventory::Text, inventory::Text>;  // (port, peer)

struct RackCtx {
    std::vector<std::string> hosts;
    std::vector<std::vector<std::string>> gpus;
    std::vector<PlannedEnd> planned;
    std::vector<inventory::Text> links;   // every cable with an end in the rack
    std::vector<std::int32_t> topoLinks;  // its backend links in the fabric topology
    std::int32_t rtsw = fabric::kNone;    // topology switch id of its tier-1 switch
};

// What the cabling gate (prov::checkCabling) reads: the rack's planned ends as strings, made
// for one rack's step at a time.
std::vector<prov::PlannedLink> plannedLinksOf(const std::vector<PlannedEnd>& planned) {
    std::vector<prov::PlannedLink> out;
    out.reserve(planned.size());
    for (const auto& [port, peer] : planned) out.push_back({port.str(), peer.str()});
    return out;
}

bool hostUsable(HostState s) {
    return s != HostState::Quarantined && s != HostState::Rma && s != HostState::Decommissioned &&
           s != HostState::Repair;
}

}  // namespace

struct ProvisioningService::Impl {
    db::Database database;
    std::shared_ptr<prov::Executor> executor;
    ProvisioningOptions opt;
    std::optional<db::Connection> conn;
    std::optional<db::Fence> fence;  // runLoop's term: every batch commit is fenced by it

    std::string planDoc;
    std::optional<prov::PhasePlan> plan;

    std::int64_t generation = -1;
    std::unordered_map<std::string, RackCtx> racks;
    // The fabric's routing: the summarised tables on RoCE (~50 MB at 98k GPUs instead of a full
    // Router's ~400 MB; the same configs, tests/fabric/summary_router_export_test.cpp), the full
    // Router on InfiniBand (LFTs are per LID).
    std::optional<fabric::Router> router;
    std::optional<fabric::SummaryRouter> summary;
    bool routed() const { return router || summary; }
    template <class F>
    decltype(auto) visit(F&& f) {
        return router ? f(*router) : f(*summary);
    }
    const fabric::Topology& topology() const {
        return router ? router->topology() : summary->topology();
    }
    void setLinkStates(std::span<const std::pair<std::int32_t, fabric::LinkState>> changes) {
        visit([&](auto& r) { r.setLinkStates(changes); });
    }
    void setSwitchesUp(std::span<const std::pair<std::int32_t, bool>> changes) {
        visit([&](auto& r) { r.setSwitchesUp(changes); });
    }
    std::int32_t targetOf(std::int32_t sw) {
        return visit([&](const auto& r) { return r.targetOf(sw); });
    }
    // Switch p reaches rack target t going only down (fabric/routes_down.hpp; equal on both
    // routers, tests/fabric/routes_down_test.cpp).
    bool routesDown(std::int32_t p, std::int32_t t) {
        return visit([&](const auto& r) { return fabric::routesDown(r, p, t); });
    }
    bool fabricDirty = true;
    bool configsLoaded = false;
    std::unordered_map<std::string, std::pair<int, PackedConfig>> lastConfig;  // config_diff.hpp
    fabric::LinkNameIndex linkIds;         // router link ids by name
    fabric::LinkNameIndex::Memo linkMemo;  // changes() by pointers (link_sync.hpp)
    std::shared_ptr<const inventory::Inventory> syncedFrom;  // last live snapshot applied

    // Link and switch states others changed (operator actions, the leader's live sync) reach
    // the router incrementally; the reconciler's own changes are already in it (no-ops here).
    void syncRouter() {
        if (!routed() || !opt.liveInventory) return;
        auto inv = opt.liveInventory();
        if (!inv || inv == syncedFrom) return;
        syncedFrom = inv;
        const auto changes = linkIds.changes(topology(), *inv, linkMemo);
        if (!changes.empty()) setLinkStates(changes);
        const auto switches =
            fabric::switchChanges(topology(), linkIds.switchStates(topology(), *inv));
        if (!switches.empty()) setSwitchesUp(switches);
    }
    // The switches a rack's cables going into service bring with them (follow_rack.hpp's rule
    // on the topology): its RTSW, and the switches outside racks that serve its zone or stand
    // above zones; those not up yet.
    void switchesServing(std::int32_t rtsw, std::vector<std::pair<std::int32_t, bool>>& out) {
        const auto& t = topology();
        if (!t.switchUp[rtsw]) out.emplace_back(rtsw, true);
        const auto zone = t.switchZone[rtsw];
        for (std::int32_t s = 0; s < t.switchCount(); ++s)
            if (!t.switchUp[s] && t.switchRack[s] == fabric::kNone &&
                (t.switchZone[s] == fabric::kNone || t.switchZone[s] == zone))
                out.emplace_back(s, true);
    }

    Result<db::Connection*> connection() {
        if (!conn) {
            auto c = database.connect();
            if (!c) return fail(c.error());
            conn.emplace(std::move(*c));
        }
        return &*conn;
    }

    // Rack → hosts, GPUs, cables; and the fabric router, from the stored inventory.
    Result<void> loadContext(db::ProvisioningRepo& repo) {
        auto gen = repo.inventoryGeneration();
        if (!gen) return fail(gen.error());
        if (*gen == generation && !fabricDirty) return {};
        auto inv = db::loadInventory(*conn);
        if (!inv) return fail(inv.error());
        racks.clear();
        std::unordered_map<std::string_view, std::string_view> hostRack, deviceRack;
        for (const auto& r : inv->racks) racks[r.name.str()];
        std::unordered_map<std::string_view, std::size_t> hostIdx;
        for (const auto& h : inv->hosts) {
            hostRack[h.name] = h.rack;
            auto& rc = racks[h.rack.str()];
            hostIdx[h.name] = rc.hosts.size();
            rc.hosts.emplace_back(h.name);
            rc.gpus.emplace_back();
        }
        for (const auto& g : inv->gpus)
            if (auto it = hostRack.find(g.host); it != hostRack.end())
                racks[std::string(it->second)].gpus[hostIdx[g.host]].emplace_back(g.name);
        for (const auto& s : inv->storageNodes) hostRack[s.name] = s.rack;
        for (const auto& s : inv->switches)
            if (!s.rack.empty()) deviceRack[s.name] = s.rack;
        for (const auto& n : inv->nics)
            if (auto it = hostRack.find(n.host); it != hostRack.end())
                deviceRack[n.name] = it->second;
        std::unordered_map<std::string_view, std::string_view> portRack;
        for (const auto& p : inv->ports)
            if (auto it = deviceRack.find(p.device); it != deviceRack.end())
                portRack[p.name] = it->second;
        for (const auto& l : inv->links) {
            auto a = portRack.find(l.aPort), b = portRack.find(l.bPort);
            if (a != portRack.end()) {
                auto& rc = racks[std::string(a->second)];
                rc.planned.emplace_back(l.aPort, l.bPort);
                rc.links.push_back(l.name);
            }
            if (b != portRack.end()) {
                auto& rc = racks[std::string(b->second)];
                rc.planned.emplace_back(l.bPort, l.aPort);
                if (a == portRack.end() || a->second != b->second) rc.links.push_back(l.name);
            }
        }
        router.reset();
        summary.reset();
        if (opt.fabric) {
            auto topo = buildLiveTopology(*inv);
            if (!topo) {
                spdlog::warn(
                    "provisioning: fabric topology unavailable, enablement without "
                    "routing: {}",
                    topo.error().toString());
            } else {
                linkIds = fabric::LinkNameIndex(*topo);
                linkMemo = {};
                for (auto& [name, rc] : racks) {
                    for (const auto& ln : rc.links)
                        if (auto id = linkIds.find(*topo, ln); id != fabric::kNone)
                            rc.topoLinks.push_back(id);
                    for (std::int32_t s = 0; s < topo->switchCount(); ++s)
                        if (topo->switchTier[s] == 1 && topo->switchRack[s] != fabric::kNone &&
                            topo->rackNames[topo->switchRack[s]] == name)
                            rc.rtsw = s;
                }
                if (topo->type == inventory::FabricType::Roce)
                    summary.emplace(std::move(*topo));
                else
                    router.emplace(std::move(*topo));
            }
        }
        generation = *gen;
        fabricDirty = false;
        return {};
    }

    // Once every phase of the plan is done, nothing steps a rack until a plan or phase starts
    // again: the context (every rack's hosts, GPUs and cable names, the fabric's summarised
    // routing, the link name index) goes, ~190 MB of loomd's 941 MB after a 98k rollout
    // (issue 37 item 3). lastConfig stays: the next config of a switch diffs against it.
    void releaseContext() {
        if (generation < 0 && !routed() && racks.empty()) return;
        decltype(racks)().swap(racks);
        router.reset();
        summary.reset();
        linkIds = {};
        linkMemo = {};
        syncedFrom.reset();
        generation = -1;
        fabricDirty = true;
    }
    bool holdsContext() const { return generation >= 0 || routed() || !racks.empty(); }

    std::string switchConfig(std::int32_t sw) const {
        return summary ? fabric::frrConfig(*summary, sw) : fabric::routesJson(*router, sw);
    }
};

ProvisioningService::ProvisioningService(db::Database db, std::shared_ptr<prov::Executor> executor,
                                         ProvisioningOptions options)
    : impl_(std::make_unique<Impl>()) {
    impl_->database = std::move(db);
    impl_->executor = std::move(executor);
    impl_->opt = std::move(options);
}

ProvisioningService::~ProvisioningService() = default;

Result<PassStats> ProvisioningService::runOnce() {
    auto& I = *impl_;
    PassStats stats;
    auto mark = std::chrono::steady_clock::now();
    auto lap = [&mark] {
        const auto now = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - mark).count();
        mark = now;
        return ms;
    };
    auto c = I.connection();
    if (!c) return fail(c.error());
    db::ProvisioningRepo repo(**c);
    auto st = repo.load();
    if (!st) {
        I.conn.reset();  // a broken connection is replaced on the next pass
        return fail(st.error());
    }
    if (st->planName.empty()) return stats;
    stats.planPresent = true;
    if (st->planDocument != I.planDoc || !I.plan) {
        auto p = prov::parsePhasePlan(st->planDocument);
        if (!p) return fail(p.error());
        I.plan = std::move(*p);
        I.planDoc = st->planDocument;
    }
    const auto& plan = *I.plan;
    stats.loadMs = lap();
    prov::State state;
    state.nowMs = st->nowMs;
    state.phases.resize(plan.phases.size());
    for (const auto& p : st->phases)
        if (p.ordinal >= 0 && p.ordinal < static_cast<int>(state.phases.size()))
            state.phases[p.ordinal] = p.view;
    state.racks.reserve(st->racks.size());
    for (const auto& r : st->racks)
        state.racks.push_back({r.name, r.phase, r.order, r.state, r.attempts, r.enteredAtMs,
                               r.notBeforeMs, r.timeoutRaised});
    prov::Reconciler rec(plan);
    auto actions = rec.step(state);
    for (const auto& r : state.racks)
        if (r.notBeforeMs > state.nowMs && (!stats.nextDueMs || r.notBeforeMs < stats.nextDueMs))
            stats.nextDueMs = r.notBeforeMs;
    if (actions.empty()) {
        const bool done = std::ranges::all_of(state.phases, [](const prov::PhaseView& p) {
            return p.status == prov::PhaseStatus::Completed ||
                   p.status == prov::PhaseStatus::Halted || p.status == prov::PhaseStatus::Aborted;
        });
        if (done) I.releaseContext();
        return stats;
    }
    // The context only a pass with work needs (a pass used to load it before knowing).
    if (auto ok = I.loadContext(repo); !ok) return fail(ok.error());
    I.syncRouter();
    stats.contextMs = lap();

    auto phaseName = [&](int p) {
        return p >= 0 && p < static_cast<int>(plan.phases.size()) ? plan.phases[p].name
                                                                  : std::string();
    };
    db::Batch batch;
    batch.fence = I.fence;
    std::vector<const prov::Action*> steps;
    for (const auto& a : actions) {
        switch (a.kind) {
            case prov::ActionKind::StartPhase:
                batch.phases.push_back({phaseName(a.phase), prov::PhaseStatus::Pending,
                                        prov::PhaseStatus::Running, a.reason});
                break;
            case prov::ActionKind::CompletePhase:
                batch.phases.push_back({phaseName(a.phase), prov::PhaseStatus::Running,
                                        prov::PhaseStatus::Completed, a.reason});
                break;
            case prov::ActionKind::HaltPhase:
                batch.phases.push_back({phaseName(a.phase), prov::PhaseStatus::Running,
                                        prov::PhaseStatus::Halted, a.reason});
                break;
            case prov::ActionKind::RaiseTimeout:
                batch.timeouts.push_back({state.racks[a.rack].name, st->racks[a.rack].seq,
                                          "rack " + state.racks[a.rack].name + " " + a.reason,
                                          phaseName(a.phase)});
                break;
            case prov::ActionKind::Step:
                if (static_cast<int>(steps.size()) < I.opt.maxBatch) steps.push_back(&a);
                break;
        }
    }
    stats.actions = static_cast<int>(batch.phases.size() + batch.timeouts.size() + steps.size());
    // The host states of the racks stepped in this pass (all that the steps and their host
    // changes look at): a pass used to read all 12,288 hosts of a 98k hall.
    std::unordered_map<std::string, HostState> hostState;
    {
        std::vector<std::string> stepped;
        stepped.reserve(steps.size());
        for (const auto* a : steps) stepped.push_back(state.racks[a->rack].name);
        auto hs = repo.hostStatesOfRacks(stepped);
        if (!hs) return fail(hs.error());
        for (const auto& [n, s] : *hs)
            hostState[n] = prov::parseHostState(s).value_or(HostState::Quarantined);
    }

    // Executor work in parallel: it is the slow part in the real world (burn-in takes hours).
    struct Job {
        prov::RackContext ctx;
        prov::StepKind kind;
        prov::StepOutcome outcome;
        std::string output;
        bool skip = false;  // nothing to decide yet (no LLDP report): not an attempt
        prov::BurnInVerdict verdict;
    };
    std::vector<Job> jobs(steps.size());
    std::optional<std::unordered_map<std::string, std::vector<prov::ObservedNeighbour>>> lldp;
    for (std::size_t k = 0; k < steps.size(); ++k) {
        const auto& a = *steps[k];
        auto& j = jobs[k];
        const auto& rv = state.racks[a.rack];
        j.kind = prov::stepKind(a.from, a.to);
        j.ctx.rack = rv.name;
        j.ctx.attempt = rv.attempts + 1;
        if (rv.phase >= 0) j.ctx.burnIn = plan.phases[rv.phase].burnIn;
        if (auto it = I.racks.find(rv.name); it != I.racks.end()) {
            for (std::size_t h = 0; h < it->second.hosts.size(); ++h) {
                auto hsIt = hostState.find(it->second.hosts[h]);
                if (hsIt != hostState.end() && !hostUsable(hsIt->second)) continue;
                j.ctx.hosts.push_back(it->second.hosts[h]);
                j.ctx.gpus.push_back(it->second.gpus[h]);
            }
            if (j.kind == prov::StepKind::Cabling)
                j.ctx.plannedLinks = plannedLinksOf(it->second.planned);
        }
    }
    {
        std::atomic<std::size_t> next{0};
        auto work = [&] {
            for (std::size_t k; (k = next.fetch_add(1)) < jobs.size();) {
                auto& j = jobs[k];
                const auto& a = *steps[k];
                switch (j.kind) {
                    case prov::StepKind::Physical: {
                        auto o = I.executor->physical(j.ctx, a.to);
                        j.outcome = {o.ok, o.reason};
                        j.output = std::move(o.output);
                        break;
                    }
                    case prov::StepKind::Cabling: {
                        auto seen = I.executor->observeCabling(j.ctx);
                        if (!seen && seen.error().code == Errc::NotFound) {
                            j.skip = true;  // decided below from the API's LLDP reports
                            break;
                        }
                        if (!seen) {
                            j.outcome = {false, "cabling check failed: " + seen.error().message};
                            break;
                        }
                        auto rep = prov::checkCabling(j.ctx.plannedLinks, *seen);
                        j.outcome = {rep.ok(), rep.ok() ? "" : "cabling: " + rep.summary()};
                        j.output = rep.summary(1000);
                        break;
                    }
                    case prov::StepKind::BurnIn: {
                        if (j.ctx.hosts.empty()) {
                            j.outcome = {true, "no compute hosts"};
                            break;
                        }
                        auto r = I.executor->burnIn(j.ctx);
                        if (!r) {
                            j.outcome = {false, "burn-in could not run: " + r.error().message};
                            break;
                        }
                        j.verdict = prov::judgeBurnIn(*r, j.ctx.burnIn);
                        j.outcome = {j.verdict.passed, j.verdict.reason};
                        j.output = r->output;
                        for (const auto& h : r->hosts)
                            if (!h.passed) j.output += "\n" + h.host + ": " + h.output;
                        break;
                    }
                    default:
                        j.outcome = {true, ""};
                        break;
                }
            }
        };
        const int n = std::clamp<int>(static_cast<int>(jobs.size()), 1, std::max(1, I.opt.workers));
        std::vector<std::jthread> pool;
        for (int t = 1; t < n; ++t) pool.emplace_back(work);
        work();
    }

    // Fabric enablement and drains of every rack in this pass: one batched reroute for all
    // their links (a rack at a time cost one incremental reroute per link: 55 s of a 24k
    // rollout), then the reachability check per rack, then one batch undoing the racks whose
    // uplink peers cannot reach them.
    std::set<std::int32_t> affected;
    std::vector<std::string> fabricRacks;
    auto rackCtxOf = [&](const std::string& name) -> const RackCtx* {
        auto it = I.racks.find(name);
        return it == I.racks.end() ? nullptr : &it->second;
    };
    auto isFabricStep = [](prov::StepKind k) {
        return k == prov::StepKind::FabricEnable || k == prov::StepKind::FabricDrain;
    };
    if (I.routed()) {
        std::vector<std::pair<std::int32_t, fabric::LinkState>> changes, undo;
        // A rack's switch follows it as its cables do (fabric::liveSwitchState): up with them on
        // enablement (with the zone's switches, follow_rack.hpp), down when they are drained.
        std::vector<std::pair<std::int32_t, bool>> switchesUp, switchesDown, switchesUndo;
        for (std::size_t k = 0; k < steps.size(); ++k) {
            const auto& j = jobs[k];
            const RackCtx* rc = rackCtxOf(state.racks[steps[k]->rack].name);
            if (!j.outcome.ok || !isFabricStep(j.kind) || !rc) continue;
            const bool enable = j.kind == prov::StepKind::FabricEnable;
            const auto ls = enable ? fabric::LinkState::Up : fabric::LinkState::Drained;
            for (auto l : rc->topoLinks) changes.emplace_back(l, ls);
            if (rc->rtsw == fabric::kNone) continue;
            if (enable)
                I.switchesServing(rc->rtsw, switchesUp);
            else
                switchesDown.emplace_back(rc->rtsw, false);
        }
        if (!changes.empty()) I.setLinkStates(changes);
        if (!switchesUp.empty()) I.setSwitchesUp(switchesUp);
        if (!switchesDown.empty()) I.setSwitchesUp(switchesDown);
        const auto& topo = I.topology();
        for (std::size_t k = 0; k < steps.size(); ++k) {
            auto& j = jobs[k];
            const RackCtx* rc = rackCtxOf(state.racks[steps[k]->rack].name);
            if (!j.outcome.ok || !isFabricStep(j.kind) || !rc || rc->rtsw == fabric::kNone)
                continue;
            const bool enable = j.kind == prov::StepKind::FabricEnable;
            const auto t = I.targetOf(rc->rtsw);
            int reach = 0, peers = 0;
            affected.insert(rc->rtsw);
            for (auto l : topo.upLinks(rc->rtsw)) {
                const auto p = topo.peer(l, rc->rtsw);
                affected.insert(p);
                ++peers;
                if (t != fabric::kNone && I.routesDown(p, t)) ++reach;
            }
            if (enable && reach == 0) {
                for (auto l : rc->topoLinks) undo.emplace_back(l, fabric::LinkState::NotInService);
                // Its switch goes back out with its cables; the zone's switches are the live
                // sync's (they serve the zone while another rack of it does).
                switchesUndo.emplace_back(rc->rtsw, false);
                j.outcome = {false, "fabric enablement: none of the " + std::to_string(peers) +
                                        " uplink peers reaches the rack prefix"};
            } else {
                j.output = "fabric: " + std::to_string(rc->topoLinks.size()) + " links " +
                           (enable ? "up" : "drained") + "; " + std::to_string(reach) + "/" +
                           std::to_string(peers) + " uplink peers route to the rack";
            }
        }
        if (!undo.empty()) I.setLinkStates(undo);
        if (!switchesUndo.empty()) I.setSwitchesUp(switchesUndo);
    }

    // Decisions, host/GPU changes and the links' stored states, serially.
    for (std::size_t k = 0; k < steps.size(); ++k) {
        const auto& a = *steps[k];
        auto& j = jobs[k];
        const auto& rv = state.racks[a.rack];
        const auto& sr = st->racks[a.rack];
        const RackCtx* rc = rackCtxOf(rv.name);
        if (j.skip) {
            if (!lldp) {
                auto all = repo.lldpAll();
                if (!all) return fail(all.error());
                lldp.emplace();
                for (auto& [r, v] : *all) (*lldp)[r] = std::move(v);
            }
            auto it = lldp->find(rv.name);
            if (it == lldp->end()) continue;  // waiting for the rack's LLDP report
            auto rep = prov::checkCabling(
                rc ? plannedLinksOf(rc->planned) : std::vector<prov::PlannedLink>{}, it->second);
            j.outcome = {rep.ok(), rep.ok() ? "" : "cabling: " + rep.summary()};
            j.output = rep.summary(1000);
        }
        db::RackChange ch;
        ch.rack = rv.name;
        ch.from = a.from;
        ch.seq = sr.seq;
        ch.phase = phaseName(rv.phase);
        ch.executor = isFabricStep(j.kind) ? "fabric" : I.executor->name();
        auto hostsIn = [&](HostState from, HostState to) {
            if (!rc) return;
            for (const auto& h : rc->hosts)
                if (auto it = hostState.find(h); it != hostState.end() && it->second == from)
                    ch.hosts.push_back({h, from, to});
        };
        auto d = rec.judge(rv, a, j.outcome, state.nowMs);
        // The rack's cables take the state its new state gives them (link_service.hpp: the
        // same rule as operator actions and the leader's live sync, so every path agrees).
        if (d.transition && rc && prov::linkServiceFor(d.to) != prov::linkServiceFor(a.from)) {
            ch.linkNames.reserve(rc->links.size());
            for (const auto& l : rc->links) ch.linkNames.push_back(l.str());
            ch.linkState = std::string(prov::linkStateName(prov::linkServiceFor(d.to)));
            if (isFabricStep(j.kind)) fabricRacks.push_back(rv.name);
        }
        ch.transition = d.transition;
        ch.to = d.transition ? d.to : a.from;
        ch.attempts = d.attempts;
        ch.notBeforeMs = d.notBeforeMs;
        ch.reason = d.reason;
        ch.output = std::move(j.output);
        if (!j.outcome.ok) {
            ch.event = "rack " + rv.name + ": " + d.reason;
            ch.eventKind = d.transition ? "rack_failed" : "gate_failed";
        }
        // Host and GPU states that go with the rack's step.
        if (d.transition && d.to == RackState::BurnIn) {
            hostsIn(HostState::Planned, HostState::BurnIn);
            hostsIn(HostState::Ready, HostState::BurnIn);
        }
        if (j.kind == prov::StepKind::BurnIn && d.transition) {
            const auto& v = j.verdict;
            for (std::size_t q = 0; q < v.quarantineHosts.size(); ++q) {
                const auto& h = v.quarantineHosts[q];
                db::HostChange hc{h, HostState::BurnIn, HostState::Quarantined};
                // What its host_quarantined event names: the GPUs blamed (a GPU's name is its
                // host's plus "-gpuN"), the diagnostic and the bar it missed.
                for (const auto& g : v.quarantineGpus)
                    if (g.size() > h.size() && g.starts_with(h) && g[h.size()] == '-')
                        hc.gpus += (hc.gpus.empty() ? "" : ",") + g;
                if (q < v.quarantineDiagnostics.size()) hc.diagnostic = v.quarantineDiagnostics[q];
                if (q < v.quarantineThresholds.size()) hc.threshold = v.quarantineThresholds[q];
                ch.hosts.push_back(std::move(hc));
            }
            for (const auto& g : j.verdict.quarantineGpus)
                ch.gpus.push_back({g, prov::GpuState::Ok, prov::GpuState::Quarantined});
            if (d.to == RackState::Validated && rc)
                for (const auto& h : rc->hosts)
                    if (std::find(j.verdict.quarantineHosts.begin(),
                                  j.verdict.quarantineHosts.end(),
                                  h) == j.verdict.quarantineHosts.end() &&
                        hostState.count(h) && hostState[h] == HostState::BurnIn)
                        ch.hosts.push_back({h, HostState::BurnIn, HostState::Ready});
        }
        if (d.transition && d.to == RackState::InService)
            hostsIn(HostState::Ready, HostState::InService);
        if (d.transition && d.to == RackState::Drained)
            hostsIn(HostState::InService, HostState::Ready);
        if (d.transition)
            ++stats.rackTransitions;
        else
            ++stats.retries;
        batch.racks.push_back(std::move(ch));
    }

    // One new config version per affected switch, all in one config set.
    if (I.routed() && !affected.empty()) {
        if (!I.configsLoaded) {
            auto cur = repo.latestConfigs();
            if (!cur) return fail(cur.error());
            for (auto& [sw, v] : *cur) I.lastConfig[sw] = {v.first, PackedConfig(v.second)};
            I.configsLoaded = true;
        }
        const auto& topo = I.topology();
        for (auto sw : affected) {
            auto cfg = I.switchConfig(sw);
            const auto& name = topo.switchNames[sw];
            auto& last = I.lastConfig[name];
            if (last.first > 0 && last.second.equals(cfg)) continue;
            batch.configs.push_back({name, cfg, lineDiff(last.second.text(), cfg)});
        }
        batch.configReason = std::to_string(fabricRacks.size()) + " rack(s) changed service: ";
        for (std::size_t i = 0; i < fabricRacks.size() && i < 20; ++i)
            batch.configReason += (i ? ", " : "") + fabricRacks[i];
        if (fabricRacks.size() > 20) batch.configReason += ", ...";
    }

    stats.workMs += lap();
    auto res = repo.commit(batch);
    stats.commitMs = lap();
    if (!res) {
        I.fabricDirty = true;  // the router ran ahead of the database: rebuild it from there
        I.conn.reset();
        return fail(res.error());
    }
    for (const auto& cv : batch.configs) {
        auto& last = I.lastConfig[cv.switchName];
        last = {last.first + 1, PackedConfig(cv.config)};
    }
    stats.transitions = res->transitions;
    for (std::size_t i = 0; i < batch.racks.size(); ++i) {
        const auto& ch = batch.racks[i];
        if (!res->rackApplied[i]) {
            ++stats.skipped;
            if (!ch.linkState.empty()) I.fabricDirty = true;
            continue;
        }
        if (ch.transition && I.opt.publish)
            I.opt.publish("provisioning", {{"type", "provisioning"},
                                           {"rack", ch.rack},
                                           {"from", prov::stateName(ch.from)},
                                           {"to", prov::stateName(ch.to)},
                                           {"phase", ch.phase},
                                           {"reason", ch.reason}});
    }
    for (std::size_t i = 0; i < batch.phases.size(); ++i)
        if (res->phaseApplied[i] && I.opt.publish)
            I.opt.publish("phase", {{"type", "phase"},
                                    {"phase",
                                     {{"name", batch.phases[i].phase},
                                      {"status", prov::phaseStatusName(batch.phases[i].to)},
                                      {"message", batch.phases[i].message}}}});
    // The quarantines' host_quarantined events, as stored, on the events topic (one shape
    // with REST): the console's failure counter and event list see them at once.
    if ((!res->openedEvents.empty() || !res->closedEvents.empty()) && I.opt.publish) {
        auto ids = res->openedEvents;
        ids.insert(ids.end(), res->closedEvents.begin(), res->closedEvents.end());
        if (auto rows = db::getEvents(**c, ids))
            for (const auto& r : *rows)
                I.opt.publish("events", {{"type", "event"}, {"event", eventJson(r)}});
    }
    total_ += stats.transitions;
    return stats;
}

bool ProvisioningService::holdsContext() const { return impl_->holdsContext(); }

void ProvisioningService::runLoop(std::stop_token stop) {
    using namespace std::chrono;
    // Leadership is loomd's lease (db/leader.hpp); without one from the caller, our own.
    std::unique_ptr<db::LeaderLock> own;
    auto leadership = impl_->opt.leadership;
    if (!leadership) {
        own = std::make_unique<db::LeaderLock>(impl_->database);
        leadership = [&own] { return own->fence(); };
    }
    while (!stop.stop_requested()) {
        auto fence = leadership();
        if (!fence) {
            if (leader_) spdlog::warn("provisioning: reconciler lost the leader lease");
            leader_ = false;
            std::this_thread::sleep_for(milliseconds(200));
            continue;
        }
        if (!leader_) spdlog::info("provisioning: reconciler is leader (epoch {})", fence->epoch);
        leader_ = true;
        // A commit after the lease moved on is refused by the database (fencing).
        impl_->fence = std::move(fence);
        auto s = runOnce();
        if (!s) {
            spdlog::warn("provisioning: pass failed: {}", s.error().toString());
            if (s.error().message.find("leadership lost") != std::string::npos &&
                impl_->opt.onFenced)
                impl_->opt.onFenced();
            std::this_thread::sleep_for(seconds(1));
            continue;
        }
        if (!s->idle())
            spdlog::debug(
                "provisioning: pass: {} action(s), {} rack transition(s), {} retry(ies), {} "
                "audit row(s) in {:.0f} ms (state {:.0f}, context {:.0f}, steps {:.0f}, commit "
                "{:.0f})",
                s->actions, s->rackTransitions, s->retries, s->transitions,
                s->loadMs + s->contextMs + s->workMs + s->commitMs, s->loadMs, s->contextMs,
                s->workMs, s->commitMs);
        if (s->idle()) std::this_thread::sleep_for(impl_->opt.idleInterval);
    }
}

}  // namespace loom::backend
