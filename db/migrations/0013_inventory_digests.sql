-- 0013: per-kind content digests of what the last apply wrote (issue 14 item 4). A re-apply
-- whose digests (inventory::contentDigests of the spec) all equal these is a no-op without
-- loading or planning the stored inventory (db::storedDigestsMatch).
--   kind: the inventory table name, or 'inventory_state' for the cluster metadata;
--   exact: the table held exactly the spec's entities of that kind (nothing a --prune would
--   delete), so a --prune re-apply may take the shortcut too.
-- Only apply writes spec columns (operational ones: state, serial, uuid, mac, user_labels,
-- resource_version, updated_at are written by provisioning and the API). Any statement that
-- inserts, deletes, truncates or updates spec columns of a table drops that table's digest
-- (statement-level triggers: one call per statement, also for COPY); apply writes the digests
-- again after its own writes, in the same transaction.
CREATE TABLE inventory_digests (
    kind       text PRIMARY KEY,
    digest     text NOT NULL,
    exact      boolean NOT NULL,
    generation bigint NOT NULL
);

CREATE FUNCTION inventory_digest_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM inventory_digests WHERE kind = TG_TABLE_NAME;
    RETURN NULL;
END
$$;

CREATE TRIGGER sites_digest AFTER INSERT OR DELETE OR UPDATE OF name, description, labels ON sites
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER sites_digest_truncate AFTER TRUNCATE ON sites
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER zones_digest AFTER INSERT OR DELETE OR UPDATE OF name, site_id, labels ON zones
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER zones_digest_truncate AFTER TRUNCATE ON zones
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER rows_digest AFTER INSERT OR DELETE OR UPDATE OF name, zone_id, "index", labels ON rows
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER rows_digest_truncate AFTER TRUNCATE ON rows
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER racks_digest AFTER INSERT OR DELETE OR UPDATE OF name, row_id, zone_id, "position", model, labels ON racks
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER racks_digest_truncate AFTER TRUNCATE ON racks
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER hosts_digest AFTER INSERT OR DELETE OR UPDATE OF name, rack_id, slot, model, labels ON hosts
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER hosts_digest_truncate AFTER TRUNCATE ON hosts
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER gpus_digest AFTER INSERT OR DELETE OR UPDATE OF name, host_id, "index", model ON gpus
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER gpus_digest_truncate AFTER TRUNCATE ON gpus
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER nics_digest AFTER INSERT OR DELETE OR UPDATE OF name, host_id, storage_node_id, "index", network, model, speed_gbps ON nics
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER nics_digest_truncate AFTER TRUNCATE ON nics
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER switches_digest AFTER INSERT OR DELETE OR UPDATE OF name, role, model, zone_id, rack_id, port_count, speed_gbps, labels ON switches
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER switches_digest_truncate AFTER TRUNCATE ON switches
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER ports_digest AFTER INSERT OR DELETE OR UPDATE OF name, device_kind, switch_id, nic_id, storage_node_id, "index", speed_gbps ON ports
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER ports_digest_truncate AFTER TRUNCATE ON ports
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER links_digest AFTER INSERT OR DELETE OR UPDATE OF name, a_port_id, b_port_id, network, medium, length_m, speed_gbps ON links
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER links_digest_truncate AFTER TRUNCATE ON links
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER storage_nodes_digest AFTER INSERT OR DELETE OR UPDATE OF name, rack_id, model, capacity_tb, labels ON storage_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
CREATE TRIGGER storage_nodes_digest_truncate AFTER TRUNCATE ON storage_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();

CREATE TRIGGER inventory_state_digest AFTER UPDATE OF cluster, fabric ON inventory_state
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
