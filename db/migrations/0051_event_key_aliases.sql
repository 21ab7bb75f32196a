-- 0051: the keys of an event that another loomd stored first (issue 39). Two loomds that see
-- the same condition each open it under their own key (FailureEvent::key); the row is stored once
-- (events_one_open), under the key of the first. The second's key is recorded here, so the ids
-- a loomd looks up by its own keys (eventIdsByKey: the job detail) find that row on every loomd.
CREATE TABLE event_key_aliases (
    event_key text PRIMARY KEY,
    event_id  bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE
);
CREATE INDEX event_key_aliases_event ON event_key_aliases (event_id);
