-- 0012: events raised by the per-job view of loomd (issue 15 item 2): `job_degraded` opens when
-- a link or switch failure lowers a job's expected bus bandwidth and closes when it recovers.
-- Their source is `jobs` (location: the job's name), apart from the telemetry rules' events,
-- which a restarting loomd hands to its detection state.
ALTER TABLE events DROP CONSTRAINT events_source_check;
ALTER TABLE events ADD CONSTRAINT events_source_check
    CHECK (source IN ('telemetry', 'provisioning', 'operator', 'jobs'));
