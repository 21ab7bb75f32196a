-- 0007: the event lifecycle (issue 11 item 5) and durable event writes (issue 18 item 2).
--
--   source            telemetry (detection rules), provisioning (rack transitions, written by
--                     the trigger below) or operator.
--   acknowledged_*    who acknowledged an event (a token name), when, and the comment; the first
--                     acknowledgement stays (acknowledging again changes nothing).
--   closed_by         NULL when the rules closed the event (recovery); the token name when an
--                     operator closed it by hand (close_reason says why).
--   event_key         the writer's own key for an event ("<loomd instance uuid>:<sequence>"): a
--                     retried insert after a lost answer finds its row instead of adding one, and
--                     a close targets exactly the row its open created. NULL for rows written
--                     before 0007 and for provisioning events.
--
-- Rack transitions become events in the same history: every provisioning_audit row of a rack
-- adds a closed `rack_transition` event (severity info, opened = closed = the transition time,
-- labels {from, to, actor, reason}) inside the transaction that wrote the audit row, so there
-- is no transition without its event and no event without its transition.

ALTER TABLE events
    ADD COLUMN source text NOT NULL DEFAULT 'telemetry'
        CHECK (source IN ('telemetry', 'provisioning', 'operator')),
    ADD COLUMN acknowledged_by text,
    ADD COLUMN acknowledged_at timestamptz,
    ADD COLUMN ack_comment text NOT NULL DEFAULT '',
    ADD COLUMN closed_by text,
    ADD COLUMN close_reason text NOT NULL DEFAULT '',
    ADD COLUMN event_key text UNIQUE;

CREATE INDEX events_kind ON events (kind, id);
-- The `health` of GPUs and links (inventory API) looks up open events by location.
CREATE INDEX events_open_location ON events (location) WHERE closed_at IS NULL;

CREATE FUNCTION loom_rack_transition_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (kind, severity, location, rack, zone, message, opened_at, closed_at,
                        labels, source)
    SELECT 'rack_transition', 'info', NEW.entity, NEW.entity, coalesce(z.name, ''),
           NEW.entity || ': ' || NEW.from_state || ' -> ' || NEW.to_state
               || CASE WHEN NEW.reason <> '' THEN ' (' || NEW.reason || ')' ELSE '' END,
           NEW.at, NEW.at,
           jsonb_build_object('from', NEW.from_state, 'to', NEW.to_state, 'actor', NEW.actor,
                              'reason', NEW.reason)
               || CASE WHEN NEW.phase <> '' THEN jsonb_build_object('phase', NEW.phase)
                       ELSE '{}'::jsonb END,
           'provisioning'
    FROM (SELECT 1) one
    LEFT JOIN racks r ON r.name = NEW.entity
    LEFT JOIN zones z ON z.id = r.zone_id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER provisioning_audit_rack_event
    AFTER INSERT ON provisioning_audit
    FOR EACH ROW WHEN (NEW.entity_kind = 'rack')
    EXECUTE FUNCTION loom_rack_transition_event();
