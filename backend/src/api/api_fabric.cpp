// Fabric endpoints: routes, config, export, impact, degradation and topology, computed by the
// fabric library from the stored inventory. The routing state is rebuilt lazily, once per
// inventory snapshot (after an apply), and shared read-only between requests.
#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>

#include "live_topology.hpp"
#include "loom/backend/router.hpp"
#include "loom/backend/services.hpp"
#include "loom/fabric/export.hpp"
#include "loom/fabric/impact.hpp"
#include "loom/fabric/link_sync.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/summary_router.hpp"
#include "loom/fabric/topology.hpp"
#include "loom/inventory/natural_order.hpp"
#include "loom/telemetry/hall_layout.hpp"
#include "loom/telemetry/link_health_words.hpp"
#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::backend {

namespace {

// The routing state of the live inventory: rebuilt when the structure changes (an apply),
// and rerouted incrementally, in place, when only states change (a rack moved, a link
// drained). A request reads the router under a shared lock (Held); a reroute takes it
// exclusively for the few milliseconds of setLinkStates. It used to reroute a copy so that
// readers were undisturbed, but at 98k a router is ~400 MB of tables: every rack transition
// copied it (loomd at 2.3 GB RSS while a 98k hall went into service,
// bench/server/run_scale_live.sh). Lock order: `mutex`, then `routerLock`; nothing takes
// `mutex` while holding `routerLock` (Held carries what a reader needs of the rest).
// RoCE holds the summarised tables alone (fabric::SummaryRouter: every answer and export the
// same bytes as from a full Router, tests/fabric/summary_router_export_test.cpp; at 98k ~1.5 M
// entries instead of the Router's 41.5 M, ~400 MB); InfiniBand the full Router (LFTs are per LID).
struct FabricState {
    std::mutex mutex;
    std::shared_mutex routerLock;
    std::shared_ptr<const inventory::Inventory> builtFrom;
    std::int64_t builtLayout = 0;
    // Router link and switch ids by name (a snapshot's vectors follow the tables' order, which
    // moves).
    fabric::LinkNameIndex linkIds;
    fabric::LinkNameIndex::Memo linkMemo;            // changes() by pointers (link_sync.hpp)
    std::shared_ptr<fabric::Router> router;          // InfiniBand
    std::shared_ptr<fabric::SummaryRouter> summary;  // RoCE
    // Each switch's state as the live fabric reads it (fabric::liveSwitchState; `up` is the
    // router's switchUp), by switch id: what GET /fabric/topology says of it. Replaced, never
    // changed in place: a reader keeps the one of its router.
    std::shared_ptr<const std::vector<fabric::LinkState>> switchStates;
    std::int64_t version = 0;
    std::mutex degradationMutex;
    std::vector<float> lastDegradation;  // what the stream was last told
    // The link states and switch up-ness each recent version changed, with their values before
    // it (newest last): a switch's previous config is rebuilt from them on request (GET
    // config?previous=true) instead of keeping older routers (a router at 24k is tens of MB; this
    // is bytes per change). A switch follows its rack as its cables do: a failed rack's RTSW
    // goes down in the same version as its cables, and the version before has it up.
    struct Undo {
        std::int64_t version = 0;  // the version these changes produced
        std::vector<std::pair<std::int32_t, fabric::LinkState>> before;
        std::vector<std::pair<std::int32_t, bool>> switchesBefore;
    };
    std::deque<Undo> undo;
    static constexpr std::size_t kUndoVersions = 16;

    // A router as one request reads it: the shared lock keeps a reroute out meanwhile; the
    // version and the undo steps are those of this router.
    struct Held {
        std::shared_ptr<const fabric::Router> router;
        std::shared_ptr<const fabric::SummaryRouter> summary;
        std::shared_ptr<const std::vector<fabric::LinkState>> switchStates;
        std::shared_lock<std::shared_mutex> lock;
        std::int64_t version = 0;
        std::vector<Undo> undoNewestFirst;
        const fabric::Topology& topology() const {
            return router ? router->topology() : summary->topology();
        }
        // f(the Router or the SummaryRouter): the fabric library has both overloads.
        template <class F>
        decltype(auto) visit(F&& f) const {
            return router ? f(*router) : f(*summary);
        }
    };
    bool built() const { return router || summary; }
    const fabric::Topology& topology() const {
        return router ? router->topology() : summary->topology();
    }

