// SQL helpers the provisioning repository's two files share (provisioning_repo.cpp: the plan,
// the reconciler's batches and the reads; provisioning_actions.cpp: the operator's actions).
// Internal to db/.
#pragma once

#include <cstdint>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "copy_text.hpp"
#include "loom/db/database.hpp"
#include "loom/provisioning/follow_rack.hpp"
#include "loom/provisioning/link_service.hpp"

namespace loom::db::detail {

// A text[] parameter (copy_text.hpp).
inline std::string arrayOf(const std::vector<std::string>& v) { return pgTextArray(v); }

// The name of the active phase plan; NotFound before any plan has been applied.
inline Result<std::string> activePlan(pqxx::transaction_base& tx) {
    auto r = tx.exec("SELECT name FROM phase_plans WHERE active");
    if (r.empty()) return fail(Error::notFound("no phase plan has been applied"));
    return col(r[0][0]);
}

// Opens a `host_quarantined` event (issue 39 item 3) for each host that is now quarantined:
// location the host, its rack and zone, labels {gpu, diagnostic, threshold}, source
// provisioning; none when one is open already. `by` says who ("burn-in", "operator alice").
// Returns the ids opened. Closed by the trigger of migration 0030 when the host leaves
// quarantine.
inline std::vector<std::int64_t> openQuarantineEvents(pqxx::transaction_base& tx,
                                                      const std::vector<std::string>& hosts,
                                                      const std::vector<std::string>& gpus,
                                                      const std::vector<std::string>& diagnostics,
                                                      const std::vector<std::string>& thresholds,
                                                      const std::string& by) {
    std::vector<std::int64_t> ids;
    if (hosts.empty()) return ids;
    auto r = tx.exec_params(
        "INSERT INTO events (kind, severity, location, rack, zone, message, opened_at, labels, "
        "  source) "
        "SELECT 'host_quarantined', 'warning', i.name, COALESCE(r.name, ''), COALESCE(z.name, ''), "
        "  i.name || ': quarantined by ' || $5 || CASE WHEN i.diagnostic <> '' "
        "    THEN ': ' || i.diagnostic || ' failed' ELSE '' END "
        "    || CASE WHEN i.gpus <> '' THEN ' on ' || i.gpus ELSE '' END "
        "    || CASE WHEN i.threshold <> '' THEN ' (required: ' || i.threshold || ')' ELSE '' END, "
        "  now(), jsonb_build_object('gpu', i.gpus, 'diagnostic', i.diagnostic, "
        "    'threshold', i.threshold, 'by', $5), 'provisioning' "
        "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) "
        "  AS i(name, gpus, diagnostic, threshold) "
        "JOIN hosts h ON h.name = i.name AND h.state = 'quarantined' "
        "LEFT JOIN racks r ON r.id = h.rack_id LEFT JOIN zones z ON z.id = r.zone_id "
        "ON CONFLICT DO NOTHING RETURNING id",
        arrayOf(hosts), arrayOf(gpus), arrayOf(diagnostics), arrayOf(thresholds), by);
    for (const auto& row : r) ids.push_back(row[0].as<std::int64_t>());
    return ids;
}

// Hosts and switches follow their racks (provisioning/follow_rack.hpp; the rule in docs/api.md):
// after racks[i] moved to rackStates[i] (its transition tagged tags[i]), each of its hosts that
// keeps no state of its own takes hostStateFor(rack state), audited; each of its switches takes
// switchStateFor(rack state), like the rack's cables not audited one by one (the rack's
// transition is). One statement per kind per batch, through hosts_rack_id and switches_rack_id;
// the switches outside racks of their zones, and the cables between such switches, follow the
// zone, in the same transaction.
inline void followRacks(pqxx::transaction_base& tx, const std::vector<std::string>& racks,
                        const std::vector<std::string>& rackStates,
                        const std::vector<std::string>& tags, const std::string& actor) {
    if (racks.empty()) return;
    namespace prov = loom::provisioning;
    std::vector<std::string> hostStates, keep;
    for (const auto& st : rackStates)
        hostStates.emplace_back(prov::stateName(
            prov::hostStateFor(prov::parseRackState(st).value_or(prov::RackState::Planned))));
    for (int h = 0; h < prov::kHostStateCount; ++h)
        if (prov::hostKeepsOwnState(static_cast<prov::HostState>(h)))
            keep.emplace_back(prov::stateName(static_cast<prov::HostState>(h)));
    tx.exec_params(
        "WITH i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) "
        "  AS t(rack, host_state, tag)), "
        "u AS (UPDATE hosts h SET state = i.host_state, updated_at = now(), "
        "  resource_version = h.resource_version + 1 FROM racks r, i, hosts o "
        "  WHERE r.name = i.rack AND h.rack_id = r.id AND o.id = h.id "
        "  AND h.state <> i.host_state AND NOT (h.state = ANY($4::text[])) "
        "  RETURNING h.name, o.state AS from_state, i.host_state, i.rack, i.tag) "
        "INSERT INTO provisioning_audit (actor, entity_kind, entity, from_state, to_state, "
        "  reason, idempotency_key) SELECT $5, 'host', name, from_state, host_state, "
        "  'follows rack ' || rack, 'host:' || name || ':' || rack || ':' || tag || ':follow' "
        "FROM u",
        arrayOf(racks), arrayOf(hostStates), arrayOf(tags), arrayOf(keep), actor);
    std::vector<std::string> switchStates;
    for (const auto& st : rackStates)
        switchStates.emplace_back(
            prov::switchStateFor(prov::parseRackState(st).value_or(prov::RackState::Planned)));
    tx.exec_params(
        "UPDATE switches s SET state = i.state, updated_at = now(), "
        "  resource_version = s.resource_version + 1 "
        "FROM racks r, unnest($1::text[], $2::text[]) AS i(rack, state) "
        "WHERE r.name = i.rack AND s.rack_id = r.id AND s.state <> i.state",
        arrayOf(racks), arrayOf(switchStates));
    // The switches outside racks of these racks' zones (and those above zones) serve their zone
    // (desiredSwitchStates): in_service while a rack of it has its cables active, planned
    // otherwise — in this transaction too, so a zone's CTSWs come up with its first rack's
    // cables and no reader (a loomd's fabric) sees the rack's uplinks in service into CTSWs
    // that are not. The leader's live-state sync only repairs. The racks' new states are
    // written before this (both callers).
    std::vector<std::string> active;
    for (int r = 0; r < prov::kRackStateCount; ++r)
        if (prov::linkServiceFor(static_cast<prov::RackState>(r)) == prov::LinkService::Active)
            active.emplace_back(prov::stateName(static_cast<prov::RackState>(r)));
    tx.exec_params(
        "WITH z AS (SELECT DISTINCT zone_id FROM racks WHERE name = ANY($1::text[])), "
        "serving AS (SELECT DISTINCT zone_id FROM racks WHERE state = ANY($2::text[])), "
        "w AS (SELECT s.id, CASE WHEN (s.zone_id IS NULL AND EXISTS (SELECT 1 FROM serving)) "
        "    OR s.zone_id IN (SELECT zone_id FROM serving WHERE zone_id IS NOT NULL) "
        "    THEN $3 ELSE $4 END AS state "
        "  FROM switches s WHERE s.rack_id IS NULL "
        "  AND (s.zone_id IS NULL OR s.zone_id IN (SELECT zone_id FROM z))) "
        "UPDATE switches s SET state = w.state, updated_at = now(), "
        "  resource_version = s.resource_version + 1 "
        "FROM w WHERE s.id = w.id AND s.state <> w.state",
        arrayOf(racks), arrayOf(active), std::string(prov::stateName(prov::RackState::InService)),
        std::string(prov::stateName(prov::RackState::Planned)));
    // So do the cables between switches outside racks (CTSW–ATSW; link_service.hpp,
    // desiredLinkStates: the zone of the lower end, else of the upper; neither: above zones),
    // active while a rack of that zone has its cables active, planned otherwise: else a reader
    // between this commit and the leader's sync routes a zone's first rack through CTSWs cut off
    // from the other zones, a routing version of its own. A zone's cables can change only when
    // no rack of it but these has its cables active (otherwise it serves before and after), the
    // cables above zones only when no rack at all but these has: only then are their switches'
    // ports read (a zone's CTSWs: ~3.9k ports at 98k GPUs, one index probe each for its cable).
    // A cable with a NIC or a storage node outside racks at an end, or a lower end above zones
    // and an upper one in a zone, stays the leader's sync's.
    tx.exec_params(
        "WITH z AS (SELECT DISTINCT r.zone_id FROM racks r WHERE r.name = ANY($1::text[]) "
        "  AND NOT EXISTS (SELECT 1 FROM racks o WHERE o.zone_id = r.zone_id "
        "    AND o.state = ANY($2::text[]) AND NOT (o.name = ANY($1::text[])))), "
        "above AS (SELECT NOT EXISTS (SELECT 1 FROM racks o WHERE o.state = ANY($2::text[]) "
        "  AND NOT (o.name = ANY($1::text[]))) AS may), "
        "serving AS (SELECT DISTINCT zone_id FROM racks WHERE state = ANY($2::text[])), "
        "c AS (SELECT l.id, COALESCE(sa.zone_id, sb.zone_id) AS zone_id "
        "  FROM switches sa JOIN ports pa ON pa.switch_id = sa.id "
        "  CROSS JOIN LATERAL (SELECT id, b_port_id FROM links WHERE a_port_id = pa.id LIMIT 1) l "
        "  JOIN ports pb ON pb.id = l.b_port_id JOIN switches sb ON sb.id = pb.switch_id "
        "  WHERE sa.rack_id IS NULL AND sb.rack_id IS NULL "
        "  AND (sa.zone_id IN (SELECT zone_id FROM z) "
        "    OR (sa.zone_id IS NULL AND (SELECT may FROM above)))), "
        "w AS (SELECT c.id, CASE WHEN (c.zone_id IS NULL AND EXISTS (SELECT 1 FROM serving)) "
        "    OR c.zone_id IN (SELECT zone_id FROM serving WHERE zone_id IS NOT NULL) "
        "    THEN $3 ELSE $4 END AS state "
        "  FROM c WHERE c.zone_id IS NULL OR c.zone_id IN (SELECT zone_id FROM z)) "
        "UPDATE links l SET state = w.state, updated_at = now(), "
        "  resource_version = l.resource_version + 1 "
        "FROM w WHERE l.id = w.id AND l.state <> w.state",
        arrayOf(racks), arrayOf(active),
        std::string(prov::linkStateName(prov::LinkService::Active)),
        std::string(prov::linkStateName(prov::LinkService::NotInService)));
}

}  // namespace loom::db::detail
