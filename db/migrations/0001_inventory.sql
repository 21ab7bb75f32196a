-- 0001: the cluster inventory (inventory/model.hpp), its change log and apply bookkeeping.
--
-- Every entity table has: id (bigserial), name (unique), the spec fields of model.hpp,
-- references to parents as foreign-key ids, the operational fields (state, serial, ...),
-- labels (jsonb object, {} when none), created_at/updated_at and resource_version (1 on
-- create, +1 on every change; the API's ETag).
--
-- Foreign keys are DEFERRABLE INITIALLY DEFERRED: apply bulk-loads every kind with COPY in
-- one transaction, and a NIC may name a storage node that is loaded after it.
-- Indexes are only the ones constraints need (unique names, unique link ends): bulk load
-- speed of a 300k-entity first apply matters more than ad-hoc filters on child ids.
-- Column names follow the model (snake_case); "index" and "position" are plain columns.

CREATE TABLE sites (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    description      text NOT NULL DEFAULT '',
    labels           jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

CREATE TABLE zones (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    site_id          bigint REFERENCES sites (id) DEFERRABLE INITIALLY DEFERRED,
    labels           jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

CREATE TABLE rows (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    zone_id          bigint REFERENCES zones (id) DEFERRABLE INITIALLY DEFERRED,
    index            integer NOT NULL DEFAULT 0,
    labels           jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

CREATE TABLE racks (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    row_id           bigint REFERENCES rows (id) DEFERRABLE INITIALLY DEFERRED,
    zone_id          bigint REFERENCES zones (id) DEFERRABLE INITIALLY DEFERRED,
    position         integer NOT NULL DEFAULT 0,
    model            text NOT NULL DEFAULT '',
    labels           jsonb NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'planned',
    serial           text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

CREATE TABLE hosts (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    rack_id          bigint REFERENCES racks (id) DEFERRABLE INITIALLY DEFERRED,
    slot             integer NOT NULL DEFAULT 0,
    model            text NOT NULL DEFAULT '',
    labels           jsonb NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'planned',
    serial           text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

CREATE TABLE gpus (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    host_id          bigint REFERENCES hosts (id) DEFERRABLE INITIALLY DEFERRED,
    index            integer NOT NULL DEFAULT 0,
    model            text NOT NULL DEFAULT '',
    labels           jsonb NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'ok',
    serial           text NOT NULL DEFAULT '',
    uuid             text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

CREATE TABLE storage_nodes (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    rack_id          bigint REFERENCES racks (id) DEFERRABLE INITIALLY DEFERRED,
    model            text NOT NULL DEFAULT '',
    capacity_tb      double precision NOT NULL DEFAULT 0,
    labels           jsonb NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'planned',
    serial           text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

-- A NIC sits in a host or in a storage node: exactly one of host_id / storage_node_id.
CREATE TABLE nics (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    host_id          bigint REFERENCES hosts (id) DEFERRABLE INITIALLY DEFERRED,
    storage_node_id  bigint REFERENCES storage_nodes (id) DEFERRABLE INITIALLY DEFERRED,
    index            integer NOT NULL DEFAULT 0,
    network          text NOT NULL DEFAULT 'backend'
                     CHECK (network IN ('backend', 'frontend', 'storage')),
    model            text NOT NULL DEFAULT '',
    speed_gbps       integer NOT NULL DEFAULT 400,
    labels           jsonb NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'ok',
    mac              text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1,
    CHECK (num_nonnulls(host_id, storage_node_id) <= 1)
);

CREATE TABLE switches (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    role             text NOT NULL
                     CHECK (role IN ('rtsw', 'ctsw', 'atsw', 'leaf', 'spine', 'core',
                                     'fsw', 'fcsw', 'ssw')),
    model            text NOT NULL DEFAULT '',
    zone_id          bigint REFERENCES zones (id) DEFERRABLE INITIALLY DEFERRED,
    rack_id          bigint REFERENCES racks (id) DEFERRABLE INITIALLY DEFERRED,
    port_count       integer NOT NULL DEFAULT 0,
    speed_gbps       integer NOT NULL DEFAULT 400,
    labels           jsonb NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'planned',
    serial           text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

-- A port belongs to a switch, a NIC or a storage node (device_kind says which; the matching
-- one of switch_id / nic_id / storage_node_id is set).
CREATE TABLE ports (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    device_kind      text NOT NULL CHECK (device_kind IN ('switch', 'nic', 'storage_node')),
    switch_id        bigint REFERENCES switches (id) DEFERRABLE INITIALLY DEFERRED,
    nic_id           bigint REFERENCES nics (id) DEFERRABLE INITIALLY DEFERRED,
    storage_node_id  bigint REFERENCES storage_nodes (id) DEFERRABLE INITIALLY DEFERRED,
    index            integer NOT NULL DEFAULT 0,
    speed_gbps       integer NOT NULL DEFAULT 400,
    labels           jsonb NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'planned',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1,
    CHECK (num_nonnulls(switch_id, nic_id, storage_node_id) <= 1)
);

-- A cable: a_port is the lower-tier end. A port carries at most one cable.
CREATE TABLE links (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    a_port_id        bigint NOT NULL UNIQUE REFERENCES ports (id) DEFERRABLE INITIALLY DEFERRED,
    b_port_id        bigint NOT NULL UNIQUE REFERENCES ports (id) DEFERRABLE INITIALLY DEFERRED,
    network          text NOT NULL DEFAULT 'backend'
                     CHECK (network IN ('backend', 'frontend', 'storage')),
    medium           text NOT NULL DEFAULT 'dac' CHECK (medium IN ('dac', 'aoc', 'optic')),
    length_m         double precision NOT NULL DEFAULT 0,
    speed_gbps       integer NOT NULL DEFAULT 400,
    labels           jsonb NOT NULL DEFAULT '{}',
    state            text NOT NULL DEFAULT 'planned',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    resource_version bigint NOT NULL DEFAULT 1
);

-- The inventory as a whole: one row. generation goes up by one with every apply that
-- changes something; apply checks it (optimistic concurrency against the planned state).
CREATE TABLE inventory_state (
    id          integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    cluster     text NOT NULL DEFAULT '',
    fabric      text NOT NULL DEFAULT 'roce' CHECK (fabric IN ('roce', 'infiniband')),
    generation  bigint NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO inventory_state (id) VALUES (1);

-- One row per apply that wrote something (dry runs and no-op applies write nothing).
CREATE TABLE apply_runs (
    id          bigserial PRIMARY KEY,
    actor       text NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    generation  bigint NOT NULL,
    cluster     text NOT NULL DEFAULT '',
    created     bigint NOT NULL DEFAULT 0,
    updated     bigint NOT NULL DEFAULT 0,
    deleted     bigint NOT NULL DEFAULT 0,
    pruned      boolean NOT NULL DEFAULT false
);

-- Who changed what, when. kind is the singular kind name ("rack"); action is create, update
-- or delete. before/after hold the spec fields (jsonb) of an update or delete; a create's
-- after is NULL (the row itself is the after state). A bulk apply also writes one summary
-- row per kind with name '*' and after = {"created": n, "updated": n, "deleted": n}.
CREATE TABLE change_log (
    id           bigserial PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    actor        text NOT NULL,
    kind         text NOT NULL,
    name         text NOT NULL,
    action       text NOT NULL CHECK (action IN ('create', 'update', 'delete')),
    before       jsonb,
    after        jsonb,
    apply_run_id bigint REFERENCES apply_runs (id) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX change_log_kind_name ON change_log (kind, name);
