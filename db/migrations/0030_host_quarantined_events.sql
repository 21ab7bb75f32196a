-- 0030: a quarantined host is a failure with an open event that says why (issue 39 item 3).
--
-- Burn-in and the operator's quarantine action open a `host_quarantined` event (source
-- provisioning; labels gpu, diagnostic, threshold, by) in the transaction that quarantines the
-- host (db/src/provisioning_sql.hpp). It closes here, in the transaction that takes the host
-- out of quarantine, whatever path does it, with the state it went to as the reason.
CREATE FUNCTION loom_host_quarantine_closed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE events SET closed_at = GREATEST(opened_at, now()),
                      close_reason = 'host left quarantine (now ' || NEW.state || ')'
    WHERE kind = 'host_quarantined' AND location = NEW.name AND closed_at IS NULL;
    RETURN NULL;
END;
$$;

CREATE TRIGGER hosts_quarantine_closed
    AFTER UPDATE OF state ON hosts
    FOR EACH ROW WHEN (OLD.state = 'quarantined' AND NEW.state <> 'quarantined')
    EXECUTE FUNCTION loom_host_quarantine_closed();
