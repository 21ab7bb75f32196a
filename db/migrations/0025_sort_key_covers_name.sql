-- 0025: the natural-order index of the two large kinds carries the name (issue 12), so a list
-- filtered on the name alone walks it as an index-only scan: `ports?name__ic=ctsw` (31k of 124k
-- ports) checks ~6,700 names in natural order before its 100th match, and each check was a heap
-- fetch (3,788 buffers, 8.2 ms); on the index alone it is 43 buffers and 1.3 ms. An index-only
-- scan reads no table page only where the visibility map is set: db::buildNameIndexes vacuums
-- a table a bulk load filled. Same cost to build as the plain index on the 24k first apply
-- (ports 146-168 ms either way, links 69-92 -> 72-110 ms, load 5); 2.2 MB larger each.
DROP INDEX ports_sort_key;
CREATE INDEX ports_sort_key ON ports (sort_key) INCLUDE (name);
DROP INDEX links_sort_key;
CREATE INDEX links_sort_key ON links (sort_key) INCLUDE (name);
