-- 0024: natural order for the jobs list (issue 12), as 0021 gave the inventory: `train-2`
-- before `train-10`, `sim-9` before `sim-10`. sort_key = loom::naturalSortKey(name)
-- (inventory/natural_order.hpp), written by both writers of db/src/job_repo.cpp (a job
-- document's put, the Slurm/simulator bulk sync). The rows of a database made before 0024 get
-- theirs from loomd's migrate step (C++, the same function), which then validates the check.
ALTER TABLE jobs ADD COLUMN sort_key text COLLATE "C",
    ADD CONSTRAINT jobs_sort_key_set CHECK (sort_key IS NOT NULL) NOT VALID;
CREATE INDEX jobs_sort_key ON jobs (sort_key);
