// db::refreshStates against a real PostgreSQL: the state-only refresh of the live snapshot
// (db/live_states.hpp) sees every state change, keeps the snapshot's order, copies nothing
// when nothing moved (and only the changed kinds when something did: the others are shared
// with the old snapshot), and hands structural changes back for a full load.
#include "loom/db/live_states.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <unordered_map>

#include "loom/db/inventory_repository.hpp"
#include "loom/db/provisioning_repo.hpp"
#include "loom/inventory/kinds.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/provisioning/follow_rack.hpp"
#include "loom/provisioning/link_service.hpp"
#include "loom/testing/postgres.hpp"
#include "loom/testing/sample_cluster.hpp"

namespace {

using namespace loom::inventory;
using Outcome = loom::db::StateRefresh::Outcome;

class LiveStates : public loom::testing::PostgresTest {
protected:
    loom::db::Snapshot applied(loom::db::Connection& conn, const Inventory& desired) {
        auto before = loom::db::loadSnapshot(conn);
        EXPECT_TRUE(before) << before.error().toString();
        auto r = loom::db::applyPlan(conn, plan(desired, before->inventory), desired,
                                     {.actor = "test", .expectedGeneration = before->generation});
        EXPECT_TRUE(r) << r.error().toString();
        auto after = loom::db::loadSnapshot(conn);
        EXPECT_TRUE(after) << after.error().toString();
        return std::move(*after);
    }
    void exec(loom::db::Connection& conn, const std::string& sql) {
        auto r = conn.queryValue(sql);
        ASSERT_TRUE(r) << r.error().toString();
    }
};

template <class T>
const T& byName(const KindVector<T>& v, std::string_view name) {
    for (const auto& e : v)
        if (e.name == name) return e;
    ADD_FAILURE() << "no " << name;
    return v.front();
}

// Every row of `fresh` (a full load) in `patched` under its name, equal in every field the
// model holds (kinds.hpp's members, the name and the resource version), and no other row.
template <class T>
void expectSameRows(const Inventory& patched, const Inventory& fresh, const std::string& when) {
    const auto& p = entitiesOf<T>(patched);
    const auto& f = entitiesOf<T>(fresh);
    const auto kind = kindName(KindDesc<T>::kind);
    ASSERT_EQ(p.size(), f.size()) << kind << " after " << when;
    std::unordered_map<std::string_view, std::size_t> at;
    for (std::size_t i = 0; i < p.size(); ++i) at.emplace(p[i].name, i);
    for (const auto& row : f) {
        auto it = at.find(row.name);
        ASSERT_NE(it, at.end()) << kind << " " << row.name << " after " << when;
        const T& mine = p[it->second];
        EXPECT_EQ(mine.resourceVersion, row.resourceVersion) << row.name << " after " << when;
        forEachField<T>([&](auto I) {
            constexpr auto& fd = std::get<decltype(I)::value>(KindDesc<T>::fields);
            if constexpr (fd.member != nullptr)
                EXPECT_TRUE(mine.*fd.member == row.*fd.member)
                    << kind << " " << row.name << "." << fd.api << " after " << when;
        });
    }
}

void expectSameInventory(const Inventory& patched, const Inventory& fresh,
                         const std::string& when) {
    for (Kind k : kAllKinds)
        visitKind(k, [&]<class T>(T*) { expectSameRows<T>(patched, fresh, when); });
}

// A deep copy of the racks/hosts/GPUs/links/switches states, to check a held snapshot never
// moves.
std::vector<std::string> statesOf(const Inventory& inv) {
    std::vector<std::string> out;
    for (const auto& r : inv.racks) out.emplace_back(r.state);
    for (const auto& h : inv.hosts) out.emplace_back(h.state);
    for (const auto& g : inv.gpus) out.emplace_back(g.state);
    for (const auto& l : inv.links) out.emplace_back(l.state);
    for (const auto& s : inv.switches) out.emplace_back(s.state);  // they follow their racks
    return out;
}

TEST_F(LiveStates, NothingMovedIsUnchanged) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    auto r = loom::db::refreshStates(conn, snap.inventory, snap.generation);
    ASSERT_TRUE(r) << r.error().toString();
    EXPECT_EQ(r->outcome, Outcome::Unchanged);
    EXPECT_EQ(r->rowsRead, snap.inventory.racks.size() + snap.inventory.hosts.size() +
                               snap.inventory.gpus.size() + snap.inventory.links.size() +
                               snap.inventory.switches.size());
}

