-- 0021: natural order of names on the server (issue 12): `p2` before `p10`, `z1-r2` before
-- `z1-r10`. Each object carries sort_key = loom::naturalSortKey(name) (inventory/natural_order.hpp),
-- computed in C++ by whatever writes the row (apply's COPY); its bytewise order is the natural
-- order, so a plain btree under COLLATE "C" sorts and pages the lists (an ICU collation index
-- with numeric ordering cost ~5 µs per row on insert; this is a memcmp). The CHECK is NOT VALID:
-- every row written from now on must have a key, and the rows of a database made before 0021
-- get theirs from loomd's migrate step (C++, the same function), which then validates it.
ALTER TABLE sites ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT sites_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX sites_sort_key ON sites (sort_key);
ALTER TABLE zones ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT zones_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX zones_sort_key ON zones (sort_key);
ALTER TABLE rows ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT rows_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX rows_sort_key ON rows (sort_key);
ALTER TABLE racks ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT racks_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX racks_sort_key ON racks (sort_key);
ALTER TABLE hosts ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT hosts_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX hosts_sort_key ON hosts (sort_key);
ALTER TABLE gpus ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT gpus_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX gpus_sort_key ON gpus (sort_key);
ALTER TABLE storage_nodes ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT storage_nodes_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX storage_nodes_sort_key ON storage_nodes (sort_key);
ALTER TABLE nics ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT nics_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX nics_sort_key ON nics (sort_key);
ALTER TABLE switches ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT switches_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX switches_sort_key ON switches (sort_key);
ALTER TABLE ports ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT ports_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX ports_sort_key ON ports (sort_key);
ALTER TABLE links ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT links_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX links_sort_key ON links (sort_key);
