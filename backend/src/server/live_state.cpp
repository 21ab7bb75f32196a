// The live state's refresh: what a committed change (NOTIFY `live`, or this loomd's own
// handlers) does to the snapshot, hall layout, link owners and the views hooked on them.
// Coalesced (at most one runs; requests meanwhile make it run once more), state-only unless an
// apply or a structural change asks for the whole inventory (db/live_states.hpp). Split from
// server.cpp, which keeps the listener, sessions, stream and auth.
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "loom/db/inventory_repository.hpp"
#include "loom/db/live_states.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/provisioning/follow_rack.hpp"
#include "loom/telemetry/hall_layout.hpp"
#include "shared_state.hpp"

namespace loom::backend {

void Server::Impl::reloadInventory(bool full) {
    if (!pool || stopping) return;
    {
        std::lock_guard lock(reloadMutex);
        reloadFull = reloadFull || full;
        if (reloadRunning) {
            reloadPending = true;  // the running reload goes round once more
            return;
        }
        reloadRunning = true;
    }
    pool->post([this](db::Connection* conn) { runReloads(conn); });
}

void Server::Impl::runReloads(db::Connection* conn) {
    // A burst of changes (a 192-rack phase moving) costs the reload that is running plus one.
    for (int fixes = 0;;) {
        bool full;
        {
            std::lock_guard lock(reloadMutex);
            reloadPending = false;
            full = reloadFull;
            reloadFull = false;
        }
        bool again = false, failed = false;
        if (!conn) {
            failed = true;
            spdlog::warn("live state reload: database unreachable; retrying every second");
        } else {
            try {
                again = reloadOnce(*conn, full) && ++fixes < 3;
            } catch (const std::exception& e) {
                failed = true;
                spdlog::error("live state reload: {}", e.what());
            }
        }
        std::lock_guard lock(reloadMutex);
        if (failed) {
            metrics.liveReloadFailures.fetch_add(1);
            reloadRetry = true;
            reloadFull = true;  // what changed meanwhile is unknown: the retry reads it all
        }
        if (stopping || (!reloadPending && !again)) {
            reloadRunning = false;
            return;
        }
    }
}

namespace {
double msSince(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

bool Server::Impl::reloadOnce(db::Connection& conn, bool full) {
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<const inventory::Inventory> current;
    std::shared_ptr<const provisioning::LinkOwners> currentOwners;
    std::shared_ptr<const HallLayout> currentLayout;
    {
        std::lock_guard lock(stateMutex);
        current = inventory;
        currentOwners = linkOwners;
        currentLayout = layout;
    }
    std::shared_ptr<const inventory::Inventory> snapshot;
    std::shared_ptr<const provisioning::LinkOwners> owners;
    std::size_t changedRows = 0;
    std::int64_t nextXmin = -1;
    bool nextFullRead = false;
    if (!full && current && currentOwners && currentLayout) {
        // Only states moved (a rack action, the reconciler, link states): read those and
        // patch the current snapshot, whose vector order — and so the link owners — stay.
        // Only the rows written since the last read, but all of them every 5 minutes (a row
        // added without an apply, or a change a frozen tuple hid: db/live_states.hpp). Not
        // every 30 s: at 98k under load a refresh took 11-35 s, so each one was a full read.
        const bool fullRead = stateXmin < 0 || t0 - lastFullStateRead > std::chrono::minutes(5);
        auto r =
            db::refreshStates(conn, *current, generation, fullRead ? -1 : stateXmin, &stateNames);
        // The horizon moves with the snapshot it describes: only once that is published.
        if (r && r->outcome != db::StateRefresh::Outcome::Structure) {
            nextXmin = r->snapshotXmin;
            nextFullRead = fullRead;
        }
        if (!r) {
            metrics.liveReloadFailures.fetch_add(1);
            reloadRetry = true;
            std::lock_guard lock(reloadMutex);
            reloadFull = true;
            spdlog::warn("live state refresh: {}", r.error().toString());
            return false;
        }
        using O = db::StateRefresh::Outcome;
        if (r->outcome == O::Unchanged) {
            stateXmin = nextXmin;
            if (nextFullRead) lastFullStateRead = t0;
            return false;
        }
        if (r->outcome == O::Patched) {
            snapshot = std::make_shared<const inventory::Inventory>(std::move(r->inventory));
            owners = currentOwners;
            changedRows = r->changedRows;
        }
        // O::Structure (an apply in between): the whole snapshot, below.
    }
    if (!snapshot) {
        full = true;
        auto snap = db::loadSnapshot(conn);
        if (!snap) {
            metrics.liveReloadFailures.fetch_add(1);
            reloadRetry = true;
            std::lock_guard lock(reloadMutex);
            reloadFull = true;
            spdlog::warn("live state reload: {}", snap.error().toString());
            return false;
        }
        // A new generation (the first load, or an apply committed here, by `loomd apply` or by
        // another loomd): the name search indexes a bulk apply leaves unbuilt, in the background.
        if (snap->generation != generation) buildNameIndexesLater();
        generation = snap->generation;
        nextXmin = -1;       // the next state read is a full one (and gives the horizon)
        stateNames.reset();  // a new lineage: its rows are placed anew
        snapshot = std::make_shared<const inventory::Inventory>(std::move(snap->inventory));
        // Indexed like this snapshot's vectors, whose order is the tables' (it moves when rows
        // are updated): rebuilt with every loaded snapshot, kept by a state refresh.
        owners = std::make_shared<const provisioning::LinkOwners>(
            provisioning::LinkOwners::of(*snapshot));
    }
    const double loadMs = msSince(t0);
    // The leader keeps the stored link and switch states what the racks' states say
    // (link_service.hpp, follow_rack.hpp): the links and switches serving a zone follow its
    // racks, and anything a crash or an older loomd left behind is repaired. Its own write's
    // NOTIFY and the loop below reload the result.
    if (!isLeader || isLeader()) {
        const auto rackStates = provisioning::rackStatesOf(*snapshot);
        const auto want = provisioning::desiredLinkStates(*owners, rackStates);
        std::vector<std::string> names, states;
        for (std::size_t i = 0; i < snapshot->links.size() && i < want.size(); ++i) {
            const auto have = provisioning::parseLinkService(snapshot->links[i].state);
            if (have && *have == want[i]) continue;
            names.emplace_back(snapshot->links[i].name);
            states.emplace_back(provisioning::linkStateName(want[i]));
        }
        const auto wantSwitch = provisioning::desiredSwitchStates(*owners, rackStates);
        std::vector<std::string> switchNames, switchStates;
        for (std::size_t i = 0; i < snapshot->switches.size() && i < wantSwitch.size(); ++i) {
            if (snapshot->switches[i].state == wantSwitch[i]) continue;
            switchNames.emplace_back(snapshot->switches[i].name);
            switchStates.emplace_back(wantSwitch[i]);
        }
        int fixed = 0;
        if (!names.empty() || !switchNames.empty()) {
            db::ProvisioningRepo repo(conn);
            if (auto r = repo.setFollowStates(names, states, switchNames, switchStates); !r) {
                spdlog::warn("live state: cannot store link and switch states: {}",
                             r.error().toString());
            } else if (r->links > 0 || r->switches > 0) {
                metrics.liveLinkFixes.fetch_add(static_cast<std::uint64_t>(r->links));
                metrics.liveSwitchFixes.fetch_add(static_cast<std::uint64_t>(r->switches));
                spdlog::info(
                    "live state: {} link(s) and {} switch(es) set to follow their racks' "
                    "states",
                    r->links, r->switches);
                fixed = r->links + r->switches;
            }
        }
        if (fixed > 0) return true;
    }
    const auto t1 = std::chrono::steady_clock::now();
    // A state refresh keeps the structure: the hall layout shares it and redraws the states.
    std::shared_ptr<const HallLayout> newLayout;
    if (!full)
        if (auto L = currentLayout->withStates(*snapshot))
            newLayout = std::make_shared<const HallLayout>(std::move(*L));
    if (!newLayout) newLayout = std::make_shared<const HallLayout>(HallLayout::build(*snapshot));
    const double layoutMs = msSince(t1);
    bool layoutChanged, stateChanged;
    {
        std::lock_guard lock(stateMutex);
        layoutChanged = !layout || layout->layoutVersion() != newLayout->layoutVersion();
        stateChanged = layoutChanged || layout->stateVersion() != newLayout->stateVersion();
        inventory = snapshot;
        layout = newLayout;
        linkOwners = owners;
    }
    stateXmin = nextXmin;
    if (nextFullRead) lastFullStateRead = t0;
    layoutVersion.store(newLayout->layoutVersion());
    if (stateChanged)
        publishLocal("inventory", {{"type", "inventory"},
                                   {"layoutVersion", newLayout->layoutVersion()},
                                   {"stateVersion", newLayout->stateVersion()}});
    const auto t2 = std::chrono::steady_clock::now();
    std::vector<std::function<void()>> hooks;
    {
        std::lock_guard lock(stateMutex);
        hooks = inventoryHooks;
    }
    for (auto& h : hooks) h();
    liveLoaded = true;  // after the hooks: the hub has the layout before ingest is accepted
    // The compact hall's structure (what each web dashboard asks for first) is rendered here,
    // once per structure, not on a viewer's first request (0.4-0.8 s at 98k under load);
    // a state refresh shares the structure and costs nothing here.
    if (layoutChanged) (void)newLayout->toCompactJson();
    // The snapshot, layout and router this replaced were freed on this pool thread's malloc
    // arena; glibc keeps such pages unless asked: give them back (measured: without this a
    // 24k loomd grows from 160 MB to ~560 MB RSS within a few dozen rack transitions).
    snapshot.reset();
    newLayout.reset();
    current.reset();
    currentLayout.reset();
    ::malloc_trim(0);
    metrics.liveReloads.fetch_add(1);
    metrics.liveReloadSeconds.store(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    spdlog::debug("live state: {} in {:.0f} ms (read {:.0f}, hall {:.0f}, views {:.0f}){}",
                  full ? "reloaded" : "states refreshed", msSince(t0), loadMs, layoutMs,
                  msSince(t2),
                  full ? std::string() : fmt::format(", {} row(s) changed", changedRows));
    return false;
}

}  // namespace loom::backend