// The loaded snapshot stores each name once (inventory/text.hpp): a port's device is its
// switch's or NIC's name block, a link's ends are its ports' name blocks, states and models are
// one block per value; a refresh that changes a state copies the kind but shares every name.
TEST_F(LiveStates, ASnapshotSharesNamesAndARefreshKeepsThem) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    const auto& inv = snap.inventory;
    std::unordered_map<std::string_view, const Text*> names;
    for (const auto& s : inv.switches) names.emplace(s.name, &s.name);
    for (const auto& n : inv.nics) names.emplace(n.name, &n.name);
    for (const auto& p : inv.ports) names.emplace(p.name, &p.name);
    ASSERT_FALSE(inv.ports.empty());
    for (const auto& p : inv.ports)
        if (names.count(p.device)) EXPECT_TRUE(p.device.sharesWith(*names.at(p.device))) << p.name;
    for (const auto& l : inv.links) {
        EXPECT_TRUE(l.aPort.sharesWith(*names.at(l.aPort))) << l.name;
        EXPECT_TRUE(l.bPort.sharesWith(*names.at(l.bPort))) << l.name;
        EXPECT_TRUE(l.state.sharesWith(inv.links[0].state)) << l.name;  // all "planned"
    }
    for (const auto& g : inv.gpus) EXPECT_TRUE(g.model.sharesWith(inv.gpus[0].model));

    loom::db::ProvisioningRepo repo(conn);
    const std::string link = inv.links[3].name.str();
    ASSERT_TRUE(repo.setLinkStates({link}, {"drained"}));
    auto r = loom::db::refreshStates(conn, inv, snap.generation);
    ASSERT_TRUE(r) << r.error().toString();
    ASSERT_EQ(r->outcome, Outcome::Patched);
    const auto& p = r->inventory;
    EXPECT_FALSE(p.links.sharesWith(inv.links));  // the changed kind is a copy...
    ASSERT_EQ(p.links.size(), inv.links.size());
    for (std::size_t i = 0; i < p.links.size(); ++i) {  // ...whose names are the same blocks
        EXPECT_TRUE(p.links[i].name.sharesWith(inv.links[i].name));
        EXPECT_TRUE(p.links[i].aPort.sharesWith(inv.links[i].aPort));
        EXPECT_TRUE(p.links[i].bPort.sharesWith(inv.links[i].bPort));
    }
    EXPECT_EQ(byName(p.links, link).state, "drained");
    EXPECT_EQ(byName(inv.links, link).state, "planned");  // the held snapshot has not moved
    EXPECT_TRUE(byName(p.links, link).state.sharesWith(Text::shared("drained")));
    EXPECT_TRUE(p.ports.sharesWith(inv.ports));
}

