-- 0026: each port stores the other end of its cable (issue 12): `link` (the cable's name),
-- `peer_port` (the far port's name) and `peer` (the far port's device's name), NULL on a port
-- with no cable. The API showed them from a per-row subquery (two link-end probes, the far
-- port, its device: ~1 ms of PostgreSQL per page of 100 ports, more than the rest of the page),
-- and `ports?peer__ic=ctsw07` given alone had no index to find its ports (the set of far ends:
-- ~20,000 buffers a page, p99 681 ms under 50 clients at 24k). Stored, they are columns of the
-- row, and (peer, sort_key) gives the ports of a few peers in natural order from the index
-- alone: `peer=<device>` one range, and a pattern the ranges of the devices whose names match,
-- found through trigram indexes on the device names (a peer is always the name of a switch, a
-- NIC or a storage node). `peer__ic=ctsw07` at 24k: 8 switches, 1,728 index entries, ~95
-- buffers; a trigram index on ports.peer found the same ports on ~1,550 table pages (the
-- uplinks of every rack), ~1,600 buffers. 128 storage nodes at 24k are scanned.
--
-- Only apply writes link ends and port devices (db/src/inventory_apply.cpp), so it keeps the
-- three true: a created port gets them in its COPY row, and the ports whose cable or far end an
-- apply changes get them from one UPDATE over the links. These three columns are not in the
-- digest trigger's column list (0013): they follow from the spec, they are not the spec.
ALTER TABLE ports ADD COLUMN link text, ADD COLUMN peer_port text, ADD COLUMN peer text;
UPDATE ports p SET link = e.link, peer_port = e.peer_port, peer = e.peer
FROM (SELECT x.id, x.name AS link, f.name AS peer_port,
             coalesce(s.name, n.name, sn.name) AS peer
      FROM (SELECT a_port_id AS id, b_port_id AS far, name FROM links
            UNION ALL SELECT b_port_id, a_port_id, name FROM links) x
      JOIN ports f ON f.id = x.far
      LEFT JOIN switches s ON s.id = f.switch_id
      LEFT JOIN nics n ON n.id = f.nic_id
      LEFT JOIN storage_nodes sn ON sn.id = f.storage_node_id) e
WHERE p.id = e.id;
CREATE INDEX ports_peer ON ports (peer, sort_key);
CREATE INDEX switches_name_trgm ON switches USING gin (name gin_trgm_ops);
CREATE INDEX nics_name_trgm ON nics USING gin (name gin_trgm_ops);
