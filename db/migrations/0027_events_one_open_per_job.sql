-- 0027: an event's identity includes its job (issue 34 item 4). One open event per (kind,
-- location) dropped the second job's `straggler` event when two jobs were slowed by the same
-- uplink (ON CONFLICT DO NOTHING) and handed it the first job's row, which its close then
-- closed. Now at most one open event per (kind, location, labels.job): events without a `job`
-- label (the telemetry rules') keep one open event per (kind, location), as before.
DROP INDEX events_one_open;
CREATE UNIQUE INDEX events_one_open ON events (kind, location, (COALESCE(labels ->> 'job', '')))
    WHERE closed_at IS NULL;