TEST_F(LiveStates, StateChangesArePatchedInTheSnapshotsOrder) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    const auto& inv = snap.inventory;
    const std::string rack = inv.racks[1].name.str(), gpu = inv.gpus[5].name.str(),
                      link = inv.links[7].name.str();
    // Updates move the rows' tuples: the table order is no longer the snapshot's.
    exec(conn,
         "UPDATE racks SET state = 'racked', resource_version = resource_version + 1 "
         "WHERE name = '" +
             rack + "' RETURNING 1");
    exec(conn,
         "UPDATE gpus SET state = 'quarantined', resource_version = resource_version + 1 "
         "WHERE name = '" +
             gpu + "' RETURNING 1");
    loom::db::ProvisioningRepo repo(conn);
    auto n = repo.setLinkStates({link}, {"drained"});
    ASSERT_TRUE(n) << n.error().toString();

    auto r = loom::db::refreshStates(conn, inv, snap.generation);
    ASSERT_TRUE(r) << r.error().toString();
    ASSERT_EQ(r->outcome, Outcome::Patched);
    EXPECT_EQ(r->changedRows, 3u);
    const auto& p = r->inventory;
    ASSERT_EQ(p.racks.size(), inv.racks.size());
    for (std::size_t i = 0; i < inv.links.size(); ++i)
        ASSERT_EQ(p.links[i].name, inv.links[i].name);
    EXPECT_EQ(byName(p.racks, rack).state, "racked");
    EXPECT_EQ(byName(p.racks, rack).resourceVersion, byName(inv.racks, rack).resourceVersion + 1);
    EXPECT_EQ(byName(p.gpus, gpu).state, "quarantined");
    EXPECT_EQ(byName(p.links, link).state, "drained");
    EXPECT_EQ(byName(p.racks, inv.racks[0].name).state, inv.racks[0].state);

    // The patched snapshot equals a fresh full load, kind by kind, in states.
    auto fresh = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(fresh);
    for (const auto& l : fresh->inventory.links) EXPECT_EQ(byName(p.links, l.name).state, l.state);
    for (const auto& g : fresh->inventory.gpus) EXPECT_EQ(byName(p.gpus, g.name).state, g.state);
    for (const auto& k : fresh->inventory.racks) EXPECT_EQ(byName(p.racks, k.name).state, k.state);

    // Refreshing the patched snapshot again: nothing more moved.
    auto again = loom::db::refreshStates(conn, p, snap.generation);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->outcome, Outcome::Unchanged);
}

// A delta read (sinceXmin: the previous read's horizon) reads only what was written since,
// and misses nothing: not even a write whose transaction was already open, uncommitted, when
// the previous read took its snapshot, and committed after it.
TEST_F(LiveStates, ADeltaReadTakesOnlyNewWritesAndMissesNone) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    const auto& inv = snap.inventory;
    const std::size_t all = inv.racks.size() + inv.hosts.size() + inv.gpus.size() +
                            inv.links.size() + inv.switches.size();
    auto first = loom::db::refreshStates(conn, inv, snap.generation);
    ASSERT_TRUE(first) << first.error().toString();
    EXPECT_EQ(first->rowsRead, all);
    ASSERT_GE(first->snapshotXmin, 0);
    auto quiet = loom::db::refreshStates(conn, inv, snap.generation, first->snapshotXmin);
    ASSERT_TRUE(quiet) << quiet.error().toString();
    EXPECT_EQ(quiet->outcome, Outcome::Unchanged);
    EXPECT_LT(quiet->rowsRead, all / 4) << "a delta reads the recent writes, not the tables";

    // A writer opens its transaction and writes before the next read, commits after it.
    auto writer = connect();
    const std::string late = inv.links[2].name.str(), early = inv.racks[1].name.str();
    exec(writer,
         "BEGIN; UPDATE links SET state = 'drained', resource_version = "
         "resource_version + 1 WHERE name = '" +
             late + "'; SELECT 1");
    exec(conn,
         "UPDATE racks SET state = 'racked', resource_version = resource_version + 1 "
         "WHERE name = '" +
             early + "' RETURNING 1");
    auto second = loom::db::refreshStates(conn, inv, snap.generation, quiet->snapshotXmin);
    ASSERT_TRUE(second) << second.error().toString();
    ASSERT_EQ(second->outcome, Outcome::Patched);
    EXPECT_EQ(second->changedRows, 1u);
    EXPECT_EQ(byName(second->inventory.racks, early).state, "racked");
    exec(writer, "COMMIT; SELECT 1");
    const Inventory held = second->inventory;
    auto third = loom::db::refreshStates(conn, held, snap.generation, second->snapshotXmin);
    ASSERT_TRUE(third) << third.error().toString();
    ASSERT_EQ(third->outcome, Outcome::Patched) << "the late commit was missed";
    EXPECT_EQ(byName(third->inventory.links, late).state, "drained");
    EXPECT_EQ(byName(third->inventory.racks, early).state, "racked");
    auto fresh = loom::db::loadSnapshot(conn);
    ASSERT_TRUE(fresh);
    expectSameInventory(third->inventory, fresh->inventory, "the delta reads");
}

