-- 0019: the events closed recently, for Alertmanager (backend/alerting.hpp): loomd re-sends an
-- event closed in the last 15 minutes as a resolved alert on every cycle (as Prometheus keeps
-- re-sending resolved alerts), so it asks for `closed_at > now - 15 min` every few seconds.
-- Without this index that is a scan of the whole event history.
CREATE INDEX events_closed_at ON events (closed_at) WHERE closed_at IS NOT NULL;
