-- 0002: API tokens. A token is shown once at creation ("loom_" + 43 base64url chars of 32
-- random bytes); only its SHA-256 (hex) is stored. Revoked tokens stay for the audit trail.
CREATE TABLE api_tokens (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    role         text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    hash         text NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   text NOT NULL DEFAULT '',
    last_used_at timestamptz,
    revoked_at   timestamptz
);