// VACUUM FREEZE between two delta reads: the frozen tuple's xmin must still date the write
// (PostgreSQL keeps the raw xmin and marks the tuple frozen in its infomask), or the change
// would stay unseen until the next full read, 5 minutes later in loomd.
TEST_F(LiveStates, AWriteFrozenBeforeTheNextDeltaReadIsSeen) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    const auto& inv = snap.inventory;
    loom::db::StateNameIndex names;
    auto first = loom::db::refreshStates(conn, inv, snap.generation, -1, &names);
    ASSERT_TRUE(first) << first.error().toString();
    const std::string link = inv.links[4].name.str(), host = inv.hosts[1].name.str();
    exec(conn,
         "UPDATE links SET state = 'drained', resource_version = resource_version + 1 "
         "WHERE name = '" +
             link + "' RETURNING 1");
    exec(conn,
         "UPDATE hosts SET state = 'quarantined', resource_version = resource_version + 1 "
         "WHERE name = '" +
             host + "' RETURNING 1");
    for (const char* t : {"racks", "hosts", "gpus", "links"})
        ASSERT_TRUE(conn.exec(std::string("VACUUM (FREEZE) ") + t)) << t;
    // The updated link's tuple is frozen now (HEAP_XMIN_FROZEN = 0x0300), when pageinspect is
    // there to say so.
    if (conn.exec("CREATE EXTENSION IF NOT EXISTS pageinspect")) {
        auto frozen = conn.queryValue(
            "SELECT (i.t_infomask & 768) = 768 FROM links l, "
            "heap_page_items(get_raw_page('links', (l.ctid::text::point)[0]::int)) i "
            "WHERE l.name = '" +
            link + "' AND i.lp = (l.ctid::text::point)[1]::int");
        ASSERT_TRUE(frozen) << frozen.error().toString();
        EXPECT_EQ(frozen->value_or(""), "t") << "VACUUM (FREEZE) left the tuple unfrozen";
    }
    auto second = loom::db::refreshStates(conn, inv, snap.generation, first->snapshotXmin, &names);
    ASSERT_TRUE(second) << second.error().toString();
    ASSERT_EQ(second->outcome, Outcome::Patched) << "the frozen writes were missed";
    EXPECT_EQ(second->changedRows, 2u);
    EXPECT_EQ(byName(second->inventory.links, link).state, "drained");
    EXPECT_EQ(byName(second->inventory.hosts, host).state, "quarantined");
}

// The name index a caller keeps across refreshes (StateNameIndex) places rows of the snapshot
// lineage it was built on; kept into a snapshot of another order (a full load after an apply
// without reset()), it can only miss — a structural change — never patch the wrong row.
TEST_F(LiveStates, AKeptNameIndexNeverPatchesTheWrongRow) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    const auto& inv = snap.inventory;
    loom::db::StateNameIndex names;
    auto first = loom::db::refreshStates(conn, inv, snap.generation, -1, &names);
    ASSERT_TRUE(first) << first.error().toString();
    // A delta read places its rows through the index: this builds the links' on `inv`.
    loom::db::ProvisioningRepo repo(conn);
    ASSERT_TRUE(repo.setLinkStates({inv.links[0].name.str()}, {"drained"}));
    auto second = loom::db::refreshStates(conn, inv, snap.generation, first->snapshotXmin, &names);
    ASSERT_TRUE(second) << second.error().toString();
    ASSERT_EQ(second->outcome, Outcome::Patched);
    Inventory reordered = second->inventory;
    std::reverse(reordered.links.begin(), reordered.links.end());
    const std::string link = inv.links[2].name.str();
    ASSERT_TRUE(repo.setLinkStates({link}, {"drained"}));
    auto stale =
        loom::db::refreshStates(conn, reordered, snap.generation, second->snapshotXmin, &names);
    ASSERT_TRUE(stale) << stale.error().toString();
    EXPECT_EQ(stale->outcome, Outcome::Structure);
    names.reset();
    auto fresh =
        loom::db::refreshStates(conn, reordered, snap.generation, second->snapshotXmin, &names);
    ASSERT_TRUE(fresh) << fresh.error().toString();
    ASSERT_EQ(fresh->outcome, Outcome::Patched);
    EXPECT_EQ(fresh->changedRows, 1u);
    EXPECT_EQ(byName(fresh->inventory.links, link).state, "drained");
    EXPECT_EQ(fresh->inventory.links[reordered.links.size() - 3].state, "drained");
}

