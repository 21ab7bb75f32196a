-- 0004: failure events raised by telemetry detection rules, and one-minute telemetry rollups.
--
--   events              one row per failure; open while closed_at IS NULL. At most one open
--                       event per (kind, location) (partial unique index): the rules close an
--                       event before the same condition can open a new one. Listed newest
--                       first by id (keyset pagination), filtered by severity/kind/location/
--                       rack/time/open.
--   telemetry_rollups   per minute, per rack (GPU util/temp/power, GPUs reporting/unhealthy) and
--                       per switch (link util, error/discard/PFC increase, ports down); written
--                       by the leader loomd with one COPY per minute.

CREATE TABLE events (
    id         bigserial PRIMARY KEY,
    kind       text NOT NULL,
    severity   text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    location   text NOT NULL,
    rack       text NOT NULL DEFAULT '',
    zone       text NOT NULL DEFAULT '',
    message    text NOT NULL DEFAULT '',
    opened_at  timestamptz NOT NULL,
    closed_at  timestamptz,
    labels     jsonb NOT NULL DEFAULT '{}',
    CHECK (closed_at IS NULL OR closed_at >= opened_at)
);
CREATE UNIQUE INDEX events_one_open ON events (kind, location) WHERE closed_at IS NULL;
CREATE INDEX events_opened_at ON events (opened_at);
CREATE INDEX events_location ON events (location, id);
CREATE INDEX events_rack ON events (rack, id) WHERE rack <> '';
CREATE INDEX events_open ON events (id) WHERE closed_at IS NULL;

CREATE TABLE telemetry_rollups (
    minute          timestamptz NOT NULL,
    scope           text NOT NULL CHECK (scope IN ('rack', 'switch')),
    name            text NOT NULL,
    util_avg        real,
    util_max        real,
    temp_avg        real,
    temp_max        real,
    power_avg       real,
    gpus_reporting  integer NOT NULL DEFAULT 0,
    gpus_unhealthy  integer NOT NULL DEFAULT 0,
    errors          double precision NOT NULL DEFAULT 0,
    discards        double precision NOT NULL DEFAULT 0,
    pfc_pause       double precision NOT NULL DEFAULT 0,
    ports_down      integer NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, name, minute)
);
CREATE INDEX telemetry_rollups_minute ON telemetry_rollups (minute);
