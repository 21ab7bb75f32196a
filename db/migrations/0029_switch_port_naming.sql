-- How a switch's network OS names its front-panel ports (issue 35): the canonical text of
-- inventory/include/loom/inventory/port_naming.hpp ("cumulus", "sonic lanes=8",
-- "eos firstSlot=3 portsPerSlot=36", "regex base=1 pattern=..."), from the switch model or a
-- per-switch override in the cluster spec; '' = Loom's own names (pN, swpN, EthernetN, N).
-- A spec field: apply writes it, and a change of it is a change of the inventory's structure.
ALTER TABLE switches ADD COLUMN port_naming text NOT NULL DEFAULT '';

DROP TRIGGER switches_digest ON switches;
CREATE TRIGGER switches_digest AFTER INSERT OR DELETE OR UPDATE OF name, role, model, zone_id, rack_id, port_count, speed_gbps, port_naming, labels ON switches
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
