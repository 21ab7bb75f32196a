-- 0033: room on every page of the tables whose rows change state during a rollout, so those
-- updates are HOT (heap-only: the new row version goes on the same page and no index is
-- touched — not the trigram GIN, not the deferrable unique keys' recheck queue) (issue 37).
-- A bulk apply packs pages full (fillfactor 100): then no state update is HOT — 16 of 15,798
-- at 24k — and each one inserts into every index of its table. A reconciler batch updates a
-- whole page of rows in one statement (64 racks' 2,432 cables at 98k; a page holds ~36
-- links), and a row version is reclaimed only after its transaction, so only a half-empty page
-- takes them all. Measured on a copy of the 98k links table (load 20): that UPDATE took
-- 440-470 ms at fillfactor 100 (0 HOT), 206-224 ms at 70 (1,131 of 2,432 HOT), 84-100 ms at
-- 50 (all HOT). The cost is space: links 54 -> 107 MB at 98k; racks, hosts, rack_provisioning
-- and switches are small. GPUs and ports change state only by exception and stay packed.
--
-- Applies to pages written from now on: a fresh apply (the bulk COPY honours it; TRUNCATE
-- keeps it). Rows already stored keep their packing until rewritten (`VACUUM FULL links`).
ALTER TABLE links SET (fillfactor = 50);
ALTER TABLE racks SET (fillfactor = 50);
ALTER TABLE rack_provisioning SET (fillfactor = 50);
ALTER TABLE hosts SET (fillfactor = 50);
ALTER TABLE switches SET (fillfactor = 50);
