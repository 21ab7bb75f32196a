-- 0050: switches follow their racks (provisioning/follow_rack.hpp): every rack transition
-- updates its rack's switches through rack_id in the same statement batch as its hosts
-- (hosts_rack_id, 0015). Without this each batch scanned every switch (~7k at 98k GPUs, up to
-- 6,144 racks a batch). The stored states of switches that never moved are set by the leader's
-- live-state sync on its first reload after the upgrade, not here.
CREATE INDEX switches_rack_id ON switches (rack_id) WHERE rack_id IS NOT NULL;
