-- NIC identity (issue 35 item 4): how telemetry tells a host's RDMA devices apart
-- (inventory/include/loom/inventory/nic_identity.hpp): the hca_type node_exporter's
-- node_infiniband_info reports for the NIC ("MT4129" for a ConnectX-7) and its PCI address
-- ("0000:18:00.0"), from the host model in the cluster spec (backendNicHcaType, backendNicPci,
-- and the frontend's); '' = not declared. Spec fields: apply writes them, and a change of them is
-- a change of the inventory's structure.
ALTER TABLE nics ADD COLUMN hca_type text NOT NULL DEFAULT '';
ALTER TABLE nics ADD COLUMN pci_address text NOT NULL DEFAULT '';

-- What the spec parser now derives from the NIC model's name (nic_identity.cpp's table), so a
-- stored inventory equals a re-read of its spec and the next apply changes nothing.
UPDATE nics SET hca_type = CASE lower(regexp_replace(model, '[^A-Za-z0-9]', '', 'g'))
        WHEN 'connectx4' THEN 'MT4115' WHEN 'connectx4lx' THEN 'MT4117'
        WHEN 'connectx5' THEN 'MT4119' WHEN 'connectx5ex' THEN 'MT4121'
        WHEN 'connectx6' THEN 'MT4123' WHEN 'connectx6dx' THEN 'MT4125'
        WHEN 'connectx6lx' THEN 'MT4127' WHEN 'connectx7' THEN 'MT4129'
        WHEN 'connectx8' THEN 'MT4131' WHEN 'bluefield2' THEN 'MT41686'
        WHEN 'bluefield3' THEN 'MT41692' ELSE '' END
    WHERE model <> '';

DROP TRIGGER nics_digest ON nics;
CREATE TRIGGER nics_digest AFTER INSERT OR DELETE OR UPDATE OF name, host_id, storage_node_id, "index", network, model, speed_gbps, hca_type, pci_address ON nics
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_digest_drop();
