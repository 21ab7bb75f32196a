-- 0011: training jobs as objects (issue 15). One row per job, whatever produced it: a `kind: Job`
-- document (source apply), the Slurm adapter (slurm) or the simulator (simulator). `hosts` is
-- the expanded, naturally ordered host list as a jsonb array of names (a job names hosts, not
-- inventory ids: a Slurm job may name a host the inventory does not know yet), so the repository
-- writes many jobs in one statement (jsonb_to_recordset) and `hosts ? 'z1-r001-h0'` finds the
-- jobs on a host. `nodelist` is the Slurm hostlist loomd formatted from it (for lists).
CREATE TABLE jobs (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    owner            text NOT NULL DEFAULT '',
    hosts            jsonb NOT NULL CHECK (jsonb_typeof(hosts) = 'array'),
    nodelist         text NOT NULL DEFAULT '',
    host_count       integer NOT NULL DEFAULT 0,
    pattern          text NOT NULL CHECK (pattern IN ('allreduce', 'allgather', 'alltoall')),
    tensor_parallel  integer NOT NULL DEFAULT 1 CHECK (tensor_parallel BETWEEN 1 AND 8),
    state            text NOT NULL CHECK (state IN ('pending', 'running', 'completed', 'failed')),
    source           text NOT NULL CHECK (source IN ('apply', 'slurm', 'simulator')),
    labels           jsonb NOT NULL DEFAULT '{}',
    resource_version bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);
CREATE INDEX jobs_state ON jobs (state);
CREATE INDEX jobs_source ON jobs (source, state);
CREATE INDEX jobs_hosts ON jobs USING gin (hosts);