TEST_F(LiveStates, AnApplyOrARowBehindItsBackIsAStructuralChange) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(1, 3));
    // A new apply: another generation.
    auto grown = applied(conn, loom::testing::sampleCluster(1, 4));
    auto r = loom::db::refreshStates(conn, snap.inventory, snap.generation);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->outcome, Outcome::Structure);
    // Same generation, but a row the snapshot does not have (written outside an apply).
    exec(conn,
         "DELETE FROM links WHERE name = '" + grown.inventory.links.back().name + "' RETURNING 1");
    auto r2 = loom::db::refreshStates(conn, grown.inventory, grown.generation);
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->outcome, Outcome::Structure);
}

// Truth under change: random rack actions (with their links), host quarantines, GPU and link
// state changes and, now and then, an apply of another shape; after each the live snapshot is
// refreshed the way loomd does it (patched, or fully reloaded on a structural change) and
// compared field by field with a fresh full load. A reader holding the previous snapshot sees
// it unchanged, and a patched snapshot shares every kind without a changed row.
TEST_F(LiveStates, RandomChangesEqualAFreshFullLoad) {
    auto conn = connect();
    auto snap = applied(conn, loom::testing::sampleCluster(2, 3));
    auto live = std::make_shared<const Inventory>(snap.inventory);
    std::int64_t generation = snap.generation;
    loom::db::ProvisioningRepo repo(conn);
    std::mt19937 rng(1405);
    const char* actions[] = {"advance", "advance", "advance", "drain", "fail", "repair"};
    const char* linkStates[] = {"down", "drained", "active", "planned"};
    const char* gpuStates[] = {"ok", "quarantined", "failed"};
    int patched = 0, reloaded = 0, sharedKinds = 0, deltas = 0;
    std::int64_t horizon = -1;  // loomd's way: only the rows written since the last read
    for (int step = 0; step < 60; ++step) {
        const Inventory& inv = *live;
        auto pick = [&](std::size_t n) {
            return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
        };
        std::string what;
        const int r = static_cast<int>(pick(10));
        if (r < 4) {
            const auto i = pick(inv.racks.size());
            const auto owners = loom::provisioning::LinkOwners::of(inv);
            std::vector<std::string> rackLinks;
            for (std::size_t l = 0; l < owners.rack.size(); ++l)
                if (owners.rack[l] == static_cast<std::int32_t>(i))
                    rackLinks.emplace_back(inv.links[l].name);
            const char* a = actions[pick(std::size(actions))];
            auto res = repo.rackAction(inv.racks[i].name, a, "test", "test", rackLinks);
            what = std::string(a) + " " + inv.racks[i].name + (res ? "" : " (refused)");
        } else if (r < 6) {
            std::vector<std::string> names, states;
            for (int n = 1 + static_cast<int>(pick(5)); n > 0; --n) {
                names.emplace_back(inv.links[pick(inv.links.size())].name);
                states.emplace_back(linkStates[pick(std::size(linkStates))]);
            }
            auto res = repo.setLinkStates(names, states);
            ASSERT_TRUE(res) << res.error().toString();
            what = "links " + names.front() + " +" + std::to_string(names.size() - 1);
        } else if (r < 7) {
            const auto& h = inv.hosts[pick(inv.hosts.size())].name;
            auto res = repo.quarantineHost(h, "test", "test");
            what = "quarantine " + h + (res ? "" : " (refused)");
        } else if (r < 9) {
            const auto& g = inv.gpus[pick(inv.gpus.size())].name;
            exec(conn, "UPDATE gpus SET state = '" + std::string(gpuStates[pick(3)]) +
                           "', resource_version = resource_version + 1 WHERE name = '" + g +
                           "' RETURNING 1");
            what = "gpu " + g;
        } else {
            // An apply in between: another number of racks (a structural change).
            applied(conn, loom::testing::sampleCluster(2, 2 + static_cast<int>(pick(3))));
            what = "apply";
        }
        what = "step " + std::to_string(step) + " (" + what + ")";

        const auto heldStates = statesOf(inv);
        auto held = live;  // a reader holding the old snapshot
        auto res = loom::db::refreshStates(conn, inv, generation, horizon);
        ASSERT_TRUE(res) << res.error().toString();
        deltas += horizon >= 0 ? 1 : 0;
        horizon = res->outcome == Outcome::Structure ? -1 : res->snapshotXmin;
        if (res->outcome == Outcome::Patched) {
            ++patched;
            const Inventory& p = res->inventory;
            // A kind is shared exactly when none of its rows moved.
            auto shared = [&](const auto& a, const auto& b) {
                sharedKinds += a.sharesWith(b) ? 1 : 0;
                return a.sharesWith(b);
            };
            EXPECT_TRUE(shared(p.ports, inv.ports) && shared(p.nics, inv.nics) &&
                        shared(p.zones, inv.zones))
                << what;
            shared(p.racks, inv.racks), shared(p.hosts, inv.hosts),
                shared(p.switches, inv.switches);
            shared(p.gpus, inv.gpus), shared(p.links, inv.links);
            live = std::make_shared<const Inventory>(std::move(res->inventory));
        } else if (res->outcome == Outcome::Structure) {
            ++reloaded;
            auto full = loom::db::loadSnapshot(conn);
            ASSERT_TRUE(full) << full.error().toString();
            generation = full->generation;
            live = std::make_shared<const Inventory>(std::move(full->inventory));
        }
        EXPECT_EQ(statesOf(*held), heldStates) << "the held snapshot moved at " << what;
        auto fresh = loom::db::loadSnapshot(conn);
        ASSERT_TRUE(fresh) << fresh.error().toString();
        EXPECT_EQ(fresh->generation, generation) << what;
        expectSameInventory(*live, fresh->inventory, what);
        if (HasFatalFailure() || HasFailure()) return;
    }
    // The run exercised both paths and the sharing.
    EXPECT_GT(patched, 20);
    EXPECT_GT(reloaded, 0);
    EXPECT_GT(deltas, 30);
    EXPECT_GT(sharedKinds, 4 * patched);
}