    Result<Held> get(Services& services, bool withUndo = false) {
        auto inv = services.inventory();
        auto layout = services.layout();
        if (!inv || !layout)
            return fail(Error::unavailable("the inventory is still loading; retry shortly"));
        std::lock_guard lock(mutex);
        if (!(inv == builtFrom && built())) {
            if (built() && layout->layoutVersion() == builtLayout) {
                const auto changes = linkIds.changes(topology(), *inv, linkMemo);
                auto states = linkIds.switchStates(topology(), *inv);
                const auto switchChanges = fabric::switchChanges(topology(), states);
                if (states != *switchStates)
                    switchStates =
                        std::make_shared<const std::vector<fabric::LinkState>>(std::move(states));
                // A switch change that moves no route makes no new version (a switch whose
                // every cable is out of service already, as one the leader's sync repairs alone
                // may be): no link of it changes usability and it is no routing target. Its
                // state before is kept with the newest version's, which it does not change.
                bool moves = !changes.empty();
                const auto& t = topology();
                for (auto [sw, up] : switchChanges) {
                    if (moves) break;
                    moves =
                        (router ? router->targetOf(sw) : summary->targetOf(sw)) != fabric::kNone;
                    for (auto i = t.adjOffset[sw]; !moves && i < t.adjOffset[sw + 1]; ++i)
                        moves = t.usable(t.adjLink[i]) !=
                                fabric::usableIn(t, {}, t.adjLink[i], switchChanges);
                }
                if (!moves && !switchChanges.empty()) {
                    {
                        std::unique_lock write(routerLock);
                        setLiveStates(router.get(), summary.get(), {}, switchChanges);
                    }
                    if (!undo.empty() && undo.back().version == version) {
                        auto& kept = undo.back().switchesBefore;
                        for (auto [sw, up] : switchChanges)
                            if (std::none_of(kept.begin(), kept.end(),
                                             [sw](const auto& e) { return e.first == sw; }))
                                kept.emplace_back(sw, !up);
                    }
                } else if (moves) {
                    Undo u;
                    u.before.reserve(changes.size());
                    for (auto& [link, st] : changes)
                        u.before.emplace_back(link,
                                              topology().linkState[static_cast<std::size_t>(link)]);
                    for (auto [sw, up] : switchChanges) u.switchesBefore.emplace_back(sw, !up);
                    {
                        std::unique_lock write(routerLock);
                        setLiveStates(router.get(), summary.get(), changes, switchChanges);
                    }
                    u.version = ++version;
                    undo.push_back(std::move(u));
                    if (undo.size() > kUndoVersions) undo.pop_front();
                }
                builtFrom = inv;
            } else {
                auto topo = buildLiveTopology(*inv);
                if (!topo) return fail(topo.error());
                linkIds = fabric::LinkNameIndex(*topo);
                linkMemo = {};
                switchStates = std::make_shared<const std::vector<fabric::LinkState>>(
                    linkIds.switchStates(*topo, *inv));
                // A new object: readers of the old one keep it (and their lock) until they finish.
                // RoCE: the summarised tables alone (until session 12 this built the full Router
                // for RoCE too, ~400 MB at 98k, though every reader already took either).
                if (topo->type == inventory::FabricType::Roce) {
                    router.reset();
                    summary = std::make_shared<fabric::SummaryRouter>(std::move(*topo));
                } else {
                    summary.reset();
                    router = std::make_shared<fabric::Router>(std::move(*topo));
                }
                builtFrom = inv;
                builtLayout = layout->layoutVersion();
                ++version;
                undo.clear();  // a new structure: older link ids mean nothing in it
            }
        }
        Held held;
        held.router = router;
        held.summary = summary;
        held.switchStates = switchStates;
        held.lock = std::shared_lock(routerLock);
        held.version = version;
        if (withUndo) held.undoNewestFirst.assign(undo.rbegin(), undo.rend());
        return held;
    }

