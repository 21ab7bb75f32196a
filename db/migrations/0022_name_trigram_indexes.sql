-- 0022: NetBox's pattern lookups on names through an index (issue 12): `ports?name__ic=r100-rtsw`,
-- `__isw`, `__iew` (ILIKE '%x%', 'x%', '%x') on the two large kinds, ports (124k at 24k GPUs)
-- and links (62k). Without it a rare pattern is a scan of every row: 52-68 ms of PostgreSQL CPU
-- per request on ports, against 0.1-1.4 ms through a trigram GIN (patterns of 3+ characters).
-- Measured against the alternatives on the 24k first apply, where apply drops and rebuilds
-- plain indexes around its COPY (server CPU, load 6.5): trigram GIN ports 290 ms + links 260 ms;
-- a lower(name) text_pattern_ops btree 50 + 40 ms, but it serves prefixes only (`__isw`), and
-- only when planned with the value. gpus and nics (24-27k rows: a 10 ms scan) would add 120 ms
-- and are left without. pg_trgm is a trusted extension shipped with PostgreSQL (contrib).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX ports_name_trgm ON ports USING gin (name gin_trgm_ops);
CREATE INDEX links_name_trgm ON links USING gin (name gin_trgm_ops);