// A rack's transaction brings its zone with it: the zone's switches outside racks (e88068e) and
// the cables between them and the switches above zones (CTSW–ATSW, link_service.hpp: active
// while a rack of the zone has its cables active, planned otherwise). Were those cables left to
// the leader's later sync, a reader between the two commits would route the zone's first rack
// through CTSWs cut off from the other zones: a routing version of its own.
TEST_F(LiveStates, ARacksTransactionBringsTheCablesBetweenItsZoneAndTheSwitchesAbove) {
    auto desired = loom::testing::sampleCluster(2, 2);
    for (int a = 1; a <= 2; ++a) {
        const std::string atsw = "atsw" + std::to_string(a);
        desired.switches.push_back(
            {.name = atsw, .role = SwitchRole::Atsw, .model = "atsw-64", .portCount = 5});
        for (int p = 1; p <= 5; ++p)
            desired.ports.push_back({.name = atsw + "/p" + std::to_string(p),
                                     .device = atsw,
                                     .deviceKind = DeviceKind::Switch,
                                     .index = p});
    }
    int uplink = 0;
    for (auto& sw : std::vector<Switch>(desired.switches)) {
        if (sw.role != SwitchRole::Ctsw) continue;
        for (int a = 1; a <= 2; ++a) {
            const auto port = sw.name + "/p" + std::to_string(2 + a);  // after its 2 rack ports
            desired.ports.push_back({.name = port,
                                     .device = sw.name,
                                     .deviceKind = DeviceKind::Switch,
                                     .index = 2 + a});
            const auto atswPort = "atsw" + std::to_string(a) + "/p" + std::to_string(1 + uplink);
            desired.links.push_back(
                {.name = port + "--" + atswPort, .aPort = port, .bPort = atswPort, .lengthM = 50});
        }
        ++uplink;
    }
    for (auto& sw : desired.switches)
        if (sw.role == SwitchRole::Ctsw) sw.portCount = 4;
    // And one cable above zones (neither end in a zone): active while any rack's cables are.
    desired.links.push_back(
        {.name = "atsw1/p5--atsw2/p5", .aPort = "atsw1/p5", .bPort = "atsw2/p5", .lengthM = 5});
    auto conn = connect();
    applied(conn, desired);
    loom::db::ProvisioningRepo repo(conn);
    // After each committed action: every link and switch with no rack of its own is where the
    // racks' states put it.
    auto expectZoneFollows = [&](const std::string& when) {
        auto snap = loom::db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << snap.error().toString();
        const auto& inv = snap->inventory;
        const auto owners = loom::provisioning::LinkOwners::of(inv);
        const auto racks = loom::provisioning::rackStatesOf(inv);
        const auto links = loom::provisioning::desiredLinkStates(owners, racks);
        int between = 0;
        for (std::size_t l = 0; l < inv.links.size(); ++l) {
            if (owners.rack[l] != loom::provisioning::LinkOwners::kNoRack) continue;
            ++between;
            EXPECT_EQ(inv.links[l].state, std::string(loom::provisioning::linkStateName(links[l])))
                << inv.links[l].name << " after " << when;
        }
        EXPECT_EQ(between, 9);
        const auto switches = loom::provisioning::desiredSwitchStates(owners, racks);
        for (std::size_t i = 0; i < inv.switches.size(); ++i)
            EXPECT_EQ(inv.switches[i].state, std::string(switches[i]))
                << inv.switches[i].name << " after " << when;
    };
    std::string lastTo;  // the state the last action moved its rack to
    auto act = [&](const std::string& rack, const char* action) {
        auto snap = loom::db::loadSnapshot(conn);
        ASSERT_TRUE(snap) << snap.error().toString();
        const auto& inv = snap->inventory;
        const auto owners = loom::provisioning::LinkOwners::of(inv);
        std::vector<std::string> rackLinks;
        for (std::size_t l = 0; l < owners.rack.size(); ++l)
            if (owners.rack[l] >= 0 &&
                inv.racks[static_cast<std::size_t>(owners.rack[l])].name == rack)
                rackLinks.emplace_back(inv.links[l].name);
        auto r = repo.rackAction(rack, action, "test", "test", rackLinks);
        ASSERT_TRUE(r) << rack << " " << action << ": " << r.error().toString();
        lastTo = std::string(loom::provisioning::stateName(r->to));
        expectZoneFollows(std::string(action) + " " + rack + " to " +
                          std::string(loom::provisioning::stateName(r->to)));
    };
    expectZoneFollows("the apply");
    for (int i = 0; i < 7; ++i) ASSERT_NO_FATAL_FAILURE(act("z1-r001", "advance"));
    for (int i = 0; i < 7; ++i) ASSERT_NO_FATAL_FAILURE(act("z2-r002", "advance"));
    ASSERT_NO_FATAL_FAILURE(act("z2-r002", "fail"));  // z1-r001 still serves: above zones up
    ASSERT_NO_FATAL_FAILURE(act("z2-r002", "repair"));
    for (int i = 0; i < 7 && lastTo != "in_service"; ++i)
        ASSERT_NO_FATAL_FAILURE(act("z2-r002", "advance"));
    ASSERT_EQ(lastTo, "in_service");
    ASSERT_NO_FATAL_FAILURE(act("z1-r001", "fail"));  // zone 1 serves no more; zone 2 does
    ASSERT_NO_FATAL_FAILURE(act("z2-r002", "drain"));
    ASSERT_NO_FATAL_FAILURE(act("z2-r002", "advance"));  // drained: no zone serves
    ASSERT_NO_FATAL_FAILURE(act("z2-r002", "advance"));  // back in service
}

}  // namespace