    // The newest earlier version whose config (fabric::switchConfig) differs from `current`
    // (within the kept versions): walks back one version at a time, rendering the switch under
    // the link states and switch up-ness of that version (the undo steps over the current
    // ones). The router is
    // not copied: the copy was tens of MB at 24k and ~400 MB at 98k, per request and by any
    // viewer (issue 18: no request raises RSS by more than 64 MB). RoCE renders from the
    // switch's own links' states; InfiniBand recomputes the switch's LFT row one target at a
    // time (Router::lftRowWith).
    static std::optional<std::pair<std::int64_t, std::string>> previousConfig(
        const Held& now, std::int32_t sw, const std::string& current) {
        std::int64_t at = now.version;
        std::map<std::int32_t, fabric::LinkState> earlier;  // link -> its state at version `at`
        std::map<std::int32_t, bool> earlierUp;             // switch -> up at version `at`
        std::vector<std::pair<std::int32_t, fabric::LinkState>> states;
        std::vector<std::pair<std::int32_t, bool>> switches;
        for (auto& step : now.undoNewestFirst) {
            if (step.version != at) break;  // a gap (a rebuild): nothing older is comparable
            for (auto [link, st] : step.before) earlier[link] = st;
            for (auto [s, up] : step.switchesBefore) earlierUp[s] = up;
            --at;
            states.assign(earlier.begin(), earlier.end());
            switches.assign(earlierUp.begin(), earlierUp.end());
            auto text = now.visit(
                [&](const auto& r) { return fabric::switchConfig(r, sw, states, switches); });
            if (text != current) return std::make_pair(at, std::move(text));
        }
        return std::nullopt;
    }
};

// The wire form of the degradation map (docs/api.md): racks not in service carry null and
// "inService": false instead of a misleading 0 %.
nlohmann::json degradationJson(const fabric::Topology& t, const std::vector<float>& map) {
    // By rack name in natural order (rack-2 before rack-10, as every list): the topology's order
    // follows the tables' and may differ between two loomds or across a restart; what a user
    // sees must not.
    const auto& names = t.rackNames;
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < names.size() && i < map.size(); ++i) order.push_back(i);
    std::sort(order.begin(), order.end(),
              [&](auto a, auto b) { return loom::naturalLess(names[a], names[b]); });
    auto racks = nlohmann::json::array();
    for (auto i : order) {
        const bool in = map[i] != fabric::kRackNotInService;
        racks.push_back({{"name", names[i]},
                         {"busBwNormalized", in ? nlohmann::json(map[i]) : nlohmann::json()},
                         {"inService", in}});
    }
    return racks;
}

Result<std::int32_t> switchOf(const fabric::Topology& t, std::string_view name) {
    auto sw = t.findSwitch(name);
    if (sw == fabric::kNone)
        return fail(
            Error::notFound("switch '" + std::string(name) + "' is not in the backend fabric"));
    return sw;
}

}  // namespace

