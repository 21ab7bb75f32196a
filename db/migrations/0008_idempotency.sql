-- 0008 (issue 18): idempotent apply, and the leader lease with its fencing epoch.
--
-- idempotency_keys: the first successful answer to POST /api/v1/apply for a client-chosen
-- Idempotency-Key, written in the apply's own transaction (an apply whose answer was lost is
-- found by its retry). Scoped per actor; request_hash is md5 of what was asked, so the same
-- key with another request is refused. Rows expire after 24 hours and are pruned by later
-- applies.
CREATE TABLE idempotency_keys (
    actor        text        NOT NULL,
    key          text        NOT NULL,
    request_hash text        NOT NULL,
    status       integer     NOT NULL,
    body         text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (actor, key)
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- leader_leases: one row per singleton role ("loomd"). The holder renews expires_at; a
-- takeover increments epoch, the fencing token every leader-only transaction checks before
-- it commits. holder_pid/holder_backend_start name the holder's lease session: when it is
-- gone (the holder was killed) the lease is free before its expiry.
CREATE TABLE leader_leases (
    name                 text        PRIMARY KEY,
    holder               text        NOT NULL DEFAULT '',
    epoch                bigint      NOT NULL DEFAULT 0,
    holder_pid           integer,
    holder_backend_start timestamptz,
    acquired_at          timestamptz,
    renewed_at           timestamptz,
    expires_at           timestamptz NOT NULL DEFAULT '-infinity'
);
