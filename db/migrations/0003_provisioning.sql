-- 0003: phased provisioning (provisioning/ and backend/src/provisioning_*.cpp).
--
-- The lifecycle state itself stays in racks.state / hosts.state / gpus.state (0001); this
-- migration adds what the reconciler needs around it:
--   phase_plans / phases         the applied plan (its YAML) and each phase's status;
--   rack_provisioning            per rack: its phase, the transition counter `seq` that every
--                                step compares-and-sets (so no step is done twice), retry
--                                bookkeeping and when it entered its state;
--   provisioning_audit           append-only: every transition (rack, host, gpu, phase) with
--                                who/when/from/to/reason/executor output; its idempotency
--                                key is unique, so a replayed step cannot be recorded twice;
--   provisioning_events          time-limit, gate and phase events for the API and stream;
--   lldp_observations            neighbours reported per port (cabling gate);
--   fabric_config_versions       versioned per-switch config set written by fabric
--                                enablement, with the diff against the previous version.

CREATE TABLE phase_plans (
    name        text PRIMARY KEY,
    document    text NOT NULL,              -- the YAML as applied
    active      boolean NOT NULL DEFAULT true,
    applied_by  text NOT NULL DEFAULT '',
    applied_at  timestamptz NOT NULL DEFAULT now(),
    generation  bigint NOT NULL DEFAULT 1   -- +1 on every re-apply
);
-- At most one plan drives the reconciler.
CREATE UNIQUE INDEX phase_plans_one_active ON phase_plans (active) WHERE active;

CREATE TABLE phases (
    plan             text NOT NULL REFERENCES phase_plans (name) ON DELETE CASCADE,
    name             text NOT NULL,
    ordinal          integer NOT NULL,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'running', 'paused', 'completed', 'halted',
                                       'aborted')),
    start_requested  boolean NOT NULL DEFAULT false,
    canary_accepted  boolean NOT NULL DEFAULT false,
    message          text NOT NULL DEFAULT '',
    started_at       timestamptz,
    finished_at      timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (plan, name),
    UNIQUE (plan, ordinal)
);

CREATE TABLE rack_provisioning (
    rack_id         bigint PRIMARY KEY REFERENCES racks (id) ON DELETE CASCADE,
    plan            text,
    phase_ordinal   integer,                 -- NULL: no phase of the active plan selects it
    phase_order     integer NOT NULL DEFAULT 0,
    seq             bigint NOT NULL DEFAULT 0,   -- transitions so far: the compare-and-set token
    attempts        integer NOT NULL DEFAULT 0,
    not_before      timestamptz,
    entered_at      timestamptz NOT NULL DEFAULT now(),
    timeout_raised  boolean NOT NULL DEFAULT false,
    reason          text NOT NULL DEFAULT ''     -- why it is failed, or the last attempt's error
);
CREATE INDEX rack_provisioning_phase ON rack_provisioning (plan, phase_ordinal);

CREATE TABLE provisioning_audit (
    id               bigserial PRIMARY KEY,
    at               timestamptz NOT NULL DEFAULT now(),
    actor            text NOT NULL,           -- token name, or 'reconciler'
    entity_kind      text NOT NULL CHECK (entity_kind IN ('rack', 'host', 'gpu', 'phase')),
    entity           text NOT NULL,
    from_state       text NOT NULL,
    to_state         text NOT NULL,
    reason           text NOT NULL DEFAULT '',
    executor         text NOT NULL DEFAULT '',
    output           text NOT NULL DEFAULT '',  -- capped executor output
    phase            text NOT NULL DEFAULT '',
    idempotency_key  text NOT NULL UNIQUE
);
CREATE INDEX provisioning_audit_entity ON provisioning_audit (entity_kind, entity, id);

CREATE TABLE provisioning_events (
    id        bigserial PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    severity  text NOT NULL DEFAULT 'warning' CHECK (severity IN ('info', 'warning', 'critical')),
    kind      text NOT NULL,          -- state_timeout, gate_failed, phase_halted, ...
    rack      text NOT NULL DEFAULT '',
    phase     text NOT NULL DEFAULT '',
    message   text NOT NULL
);

CREATE TABLE lldp_observations (
    rack_id      bigint NOT NULL REFERENCES racks (id) ON DELETE CASCADE,
    port         text NOT NULL,
    peer         text NOT NULL,
    reported_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rack_id, port)
);

CREATE TABLE fabric_config_versions (
    switch_name  text NOT NULL,
    version      integer NOT NULL,
    config_set   bigint NOT NULL DEFAULT 0,  -- switches changed together share a set id
    config       text NOT NULL,
    diff         text NOT NULL DEFAULT '',   -- unified-style diff against version - 1
    reason       text NOT NULL DEFAULT '',   -- e.g. "rack z1-r001 in_service"
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (switch_name, version)
);
CREATE SEQUENCE fabric_config_sets;