void registerFabricRoutes(Router& router, Services& services) {
    auto state = std::make_shared<FabricState>();
    // Every live change reroutes at once (not at the next request) and, when the degradation
    // map changed, pushes it on the "inventory" topic: {"type": "degradation", "racks": [...]}.
    services.onLiveChange([state, &services] {
        auto r = state->get(services);
        if (!r) return;
        auto map = r->visit([&](const auto& x) { return fabric::degradationMap(x); });
        {
            std::lock_guard lock(state->degradationMutex);
            if (map == state->lastDegradation) return;
            state->lastDegradation = map;
        }
        nlohmann::json msg{{"type", "degradation"},
                           {"routingVersion", (*r).version},
                           {"racks", degradationJson(r->topology(), map)}};
        { auto done = std::move(*r); }  // the router's lock is not held while publishing
        services.publishLocal("inventory", std::move(msg));
    });
    RouteOptions noDb{.needsDb = false};
    router.add(
        "GET", "/api/v1/fabric/routes/{switch}", Role::Viewer,
        [state, &services](const Request& req) -> Result<Response> {
            auto r = state->get(services);
            if (!r) return fail(r.error());
            auto sw = switchOf(r->topology(), req.param("switch"));
            if (!sw) return fail(sw.error());
            auto text = r->visit([&](const auto& x) { return fabric::routesJson(x, *sw); });
            auto j = nlohmann::json::parse(text, nullptr, false);
            if (j.is_discarded()) return Response::text(std::move(text), "application/json");
            return Response::ofJson(std::move(j));
        },
        noDb);
    router.add(
        "GET", "/api/v1/fabric/config/{switch}", Role::Viewer,
        [state, &services](const Request& req) -> Result<Response> {
            auto r = state->get(services, req.queryParam("previous").value_or("") == "true");
            if (!r) return fail(r.error());
            auto sw = switchOf(r->topology(), req.param("switch"));
            if (!sw) return fail(sw.error());
            const std::int64_t version = (*r).version;
            const bool roce = r->topology().type == inventory::FabricType::Roce;
            nlohmann::json j{
                {"switch", std::string(req.param("switch"))},
                {"version", version},
                {"format", roce ? "frr" : "lft"},
                {"config", r->visit([&](const auto& x) { return fabric::switchConfig(x, *sw); })}};
            // ?previous=true: the switch's config as it was before its last change (within the
            // last versions kept), so a console can show what the last reroute changed on it.
            if (auto p = req.queryParam("previous")) {
                if (*p != "true" && *p != "false")
                    return fail(Error::invalid(
                        "previous must be true or false, not '" + std::string(*p) + "'",
                        "previous"));
                if (*p == "true") {
                    auto prev =
                        FabricState::previousConfig(*r, *sw, j["config"].get<std::string>());
                    j["previous"] =
                        prev ? nlohmann::json{{"version", prev->first}, {"config", prev->second}}
                             : nlohmann::json();
                }
            }
            return Response::ofJson(std::move(j));
        },
        noDb);
    router.add(
        "GET", "/api/v1/fabric/export", Role::Viewer,
        [state, &services](const Request& req) -> Result<Response> {
            auto fmtName = req.queryParam("format").value_or("json");
            auto fmt = fabric::parseExportFormat(fmtName);
            if (!fmt)
                return fail(Error::invalid(
                    "format must be frr, opensm, slurm or json, not '" + std::string(fmtName) + "'",
                    "format"));
            auto r = state->get(services);
            if (!r) return fail(r.error());
            auto files = r->visit([&](const auto& x) { return fabric::exportFabric(x, *fmt); });
            if (!files) return fail(files.error());
            nlohmann::json out = nlohmann::json::object();
            for (auto& f : *files) out[f.name] = f.content;
            return Response::ofJson({{"format", std::string(fabric::exportFormatName(*fmt))},
                                     {"files", std::move(out)}});
        },
        noDb);
    router.add(
        "POST", "/api/v1/fabric/impact", Role::Viewer,
        [state, &services](const Request& req) -> Result<Response> {
            auto body = req.jsonBody();
            if (!body) return fail(body.error());
            if (!body->is_object() || !body->contains("hosts") || !(*body)["hosts"].is_array())
                return fail(Error::invalid("hosts must be an array of host names", "hosts"));
            std::vector<std::string> hosts;
            std::size_t i = 0;
            for (auto& h : (*body)["hosts"]) {
                if (!h.is_string())
                    return fail(
                        Error::invalid("must be a host name", "hosts[" + std::to_string(i) + "]"));
                hosts.push_back(h.get<std::string>());
                ++i;
            }
            std::string collName = "allreduce";
            if (auto c = body->find("collective"); c != body->end()) {
                if (!c->is_string())
                    return fail(Error::invalid("must be a string: allreduce, allgather or alltoall",
                                               "collective"));
                collName = c->get<std::string>();
            }
            auto coll = fabric::parseCollective(collName);
            if (!coll)
                return fail(Error::invalid("unknown collective '" + collName +
                                               "'; expected allreduce, allgather or alltoall",
                                           "collective"));
            auto r = state->get(services);
            if (!r) return fail(r.error());
            auto res =
                r->visit([&](const auto& x) { return fabric::impactByName(x, hosts, *coll); });
            if (!res) return fail(res.error());
            auto bn = nlohmann::json::array();
            for (auto& b : res->bottlenecks)
                bn.push_back({{"link", b.name},
                              {"direction", b.up ? "up" : "down"},
                              {"flows", b.flows},
                              {"gbpsPerFlow", b.gbpsPerFlow}});
            return Response::ofJson({{"busBwNormalized", res->busBwNormalized},
                                     {"busBwGbps", res->busBwGbps},
                                     {"flows", res->flows},
                                     {"unroutedFlows", res->unroutedFlows},
                                     {"bottlenecks", std::move(bn)}});
        },
        RouteOptions{.needsDb = false, .maxConcurrent = 4});
    router.add(
        "GET", "/api/v1/fabric/degradation", Role::Viewer,
        [state, &services](const Request&) -> Result<Response> {
            auto r = state->get(services);
            if (!r) return fail(r.error());
            auto map = r->visit([&](const auto& x) { return fabric::degradationMap(x); });
            return Response::ofJson(
                {{"racks", degradationJson(r->topology(), map)}, {"routingVersion", (*r).version}});
        },
        noDb);
    router.add(
        "GET", "/api/v1/fabric/topology", Role::Viewer,
        [state, &services](const Request& req) -> Result<Response> {
            // ?bundles=false: the switches alone (what a client asks again on every rack
            // transition for their words; at 98k the bundles are ~220k objects).
            const auto bundlesParam = req.queryParam("bundles").value_or("true");
            if (bundlesParam != "true" && bundlesParam != "false")
                return fail(Error::invalid("bundles must be true or false", "bundles"));
            const bool withBundles = bundlesParam == "true";
            auto r = state->get(services);
            if (!r) return fail(r.error());
            const auto& t = r->topology();
            auto switches = nlohmann::json::array();
            // A switch's word is a link's (telemetry/link_health_words.hpp): its stored state
            // read as its rack's cables are (fabric::liveSwitchState).
            auto word = [&](std::int32_t s) {
                using enum fabric::LinkState;
                const auto st =
                    r->switchStates && static_cast<std::size_t>(s) < r->switchStates->size()
                        ? (*r->switchStates)[static_cast<std::size_t>(s)]
                        : (t.switchUp[s] ? Up : NotInService);
                return std::string(telemetry::linkHealthWord(st == Up     ? telemetry::kLinkUp
                                                             : st == Down ? telemetry::kLinkDown
                                                             : st == Drained
                                                                 ? telemetry::kLinkDrained
                                                                 : telemetry::kLinkNotInService));
            };
            for (std::int32_t s = 0; s < t.switchCount(); ++s)
                switches.push_back(
                    {{"name", t.switchNames[s]},
                     {"role", std::string(inventory::switchRoleName(t.switchRole[s]))},
                     {"tier", t.switchTier[s]},
                     {"zone", t.switchZone[s] == fabric::kNone ? std::string()
                                                               : t.zoneNames[t.switchZone[s]]},
                     {"up", t.switchUp[s] != 0},
                     {"state", word(s)}});
            // Bundles: switch-to-switch links grouped by their two ends. Besides the usable
            // ones, how many are down and how many are drained or not yet in service, so a
            // client draws a zone that is not in service yet grey, not as an outage.
            std::map<std::pair<std::int32_t, std::int32_t>, std::array<int, 5>> bundles;
            for (std::int32_t l = 0; withBundles && l < t.linkCount(); ++l) {
                if (!t.isSwitch(t.linkA[l]) || !t.isSwitch(t.linkB[l])) continue;
                auto& b = bundles[{t.linkA[l], t.linkB[l]}];
                ++b[0];
                if (t.usable(l)) ++b[1];
                const auto st = t.linkState[l];
                if (st == fabric::LinkState::Down) ++b[2];
                if (st == fabric::LinkState::Drained) ++b[3];
                if (st == fabric::LinkState::NotInService) ++b[4];
            }
            auto out = nlohmann::json::array();
            for (auto& [k, v] : bundles)
                out.push_back({{"a", t.switchNames[k.first]},
                               {"b", t.switchNames[k.second]},
                               {"links", v[0]},
                               {"up", v[1]},
                               {"down", v[2]},
                               {"drained", v[3]},
                               {"notInService", v[4]}});
            // Stable for users (the switch ids follow the tables' order).
            auto byNames = [](const nlohmann::json& x, const nlohmann::json& y) {
                const auto& xa = x["a"].get_ref<const std::string&>();
                const auto& ya = y["a"].get_ref<const std::string&>();
                if (xa != ya) return loom::naturalLess(xa, ya);
                return loom::naturalLess(x["b"].get_ref<const std::string&>(),
                                         y["b"].get_ref<const std::string&>());
            };
            std::sort(out.begin(), out.end(), byNames);
            std::stable_sort(switches.begin(), switches.end(), [](const auto& x, const auto& y) {
                const int tx = x["tier"].template get<int>(), ty = y["tier"].template get<int>();
                if (tx != ty) return tx < ty;
                return loom::naturalLess(x["name"].template get_ref<const std::string&>(),
                                         y["name"].template get_ref<const std::string&>());
            });
            return Response::ofJson({{"cluster", t.cluster},
                                     {"fabric", std::string(inventory::fabricTypeName(t.type))},
                                     {"switches", std::move(switches)},
                                     {"bundles", std::move(out)}});
        },
        noDb);
}

}  // namespace loom::backend
