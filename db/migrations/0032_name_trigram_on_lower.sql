-- 0032: the name trigram indexes (0022, 0026) are on lower(name), not on name (issue 37).
-- pg_trgm 1.6 (PostgreSQL 14+) lets gin_trgm_ops answer `=` too, and the planner took it for
-- the state writes' `WHERE name = ANY($names)`: a bitmap scan that decodes the posting list of
-- every trigram of every name, and the common ones ("-r0", "tsw", "/p1") list most of the
-- table. At 98k (249k links) the reconciler's UPDATE of 4 canary racks' 160 cables ran 75 s and
-- more (perf: ginPostingListDecodeAllSegments 30 %, all under gingetbitmap), and the leader's
-- 432-link sync 15-20 s at 24k: the rollout crawled at one zone per ~90 s. An index on an
-- expression serves only queries written on that expression: the pattern lookups are
-- `lower(name) LIKE lower(pattern)` (db/src/list_sql.hpp), equalities go to the unique btree.
--
-- Dropped here and built again after the migration by loomd's background index build (the
-- same path as after a bulk apply, db/src/bulk_load.hpp kAfterCommitIndexes: ~0.6 s of server
-- CPU at 24k under a SHARE lock, off the request path); lists are exact without them (a scan).
DROP INDEX IF EXISTS ports_name_trgm;
DROP INDEX IF EXISTS links_name_trgm;
DROP INDEX IF EXISTS switches_name_trgm;
DROP INDEX IF EXISTS nics_name_trgm;
