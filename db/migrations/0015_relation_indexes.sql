-- 0015: indexes on the parent references that lists filter by (issue 12 item 4: `ports?device=`,
-- `links?switch=`, `ports?peer=`, `gpus?rack=`, `nics?rack=`). Without them each such filter is a
-- scan of every port (124k at 24k GPUs). Partial: a port belongs to a switch, a NIC or a storage
-- node, so each index holds only its own rows. They also spare the scan that deleting a switch,
-- NIC or host does to check the foreign keys that point at it.
CREATE INDEX ports_switch_id ON ports (switch_id) WHERE switch_id IS NOT NULL;
CREATE INDEX ports_nic_id ON ports (nic_id) WHERE nic_id IS NOT NULL;
CREATE INDEX ports_storage_node_id ON ports (storage_node_id) WHERE storage_node_id IS NOT NULL;
CREATE INDEX gpus_host_id ON gpus (host_id);
CREATE INDEX nics_host_id ON nics (host_id) WHERE host_id IS NOT NULL;
CREATE INDEX hosts_rack_id ON hosts (rack_id);
