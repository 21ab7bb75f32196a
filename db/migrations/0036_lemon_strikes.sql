-- 0036: lemons (issue 34 item 6). A strike: a host or GPU was the straggler suspect, or failed,
-- in a job (jobs/lemon.hpp says which causes strike what). One row per (entity, job): a job
-- strikes a host or GPU once, its newest time kept. A host or GPU struck by kLemonJobs different
-- jobs within kLemonWindowMs is a lemon; loomd deletes strikes older than the window.
CREATE TABLE lemon_strikes (
    entity     text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('host', 'gpu')),
    host       text NOT NULL,
    job        text NOT NULL,
    cause      text NOT NULL,
    struck_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity, job)
);
CREATE INDEX lemon_strikes_host ON lemon_strikes (host);
CREATE INDEX lemon_strikes_struck_at ON lemon_strikes (struck_at);
